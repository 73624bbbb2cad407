/* sched.c - omp.schedule: the overhead of a worksharing loop's schedule
 * (EPCC schedbench's method).  One iteration of a timing is one loop of
 * iters_per_thread x n iterations, each running the delay, with
 * schedule(KIND, chunk), inside a region enclosing the whole timing; the
 * reference is one thread running iters_per_thread delays.  A sample is
 * then what distributing the loop cost beyond the work each thread does. */
#define _GNU_SOURCE
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "ompb.h"

typedef enum { S_STATIC, S_DYNAMIC, S_GUIDED, S_COUNT } sched_kind;

static const char *const kind_names[] = {"static", "dynamic", "guided", NULL};

typedef struct {
    sched_kind kind;
    int chunk;
    long per_thread; /* loop iterations per thread */
} sched_data;

/* One function per kind: a schedule clause names its kind at compile time
 * (schedule(runtime) would take the runtime's dispatch path for all). */
#define SCHED_TIMING(name, clause)                                                                         \
    static double name(ompb_run *r, const sched_data *d, uint64_t iterations)                               \
    {                                                                                                       \
        long len = r->delay_length, total = d->per_thread * r->n;                                           \
        int chunk = d->chunk;                                                                               \
        uint64_t t0 = tl_now();                                                                             \
        _Pragma("omp parallel num_threads(r->n)")                                                          \
        {                                                                                                   \
            ompb_thread *me = &r->t[omp_get_thread_num()];                                                  \
            for (uint64_t j = 0; j < iterations; j++) {                                                     \
                _Pragma(clause)                                                                             \
                for (long i = 0; i < total; i++) {                                                          \
                    ompb_delay(len);                                                                        \
                    me->work++;                                                                             \
                }                                                                                           \
            }                                                                                               \
        }                                                                                                   \
        return tl_ticks_to_ns(tl_now() - t0);                                                               \
    }

SCHED_TIMING(time_static, "omp for schedule(static, chunk)")
SCHED_TIMING(time_dynamic, "omp for schedule(dynamic, chunk)")
SCHED_TIMING(time_guided, "omp for schedule(guided, chunk)")

static double sched_time(void *arg, uint64_t iterations)
{
    ompb_run *r = arg;
    const sched_data *d = r->data;
    double t = d->kind == S_STATIC ? time_static(r, d, iterations)
             : d->kind == S_DYNAMIC ? time_dynamic(r, d, iterations)
                                    : time_guided(r, d, iterations);
    r->expected += iterations * (uint64_t)d->per_thread * (uint64_t)r->n;
    ompb_verify_team(r);
    return t;
}

static double sched_reference(void *arg, uint64_t iterations)
{
    ompb_run *r = arg;
    const sched_data *d = r->data;
    return ompb_delays(r, iterations * (uint64_t)d->per_thread);
}

static int sched_run(tl_ctx *ctx)
{
    sched_data d = {.kind = S_COUNT};
    const char *kind = tl_param(ctx, "schedule");
    for (int k = 0; k < S_COUNT; k++)
        if (strcmp(kind, kind_names[k]) == 0)
            d.kind = (sched_kind)k;
    if (d.kind == S_COUNT) {
        tl_fail(ctx, "schedule=%s: expected static, dynamic or guided", kind);
        return -1;
    }
    d.chunk = (int)tl_param_long(ctx, "chunk", 1, 1L << 20);
    d.per_thread = tl_param_long(ctx, "iters_per_thread", 1, 1L << 20);
    ompb_run r;
    int rc = ompb_open(ctx, &r);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    r.data = &d;
    tl_measure_spec spec = {
        .metric = "overhead",
        .quantity = "overhead per loop of iters_per_thread x threads iterations (the work subtracted)",
        .reference = sched_reference,
    };
    rc = tl_measure(ctx, sched_time, &r, &spec);
    if (rc == 0)
        ompb_checks(&r, "loop iterations run by the team");
    ompb_close(&r);
    return rc;
}

static const char *const chunk_values[] = {"1", "4", "16", "64", NULL};
static const char *const chunk_quick[] = {"1", "64", NULL};
static const char *const per_thread_values[] = {"1024", NULL};
static const char *const per_thread_quick[] = {"128", NULL};

static const tl_param_def sched_params[] = {
    {.name = "schedule", .help = "static, dynamic or guided", .values = kind_names, .quick_values = kind_names},
    {.name = "chunk", .help = "the schedule's chunk size", .values = chunk_values, .quick_values = chunk_quick,
     .check = tl_check_positive_int},
    {.name = "iters_per_thread", .help = "loop iterations per thread (EPCC's default: 1024)",
     .values = per_thread_values, .quick_values = per_thread_quick, .check = tl_check_positive_int},
    OMPB_THREADS_PARAM,
    {0},
};

const tl_bench ompb_sched[] = {
    OMPB_BENCH("omp.schedule",
               "overhead of static, dynamic and guided loop schedules over chunk sizes (EPCC schedbench)",
               "overhead per loop (the work subtracted)",
               sched_params, sched_run),
    {0},
};
