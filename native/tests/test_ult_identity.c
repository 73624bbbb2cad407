/* test_ult_identity.c - libthreadlab-ult: kernel-thread TLS identities.
 * A ULT wearing an identity keeps its __thread variables, errno, a TLS
 * address taken earlier and pthread_self() while it migrates between VPs
 * (the migration is forced by stopping the VP it runs on); ULTs without
 * one share their VP's TLS; tl_ult_run_as_self lends an external thread's
 * TLS to a ULT and gives it back. Under ASan/TSan identities are not
 * supported: the test then checks that they are refused. */
#define _GNU_SOURCE
#include "check.h"
#include "check_async.h"
#include "threadlab/compiler.h"
#include "threadlab/ult.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static __thread long tv;
static __thread char tblock[256];

enum { NID = 3, ROUNDS = 100 };

static _Atomic int phase; /* 0: VPs 0-2 run, 1: VPs 1-2 stopped */
/* [k][phase][vp]: where worker k was seen in each phase */
static _Atomic int vps_seen[NID][2][3];

struct worker {
    int k;
    pthread_t self;
};

static void *identity_worker(void *p)
{
    struct worker *w = p;
    long mine = 1000 + w->k;
    ACHECK(tv == 0); /* a donor's TLS starts from the initial image */
    tv = mine;
    errno = 10 + w->k;
    long *addr = &tv;
    memset(tblock, w->k, sizeof tblock);
    w->self = pthread_self();
    /* until ROUNDS iterations after the VPs were stopped */
    for (int after = 0; after < ROUNDS;) {
        /* a phase read before a safe point: in phase 1 that safe point
         * has moved the worker off a stopped VP */
        int ph = atomic_load(&phase);
        tl_ult_yield();
        tl_ult_safe_point();
        int vp = tl_ult_vp_id();
        if (vp >= 0 && vp < 3)
            atomic_fetch_add(&vps_seen[w->k][ph][vp], 1);
        if (ph)
            after++;
        if (after % 16 == 0)
            tl_ult_sleep_ns(1000);
        ACHECK(tv == mine);
        ACHECK(*addr == mine);
        ACHECK(addr == &tv);
        ACHECK(errno == 10 + w->k);
        ACHECK(tblock[0] == w->k && tblock[255] == w->k);
        ACHECK(pthread_equal(w->self, pthread_self()));
    }
    return NULL;
}

static int seen_away(void)
{
    for (int k = 0; k < NID; k++)
        if (atomic_load(&vps_seen[k][0][1]) + atomic_load(&vps_seen[k][0][2]))
            return 1;
    return 0;
}

static void *plain_worker(void *p)
{
    (void)p;
    /* no identity, bound to VP 0: the primordial thread's TLS */
    ACHECK(tv == 7);
    return NULL;
}

static void test_identities(void)
{
    tl_ult_identity *ids[NID];
    for (int k = 0; k < NID; k++)
        CHECK(tl_ult_identity_create(&ids[k]) == 0);
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.nvps = 3;
    cfg.pin = 0;
    CHECK(tl_ult_init(&cfg) == 0);
    tv = 7;
    struct worker w[NID];
    tl_ult_t t[NID];
    for (int k = 0; k < NID; k++) {
        tl_ult_attr a;
        tl_ult_attr_init(&a);
        a.identity = ids[k];
        a.vp = 1 + k % 2; /* start away from VP 0 */
        w[k].k = k;
        CHECK(tl_ult_create(&t[k], &a, identity_worker, &w[k]) == 0);
    }
    /* stop VPs 1 and 2: the workers must move to VP 0, TLS and all
     * (a generous deadline for a worker to have run away from VP 0) */
    for (int i = 0; i < 100000 && !seen_away(); i++)
        tl_ult_sleep_ns(100000);
    CHECK(seen_away());
    CHECK(tl_ult_set_active_vps(1) == 0);
    CHECK(tl_ult_active_vps() == 1);
    atomic_store(&phase, 1);
    for (int k = 0; k < NID; k++)
        CHECK(tl_ult_join(t[k], NULL) == 0);
    CHECK(tv == 7); /* the primordial thread's own TLS is untouched */
    int moved = 0;
    for (int k = 0; k < NID; k++) {
        CHECK(atomic_load(&vps_seen[k][1][1]) + atomic_load(&vps_seen[k][1][2]) == 0);
        CHECK(atomic_load(&vps_seen[k][1][0]) > 0);
        if (atomic_load(&vps_seen[k][0][1]) + atomic_load(&vps_seen[k][0][2]) > 0)
            moved++;
    }
    CHECK(moved > 0); /* a worker ran on VP 1 or 2, then on VP 0 */
    CHECK(tl_ult_set_active_vps(3) == 0);

    tl_ult_attr a;
    tl_ult_attr_init(&a);
    a.vp = 0;
    a.bound = 1;
    tl_ult_t p;
    CHECK(tl_ult_create(&p, &a, plain_worker, NULL) == 0);
    CHECK(tl_ult_join(p, NULL) == 0);
    CHECK(tl_ult_finalize() == 0);
    for (int k = 0; k < NID; k++)
        tl_ult_identity_destroy(ids[k]);
}

/* ---- tl_ult_wear: a work-descriptor part wears an identity ------------------ */

static tl_ult_identity *part_ids[2];
static _Atomic int part_ok[2];

static void part(unsigned id, unsigned nparts, void *arg)
{
    (void)nparts;
    (void)arg;
    if (tl_ult_self()) {
        /* run by the caller (a ULT): it cannot change its TLS */
        ACHECK(tl_ult_wear(part_ids[id]) == EPERM);
        atomic_store(&part_ok[id], 2);
        /* leave part 1 to VP 1 (a generous deadline on a loaded machine) */
        uint64_t end = now_ns() + 5000000000ull;
        while (id == 0 && !atomic_load(&part_ok[1]) && now_ns() < end)
            ;
        return;
    }
    ACHECK(tl_ult_wear(part_ids[id]) == 0);
    tv = 9000 + id; /* in the identity's TLS */
    ACHECK(tl_ult_vp_id() >= 0); /* the VP is still known */
    ACHECK(tl_ult_wear(NULL) == 0);
    atomic_store(&part_ok[id], 1);
}

static void *identity_reader(void *p)
{
    (void)p;
    return (void *)(intptr_t)tv;
}

static void test_wear(void)
{
    for (int k = 0; k < 2; k++)
        CHECK(tl_ult_identity_create(&part_ids[k]) == 0);
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.nvps = 2;
    cfg.pin = 0;
    CHECK(tl_ult_init(&cfg) == 0);
    tv = 1;
    CHECK(tl_ult_workdesc_run(part, NULL, 2) == 0);
    CHECK(tv == 1); /* the caller's own TLS is untouched */
    CHECK(atomic_load(&part_ok[0]) == 2);
    CHECK(atomic_load(&part_ok[1]) == 1); /* VP 1 ran part 1 */
    if (atomic_load(&part_ok[1]) == 1) {
        /* part 1 ran on VP 1 wearing identity 1: a ULT wearing it sees
         * what the part wrote there */
        tl_ult_attr a;
        tl_ult_attr_init(&a);
        a.identity = part_ids[1];
        tl_ult_t t;
        void *r = NULL;
        CHECK(tl_ult_create(&t, &a, identity_reader, NULL) == 0);
        CHECK(tl_ult_join(t, &r) == 0);
        CHECK(r == (void *)9001);
    }
    CHECK(tl_ult_finalize() == 0);
    for (int k = 0; k < 2; k++)
        tl_ult_identity_destroy(part_ids[k]);
}

/* ---- a switch to a thread whose identity is worn elsewhere --------------------
 *
 * Two ULTs with one identity overlap when a thread of it is leaving on one
 * VP while its successor starts on another (an OpenMP thread of one region
 * and of the next). Here: A wears X on VP 1; the main thread parks on a
 * word (the parking lot's bucket stays locked until the switch is done)
 * with B, also wearing X, next on VP 0; then A wakes the main thread,
 * which needs that bucket. Waiting for X inside the switch held the
 * bucket, and both VPs spun for good; the alarm turns that into a
 * failure. */

static tl_ult_identity *shared_id;
static _Atomic uint32_t handover_word;
static _Atomic int a_running, b_ran;

static void *wearer_a(void *p)
{
    (void)p;
    tv = 77;
    atomic_store(&a_running, 1);
    /* long enough for the main thread to park, B next on its VP */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t1);
    while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 20000000L);
    atomic_store(&handover_word, 1);
    tl_ult_wake(&handover_word, 1);
    return NULL;
}

static void *wearer_b(void *p)
{
    (void)p;
    ACHECK(tv == 77); /* the identity's TLS, as A left it */
    ACHECK(tl_ult_identity_try_destroy(shared_id) == EBUSY); /* worn: by this very ULT */
    atomic_store(&b_ran, 1);
    return NULL;
}

static void test_handover(void)
{
    CHECK(tl_ult_identity_create(&shared_id) == 0);
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.nvps = 2;
    cfg.pin = 0;
    CHECK(tl_ult_init(&cfg) == 0);
    tl_ult_attr a;
    tl_ult_attr_init(&a);
    a.identity = shared_id;
    a.vp = 1;
    a.bound = 1;
    tl_ult_t ta, tb;
    CHECK(tl_ult_create(&ta, &a, wearer_a, NULL) == 0);
    while (!atomic_load(&a_running))
        tl_cpu_relax();
    a.vp = 0;
    CHECK(tl_ult_create(&tb, &a, wearer_b, NULL) == 0);
    int r = tl_ult_wait(&handover_word, 0);
    CHECK(r == 0 || r == EAGAIN);
    CHECK(atomic_load(&handover_word) == 1);
    CHECK(tl_ult_join(ta, NULL) == 0);
    CHECK(tl_ult_join(tb, NULL) == 0);
    CHECK(atomic_load(&b_ran) == 1);
    CHECK(tl_ult_finalize() == 0);
    CHECK(tl_ult_identity_try_destroy(shared_id) == 0); /* no VP left to wear it */
}

/* ---- run_as_self ----------------------------------------------------------- */

static void *lent(void *arg)
{
    ACHECK(tv == 555);     /* the lender's TLS */
    ACHECK(errno == 9);
    ACHECK(tl_ult_self() != NULL);
    ACHECK(tl_ult_vp_id() >= 0);
    for (int i = 0; i < 50; i++) {
        tl_ult_yield();
        tl_ult_sleep_ns(500);
        ACHECK(tv == 555 + i);
        tv++;
    }
    return (void *)((intptr_t)arg * 2);
}

static void *external_thread(void *p)
{
    (void)p;
    tv = 555;
    errno = 9;
    void *r = NULL;
    ACHECK(tl_ult_run_as_self(lent, (void *)21, 0, &r) == 0);
    ACHECK(r == (void *)42);
    ACHECK(tv == 605);
    ACHECK(tl_ult_vp_id() == -1); /* an external thread again */
    ACHECK(tl_ult_self() == NULL);
    return NULL;
}

static void test_run_as_self(int external_init)
{
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.nvps = 2;
    cfg.pin = 0;
    cfg.external = external_init;
    CHECK(tl_ult_init(&cfg) == 0);
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&th[i], NULL, external_thread, NULL) == 0);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    if (external_init) {
        /* the initialising thread is external too */
        CHECK(tl_ult_vp_id() == -1);
        tv = 555;
        errno = 9;
        void *r = NULL;
        CHECK(tl_ult_run_as_self(lent, (void *)21, 0, &r) == 0 && r == (void *)42);
        CHECK(tv == 605);
    } else {
        void *r;
        CHECK(tl_ult_run_as_self(lent, NULL, 0, &r) == EPERM); /* a ULT already */
    }
    CHECK(tl_ult_finalize() == 0);
}

int main(void)
{
    if (!tl_ult_identity_supported()) {
        tl_ult_identity *id = NULL;
        CHECK(tl_ult_identity_create(&id) == ENOTSUP);
        CHECK(id == NULL);
        static char fake;
        CHECK(tl_ult_wear((tl_ult_identity *)(void *)&fake) == ENOTSUP);
        CHECK(atomic_load(&async_failures) == 0);
        return check_report("ult.identity (not supported in this build)");
    }
    alarm(30);
    test_identities();
    test_wear();
    test_handover();
    test_run_as_self(0);
    test_run_as_self(1);
    CHECK(atomic_load(&async_failures) == 0);
    return check_report("ult.identity");
}
