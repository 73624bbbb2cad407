/* check_async.h - CHECK for code that runs on other threads (user-level
 * threads on other virtual processors, helper pthreads): a failure is
 * counted atomically, and the test's main thread CHECKs at the end that
 * async_failures stayed 0. */
#ifndef THREADLAB_TESTS_CHECK_ASYNC_H
#define THREADLAB_TESTS_CHECK_ASYNC_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static _Atomic int async_failures;

#define ACHECK(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            atomic_fetch_add(&async_failures, 1);                                                  \
            fprintf(stderr, "%s:%d: ACHECK failed: %s\n", __FILE__, __LINE__, #cond);             \
        }                                                                                          \
    } while (0)

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
