/* main.c - the command line every benchmark program shares
 * (docs/native-protocol.md): --list, --env, --run. */
#define _GNU_SOURCE
#include <errno.h>
#include <gnu/libc-version.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifndef THREADLAB_CFLAGS
#define THREADLAB_CFLAGS "unknown"
#endif
#ifndef THREADLAB_BUILD_TYPE
#define THREADLAB_BUILD_TYPE "unknown"
#endif

static const char *program = "threadlab-bench";

void tl_die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: error: ", program);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static const char *const placement_names[TL_PLACE_COUNT] = {"unbound", "same-cpu", "different-cpus"};

const char *tl_placement_name(tl_placement p)
{
    return p < TL_PLACE_COUNT ? placement_names[p] : "unknown";
}

/* ------------------------------------------------------------ parameters */

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

static int parse_long(const char *text, long *out)
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
    if (parse_long(text, &v) != 0 || v < min || v > max)
        tl_die("parameter %s=%s of %s: expected an integer from %ld to %ld", name, text, ctx->bench->name,
               min, max);
    return v;
}

const char *tl_check_positive_int(const char *value)
{
    long v;
    return parse_long(value, &v) == 0 && v > 0 ? NULL : "a positive integer";
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

static void set_param(tl_ctx *ctx, const char *assignment)
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

/* -------------------------------------------------------------- options */

static double parse_double_in(const char *opt, const char *text, double min, double max)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < min || v > max)
        tl_die("%s %s: expected a number from %g to %g", opt, text, min, max);
    return v;
}

static unsigned parse_unsigned_in(const char *opt, const char *text, long min, long max)
{
    long v;
    if (parse_long(text, &v) != 0 || v < min || v > max)
        tl_die("%s %s: expected an integer from %ld to %ld", opt, text, min, max);
    return (unsigned)v;
}

static tl_options default_options(int quick)
{
    tl_options o;
    o.rule = TL_RULE_RSD;
    o.target = 0.05;
    o.quick = quick;
    o.warmup = quick ? 1 : 2;
    o.min_timings = quick ? 3 : 10;
    o.max_timings = quick ? 10 : 200;
    o.min_timing_ns = quick ? 200e3 : 1e6;
    o.max_point_s = quick ? 0.15 : 2.0;
    return o;
}

static const tl_bench *find_bench(const tl_bench *benches, const char *name)
{
    for (const tl_bench *b = benches; b->name; b++)
        if (strcmp(b->name, name) == 0)
            return b;
    return NULL;
}

static int parse_placement(const char *text, tl_placement *out)
{
    for (int p = 0; p < TL_PLACE_COUNT; p++)
        if (strcmp(text, placement_names[p]) == 0) {
            *out = (tl_placement)p;
            return 0;
        }
    return -1;
}

/* --------------------------------------------------------------- output */

static void json_string_list(tl_json *j, const char *const *values)
{
    tl_json_begin_array(j);
    for (; values && *values; values++)
        tl_json_string(j, *values);
    tl_json_end_array(j);
}

static void json_placements(tl_json *j, unsigned mask)
{
    tl_json_begin_array(j);
    for (int p = 0; p < TL_PLACE_COUNT; p++)
        if (mask & TL_PLACE_BIT(p))
            tl_json_string(j, placement_names[p]);
    tl_json_end_array(j);
}

static void list_benches(const tl_bench *benches)
{
    for (const tl_bench *b = benches; b->name; b++) {
        tl_json j;
        tl_json_init(&j);
        tl_json_begin_object(&j);
        tl_json_key(&j, "benchmark"); tl_json_string(&j, b->name);
        tl_json_key(&j, "model"); tl_json_string(&j, b->model);
        if (b->suite) {
            tl_json_key(&j, "suite"); tl_json_string(&j, b->suite);
        }
        tl_json_key(&j, "summary"); tl_json_string(&j, b->summary);
        tl_json_key(&j, "quantity"); tl_json_string(&j, b->quantity);
        tl_json_key(&j, "unit"); tl_json_string(&j, b->unit ? b->unit : "ns");
        tl_json_key(&j, "threads"); tl_json_int(&j, b->threads);
        unsigned accepted = b->threads ? b->placements : 0;
        unsigned defaults = b->default_placements ? b->default_placements : accepted;
        tl_json_key(&j, "placements"); json_placements(&j, accepted);
        tl_json_key(&j, "default_placements"); json_placements(&j, b->threads ? defaults : 0);
        tl_json_key(&j, "params");
        tl_json_begin_array(&j);
        for (const tl_param_def *d = b->params; d && d->name; d++) {
            tl_json_begin_object(&j);
            tl_json_key(&j, "name"); tl_json_string(&j, d->name);
            tl_json_key(&j, "help"); tl_json_string(&j, d->help);
            tl_json_key(&j, "values"); json_string_list(&j, d->values);
            tl_json_key(&j, "quick_values");
            if (d->quick_values) {
                json_string_list(&j, d->quick_values);
            } else {
                const char *first[2] = {d->values ? d->values[0] : NULL, NULL};
                json_string_list(&j, first);
            }
            tl_json_end_object(&j);
        }
        tl_json_end_array(&j);
        tl_json_end_object(&j);
        printf("%s\n", j.text);
        tl_json_free(&j);
    }
}

static void options_json(tl_json *j, const tl_options *o)
{
    tl_json_begin_object(j);
    tl_json_key(j, "rule"); tl_json_string(j, o->rule == TL_RULE_RSE ? "rse" : "rsd");
    tl_json_key(j, "target"); tl_json_number(j, o->target);
    tl_json_key(j, "warmup"); tl_json_int(j, o->warmup);
    tl_json_key(j, "min_timings"); tl_json_int(j, o->min_timings);
    tl_json_key(j, "max_timings"); tl_json_int(j, o->max_timings);
    tl_json_key(j, "min_timing_ms"); tl_json_number(j, o->min_timing_ns / 1e6);
    tl_json_key(j, "max_seconds"); tl_json_number(j, o->max_point_s);
    tl_json_end_object(j);
}

#define TL_MAX_ENV_EXTRAS 8
static struct {
    char *key, *value;
} env_extras[TL_MAX_ENV_EXTRAS];
static unsigned nenv_extras;

void tl_env_extra(const char *key, const char *value)
{
    if (nenv_extras == TL_MAX_ENV_EXTRAS)
        tl_die("more than %d extra --env values", TL_MAX_ENV_EXTRAS);
    env_extras[nenv_extras].key = strdup(key);
    env_extras[nenv_extras].value = strdup(value ? value : "");
    if (!env_extras[nenv_extras].key || !env_extras[nenv_extras].value)
        tl_die("out of memory");
    nenv_extras++;
}

static void print_env(void)
{
    const tl_clock_info *clk = tl_clock_get();
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "program"); tl_json_string(&j, program);
    tl_json_key(&j, "clock");
    tl_json_begin_object(&j);
    tl_json_key(&j, "source"); tl_json_string(&j, tl_clock_source_name(clk->source));
    tl_json_key(&j, "resolution_ns"); tl_json_number(&j, clk->resolution_ns);
    tl_json_key(&j, "read_overhead_ns"); tl_json_number(&j, clk->read_overhead_ns);
    tl_json_key(&j, "tsc_invariant"); tl_json_bool(&j, clk->tsc_invariant);
    tl_json_key(&j, "tsc_hz"); tl_json_number(&j, clk->tsc_hz > 0 ? clk->tsc_hz : NAN);
    tl_json_end_object(&j);
    tl_json_key(&j, "compiler"); tl_json_string(&j, "gcc " __VERSION__);
    tl_json_key(&j, "cflags"); tl_json_string(&j, THREADLAB_CFLAGS);
    tl_json_key(&j, "build_type"); tl_json_string(&j, THREADLAB_BUILD_TYPE);
    tl_json_key(&j, "sanitizer"); tl_json_string(&j, tl_sanitizer_name());
    tl_json_key(&j, "libc"); tl_json_string(&j, gnu_get_libc_version());
    tl_json_key(&j, "topology"); tl_topology_json(&j);
    if (nenv_extras) {
        tl_json_key(&j, "extra");
        tl_json_begin_object(&j);
        for (unsigned i = 0; i < nenv_extras; i++) {
            tl_json_key(&j, env_extras[i].key);
            tl_json_string(&j, env_extras[i].value);
        }
        tl_json_end_object(&j);
    }
    tl_json_key(&j, "defaults");
    tl_json_begin_object(&j);
    tl_options normal = default_options(0), quick = default_options(1);
    tl_json_key(&j, "normal"); options_json(&j, &normal);
    tl_json_key(&j, "quick"); options_json(&j, &quick);
    tl_json_end_object(&j);
    tl_json_end_object(&j);
    printf("%s\n", j.text);
    tl_json_free(&j);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s --list\n"
            "       %s --env [--clock SOURCE]\n"
            "       %s --run NAME [--placement P] [--param NAME=VALUE]... [options]\n"
            "\n"
            "Benchmark program of threadlab.  Normally started by `threadlab bench`;\n"
            "prints one JSON record per data point on stdout (docs/record-schema.md).\n"
            "\n"
            "options:\n"
            "  --placement P        unbound | same-cpu | different-cpus (default: unbound)\n"
            "  --param NAME=VALUE   a benchmark parameter (see --list)\n"
            "  --quick              short calibration and budgets\n"
            "  --rule R             rsd (relative standard deviation) | rse (relative standard error)\n"
            "  --target F           stop when the rule's spread is at most F (0 < F <= 1; default 0.05)\n"
            "  --warmup N           timings discarded first (0..1000)\n"
            "  --min-timings N      at least N timings (2..100000)\n"
            "  --max-timings N      at most N timings (>= min, <= 100000)\n"
            "  --min-timing-ms X    one calibrated timing lasts at least X ms (0.001..10000)\n"
            "  --max-seconds X      time budget of the sampling loop (0.001..3600)\n"
            "  --clock SOURCE       auto | tsc | monotonic_raw (default auto)\n",
            program, program, program);
}

/* ------------------------------------------------------------------ main */

int tl_main(int argc, char **argv, const tl_bench *benches)
{
    const char *slash = strrchr(argv[0], '/');
    program = slash ? slash + 1 : argv[0];

    enum { MODE_NONE, MODE_LIST, MODE_ENV, MODE_RUN } mode = MODE_NONE;
    int quick = 0;
    const char *name = NULL, *placement_text = NULL, *clock_text = "auto";
    const char *rule_text = NULL, *target_text = NULL, *warmup_text = NULL, *min_text = NULL,
               *max_text = NULL, *timing_text = NULL, *seconds_text = NULL;
    const char *param_args[TL_MAX_PARAMS];
    unsigned nparam_args = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define NEXT()                                                                                   \
    (i + 1 < argc ? argv[++i] : (tl_die("%s needs a value (see --help)", a), (const char *)NULL))
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--list")) mode = MODE_LIST;
        else if (!strcmp(a, "--env")) mode = MODE_ENV;
        else if (!strcmp(a, "--run")) { mode = MODE_RUN; name = NEXT(); }
        else if (!strcmp(a, "--quick")) quick = 1;
        else if (!strcmp(a, "--placement")) placement_text = NEXT();
        else if (!strcmp(a, "--param")) {
            if (nparam_args == TL_MAX_PARAMS)
                tl_die("too many --param options (at most %d)", TL_MAX_PARAMS);
            param_args[nparam_args++] = NEXT();
        }
        else if (!strcmp(a, "--rule")) rule_text = NEXT();
        else if (!strcmp(a, "--target")) target_text = NEXT();
        else if (!strcmp(a, "--warmup")) warmup_text = NEXT();
        else if (!strcmp(a, "--min-timings")) min_text = NEXT();
        else if (!strcmp(a, "--max-timings")) max_text = NEXT();
        else if (!strcmp(a, "--min-timing-ms")) timing_text = NEXT();
        else if (!strcmp(a, "--max-seconds")) seconds_text = NEXT();
        else if (!strcmp(a, "--clock")) clock_text = NEXT();
        else tl_die("unknown option '%s' (see --help)", a);
#undef NEXT
    }
    if (mode == MODE_NONE) {
        usage(stderr);
        return 2;
    }
    if (mode == MODE_LIST) {
        list_benches(benches);
        return 0;
    }

    tl_clock_source source;
    if (!strcmp(clock_text, "auto")) source = TL_CLOCK_AUTO;
    else if (!strcmp(clock_text, "tsc")) source = TL_CLOCK_TSC;
    else if (!strcmp(clock_text, "monotonic_raw")) source = TL_CLOCK_MONOTONIC_RAW;
    else tl_die("--clock %s: expected auto, tsc or monotonic_raw", clock_text);
    char err[512];
    if (tl_clock_init(source, err, sizeof err) != 0)
        tl_die("%s", err);
    if (tl_topology_init(err, sizeof err) != 0)
        tl_die("%s", err);
    if (mode == MODE_ENV) {
        print_env();
        return 0;
    }

    const tl_bench *bench = find_bench(benches, name);
    if (!bench) {
        fprintf(stderr, "%s: error: unknown benchmark '%s'; known benchmarks:\n", program, name);
        for (const tl_bench *b = benches; b->name; b++)
            fprintf(stderr, "  %s\n", b->name);
        return 2;
    }

    static struct tl_ctx_private priv;
    tl_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.bench = bench;
    ctx.priv = &priv;
    ctx.opt = default_options(quick);
    tl_pending_reset(&priv.pending);

    if (rule_text) {
        if (!strcmp(rule_text, "rsd")) ctx.opt.rule = TL_RULE_RSD;
        else if (!strcmp(rule_text, "rse")) ctx.opt.rule = TL_RULE_RSE;
        else tl_die("--rule %s: expected rsd or rse", rule_text);
    }
    if (target_text) ctx.opt.target = parse_double_in("--target", target_text, 1e-6, 1.0);
    if (warmup_text) ctx.opt.warmup = parse_unsigned_in("--warmup", warmup_text, 0, 1000);
    if (min_text) ctx.opt.min_timings = parse_unsigned_in("--min-timings", min_text, 2, 100000);
    if (max_text) ctx.opt.max_timings = parse_unsigned_in("--max-timings", max_text, 2, 100000);
    if (ctx.opt.max_timings < ctx.opt.min_timings)
        tl_die("--max-timings %u is below --min-timings %u", ctx.opt.max_timings, ctx.opt.min_timings);
    if (timing_text) ctx.opt.min_timing_ns = 1e6 * parse_double_in("--min-timing-ms", timing_text, 0.001, 10000);
    if (seconds_text) ctx.opt.max_point_s = parse_double_in("--max-seconds", seconds_text, 0.001, 3600);

    ctx.placement = TL_PLACE_UNBOUND;
    if (placement_text) {
        if (parse_placement(placement_text, &ctx.placement) != 0)
            tl_die("--placement %s: expected unbound, same-cpu or different-cpus", placement_text);
        if (!bench->threads)
            tl_die("--placement %s: %s runs in one thread and takes no placement", placement_text, bench->name);
    }
    for (unsigned i = 0; i < nparam_args; i++)
        set_param(&ctx, param_args[i]);

    int rc = 0;
    if (bench->threads && !(bench->placements & TL_PLACE_BIT(ctx.placement))) {
        tl_unsupported(&ctx, "%s does not apply to placement %s", bench->name, tl_placement_name(ctx.placement));
    } else if (bench->threads && tl_plan_slots(&ctx, bench->threads, err, sizeof err) != 0) {
        tl_unsupported(&ctx, "%s", err);
    } else {
        /* Slot 0 is always the measuring (main) thread. */
        if (bench->threads && tl_bind_self(&ctx, 0) != 0)
            tl_die("could not bind the main thread to CPU %d", ctx.cpu[0]);
        rc = bench->run(&ctx);
        int reported = priv.pending.status == TL_STATUS_FAILED ||
                       (priv.pending.status == TL_STATUS_NONE && priv.emitted_failed > 0);
        if (rc != 0 && !reported)
            tl_fail(&ctx, "benchmark returned error %d", rc);
    }
    if (priv.pending.status != TL_STATUS_NONE || priv.emitted == 0)
        tl_emit(&ctx);
    return priv.emitted_failed > 0 ? 1 : 0;
}

int tl_main_families(int argc, char **argv, const tl_bench *const *families, size_t nfamilies)
{
    size_t total = 0;
    for (size_t f = 0; f < nfamilies; f++)
        for (const tl_bench *b = families[f]; b->name; b++)
            total++;
    tl_bench *all = calloc(total + 1, sizeof *all);
    if (!all)
        tl_die("out of memory");
    size_t n = 0;
    for (size_t f = 0; f < nfamilies; f++)
        for (const tl_bench *b = families[f]; b->name; b++)
            all[n++] = *b;
    int rc = tl_main(argc, argv, all);
    free(all);
    return rc;
}
