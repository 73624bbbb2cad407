/* sync_pingpong.h - two threads handing a message back and forth through
 * one mechanism: the ping-pong of cond.c, sem.c, mutex.c (Figure 1) and the
 * round trip of logp.c.
 *
 * A message is a handoff: the sender's operation (unlock, cond_signal,
 * sem_post, FUTEX_WAKE) releases the receiver blocked in its operation
 * (lock, cond_wait, sem_wait, FUTEX_WAIT).  Main sends first; a round is
 * main->partner->main.  Every message carries its number, written by the
 * sender just before it sends and read by the receiver just after it
 * receives: a receiver that returned before the message was sent reads a
 * stale number, so the count of correctly numbered messages proves the
 * threads strictly alternated. */
#ifndef THREADLAB_POSIX_SYNC_PINGPONG_H
#define THREADLAB_POSIX_SYNC_PINGPONG_H

#include <limits.h>
#include <semaphore.h>

#include "sync_mutex.h"

typedef enum { SYNC_MECH_MUTEX, SYNC_MECH_COND, SYNC_MECH_SEM, SYNC_MECH_FUTEX } sync_mech;

enum { SYNC_MAIN = 0, SYNC_PARTNER = 1 };
enum { SYNC_PHASE_RUN = 0, SYNC_PHASE_SETUP, SYNC_PHASE_TEARDOWN };

/* Names of the send and receive operations, for error messages. */
static const char *const sync_send_name[] = {"pthread_mutex_unlock", "pthread_cond_signal", "sem_post", "FUTEX_WAKE"};
static const char *const sync_recv_name[] = {"pthread_mutex_lock", "pthread_cond_wait", "sem_wait", "FUTEX_WAIT"};

/* What one thread keeps to itself, on its own cache line so the other
 * thread's traffic does not disturb it. */
typedef struct {
    unsigned step;       /* Figure 1: the next handoff of the cycle */
    unsigned held;       /* Figure 1: the mutexes this thread owns */
    int cond_locked;     /* cond: this thread holds the mutex */
    uint32_t seen;       /* futex: messages consumed */
    uint64_t received;   /* messages that arrived with the expected number */
    uint64_t mismatches; /* messages that arrived with another number */
    uint64_t cond_waits; /* cond: returns from pthread_cond_wait */
} TL_ALIGNED_CACHE_LINE sync_side;

/* The shared state.  The message number shares the first cache line with
 * the primitive, as a payload would, so checking it adds no line transfer
 * to the handoff the primitive already causes. */
typedef struct {
    _Atomic uint64_t seq;
    union {
        pthread_mutex_t fig1[4];
        struct {
            pthread_mutex_t m;
            pthread_cond_t c;
            int turn;    /* who may run: SYNC_MAIN or SYNC_PARTNER (the predicate) */
            int aborted; /* a thread stopped early: nobody waits any more */
        } cond;
        sem_t sem[2];             /* sem[i]: messages to side i */
        _Atomic uint32_t word[2]; /* word[i]: messages sent to side i so far */
    } u;
} TL_ALIGNED_CACHE_LINE sync_channel;

typedef struct {
    sync_channel ch;
    sync_side side[2];
    tl_ctx *ctx;
    sync_mech mech;
    unsigned rounds_per_iteration; /* Figure 1: 4, the cycle that restores the locks */
    int phase;                     /* the partner's next job; set before tl_partner_go */
    tl_partner *partner;
    sync_error err;
    uint64_t rounds_done; /* rounds of all completed timings */
} sync_pp;

/* ------------------------------------------------------------ channel */

/* Returns 0, 1 after marking the point unsupported, -1 after failing it. */
static inline int sync_ch_init(sync_pp *pp, const char *kind)
{
    sync_channel *ch = &pp->ch;
    int rc = 0;
    switch (pp->mech) {
    case SYNC_MECH_MUTEX: {
        int prepared = sync_mutex_prepare(pp->ctx, &ch->u.fig1[0], kind);
        if (prepared != 0)
            return prepared;
        for (int i = 1; i < 4; i++) {
            rc = sync_mutex_init_kind(&ch->u.fig1[i], kind);
            if (rc != 0) {
                while (i-- > 0)
                    pthread_mutex_destroy(&ch->u.fig1[i]);
                tl_fail(pp->ctx, "pthread_mutex_init (%s): %s", kind, strerror(rc));
                return -1;
            }
        }
        return 0;
    }
    case SYNC_MECH_COND:
        ch->u.cond.turn = SYNC_MAIN;
        rc = pthread_mutex_init(&ch->u.cond.m, NULL);
        if (rc == 0) {
            rc = pthread_cond_init(&ch->u.cond.c, NULL);
            if (rc != 0)
                pthread_mutex_destroy(&ch->u.cond.m);
        }
        break;
    case SYNC_MECH_SEM:
        if (sem_init(&ch->u.sem[0], 0, 0) != 0) {
            rc = errno;
        } else if (sem_init(&ch->u.sem[1], 0, 0) != 0) {
            rc = errno;
            sem_destroy(&ch->u.sem[0]);
        }
        break;
    case SYNC_MECH_FUTEX:
        atomic_init(&ch->u.word[0], 0);
        atomic_init(&ch->u.word[1], 0);
        break;
    }
    if (rc != 0) {
        tl_fail(pp->ctx, "initialising the %s channel: %s", sync_recv_name[pp->mech], strerror(rc));
        return -1;
    }
    return 0;
}

static inline void sync_ch_destroy(sync_pp *pp)
{
    sync_channel *ch = &pp->ch;
    switch (pp->mech) {
    case SYNC_MECH_MUTEX:
        for (int i = 0; i < 4; i++)
            pthread_mutex_destroy(&ch->u.fig1[i]);
        break;
    case SYNC_MECH_COND:
        pthread_cond_destroy(&ch->u.cond.c);
        pthread_mutex_destroy(&ch->u.cond.m);
        break;
    case SYNC_MECH_SEM:
        sem_destroy(&ch->u.sem[0]);
        sem_destroy(&ch->u.sem[1]);
        break;
    case SYNC_MECH_FUTEX:
        break;
    }
}

/* Once per run, in each thread: Figure 1 needs every mutex owned by its
 * first owner before the first cycle, and released after the last. */
static inline int sync_ch_setup(sync_pp *pp, int me)
{
    if (pp->mech != SYNC_MECH_MUTEX)
        return 0;
    pp->side[me].step = 0;
    return sync_fig1_acquire_initial(pp->ch.u.fig1, me, &pp->side[me].held);
}

static inline int sync_ch_teardown(sync_pp *pp, int me)
{
    return pp->mech == SYNC_MECH_MUTEX ? sync_fig1_release_all(pp->ch.u.fig1, &pp->side[me].held) : 0;
}

/* Around the rounds of one timing: the condition's mutex is held by each
 * thread except while it waits, as in the classic ping-pong. */
static inline int sync_ch_begin(sync_pp *pp, int me)
{
    if (pp->mech != SYNC_MECH_COND)
        return 0;
    int rc = pthread_mutex_lock(&pp->ch.u.cond.m);
    pp->side[me].cond_locked = rc == 0;
    return rc;
}

static inline int sync_ch_end(sync_pp *pp, int me)
{
    if (pp->mech != SYNC_MECH_COND || !pp->side[me].cond_locked)
        return 0;
    pp->side[me].cond_locked = 0;
    return pthread_mutex_unlock(&pp->ch.u.cond.m);
}

/* Sends one message from `me` to the other thread.  Returns 0 or an errno
 * value. */
static inline int sync_ch_send(sync_pp *pp, int me)
{
    sync_channel *ch = &pp->ch;
    sync_side *s = &pp->side[me];
    int other = !me;
    switch (pp->mech) {
    case SYNC_MECH_MUTEX: {
        int rc = sync_fig1_step(ch->u.fig1, s->step, me, &s->held);
        s->step = (s->step + 1) % SYNC_FIG1_STEPS;
        return rc;
    }
    case SYNC_MECH_COND:
        ch->u.cond.turn = other;
        return pthread_cond_signal(&ch->u.cond.c);
    case SYNC_MECH_SEM:
        return sem_post(&ch->u.sem[other]) == 0 ? 0 : errno;
    case SYNC_MECH_FUTEX:
        atomic_fetch_add_explicit(&ch->u.word[other], 1, memory_order_release);
        return tl_futex_wake((uint32_t *)&ch->u.word[other], 1) < 0 ? errno : 0;
    }
    return EINVAL;
}

/* Waits for one message to `me` and consumes it. */
static inline int sync_ch_recv(sync_pp *pp, int me)
{
    sync_channel *ch = &pp->ch;
    sync_side *s = &pp->side[me];
    switch (pp->mech) {
    case SYNC_MECH_MUTEX: {
        int rc = sync_fig1_step(ch->u.fig1, s->step, me, &s->held);
        s->step = (s->step + 1) % SYNC_FIG1_STEPS;
        return rc;
    }
    case SYNC_MECH_COND:
        /* The predicate makes spurious and stolen wake-ups harmless. */
        while (ch->u.cond.turn != me && !ch->u.cond.aborted) {
            int rc = pthread_cond_wait(&ch->u.cond.c, &ch->u.cond.m);
            if (rc != 0)
                return rc;
            s->cond_waits++;
        }
        return 0;
    case SYNC_MECH_SEM:
        while (sem_wait(&ch->u.sem[me]) != 0)
            if (errno != EINTR)
                return errno;
        return 0;
    case SYNC_MECH_FUTEX:
        /* No spinning: the futex alone carries the message. */
        while (atomic_load_explicit(&ch->u.word[me], memory_order_acquire) == s->seen)
            if (tl_futex_wait((uint32_t *)&ch->u.word[me], s->seen) != 0 && errno != EAGAIN && errno != EINTR)
                return errno;
        s->seen++;
        return 0;
    }
    return EINVAL;
}

/* A thread that stops early (its own error or the other's) releases the
 * other wherever it may wait for this one, so both always finish. */
static inline void sync_ch_abort(sync_pp *pp, int me)
{
    sync_channel *ch = &pp->ch;
    switch (pp->mech) {
    case SYNC_MECH_MUTEX:
        sync_fig1_release_all(ch->u.fig1, &pp->side[me].held);
        break;
    case SYNC_MECH_COND: {
        int locked = pp->side[me].cond_locked;
        if (!locked && pthread_mutex_lock(&ch->u.cond.m) != 0)
            break;
        ch->u.cond.aborted = 1;
        pthread_cond_broadcast(&ch->u.cond.c);
        if (!locked)
            pthread_mutex_unlock(&ch->u.cond.m);
        break;
    }
    case SYNC_MECH_SEM:
        sem_post(&ch->u.sem[0]);
        sem_post(&ch->u.sem[1]);
        break;
    case SYNC_MECH_FUTEX:
        for (int i = 0; i < 2; i++) {
            atomic_fetch_add_explicit(&ch->u.word[i], 1, memory_order_release);
            tl_futex_wake((uint32_t *)&ch->u.word[i], INT_MAX);
        }
        break;
    }
}

/* --------------------------------------------------------------- rounds */

/* Each returns nonzero when the thread must stop (an error anywhere). */
static inline int sync_pp_send(sync_pp *pp, int me, uint64_t number)
{
    atomic_store_explicit(&pp->ch.seq, number, memory_order_relaxed);
    int rc = sync_ch_send(pp, me);
    if (rc == 0)
        return 0;
    sync_error_set(&pp->err, sync_send_name[pp->mech], rc);
    sync_ch_abort(pp, me);
    return 1;
}

static inline int sync_pp_recv(sync_pp *pp, int me, uint64_t number)
{
    int rc = sync_ch_recv(pp, me);
    if (rc != 0)
        sync_error_set(&pp->err, sync_recv_name[pp->mech], rc);
    if (rc != 0 || sync_error_any(&pp->err)) {
        sync_ch_abort(pp, me);
        return 1;
    }
    if (atomic_load_explicit(&pp->ch.seq, memory_order_relaxed) == number)
        pp->side[me].received++;
    else
        pp->side[me].mismatches++;
    return 0;
}

/* Rounds [from, to) of one timing: main sends message 2r+1 of round r, the
 * partner answers with 2r+2. */
static inline int sync_pp_rounds(sync_pp *pp, int me, uint64_t from, uint64_t to)
{
    for (uint64_t r = from; r < to; r++) {
        if (me == SYNC_MAIN) {
            if (sync_pp_send(pp, me, 2 * r + 1) || sync_pp_recv(pp, me, 2 * r + 2))
                return 1;
        } else {
            if (sync_pp_recv(pp, me, 2 * r + 1) || sync_pp_send(pp, me, 2 * r + 2))
                return 1;
        }
    }
    return 0;
}

static inline int sync_pp_begin(sync_pp *pp, int me)
{
    int rc = sync_ch_begin(pp, me);
    if (rc == 0)
        return 0;
    sync_error_set(&pp->err, "pthread_mutex_lock", rc);
    sync_ch_abort(pp, me);
    return 1;
}

static inline void sync_pp_end(sync_pp *pp, int me)
{
    int rc = sync_ch_end(pp, me);
    if (rc != 0)
        sync_error_set(&pp->err, "pthread_mutex_unlock", rc);
}

/* The partner performs the same rounds as main in every timing, including
 * main's untimed first iteration. */
static inline void sync_pp_partner(void *arg, uint64_t iterations)
{
    sync_pp *pp = arg;
    int rc;
    switch (pp->phase) {
    case SYNC_PHASE_SETUP:
        if ((rc = sync_ch_setup(pp, SYNC_PARTNER)) != 0)
            sync_error_set(&pp->err, "pthread_mutex_lock (partner's initial mutexes)", rc);
        return;
    case SYNC_PHASE_TEARDOWN:
        if ((rc = sync_ch_teardown(pp, SYNC_PARTNER)) != 0)
            sync_error_set(&pp->err, "pthread_mutex_unlock (partner's final mutexes)", rc);
        return;
    default:
        break;
    }
    if (sync_pp_begin(pp, SYNC_PARTNER) == 0)
        sync_pp_rounds(pp, SYNC_PARTNER, 0, (iterations + 1) * pp->rounds_per_iteration);
    sync_pp_end(pp, SYNC_PARTNER);
}

static inline double sync_pp_time(void *arg, uint64_t iterations)
{
    sync_pp *pp = arg;
    uint64_t per = pp->rounds_per_iteration;
    pp->phase = SYNC_PHASE_RUN;
    tl_partner_go(pp->partner, iterations);
    /* The first iteration is untimed: it absorbs the partner's wake-up from
     * the framework's handshake, which is not a handoff of the mechanism. */
    int stopped = sync_pp_begin(pp, SYNC_MAIN) || sync_pp_rounds(pp, SYNC_MAIN, 0, per);
    uint64_t t0 = tl_now();
    if (!stopped)
        sync_pp_rounds(pp, SYNC_MAIN, per, per * (iterations + 1));
    uint64_t t1 = tl_now();
    sync_pp_end(pp, SYNC_MAIN);
    tl_partner_wait(pp->partner);
    if (sync_error_report(pp->ctx, &pp->err))
        return -1;
    pp->rounds_done += per * (iterations + 1);
    return tl_ticks_to_ns(t1 - t0);
}

/* Runs the ping-pong as one measured record.  One iteration is one round
 * (Figure 1: one cycle of four rounds); a sample is the time per
 * 1/actions_per_round of a round.  Returns 0 (also when the point is
 * unsupported) or -1 after failing it. */
static inline int sync_pingpong(tl_ctx *ctx, sync_mech mech, const char *kind, const char *metric,
                                const char *quantity, double actions_per_round)
{
    sync_pp *pp = aligned_alloc(TL_CACHE_LINE, sizeof *pp);
    if (!pp) {
        tl_fail(ctx, "out of memory");
        return -1;
    }
    memset(pp, 0, sizeof *pp);
    pp->ctx = ctx;
    pp->mech = mech;
    pp->rounds_per_iteration = mech == SYNC_MECH_MUTEX ? SYNC_FIG1_PINGPONGS : 1;
    int result = sync_ch_init(pp, kind);
    if (result != 0) {
        free(pp);
        return result > 0 ? 0 : -1;
    }
    int rc = sync_ch_setup(pp, SYNC_MAIN);
    if (rc != 0) {
        tl_fail(ctx, "pthread_mutex_lock (main's initial mutexes): %s", strerror(rc));
        result = -1;
    } else if (!(pp->partner = tl_partner_start(ctx, 1, sync_pp_partner, pp))) {
        tl_fail(ctx, "cannot start the partner thread: %s", strerror(errno));
        result = -1;
    }
    if (pp->partner) {
        pp->phase = SYNC_PHASE_SETUP;
        tl_partner_go(pp->partner, 0);
        tl_partner_wait(pp->partner);
        if (sync_error_report(ctx, &pp->err)) {
            result = -1;
        } else {
            tl_measure_spec spec = {.actions_per_iteration = actions_per_round * pp->rounds_per_iteration,
                                    .metric = metric,
                                    .quantity = quantity};
            result = tl_measure(ctx, sync_pp_time, pp, &spec);
        }
        pp->phase = SYNC_PHASE_TEARDOWN;
        tl_partner_go(pp->partner, 0);
        tl_partner_wait(pp->partner);
        tl_partner_stop(pp->partner);
    }
    rc = sync_ch_teardown(pp, SYNC_MAIN);
    if (result == 0 && rc != 0)
        sync_error_set(&pp->err, "pthread_mutex_unlock (main's final mutexes)", rc);
    if (result == 0 && sync_error_report(ctx, &pp->err))
        result = -1;
    if (result == 0) {
        uint64_t expected = 2 * pp->rounds_done;
        uint64_t good = pp->side[0].received + pp->side[1].received;
        uint64_t bad = pp->side[0].mismatches + pp->side[1].mismatches;
        tl_check(ctx, "alternation", good == expected && bad == 0, (double)good,
                 "%llu of %llu handoffs arrived in strict alternation (each receiver read the number its "
                 "sender wrote just before sending); %llu arrived out of turn",
                 (unsigned long long)good, (unsigned long long)expected, (unsigned long long)bad);
        if (mech == SYNC_MECH_COND)
            /* Above 1: futile or spurious wake-ups the predicate absorbed. */
            tl_extra_num(ctx, "cond_waits_per_handoff",
                         good ? (double)(pp->side[0].cond_waits + pp->side[1].cond_waits) / (double)good : NAN);
    }
    sync_ch_destroy(pp);
    free(pp);
    return result;
}

#endif
