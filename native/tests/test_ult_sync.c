/* test_ult_sync.c - libthreadlab-ult blocking primitives: they block the
 * ULT, never the VP, and keep their semantics (mutual exclusion, no lost
 * signals, FIFO semaphore hand-off, one serial thread per barrier round,
 * sleep durations) on one VP and on several. */
#define _GNU_SOURCE
#include "check_ult.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void join_all(tl_ult_t *t, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(tl_ult_join(t[i], NULL) == 0);
}

/* ---- mutex --------------------------------------------------------------------- */

static tl_ult_mutex mtx = TL_ULT_MUTEX_INITIALIZER;
static long plain_counter; /* protected by mtx only: TSan checks the HB edges */

static void *mutex_worker(void *arg)
{
    int n = (int)(intptr_t)arg;
    for (int i = 0; i < n; i++) {
        ACHECK(tl_ult_mutex_lock(&mtx) == 0);
        long v = plain_counter;
        if (i % 16 == 0)
            tl_ult_yield(); /* contention while holding it */
        plain_counter = v + 1;
        ACHECK(tl_ult_mutex_unlock(&mtx) == 0);
    }
    return NULL;
}

static void test_mutex_counter(int nthreads, int each)
{
    tl_ult_t t[64];
    plain_counter = 0;
    for (int i = 0; i < nthreads; i++)
        CHECK(tl_ult_create(&t[i], NULL, mutex_worker, (void *)(intptr_t)each) == 0);
    join_all(t, nthreads);
    CHECK(plain_counter == (long)nthreads * each);
    CHECK(tl_ult_mutex_destroy(&mtx) == 0);
}

/* One VP: a thread blocked on the mutex must not block the VP. */
static _Atomic int bystander_ran;
static _Atomic int holder_step;

static void *holder(void *arg)
{
    (void)arg;
    ACHECK(tl_ult_mutex_lock(&mtx) == 0);
    atomic_store(&holder_step, 1);
    while (atomic_load(&bystander_ran) == 0)
        tl_ult_yield(); /* the waiter is parked: the bystander gets the VP */
    ACHECK(tl_ult_mutex_unlock(&mtx) == 0);
    return NULL;
}

static void *waiter(void *arg)
{
    (void)arg;
    ACHECK(tl_ult_mutex_trylock(&mtx) == EBUSY);
    ACHECK(tl_ult_mutex_lock(&mtx) == 0); /* parks */
    ACHECK(atomic_load(&bystander_ran) == 1);
    ACHECK(tl_ult_mutex_unlock(&mtx) == 0);
    return NULL;
}

static void *bystander(void *arg)
{
    (void)arg;
    atomic_store(&bystander_ran, 1);
    return NULL;
}

static void test_mutex_blocks_ult_only(void)
{
    tl_ult_t h, w, b;
    CHECK(tl_ult_create(&h, NULL, holder, NULL) == 0);
    tl_ult_yield(); /* holder takes the lock */
    CHECK(atomic_load(&holder_step) == 1);
    CHECK(tl_ult_create(&w, NULL, waiter, NULL) == 0);
    CHECK(tl_ult_create(&b, NULL, bystander, NULL) == 0);
    CHECK(tl_ult_join(w, NULL) == 0);
    CHECK(tl_ult_join(h, NULL) == 0);
    CHECK(tl_ult_join(b, NULL) == 0);
    CHECK(tl_ult_mutex_trylock(&mtx) == 0);
    CHECK(tl_ult_mutex_trylock(&mtx) == EBUSY);
    CHECK(tl_ult_mutex_unlock(&mtx) == 0);
}

/* ---- condition variable: bounded buffer ------------------------------------------------ */

#define QCAP 8
static struct {
    tl_ult_mutex m;
    tl_ult_cond not_full, not_empty;
    long buf[QCAP];
    int head, count;
} q = {TL_ULT_MUTEX_INITIALIZER, TL_ULT_COND_INITIALIZER, TL_ULT_COND_INITIALIZER, {0}, 0, 0};

static _Atomic long consumed_sum;

static void *producer(void *arg)
{
    int n = (int)(intptr_t)arg;
    for (int i = 1; i <= n; i++) {
        tl_ult_mutex_lock(&q.m);
        while (q.count == QCAP)
            tl_ult_cond_wait(&q.not_full, &q.m);
        q.buf[(q.head + q.count) % QCAP] = i;
        q.count++;
        tl_ult_cond_signal(&q.not_empty);
        tl_ult_mutex_unlock(&q.m);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    int n = (int)(intptr_t)arg;
    long sum = 0;
    for (int i = 0; i < n; i++) {
        tl_ult_mutex_lock(&q.m);
        while (q.count == 0)
            tl_ult_cond_wait(&q.not_empty, &q.m);
        sum += q.buf[q.head];
        q.head = (q.head + 1) % QCAP;
        q.count--;
        tl_ult_cond_signal(&q.not_full);
        tl_ult_mutex_unlock(&q.m);
    }
    atomic_fetch_add(&consumed_sum, sum);
    return NULL;
}

static void test_bounded_buffer(int nprod, int ncons, int per_producer)
{
    tl_ult_t t[32];
    int total = nprod * per_producer;
    atomic_store(&consumed_sum, 0);
    for (int i = 0; i < ncons; i++)
        CHECK(tl_ult_create(&t[i], NULL, consumer, (void *)(intptr_t)(total / ncons)) == 0);
    for (int i = 0; i < nprod; i++)
        CHECK(tl_ult_create(&t[ncons + i], NULL, producer, (void *)(intptr_t)per_producer) == 0);
    join_all(t, nprod + ncons);
    CHECK(atomic_load(&consumed_sum) == (long)nprod * per_producer * (per_producer + 1) / 2);
    CHECK(q.count == 0);
    CHECK(tl_ult_cond_destroy(&q.not_full) == 0);
}

static tl_ult_cond gate_cond = TL_ULT_COND_INITIALIZER;
static tl_ult_mutex gate_mtx = TL_ULT_MUTEX_INITIALIZER;
static int gate_open;
static _Atomic int gate_waiting, gate_passed;

static void *gate_waiter(void *arg)
{
    (void)arg;
    tl_ult_mutex_lock(&gate_mtx);
    atomic_fetch_add(&gate_waiting, 1);
    while (!gate_open)
        tl_ult_cond_wait(&gate_cond, &gate_mtx);
    tl_ult_mutex_unlock(&gate_mtx);
    atomic_fetch_add(&gate_passed, 1);
    return NULL;
}

static void test_broadcast(int n)
{
    tl_ult_t t[64];
    gate_open = 0;
    atomic_store(&gate_waiting, 0);
    atomic_store(&gate_passed, 0);
    CHECK(tl_ult_cond_signal(&gate_cond) == 0); /* no waiter: no effect */
    for (int i = 0; i < n; i++)
        CHECK(tl_ult_create(&t[i], NULL, gate_waiter, NULL) == 0);
    while (atomic_load(&gate_waiting) < n)
        tl_ult_yield();
    tl_ult_usleep(200);
    CHECK(atomic_load(&gate_passed) == 0);
    tl_ult_mutex_lock(&gate_mtx);
    gate_open = 1;
    tl_ult_cond_broadcast(&gate_cond);
    tl_ult_mutex_unlock(&gate_mtx);
    join_all(t, n);
    CHECK(atomic_load(&gate_passed) == n);
}

/* ---- semaphore ------------------------------------------------------------------------------- */

static tl_ult_sem sem;
static int fifo_order[16];
static _Atomic int fifo_n;

static void *sem_fifo_waiter(void *arg)
{
    ACHECK(tl_ult_sem_wait(&sem) == 0);
    fifo_order[atomic_fetch_add(&fifo_n, 1)] = (int)(intptr_t)arg;
    return NULL;
}

static void test_sem_fifo_one_vp(void)
{
    tl_ult_t t[8];
    CHECK(tl_ult_sem_init(&sem, 2) == 0);
    CHECK(tl_ult_sem_trywait(&sem) == 0);
    CHECK(tl_ult_sem_wait(&sem) == 0);
    CHECK(tl_ult_sem_trywait(&sem) == EAGAIN);
    CHECK(tl_ult_sem_getvalue(&sem) == 0);
    atomic_store(&fifo_n, 0);
    for (int i = 0; i < 8; i++) {
        CHECK(tl_ult_create(&t[i], NULL, sem_fifo_waiter, (void *)(intptr_t)i) == 0);
        tl_ult_yield(); /* i parks before i+1 starts */
    }
    CHECK(atomic_load(&fifo_n) == 0);
    /* each post grants the oldest waiter; let it run before the next one */
    for (int i = 0; i < 8; i++) {
        CHECK(tl_ult_sem_post(&sem) == 0);
        while (atomic_load(&fifo_n) == i)
            tl_ult_yield();
    }
    join_all(t, 8);
    int ok = atomic_load(&fifo_n) == 8;
    for (int i = 0; i < 8; i++)
        ok &= fifo_order[i] == i;
    CHECK(ok);
    CHECK(tl_ult_sem_getvalue(&sem) == 0); /* units went to the waiters */
    CHECK(tl_ult_sem_destroy(&sem) == 0);
    CHECK(tl_ult_sem_init(&sem, -1) == EINVAL);
}

static _Atomic long sem_taken;

static void *sem_consumer(void *arg)
{
    int n = (int)(intptr_t)arg;
    for (int i = 0; i < n; i++) {
        ACHECK(tl_ult_sem_wait(&sem) == 0);
        atomic_fetch_add(&sem_taken, 1);
    }
    return NULL;
}

static void *sem_external_poster(void *arg)
{
    int n = (int)(intptr_t)arg;
    for (int i = 0; i < n; i++)
        tl_ult_sem_post(&sem);
    return NULL;
}

static void test_sem_counting(int nthreads, int each)
{
    tl_ult_t t[32];
    CHECK(tl_ult_sem_init(&sem, 0) == 0);
    atomic_store(&sem_taken, 0);
    for (int i = 0; i < nthreads; i++)
        CHECK(tl_ult_create(&t[i], NULL, sem_consumer, (void *)(intptr_t)each) == 0);
    pthread_t p;
    int half = nthreads * each / 2;
    CHECK(pthread_create(&p, NULL, sem_external_poster, (void *)(intptr_t)half) == 0);
    for (int i = 0; i < nthreads * each - half; i++) {
        tl_ult_sem_post(&sem);
        if (i % 32 == 0)
            tl_ult_yield();
    }
    join_all(t, nthreads);
    pthread_join(p, NULL);
    CHECK(atomic_load(&sem_taken) == (long)nthreads * each);
    CHECK(tl_ult_sem_getvalue(&sem) == 0);
}

/* ---- barrier --------------------------------------------------------------------------------- */

static tl_ult_barrier bar;
static int bar_slots[16][64];
static _Atomic int bar_serials[64];

static void *bar_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int round = 0; round < 64; round++) {
        bar_slots[id][round] = round + 1;
        int r = tl_ult_barrier_wait(&bar);
        ACHECK(r == 0 || r == TL_ULT_BARRIER_SERIAL_THREAD);
        if (r == TL_ULT_BARRIER_SERIAL_THREAD)
            atomic_fetch_add(&bar_serials[round], 1);
        /* everyone wrote this round before anyone left it */
        for (int k = 0; k < (int)bar.count; k++)
            ACHECK(bar_slots[k][round] == round + 1);
    }
    return NULL;
}

static void test_barrier(int n)
{
    tl_ult_t t[16];
    memset(bar_slots, 0, sizeof bar_slots);
    for (int r = 0; r < 64; r++)
        atomic_store(&bar_serials[r], 0);
    CHECK(tl_ult_barrier_init(&bar, 0) == EINVAL);
    CHECK(tl_ult_barrier_init(&bar, (unsigned)n) == 0);
    for (int i = 0; i < n; i++)
        CHECK(tl_ult_create(&t[i], NULL, bar_worker, (void *)(intptr_t)i) == 0);
    join_all(t, n);
    int ok = 1;
    for (int r = 0; r < 64; r++)
        ok &= atomic_load(&bar_serials[r]) == 1;
    CHECK(ok);
    CHECK(tl_ult_barrier_destroy(&bar) == 0);
    tl_ult_barrier one;
    CHECK(tl_ult_barrier_init(&one, 1) == 0);
    CHECK(tl_ult_barrier_wait(&one) == TL_ULT_BARRIER_SERIAL_THREAD);
}

/* ---- sleep ------------------------------------------------------------------------------------ */

static _Atomic int ticks;
static int wake_order[8];
static _Atomic int nwoken;

static void *sleeper(void *arg)
{
    uint64_t us = (uint64_t)(intptr_t)arg;
    uint64_t t0 = now_ns();
    ACHECK(tl_ult_usleep(us) == 0);
    ACHECK(now_ns() - t0 >= us * 1000);
    wake_order[atomic_fetch_add(&nwoken, 1)] = (int)us;
    return NULL;
}

static void *ticker(void *arg)
{
    (void)arg;
    while (atomic_load(&nwoken) < 4) {
        atomic_fetch_add(&ticks, 1);
        tl_ult_yield();
    }
    return NULL;
}

static void test_sleep_one_vp(void)
{
    tl_ult_t t[5];
    const int us[4] = {4000 * SCALE, 1000 * SCALE, 3000 * SCALE, 2000 * SCALE};
    atomic_store(&nwoken, 0);
    atomic_store(&ticks, 0);
    for (int i = 0; i < 4; i++)
        CHECK(tl_ult_create(&t[i], NULL, sleeper, (void *)(intptr_t)us[i]) == 0);
    CHECK(tl_ult_create(&t[4], NULL, ticker, NULL) == 0);
    join_all(t, 5);
    if (wake_order[0] != 1000 * SCALE || wake_order[3] != 4000 * SCALE)
        fprintf(stderr, "wake order %d %d %d %d\n", wake_order[0], wake_order[1], wake_order[2], wake_order[3]);
    CHECK(wake_order[0] == 1000 * SCALE && wake_order[1] == 2000 * SCALE &&
          wake_order[2] == 3000 * SCALE && wake_order[3] == 4000 * SCALE);
    CHECK(atomic_load(&ticks) > 10); /* the VP kept running the ticker */
    uint64_t t0 = now_ns();
    CHECK(tl_ult_sleep_ns(1500000) == 0); /* the primordial ULT sleeps too */
    CHECK(now_ns() - t0 >= 1500000);
}

/* ---- outside a ULT ------------------------------------------------------------------------------ */

static void *external_checks(void *arg)
{
    (void)arg;
    int bad = 0;
    bad |= tl_ult_mutex_lock(&mtx) != EPERM; /* held by the main ULT */
    bad |= tl_ult_sem_wait(&sem) != EPERM;   /* count 0 */
    bad |= tl_ult_cond_wait(&gate_cond, &gate_mtx) != EPERM;
    bad |= tl_ult_barrier_wait(&bar) != -EPERM;
    bad |= tl_ult_sleep_ns(1000) != 0; /* nanosleep */
    return (void *)(intptr_t)bad;
}

static void test_external_context(void)
{
    CHECK(tl_ult_mutex_lock(&mtx) == 0);
    CHECK(tl_ult_sem_init(&sem, 0) == 0);
    CHECK(tl_ult_barrier_init(&bar, 2) == 0);
    pthread_t p;
    void *r = NULL;
    CHECK(pthread_create(&p, NULL, external_checks, NULL) == 0);
    pthread_join(p, &r); /* blocks VP 0 briefly; nothing else runs */
    CHECK(r == NULL);
    CHECK(tl_ult_mutex_unlock(&mtx) == 0);
}

int main(void)
{
    alarm(100);
    ult_test_start(1);
    test_mutex_blocks_ult_only();
    test_mutex_counter(8, 2000 / SCALE);
    test_bounded_buffer(3, 2, 3000 / SCALE);
    test_broadcast(20);
    test_sem_fifo_one_vp();
    test_sem_counting(4, 500 / SCALE);
    test_barrier(8);
    test_sleep_one_vp();
    test_external_context();
    CHECK(tl_ult_finalize() == 0);

    ult_test_start(4);
    test_mutex_counter(32, 3000 / SCALE);
    test_bounded_buffer(6, 4, 4000 / SCALE);
    test_broadcast(50);
    test_sem_counting(16, 1000 / SCALE);
    test_barrier(16);
    CHECK(tl_ult_finalize() == 0);

    CHECK(atomic_load(&async_failures) == 0);
    return check_report("ult.sync");
}
