/* lifecycle.c - creating, starting and joining threads of the model:
 * threads.create_join (issue 4, seed 002), threads.chain (seed 002's
 * recursive creation chain), and seed 003's threads.instantiate,
 * threads.start and threads.start_join (docs/thread-models.md).
 *
 * Every thread a benchmark creates proves it ran by counting itself in
 * shared memory (the only memory a child process shares with main), and
 * the counts are checked against the threads created. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* A thread that ends at once, after counting itself. */
typedef struct {
    _Atomic uint64_t ran;
    _Atomic uint64_t ran_early; /* instantiate: threads that ran before their start */
} count_shared;

static void *count_body(void *arg)
{
    count_shared *s = arg;
    atomic_fetch_add_explicit(&s->ran, 1, memory_order_relaxed);
    return NULL;
}

/* ------------------------------------------------------ create + join */

typedef struct {
    tl_ctx *ctx;
    /* Written by one child at a time, read by main after the join that
     * orders it: no atomic needed, none paid inside the measured loop. */
    uint64_t *ran;
    uint64_t created;
} cj_state;

static void *cj_body(void *arg)
{
    ++*(uint64_t *)arg;
    return NULL;
}

static double time_create_join(void *arg, uint64_t iterations)
{
    cj_state *s = arg;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++) {
        tl_mthread t;
        int rc = tl_model_create(&t, cj_body, s->ran, TL_MSTACK_DEFAULT);
        if (rc != 0) {
            tl_fail(s->ctx, "creating a %s thread: %s", tl_model_name, strerror(rc));
            return -1;
        }
        if ((rc = tl_model_join(t)) != 0) {
            tl_fail(s->ctx, "joining a %s thread: %s", tl_model_name, strerror(rc));
            return -1;
        }
    }
    uint64_t t1 = tl_now();
    s->created += iterations;
    return tl_ticks_to_ns(t1 - t0);
}

static int body_create_join(tl_ctx *ctx)
{
    cj_state s = {.ctx = ctx, .ran = tl_models_shared(ctx, sizeof *s.ran)};
    if (!s.ran)
        return -1;
    /* A kernel task per iteration: cap what one timing may consume. */
    tl_measure_spec spec = {.max_iterations = tl_model_thread_cost(TL_MSTACK_DEFAULT).kernel_task ? 20000 : 0};
    /* The first threads map their stacks; calibrating on them would
     * settle on too few iterations. */
    int rc = time_create_join(&s, 8) < 0 ? -1 : tl_measure(ctx, time_create_join, &s, &spec);
    if (rc == 0)
        tl_check(ctx, "every_thread_ran", *s.ran == s.created, (double)*s.ran,
                 "%llu threads created and joined, %llu ran", (unsigned long long)s.created,
                 (unsigned long long)*s.ran);
    tl_model_shared_free(s.ran, sizeof *s.ran);
    return rc;
}

/* ----------------------------------------------------------- the chain */

/* Main creates link 0; link k counts itself and, while the count is below
 * M, creates link k+1, stores its handle and exits (the model's exit, as
 * the seed's pthread_exit); the last link signals main.  Links are joined
 * by main after the clock stops, in order: joining link k orders link k's
 * store of link k+1's handle before main reads it.  (For processes, link
 * k+1 becomes main's child when link k exits: main is a subreaper.) */
typedef struct {
    tl_mmutex lock;
    tl_mcond done_cv;
    int done;  /* under lock */
    int error; /* under lock: a link's create error */
    uint64_t m;
    _Atomic uint64_t count;
    tl_mthread link[]; /* link[k]: written by link k-1 (main for 0) */
} chain_shared;

typedef struct {
    tl_ctx *ctx;
    chain_shared *s;
    uint64_t bad_length, wrong_count; /* timings whose count was not M */
} chain_state;

static void chain_finish(chain_shared *s, int error)
{
    tl_model_mutex_lock(&s->lock);
    s->error = error;
    s->done = 1;
    tl_model_cond_signal(&s->done_cv);
    tl_model_mutex_unlock(&s->lock);
}

static void *chain_link(void *arg)
{
    chain_shared *s = arg;
    uint64_t n = atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed) + 1;
    if (n < s->m) {
        tl_mthread next;
        int rc = tl_model_create(&next, chain_link, s, TL_MSTACK_DEFAULT);
        if (rc == 0) {
            s->link[n] = next;
            tl_model_exit();
            return NULL; /* not reached (the exit of every model ends the thread) */
        }
        chain_finish(s, rc);
        return NULL;
    }
    chain_finish(s, 0);
    return NULL;
}

static double time_chain(void *arg, uint64_t iterations)
{
    chain_state *c = arg;
    chain_shared *s = c->s;
    atomic_store_explicit(&s->count, 0, memory_order_relaxed);
    s->done = 0;
    s->error = 0;
    uint64_t t0 = tl_now();
    int rc = tl_model_create(&s->link[0], chain_link, s, TL_MSTACK_DEFAULT);
    if (rc != 0) {
        tl_fail(c->ctx, "creating the chain's first %s thread: %s", tl_model_name, strerror(rc));
        return -1;
    }
    tl_model_mutex_lock(&s->lock);
    while (!s->done)
        tl_model_cond_wait(&s->done_cv, &s->lock);
    uint64_t t1 = tl_now();
    tl_model_mutex_unlock(&s->lock);
    uint64_t count = atomic_load_explicit(&s->count, memory_order_relaxed);
    int join_rc = tl_models_join_all(s->link, count);
    if (s->error || join_rc) {
        tl_fail(c->ctx, "%s in the chain after %llu threads: %s", s->error ? "creating" : "joining",
                (unsigned long long)count, strerror(s->error ? s->error : join_rc));
        return -1;
    }
    if (count != iterations) {
        c->bad_length++;
        c->wrong_count = count;
    }
    return tl_ticks_to_ns(t1 - t0);
}

static int body_chain(tl_ctx *ctx)
{
    uint64_t m = (uint64_t)tl_param_long(ctx, "count", 1, 100000);
    size_t bytes = sizeof(chain_shared) + m * sizeof(tl_mthread);
    chain_state c = {.ctx = ctx, .s = tl_models_shared(ctx, bytes)};
    if (!c.s)
        return -1;
    c.s->m = m;
    if (tl_models_sync_init(ctx, &c.s->lock, &c.s->done_cv, NULL) != 0) {
        tl_model_shared_free(c.s, bytes);
        return -1;
    }
    tl_measure_spec spec = {.fixed_iterations = m};
    int rc = tl_measure(ctx, time_chain, &c, &spec);
    if (rc == 0)
        tl_check(ctx, "chain_length", c.bad_length == 0, c.bad_length ? (double)c.wrong_count : (double)m,
                 c.bad_length ? "%llu timing(s) ended with a count other than M = %llu"
                              : "every timing's chain counted exactly M = %llu threads, each joined",
                 c.bad_length ? (unsigned long long)c.bad_length : (unsigned long long)m,
                 (unsigned long long)m);
    tl_models_sync_destroy(&c.s->lock, &c.s->done_cv, NULL);
    tl_model_shared_free(c.s, bytes);
    return rc;
}

/* ------------------------------------- instantiate, start, start + join */

typedef enum { PHASE_INSTANTIATE, PHASE_START, PHASE_START_JOIN } phase;

typedef struct {
    tl_ctx *ctx;
    phase what;
    uint64_t n;
    tl_mthread *h;
    count_shared *s;
    uint64_t timings, least_ran, early; /* timings; fewest threads that ran in one; threads run before start */
} batch_state;

/* Makes threads h[0..n) (instantiate: without starting them); on an error
 * joins (starting first) those made and fails the point. */
static int batch_make(batch_state *b, int instantiate)
{
    for (uint64_t i = 0; i < b->n; i++) {
        int rc = instantiate ? tl_model_instantiate(&b->h[i], count_body, b->s)
                             : tl_model_create(&b->h[i], count_body, b->s, TL_MSTACK_DEFAULT);
        if (rc != 0) {
            for (uint64_t j = 0; instantiate && j < i; j++)
                tl_model_start_instantiated(b->h[j]);
            tl_models_join_all(b->h, i);
            tl_fail(b->ctx, "%s %s thread %llu of %llu: %s", instantiate ? "instantiating" : "creating",
                    tl_model_name, (unsigned long long)i + 1, (unsigned long long)b->n, strerror(rc));
            return -1;
        }
    }
    return 0;
}

static double time_batch(void *arg, uint64_t iterations)
{
    (void)iterations; /* fixed at 1: one sample is the whole batch */
    batch_state *b = arg;
    atomic_store_explicit(&b->s->ran, 0, memory_order_relaxed);
    uint64_t t0 = tl_now();
    if (batch_make(b, b->what == PHASE_INSTANTIATE) != 0)
        return -1;
    int rc = b->what == PHASE_START_JOIN ? tl_models_join_all(b->h, b->n) : 0;
    uint64_t t1 = tl_now();
    /* Clean-up, outside the measurement: start and join what remains. */
    if (b->what == PHASE_INSTANTIATE) {
        b->early += atomic_load_explicit(&b->s->ran, memory_order_relaxed);
        for (uint64_t i = 0; i < b->n; i++)
            if (rc == 0)
                rc = tl_model_start_instantiated(b->h[i]);
    }
    if (b->what != PHASE_START_JOIN) {
        int join_rc = tl_models_join_all(b->h, b->n);
        rc = rc ? rc : join_rc;
    }
    if (rc != 0) {
        tl_fail(b->ctx, "starting or joining the %s threads: %s", tl_model_name, strerror(rc));
        return -1;
    }
    b->timings++;
    uint64_t ran = atomic_load_explicit(&b->s->ran, memory_order_relaxed);
    if (ran < b->least_ran)
        b->least_ran = ran;
    return tl_ticks_to_ns(t1 - t0);
}

static int batch(tl_ctx *ctx, phase what)
{
    if (what == PHASE_INSTANTIATE && tl_model_no_instantiate) {
        tl_unsupported(ctx, "%s", tl_model_no_instantiate);
        return 0;
    }
    tl_models_batch threads;
    int ready = tl_models_batch_open(ctx, TL_MSTACK_DEFAULT, sizeof(count_shared), &threads);
    batch_state b = {
        .ctx = ctx, .what = what, .n = threads.n, .h = threads.h, .s = threads.shared, .least_ran = threads.n};
    int rc = ready;
    if (ready > 0) {
        tl_measure_spec spec = {.fixed_iterations = 1};
        rc = tl_measure(ctx, time_batch, &b, &spec);
    }
    if (rc == 0 && ready > 0) {
        tl_check(ctx, "every_thread_ran", b.least_ran == b.n, (double)b.least_ran,
                 "%llu of %llu threads ran in the worst of %llu timings (counted by the threads themselves, after "
                 "the joins)",
                 (unsigned long long)b.least_ran, (unsigned long long)b.n, (unsigned long long)b.timings);
        if (what == PHASE_INSTANTIATE)
            tl_check(ctx, "not_started", b.early == 0, (double)b.early,
                     "%llu instantiated thread(s) ran before they were started (0 = none)",
                     (unsigned long long)b.early);
    }
    tl_models_batch_close(&threads);
    return rc;
}

static int body_instantiate(tl_ctx *ctx) { return batch(ctx, PHASE_INSTANTIATE); }
static int body_start(tl_ctx *ctx) { return batch(ctx, PHASE_START); }
static int body_start_join(tl_ctx *ctx) { return batch(ctx, PHASE_START_JOIN); }

static int run_create_join(tl_ctx *ctx) { return tl_models_run(ctx, body_create_join); }
static int run_chain(tl_ctx *ctx) { return tl_models_run(ctx, body_chain); }
static int run_instantiate(tl_ctx *ctx) { return tl_models_run(ctx, body_instantiate); }
static int run_start(tl_ctx *ctx) { return tl_models_run(ctx, body_start); }
static int run_start_join(tl_ctx *ctx) { return tl_models_run(ctx, body_start_join); }

/* ----------------------------------------------------------------- table */

static const char *const chain_values[] = {"1000", NULL};
static const char *const chain_quick[] = {"200", NULL};
static const char *const big_values[] = {"100000", NULL};
static const char *const big_quick[] = {"10000", NULL};
static const char *const join_values[] = {"10000", NULL};
static const char *const join_quick[] = {"1000", NULL};

static const tl_param_def chain_params[] = {
    {.name = "count", .help = "M, the threads created in one timing, one after the other (1..100000)",
     .values = chain_values, .quick_values = chain_quick, .check = tl_models_check_count},
    {0},
};
static const tl_param_def instantiate_params[] = {
    {.name = "count", .help = "threads instantiated per sample (scaled down to the machine's limits)",
     .values = big_values, .quick_values = big_quick, .check = tl_models_check_count},
    {0},
};
static const tl_param_def start_params[] = {
    {.name = "count", .help = "threads started per sample (scaled down to the machine's limits)",
     .values = big_values, .quick_values = big_quick, .check = tl_models_check_count},
    {0},
};
static const tl_param_def start_join_params[] = {
    {.name = "count", .help = "threads started and joined per sample (scaled down to the machine's limits)",
     .values = join_values, .quick_values = join_quick, .check = tl_models_check_count},
    {0},
};

#define UNBOUND TL_PLACE_BIT(TL_PLACE_UNBOUND)

const tl_bench tl_models_lifecycle[] = {
    TL_MODELS_BENCH("threads.create_join",
                    "create a thread that returns at once, then join it (calibrated)",
                    "time per create + start + join of one thread",
                    1, UNBOUND, NULL, run_create_join),
    TL_MODELS_BENCH("threads.chain",
                    "the Pthreads benchmark suite's recursive chain: each new thread creates the next and exits; joined after the clock",
                    "time per thread creation in the chain (total / M)",
                    1, UNBOUND, chain_params, run_chain),
    TL_MODELS_BENCH("threads.instantiate",
                    "create COUNT threads without starting them (de Souto's JMH study, Table 1)",
                    "time to create `count` unstarted thread objects",
                    1, UNBOUND, instantiate_params, run_instantiate),
    TL_MODELS_BENCH("threads.start",
                    "start COUNT threads that end at once; joining them is clean-up outside the measurement "
                    "(de Souto's JMH study, Table 2)",
                    "time to create and start `count` threads",
                    1, UNBOUND, start_params, run_start),
    TL_MODELS_BENCH("threads.start_join",
                    "start COUNT threads, then join each (de Souto's JMH study, Table 3)",
                    "time to start and join `count` threads",
                    1, UNBOUND, start_join_params, run_start_join),
    {0},
};
