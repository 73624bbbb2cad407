/*
 * sync_mutex.c - mutex that parks the ULT, not the VP.
 *
 * The lock is threadlab/word_lock.h on state (0 free, 1 locked, 2 locked
 * and maybe waiters: Drepper's futex mutex), with the mutex's own wait
 * queue in place of the futex: the uncontended paths are one CAS (lock)
 * and one exchange (unlock). The woken waiter is handed to the unlocker's
 * next-to-run slot and competes again (barging allowed: no convoys).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>

#include "threadlab/word_lock.h"

int tl_ult_mutex_init(tl_ult_mutex *m)
{
    atomic_init(&m->state, 0);
    atomic_init(&m->qlock, 0);
    m->head = m->tail = NULL;
    return 0;
}

int tl_ult_mutex_destroy(tl_ult_mutex *m)
{
    return atomic_load_explicit(&m->state, ACQ) ? EBUSY : 0;
}

int tl_ult_mutex_trylock(tl_ult_mutex *m)
{
    return tl_word_trylock(&m->state) ? 0 : EBUSY;
}

struct mutex_waiter {
    tl_ult_mutex *m;
    tlu_thread *self;
};

/* The word lock's wait. No wake-up is lost (the argument of word_lock.h):
 * the state is compared with 2 under qlock, and the waiter releases qlock
 * only after it is queued and its context saved (POST_UNLOCK); the
 * unlocker takes qlock after its exchange of 2 for 0. If the unlocker's
 * qlock section came first, qlock orders its exchange before this load,
 * which then sees 0 or a later holder's value (a later 2: that holder's
 * unlock comes after, and pops this waiter); else the unlocker pops a
 * waiter queued before it. */
static void mutex_wait(_Atomic uint32_t *state, uint32_t val, void *ctx)
{
    struct mutex_waiter *w = ctx;
    tlu_spin_lock(&w->m->qlock);
    if (atomic_load_explicit(state, RLX) != val) {
        tlu_spin_unlock(&w->m->qlock);
        return;
    }
    tlu_waitq_push(&w->m->head, &w->m->tail, w->self);
    tlu_sched_park(w->self, POST_UNLOCK, &w->m->qlock);
}

static TL_NOINLINE int mutex_lock_slow(tl_ult_mutex *m)
{
    enum { SPINS = 64 };
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    if (!cur) /* it cannot park: a spin, then EPERM */
        return tl_word_lock_spin(&m->state, SPINS) ? 0 : EPERM;
    /* Spinning helps only when the holder can be running on another VP:
     * with one VP it runs only after this thread parks (measured by
     * threads.mutex_pingpong: 900 ns per handoff with the spin, 60 without). */
    struct mutex_waiter w = {m, cur};
    tl_word_lock_contended(&m->state, tlu_rt.nvps == 1 ? 0 : SPINS, mutex_wait, &w);
    return 0;
}

int tl_ult_mutex_lock(tl_ult_mutex *m)
{
    if (TLU_LIKELY(tl_word_trylock(&m->state)))
        return 0;
    return mutex_lock_slow(m);
}

static TL_NOINLINE void mutex_wake(_Atomic uint32_t *state, void *ctx)
{
    (void)state;
    tl_ult_mutex *m = ctx;
    tlu_spin_lock(&m->qlock);
    tlu_thread *t = tlu_waitq_pop(&m->head, &m->tail);
    tlu_spin_unlock(&m->qlock);
    if (t)
        tlu_sched_ready(tlu_vp_self(), t, 1);
}

int tl_ult_mutex_unlock(tl_ult_mutex *m)
{
    tl_word_unlock(&m->state, mutex_wake, m);
    return 0;
}
