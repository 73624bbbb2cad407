/*
 * sync_mutex.c - mutex that parks the ULT, not the VP.
 *
 * state: 0 free, 1 locked, 2 locked and maybe waiters (Drepper, "Futexes
 * are tricky", mutex 3, with a ULT wait queue in place of the futex). The
 * uncontended paths are one CAS (lock) and one exchange (unlock). A waiter
 * sets 2 under the queue lock before it enqueues, so an unlocker that sees
 * 2 takes the queue lock after the waiter has enqueued (the waiter releases
 * the queue lock only after its context is saved: POST_UNLOCK). The woken
 * waiter is handed to the unlocker's next-to-run slot and competes again
 * (barging allowed: no convoys).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>

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
    uint32_t z = 0;
    return atomic_compare_exchange_strong_explicit(&m->state, &z, 1, ACQ, RLX) ? 0 : EBUSY;
}

static TL_NOINLINE int mutex_lock_slow(tl_ult_mutex *m)
{
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    /* Spinning helps only when the holder can be running on another VP:
     * with one VP it runs only after this thread parks (measured by
     * threads.mutex_pingpong: 900 ns per handoff with the spin, 60 without). */
    int spins = cur && tlu_rt.nvps == 1 ? 0 : 64;
    for (int i = 0; i < spins; i++) {
        tl_cpu_relax();
        uint32_t z = 0;
        if (atomic_load_explicit(&m->state, RLX) == 0 &&
            atomic_compare_exchange_strong_explicit(&m->state, &z, 1, ACQ, RLX))
            return 0;
    }
    if (!cur)
        return EPERM;
    for (;;) {
        tlu_spin_lock(&m->qlock);
        if (atomic_exchange_explicit(&m->state, 2, ACQ) == 0) {
            tlu_spin_unlock(&m->qlock);
            return 0;
        }
        tlu_waitq_push(&m->head, &m->tail, cur);
        tlu_sched_park(cur, POST_UNLOCK, &m->qlock);
    }
}

int tl_ult_mutex_lock(tl_ult_mutex *m)
{
    uint32_t z = 0;
    if (TLU_LIKELY(atomic_compare_exchange_strong_explicit(&m->state, &z, 1, ACQ, RLX)))
        return 0;
    return mutex_lock_slow(m);
}

static TL_NOINLINE void mutex_wake(tl_ult_mutex *m)
{
    tlu_spin_lock(&m->qlock);
    tlu_thread *t = tlu_waitq_pop(&m->head, &m->tail);
    tlu_spin_unlock(&m->qlock);
    if (t)
        tlu_sched_ready(tlu_vp_self(), t, 1);
}

int tl_ult_mutex_unlock(tl_ult_mutex *m)
{
    if (TLU_LIKELY(atomic_exchange_explicit(&m->state, 0, REL) == 1))
        return 0;
    mutex_wake(m);
    return 0;
}
