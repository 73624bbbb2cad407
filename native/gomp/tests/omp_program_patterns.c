/*
 * omp_program_patterns.c - two habits of real OpenMP programs that the
 * conformance program does not have, found by running the public NAS
 * Parallel Benchmarks' OpenMP C port on libthreadlab-gomp:
 *
 *   big-tls   NAS EP keeps 1 MiB of threadprivate data. glibc carves a
 *             thread's static TLS out of its stack, so every thread the
 *             runtime makes for itself (VPs, TLS donors, the preemption
 *             ticker, the manager's watcher) must get a stack that holds
 *             it: a 64 KiB one made pthread_create fail, and the runtime
 *             did not start.
 *   pipeline  NAS LU's triangular solves: team threads wait for each
 *             other by spinning on flags in the program's own code, with
 *             no OpenMP call in the wait. Each region starts with a
 *             barrier that the master reaches first and waits at (no
 *             spinning: THREADLAB_GOMP_SPIN_US=0 in the test), while its
 *             worker has not started yet (the VPs sleep between regions):
 *             the worker then starts on the master's VP, releases the
 *             master, which is bound to that VP, and spins for it.  It
 *             must leave the VP to the master; with more threads than
 *             CPUs (OMP_NUM_THREADS) time slices must come as well.
 *   yield     OpenBLAS's threaded level 3 (found running an unmodified
 *             dgemm caller under the resource manager): team threads wait
 *             for each other's flags calling sched_yield between looks,
 *             in a shared library, where the preemption ticker does not
 *             interrupt them. With more threads than active VPs the
 *             thread waited for can be queued behind the spinner on its
 *             VP, and the kernel's yield never runs it: sched_yield must
 *             run the VP's other threads (the test turns time slices off,
 *             TL_ULT_PREEMPT_MS=0, and runs one VP for two threads).
 *
 * Plain OpenMP: runs on libgomp and on libthreadlab-gomp alike; an alarm
 * turns a hang into a failure.  Usage: omp_program_patterns [big-tls |
 * pipeline | yield] (big-tls and pipeline when none).
 */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(c)                                                                                            \
    do {                                                                                                    \
        if (!(c)) {                                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);                          \
            failures++;                                                                                     \
        }                                                                                                   \
    } while (0)

/* ---- big-tls ------------------------------------------------------------------ */

#define BIG_TLS_DOUBLES (1 << 17) /* 1 MiB, NAS EP's threadprivate x[2 * NK] */
static double big[BIG_TLS_DOUBLES];
#pragma omp threadprivate(big)

static void big_tls(void)
{
    int bad = 0;
#pragma omp parallel reduction(+ : bad)
    {
        int me = omp_get_thread_num();
        for (int i = 0; i < BIG_TLS_DOUBLES; i += 4096)
            big[i] = me + i;
    }
    /* threadprivate data persists between regions of the same team size */
#pragma omp parallel reduction(+ : bad)
    {
        int me = omp_get_thread_num();
        for (int i = 0; i < BIG_TLS_DOUBLES; i += 4096)
            bad += big[i] != me + i;
    }
    CHECK(bad == 0);
    printf("big-tls: %d threads, 1 MiB of threadprivate data each\n", omp_get_max_threads());
}

/* ---- pipeline ----------------------------------------------------------------- */

#define PIPELINE_REGIONS 20
#define PIPELINE_STEPS 100
#define PIPELINE_MAX 64

static volatile long stage[PIPELINE_MAX];

static void pipeline(void)
{
    long sum_bad = 0;
    int nthreads = 0;
    /* more threads than CPUs: every hand-off waits for a time slice (the
     * kernel's under libgomp, the ticker's here), so fewer of them */
    int crowded = omp_get_max_threads() > omp_get_num_procs();
    int regions = crowded ? 3 : PIPELINE_REGIONS;
    long steps = crowded ? 10 : PIPELINE_STEPS;
    for (int region = 0; region < regions; region++) {
        /* the VPs (or libgomp's threads) go to sleep */
        usleep(3000);
        memset((void *)stage, 0, sizeof stage);
#pragma omp parallel reduction(+ : sum_bad)
        {
            int me = omp_get_thread_num(), n = omp_get_num_threads();
#pragma omp single
            nthreads = n;
#pragma omp barrier
            if (n <= PIPELINE_MAX)
                for (long step = 1; step <= steps; step++) {
                    /* wait for the previous thread's step, in plain code */
                    if (me > 0)
                        while (__atomic_load_n(&stage[me - 1], __ATOMIC_ACQUIRE) < step)
                            ;
                    /* and for the next one to have taken the last step */
                    if (me < n - 1)
                        while (__atomic_load_n(&stage[me + 1], __ATOMIC_ACQUIRE) < step - 1)
                            ;
                    __atomic_store_n(&stage[me], step, __ATOMIC_RELEASE);
                }
        }
        for (int t = 0; t < nthreads && t < PIPELINE_MAX; t++)
            sum_bad += stage[t] != steps;
    }
    CHECK(nthreads >= 1 && nthreads <= PIPELINE_MAX);
    CHECK(sum_bad == 0);
    printf("pipeline: %d regions of %d threads on %d CPUs, %ld steps each\n", regions, nthreads, omp_get_num_procs(),
           steps);
}

/* ---- yield ------------------------------------------------------------------- */

#define YIELD_ROUNDS 2000

static volatile long turn;

static void yield(void)
{
    long bad = 0, passes = 0;
    int nthreads = 0;
    turn = 0;
#pragma omp parallel reduction(+ : bad, passes)
    {
        int me = omp_get_thread_num(), n = omp_get_num_threads();
#pragma omp single
        nthreads = n;
        /* the turn goes round the team: thread me plays turns me, me + n, ... */
        for (long t = me; t < (long)YIELD_ROUNDS * n; t += n) {
            while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != t)
                sched_yield();
            bad += turn != t;
            passes++;
            __atomic_store_n(&turn, t + 1, __ATOMIC_RELEASE);
        }
    }
    CHECK(bad == 0);
    CHECK(passes == (long)YIELD_ROUNDS * nthreads);
    CHECK(turn == (long)YIELD_ROUNDS * nthreads);
    printf("yield: %d threads took %d turns each, waiting with sched_yield\n", nthreads, YIELD_ROUNDS);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "omp_program_patterns: FAILED: no progress in 60 s (a hang)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

int main(int argc, char **argv)
{
    signal(SIGALRM, on_alarm);
    alarm(60);
    const char *only = argc > 1 ? argv[1] : NULL;
    if (only && strcmp(only, "big-tls") && strcmp(only, "pipeline") && strcmp(only, "yield")) {
        fprintf(stderr, "omp_program_patterns: unknown part '%s' (big-tls, pipeline or yield)\n", only);
        return 2;
    }
    if (!only || !strcmp(only, "big-tls"))
        big_tls();
    if (!only || !strcmp(only, "pipeline"))
        pipeline();
    if (only && !strcmp(only, "yield"))
        yield();
    if (failures) {
        fprintf(stderr, "omp_program_patterns: %d check(s) FAILED\n", failures);
        return 1;
    }
    printf("omp_program_patterns: PASSED\n");
    return 0;
}
