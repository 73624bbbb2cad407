/* sync_common.h - what the synchronisation benchmarks (cond.c, mutex.c,
 * sem.c, barrier.c, logp.c) share beyond any one primitive: the first error
 * of several threads, and the untimed handshake on a word (a team of
 * partner threads is tl_team, threadlab/bench.h).  Everything is static inline so each file compiles only
 * what it uses. */
#ifndef THREADLAB_POSIX_SYNC_COMMON_H
#define THREADLAB_POSIX_SYNC_COMMON_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include (PTHREAD_MUTEX_ADAPTIVE_NP, pthread_*_np)"
#endif
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "families.h"

/* ------------------------------------------------------- the first error */

/* The first error any thread of a benchmark hits.  Threads only record it;
 * the main thread reports it once every thread has stopped (strerror runs
 * there, not in several threads at once). */
typedef struct {
    _Atomic int state; /* 0 none, 1 being written, 2 written */
    const char *what;
    int rc;
} sync_error;

static inline int sync_error_set(sync_error *e, const char *what, int rc)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&e->state, &none, 1)) {
        e->what = what;
        e->rc = rc;
        atomic_store_explicit(&e->state, 2, memory_order_release);
    }
    return rc;
}

static inline int sync_error_any(sync_error *e)
{
    return atomic_load_explicit(&e->state, memory_order_acquire) != 0;
}

/* Fails the point with the recorded error; returns -1 when there was one. */
static inline int sync_error_report(tl_ctx *ctx, sync_error *e)
{
    if (atomic_load_explicit(&e->state, memory_order_acquire) != 2)
        return 0;
    tl_fail(ctx, "%s: %s", e->what, strerror(e->rc));
    return -1;
}

/* Spins briefly, then sleeps on the futex: used only for handshakes outside
 * timed regions, where a waiter on the same CPU must not burn the slice of
 * the thread it waits for. */
static inline void sync_word_wait_change(_Atomic uint32_t *word, uint32_t seen)
{
    for (int i = 0; i < 1000; i++) {
        if (atomic_load_explicit(word, memory_order_acquire) != seen)
            return;
        tl_cpu_relax();
    }
    while (atomic_load_explicit(word, memory_order_acquire) == seen)
        tl_futex_wait((uint32_t *)word, seen);
}

static inline void sync_word_publish(_Atomic uint32_t *word, uint32_t value)
{
    atomic_store_explicit(word, value, memory_order_release);
    tl_futex_wake((uint32_t *)word, 1);
}

#endif
