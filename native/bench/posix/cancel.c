/* cancel.c - pthread.cancel.latency: how long from pthread_cancel of a
 * thread blocked in a cancellation point until pthread_join has it back.
 *
 * The target blocks in read() on a pipe nobody writes.  Creating it, and
 * waiting until the kernel reports it asleep, happen outside the clock;
 * only cancel -> join is timed, per target, and the timing is their sum. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "families.h"
#include "threadlab/procfs.h"

/* Each target is a thread: cap what one timing creates. */
#define CANCEL_MAX_ITERATIONS 2000
/* How long main waits to see a target asleep before cancelling it anyway
 * (it is then counted by the "blocked" check). */
#define BLOCK_WAIT_NS 1e9

typedef struct {
    tl_ctx *ctx;
    int pipe_fd[2];
    _Atomic pid_t tid; /* the current target's, published before it blocks */
    uint64_t targets, not_canceled, not_blocked;
} cancel_state;

static void *block_in_read(void *arg)
{
    cancel_state *s = arg;
    char byte;
    atomic_store_explicit(&s->tid, gettid(), memory_order_release);
    ssize_t n = read(s->pipe_fd[0], &byte, 1); /* the cancellation point */
    return (void *)(intptr_t)n;
}

/* The state letter of /proc/self/task/TID/stat, read again from fd. */
static char task_state(int fd)
{
    char buf[TL_PROC_STAT_LINE];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return '?';
    buf[n] = '\0';
    return tl_proc_stat_state(buf, NULL);
}

/* Waits until the target sleeps ('S': its read is blocked).  Yielding lets
 * a target on the same CPU run into its read. */
static int wait_asleep(pid_t tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uint64_t start = tl_now_raw();
    int asleep;
    while (!(asleep = task_state(fd) == 'S') && (double)(tl_now_raw() - start) < BLOCK_WAIT_NS)
        sched_yield();
    close(fd);
    return asleep;
}

/* Creates a target, waits until it is blocked, then cancels and joins it.
 * Returns the ticks from cancel to join, or 0 after tl_fail. */
static uint64_t cancel_one(cancel_state *s)
{
    pthread_t t;
    atomic_store_explicit(&s->tid, 0, memory_order_relaxed);
    int rc = tl_thread_create(s->ctx, 1, &t, block_in_read, s);
    if (rc != 0) {
        tl_fail(s->ctx, "pthread_create: %s", strerror(rc));
        return 0;
    }
    pid_t tid;
    while (!(tid = atomic_load_explicit(&s->tid, memory_order_acquire)))
        sched_yield();
    s->not_blocked += !wait_asleep(tid);

    void *res;
    uint64_t t0 = tl_now();
    int crc = pthread_cancel(t);
    int jrc = pthread_join(t, &res);
    uint64_t t1 = tl_now();
    if (crc != 0 || jrc != 0) {
        tl_fail(s->ctx, "%s: %s", crc ? "pthread_cancel" : "pthread_join", strerror(crc ? crc : jrc));
        return 0;
    }
    s->targets++;
    s->not_canceled += res != PTHREAD_CANCELED;
    return t1 > t0 ? t1 - t0 : 1;
}

static double time_cancel(void *arg, uint64_t iterations)
{
    cancel_state *s = arg;
    uint64_t total = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        uint64_t ticks = cancel_one(s);
        if (!ticks)
            return -1;
        total += ticks;
    }
    return tl_ticks_to_ns(total);
}

static void cancel_checks(tl_ctx *ctx, const cancel_state *s)
{
    tl_check(ctx, "canceled", s->not_canceled == 0, (double)s->not_canceled,
             "%llu targets joined; %llu returned something else than PTHREAD_CANCELED",
             (unsigned long long)s->targets, (unsigned long long)s->not_canceled);
    tl_check(ctx, "blocked", s->not_blocked == 0, (double)s->not_blocked,
             "%llu of %llu targets were not seen asleep in read() before the cancel",
             (unsigned long long)s->not_blocked, (unsigned long long)s->targets);
}

static int run_cancel(tl_ctx *ctx)
{
    cancel_state s = {.ctx = ctx};
    if (pipe2(s.pipe_fd, O_CLOEXEC) != 0) {
        tl_fail(ctx, "pipe2: %s", strerror(errno));
        return -1;
    }
    tl_measure_spec spec = {.max_iterations = CANCEL_MAX_ITERATIONS};
    /* The first cancellation loads the unwinder (libgcc_s); calibrating on
     * it would settle on too few iterations. */
    int rc = time_cancel(&s, 2) < 0 ? -1 : tl_measure(ctx, time_cancel, &s, &spec);
    if (rc == 0)
        cancel_checks(ctx, &s);
    close(s.pipe_fd[0]);
    close(s.pipe_fd[1]);
    return rc;
}

const tl_bench tl_posix_cancel[] = {
    TL_BENCH("pthread.cancel.latency", "pthread",
             "pthread_cancel of a thread blocked in read() until pthread_join returns",
             "time from pthread_cancel to the return of pthread_join",
             2, TL_PLACES_ALL, NULL, run_cancel),
    {0},
};
