/* barrier.c - pthread_barrier_wait among N threads (main and N-1
 * partners), the barrier the seed lists among future tests. */
#define _GNU_SOURCE
#include "families.h"
#include "sync_common.h"

typedef struct bar_run bar_run;

typedef struct {
    bar_run *run;
    unsigned index;
    uint64_t episodes;         /* episodes this thread has passed */
    uint64_t serial;           /* PTHREAD_BARRIER_SERIAL_THREAD results */
    uint64_t early;            /* episodes passed before the neighbour arrived */
    _Atomic uint64_t arrived;  /* episodes this thread has arrived at */
} TL_ALIGNED_CACHE_LINE bar_thread;

struct bar_run {
    tl_ctx *ctx;
    unsigned n;
    pthread_barrier_t barrier;
    bar_thread *t; /* t[0] is main's */
    tl_team team;
    uint64_t episodes; /* episodes of the completed timings */
    sync_error err;
};

/* Each thread announces its arrival before waiting and, once through,
 * checks that its neighbour (index + 1, cyclically) had arrived at the same
 * episode: around the ring that proves nobody passed an episode before
 * every thread had reached it.  The neighbour can be at most one episode
 * further on, since it cannot pass the next barrier without this thread.
 * The check costs one load of a line the neighbour wrote, while the other
 * threads are still being released. */
static void bar_episodes(bar_thread *t, uint64_t count)
{
    bar_run *r = t->run;
    const _Atomic uint64_t *neighbour = &r->t[(t->index + 1) % r->n].arrived;
    for (uint64_t k = 0; k < count; k++) {
        uint64_t e = t->episodes + 1;
        atomic_store_explicit(&t->arrived, e, memory_order_relaxed);
        int rc = pthread_barrier_wait(&r->barrier);
        if (rc == PTHREAD_BARRIER_SERIAL_THREAD)
            t->serial++;
        else if (rc != 0)
            /* Leaving the loop would strand the other threads in the
             * barrier, which has no way to abort: record and go on. */
            sync_error_set(&r->err, "pthread_barrier_wait", rc);
        uint64_t v = atomic_load_explicit(neighbour, memory_order_relaxed);
        if (v != e && v != e + 1)
            t->early++;
        t->episodes = e;
    }
}

/* Partners pass the same episodes as main in every timing, including its
 * untimed first one. */
static void bar_partner(void *arg, uint64_t iterations)
{
    bar_episodes(arg, iterations + 1);
}

static double bar_time(void *arg, uint64_t iterations)
{
    bar_run *r = arg;
    tl_team_go(&r->team, iterations);
    /* The first episode is untimed: it absorbs the partners' wake-up from
     * the framework's handshake. */
    bar_episodes(&r->t[0], 1);
    uint64_t t0 = tl_now();
    bar_episodes(&r->t[0], iterations);
    uint64_t t1 = tl_now();
    tl_team_wait(&r->team);
    if (sync_error_report(r->ctx, &r->err))
        return -1;
    r->episodes += iterations + 1;
    return tl_ticks_to_ns(t1 - t0);
}

static void bar_check(tl_ctx *ctx, const bar_run *r)
{
    uint64_t serial = 0, early = 0, short_threads = 0;
    for (unsigned i = 0; i < r->n; i++) {
        serial += r->t[i].serial;
        early += r->t[i].early;
        short_threads += r->t[i].episodes != r->episodes;
    }
    tl_check(ctx, "all-passed", short_threads == 0 && early == 0, (double)r->episodes,
             "%u threads each passed %llu episodes: %llu threads passed another number, %llu passes happened "
             "before the neighbouring thread had arrived",
             r->n, (unsigned long long)r->episodes, (unsigned long long)short_threads, (unsigned long long)early);
    tl_check(ctx, "serial", serial == r->episodes, (double)serial,
             "PTHREAD_BARRIER_SERIAL_THREAD was returned %llu times in %llu episodes (exactly once each expected)",
             (unsigned long long)serial, (unsigned long long)r->episodes);
}

static int run_barrier(tl_ctx *ctx)
{
    long n = tl_param_long(ctx, "threads", 2, TL_MAX_SLOTS);
    if (tl_require_threads(ctx, (unsigned)n) != 0)
        return 0;
    bar_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.n = (unsigned)n;
    r.t = aligned_alloc(TL_CACHE_LINE, (size_t)n * sizeof *r.t);
    if (!r.t) {
        tl_fail(ctx, "out of memory");
        return -1;
    }
    memset(r.t, 0, (size_t)n * sizeof *r.t);
    for (unsigned i = 0; i < r.n; i++) {
        r.t[i].run = &r;
        r.t[i].index = i;
    }
    int rc = pthread_barrier_init(&r.barrier, NULL, r.n);
    if (rc != 0) {
        free(r.t);
        tl_fail(ctx, "pthread_barrier_init: %s", strerror(rc));
        return -1;
    }
    int result = tl_team_start(ctx, &r.team, 1, r.n - 1, bar_partner, &r.t[1], sizeof *r.t);
    if (result == 0) {
        result = tl_measure(ctx, bar_time, &r, NULL);
        tl_team_stop(&r.team);
    }
    if (result == 0)
        bar_check(ctx, &r);
    pthread_barrier_destroy(&r.barrier);
    free(r.t);
    return result;
}

static const char *const threads_values[] = {"2", "4", "8", NULL};
static const char *const threads_quick[] = {"2", NULL};
static const tl_param_def barrier_params[] = {
    {.name = "threads",
     .help = "threads meeting at the barrier, main included (different-cpus needs as many CPUs)",
     .values = threads_values,
     .quick_values = threads_quick,
     .check = tl_check_positive_int},
    {0},
};

const tl_bench tl_posix_barrier[] = {
    TL_BENCH("pthread.barrier", "pthread",
             "N threads repeatedly meet at a pthread barrier",
             "time per barrier episode (every thread through pthread_barrier_wait)",
             2, TL_PLACES_ALL, barrier_params, run_barrier),
    {0},
};
