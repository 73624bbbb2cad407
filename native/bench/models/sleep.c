/* sleep.c - threads.sleep_yield, seed 003's yield test: start COUNT threads
 * that each sleep, yield and sleep again.  joined=no is the seed's
 * protocol (its joins were clean-up in a JMH tear-down, outside the
 * measurement); joined=yes ends the measurement with the last join.  Every
 * thread counts itself after its second sleep, and main checks both the
 * count and that the threads' lifetime covered the two sleeps. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

typedef struct {
    unsigned sleep_ms;
    _Atomic uint64_t done;
} sleep_shared;

static void *sleeper(void *arg)
{
    sleep_shared *s = arg;
    tl_model_sleep_ms(s->sleep_ms);
    tl_model_yield();
    tl_model_sleep_ms(s->sleep_ms);
    atomic_fetch_add_explicit(&s->done, 1, memory_order_relaxed);
    return NULL;
}

typedef struct {
    tl_ctx *ctx;
    sleep_shared *s;
    tl_mthread *h;
    uint64_t n;
    int joined;
    uint64_t least_done;  /* fewest threads that finished in one timing */
    double shortest_life; /* ns from the first start to the last join, least over timings */
} sleep_state;

static double time_sleep_yield(void *arg, uint64_t iterations)
{
    (void)iterations; /* fixed at 1: one sample is the whole batch */
    sleep_state *st = arg;
    atomic_store_explicit(&st->s->done, 0, memory_order_relaxed);
    uint64_t made = 0;
    int rc = 0;
    uint64_t t0 = tl_now();
    for (; made < st->n && rc == 0; made++)
        rc = tl_model_create(&st->h[made], sleeper, st->s, TL_MSTACK_DEFAULT);
    if (rc != 0)
        made--;
    uint64_t t1 = tl_now();
    int join_rc = tl_models_join_all(st->h, made);
    uint64_t t2 = tl_now();
    if (rc != 0 || join_rc != 0) {
        tl_fail(st->ctx, "%s %s thread %llu of %llu: %s", rc ? "creating" : "joining", tl_model_name,
                (unsigned long long)made + (rc != 0), (unsigned long long)st->n, strerror(rc ? rc : join_rc));
        return -1;
    }
    uint64_t done = atomic_load_explicit(&st->s->done, memory_order_relaxed);
    if (done < st->least_done)
        st->least_done = done;
    double life = tl_ticks_to_ns(t2 - t0);
    if (st->shortest_life == 0 || life < st->shortest_life)
        st->shortest_life = life;
    return tl_ticks_to_ns((st->joined ? t2 : t1) - t0);
}

static int body_sleep_yield(tl_ctx *ctx)
{
    unsigned sleep_ms = (unsigned)tl_param_long(ctx, "sleep_ms", 1, 60000);
    tl_models_batch threads;
    int ready = tl_models_batch_open(ctx, TL_MSTACK_DEFAULT, sizeof(sleep_shared), &threads);
    sleep_state st = {.ctx = ctx, .joined = strcmp(tl_param(ctx, "joined"), "yes") == 0, .n = threads.n,
                      .h = threads.h, .s = threads.shared, .least_done = threads.n};
    int rc = ready;
    if (ready > 0) {
        st.s->sleep_ms = sleep_ms;
        /* Each timing lasts two sleeps at least: no warm-up round. */
        tl_measure_spec spec = {.fixed_iterations = 1, .skip_warmup = 1};
        rc = tl_measure(ctx, time_sleep_yield, &st, &spec);
    }
    if (rc == 0 && ready > 0) {
        tl_check(ctx, "every_thread_ran", st.least_done == st.n, (double)st.least_done,
                 "%llu of %llu threads completed sleep, yield, sleep in the worst timing",
                 (unsigned long long)st.least_done, (unsigned long long)st.n);
        double least = 2.0 * sleep_ms * 1e6;
        tl_check(ctx, "slept", st.shortest_life >= least, st.shortest_life / 1e6,
                 "the shortest batch lived %.1f ms from the first start to the last join; the two sleeps "
                 "take at least %.0f ms",
                 st.shortest_life / 1e6, least / 1e6);
    }
    tl_models_batch_close(&threads);
    return rc;
}

static int run_sleep_yield(tl_ctx *ctx) { return tl_models_run(ctx, body_sleep_yield); }

static const char *const count_values[] = {"100000", NULL};
static const char *const count_quick[] = {"10000", NULL};
static const char *const sleep_values[] = {"100", NULL};
static const char *const joined_values[] = {"no", "yes", NULL};
static const char *const joined_quick[] = {"no", NULL};

static const char *check_sleep_ms(const char *value)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    return errno == 0 && end != value && !*end && v >= 1 && v <= 60000 ? NULL : "an integer from 1 to 60000";
}

static const tl_param_def sleep_params[] = {
    {.name = "count", .help = "threads per sample, all alive at once (scaled down to the machine's limits)",
     .values = count_values, .quick_values = count_quick, .check = tl_models_check_count},
    {.name = "sleep_ms", .help = "each sleep, in milliseconds (1..60000)", .values = sleep_values,
     .check = check_sleep_ms},
    {.name = "joined", .help = "whether the joins are measured (no: de Souto's protocol)", .values = joined_values,
     .quick_values = joined_quick},
    {0},
};

const tl_bench tl_models_sleep[] = {
    TL_MODELS_BENCH("threads.sleep_yield",
                    "start COUNT threads that each sleep SLEEP_MS, yield, sleep SLEEP_MS; joined=no: the joins are "
                    "clean-up outside the measurement (de Souto's JMH study, Table 4); joined=yes: the measurement ends with the "
                    "last join",
                    "time to start `count` sleeping threads (joined=yes: and join them all)",
                    1, TL_PLACE_BIT(TL_PLACE_UNBOUND), sleep_params, run_sleep_yield),
    {0},
};
