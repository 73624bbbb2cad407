/* create.c - thread creation: the seed's recursive creation chain, and a
 * plain create + join.
 *
 * pthread.create.chain follows the seed: main zeroes a shared count, creates
 * a thread and waits on a condition variable; every new thread increments
 * the count and either signals main (count == M) or creates the next thread
 * and calls pthread_exit.  Time / M is the cost of one creation (with the
 * exit of its creator overlapping it, as in the seed). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "families.h"

/* ------------------------------------------------------------ the chain */

typedef struct {
    tl_ctx *ctx;
    /* Attributes of the threads on slot 0's and slot 1's CPU: thread k
     * uses attr[k % 2], so with different-cpus every creation crosses CPUs
     * (main, on slot 0, creates thread 1 on slot 1). */
    pthread_attr_t attr[2];
    int joinable;
    uint64_t m;
    _Atomic uint64_t count;
    /* Threads that found their thread-local flag already set: a body that
     * ran twice in one thread would not be a creation.  Stays 0. */
    _Atomic uint64_t reused;
    /* The current head of the chain.  Written by the head before it
     * creates the next thread and read by that thread; pthread_create
     * orders the two, so no atomics are needed. */
    pthread_t prev;
    int have_prev;
    /* The end of the chain, under lock. */
    pthread_mutex_t lock;
    pthread_cond_t done_cv;
    int done;
    int error;       /* pthread_create's error in the thread that gave up */
    pthread_t last;  /* the thread that signalled main; main reaps it */
    /* Kernel ids of the chain's last two threads (by parity), so that main
     * can wait for detached ones to be gone before the next timing. */
    pid_t tail[2];
    /* Verification over every timing of the point. */
    uint64_t bad_length;   /* timings whose final count was not M */
    uint64_t wrong_count;  /* the count of the last such timing */
} chain_state;

/* Zero in every new thread: the static TLS block is initialised at creation,
 * even when glibc reuses a cached stack. */
static _Thread_local unsigned chain_visits;

static void chain_finish(chain_state *c, int error)
{
    pthread_mutex_lock(&c->lock);
    c->error = error;
    c->last = pthread_self();
    c->done = 1;
    pthread_cond_signal(&c->done_cv);
    pthread_mutex_unlock(&c->lock);
}

/* Joinable threads must be reaped: each thread joins its predecessor right
 * after creating its successor, so the predecessor's exit overlaps the
 * creation exactly as a detached thread's does, at most three chain threads
 * live at once, and the joinable figure is the creation of a joinable
 * thread plus its reaping.  Main reaps the last thread after the clock
 * stops.  (The seed never joined its undetached threads.) */
static void chain_reap(chain_state *c, int have_pred, pthread_t pred)
{
    if (c->joinable && have_pred)
        pthread_join(pred, NULL);
}

static void *chain_link(void *arg)
{
    chain_state *c = arg;
    if (chain_visits++ != 0)
        atomic_fetch_add_explicit(&c->reused, 1, memory_order_relaxed);
    pthread_t pred = c->prev;
    int have_pred = c->have_prev;
    uint64_t n = atomic_fetch_add_explicit(&c->count, 1, memory_order_relaxed) + 1;
    if (n + 1 >= c->m)
        c->tail[n % 2] = gettid();
    int rc = 0;
    if (n < c->m) {
        pthread_t next;
        c->prev = pthread_self();
        c->have_prev = 1;
        rc = pthread_create(&next, &c->attr[(n + 1) % 2], chain_link, c);
        if (rc == 0) {
            chain_reap(c, have_pred, pred);
            pthread_exit(NULL);
        }
    }
    chain_reap(c, have_pred, pred);
    chain_finish(c, rc);
    return NULL;
}

/* Detached threads cannot be joined: main waits until the kernel no longer
 * knows them, so no thread of one timing runs into the next one (or past
 * the end of the benchmark). */
static void wait_gone(pid_t tid)
{
    uint64_t start = tl_now_raw();
    while (tid > 0 && tgkill(getpid(), tid, 0) == 0 && tl_now_raw() - start < 1000000000ull)
        sched_yield();
}

static double time_chain(void *arg, uint64_t iterations)
{
    chain_state *c = arg;
    c->m = iterations;
    atomic_store_explicit(&c->count, 0, memory_order_relaxed);
    c->have_prev = 0;
    c->tail[0] = c->tail[1] = 0;
    c->done = 0;
    c->error = 0;

    pthread_t first;
    uint64_t t0 = tl_now();
    int rc = pthread_create(&first, &c->attr[1], chain_link, c);
    if (rc != 0) {
        tl_fail(c->ctx, "pthread_create (first thread of the chain): %s", strerror(rc));
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    while (!c->done)
        pthread_cond_wait(&c->done_cv, &c->lock);
    uint64_t t1 = tl_now();
    pthread_mutex_unlock(&c->lock);

    if (c->joinable) {
        pthread_join(c->last, NULL);
    } else {
        wait_gone(c->tail[0]);
        wait_gone(c->tail[1]);
    }
    if (c->error) {
        tl_fail(c->ctx, "pthread_create in the chain after %llu threads: %s",
                (unsigned long long)atomic_load(&c->count), strerror(c->error));
        return -1;
    }
    uint64_t count = atomic_load_explicit(&c->count, memory_order_relaxed);
    if (count != iterations) {
        c->bad_length++;
        c->wrong_count = count;
    }
    return tl_ticks_to_ns(t1 - t0);
}

/* Returns 0; 1 when the point is unsupported (process scope on Linux: NPTL
 * has only system scope); -1 when it failed. */
static int chain_attrs(tl_ctx *ctx, chain_state *c, const char *detach, const char *scope)
{
    int want_scope = strcmp(scope, "process") == 0 ? PTHREAD_SCOPE_PROCESS : PTHREAD_SCOPE_SYSTEM;
    int want_detach = c->joinable ? PTHREAD_CREATE_JOINABLE : PTHREAD_CREATE_DETACHED;
    for (unsigned slot = 0; slot < 2; slot++) {
        pthread_attr_t *a = &c->attr[slot];
        int rc = pthread_attr_setscope(a, want_scope);
        if (rc != 0) {
            tl_unsupported(ctx, "pthread_attr_setscope(PTHREAD_SCOPE_%s): %s",
                           want_scope == PTHREAD_SCOPE_PROCESS ? "PROCESS" : "SYSTEM", strerror(rc));
            return 1;
        }
        if ((rc = pthread_attr_setdetachstate(a, want_detach)) != 0) {
            tl_fail(ctx, "pthread_attr_setdetachstate(%s): %s", detach, strerror(rc));
            return -1;
        }
        if ((rc = tl_attr_place(ctx, slot, a)) != 0) {
            tl_fail(ctx, "pthread_attr_setaffinity_np (slot %u): %s", slot, strerror(rc));
            return -1;
        }
    }
    return 0;
}

static void chain_checks(tl_ctx *ctx, chain_state *c, uint64_t m)
{
    tl_check(ctx, "chain_length", c->bad_length == 0, c->bad_length ? (double)c->wrong_count : (double)m,
             c->bad_length ? "%llu timing(s) ended with a count other than M = %llu"
                           : "every timing's chain counted exactly M = %llu threads",
             c->bad_length ? (unsigned long long)c->bad_length : (unsigned long long)m,
             (unsigned long long)m);
    uint64_t reused = atomic_load(&c->reused);
    tl_check(ctx, "distinct_threads", reused == 0, (double)reused,
             "%llu chain step(s) ran in a thread that had already run one (0 = every step was a new thread)",
             (unsigned long long)reused);
}

static int run_chain(tl_ctx *ctx)
{
    static chain_state c; /* large enough not to belong on the stack */
    memset(&c, 0, sizeof c);
    c.ctx = ctx;
    uint64_t m = (uint64_t)tl_param_long(ctx, "chain", 1, 100000);
    const char *detach = tl_param(ctx, "detach");
    c.joinable = strcmp(detach, "joinable") == 0;
    pthread_mutex_init(&c.lock, NULL);
    pthread_cond_init(&c.done_cv, NULL);
    pthread_attr_init(&c.attr[0]);
    pthread_attr_init(&c.attr[1]);

    int rc = chain_attrs(ctx, &c, detach, tl_param(ctx, "scope"));
    if (rc == 0) {
        tl_measure_spec spec = {.fixed_iterations = m};
        rc = tl_measure(ctx, time_chain, &c, &spec);
        if (rc == 0)
            chain_checks(ctx, &c, m);
    } else if (rc > 0) {
        rc = 0; /* unsupported: a complete answer */
    }
    pthread_attr_destroy(&c.attr[0]);
    pthread_attr_destroy(&c.attr[1]);
    pthread_cond_destroy(&c.done_cv);
    pthread_mutex_destroy(&c.lock);
    return rc;
}

/* ---------------------------------------------------- create + join */

typedef struct {
    tl_ctx *ctx;
    pthread_attr_t attr;
    uint64_t joined, wrong;  /* joins, and joins that returned another value */
} join_state;

static void *return_arg(void *arg)
{
    return arg;
}

static double time_create_join(void *arg, uint64_t iterations)
{
    join_state *s = arg;
    uint64_t wrong = 0;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++) {
        pthread_t t;
        void *res;
        int rc = pthread_create(&t, &s->attr, return_arg, s);
        if (rc != 0) {
            tl_fail(s->ctx, "pthread_create: %s", strerror(rc));
            return -1;
        }
        if ((rc = pthread_join(t, &res)) != 0) {
            tl_fail(s->ctx, "pthread_join: %s", strerror(rc));
            return -1;
        }
        wrong += res != s;
    }
    uint64_t t1 = tl_now();
    s->joined += iterations;
    s->wrong += wrong;
    return tl_ticks_to_ns(t1 - t0);
}

static int run_create_join(tl_ctx *ctx)
{
    join_state s = {.ctx = ctx};
    pthread_attr_init(&s.attr);
    int rc = tl_attr_place(ctx, 1, &s.attr);
    if (rc != 0) {
        tl_fail(ctx, "pthread_attr_setaffinity_np: %s", strerror(rc));
    } else {
        /* Every iteration is a kernel task: cap what one timing consumes. */
        tl_measure_spec spec = {.max_iterations = 20000};
        /* The first threads map their stacks; calibrating on them would
         * settle on too few iterations. */
        rc = time_create_join(&s, 8) < 0 ? -1 : tl_measure(ctx, time_create_join, &s, &spec);
        if (rc == 0)
            tl_check(ctx, "joined", s.wrong == 0, (double)s.wrong,
                     "%llu threads created and joined; %llu join(s) returned another value than the thread's",
                     (unsigned long long)s.joined, (unsigned long long)s.wrong);
    }
    pthread_attr_destroy(&s.attr);
    return rc;
}

/* ----------------------------------------------------------------- table */

static const char *const chain_values[] = {"1000", NULL};
static const char *const chain_quick[] = {"200", NULL};
static const char *const detach_values[] = {"detached", "joinable", NULL};
static const char *const scope_values[] = {"system", "process", NULL};

static const tl_param_def chain_params[] = {
    {.name = "chain", .help = "M, the threads created by one timing (1..100000)", .values = chain_values,
     .quick_values = chain_quick, .check = tl_check_positive_int},
    {.name = "detach", .help = "detached threads, or joinable ones each reaped by its successor",
     .values = detach_values, .quick_values = detach_values},
    {.name = "scope", .help = "contention scope (Linux has only system scope)", .values = scope_values,
     .quick_values = scope_values},
    {0},
};

const tl_bench tl_posix_create[] = {
    TL_BENCH("pthread.create.chain", "pthread",
             "the Pthreads benchmark suite's recursive chain: each new thread creates the next and exits",
             "time per thread creation in the chain (total / M)",
             2, TL_PLACES_ALL, chain_params, run_chain),
    TL_BENCH("pthread.create.join", "pthread",
             "pthread_create of a thread that returns at once, then pthread_join",
             "time per create + join",
             2, TL_PLACES_ALL, NULL, run_create_join),
    {0},
};
