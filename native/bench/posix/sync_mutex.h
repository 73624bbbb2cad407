/* sync_mutex.h - mutex pieces shared by mutex.c, logp.c and sync_pingpong.h:
 * the mutex kinds, the lock order of the seed's Figure 1, and the lock and
 * unlock passes over a large array of mutexes (the seed's individual
 * overheads, which LogP reuses as the mutex's receive and send overheads).
 * Everything is static inline so each file compiles only what it uses. */
#ifndef THREADLAB_POSIX_SYNC_MUTEX_H
#define THREADLAB_POSIX_SYNC_MUTEX_H

#include "sync_common.h"

/* ------------------------------------------------------------ the kinds */

/* normal: the default protocol the seed measured; the others are the
 * protocols the seed names as future work. */
static const char *const sync_mutex_kinds[] = {"normal", "errorcheck", "recursive", "adaptive", "pi", "pp", NULL};

static inline const char *sync_mutex_kind_check(const char *value)
{
    for (const char *const *k = sync_mutex_kinds; *k; k++)
        if (strcmp(*k, value) == 0)
            return NULL;
    return "normal, errorcheck, recursive, adaptive, pi or pp";
}

/* The ceiling of "pp" mutexes: the lowest SCHED_FIFO priority, so a locker
 * is raised as little as the protocol allows. */
static inline int sync_mutex_pp_ceiling(void)
{
    return sched_get_priority_min(SCHED_FIFO);
}

static inline int sync_mutex_init_kind(pthread_mutex_t *m, const char *kind)
{
    pthread_mutexattr_t attr;
    int rc = pthread_mutexattr_init(&attr);
    if (rc != 0)
        return rc;
    if (!strcmp(kind, "normal"))
        rc = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_NORMAL);
    else if (!strcmp(kind, "errorcheck"))
        rc = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    else if (!strcmp(kind, "recursive"))
        rc = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    else if (!strcmp(kind, "adaptive"))
        rc = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    else if (!strcmp(kind, "pi"))
        rc = pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
    else if (!strcmp(kind, "pp")) {
        rc = pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_PROTECT);
        if (rc == 0)
            rc = pthread_mutexattr_setprioceiling(&attr, sync_mutex_pp_ceiling());
    } else
        rc = EINVAL;
    if (rc == 0)
        rc = pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    return rc;
}

/* Initialises *m as `kind` and proves this thread can lock it: a "pp" lock
 * fails (EINVAL, EPERM) where the caller's policy or privileges do not allow
 * the ceiling, "pi" where the kernel lacks PI futexes.  Returns 0; 1 after
 * marking the point unsupported (m destroyed); -1 after failing it.
 * The probe is a trylock of the free mutex: glibc acquires it through the
 * same protocol code as a lock, and ThreadSanitizer takes a lock's EINVAL
 * for a corrupt mutex but a trylock's for an answer. */
static inline int sync_mutex_prepare(tl_ctx *ctx, pthread_mutex_t *m, const char *kind)
{
    int rc = sync_mutex_init_kind(m, kind);
    if (rc != 0) {
        tl_unsupported(ctx, "mutex kind %s: pthread_mutex_init failed: %s", kind, strerror(rc));
        return 1;
    }
    rc = pthread_mutex_trylock(m);
    if (rc != 0) {
        pthread_mutex_destroy(m);
        /* The scheduling policy explains most refusals: glibc raises a "pp"
         * locker to the ceiling keeping its policy, which SCHED_OTHER does
         * not allow (EINVAL). */
        int policy = sched_getscheduler(0);
        tl_unsupported(ctx, "mutex kind %s: locking it failed: %s (calling thread's policy: %s)", kind,
                       strerror(rc),
                       policy == SCHED_OTHER ? "SCHED_OTHER"
                       : policy == SCHED_FIFO ? "SCHED_FIFO"
                       : policy == SCHED_RR   ? "SCHED_RR"
                                              : "other");
        return 1;
    }
    rc = pthread_mutex_unlock(m);
    if (rc != 0) {
        tl_fail(ctx, "mutex kind %s: pthread_mutex_unlock failed: %s", kind, strerror(rc));
        return -1;
    }
    tl_extra_str(ctx, "mutex_kind", kind);
    if (!strcmp(kind, "pp"))
        tl_extra_num(ctx, "prio_ceiling", sync_mutex_pp_ceiling());
    return 0;
}

/* ------------------------------------------------------------- Figure 1 */

/* The seed's 4-mutex ping-pong.  Main starts holding the even mutexes, the
 * partner the odd ones.  Handoff h moves mutex sync_fig1_mutex[h] from the
 * thread of parity h (0 = main) to the other: the sender unlocks it, the
 * receiver locks it.  So main runs  unlock 0, lock 1, unlock 2, lock 3,
 * unlock 1, lock 0, unlock 3, lock 2  and the partner the complement
 * lock 0, unlock 1, lock 2, unlock 3, lock 1, unlock 0, lock 3, unlock 2.
 * Every lock waits for a mutex the other thread still holds, and no thread
 * ever locks the mutex it released last (with two mutexes it would race the
 * other thread for it), so the threads strictly alternate; after the eight
 * handoffs (four ping-pongs) every mutex is back with its first owner. */
enum { SYNC_FIG1_STEPS = 8, SYNC_FIG1_PINGPONGS = 4 };
static const unsigned char sync_fig1_mutex[SYNC_FIG1_STEPS] = {0, 1, 2, 3, 1, 0, 3, 2};
/* The mutexes each side holds between cycles (bit i = mutex i). */
static const unsigned sync_fig1_initial[2] = {0x5u, 0xau};

/* Side `side`'s operation at step h: unlock when it sends, lock when it
 * receives; *held tracks what the thread owns, so it can release exactly
 * that at a stop or after an error. */
static inline int sync_fig1_step(pthread_mutex_t *m, unsigned h, int side, unsigned *held)
{
    unsigned i = sync_fig1_mutex[h];
    int rc;
    if ((int)(h & 1u) == side) {
        rc = pthread_mutex_unlock(&m[i]);
        if (rc == 0)
            *held &= ~(1u << i);
    } else {
        rc = pthread_mutex_lock(&m[i]);
        if (rc == 0)
            *held |= 1u << i;
    }
    return rc;
}

static inline int sync_fig1_acquire_initial(pthread_mutex_t *m, int side, unsigned *held)
{
    for (unsigned i = 0; i < 4; i++) {
        if (!(sync_fig1_initial[side] & (1u << i)))
            continue;
        int rc = pthread_mutex_lock(&m[i]);
        if (rc != 0)
            return rc;
        *held |= 1u << i;
    }
    return 0;
}

/* Unlocks whatever the thread holds; returns the first error. */
static inline int sync_fig1_release_all(pthread_mutex_t *m, unsigned *held)
{
    int first = 0;
    for (unsigned i = 0; i < 4; i++) {
        if (!(*held & (1u << i)))
            continue;
        int rc = pthread_mutex_unlock(&m[i]);
        if (rc != 0 && first == 0)
            first = rc;
        *held &= ~(1u << i);
    }
    return first;
}

/* ---------------------------------------------------- the array passes */

/* The seed measures the lock and unlock overheads one at a time over a
 * large array: consecutive operations touch different mutexes, so the CPU
 * cannot overlap one with the next as it can when the same mutex is locked
 * and unlocked in a tight loop (the seed's ILP remark). */
typedef struct {
    tl_ctx *ctx;
    pthread_mutex_t *m;
    size_t n;
    int rc;                /* first error of a pass */
    uint64_t bad_state;    /* mutexes found in the wrong state after a pass */
    uint64_t verified;     /* mutexes whose state was verified */
} sync_mutex_array;

static inline int sync_mutex_array_init(tl_ctx *ctx, sync_mutex_array *a, size_t n)
{
    memset(a, 0, sizeof *a);
    a->ctx = ctx;
    a->m = calloc(n, sizeof *a->m);
    if (!a->m) {
        tl_fail(ctx, "cannot allocate %zu mutexes", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int rc = pthread_mutex_init(&a->m[i], NULL);
        if (rc != 0) {
            a->n = i;
            tl_fail(ctx, "pthread_mutex_init: %s", strerror(rc));
            return -1;
        }
    }
    a->n = n;
    return 0;
}

static inline void sync_mutex_array_destroy(sync_mutex_array *a)
{
    for (size_t i = 0; i < a->n; i++)
        pthread_mutex_destroy(&a->m[i]);
    free(a->m);
    a->m = NULL;
    a->n = 0;
}

/* Passes over the first n mutexes; return the OR of the results (any
 * nonzero means some call failed, and the caller reports it). */
static inline int sync_mutex_lock_pass(pthread_mutex_t *m, size_t n)
{
    int r = 0;
    for (size_t i = 0; i < n; i++)
        r |= pthread_mutex_lock(&m[i]);
    return r;
}

static inline int sync_mutex_unlock_pass(pthread_mutex_t *m, size_t n)
{
    int r = 0;
    for (size_t i = 0; i < n; i++)
        r |= pthread_mutex_unlock(&m[i]);
    return r;
}

/* Proves a pass did what it claims: after a lock pass every mutex is busy
 * for trylock, after an unlock pass every one is free.  Untimed. */
static inline void sync_mutex_array_verify(sync_mutex_array *a, int expect_locked)
{
    for (size_t i = 0; i < a->n; i++) {
        int rc = pthread_mutex_trylock(&a->m[i]);
        if (rc == 0)
            pthread_mutex_unlock(&a->m[i]);
        if (expect_locked ? rc != EBUSY : rc != 0)
            a->bad_state++;
    }
    a->verified += a->n;
}

static inline double sync_mutex_array_timing(sync_mutex_array *a, uint64_t passes, int time_lock)
{
    uint64_t ticks = 0;
    int r = 0;
    for (uint64_t p = 0; p < passes; p++) {
        uint64_t t0 = 0;
        if (time_lock)
            t0 = tl_now();
        r |= sync_mutex_lock_pass(a->m, a->n);
        if (time_lock)
            ticks += tl_now() - t0;
        if (p + 1 == passes && r == 0)
            sync_mutex_array_verify(a, 1);
        if (!time_lock)
            t0 = tl_now();
        r |= sync_mutex_unlock_pass(a->m, a->n);
        if (!time_lock)
            ticks += tl_now() - t0;
    }
    if (r != 0 && a->rc == 0)
        a->rc = r;
    if (a->rc != 0) {
        tl_fail(a->ctx, "a %s pass failed (OR of the results: %d)", time_lock ? "lock" : "unlock", a->rc);
        return -1;
    }
    sync_mutex_array_verify(a, 0);
    return tl_ticks_to_ns(ticks);
}

/* Timing functions: iterations are passes; the other pass of each
 * iteration runs outside the timed region. */
static inline double sync_time_lock_array(void *arg, uint64_t passes)
{
    return sync_mutex_array_timing(arg, passes, 1);
}

static inline double sync_time_unlock_array(void *arg, uint64_t passes)
{
    return sync_mutex_array_timing(arg, passes, 0);
}

static inline void sync_mutex_array_check(tl_ctx *ctx, const sync_mutex_array *a)
{
    tl_check(ctx, "states", a->bad_state == 0, (double)a->verified,
             "%llu of %llu mutexes were in the wrong state after a lock (busy expected) or unlock (free "
             "expected) pass",
             (unsigned long long)a->bad_state, (unsigned long long)a->verified);
    tl_extra_num(ctx, "array_size", (double)a->n);
}

#endif
