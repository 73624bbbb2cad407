/* options.c - the options of a data point's measurement, stated once: their
 * kinds, ranges and defaults (normal and --quick).  The command line parses
 * them here, --help and --options print them from here, and the front end
 * reads --options instead of keeping a copy (docs/native-protocol.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const rule_names[] = {"rsd", "rse", NULL};
static const char *const clock_names[] = {"auto", "tsc", "monotonic_raw", NULL};

/* The order of --help and --options.  For a choice, normal and quick are
 * indexes into its choices. */
const tl_option_def tl_option_defs[] = {
    {"rule", "--rule", "R", TL_OPTION_CHOICE, 0, 0, 0, 0, rule_names, "",
     "stopping rule: rsd (relative standard deviation, the Pthreads benchmark suite's criterion) or rse "
     "(relative standard error, SKaMPI's)", ""},
    {"target", "--target", "F", TL_OPTION_NUMBER, 1e-6, 1.0, 0.05, 0.05, NULL, "",
     "stop a point when the rule's spread is at most F", "the relative spread that ends a point, e.g. 0.05"},
    {"warmup", "--warmup", "N", TL_OPTION_INTEGER, 0, 1000, 2, 1, NULL, "",
     "timings discarded before sampling", ""},
    {"min_timings", "--min-timings", "N", TL_OPTION_INTEGER, 2, 100000, 10, 3, NULL, "",
     "at least N timings per point", ""},
    {"max_timings", "--max-timings", "N", TL_OPTION_INTEGER, 2, 100000, 200, 10, NULL, "",
     "at most N timings per point, at least --min-timings", ""},
    {"min_timing_ms", "--min-timing-ms", "X", TL_OPTION_NUMBER, 0.001, 10000, 1.0, 0.2, NULL, " ms",
     "a calibrated timing lasts at least X ms", ""},
    {"max_seconds", "--max-seconds", "X", TL_OPTION_NUMBER, 0.001, 3600, 2.0, 0.15, NULL, " s",
     "sampling budget of one point in seconds", ""},
    {"clock", "--clock", "SOURCE", TL_OPTION_CHOICE, 0, 0, 0, 0, clock_names, "",
     "clock: auto (the TSC when invariant), tsc or monotonic_raw", ""},
    {0},
};

const tl_option_def *tl_option_find(const char *flag)
{
    for (const tl_option_def *d = tl_option_defs; d->name; d++)
        if (strcmp(d->flag, flag) == 0)
            return d;
    return NULL;
}

static const tl_option_def *by_name(const char *name)
{
    for (const tl_option_def *d = tl_option_defs; d->name; d++)
        if (strcmp(d->name, name) == 0)
            return d;
    return NULL;
}

static double default_of(const char *name, int quick)
{
    const tl_option_def *d = by_name(name);
    return quick ? d->quick : d->normal;
}

tl_options tl_default_options(int quick)
{
    tl_options o;
    memset(&o, 0, sizeof o);
    o.quick = quick;
    o.rule = (tl_stop_rule)default_of("rule", quick);
    o.target = default_of("target", quick);
    o.warmup = (unsigned)default_of("warmup", quick);
    o.min_timings = (unsigned)default_of("min_timings", quick);
    o.max_timings = (unsigned)default_of("max_timings", quick);
    o.min_timing_ns = 1e6 * default_of("min_timing_ms", quick);
    o.max_point_s = default_of("max_seconds", quick);
    return o;
}

double tl_option_value(const tl_option_def *d, const char *text)
{
    if (d->kind == TL_OPTION_CHOICE) {
        for (unsigned i = 0; d->choices[i]; i++)
            if (strcmp(d->choices[i], text) == 0)
                return i;
        char accepted[128] = "";
        size_t used = 0;
        for (unsigned i = 0; d->choices[i] && used < sizeof accepted; i++)
            used += (size_t)snprintf(accepted + used, sizeof accepted - used, "%s%s",
                                     i == 0 ? "" : d->choices[i + 1] ? ", " : " or ", d->choices[i]);
        tl_die("%s %s: expected %s", d->flag, text, accepted);
    }
    char *end;
    errno = 0;
    double v = d->kind == TL_OPTION_INTEGER ? (double)strtol(text, &end, 10) : strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < d->min || v > d->max)
        tl_die("%s %s: expected %s from %g to %g", d->flag, text,
               d->kind == TL_OPTION_INTEGER ? "an integer" : "a number", d->min, d->max);
    return v;
}

void tl_option_set(tl_options *o, const tl_option_def *d, double value)
{
    if (!strcmp(d->name, "rule")) o->rule = (tl_stop_rule)value;
    else if (!strcmp(d->name, "target")) o->target = value;
    else if (!strcmp(d->name, "warmup")) o->warmup = (unsigned)value;
    else if (!strcmp(d->name, "min_timings")) o->min_timings = (unsigned)value;
    else if (!strcmp(d->name, "max_timings")) o->max_timings = (unsigned)value;
    else if (!strcmp(d->name, "min_timing_ms")) o->min_timing_ns = 1e6 * value;
    else if (!strcmp(d->name, "max_seconds")) o->max_point_s = value;
}

static void write_value(tl_json *j, const tl_option_def *d, double value)
{
    if (d->kind == TL_OPTION_CHOICE)
        tl_json_string(j, d->choices[(unsigned)value]);
    else if (d->kind == TL_OPTION_INTEGER)
        tl_json_int(j, (long long)value);
    else
        tl_json_number(j, value);
}

void tl_options_json(tl_json *j, int quick)
{
    tl_json_begin_object(j);
    for (const tl_option_def *d = tl_option_defs; d->name; d++) {
        if (!strcmp(d->name, "clock"))
            continue; /* a program's, not a point's: --env says which one it has */
        tl_json_key(j, d->name);
        write_value(j, d, quick ? d->quick : d->normal);
    }
    tl_json_end_object(j);
}

void tl_print_options(void)
{
    for (const tl_option_def *d = tl_option_defs; d->name; d++) {
        tl_json j;
        tl_json_init(&j);
        tl_json_begin_object(&j);
        tl_json_key(&j, "name"); tl_json_string(&j, d->name);
        tl_json_key(&j, "option"); tl_json_string(&j, d->flag);
        tl_json_key(&j, "metavar"); tl_json_string(&j, d->metavar);
        tl_json_key(&j, "kind");
        tl_json_string(&j, d->kind == TL_OPTION_CHOICE ? "choice" : d->kind == TL_OPTION_INTEGER ? "integer" : "number");
        if (d->kind == TL_OPTION_CHOICE) {
            tl_json_key(&j, "choices");
            tl_json_begin_array(&j);
            for (unsigned i = 0; d->choices[i]; i++)
                tl_json_string(&j, d->choices[i]);
            tl_json_end_array(&j);
        } else {
            tl_json_key(&j, "min"); write_value(&j, d, d->min);
            tl_json_key(&j, "max"); write_value(&j, d, d->max);
        }
        tl_json_key(&j, "default"); write_value(&j, d, d->normal);
        tl_json_key(&j, "quick_default"); write_value(&j, d, d->quick);
        tl_json_key(&j, "unit"); tl_json_string(&j, d->unit);
        tl_json_key(&j, "help"); tl_json_string(&j, d->help);
        tl_json_key(&j, "meaning"); tl_json_string(&j, d->meaning);
        tl_json_end_object(&j);
        tl_json_emit(&j);
    }
}

void tl_print_options_help(FILE *out)
{
    for (const tl_option_def *d = tl_option_defs; d->name; d++) {
        char flag[40];
        snprintf(flag, sizeof flag, "%s %s", d->flag, d->metavar);
        fprintf(out, "  %-20s %s (", flag, d->help);
        if (d->kind == TL_OPTION_CHOICE)
            fprintf(out, "default %s", d->choices[(unsigned)d->normal]);
        else if (d->normal == d->quick)
            fprintf(out, "%g..%g; default %g%s", d->min, d->max, d->normal, d->unit);
        else
            fprintf(out, "%g..%g; default %g%s, %g%s with --quick", d->min, d->max, d->normal, d->unit, d->quick,
                    d->unit);
        fputs(")\n", out);
    }
}
