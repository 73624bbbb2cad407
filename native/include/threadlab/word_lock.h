/*
 * threadlab/word_lock.h - the lock on one 32-bit word that the runtimes
 * share (internal, header-only): libthreadlab-gomp's lock words (critical
 * sections, omp_lock_t), libthreadlab-spawn's mailbox locks and
 * libthreadlab-ult's tl_ult_mutex.  Each says how a waiter sleeps and how
 * an unlocker wakes one, as constant function pointers to these static
 * inline functions, which the compiler turns into direct calls (or
 * inlines): no indirect call, no macro.
 *
 * The algorithm is mutex 3 of Drepper's "Futexes are tricky": the word is
 * 0 free, 1 held, 2 held and a thread may sleep for it.  Uncontended, lock
 * is one compare-and-swap (0 -> 1) and unlock one exchange (-> 0) that
 * finds 1: no call.  A contended taker spins a little, then exchanges 2 in
 * until it gets 0 back, sleeping while the word is 2; an unlock that finds
 * 2 wakes one sleeper.  A thread that takes the lock by that exchange
 * leaves 2 behind although it may have been the last sleeper: it cannot
 * know, and one needless wake-up is cheaper than a lost one.
 *
 * Why no wake-up is lost, given the contract of wait and wake below:
 * a thread sleeps only after wait saw 2 atomically with its enqueueing
 * (the caller's wait must provide that: a futex compares in the kernel
 * under its bucket lock, a ULT queue under its spin lock), and only the
 * holder's unlock changes a 2 (to 0), then calls wake, whose dequeueing
 * serialises with that enqueueing.  So either the sleeper was queued
 * before the wake (and is woken), or its check came after the unlock's
 * exchange and saw 0 or a later holder's value (it returns; the caller
 * exchanges again): if it saw a later 2, that holder's unlock comes later
 * and wakes.  A woken thread exchanges 2 in before it takes the lock or
 * sleeps again, so a barger that took the lock with 1 meanwhile gets its
 * 2 back and wakes the next sleeper when it unlocks.
 */
#ifndef THREADLAB_WORD_LOCK_H
#define THREADLAB_WORD_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

#include "threadlab/compiler.h"

enum { TL_WORD_FREE = 0, TL_WORD_HELD = 1, TL_WORD_WAITED = 2 };

/* Sleeps while *w == val (that comparison atomic with becoming wakeable
 * by the matching wake), or returns at once when it differs; may return
 * early for any reason: the lock exchanges again. */
typedef void tl_word_wait_fn(_Atomic uint32_t *w, uint32_t val, void *ctx);
/* Makes one thread sleeping in the matching wait on w return (none: no
 * effect).  Called after the word was released: another thread may hold
 * the lock again by then. */
typedef void tl_word_wake_fn(_Atomic uint32_t *w, void *ctx);

/* 1 if the lock was free and is now the caller's: the whole uncontended
 * lock, and the trylock. */
static inline int tl_word_trylock(_Atomic uint32_t *w)
{
    uint32_t expected = TL_WORD_FREE;
    return __builtin_expect(atomic_compare_exchange_strong_explicit(w, &expected, TL_WORD_HELD,
                                                                    memory_order_acquire, memory_order_relaxed),
                            1);
}

/* Up to spins tries to take the lock after a pause each, reading before
 * each compare-and-swap (the line stays shared while the holder works):
 * 1 when taken. */
static inline int tl_word_lock_spin(_Atomic uint32_t *w, int spins)
{
    for (int i = 0; i < spins; i++) {
        tl_cpu_relax();
        if (atomic_load_explicit(w, memory_order_relaxed) == TL_WORD_FREE && tl_word_trylock(w))
            return 1;
    }
    return 0;
}

/* The lock, after tl_word_trylock failed (callers keep that one
 * compare-and-swap inline and this out of line): spins, then sleeps
 * through wait until an exchange finds the word free. */
static inline void tl_word_lock_contended(_Atomic uint32_t *w, int spins, tl_word_wait_fn *wait, void *ctx)
{
    if (tl_word_lock_spin(w, spins))
        return;
    while (atomic_exchange_explicit(w, TL_WORD_WAITED, memory_order_acquire) != TL_WORD_FREE)
        wait(w, TL_WORD_WAITED, ctx);
}

static inline void tl_word_unlock(_Atomic uint32_t *w, tl_word_wake_fn *wake, void *ctx)
{
    if (__builtin_expect(atomic_exchange_explicit(w, TL_WORD_FREE, memory_order_release) == TL_WORD_WAITED, 0))
        wake(w, ctx);
}

#endif
