/* bystander.c - makes the process multi-threaded for good.
 *
 * Since glibc 2.34, lock operations of a process that has never created a
 * thread skip their atomic instructions (the single-thread optimisation):
 * an uncontended pthread_mutex_lock+unlock then costs a fraction of what it
 * costs in any program that uses threads.  Single-thread lock benchmarks
 * measure what a threaded program pays, so they first start a bystander: a
 * thread that parks on a futex and never runs again.  It is kept (not
 * joined) so the result does not depend on glibc never resetting its
 * single-thread flag after the last thread exits. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "internal.h"

static uint32_t never_changes;
static int started;

static void *bystander_main(void *arg)
{
    (void)arg;
    for (;;)
        tl_futex_wait(&never_changes, 0);
    return NULL;
}

int tl_process_multithreaded(tl_ctx *ctx)
{
    if (!started) {
        pthread_attr_t attr;
        pthread_t thread;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&thread, &attr, bystander_main, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            tl_fail(ctx, "starting the bystander thread: %s", strerror(rc));
            return -1;
        }
        started = 1;
    }
    return 0;
}
