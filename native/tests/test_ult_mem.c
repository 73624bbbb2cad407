/* test_ult_mem.c - libthreadlab-ult memory per suspended thread: N ULTs
 * blocked on a ULT semaphore, resident set size read from /proc/self/statm
 * and printed (not asserted: it depends on the machine and the build).
 * Then every thread is released and joined, and the counts are checked.
 * Plain build: 1,000,000 threads with 768-byte stacks (the 1 GiB target),
 * then 50,000 with the default 64 KiB stacks for comparison. */
#define _GNU_SOURCE
#include "check.h"
#include "threadlab/ult.h"
#include "threadlab/resident.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define N_SMALL 400 /* every ULT that ran holds a TSan fiber (~1 MiB, ~1 ms) */
#define SMALL_STACK 16384
#define N_DEFAULT 200
#elif defined(__SANITIZE_ADDRESS__)
#define N_SMALL 100000
#define SMALL_STACK 8192 /* ASan frames carry redzones */
#define N_DEFAULT 20000
#else
#define N_SMALL 1000000
#define SMALL_STACK 768
#define N_DEFAULT 50000
#endif

static tl_ult_sem gate = TL_ULT_SEM_INITIALIZER(0);
static tl_ult_sem done = TL_ULT_SEM_INITIALIZER(0);
static _Atomic long arrived, finished;

static void *suspended(void *arg)
{
    (void)arg;
    atomic_fetch_add_explicit(&arrived, 1, memory_order_relaxed);
    tl_ult_sem_wait(&gate);
    atomic_fetch_add_explicit(&finished, 1, memory_order_relaxed);
    tl_ult_sem_post(&done);
    return NULL;
}

static void measure(long n, size_t stack)
{
    atomic_store(&arrived, 0);
    atomic_store(&finished, 0);
    long base = tl_resident_bytes();
    tl_ult_attr attr;
    tl_ult_attr_init(&attr);
    attr.stack_size = stack; /* 0: the runtime default */
    attr.detached = 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int errs = 0;
    for (long i = 0; i < n; i++)
        errs += tl_ult_create(NULL, &attr, suspended, NULL) != 0;
    CHECK(errs == 0);
    while (atomic_load(&arrived) < n)
        tl_ult_usleep(1000);
    tl_ult_usleep(1000); /* the last ones reach the semaphore */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long rss = tl_resident_bytes();
    tl_ult_stats st;
    tl_ult_get_stats(&st);
    if (!stack)
        stack = 64 * 1024;
    printf("%ld suspended ULTs, %zu-byte stacks, %u VPs: RSS %.1f MiB (+%.1f MiB over %.1f MiB "
           "before, %.0f bytes per ULT), %.2f s to create and block them; "
           "stack reservations %.1f MiB\n",
           n, stack, tl_ult_num_vps(), rss / 1048576.0, (rss - base) / 1048576.0,
           base / 1048576.0, (double)(rss - base) / (double)n,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
           st.stack_bytes / 1048576.0);
    CHECK(atomic_load(&finished) == 0);
    CHECK(st.live == (uint64_t)n);
    for (long i = 0; i < n; i++)
        tl_ult_sem_post(&gate);
    for (long i = 0; i < n; i++)
        tl_ult_sem_wait(&done);
    CHECK(atomic_load(&finished) == n);
    CHECK(tl_ult_sem_getvalue(&gate) == 0);
}

int main(void)
{
    alarm(100);
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.pin = 0;
    CHECK(tl_ult_init(&cfg) == 0);
    measure(N_SMALL, SMALL_STACK);
    CHECK(tl_ult_finalize() == 0);
    CHECK(tl_ult_init(&cfg) == 0);
    measure(N_DEFAULT, 0 /* default */);
    CHECK(tl_ult_finalize() == 0);
    return check_report("ult.mem");
}
