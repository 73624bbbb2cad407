/* logp.c - the LogP parameters of a thread-to-thread message, per
 * synchronisation mechanism (the seed's section 3, extended to all four).
 *
 * LogP (Culler et al.) describes a message by its latency L (time in
 * transit), the send and receive overheads os and or (time the sender and
 * the receiver are busy in the operation), the gap g (minimum interval
 * between consecutive sends) and the processor count P.  Between two threads
 * a message is a handoff through a mechanism:
 *
 *   mechanism  send (os)                      receive (or)
 *   mutex      pthread_mutex_unlock           pthread_mutex_lock
 *   cond       pthread_cond_signal            pthread_cond_wait
 *   sem        sem_post                       sem_wait
 *   futex      word += 1, FUTEX_WAKE          FUTEX_WAIT until the word moves
 *
 * A one-way handoff costs os + L + or, so a ping-pong round trip is
 * rtt = 2 (os + L + or) (the seed).  We measure rtt by ping-pong (mutex: the
 * seed's 4-mutex protocol of Figure 1, whose every handoff is an unlock by
 * the sender and a lock by the receiver; its cycle is four round trips).  The
 * overheads are measured in isolation, in one thread, in the state where the
 * operation does not wait and has nobody to wake: os is the send with no
 * receiver waiting (unlock of a held mutex with no waiter, over a large
 * array; cond_signal with no waiter; sem_post; FUTEX_WAKE that wakes
 * nobody); or is the receive when the message is already there (lock of a
 * free mutex, over the array; sem_wait on a positive semaphore; FUTEX_WAIT
 * that returns EAGAIN because the word has already changed).  For cond the
 * receive cannot find a signal already there (a signal nobody waits for is
 * lost), so or is the seed's measurement: pthread_cond_wait while a thread on
 * another CPU signals continually without the mutex.  It needs the threads
 * on different CPUs (on one CPU the waiter runs only when the signaller's
 * slice ends: it measures the slice), so with other placements or, and hence
 * L, are reported unsupported rather than mixed with a measurement made at
 * another placement.  L has no measurement of its own: it is derived as
 *
 *   L = rtt / 2 - os - or          (from the medians of the three records)
 *
 * and collects everything the isolated overheads leave out: the wake-up of
 * a blocked thread (futex syscalls, scheduler, inter-processor interrupt, or
 * a context switch on one CPU) and the cache-line transfers between the
 * threads.  A negative L means the decomposition does not hold on this
 * machine (e.g. an overhead measured in isolation costs more than the same
 * operation inside the ping-pong); it is flagged by a failed check, never
 * clamped.  g is the time per send in a long back-to-back stream of sends
 * while the other thread receives them (mutex: unlocking, in order, an array
 * of held mutexes the receiver locks in the same order; cond: signals while
 * the other thread waits continually); the seed found g no larger than os.
 *
 * One run emits five records: metrics rtt, os, or, g and L. */
#define _GNU_SOURCE
#include <semaphore.h>
#include <stdio.h>

#include "families.h"
#include "sync_cond.h"
#include "sync_pingpong.h"

enum {
    LOGP_ARRAY = 4096,    /* mutexes per lock or unlock pass (os, or) */
    LOGP_STREAM = 16384,  /* the longest mutex stream (g) */
};

typedef struct {
    const char *name;
    sync_mech mech;
    const char *os_quantity;
    const char *or_quantity;
} logp_mech;

static const logp_mech logp_mechs[] = {
    {"mutex", SYNC_MECH_MUTEX, "time per pthread_mutex_unlock with no waiter (array pass)",
     "time per pthread_mutex_lock of a free mutex (array pass)"},
    {"cond", SYNC_MECH_COND, "time per pthread_cond_signal with no waiter",
     "time per returned pthread_cond_wait while another CPU signals continually"},
    {"sem", SYNC_MECH_SEM, "time per sem_post with no waiter", "time per sem_wait on a positive semaphore"},
    {"futex", SYNC_MECH_FUTEX, "time per word increment + FUTEX_WAKE with no waiter",
     "time per FUTEX_WAIT returning EAGAIN (the word has already changed)"},
};

static const char *const q_rtt = "time per round trip, 2(os+L+or) (ping-pong)";
static const char *const q_g = "time per send in a back-to-back stream the other thread receives (gap)";
static const char *const q_l = "latency L = rtt/2 - os - or";

/* State of the measurements after the ping-pong: the channel, used by one
 * thread (os, or) or one way (g). */
typedef struct {
    sync_pp pp; /* first: aligned like its channel */
    tl_ctx *ctx;
    sync_mutex_array arr;
    tl_partner *receiver;
    _Atomic uint32_t ready; /* the receiver has entered its loop */
    _Atomic int abort;      /* main failed mid-stream: the receiver stops */
    uint64_t sent;          /* messages main sent in the streams */
    uint64_t consumed;      /* messages the receiver consumed (its thread) */
    uint64_t pending_bad;   /* os/or timings that left a wrong count */
    uint64_t eagain;        /* futex or: waits that returned EAGAIN */
    uint64_t waits;         /* futex or: waits made */
} logp_state;

/* ------------------------------------------------- os and or (sem, futex) */

/* Resets the channel's direction main -> partner to `pending` messages. */
static int logp_reset(logp_state *s, unsigned pending)
{
    sync_channel *ch = &s->pp.ch;
    if (s->pp.mech == SYNC_MECH_SEM) {
        sem_destroy(&ch->u.sem[SYNC_PARTNER]);
        return sem_init(&ch->u.sem[SYNC_PARTNER], 0, pending) == 0 ? 0 : errno;
    }
    atomic_store_explicit(&ch->u.word[SYNC_PARTNER], pending, memory_order_relaxed);
    s->pp.side[SYNC_PARTNER].seen = 0;
    return 0;
}

static unsigned logp_pending(logp_state *s)
{
    sync_channel *ch = &s->pp.ch;
    if (s->pp.mech == SYNC_MECH_SEM) {
        int v = -1;
        sem_getvalue(&ch->u.sem[SYNC_PARTNER], &v);
        return (unsigned)v;
    }
    return atomic_load_explicit(&ch->u.word[SYNC_PARTNER], memory_order_relaxed) - s->pp.side[SYNC_PARTNER].seen;
}

/* The channel's own send, with nobody to receive: each leaves one more
 * message pending, which is what the check counts. */
static double time_os(void *arg, uint64_t iterations)
{
    logp_state *s = arg;
    int r = logp_reset(s, 0);
    if (r != 0) {
        tl_fail(s->ctx, "sem_init: %s", strerror(r));
        return -1;
    }
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++)
        r |= sync_ch_send(&s->pp, SYNC_MAIN);
    uint64_t t1 = tl_now();
    if (r != 0) {
        tl_fail(s->ctx, "%s failed (OR of the results: %d)", sync_send_name[s->pp.mech], r);
        return -1;
    }
    s->pending_bad += logp_pending(s) != iterations;
    return tl_ticks_to_ns(t1 - t0);
}

/* The channel's own receive with every message already there (sem). */
static double time_or_sem(void *arg, uint64_t iterations)
{
    logp_state *s = arg;
    int r = logp_reset(s, (unsigned)iterations);
    if (r != 0) {
        tl_fail(s->ctx, "sem_init: %s", strerror(r));
        return -1;
    }
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++)
        r |= sync_ch_recv(&s->pp, SYNC_PARTNER);
    uint64_t t1 = tl_now();
    if (r != 0) {
        tl_fail(s->ctx, "sem_wait failed (OR of the results: %d)", r);
        return -1;
    }
    s->pending_bad += logp_pending(s) != 0;
    return tl_ticks_to_ns(t1 - t0);
}

/* FUTEX_WAIT for a value the word no longer has: the kernel compares and
 * returns EAGAIN, the receive that finds its message already there but too
 * late to skip the system call. */
static double time_or_futex(void *arg, uint64_t iterations)
{
    logp_state *s = arg;
    uint32_t *word = (uint32_t *)&s->pp.ch.u.word[SYNC_PARTNER];
    atomic_store_explicit(&s->pp.ch.u.word[SYNC_PARTNER], 1, memory_order_relaxed);
    uint64_t eagain = 0;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++)
        eagain += tl_futex_wait(word, 0) == -1 && errno == EAGAIN;
    uint64_t t1 = tl_now();
    s->eagain += eagain;
    s->waits += iterations;
    return tl_ticks_to_ns(t1 - t0);
}

/* ------------------------------------------------------------------ g */

static void gap_receiver(void *arg, uint64_t iterations)
{
    logp_state *s = arg;
    uint64_t got = 0;
    int rc = 0;
    sync_word_publish(&s->ready, 1);
    if (s->pp.mech == SYNC_MECH_MUTEX) {
        /* Main releases the mutexes in order, so locking them in order
         * consumes the messages as they arrive. */
        for (; got < iterations && rc == 0; got++)
            rc = pthread_mutex_lock(&s->arr.m[got]);
        if (rc != 0)
            got--;
        int u = sync_mutex_unlock_pass(s->arr.m, got);
        if (rc == 0 && u != 0)
            rc = u;
    } else {
        for (; got < iterations && !atomic_load_explicit(&s->abort, memory_order_relaxed); got++)
            if ((rc = sync_ch_recv(&s->pp, SYNC_PARTNER)) != 0)
                break;
    }
    if (rc != 0)
        sync_error_set(&s->pp.err, s->pp.mech == SYNC_MECH_MUTEX ? "pthread_mutex_lock (receiver)" :
                                   sync_recv_name[s->pp.mech], rc);
    s->consumed += got;
}

static double time_gap(void *arg, uint64_t iterations)
{
    logp_state *s = arg;
    int mutex = s->pp.mech == SYNC_MECH_MUTEX;
    int r = 0;
    if (mutex && (r = sync_mutex_lock_pass(s->arr.m, iterations)) != 0) {
        sync_mutex_unlock_pass(s->arr.m, iterations);
        tl_fail(s->ctx, "pthread_mutex_lock failed while preparing the stream (OR of the results: %d)", r);
        return -1;
    }
    atomic_store_explicit(&s->ready, 0, memory_order_relaxed);
    tl_partner_go(s->receiver, iterations);
    sync_word_wait_change(&s->ready, 0);
    /* Every send is attempted even after a failure, so a receiver waiting
     * for the mutexes in order is never stranded. */
    uint64_t t0 = tl_now();
    if (mutex)
        r = sync_mutex_unlock_pass(s->arr.m, iterations);
    else
        for (uint64_t i = 0; i < iterations; i++)
            r |= sync_ch_send(&s->pp, SYNC_MAIN);
    uint64_t t1 = tl_now();
    if (r != 0) {
        sync_error_set(&s->pp.err, sync_send_name[s->pp.mech], r);
        atomic_store_explicit(&s->abort, 1, memory_order_relaxed);
        sync_ch_abort(&s->pp, SYNC_MAIN);
    }
    tl_partner_wait(s->receiver);
    s->sent += iterations;
    if (sync_error_report(s->ctx, &s->pp.err))
        return -1;
    return tl_ticks_to_ns(t1 - t0);
}

static int measure_gap(tl_ctx *ctx, logp_state *s)
{
    if (s->pp.mech == SYNC_MECH_COND)
        return sync_cond_continual(ctx, SYNC_COND_TIME_SIGNALS, "g", q_g);
    int result = -1;
    s->receiver = tl_partner_start(ctx, 1, gap_receiver, s);
    if (!s->receiver) {
        tl_fail(ctx, "cannot start the receiving thread: %s", strerror(errno));
        return -1;
    }
    if (s->pp.mech != SYNC_MECH_MUTEX)
        logp_reset(s, 0);
    tl_measure_spec spec = {.metric = "g",
                            .quantity = q_g,
                            .max_iterations = s->pp.mech == SYNC_MECH_MUTEX ? LOGP_STREAM : (1u << 30)};
    result = tl_measure(ctx, time_gap, s, &spec);
    tl_partner_stop(s->receiver);
    if (result == 0)
        tl_check(ctx, "stream-consumed", s->consumed == s->sent, (double)s->consumed,
                 "the receiving thread consumed %llu of the %llu messages sent",
                 (unsigned long long)s->consumed, (unsigned long long)s->sent);
    return result;
}

/* ---------------------------------------------------------- os and or */

static int measure_array(tl_ctx *ctx, logp_state *s, int lock, const char *metric, const char *quantity)
{
    tl_measure_spec spec = {.metric = metric, .quantity = quantity, .actions_per_iteration = LOGP_ARRAY};
    sync_mutex_array pass = s->arr;
    pass.n = LOGP_ARRAY; /* the first LOGP_ARRAY mutexes of the stream's array */
    pass.bad_state = pass.verified = 0;
    int result = tl_measure(ctx, lock ? sync_time_lock_array : sync_time_unlock_array, &pass, &spec);
    if (result == 0)
        sync_mutex_array_check(ctx, &pass);
    return result;
}

static void check_pending(tl_ctx *ctx, logp_state *s, const char *what)
{
    tl_check(ctx, "messages", s->pending_bad == 0, (double)s->pending_bad, "%llu timings left %s",
             (unsigned long long)s->pending_bad, what);
    s->pending_bad = 0;
}

static int measure_os(tl_ctx *ctx, logp_state *s, const logp_mech *m)
{
    if (m->mech == SYNC_MECH_MUTEX)
        return measure_array(ctx, s, 0, "os", m->os_quantity);
    if (m->mech == SYNC_MECH_COND)
        return sync_cond_signal_measure(ctx, "os", m->os_quantity);
    /* The semaphore's count must not pass SEM_VALUE_MAX. */
    tl_measure_spec spec = {.metric = "os", .quantity = m->os_quantity, .max_iterations = 1u << 30};
    int result = tl_measure(ctx, time_os, s, &spec);
    if (result == 0)
        check_pending(ctx, s, "a pending-message count other than the number of sends (a send was lost)");
    return result;
}

/* A record that names its metric but has no measurement here. */
static void logp_unmeasured(tl_ctx *ctx, const char *metric, const char *quantity, int failed, const char *reason)
{
    tl_set_metric(ctx, metric, quantity);
    if (failed)
        tl_fail(ctx, "%s", reason);
    else
        tl_unsupported(ctx, "%s", reason);
}

static int measure_or(tl_ctx *ctx, logp_state *s, const logp_mech *m)
{
    switch (m->mech) {
    case SYNC_MECH_MUTEX:
        return measure_array(ctx, s, 1, "or", m->or_quantity);
    case SYNC_MECH_COND:
        if (ctx->placement != TL_PLACE_DIFFERENT_CPUS) {
            logp_unmeasured(ctx, "or", m->or_quantity, 0,
                            "the receive overhead of a condition is measured only with the signaller on another "
                            "CPU (placement different-cpus): on one CPU it measures the time slice (as the Pthreads benchmark suite did)");
            return 0;
        }
        return sync_cond_continual(ctx, SYNC_COND_TIME_WAITS, "or", m->or_quantity);
    case SYNC_MECH_SEM: {
        tl_measure_spec spec = {.metric = "or", .quantity = m->or_quantity, .max_iterations = 1u << 30};
        int result = tl_measure(ctx, time_or_sem, s, &spec);
        if (result == 0)
            check_pending(ctx, s, "messages behind (a sem_wait returned without consuming)");
        return result;
    }
    case SYNC_MECH_FUTEX: {
        tl_measure_spec spec = {.metric = "or", .quantity = m->or_quantity};
        int result = tl_measure(ctx, time_or_futex, s, &spec);
        if (result == 0)
            tl_check(ctx, "eagain", s->eagain == s->waits, (double)s->eagain,
                     "%llu of %llu FUTEX_WAIT calls returned EAGAIN at once", (unsigned long long)s->eagain,
                     (unsigned long long)s->waits);
        return result;
    }
    }
    return -1;
}

/* ---------------------------------------------------------------- run */

enum { LOGP_RTT, LOGP_OS, LOGP_OR, LOGP_MEASURED };
static const char *const logp_metric[LOGP_MEASURED] = {"rtt", "os", "or"};

/* Emits the pending record; returns its median, or NAN when it has none. */
static double logp_emit(tl_ctx *ctx, const logp_mech *m, int failed)
{
    double median = failed ? NAN : tl_pending_median(ctx);
    tl_extra_str(ctx, "mechanism", m->name);
    tl_emit(ctx);
    return median;
}

static int run_logp(tl_ctx *ctx)
{
    const char *name = tl_param(ctx, "mechanism");
    const logp_mech *m = NULL;
    for (size_t i = 0; i < sizeof logp_mechs / sizeof logp_mechs[0]; i++)
        if (!strcmp(logp_mechs[i].name, name))
            m = &logp_mechs[i];
    if (!m) {
        tl_fail(ctx, "unknown mechanism %s", name);
        return -1;
    }

    logp_state *s = aligned_alloc(TL_CACHE_LINE, sizeof *s);
    if (!s) {
        tl_fail(ctx, "out of memory");
        return -1;
    }
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->pp.ctx = ctx;
    s->pp.mech = m->mech;
    int ready = m->mech == SYNC_MECH_MUTEX ? sync_mutex_array_init(ctx, &s->arr, LOGP_STREAM)
              : m->mech == SYNC_MECH_COND  ? 0
                                           : sync_ch_init(&s->pp, NULL);
    if (ready != 0) {
        sync_mutex_array_destroy(&s->arr);
        free(s);
        return -1;
    }

    double value[LOGP_MEASURED];
    int failed[LOGP_MEASURED];
    failed[LOGP_RTT] = sync_pingpong(ctx, m->mech, "normal", "rtt", q_rtt, 1.0) != 0;
    value[LOGP_RTT] = logp_emit(ctx, m, failed[LOGP_RTT]);
    failed[LOGP_OS] = measure_os(ctx, s, m) != 0;
    value[LOGP_OS] = logp_emit(ctx, m, failed[LOGP_OS]);
    failed[LOGP_OR] = measure_or(ctx, s, m) != 0;
    value[LOGP_OR] = logp_emit(ctx, m, failed[LOGP_OR]);
    logp_emit(ctx, m, measure_gap(ctx, s) != 0);

    if (m->mech == SYNC_MECH_MUTEX)
        sync_mutex_array_destroy(&s->arr);
    else if (m->mech != SYNC_MECH_COND)
        sync_ch_destroy(&s->pp);
    free(s);

    /* L stays pending for the framework to emit; any failed record makes
     * the program exit 1, so run() returns nonzero only for a failed L. */
    for (int i = 0; i < LOGP_MEASURED; i++) {
        if (failed[i] || isnan(value[i])) {
            char reason[160];
            snprintf(reason, sizeof reason, "L needs %s, which %s", logp_metric[i],
                     failed[i] ? "failed" : "is not measured here (see its record)");
            logp_unmeasured(ctx, "L", q_l, failed[i], reason);
            tl_extra_str(ctx, "mechanism", m->name);
            return failed[i] ? -1 : 0;
        }
    }
    double latency = value[LOGP_RTT] / 2 - value[LOGP_OS] - value[LOGP_OR];
    tl_derived(ctx, "L", q_l, latency, "rtt/2 - os - or (medians)");
    tl_check(ctx, "decomposition", latency >= 0, latency,
             "L = %.1f/2 - %.1f - %.1f = %.1f ns; a negative L means the round trip is not the sum of the "
             "overheads measured alone plus a latency on this machine",
             value[LOGP_RTT], value[LOGP_OS], value[LOGP_OR], latency);
    tl_extra_str(ctx, "mechanism", m->name);
    for (int i = 0; i < LOGP_MEASURED; i++) {
        char key[16];
        snprintf(key, sizeof key, "%s_median", logp_metric[i]);
        tl_extra_num(ctx, key, value[i]);
    }
    return 0;
}

static const char *const mechanism_values[] = {"mutex", "cond", "sem", "futex", NULL};
static const char *const mechanism_quick[] = {"sem", "futex", NULL};
static const tl_param_def logp_params[] = {
    {.name = "mechanism",
     .help = "the message: mutex (Figure 1 ping-pong), cond (condition variable), sem (POSIX semaphores), "
             "futex (raw futex on a counter)",
     .values = mechanism_values,
     .quick_values = mechanism_quick},
    {0},
};

const tl_bench tl_posix_logp[] = {
    {.name = "pthread.logp",
     .model = "pthread",
     .summary = "LogP parameters (rtt, os, or, g, L) of a thread-to-thread message through one mechanism",
     .quantity = "LogP parameter (see each record's metric)",
     .threads = 2,
     .placements = TL_PLACES_ALL,
     .default_placements = TL_PLACE_BIT(TL_PLACE_DIFFERENT_CPUS) | TL_PLACE_BIT(TL_PLACE_SAME_CPU),
     .params = logp_params,
     .run = run_logp},
    {0},
};
