/* describe.c - what a benchmark program says about itself: --list (its
 * benchmarks) and --env (its build, clock and topology, and what the
 * program adds: tl_env_extra). */
#define _GNU_SOURCE
#include <gnu/libc-version.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#ifndef THREADLAB_CFLAGS
#define THREADLAB_CFLAGS "unknown"
#endif
#ifndef THREADLAB_BUILD_TYPE
#define THREADLAB_BUILD_TYPE "unknown"
#endif

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
            tl_json_string(j, tl_placement_name((tl_placement)p));
    tl_json_end_array(j);
}

void tl_print_list(const tl_bench *benches)
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
        tl_json_emit(&j);
    }
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

void tl_print_env(void)
{
    const tl_clock_info *clk = tl_clock_get();
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "program"); tl_json_string(&j, tl_program_name());
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
    tl_json_key(&j, "normal"); tl_options_json(&j, 0);
    tl_json_key(&j, "quick"); tl_options_json(&j, 1);
    tl_json_end_object(&j);
    tl_json_end_object(&j);
    tl_json_emit(&j);
}
