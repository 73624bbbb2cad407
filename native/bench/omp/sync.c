/* sync.c - omp.sync: the overhead of OpenMP's synchronisation constructs
 * (EPCC syncbench's method).  One iteration of a timing is one use of the
 * construct by the team around the delay; the reference is the delay (and
 * the same counting) run by one thread, subtracted per action:
 *
 *   parallel       a parallel region whose threads each run the delay
 *   for            a worksharing loop of n iterations (one delay each) in
 *                  a region that encloses the whole timing
 *   parallel_for   a combined parallel for of n iterations
 *   parallel_for_dynamic  a combined parallel for with schedule(dynamic)
 *                  of a constant COMBINED_ITERS iterations: GCC calls the
 *                  runtime's combined-loop entry
 *                  (GOMP_parallel_loop_nonmonotonic_dynamic) only for
 *                  constant bounds; otherwise, and for the static
 *                  parallel_for, it calls GOMP_parallel and runs the loop
 *                  inside.  The reference is ceil(COMBINED_ITERS / n)
 *                  delays, the work of the busiest thread when the loop
 *                  is shared at best
 *   barrier        each thread: the delay, then a barrier
 *   single         a single construct running the delay
 *   critical       each thread: the delay inside a critical section
 *                  (n sections per iteration, one action each)
 *   lock           the same with omp_set_lock / omp_unset_lock
 *   atomic         each thread: one atomic update (n per iteration; the
 *                  reference is the plain update, no delay)
 *   reduction      a parallel region with reduction(+), each thread
 *                  adding 1 after the delay
 *   nested         each thread of a region enclosing the timing opens a
 *                  nested parallel region of n threads that each run the
 *                  delay (not EPCC's: issue 14's measure of nested teams)
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "ompb.h"

typedef enum {
    C_PARALLEL, C_FOR, C_PARALLEL_FOR, C_PARALLEL_FOR_DYNAMIC, C_BARRIER, C_SINGLE, C_CRITICAL, C_LOCK, C_ATOMIC,
    C_REDUCTION, C_NESTED, C_COUNT
} construct;

static const char *const construct_names[] = {
    "parallel", "for", "parallel_for", "parallel_for_dynamic", "barrier", "single", "critical", "lock", "atomic",
    "reduction", "nested", NULL};

typedef struct {
    construct c;
    omp_lock_t lock;
    uint64_t inside;    /* threads inside a critical section or the lock, seen by one entering */
    uint64_t reduced;   /* the reductions' results, summed */
} sync_data;

/* -------------------------------------------------------------- tests */

static double time_parallel(ompb_run *r, uint64_t iterations)
{
    long len = r->delay_length;
    uint64_t t0 = tl_now();
    for (uint64_t j = 0; j < iterations; j++) {
#pragma omp parallel num_threads(r->n)
        {
            int id = omp_get_thread_num();
            ompb_delay(len);
            r->t[id].work++;
            OMPB_WHERE(r, id, j);
        }
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

static double time_for(ompb_run *r, uint64_t iterations)
{
    long len = r->delay_length;
    int n = r->n;
    uint64_t t0 = tl_now();
#pragma omp parallel num_threads(n)
    {
        int id = omp_get_thread_num();
        ompb_thread *me = &r->t[id];
        for (uint64_t j = 0; j < iterations; j++) {
#pragma omp for
            for (int i = 0; i < n; i++) {
                ompb_delay(len);
                me->work++;
                OMPB_WHERE(r, id, j);
            }
        }
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

/* A combined parallel loop per iteration, of `bound` iterations that each
 * run the delay. */
#define COMBINED_TIMING(name, clause, bound)                                                                 \
    static double name(ompb_run *r, uint64_t iterations)                                                    \
    {                                                                                                       \
        long len = r->delay_length;                                                                         \
        int n = r->n;                                                                                       \
        uint64_t t0 = tl_now();                                                                             \
        for (uint64_t j = 0; j < iterations; j++) {                                                         \
            _Pragma(clause)                                                                                 \
            for (int i = 0; i < (bound); i++) {                                                             \
                int id = omp_get_thread_num();                                                              \
                ompb_delay(len);                                                                            \
                r->t[id].work++;                                                                            \
                OMPB_WHERE(r, id, j);                                                                       \
            }                                                                                               \
        }                                                                                                   \
        return tl_ticks_to_ns(tl_now() - t0);                                                               \
    }

#define COMBINED_ITERS 16

COMBINED_TIMING(time_parallel_for, "omp parallel for num_threads(n)", n)
COMBINED_TIMING(time_parallel_for_dynamic, "omp parallel for schedule(dynamic) num_threads(n)", COMBINED_ITERS)

/* Each thread announces its arrival, and once through the barrier checks
 * that its neighbour had arrived at this episode too. */
static double time_barrier(ompb_run *r, uint64_t iterations)
{
    long len = r->delay_length;
    int n = r->n;
    uint64_t t0 = tl_now();
#pragma omp parallel num_threads(n)
    {
        int id = omp_get_thread_num();
        ompb_thread *me = &r->t[id];
        const ompb_thread *next = &r->t[(id + 1) % n];
        uint64_t base = atomic_load_explicit(&me->arrived, memory_order_relaxed);
        for (uint64_t j = 1; j <= iterations; j++) {
            ompb_delay(len);
            me->work++;
            OMPB_WHERE(r, id, j);
            atomic_store_explicit(&me->arrived, base + j, memory_order_relaxed);
#pragma omp barrier
            if (atomic_load_explicit(&next->arrived, memory_order_relaxed) < base + j)
                me->early++;
        }
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

static double time_single(ompb_run *r, uint64_t iterations)
{
    long len = r->delay_length;
    uint64_t t0 = tl_now();
#pragma omp parallel num_threads(r->n)
    {
        ompb_thread *me = &r->t[omp_get_thread_num()];
        for (uint64_t j = 0; j < iterations; j++) {
#pragma omp single
            {
                ompb_delay(len);
                me->work++;
            }
        }
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

/* Mutual exclusion is checked by the one counter all threads update inside
 * (no update may be lost) and by a thread finding another inside. */
static inline void exclusive_work(ompb_run *r, sync_data *d, ompb_thread *me, long len)
{
    if (__atomic_fetch_add(&d->inside, 1, __ATOMIC_RELAXED) != 0)
        me->early++;
    ompb_delay(len);
    r->shared++;
    __atomic_fetch_sub(&d->inside, 1, __ATOMIC_RELAXED);
}

static double time_critical(ompb_run *r, uint64_t iterations)
{
    sync_data *d = r->data;
    long len = r->delay_length;
    uint64_t t0 = tl_now();
#pragma omp parallel num_threads(r->n)
    {
        ompb_thread *me = &r->t[omp_get_thread_num()];
        for (uint64_t j = 0; j < iterations; j++) {
#pragma omp critical
            exclusive_work(r, d, me, len);
        }
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

static double time_lock(ompb_run *r, uint64_t iterations)
{
    sync_data *d = r->data;
    long len = r->delay_length;
    uint64_t t0 = tl_now();
#pragma omp parallel num_threads(r->n)
    {
        ompb_thread *me = &r->t[omp_get_thread_num()];
        for (uint64_t j = 0; j < iterations; j++) {
            omp_set_lock(&d->lock);
            exclusive_work(r, d, me, len);
            omp_unset_lock(&d->lock);
        }
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

static double time_atomic(ompb_run *r, uint64_t iterations)
{
    uint64_t t0 = tl_now();
#pragma omp parallel num_threads(r->n)
    {
        for (uint64_t j = 0; j < iterations; j++) {
#pragma omp atomic
            r->shared += 1;
        }
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

static double time_reduction(ompb_run *r, uint64_t iterations)
{
    sync_data *d = r->data;
    long len = r->delay_length;
    uint64_t t0 = tl_now();
    for (uint64_t j = 0; j < iterations; j++) {
        uint64_t sum = 0;
#pragma omp parallel num_threads(r->n) reduction(+ : sum)
        {
            ompb_delay(len);
            sum += 1;
            OMPB_WHERE(r, omp_get_thread_num(), j);
        }
        d->reduced += sum;
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

/* The master of each nested team counts its team's threads for its outer
 * thread: n x n per iteration when every nested team is whole. */
static double time_nested(ompb_run *r, uint64_t iterations)
{
    long len = r->delay_length;
    int n = r->n;
    uint64_t t0 = tl_now();
#pragma omp parallel num_threads(n)
    {
        ompb_thread *outer = &r->t[omp_get_thread_num()];
        for (uint64_t j = 0; j < iterations; j++) {
#pragma omp parallel num_threads(n)
            {
                ompb_delay(len);
                if (omp_get_thread_num() == 0)
                    outer->work += (uint64_t)omp_get_num_threads();
            }
        }
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

static double sync_time(void *arg, uint64_t iterations)
{
    ompb_run *r = arg;
    sync_data *d = r->data;
    double t = 0;
    switch (d->c) {
    case C_PARALLEL: t = time_parallel(r, iterations); break;
    case C_FOR: t = time_for(r, iterations); break;
    case C_PARALLEL_FOR: t = time_parallel_for(r, iterations); break;
    case C_PARALLEL_FOR_DYNAMIC: t = time_parallel_for_dynamic(r, iterations); break;
    case C_BARRIER: t = time_barrier(r, iterations); break;
    case C_SINGLE: t = time_single(r, iterations); break;
    case C_CRITICAL: t = time_critical(r, iterations); break;
    case C_LOCK: t = time_lock(r, iterations); break;
    case C_ATOMIC: t = time_atomic(r, iterations); break;
    case C_REDUCTION: t = time_reduction(r, iterations); break;
    case C_NESTED: t = time_nested(r, iterations); break;
    default: break;
    }
    /* What every timing must have done, for the checks. */
    uint64_t per = d->c == C_SINGLE                 ? 1
                   : d->c == C_NESTED               ? (uint64_t)r->n * (uint64_t)r->n
                   : d->c == C_PARALLEL_FOR_DYNAMIC ? COMBINED_ITERS
                                                    : (uint64_t)r->n;
    r->expected += per * iterations;
    ompb_verify_team(r);
    return t;
}

/* ---------------------------------------------------------- reference */

/* The same delays (or updates) by one thread, without the construct; the
 * counting goes to a scratch counter so the checks see the tests only. */
static double sync_reference(void *arg, uint64_t iterations)
{
    ompb_run *r = arg;
    const sync_data *d = r->data;
    if (d->c == C_PARALLEL_FOR_DYNAMIC)
        return ompb_delays(r, iterations * (uint64_t)((COMBINED_ITERS + r->n - 1) / r->n));
    if (d->c != C_ATOMIC)
        return ompb_delays(r, iterations * (d->c == C_CRITICAL || d->c == C_LOCK ? (uint64_t)r->n : 1));
    uint64_t actions = iterations * (uint64_t)r->n, scratch = 0;
    uint64_t t0 = tl_now();
    for (uint64_t j = 0; j < actions; j++) {
        scratch += 1;
        tl_launder(scratch);
    }
    double t = tl_ticks_to_ns(tl_now() - t0);
    tl_do_not_optimize(scratch);
    return t;
}

/* ---------------------------------------------------------------- run */

static construct parse_construct(const char *name)
{
    for (int c = 0; c < C_COUNT; c++)
        if (strcmp(construct_names[c], name) == 0)
            return (construct)c;
    return C_COUNT;
}

static int sync_run(tl_ctx *ctx)
{
    sync_data d;
    memset(&d, 0, sizeof d);
    d.c = parse_construct(tl_param(ctx, "construct"));
    if (d.c == C_COUNT) {
        tl_fail(ctx, "construct=%s is not a construct of this benchmark", tl_param(ctx, "construct"));
        return -1;
    }
    ompb_run r;
    int rc = ompb_open(ctx, &r);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    r.data = &d;
    omp_init_lock(&d.lock);
    if (d.c == C_NESTED)
        omp_set_max_active_levels(2);
    int per_thread = d.c == C_CRITICAL || d.c == C_LOCK || d.c == C_ATOMIC;
    tl_measure_spec spec = {
        .metric = "overhead",
        .quantity = per_thread ? "overhead per use by one thread (the delay subtracted)"
                               : "overhead per construct (the delay subtracted)",
        .reference = sync_reference,
        .actions_per_iteration = per_thread ? r.n : 1,
        /* The enclosing region's start and end, once per timing, stay a
         * small part of it (a nested region costs as much as they do). */
        .min_iterations = d.c == C_NESTED ? 16 : 256,
    };
    rc = tl_measure(ctx, sync_time, &r, &spec);
    /* the constructs whose threads each run a delay per iteration and meet
     * at its end (the dynamic loop's thread may run several) */
    if (rc == 0 && (d.c == C_PARALLEL || d.c == C_FOR || d.c == C_PARALLEL_FOR || d.c == C_BARRIER ||
                    d.c == C_REDUCTION))
        ompb_sample_places(&r, sync_time);
    omp_destroy_lock(&d.lock);
    if (rc == 0) {
        /* The counts: the exclusive and atomic constructs count in the
         * shared counter, the reduction in its results, the others in the
         * threads' counters. */
        const char *what = "delays run by the team";
        if (d.c == C_CRITICAL || d.c == C_LOCK || d.c == C_ATOMIC) {
            r.t[0].work = r.shared;
            for (int i = 1; i < r.n; i++)
                r.t[i].work = 0;
            what = d.c == C_ATOMIC ? "atomic updates (none lost)" : "updates inside the exclusive section (none lost)";
        } else if (d.c == C_REDUCTION) {
            r.t[0].work = d.reduced;
            for (int i = 1; i < r.n; i++)
                r.t[i].work = 0;
            what = "the reductions' sums";
        } else if (d.c == C_NESTED) {
            what = "threads of the nested teams";
        }
        uint64_t early = 0;
        for (int i = 0; i < r.n; i++)
            early += r.t[i].early;
        ompb_checks(&r, what);
        if (d.c == C_BARRIER)
            tl_check(ctx, "barrier", early == 0, (double)early,
                     "%llu passes of the barrier before the neighbouring thread had arrived",
                     (unsigned long long)early);
        if (d.c == C_CRITICAL || d.c == C_LOCK)
            tl_check(ctx, "exclusive", early == 0, (double)early,
                     "%llu entries found another thread inside", (unsigned long long)early);
    }
    ompb_close(&r);
    return rc;
}

static const tl_param_def sync_params[] = {
    {.name = "construct",
     .help = "parallel, for, parallel_for, parallel_for_dynamic (schedule(dynamic), 16 iterations: the runtime's "
             "combined-loop entry), barrier, single, critical, lock (omp_set_lock/omp_unset_lock), atomic, reduction, nested (a "
             "region of n in each thread of a region of n)",
     .values = construct_names,
     .quick_values = construct_names},
    OMPB_THREADS_PARAM,
    {0},
};

const tl_bench ompb_sync[] = {
    OMPB_BENCH("omp.sync",
               "overhead of OpenMP synchronisation constructs around a 0.1 us delay (EPCC syncbench)",
               "overhead per construct (the delay subtracted)",
               sync_params, sync_run),
    {0},
};
