/* sync_cond.h - the seed's condition-variable overheads, shared by cond.c
 * and logp.c.
 *
 * Send overhead: pthread_cond_signal repeated with no waiter (the signal is
 * discarded).  Receive overhead: pthread_cond_wait on a condition another
 * thread, on another CPU, signals continually without owning the mutex, so
 * each wait returns as soon as the waiter can be woken.  Its mirror image,
 * signals timed while the other thread waits continually, is the gap of a
 * stream of condition signals (logp.c). */
#ifndef THREADLAB_POSIX_SYNC_COND_H
#define THREADLAB_POSIX_SYNC_COND_H

#include <time.h>

#include "sync_common.h"

static inline int sync_cond_pair_init(pthread_mutex_t *m, pthread_cond_t *c)
{
    int rc = pthread_mutex_init(m, NULL);
    if (rc == 0 && (rc = pthread_cond_init(c, NULL)) != 0)
        pthread_mutex_destroy(m);
    return rc;
}

static inline void sync_cond_pair_destroy(pthread_mutex_t *m, pthread_cond_t *c)
{
    pthread_cond_destroy(c);
    pthread_mutex_destroy(m);
}

/* ------------------------------------------------- signal, no waiter */

typedef struct {
    tl_ctx *ctx;
    pthread_mutex_t m;
    pthread_cond_t c;
} sync_cond_lone;

static inline double sync_time_cond_signal(void *arg, uint64_t iterations)
{
    sync_cond_lone *s = arg;
    int r = 0;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++)
        r |= pthread_cond_signal(&s->c);
    uint64_t t1 = tl_now();
    if (r != 0) {
        tl_fail(s->ctx, "pthread_cond_signal: %s", strerror(r));
        return -1;
    }
    return tl_ticks_to_ns(t1 - t0);
}

/* One measured record of the send overhead.  Returns 0 or -1 (failed). */
static inline int sync_cond_signal_measure(tl_ctx *ctx, const char *metric, const char *quantity)
{
    sync_cond_lone s = {.ctx = ctx};
    int rc = sync_cond_pair_init(&s.m, &s.c);
    if (rc != 0) {
        tl_fail(ctx, "initialising the condition: %s", strerror(rc));
        return -1;
    }
    tl_measure_spec spec = {.metric = metric, .quantity = quantity};
    int result = tl_measure(ctx, sync_time_cond_signal, &s, &spec);
    if (result == 0) {
        /* Signals nobody waited for must have been discarded: a wait
         * started afterwards can only time out. */
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += 2000000;
        if (deadline.tv_nsec >= 1000000000) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&s.m);
        rc = pthread_cond_timedwait(&s.c, &s.m, &deadline);
        pthread_mutex_unlock(&s.m);
        tl_check(ctx, "discarded", rc == ETIMEDOUT, NAN,
                 "a wait started after the signals %s%s", rc == ETIMEDOUT ? "timed out" : "returned ",
                 rc == ETIMEDOUT ? ": no signal was pending" : strerror(rc));
    }
    sync_cond_pair_destroy(&s.m, &s.c);
    return result;
}

/* ------------------------------------------ continual signal or wait */

typedef enum {
    SYNC_COND_TIME_WAITS,   /* partner signals continually; main's waits are timed */
    SYNC_COND_TIME_SIGNALS, /* partner waits continually; main's signals are timed */
} sync_cond_timed;

typedef struct {
    tl_ctx *ctx;
    sync_cond_timed timed;
    pthread_mutex_t m;
    pthread_cond_t c;
    tl_partner *partner;
    _Atomic int stop;        /* ends the partner's continual loop */
    _Atomic uint32_t ready;  /* the partner has entered its loop */
    uint64_t partner_ops;    /* partner's signals sent (or waits returned), all timings */
    uint64_t main_ops;       /* main's timed waits returned (or signals sent) */
    sync_error err;
} sync_cond_cont;

/* The partner ignores `iterations`: it keeps signalling (or waiting) until
 * main, which times a fixed count, tells it to stop. */
static inline void sync_cond_cont_partner(void *arg, uint64_t iterations)
{
    (void)iterations;
    sync_cond_cont *s = arg;
    uint64_t ops = 0;
    if (s->timed == SYNC_COND_TIME_WAITS) {
        sync_word_publish(&s->ready, 1);
        while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
            int rc = pthread_cond_signal(&s->c);
            /* Keep signalling after an error: main waits on these signals. */
            if (rc != 0)
                sync_error_set(&s->err, "pthread_cond_signal (signaller)", rc);
            ops++;
        }
    } else {
        int rc = pthread_mutex_lock(&s->m);
        if (rc != 0) {
            sync_error_set(&s->err, "pthread_mutex_lock (waiter)", rc);
            sync_word_publish(&s->ready, 1);
            return;
        }
        sync_word_publish(&s->ready, 1);
        /* stop is read and written under the mutex here: no lost wake-up. */
        while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
            rc = pthread_cond_wait(&s->c, &s->m);
            if (rc != 0) {
                sync_error_set(&s->err, "pthread_cond_wait (waiter)", rc);
                break;
            }
            ops++;
        }
        pthread_mutex_unlock(&s->m);
    }
    s->partner_ops += ops;
}

static inline double sync_cond_cont_time(void *arg, uint64_t iterations)
{
    sync_cond_cont *s = arg;
    atomic_store_explicit(&s->stop, 0, memory_order_relaxed);
    atomic_store_explicit(&s->ready, 0, memory_order_relaxed);
    tl_partner_go(s->partner, iterations);
    sync_word_wait_change(&s->ready, 0);
    uint64_t t0 = 0, t1 = 0, done = 0;
    int rc;
    if (s->timed == SYNC_COND_TIME_WAITS) {
        rc = pthread_mutex_lock(&s->m);
        if (rc == 0) {
            t0 = tl_now();
            while (done < iterations && (rc = pthread_cond_wait(&s->c, &s->m)) == 0)
                done++;
            t1 = tl_now();
            pthread_mutex_unlock(&s->m);
        }
        if (rc != 0)
            sync_error_set(&s->err, "pthread_cond_wait", rc);
        atomic_store_explicit(&s->stop, 1, memory_order_relaxed);
    } else {
        int r = 0;
        t0 = tl_now();
        for (; done < iterations; done++)
            r |= pthread_cond_signal(&s->c);
        t1 = tl_now();
        if (r != 0)
            sync_error_set(&s->err, "pthread_cond_signal", r);
        rc = pthread_mutex_lock(&s->m);
        if (rc != 0) {
            sync_error_set(&s->err, "pthread_mutex_lock", rc);
        } else {
            atomic_store_explicit(&s->stop, 1, memory_order_relaxed);
            pthread_cond_broadcast(&s->c);
            pthread_mutex_unlock(&s->m);
        }
    }
    tl_partner_wait(s->partner);
    s->main_ops += done;
    if (sync_error_report(s->ctx, &s->err))
        return -1;
    return tl_ticks_to_ns(t1 - t0);
}

/* One measured record: time per returned wait (SYNC_COND_TIME_WAITS) or per
 * signal (SYNC_COND_TIME_SIGNALS).  The caller decides whether the
 * placement makes it meaningful.  Returns 0 or -1 (failed). */
static inline int sync_cond_continual(tl_ctx *ctx, sync_cond_timed timed, const char *metric, const char *quantity)
{
    sync_cond_cont *s = calloc(1, sizeof *s);
    if (!s) {
        tl_fail(ctx, "out of memory");
        return -1;
    }
    s->ctx = ctx;
    s->timed = timed;
    int rc = sync_cond_pair_init(&s->m, &s->c);
    if (rc != 0) {
        free(s);
        tl_fail(ctx, "initialising the condition: %s", strerror(rc));
        return -1;
    }
    int result = -1;
    s->partner = tl_partner_start(ctx, 1, sync_cond_cont_partner, s);
    if (!s->partner) {
        tl_fail(ctx, "cannot start the partner thread: %s", strerror(errno));
    } else {
        tl_measure_spec spec = {.metric = metric, .quantity = quantity};
        result = tl_measure(ctx, sync_cond_cont_time, s, &spec);
        tl_partner_stop(s->partner);
    }
    if (result == 0 && timed == SYNC_COND_TIME_WAITS) {
        /* A signal wakes at most one waiter and is lost when nobody waits,
         * so the waits can only all have been ended by signals if at least
         * as many were sent. */
        tl_check(ctx, "woken-by-signals", s->main_ops > 0 && s->partner_ops >= s->main_ops, (double)s->main_ops,
                 "%llu waits returned while the other thread sent %llu signals",
                 (unsigned long long)s->main_ops, (unsigned long long)s->partner_ops);
        tl_extra_num(ctx, "signals_per_wait", s->main_ops ? (double)s->partner_ops / (double)s->main_ops : NAN);
    } else if (result == 0) {
        /* Without a wake-up the stream had no receiver: it measured the
         * send overhead, not the gap. */
        tl_check(ctx, "receiver-woke", s->partner_ops > 0, (double)s->partner_ops,
                 "the waiting thread woke %llu times during %llu signals", (unsigned long long)s->partner_ops,
                 (unsigned long long)s->main_ops);
        tl_extra_num(ctx, "wakeups_per_signal", s->main_ops ? (double)s->partner_ops / (double)s->main_ops : NAN);
    }
    sync_cond_pair_destroy(&s->m, &s->c);
    free(s);
    return result;
}

#endif
