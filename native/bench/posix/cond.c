/* cond.c - condition variables: the seed's ping-pong, send and receive
 * overheads, and the broadcast the seed lists as future work. */
#define _GNU_SOURCE
#include "families.h"
#include "sync_cond.h"
#include "sync_pingpong.h"

/* ------------------------------------------------------------ ping-pong */

static int run_pingpong(tl_ctx *ctx)
{
    /* A round trip is two handoffs; the record is per handoff. */
    return sync_pingpong(ctx, SYNC_MECH_COND, NULL, NULL, NULL, 2.0);
}

/* ------------------------------------------------------ send, receive */

static int run_signal(tl_ctx *ctx)
{
    if (tl_process_multithreaded(ctx) != 0)
        return -1;
    return sync_cond_signal_measure(ctx, NULL, NULL);
}

static int run_receive(tl_ctx *ctx)
{
    /* The table accepts only different-cpus: on one CPU the waiter runs
     * only when the signaller's slice ends, and the wait measures the
     * slice (the seed). */
    return sync_cond_continual(ctx, SYNC_COND_TIME_WAITS, NULL, NULL);
}

/* ------------------------------------------------------------ broadcast */

typedef struct bc_run bc_run;

typedef struct {
    bc_run *run;
    uint64_t seen;    /* the last generation this waiter woke for */
    uint64_t wakes;   /* generations it woke for */
    uint64_t skipped; /* generations it missed */
} TL_ALIGNED_CACHE_LINE bc_waiter;

struct bc_run {
    tl_ctx *ctx;
    unsigned n;
    pthread_mutex_t m;
    pthread_cond_t go;   /* main -> waiters: a new generation */
    pthread_cond_t done; /* the last waiter -> main */
    uint64_t gen;        /* under m: the generation main broadcast last */
    unsigned woken;      /* under m: waiters that have seen gen */
    int stop;            /* under m: a thread failed, everybody leaves */
    uint64_t rounds;     /* generations of the completed timings */
    bc_waiter *w;
    tl_team team;
    sync_error err;
};

/* Called with m held by a thread that failed: nobody may wait any more. */
static void bc_stop_locked(bc_run *r)
{
    r->stop = 1;
    pthread_cond_broadcast(&r->go);
    pthread_cond_signal(&r->done);
}

/* A waiter takes part in the same number of generations as main in every
 * timing, the untimed first one included. */
static void bc_waiter_run(void *arg, uint64_t iterations)
{
    bc_waiter *w = arg;
    bc_run *r = w->run;
    /* A default mutex cannot fail to lock (glibc returns errors only for
     * the error-checking, recursive and robust kinds); were it to, main
     * would wait for this waiter forever, so the error is kept for the
     * record and nothing else can be done without the mutex. */
    int rc = pthread_mutex_lock(&r->m);
    if (rc != 0) {
        sync_error_set(&r->err, "pthread_mutex_lock (waiter)", rc);
        return;
    }
    for (uint64_t k = 0; k <= iterations && !r->stop; k++) {
        while (r->gen == w->seen && !r->stop) {
            rc = pthread_cond_wait(&r->go, &r->m);
            if (rc != 0) {
                sync_error_set(&r->err, "pthread_cond_wait (waiter)", rc);
                bc_stop_locked(r);
            }
        }
        if (r->stop)
            break;
        if (r->gen != w->seen + 1)
            w->skipped++;
        w->seen = r->gen;
        w->wakes++;
        if (++r->woken == r->n && (rc = pthread_cond_signal(&r->done)) != 0) {
            sync_error_set(&r->err, "pthread_cond_signal (last waiter)", rc);
            bc_stop_locked(r);
        }
    }
    pthread_mutex_unlock(&r->m);
}

/* Main, holding m: `count` generations.  Returns nonzero to stop. */
static int bc_rounds(bc_run *r, uint64_t count)
{
    for (uint64_t k = 0; k < count && !r->stop; k++) {
        r->gen++;
        r->woken = 0;
        int rc = pthread_cond_broadcast(&r->go);
        if (rc != 0) {
            sync_error_set(&r->err, "pthread_cond_broadcast", rc);
            bc_stop_locked(r);
        }
        while (r->woken < r->n && !r->stop) {
            rc = pthread_cond_wait(&r->done, &r->m);
            if (rc != 0) {
                sync_error_set(&r->err, "pthread_cond_wait (main)", rc);
                bc_stop_locked(r);
            }
        }
    }
    return r->stop;
}

static double bc_time(void *arg, uint64_t iterations)
{
    bc_run *r = arg;
    /* Locked before the waiters start, so that a failure here leaves no
     * waiter blocked on a generation that never comes. */
    int rc = pthread_mutex_lock(&r->m);
    if (rc != 0) {
        tl_fail(r->ctx, "pthread_mutex_lock (main): %s", strerror(rc));
        return -1;
    }
    tl_team_go(&r->team, iterations);
    /* The first generation is untimed: it absorbs the waiters' wake-up from
     * the framework's handshake. */
    int stopped = bc_rounds(r, 1);
    uint64_t t0 = tl_now();
    if (!stopped)
        bc_rounds(r, iterations);
    uint64_t t1 = tl_now();
    pthread_mutex_unlock(&r->m);
    tl_team_wait(&r->team);
    if (sync_error_report(r->ctx, &r->err))
        return -1;
    r->rounds += iterations + 1;
    return tl_ticks_to_ns(t1 - t0);
}

static int run_broadcast(tl_ctx *ctx)
{
    long n = tl_param_long(ctx, "waiters", 1, TL_MAX_SLOTS - 1);
    if (tl_require_threads(ctx, (unsigned)n + 1) != 0)
        return 0;
    bc_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.n = (unsigned)n;
    r.w = aligned_alloc(TL_CACHE_LINE, (size_t)n * sizeof *r.w);
    if (!r.w) {
        tl_fail(ctx, "out of memory");
        return -1;
    }
    memset(r.w, 0, (size_t)n * sizeof *r.w);
    for (unsigned i = 0; i < r.n; i++)
        r.w[i].run = &r;
    int rc = sync_cond_pair_init(&r.m, &r.go);
    if (rc == 0 && (rc = pthread_cond_init(&r.done, NULL)) != 0)
        sync_cond_pair_destroy(&r.m, &r.go);
    if (rc != 0) {
        free(r.w);
        tl_fail(ctx, "initialising the conditions: %s", strerror(rc));
        return -1;
    }
    int result = tl_team_start(ctx, &r.team, 1, r.n, bc_waiter_run, r.w, sizeof *r.w);
    if (result == 0) {
        result = tl_measure(ctx, bc_time, &r, NULL);
        tl_team_stop(&r.team);
    }
    if (result == 0) {
        uint64_t wakes = 0, skipped = 0;
        for (unsigned i = 0; i < r.n; i++) {
            wakes += r.w[i].wakes;
            skipped += r.w[i].skipped;
        }
        uint64_t expected = r.rounds * r.n;
        tl_check(ctx, "all-woke", wakes == expected && skipped == 0, (double)wakes,
                 "%llu of %llu waiter wake-ups (%u waiters x %llu broadcasts); %llu generations skipped",
                 (unsigned long long)wakes, (unsigned long long)expected, r.n, (unsigned long long)r.rounds,
                 (unsigned long long)skipped);
    }
    pthread_cond_destroy(&r.done);
    sync_cond_pair_destroy(&r.m, &r.go);
    free(r.w);
    return result;
}

/* ---------------------------------------------------------------- table */

static const char *const waiters_values[] = {"1", "2", "4", NULL};
static const char *const waiters_quick[] = {"2", NULL};
static const tl_param_def broadcast_params[] = {
    {.name = "waiters",
     .help = "threads waiting on the condition (each needs its own CPU with different-cpus)",
     .values = waiters_values,
     .quick_values = waiters_quick,
     .check = tl_check_positive_int},
    {0},
};

const tl_bench tl_posix_cond[] = {
    TL_BENCH("pthread.cond.pingpong", "pthread",
             "two threads alternately wait on and signal a condition (with its mutex and predicate)",
             "time per one-way handoff (a round trip counts as 2)",
             2, TL_PLACES_ALL, NULL, run_pingpong),
    TL_BENCH("pthread.cond.signal", "pthread",
             "pthread_cond_signal with no waiter: the send overhead",
             "time per pthread_cond_signal (no waiter)",
             0, 0, NULL, run_signal),
    TL_BENCH("pthread.cond.receive", "pthread",
             "pthread_cond_wait while a thread on another CPU signals continually: the receive overhead",
             "time per returned pthread_cond_wait",
             2, TL_PLACE_BIT(TL_PLACE_DIFFERENT_CPUS), NULL, run_receive),
    TL_BENCH("pthread.cond.broadcast", "pthread",
             "main broadcasts a condition to N waiters and waits until all have woken",
             "time per broadcast round (broadcast until the last waiter has signalled back)",
             2, TL_PLACES_ALL, broadcast_params, run_broadcast),
    {0},
};
