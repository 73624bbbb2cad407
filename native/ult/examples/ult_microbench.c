/*
 * ult_microbench.c - the three numbers libthreadlab-ult is designed for:
 *   1. yield between two ULTs on one VP        (target <= 10 ns per switch)
 *   2. create + join on one VP                 (target <= 50 ns)
 *   3. RSS of 1,000,000 suspended ULTs         (target <= 1 GiB)
 * Timings: CLOCK_MONOTONIC_RAW around a batch, median of several batches.
 *
 * usage: threadlab-ult-microbench [nthreads [stack_bytes]]
 *   nthreads     suspended ULTs for the RSS figure (default 1000000)
 *   stack_bytes  their stack size (default 768; see docs/ult.md for why
 *                the target needs sub-page stacks)
 */
#define _GNU_SOURCE
#include "threadlab/ult.h"
#include "threadlab/resident.h"
#include "threadlab/summary.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPS 9

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void must(int err, const char *what)
{
    if (err) {
        fprintf(stderr, "%s: %s\n", what, strerror(err));
        exit(1);
    }
}

static void init_vps(unsigned nvps, int inline_join)
{
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    if (nvps)
        cfg.nvps = nvps;
    cfg.inline_join = inline_join;
    must(tl_ult_init(&cfg), "tl_ult_init");
}

/* ---- 1. yield ---------------------------------------------------------- */

static long yield_iters;

static void *yielder(void *arg)
{
    (void)arg;
    for (long i = 0; i < yield_iters; i++)
        tl_ult_yield();
    return NULL;
}

static double bench_yield(void)
{
    double r[REPS];
    yield_iters = 1000000;
    for (int rep = 0; rep < REPS; rep++) {
        tl_ult_t a, b;
        double t0 = now_ns();
        must(tl_ult_create(&a, NULL, yielder, NULL), "create");
        must(tl_ult_create(&b, NULL, yielder, NULL), "create");
        must(tl_ult_join(a, NULL), "join");
        must(tl_ult_join(b, NULL), "join");
        r[rep] = (now_ns() - t0) / (2.0 * (double)yield_iters);
    }
    return tl_median(r, REPS);
}

/* ---- 2. create + join ------------------------------------------------------- */

static void *empty(void *arg)
{
    return arg;
}

static long cj_iters = 200000;

static double create_join_batch(void)
{
    double t0 = now_ns();
    for (long i = 0; i < cj_iters; i++) {
        tl_ult_t t;
        must(tl_ult_create(&t, NULL, empty, NULL), "create");
        must(tl_ult_join(t, NULL), "join");
    }
    return (now_ns() - t0) / (double)cj_iters;
}

static double bench_create_join(void)
{
    double r[REPS];
    create_join_batch(); /* warm the caches of descriptors and stacks */
    for (int rep = 0; rep < REPS; rep++)
        r[rep] = create_join_batch();
    return tl_median(r, REPS);
}

static void *create_join_in_ult(void *arg)
{
    *(double *)arg = bench_create_join();
    return NULL;
}

/* ---- 3. RSS of suspended ULTs ---------------------------------------------- */

static tl_ult_sem gate = TL_ULT_SEM_INITIALIZER(0);
static tl_ult_sem done = TL_ULT_SEM_INITIALIZER(0);
static _Atomic long arrived;

static void *sleeper(void *arg)
{
    (void)arg;
    atomic_fetch_add_explicit(&arrived, 1, memory_order_relaxed);
    tl_ult_sem_wait(&gate);
    tl_ult_sem_post(&done);
    return NULL;
}

static void bench_rss(long n, size_t stack)
{
    init_vps(0, 1);
    long base = tl_resident_bytes();
    tl_ult_attr attr;
    tl_ult_attr_init(&attr);
    attr.stack_size = stack;
    attr.detached = 1;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        must(tl_ult_create(NULL, &attr, sleeper, NULL), "create");
    while (atomic_load(&arrived) < n)
        tl_ult_usleep(1000);
    double t1 = now_ns();
    long rss = tl_resident_bytes();
    tl_ult_stats st;
    tl_ult_get_stats(&st);
    printf("rss: %ld suspended ULTs (blocked on a ULT semaphore), %zu-byte stacks, %u VPs:\n"
           "     RSS %.1f MiB (baseline %.1f MiB, +%.1f MiB = %.0f bytes per ULT); "
           "created+blocked in %.2f s; stack address space %.1f MiB\n",
           n, stack, tl_ult_num_vps(), (double)rss / 1048576.0, (double)base / 1048576.0,
           (double)(rss - base) / 1048576.0, (double)(rss - base) / (double)n, (t1 - t0) / 1e9,
           (double)st.stack_bytes / 1048576.0);
    for (long i = 0; i < n; i++)
        tl_ult_sem_post(&gate);
    for (long i = 0; i < n; i++)
        tl_ult_sem_wait(&done);
    must(tl_ult_finalize(), "finalize");
    atomic_store(&arrived, 0);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    size_t stack = argc > 2 ? (size_t)atol(argv[2]) : 768;

    init_vps(1, 1);
    double y = bench_yield();
    double cj_main = bench_create_join();
    double cj_ult = 0;
    tl_ult_t t;
    must(tl_ult_create(&t, NULL, create_join_in_ult, &cj_ult), "create");
    tl_ult_yield(); /* let it start on its own stack (a join would inline it) */
    must(tl_ult_join(t, NULL), "join");
    must(tl_ult_finalize(), "finalize");

    init_vps(1, 0);
    double cj_switch = bench_create_join();
    must(tl_ult_finalize(), "finalize");

    printf("yield: 2 ULTs on 1 VP: median %.1f ns per yield (switch)\n", y);
    printf("create+join on 1 VP, empty ULT, median of %d x %ld:\n", REPS, cj_iters);
    printf("     %.1f ns  from the primordial ULT (child runs inline on the joiner's stack)\n",
           cj_main);
    printf("     %.1f ns  from the primordial ULT, inline_join=0 (two switches, stack from cache)\n",
           cj_switch);
    printf("     %.1f ns  from a ULT with a 64 KiB stack (no room to inline: two switches)\n",
           cj_ult);
    fflush(stdout);
    if (n > 0)
        bench_rss(n, stack);
    return 0;
}
