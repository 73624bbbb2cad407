/* test_word_lock.c - threadlab/word_lock.h on its own, with kernel threads:
 * the states the word goes through, a sleeper woken by exactly the unlock
 * that finds it waited for, and mutual exclusion under contention with a
 * futex wait and with a wait that always returns at once (what a wait
 * that wakes early looks like to the lock). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "check.h"
#include "threadlab/rm.h"
#include "threadlab/word_lock.h"

typedef struct {
    _Atomic int waits; /* calls of the wait */
    _Atomic int wakes; /* calls of the wake */
} counts;

static void futex_wait(_Atomic uint32_t *w, uint32_t val, void *ctx)
{
    atomic_fetch_add(&((counts *)ctx)->waits, 1);
    tl_rm_futex_wait((uint32_t *)w, val, UINT64_C(1000000000));
}

static void futex_wake(_Atomic uint32_t *w, void *ctx)
{
    atomic_fetch_add(&((counts *)ctx)->wakes, 1);
    tl_rm_futex_wake((uint32_t *)w, 1);
}

static void yield_wait(_Atomic uint32_t *w, uint32_t val, void *ctx)
{
    (void)w, (void)val;
    atomic_fetch_add(&((counts *)ctx)->waits, 1);
    sched_yield();
}

static void no_wake(_Atomic uint32_t *w, void *ctx)
{
    (void)w;
    atomic_fetch_add(&((counts *)ctx)->wakes, 1);
}

static void test_states(void)
{
    _Atomic uint32_t w = TL_WORD_FREE;
    counts c = {0, 0};
    CHECK(tl_word_trylock(&w));
    CHECK(atomic_load(&w) == TL_WORD_HELD);
    CHECK(!tl_word_trylock(&w));
    CHECK(!tl_word_lock_spin(&w, 10)); /* held throughout: no CAS may succeed */
    tl_word_unlock(&w, no_wake, &c);
    CHECK(atomic_load(&w) == TL_WORD_FREE);
    CHECK(atomic_load(&c.wakes) == 0); /* nobody waited: no call */
    CHECK(tl_word_lock_spin(&w, 1));
    CHECK(atomic_load(&w) == TL_WORD_HELD);
    tl_word_unlock(&w, no_wake, &c);
    CHECK(atomic_load(&c.wakes) == 0);
}

/* ---- one sleeper, woken by the unlock ------------------------------------------ */

static _Atomic uint32_t handoff_word;
static counts handoff_counts; /* the sleeper's calls */
static _Atomic uint32_t seen_after_taking;

static void *sleeper(void *arg)
{
    (void)arg;
    tl_word_lock_contended(&handoff_word, 0, futex_wait, &handoff_counts);
    atomic_store(&seen_after_taking, atomic_load(&handoff_word));
    tl_word_unlock(&handoff_word, futex_wake, &handoff_counts);
    return NULL;
}

static void test_handoff(void)
{
    counts mine = {0, 0};
    CHECK(tl_word_trylock(&handoff_word));
    pthread_t t;
    int created = pthread_create(&t, NULL, sleeper, NULL) == 0;
    CHECK(created);
    if (!created)
        return; /* nobody would wait: the loop below would not end */
    while (atomic_load(&handoff_counts.waits) == 0)
        sched_yield(); /* the sleeper has exchanged 2 in and waits */
    CHECK(atomic_load(&handoff_word) == TL_WORD_WAITED);
    tl_word_unlock(&handoff_word, futex_wake, &mine);
    CHECK(atomic_load(&mine.wakes) == 1);
    pthread_join(t, NULL);
    /* taken by the exchange, the word stays 2 (the taker cannot know that
     * nobody else sleeps), so its unlock wakes once more, needlessly */
    CHECK(atomic_load(&seen_after_taking) == TL_WORD_WAITED);
    CHECK(atomic_load(&handoff_counts.wakes) == 1);
    CHECK(atomic_load(&handoff_word) == TL_WORD_FREE);
}

/* ---- mutual exclusion ---------------------------------------------------------- */

enum { THREADS = 4, EACH = 20000 };

static _Atomic uint32_t counter_word;
static long counter; /* under counter_word only: TSan checks the edges */
static counts counter_counts;
static tl_word_wait_fn *counter_wait;
static tl_word_wake_fn *counter_wake;

static void *incrementer(void *arg)
{
    int spins = (int)(intptr_t)arg;
    for (int i = 0; i < EACH; i++) {
        if (!tl_word_trylock(&counter_word))
            tl_word_lock_contended(&counter_word, spins, counter_wait, &counter_counts);
        long v = counter;
        if (i % 64 == 0)
            sched_yield(); /* others find it held */
        counter = v + 1;
        tl_word_unlock(&counter_word, counter_wake, &counter_counts);
    }
    return NULL;
}

static void test_exclusion(tl_word_wait_fn *wait, tl_word_wake_fn *wake, int spins)
{
    pthread_t t[THREADS];
    counter = 0;
    counter_wait = wait;
    counter_wake = wake;
    atomic_store(&counter_counts.waits, 0);
    atomic_store(&counter_counts.wakes, 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, incrementer, (void *)(intptr_t)spins) == 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK(counter == (long)THREADS * EACH);
    CHECK(atomic_load(&counter_word) == TL_WORD_FREE);
}

int main(void)
{
    test_states();
    test_handoff();
    test_exclusion(futex_wait, futex_wake, 0);
    test_exclusion(futex_wait, futex_wake, 100);
    test_exclusion(yield_wait, no_wake, 0);
    return check_report("word_lock");
}
