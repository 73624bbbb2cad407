/*
 * lock.c - OpenMP locks on 4-byte words: the runtime's own lock
 * (tlg_lock_word: threadlab/word_lock.h, 0 free, 1 held, 2 held and maybe
 * waited for, sleeping through tlg_wait_word and woken by tl_ult_wake),
 * and the omp_*lock API in both of libgomp's symbol versions:
 *
 *   OMP_3.0 (the default): omp_lock_t is the word; omp_nest_lock_t is
 *     {word, count, owner} where the owner is the task that holds it
 *     (OpenMP 3.0: nestable locks belong to tasks);
 *   OMP_1.0 (binaries built before GCC 4.4): omp_lock_t is the same word;
 *     omp_nest_lock_t is {owner, count} where the owner is a thread.
 *
 * A ULT that waits parks (its VP runs other ULTs); a kernel thread that is
 * not a ULT spins, yields, then sleeps briefly in turns.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <omp.h>
#include <string.h>

#include "threadlab/word_lock.h"

/* No wake-up is lost (the argument of word_lock.h): a ULT parks in
 * tl_ult_wait, which compares the word with 2 under the lock of the word's
 * bucket and releases it only once the ULT is queued, and tl_ult_wake
 * takes that bucket lock after the unlock's exchange; a kernel thread
 * never sleeps past a change of the word (it polls it between naps).
 * tl_ult_wake touches its bucket, never the word: an unlocker whose lock
 * the next taker has already destroyed and freed reads no freed memory. */
static void wait_word(_Atomic uint32_t *w, uint32_t val, void *ctx)
{
    (void)ctx;
    tlg_wait_word(w, val);
}

static void wake_word(_Atomic uint32_t *w, void *ctx)
{
    (void)ctx;
    tl_ult_wake(w, 1);
}

void tlg_lock_word(_Atomic uint32_t *w)
{
    if (TLG_LIKELY(tl_word_trylock(w)))
        return;
    /* A short spin (critical sections are usually short), only while the
     * holder may be running on another VP and this VP has nothing else to
     * run; tlg_wait_word then spins as OMP_WAIT_POLICY says. */
    int spins = tl_ult_active_vps() > 1 && !tl_ult_local_ready() ? 100 : 0;
    tl_word_lock_contended(w, spins, wait_word, NULL);
}

void tlg_unlock_word(_Atomic uint32_t *w)
{
    tl_word_unlock(w, wake_word, NULL);
}

int tlg_trylock_word(_Atomic uint32_t *w)
{
    return tl_word_trylock(w);
}

/* ---- OMP_3.0 ---------------------------------------------------------------- */

/* The owner is read by threads that do not hold the lock (is it me?):
 * an atomic, relaxed. Only the holder writes it and count. */
typedef struct {
    _Atomic uint32_t word;
    int count;
    void *_Atomic owner;
} nest_lock;

_Static_assert(sizeof(omp_lock_t) >= sizeof(uint32_t), "omp_lock_t holds a lock word");
_Static_assert(sizeof(omp_nest_lock_t) >= sizeof(nest_lock), "omp_nest_lock_t holds a nest lock");

#define WORD(lock) ((_Atomic uint32_t *)(void *)(lock))
#define NEST(lock) ((nest_lock *)(void *)(lock))

/* The owner of a nestable lock: the task running now (a task whose
 * descriptor moved from its creator's stack keeps its first address as
 * its key, task.c). */
static void *current_task(void)
{
    tlg_task *t = tlg_self()->task;
    return t->key ? t->key : t;
}

#define V30(name) __attribute__((symver(name "@@OMP_3.0")))
#define V10(name) __attribute__((symver(name "@OMP_1.0")))

TLG_EXPORT V30("omp_init_lock") void tlg_init_lock_30(omp_lock_t *lock)
{
    atomic_store_explicit(WORD(lock), 0, RLX);
}

TLG_EXPORT V30("omp_destroy_lock") void tlg_destroy_lock_30(omp_lock_t *lock)
{
    (void)lock;
}

TLG_EXPORT V30("omp_set_lock") void tlg_set_lock_30(omp_lock_t *lock)
{
    tlg_lock_word(WORD(lock));
}

TLG_EXPORT V30("omp_unset_lock") void tlg_unset_lock_30(omp_lock_t *lock)
{
    tlg_unlock_word(WORD(lock));
}

TLG_EXPORT V30("omp_test_lock") int tlg_test_lock_30(omp_lock_t *lock)
{
    return tlg_trylock_word(WORD(lock));
}

TLG_EXPORT V30("omp_init_nest_lock") void tlg_init_nest_lock_30(omp_nest_lock_t *lock)
{
    memset(lock, 0, sizeof *lock);
}

TLG_EXPORT V30("omp_destroy_nest_lock") void tlg_destroy_nest_lock_30(omp_nest_lock_t *lock)
{
    (void)lock;
}

TLG_EXPORT V30("omp_set_nest_lock") void tlg_set_nest_lock_30(omp_nest_lock_t *lock)
{
    nest_lock *l = NEST(lock);
    void *me = current_task();
    if (atomic_load_explicit(&l->owner, RLX) == me) {
        l->count++;
        return;
    }
    tlg_lock_word(&l->word);
    atomic_store_explicit(&l->owner, me, RLX);
    l->count = 1;
}

TLG_EXPORT V30("omp_unset_nest_lock") void tlg_unset_nest_lock_30(omp_nest_lock_t *lock)
{
    nest_lock *l = NEST(lock);
    if (--l->count == 0) {
        atomic_store_explicit(&l->owner, NULL, RLX);
        tlg_unlock_word(&l->word);
    }
}

TLG_EXPORT V30("omp_test_nest_lock") int tlg_test_nest_lock_30(omp_nest_lock_t *lock)
{
    nest_lock *l = NEST(lock);
    void *me = current_task();
    if (atomic_load_explicit(&l->owner, RLX) == me)
        return ++l->count;
    if (!tlg_trylock_word(&l->word))
        return 0;
    atomic_store_explicit(&l->owner, me, RLX);
    l->count = 1;
    return 1;
}

/* ---- OMP_1.0: simple locks are the same word; nest locks are owned by
 * threads, {owner, count} with a small nonzero thread number ---------------- */

typedef struct {
    _Atomic int owner;
    int count;
} nest_lock_25;

static _Atomic int next_uid = 1;

/* A number for the calling OpenMP thread, unique while it exists. */
static int thread_uid(void)
{
    tlg_thread *thr = tlg_self();
    if (!thr->uid)
        thr->uid = atomic_fetch_add_explicit(&next_uid, 1, RLX);
    return thr->uid;
}

TLG_EXPORT V10("omp_init_lock") void tlg_init_lock_25(omp_lock_t *lock)
{
    tlg_init_lock_30(lock); /* the same word in both versions */
}

TLG_EXPORT V10("omp_destroy_lock") void tlg_destroy_lock_25(omp_lock_t *lock)
{
    tlg_destroy_lock_30(lock); /* the same word in both versions */
}

TLG_EXPORT V10("omp_set_lock") void tlg_set_lock_25(omp_lock_t *lock)
{
    tlg_set_lock_30(lock); /* the same word in both versions */
}

TLG_EXPORT V10("omp_unset_lock") void tlg_unset_lock_25(omp_lock_t *lock)
{
    tlg_unset_lock_30(lock); /* the same word in both versions */
}

TLG_EXPORT V10("omp_test_lock") int tlg_test_lock_25(omp_lock_t *lock)
{
    return tlg_test_lock_30(lock); /* the same word in both versions */
}

TLG_EXPORT V10("omp_init_nest_lock") void tlg_init_nest_lock_25(omp_nest_lock_t *lock)
{
    memset(lock, 0, sizeof(nest_lock_25));
}

TLG_EXPORT V10("omp_destroy_nest_lock") void tlg_destroy_nest_lock_25(omp_nest_lock_t *lock)
{
    (void)lock;
}

TLG_EXPORT V10("omp_set_nest_lock") void tlg_set_nest_lock_25(omp_nest_lock_t *lock)
{
    nest_lock_25 *l = (nest_lock_25 *)(void *)lock;
    int me = thread_uid();
    for (;;) {
        int o = 0;
        if (atomic_compare_exchange_strong_explicit(&l->owner, &o, me, ACQ, RLX)) {
            l->count = 1;
            return;
        }
        if (o == me) {
            l->count++;
            return;
        }
        tlg_wait_word((_Atomic uint32_t *)(void *)&l->owner, (uint32_t)o);
    }
}

TLG_EXPORT V10("omp_unset_nest_lock") void tlg_unset_nest_lock_25(omp_nest_lock_t *lock)
{
    nest_lock_25 *l = (nest_lock_25 *)(void *)lock;
    if (--l->count == 0) {
        atomic_store_explicit(&l->owner, 0, REL);
        tl_ult_wake((_Atomic uint32_t *)(void *)&l->owner, 1);
    }
}

TLG_EXPORT V10("omp_test_nest_lock") int tlg_test_nest_lock_25(omp_nest_lock_t *lock)
{
    nest_lock_25 *l = (nest_lock_25 *)(void *)lock;
    int me = thread_uid(), o = 0;
    if (atomic_compare_exchange_strong_explicit(&l->owner, &o, me, ACQ, RLX)) {
        l->count = 1;
        return 1;
    }
    return o == me ? ++l->count : 0;
}
