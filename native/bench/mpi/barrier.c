/* barrier.c - mpi.barrier: the barrier across all threads of all MPI
 * processes that seed 002 set as the goal of a mixed-model suite, against
 * the flat layout of one rank per CPU.
 *
 *   layout=ranks   every rank the launcher started, one thread each:
 *                  MPI_Barrier alone;
 *   layout=hybrid  one rank per host, with as many threads as the launcher
 *                  started ranks on that host (so the same CPUs take part):
 *                  every thread waits at a thread barrier, the main thread
 *                  calls MPI_Barrier among the hosts' ranks, every thread
 *                  waits at the thread barrier again.  The other ranks park.
 *
 * Launched with one rank per CPU, the two layouts synchronise the same
 * CPUs, by message passing alone or by threads within a host and messages
 * between hosts. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mpib.h"

typedef struct bar_run bar_run;

typedef struct {
    bar_run *run;
    unsigned index;
    uint64_t episodes;        /* episodes this thread completed */
    uint64_t early;           /* episodes its neighbour had not reached when it passed */
    uint64_t before_mpi;      /* episodes it left before the main thread's MPI_Barrier */
    _Atomic uint64_t arrived; /* episodes this thread has arrived at */
} TL_ALIGNED_CACHE_LINE bar_thread;

struct bar_run {
    mpib_world *w;
    int hybrid;
    unsigned n; /* threads of this rank */
    pthread_barrier_t barrier;
    bar_thread *t;
    _Atomic uint64_t mpi_done; /* MPI_Barrier calls of the main thread */
    tl_team team;
    _Atomic int error;
};

/* One episode of thread t: thread barrier, MPI_Barrier (main thread),
 * thread barrier.  Around the ring, each thread checks after the first wait
 * that its neighbour had arrived (nobody passes before everyone is there),
 * and after the second that the main thread's MPI_Barrier of this episode
 * was done (nobody leaves before the ranks have met). */
static void bar_episodes(bar_thread *t, uint64_t count)
{
    bar_run *r = t->run;
    const _Atomic uint64_t *neighbour = &r->t[(t->index + 1) % r->n].arrived;
    for (uint64_t k = 0; k < count; k++) {
        uint64_t e = t->episodes + 1;
        if (!r->hybrid) {
            MPI_Barrier(r->w->comm);
            atomic_store_explicit(&r->mpi_done, e, memory_order_relaxed);
            t->episodes = e;
            continue;
        }
        atomic_store_explicit(&t->arrived, e, memory_order_relaxed);
        int rc = pthread_barrier_wait(&r->barrier);
        if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD)
            atomic_store(&r->error, rc); /* leaving would strand the others in the barrier */
        if (atomic_load_explicit(neighbour, memory_order_relaxed) != e)
            t->early++;
        if (t->index == 0) {
            MPI_Barrier(r->w->comm);
            atomic_store_explicit(&r->mpi_done, e, memory_order_release);
        }
        rc = pthread_barrier_wait(&r->barrier);
        if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD)
            atomic_store(&r->error, rc);
        if (atomic_load_explicit(&r->mpi_done, memory_order_acquire) != e)
            t->before_mpi++;
        t->episodes = e;
    }
}

static void bar_partner(void *arg, uint64_t iterations)
{
    bar_thread *t = arg;
    mpib_place_note(t->run->w, mpib_slot(t->run->w, (int)t->index));
    bar_episodes(t, iterations);
}

static double bar_body(void *arg, uint64_t iterations)
{
    bar_run *r = arg;
    tl_team_go(&r->team, iterations);
    uint64_t t0 = tl_now();
    bar_episodes(&r->t[0], iterations);
    uint64_t t1 = tl_now();
    tl_team_wait(&r->team);
    mpib_place_note(r->w, mpib_slot(r->w, 0));
    return tl_ticks_to_ns(t1 - t0);
}

/* The members: every rank, or the first rank of every host. */
static int bar_members(const mpib_world *w, int hybrid, int *members, int *threads)
{
    int n = 0;
    *threads = 1;
    for (int r = 0; r < w->world_size; r++) {
        int first_on_host = 1;
        for (int q = 0; q < r && first_on_host; q++)
            first_on_host = strcmp(w->hosts[q], w->hosts[r]) != 0;
        if (!hybrid || first_on_host)
            members[n++] = r;
    }
    if (hybrid) {
        /* threads = the launcher's ranks on rank 0's host; every host must
         * have as many, or the layouts would not compare the same CPUs. */
        int on_host0 = 0;
        for (int r = 0; r < w->world_size; r++)
            on_host0 += strcmp(w->hosts[r], w->hosts[0]) == 0;
        for (int i = 0; i < n; i++) {
            int here = 0;
            for (int r = 0; r < w->world_size; r++)
                here += strcmp(w->hosts[r], w->hosts[members[i]]) == 0;
            if (here != on_host0)
                return -members[i] - 1;
        }
        *threads = on_host0;
    }
    return n;
}

static void bar_checks(tl_ctx *ctx, bar_run *r, uint64_t rank_iterations)
{
    mpib_world *w = r->w;
    uint64_t early = 0, before_mpi = 0, lo = UINT64_MAX, hi = 0;
    for (unsigned i = 0; i < r->n; i++) {
        early += r->t[i].early;
        before_mpi += r->t[i].before_mpi;
        lo = r->t[i].episodes < lo ? r->t[i].episodes : lo;
        hi = r->t[i].episodes > hi ? r->t[i].episodes : hi;
    }
    int bad_count = lo != rank_iterations || hi != rank_iterations;
    uint64_t all_early = mpib_sum(w, early), all_before = mpib_sum(w, before_mpi);
    uint64_t all_bad = mpib_sum(w, (uint64_t)bad_count);
    uint64_t mpi_lo = mpib_min(w, atomic_load(&r->mpi_done)), mpi_hi = mpib_max(w, atomic_load(&r->mpi_done));
    uint64_t errors = mpib_sum(w, atomic_load(&r->error) != 0);
    if (w->rank != 0)
        return;
    tl_check(ctx, "episodes", all_bad == 0 && mpi_lo == mpi_hi && mpi_hi == rank_iterations, (double)mpi_hi,
             "every thread of the %d ranks passed %llu episodes (%llu ranks had a thread with another count); "
             "MPI_Barrier was called %llu to %llu times per rank",
             w->size, (unsigned long long)rank_iterations, (unsigned long long)all_bad,
             (unsigned long long)mpi_lo, (unsigned long long)mpi_hi);
    if (r->hybrid)
        tl_check(ctx, "all_passed", all_early == 0 && all_before == 0 && errors == 0,
                 (double)(all_early + all_before),
                 "%llu passes of a thread barrier before the neighbouring thread had arrived, %llu threads "
                 "leaving an episode before its MPI_Barrier, %llu ranks with a pthread_barrier_wait error",
                 (unsigned long long)all_early, (unsigned long long)all_before, (unsigned long long)errors);
}

static int bar_run_point(tl_ctx *ctx)
{
    int hybrid = strcmp(tl_param(ctx, "layout"), "hybrid") == 0;
    mpib_world w;
    if (mpib_init(ctx, &w, MPI_THREAD_FUNNELED) != MPIB_OK)
        return mpib_finish(&w, 0);
    int *members = malloc((size_t)w.world_size * sizeof *members);
    if (!members)
        mpib_die("out of memory");
    int threads;
    int n = bar_members(&w, hybrid, members, &threads);
    if (n < 0) {
        tl_unsupported(ctx, "layout=hybrid needs the same number of ranks on every host (host %s has another "
                       "number than %s)", w.hosts[-n - 1], w.hosts[0]);
        free(members);
        return mpib_finish(&w, 0);
    }
    int rc = mpib_join(&w, members, n, threads);
    free(members);
    if (rc != MPIB_OK || !mpib_member(&w))
        return mpib_finish(&w, 0);

    bar_run r;
    memset(&r, 0, sizeof r);
    r.w = &w;
    r.hybrid = hybrid;
    r.n = (unsigned)threads;
    r.t = aligned_alloc(TL_CACHE_LINE, r.n * sizeof *r.t);
    if (!r.t)
        mpib_die("out of memory");
    memset(r.t, 0, r.n * sizeof *r.t);
    for (unsigned i = 0; i < r.n; i++) {
        r.t[i].run = &r;
        r.t[i].index = i;
    }
    rc = pthread_barrier_init(&r.barrier, NULL, r.n);
    if (rc != 0)
        mpib_die("pthread_barrier_init: %s", strerror(rc));
    /* A thread that cannot start leaves this rank unable to take part:
     * the job cannot go on without it. */
    if (tl_team_start(ctx, &r.team, mpib_slot(&w, 1), r.n - 1, bar_partner, &r.t[1], sizeof *r.t) != 0) {
        mpib_die("cannot start the barrier's threads: %s", strerror(errno));
    }
    uint64_t iterations = 0;
    tl_measure_spec spec = {
        .quantity = hybrid ? "time per hybrid barrier (thread barrier, MPI_Barrier, thread barrier)"
                           : "time per MPI_Barrier (one thread per rank)",
    };
    rc = mpib_measure(&w, bar_body, &r, &spec, NULL, &iterations);
    tl_team_stop(&r.team);
    mpib_collect(&w);
    bar_checks(ctx, &r, iterations);
    if (w.rank == 0 && rc == 0)
        mpib_checks(&w);
    pthread_barrier_destroy(&r.barrier);
    free(r.t);
    return mpib_finish(&w, rc);
}

static const char *const layouts[] = {"ranks", "hybrid", NULL};

static const tl_param_def bar_params[] = {
    {.name = "layout",
     .help = "ranks: every rank, MPI_Barrier alone; hybrid: one rank per host with a thread per rank the "
             "launcher started there (thread barrier, MPI_Barrier, thread barrier)",
     .values = layouts,
     .quick_values = layouts},
    MPIB_TRANSPORT_PARAM(mpib_transport_default),
    {0},
};

const tl_bench mpib_barrier[] = {
    MPIB_BENCH("mpi.barrier",
               "barrier of every thread of every process (the Pthreads benchmark suite's hybrid barrier) against one rank per CPU",
               "time per barrier",
               bar_params, bar_run_point),
    {0},
};
