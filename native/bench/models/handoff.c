/* handoff.c - two threads of the model passing control back and forth on
 * one CPU (one virtual processor for ult, the program's one kernel thread
 * for boost-fiber): threads.yield_pingpong, threads.mutex_pingpong (seed
 * 002's 4-mutex protocol, Figure 1) and threads.cond_pingpong.
 *
 * Each timing creates the partner thread and waits (yielding) until it is
 * in position before the clock starts, and joins it after the clock stops:
 * the same code for every model, processes included, with everything the
 * two share in tl_model_shared_alloc memory.  Every handoff is verified:
 * the yields by who looked last, the mutex and condition handoffs by a
 * message number written by the sender before it sends and read by the
 * receiver after it receives (a receiver that returned early reads a stale
 * number).
 *
 * Both threads run their turns in one out-of-line function, with the same
 * instructions: they block and resume at the same call sites, so the
 * return-stack buffer predicts every return of a resumed thread (docs/ult.md,
 * "Context switch"), and they take the same branches, as a branch on which
 * thread is running mispredicts at every switch (measured with ult: 19 ns
 * per yield with such branches, 8 ns without). */
#define _GNU_SOURCE
#include <string.h>

#include "suite.h"

enum { MAIN = 0, PARTNER = 1 };

/* The function both threads run their turns in: neither inlined into the
 * two callers nor cloned per constant argument (GCC's constant propagation
 * would otherwise make one copy for main and one for the partner). */
#define SHARED_TURNS __attribute__((noinline, noclone))

/* Start-up and end of a timing, shared by the three protocols. */
typedef struct {
    _Atomic uint64_t ready;    /* the partner is in position */
    _Atomic uint64_t go;       /* yield: main has started the clock */
    _Atomic uint64_t finished; /* the partner has done its part */
    uint64_t n;                /* iterations of this timing */
    int error;                 /* the first failed call of a thread */
    int serial;                /* yield self-test: see check_order */
    tl_mthread partner;
    int joined; /* main's part joined the partner itself (the self-test) */
} handoff_common;

/* Creates the partner, waits until it is ready, runs main's part between
 * two clock reads, joins the partner.  Returns the elapsed ns, or -1 after
 * tl_fail. */
static double handoff_timing(tl_ctx *ctx, handoff_common *c, uint64_t n, tl_mthread_fn partner,
                             void (*main_part)(void *), void *shared)
{
    c->n = n;
    c->error = 0;
    atomic_store(&c->ready, 0);
    atomic_store(&c->go, 0);
    atomic_store(&c->finished, 0);
    c->joined = 0;
    int rc = tl_model_create(&c->partner, partner, shared, TL_MSTACK_DEFAULT);
    if (rc != 0) {
        tl_fail(ctx, "creating the partner %s thread: %s", tl_model_name, strerror(rc));
        return -1;
    }
    tl_models_await(&c->ready, 1);
    uint64_t t0 = tl_now();
    main_part(shared);
    uint64_t t1 = tl_now();
    if (!c->joined)
        rc = tl_model_join(c->partner);
    if (rc != 0 || c->error != 0) {
        tl_fail(ctx, "%s: %s", rc ? "joining the partner" : "a call of the protocol failed",
                strerror(rc ? rc : c->error));
        return -1;
    }
    return tl_ticks_to_ns(t1 - t0);
}

static void note_error(handoff_common *c, int rc)
{
    if (rc != 0 && c->error == 0)
        c->error = rc;
}

/* ------------------------------------------------------------- yield */

typedef struct {
    handoff_common c;
    _Atomic uint32_t last; /* who looked last: MAIN + 1 or PARTNER + 1 */
    uint64_t yields[2], switches[2]; /* per side, written by that side only */
} yield_shared;

/* 1 when the other thread looked last: it ran since my previous look.  A
 * load and a store, not an exchange: both threads run on one CPU, so the
 * two cannot interleave with the other's look unless a preemption falls
 * between them, which can miscount one yield and no more, while a locked
 * exchange would add several nanoseconds to every yield of the fast
 * models (the reference loop subtracts it only approximately). */
static uint64_t look(_Atomic uint32_t *last, int me)
{
    uint32_t prev = atomic_load_explicit(last, memory_order_relaxed);
    atomic_store_explicit(last, (uint32_t)me + 1, memory_order_relaxed);
    return prev == (uint32_t)(1 - me) + 1;
}

/* n turns of thread me: yield, then look.  The two threads run the same
 * instructions: a branch on which thread is running would mispredict at
 * every switch (measured: 10 ns per yield). */
static SHARED_TURNS void yield_turns(yield_shared *s, int me, uint64_t n)
{
    uint64_t switches = 0;
    for (uint64_t i = 0; i < n; i++) {
        tl_model_yield();
        switches += look(&s->last, me);
    }
    s->yields[me] += n;
    s->switches[me] += switches;
}

static void *yield_partner(void *arg)
{
    yield_shared *s = arg;
    atomic_store_explicit(&s->c.ready, 1, memory_order_release);
    while (!atomic_load_explicit(&s->c.go, memory_order_acquire))
        tl_model_yield();
    yield_turns(s, PARTNER, s->c.n);
    atomic_store_explicit(&s->c.finished, 1, memory_order_release);
    return NULL;
}

static void yield_main(void *arg)
{
    yield_shared *s = arg;
    atomic_store_explicit(&s->c.go, 1, memory_order_release);
    if (s->c.serial) {
        /* Self-test: main stays off the run queue (blocked in the join,
         * not yielding) until the partner has yielded all its turns, as
         * the seed saw on AIX. */
        note_error(&s->c, tl_model_join(s->c.partner));
        s->c.joined = 1;
    }
    yield_turns(s, MAIN, s->c.n);
    tl_models_await(&s->c.finished, 1);
}

typedef struct {
    tl_ctx *ctx;
    yield_shared *s;
} yield_state;

static double time_yield(void *arg, uint64_t iterations)
{
    yield_state *y = arg;
    return handoff_timing(y->ctx, &y->s->c, iterations, yield_partner, yield_main, y->s);
}

/* The looks of one iteration without the yields, on a word of their own. */
static double time_looks(void *arg, uint64_t iterations)
{
    (void)arg;
    _Atomic uint32_t last = 0;
    uint64_t sink = 0;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++)
        sink += look(&last, MAIN) + look(&last, PARTNER);
    uint64_t t1 = tl_now();
    tl_do_not_optimize(sink);
    return tl_ticks_to_ns(t1 - t0);
}

static int body_yield(tl_ctx *ctx)
{
    yield_state y = {.ctx = ctx, .s = tl_models_shared(ctx, sizeof(yield_shared))};
    if (!y.s)
        return -1;
    y.s->c.serial = strcmp(tl_param(ctx, "order"), "serial") == 0;
    /* At least 64 turns per timing: a timing's first and last yield may
     * find the other thread not yet (or no longer) runnable, which must
     * not weigh in the alternation check (slow kernel models, sanitizer
     * builds, calibrate on a single turn otherwise). */
    tl_measure_spec spec = {.actions_per_iteration = 2, .reference = time_looks, .min_iterations = 64};
    int rc = tl_measure(ctx, time_yield, &y, &spec);
    if (rc == 0)
        tl_check_alternated(ctx, y.s->switches, y.s->yields);
    tl_model_shared_free(y.s, sizeof(yield_shared));
    return rc;
}

/* ------------------------------------------------- handoff bookkeeping */

typedef struct {
    uint64_t seq;                   /* the number of the message in flight */
    uint64_t received[2], wrong[2]; /* per receiving side */
} messages;

static void receive(messages *m, int me, uint64_t expected)
{
    if (m->seq == expected)
        m->received[me]++;
    else
        m->wrong[me]++;
}

static void handoff_check(tl_ctx *ctx, const messages *m, uint64_t sent)
{
    uint64_t received = m->received[MAIN] + m->received[PARTNER];
    uint64_t wrong = m->wrong[MAIN] + m->wrong[PARTNER];
    tl_check(ctx, "handoffs", received == sent && wrong == 0, (double)received,
             "%llu handoffs sent, %llu received with the expected number, %llu with another "
             "(a receiver that returned before the send)",
             (unsigned long long)sent, (unsigned long long)received, (unsigned long long)wrong);
}

/* ------------------------------------------------- mutex (Figure 1) */

/* The seed's 4-mutex ping-pong, as native/bench/posix/sync_mutex.h runs it
 * for pthreads: main starts holding mutexes 0 and 2, the partner 1 and 3.
 * Handoff h of the 8-step cycle moves mutex FIG1[h] from side h % 2 to the
 * other (the sender unlocks it, the receiver locks it).  Every lock waits
 * for a mutex the other thread holds and no thread locks the mutex it
 * released last, so the threads strictly alternate; after the cycle every
 * mutex is back with its first owner.  The lock order is cyclic by design
 * and cannot deadlock: each lock waits for an unlock that comes earlier in
 * the other thread's program. */
enum { FIG1_STEPS = 8 };
static const unsigned char FIG1[FIG1_STEPS] = {0, 1, 2, 3, 1, 0, 3, 2};

typedef struct {
    handoff_common c;
    tl_mmutex m[4];
    messages msg;
    uint64_t cycles_done; /* main's count of completed cycles */
} mutex_shared;

/* Side me's part of n cycles; message k = cycle * 8 + h. */
static SHARED_TURNS void fig1_cycles(mutex_shared *s, int me, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        for (unsigned h = 0; h < FIG1_STEPS; h++) {
            tl_mmutex *m = &s->m[FIG1[h]];
            uint64_t k = i * FIG1_STEPS + h;
            if ((int)(h & 1u) == me) {
                s->msg.seq = k;
                note_error(&s->c, tl_model_mutex_unlock(m));
            } else {
                note_error(&s->c, tl_model_mutex_lock(m));
                receive(&s->msg, me, k);
            }
        }
}

static void *mutex_partner(void *arg)
{
    mutex_shared *s = arg;
    note_error(&s->c, tl_model_mutex_lock(&s->m[1]));
    note_error(&s->c, tl_model_mutex_lock(&s->m[3]));
    atomic_store_explicit(&s->c.ready, 1, memory_order_release);
    fig1_cycles(s, PARTNER, s->c.n);
    note_error(&s->c, tl_model_mutex_unlock(&s->m[1]));
    note_error(&s->c, tl_model_mutex_unlock(&s->m[3]));
    return NULL;
}

static void mutex_main(void *arg)
{
    mutex_shared *s = arg;
    fig1_cycles(s, MAIN, s->c.n);
}

typedef struct {
    tl_ctx *ctx;
    mutex_shared *s;
} mutex_state;

static double time_mutex(void *arg, uint64_t iterations)
{
    mutex_state *st = arg;
    mutex_shared *s = st->s;
    /* Main holds its initial mutexes before the partner exists. */
    int rc = tl_model_mutex_lock(&s->m[0]);
    if (rc == 0 && (rc = tl_model_mutex_lock(&s->m[2])) != 0)
        tl_model_mutex_unlock(&s->m[0]);
    if (rc != 0) {
        tl_fail(st->ctx, "locking the initial mutexes: %s", strerror(rc));
        return -1;
    }
    double t = handoff_timing(st->ctx, &s->c, iterations, mutex_partner, mutex_main, s);
    tl_model_mutex_unlock(&s->m[2]);
    tl_model_mutex_unlock(&s->m[0]);
    if (t >= 0)
        s->cycles_done += iterations;
    return t;
}

static int body_mutex(tl_ctx *ctx)
{
    mutex_state st = {.ctx = ctx, .s = tl_models_shared(ctx, sizeof(mutex_shared))};
    if (!st.s)
        return -1;
    int rc = 0;
    unsigned made = 0;
    while (made < 4 && (rc = tl_model_mutex_init(&st.s->m[made])) == 0)
        made++;
    if (rc != 0) {
        tl_fail(ctx, "initialising a %s mutex: %s", tl_model_name, strerror(rc));
        rc = -1;
    } else {
        tl_measure_spec spec = {.actions_per_iteration = FIG1_STEPS};
        rc = tl_measure(ctx, time_mutex, &st, &spec);
        if (rc == 0)
            handoff_check(ctx, &st.s->msg, st.s->cycles_done * FIG1_STEPS);
    }
    while (made-- > 0)
        tl_model_mutex_destroy(&st.s->m[made]);
    tl_model_shared_free(st.s, sizeof(mutex_shared));
    return rc;
}

/* ------------------------------------------------ condition variable */

/* One mutex, one condition, a turn: each side sets the turn to the other,
 * signals and waits for its turn to come back.  A round is two handoffs. */
typedef struct {
    handoff_common c;
    tl_mmutex lock;
    tl_mcond cv;
    int turn; /* under lock */
    messages msg;
    uint64_t rounds_done;
} cond_shared;

/* n rounds of thread me: main sends message 2i and receives 2i + 1, the
 * partner receives 2i and sends 2i + 1.  The caller holds the lock.  The
 * message numbers are arithmetic on me, not branches (see yield_turns). */
static SHARED_TURNS void cond_turns(cond_shared *s, int me, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        if (i > 0 || me == PARTNER) { /* main's first turn is its own */
            while (s->turn != me)
                note_error(&s->c, tl_model_cond_wait(&s->cv, &s->lock));
            receive(&s->msg, me, 2 * i - 1 + (uint64_t)me);
        }
        s->msg.seq = 2 * i + (uint64_t)me;
        s->turn = 1 - me;
        note_error(&s->c, tl_model_cond_signal(&s->cv));
    }
}

static void *cond_partner(void *arg)
{
    cond_shared *s = arg;
    note_error(&s->c, tl_model_mutex_lock(&s->lock));
    atomic_store_explicit(&s->c.ready, 1, memory_order_release);
    cond_turns(s, PARTNER, s->c.n);
    note_error(&s->c, tl_model_mutex_unlock(&s->lock));
    return NULL;
}

static void cond_main(void *arg)
{
    cond_shared *s = arg;
    note_error(&s->c, tl_model_mutex_lock(&s->lock));
    cond_turns(s, MAIN, s->c.n);
    while (s->turn != MAIN) /* the partner's last message */
        note_error(&s->c, tl_model_cond_wait(&s->cv, &s->lock));
    receive(&s->msg, MAIN, 2 * s->c.n - 1);
    note_error(&s->c, tl_model_mutex_unlock(&s->lock));
}

typedef struct {
    tl_ctx *ctx;
    cond_shared *s;
} cond_state;

static double time_cond(void *arg, uint64_t iterations)
{
    cond_state *st = arg;
    st->s->turn = MAIN;
    double t = handoff_timing(st->ctx, &st->s->c, iterations, cond_partner, cond_main, st->s);
    if (t >= 0)
        st->s->rounds_done += iterations;
    return t;
}

static int body_cond(tl_ctx *ctx)
{
    cond_state st = {.ctx = ctx, .s = tl_models_shared(ctx, sizeof(cond_shared))};
    if (!st.s)
        return -1;
    if (tl_models_sync_init(ctx, &st.s->lock, &st.s->cv, NULL) != 0) {
        tl_model_shared_free(st.s, sizeof(cond_shared));
        return -1;
    }
    tl_measure_spec spec = {.actions_per_iteration = 2};
    int rc = tl_measure(ctx, time_cond, &st, &spec);
    if (rc == 0)
        handoff_check(ctx, &st.s->msg, 2 * st.s->rounds_done);
    tl_models_sync_destroy(&st.s->lock, &st.s->cv, NULL);
    tl_model_shared_free(st.s, sizeof(cond_shared));
    return rc;
}

static int run_yield(tl_ctx *ctx) { return tl_models_run(ctx, body_yield); }
static int run_mutex(tl_ctx *ctx) { return tl_models_run(ctx, body_mutex); }
static int run_cond(tl_ctx *ctx) { return tl_models_run(ctx, body_cond); }

/* ----------------------------------------------------------------- table */

static const tl_param_def yield_params[] = {
    TL_YIELD_ORDER_PARAM,
    {0},
};

/* One CPU: the protocols measure a switch between two threads, which two
 * CPUs would not need (the primitives suite measures pthreads across CPUs). */
#define SAME_CPU TL_PLACE_BIT(TL_PLACE_SAME_CPU)

const tl_bench tl_models_handoff[] = {
    TL_MODELS_BENCH("threads.yield_pingpong",
                    "two threads of the model yield in turn on one CPU; alternation is verified",
                    "time per yield (one switch when the threads alternate)",
                    2, SAME_CPU, yield_params, run_yield),
    TL_MODELS_BENCH("threads.mutex_pingpong",
                    "the Pthreads benchmark suite's 4-mutex ping-pong (its Figure 1) between two threads of the model on one CPU",
                    "time per one-way handoff through a mutex",
                    2, SAME_CPU, NULL, run_mutex),
    TL_MODELS_BENCH("threads.cond_pingpong",
                    "two threads of the model hand a turn back and forth with a condition variable on one CPU",
                    "time per one-way handoff through a condition variable",
                    2, SAME_CPU, NULL, run_cond),
    {0},
};
