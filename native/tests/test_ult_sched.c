/* test_ult_sched.c - libthreadlab-ult scheduling under stress: every thread
 * runs exactly once, joins return, work is stolen, and no wake-up is lost
 * when VPs go to sleep and are woken by other VPs or foreign threads. Runs
 * with more VPs than CPUs on purpose (preempted VPs, idle/wake churn). A
 * lost wake-up shows as a hang: the alarm turns it into a failure. */
#define _GNU_SOURCE
#include "check.h"
#include "check_async.h"
#include "threadlab/ult.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define SCALE 16
#elif defined(__SANITIZE_ADDRESS__)
#define SCALE 2
#else
#define SCALE 1
#endif

static void spin_ns(uint64_t ns)
{
    uint64_t end = now_ns() + ns;
    while (now_ns() < end) {
    }
}

/* ---- 1. recursive fork-join tree: every node exactly once ------------------- */

static _Atomic unsigned char *visits;
static int tree_depth;

static void *tree_node(void *arg)
{
    uintptr_t id = (uintptr_t)arg; /* heap numbering: children 2i+1, 2i+2 */
    atomic_fetch_add(&visits[id], 1);
    int depth = 0;
    for (uintptr_t x = id + 1; x > 1; x >>= 1)
        depth++;
    if (depth < tree_depth) {
        tl_ult_t a, b;
        ACHECK(tl_ult_create(&a, NULL, tree_node, (void *)(2 * id + 1)) == 0);
        ACHECK(tl_ult_create(&b, NULL, tree_node, (void *)(2 * id + 2)) == 0);
        if (id % 3 == 0)
            tl_ult_yield(); /* give thieves a chance at a and b */
        void *ra = NULL, *rb = NULL;
        ACHECK(tl_ult_join(b, &rb) == 0); /* b first: a is not on top */
        ACHECK(tl_ult_join(a, &ra) == 0);
        return (void *)(1 + (uintptr_t)ra + (uintptr_t)rb);
    }
    return (void *)1;
}

static void test_tree(int depth)
{
    tree_depth = depth;
    size_t n = ((size_t)2 << depth) - 1;
    visits = calloc(n, 1);
    tl_ult_t root;
    void *count = NULL;
    CHECK(tl_ult_create(&root, NULL, tree_node, (void *)0) == 0);
    CHECK(tl_ult_join(root, &count) == 0);
    CHECK((size_t)(uintptr_t)count == n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += visits[i] != 1;
    CHECK(bad == 0);
    free((void *)visits);
}

/* ---- 2. fan-out of busy threads: other VPs must steal ----------------------- */

static _Atomic int fan_count;
static _Atomic int fan_on_other_vp;

static void *busy(void *arg)
{
    (void)arg;
    spin_ns(20000);
    if (tl_ult_vp_id() != 0)
        atomic_fetch_add(&fan_on_other_vp, 1);
    atomic_fetch_add(&fan_count, 1);
    return NULL;
}

static void test_fanout(int n)
{
    tl_ult_t *t = malloc(sizeof *t * (size_t)n);
    atomic_store(&fan_count, 0);
    atomic_store(&fan_on_other_vp, 0);
    for (int i = 0; i < n; i++)
        CHECK(tl_ult_create(&t[i], NULL, busy, NULL) == 0);
    for (int i = 0; i < n; i++)
        CHECK(tl_ult_join(t[i], NULL) == 0);
    CHECK(atomic_load(&fan_count) == n);
    CHECK(atomic_load(&fan_on_other_vp) > 0);
    free(t);
}

/* ---- 3. semaphore ping-pong pairs, in bursts separated by idle gaps --------- */

struct pair {
    tl_ult_sem ping, pong;
    int rounds;
    _Atomic int done;
};

static void *pinger(void *arg)
{
    struct pair *p = arg;
    for (int i = 0; i < p->rounds; i++) {
        tl_ult_sem_post(&p->ping);
        tl_ult_sem_wait(&p->pong);
    }
    atomic_fetch_add(&p->done, 1);
    return NULL;
}

static void *ponger(void *arg)
{
    struct pair *p = arg;
    for (int i = 0; i < p->rounds; i++) {
        tl_ult_sem_wait(&p->ping);
        if (i % 7 == 0)
            tl_ult_yield();
        tl_ult_sem_post(&p->pong);
    }
    atomic_fetch_add(&p->done, 1);
    return NULL;
}

static void test_pingpong_bursts(int bursts, int npairs, int rounds)
{
    struct pair *pairs = calloc((size_t)npairs, sizeof *pairs);
    tl_ult_t *t = malloc(sizeof *t * 2 * (size_t)npairs);
    int ok = 1;
    for (int b = 0; b < bursts; b++) {
        /* idle gap: every VP spins out and sleeps on its futex */
        tl_ult_usleep(b % 2 ? 300 : 1500);
        for (int i = 0; i < npairs; i++) {
            tl_ult_sem_init(&pairs[i].ping, 0);
            tl_ult_sem_init(&pairs[i].pong, 0);
            pairs[i].rounds = rounds;
            atomic_store(&pairs[i].done, 0);
            CHECK(tl_ult_create(&t[2 * i], NULL, ponger, &pairs[i]) == 0);
            CHECK(tl_ult_create(&t[2 * i + 1], NULL, pinger, &pairs[i]) == 0);
        }
        for (int i = 0; i < 2 * npairs; i++)
            CHECK(tl_ult_join(t[i], NULL) == 0);
        for (int i = 0; i < npairs; i++)
            ok &= atomic_load(&pairs[i].done) == 2 && tl_ult_sem_getvalue(&pairs[i].ping) == 0 &&
                  tl_ult_sem_getvalue(&pairs[i].pong) == 0;
    }
    CHECK(ok);
    free(t);
    free(pairs);
}

/* ---- 4. a foreign kernel thread wakes ULTs (inbox path, sleeping VPs) ------- */

static tl_ult_sem ext_sem;
static _Atomic int ext_got;

static void *ext_waiter(void *arg)
{
    int n = (int)(intptr_t)arg;
    for (int i = 0; i < n; i++) {
        tl_ult_sem_wait(&ext_sem);
        atomic_fetch_add(&ext_got, 1);
    }
    return NULL;
}

static void *ext_poster(void *arg)
{
    int n = (int)(intptr_t)arg;
    for (int i = 0; i < n; i++) {
        tl_ult_sem_post(&ext_sem);
        if (i % 64 == 0) {
            struct timespec ts = {0, 200000}; /* let the VPs fall asleep */
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static void test_external_wakeups(int nwaiters, int each)
{
    tl_ult_sem_init(&ext_sem, 0);
    atomic_store(&ext_got, 0);
    tl_ult_t *t = malloc(sizeof *t * (size_t)nwaiters);
    for (int i = 0; i < nwaiters; i++)
        CHECK(tl_ult_create(&t[i], NULL, ext_waiter, (void *)(intptr_t)each) == 0);
    pthread_t p;
    CHECK(pthread_create(&p, NULL, ext_poster, (void *)(intptr_t)(nwaiters * each)) == 0);
    for (int i = 0; i < nwaiters; i++)
        CHECK(tl_ult_join(t[i], NULL) == 0);
    pthread_join(p, NULL);
    CHECK(atomic_load(&ext_got) == nwaiters * each);
    free(t);
}

/* ---- 5. yield storm with migration under a mutex ------------------------------ */

static tl_ult_mutex storm_lock = TL_ULT_MUTEX_INITIALIZER;
static long storm_counter;
static _Atomic int storm_migrations;

static void *stormer(void *arg)
{
    int n = (int)(intptr_t)arg;
    int last_vp = tl_ult_vp_id();
    for (int i = 0; i < n; i++) {
        tl_ult_mutex_lock(&storm_lock);
        long v = storm_counter;
        if (i % 5 == 0)
            tl_ult_yield(); /* yield while holding the lock: others block */
        storm_counter = v + 1;
        tl_ult_mutex_unlock(&storm_lock);
        tl_ult_yield();
        int vp = tl_ult_vp_id();
        if (vp != last_vp)
            atomic_fetch_add(&storm_migrations, 1);
        last_vp = vp;
    }
    return NULL;
}

static void test_storm(int nthreads, int each)
{
    tl_ult_t *t = malloc(sizeof *t * (size_t)nthreads);
    storm_counter = 0;
    for (int i = 0; i < nthreads; i++)
        CHECK(tl_ult_create(&t[i], NULL, stormer, (void *)(intptr_t)each) == 0);
    for (int i = 0; i < nthreads; i++)
        CHECK(tl_ult_join(t[i], NULL) == 0);
    CHECK(storm_counter == (long)nthreads * each);
    free(t);
}

/* ---- 6. detached threads creating detached threads; finalize waits --------- */

static _Atomic long cascade_done;

static void *cascade(void *arg)
{
    intptr_t level = (intptr_t)arg;
    if (level > 0) {
        tl_ult_attr attr;
        tl_ult_attr_init(&attr);
        attr.detached = 1;
        for (int i = 0; i < 3; i++)
            ACHECK(tl_ult_create(NULL, &attr, cascade, (void *)(level - 1)) == 0);
    }
    atomic_fetch_add(&cascade_done, 1);
    return NULL;
}

int main(void)
{
    alarm(100);
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.nvps = 8; /* 4x oversubscribed on the 2-CPU reference machine */
    cfg.pin = 0;
    CHECK(tl_ult_init(&cfg) == 0);

    test_tree(14 - (SCALE > 1 ? 4 : 0) - (SCALE > 8 ? 2 : 0));
    test_fanout(2000 / SCALE);
    tl_ult_stats st;
    tl_ult_get_stats(&st);
    CHECK(st.steals > 0);
    test_pingpong_bursts(24 / (SCALE > 8 ? 4 : 1), 8, 2000 / SCALE);
    test_external_wakeups(16, 400 / SCALE);
    test_storm(32, 2000 / SCALE);

    /* finalize waits for detached threads, even those still being created */
    atomic_store(&cascade_done, 0);
    tl_ult_attr attr;
    tl_ult_attr_init(&attr);
    attr.detached = 1;
    CHECK(tl_ult_create(NULL, &attr, cascade, (void *)(intptr_t)(SCALE > 8 ? 5 : 7)) == 0);
    tl_ult_get_stats(&st);
    printf("stats: created %llu, steals %llu, inline joins %llu, VP sleeps %llu, migrations %d\n",
           (unsigned long long)st.created, (unsigned long long)st.steals,
           (unsigned long long)st.inline_joins, (unsigned long long)st.vp_sleeps,
           atomic_load(&storm_migrations));
    CHECK(tl_ult_finalize() == 0);
    long expect = 0;
    for (long p = 1, l = 0; l <= (SCALE > 8 ? 5 : 7); l++, p *= 3)
        expect += p;
    CHECK(atomic_load(&cascade_done) == expect);

    /* the same on one VP with idle spinning disabled (sleep at once) */
    tl_ult_config_init(&cfg);
    cfg.nvps = 3;
    cfg.spin_us = 0;
    CHECK(tl_ult_init(&cfg) == 0);
    test_pingpong_bursts(8, 4, 500 / SCALE);
    test_external_wakeups(4, 200 / SCALE);
    test_tree(10 - (SCALE > 8 ? 2 : 0));
    CHECK(tl_ult_finalize() == 0);

    CHECK(atomic_load(&async_failures) == 0);
    return check_report("ult.sched");
}
