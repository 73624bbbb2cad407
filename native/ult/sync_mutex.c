/*
 * sync_mutex.c - mutex that parks the ULT, not the VP.
 *
 * The lock is threadlab/word_lock.h on state (0 free, 1 locked, 2 locked
 * and maybe waiters: Drepper's futex mutex), with the parking lot of
 * park.c in place of the futex: the uncontended paths are one CAS (lock)
 * and one exchange (unlock). The waiters sit in the parking lot's bucket
 * of the state's address, not in the mutex: an unlock that finds 2 reads
 * nothing of the mutex after its exchange (the lock may be taken, freed
 * and destroyed by then, as POSIX allows once it is unlocked; a queue in
 * the mutex had the unlocker take its spin lock after that exchange).
 * tl_ult_wake hands the woken waiter to the unlocker's next-to-run slot
 * when it parked there, else to its own VP; it competes again (barging
 * allowed: no convoys).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>

#include "threadlab/word_lock.h"

int tl_ult_mutex_init(tl_ult_mutex *m)
{
    atomic_init(&m->state, 0);
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

/* The word lock's wait: tl_ult_wait compares the state with 2 under the
 * bucket's lock and releases it only after the waiter is queued and its
 * context saved; tl_ult_wake takes that lock after the unlock's exchange
 * (the futex contract of word_lock.h). */
static void mutex_wait(_Atomic uint32_t *state, uint32_t val, void *ctx)
{
    (void)ctx;
    tl_ult_wait(state, val);
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
    tl_word_lock_contended(&m->state, tlu_rt.nvps == 1 ? 0 : SPINS, mutex_wait, NULL);
    return 0;
}

int tl_ult_mutex_lock(tl_ult_mutex *m)
{
    if (TLU_LIKELY(tl_word_trylock(&m->state)))
        return 0;
    return mutex_lock_slow(m);
}

/* Only the address: the bucket of the parking lot, and the waiters' tags
 * compared with it. */
static TL_NOINLINE void mutex_wake(_Atomic uint32_t *state, void *ctx)
{
    (void)ctx;
    tl_ult_wake(state, 1);
}

int tl_ult_mutex_unlock(tl_ult_mutex *m)
{
    tl_word_unlock(&m->state, mutex_wake, NULL);
    return 0;
}
