/* params.c - a benchmark's parameters: their values at a data point (the
 * command line's --param, else the definition's first), checked. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const tl_param_def *find_param(const tl_bench *b, const char *name)
{
    for (const tl_param_def *d = b->params; d && d->name; d++)
        if (strcmp(d->name, name) == 0)
            return d;
    return NULL;
}

const char *tl_param(const tl_ctx *ctx, const char *name)
{
    const struct tl_ctx_private *priv = ctx->priv;
    for (unsigned i = 0; i < priv->nparams; i++)
        if (strcmp(priv->param_names[i], name) == 0)
            return priv->param_values[i];
    const tl_param_def *d = find_param(ctx->bench, name);
    if (!d)
        tl_die("benchmark %s asked for parameter '%s' it does not declare", ctx->bench->name, name);
    return d->values && d->values[0] ? d->values[0] : "";
}

int tl_parse_long(const char *text, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end)
        return -1;
    *out = v;
    return 0;
}

long tl_param_long(const tl_ctx *ctx, const char *name, long min, long max)
{
    const char *text = tl_param(ctx, name);
    long v;
    if (tl_parse_long(text, &v) != 0 || v < min || v > max)
        tl_die("parameter %s=%s of %s: expected an integer from %ld to %ld", name, text, ctx->bench->name,
               min, max);
    return v;
}

const char *tl_check_positive_int(const char *value)
{
    long v;
    return tl_parse_long(value, &v) == 0 && v > 0 ? NULL : "a positive integer";
}

static int value_listed(const char *const *values, const char *value)
{
    for (; values && *values; values++)
        if (strcmp(*values, value) == 0)
            return 1;
    return 0;
}

static void describe_values(const tl_param_def *d, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (const char *const *v = d->values; v && *v && used + 4 < len; v++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", v == d->values ? "" : ", ", *v);
}

void tl_param_assign(tl_ctx *ctx, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        tl_die("--param %s: expected NAME=VALUE", assignment);
    size_t nlen = (size_t)(eq - assignment);
    char *name = strndup(assignment, nlen);
    const char *value = eq + 1;
    const tl_param_def *d = find_param(ctx->bench, name);
    if (!d) {
        char names[512] = "";
        size_t used = 0;
        for (const tl_param_def *p = ctx->bench->params; p && p->name; p++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", p->name);
        tl_die("%s has no parameter '%s' (parameters: %s)", ctx->bench->name, name, used ? names : "none");
    }
    if (!value_listed(d->values, value) && !value_listed(d->quick_values, value)) {
        const char *accepted = d->check ? d->check(value) : "";
        if (!d->check || accepted) {
            char listed[512];
            describe_values(d, listed, sizeof listed);
            tl_die("parameter %s=%s of %s is not accepted (accepted: %s)", name, value, ctx->bench->name,
                   d->check ? accepted : listed);
        }
    }
    struct tl_ctx_private *priv = ctx->priv;
    if (priv->nparams == TL_MAX_PARAMS)
        tl_die("too many --param options");
    priv->param_names[priv->nparams] = name;
    priv->param_values[priv->nparams] = value;
    priv->nparams++;
}

void tl_set_param(tl_ctx *ctx, const char *name, const char *value)
{
    const tl_param_def *d = find_param(ctx->bench, name);
    if (!d)
        tl_die("benchmark %s sets parameter '%s' it does not declare", ctx->bench->name, name);
    struct tl_ctx_private *priv = ctx->priv;
    char *copy = strdup(value);
    if (!copy)
        tl_die("out of memory");
    unsigned i = 0;
    while (i < priv->nparams && strcmp(priv->param_names[i], d->name) != 0)
        i++;
    if (i == TL_MAX_PARAMS)
        tl_die("too many parameters");
    if (i == priv->nparams) {
        priv->param_names[i] = d->name; /* the declared name outlives the caller's */
        priv->nparams++;
    } else if (priv->owned_params & (1u << i)) {
        free((char *)priv->param_values[i]); /* a value from the command line is argv's */
    }
    priv->param_values[i] = copy;
    priv->owned_params |= 1u << i;
}
