/* test_ult_adapt.c - libthreadlab-ult: what a runtime on top of it needs to
 * follow a resource manager and to keep its own synchronization state:
 * the active VP count (stopped VPs hand their threads over, resumed ones
 * take work again), safe points, parking on a word (tl_ult_wait/wake),
 * first placement and binding of a new thread, time slices (preemption),
 * the per-ULT pointer and the local-ready probe. A lost wake-up shows as a hang: the alarm turns
 * it into a failure. */
#define _GNU_SOURCE
#include "check_ult.h"
#include "internal.h" /* tlu_preempt_pc_is_program */

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- tl_ult_wait / tl_ult_wake --------------------------------------------- */

static _Atomic uint32_t gate;
static _Atomic int passed;

static void *gate_waiter(void *p)
{
    (void)p;
    while (atomic_load(&gate) == 0)
        tl_ult_wait(&gate, 0);
    atomic_fetch_add(&passed, 1);
    return NULL;
}

static _Atomic uint32_t turn;
enum { PINGS = 20000 / SCALE };

static void *pinger(void *p)
{
    uint32_t me = (uint32_t)(uintptr_t)p;
    for (int i = 0; i < PINGS; i++) {
        uint32_t t;
        while ((t = atomic_load(&turn)) % 2 != me)
            tl_ult_wait(&turn, t);
        atomic_store(&turn, t + 1);
        tl_ult_wake(&turn, 1);
    }
    return NULL;
}

static void test_wait_wake(void)
{
    static _Atomic uint32_t word = 5;
    CHECK(tl_ult_wait(&word, 4) == EAGAIN);
    CHECK(tl_ult_wake(&word, 1) == 0);

    enum { N = 64 };
    tl_ult_t t[N];
    for (int i = 0; i < N; i++)
        CHECK(tl_ult_create(&t[i], NULL, gate_waiter, NULL) == 0);
    for (int i = 0; i < 20; i++)
        tl_ult_sleep_ns(50000); /* let most of them park */
    atomic_store(&gate, 1);
    int woken = tl_ult_wake(&gate, INT_MAX);
    CHECK(woken >= 0 && woken <= N);
    for (int i = 0; i < N; i++)
        CHECK(tl_ult_join(t[i], NULL) == 0);
    CHECK(atomic_load(&passed) == N);

    tl_ult_t a, b;
    CHECK(tl_ult_create(&a, NULL, pinger, (void *)0) == 0);
    CHECK(tl_ult_create(&b, NULL, pinger, (void *)1) == 0);
    CHECK(tl_ult_join(a, NULL) == 0);
    CHECK(tl_ult_join(b, NULL) == 0);
    CHECK(atomic_load(&turn) == 2 * PINGS);
}

/* ---- active VPs ------------------------------------------------------------ */

enum { WORKERS = 6 };
static _Atomic int stage;          /* 0 spread, 1 stopped, 2 resumed, 3 done */
static _Atomic unsigned long seen_stage[4][3]; /* [stage][vp] observations */

static void *busy_worker(void *p)
{
    (void)p;
    for (;;) {
        int s = atomic_load(&stage);
        if (s == 3)
            return NULL;
        tl_ult_safe_point();
        int vp = tl_ult_vp_id();
        /* an observation counts for stage s only if the stage did not
         * change while it was made */
        if (vp >= 0 && vp < 3 && atomic_load(&stage) == s)
            atomic_fetch_add(&seen_stage[s][vp], 1);
        uint64_t end = now_ns() + 20000;
        while (now_ns() < end) {
        }
        tl_ult_yield();
    }
}

static int wait_for(int s, int vp, uint64_t ms)
{
    uint64_t end = now_ns() + ms * 1000000u;
    while (atomic_load(&seen_stage[s][vp]) == 0 && now_ns() < end)
        tl_ult_sleep_ns(200000);
    return atomic_load(&seen_stage[s][vp]) != 0;
}

static void test_active_vps(void)
{
    CHECK(tl_ult_set_active_vps(0) == EINVAL);
    CHECK(tl_ult_active_vps() == 3);
    tl_ult_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        tl_ult_attr a;
        tl_ult_attr_init(&a);
        a.vp = i % 3;
        CHECK(tl_ult_create(&t[i], &a, busy_worker, NULL) == 0);
    }
    /* generous deadlines: a loaded machine may hold a VP back for a while */
    CHECK(wait_for(0, 1, 10000) && wait_for(0, 2, 10000));

    CHECK(tl_ult_set_active_vps(1) == 0);
    tl_ult_sleep_ns(20000000); /* every worker passes a safe point */
    atomic_store(&stage, 1);
    tl_ult_sleep_ns(50000000);
    CHECK(atomic_load(&seen_stage[1][0]) > 0);
    CHECK(atomic_load(&seen_stage[1][1]) == 0);
    CHECK(atomic_load(&seen_stage[1][2]) == 0);

    CHECK(tl_ult_set_active_vps(99) == 0); /* clamped */
    CHECK(tl_ult_active_vps() == 3);
    atomic_store(&stage, 2);
    CHECK(wait_for(2, 1, 10000) || wait_for(2, 2, 10000));
    atomic_store(&stage, 3);
    for (int i = 0; i < WORKERS; i++)
        CHECK(tl_ult_join(t[i], NULL) == 0);
}

/* A thread bound to a VP keeps that VP running for it after the VP was
 * told to stop, and sees that it was. */
static _Atomic int handshake;

static void *bound_observer(void *p)
{
    (void)p;
    ACHECK(tl_ult_vp_stopping() == 0);
    atomic_store(&handshake, 1);
    while (atomic_load(&handshake) != 2)
        tl_ult_yield();
    ACHECK(tl_ult_vp_id() == 2);
    ACHECK(tl_ult_vp_stopping() == 1);
    tl_ult_safe_point(); /* bound: stays */
    ACHECK(tl_ult_vp_id() == 2);
    atomic_store(&handshake, 3);
    while (atomic_load(&handshake) != 4)
        tl_ult_yield();
    ACHECK(tl_ult_vp_stopping() == 0);
    return NULL;
}

static void test_stopping_bound(void)
{
    tl_ult_attr a;
    tl_ult_attr_init(&a);
    a.vp = 2;
    a.bound = 1;
    tl_ult_t t;
    CHECK(tl_ult_create(&t, &a, bound_observer, NULL) == 0);
    while (atomic_load(&handshake) != 1)
        tl_ult_sleep_ns(100000);
    CHECK(tl_ult_set_active_vps(2) == 0);
    atomic_store(&handshake, 2);
    while (atomic_load(&handshake) != 3)
        tl_ult_sleep_ns(100000);
    CHECK(tl_ult_set_active_vps(3) == 0);
    atomic_store(&handshake, 4);
    CHECK(tl_ult_join(t, NULL) == 0);
}

/* ---- placement, binding, local pointer, local-ready -------------------------- */

static void *bound_worker(void *p)
{
    int want = (int)(intptr_t)p;
    tl_ult_set_local(p);
    for (int i = 0; i < 200; i++) {
        ACHECK(tl_ult_vp_id() == want);
        ACHECK(tl_ult_get_local() == p);
        tl_ult_yield();
        if (i % 50 == 0)
            tl_ult_sleep_ns(1000);
    }
    return NULL;
}

static void *nop(void *p)
{
    return p;
}

static void test_placement(void)
{
    tl_ult_t t[3];
    for (int v = 0; v < 3; v++) {
        tl_ult_attr a;
        tl_ult_attr_init(&a);
        a.vp = v;
        a.bound = 1;
        CHECK(tl_ult_create(&t[v], &a, bound_worker, (void *)(intptr_t)v) == 0);
    }
    for (int v = 0; v < 3; v++)
        CHECK(tl_ult_join(t[v], NULL) == 0);
    tl_ult_attr bad;
    tl_ult_attr_init(&bad);
    bad.vp = 3;
    tl_ult_t x;
    CHECK(tl_ult_create(&x, &bad, nop, NULL) == EINVAL);
    CHECK(tl_ult_get_local() == NULL);
    tl_ult_set_local(&x);
    CHECK(tl_ult_get_local() == &x);
    tl_ult_set_local(NULL);
}

/* ---- tl_ult_spawn_on: a thread made by the VP it is posted to ---------------- */

enum { SPAWNS = 600 };
static tl_ult_spawn spawns[SPAWNS];
static _Atomic int spawned_ran[SPAWNS];
static _Atomic int spawned_total;

static void spawn_check(int i);

static void *spawned(void *p)
{
    spawn_check((int)(intptr_t)p);
    return NULL;
}

/* the request's arg says which one it is; a bound one must run on its VP */
static void spawn_check(int i)
{
    if (spawns[i].attr.bound)
        ACHECK(tl_ult_vp_id() == spawns[i].attr.vp);
    atomic_fetch_add(&spawned_ran[i], 1);
    atomic_fetch_add(&spawned_total, 1);
}

static void spawn_fill(int i, int vp, int bound, size_t stack)
{
    tl_ult_attr_init(&spawns[i].attr);
    spawns[i].attr.detached = 1;
    spawns[i].attr.vp = vp;
    spawns[i].attr.bound = bound;
    spawns[i].attr.stack_size = stack;
    spawns[i].fn = spawned;
    spawns[i].arg = (void *)(intptr_t)i;
}

static int spawn_wait(int total)
{
    uint64_t end = now_ns() + 20000000000ull;
    while (atomic_load(&spawned_total) < total && now_ns() < end)
        tl_ult_sleep_ns(100000);
    return atomic_load(&spawned_total) == total;
}

static void test_spawn_on(void)
{
    tl_ult_spawn bad;
    tl_ult_attr_init(&bad.attr);
    bad.fn = spawned;
    bad.arg = NULL;
    bad.attr.vp = 1;
    CHECK(tl_ult_spawn_on(&bad) == EINVAL); /* not detached */
    bad.attr.detached = 1;
    bad.attr.vp = 3;
    CHECK(tl_ult_spawn_on(&bad) == EINVAL);
    bad.attr.vp = TL_ULT_VP_ANY;
    CHECK(tl_ult_spawn_on(&bad) == EINVAL);
    bad.attr.vp = 1;
    bad.attr.stack_size = 1;
    CHECK(tl_ult_spawn_on(&bad) == EINVAL);
    bad.attr.stack_size = 0;
    bad.fn = NULL;
    CHECK(tl_ult_spawn_on(&bad) == EINVAL);
    CHECK(atomic_load(&spawned_total) == 0);

    /* on every VP, bound and not, the default stack and another */
    int n = 0;
    for (int v = 0; v < 3; v++)
        for (int bound = 0; bound < 2; bound++)
            for (int s = 0; s < 2; s++, n++) {
                spawn_fill(n, v, bound, s ? 256 * 1024 : 0);
                CHECK(tl_ult_spawn_on(&spawns[n]) == 0);
            }
    CHECK(spawn_wait(n));

    /* a request may be posted again once its thread ran */
    CHECK(tl_ult_spawn_on(&spawns[0]) == 0);
    CHECK(spawn_wait(n + 1));
    CHECK(atomic_load(&spawned_ran[0]) == 2);

    /* posted to a VP told to stop: run by an active VP (the poster
     * forwards it, or the stopping VP does as it hands its inbox over) */
    int first = n;
    for (; n < first + 100; n++) {
        spawn_fill(n, 1 + n % 2, 0, 0);
        CHECK(tl_ult_spawn_on(&spawns[n]) == 0);
    }
    CHECK(tl_ult_set_active_vps(1) == 0);
    for (; n < first + 200; n++) {
        spawn_fill(n, 1 + n % 2, 0, 0);
        CHECK(tl_ult_spawn_on(&spawns[n]) == 0);
    }
    CHECK(spawn_wait(n + 1));
    CHECK(tl_ult_set_active_vps(3) == 0);

    /* posted while the VPs stop and resume under it */
    for (int round = 0; round < 8; round++) {
        int from = n;
        for (; n < from + 40 && n < SPAWNS; n++) {
            spawn_fill(n, n % 3, 0, 0);
            CHECK(tl_ult_spawn_on(&spawns[n]) == 0);
            if (n % 10 == 0)
                CHECK(tl_ult_set_active_vps(1 + (unsigned)(n / 10) % 3) == 0);
        }
    }
    CHECK(tl_ult_set_active_vps(3) == 0);
    CHECK(spawn_wait(n + 1));
    for (int i = 1; i < n; i++)
        CHECK(atomic_load(&spawned_ran[i]) == 1);
}

/* ---- the public deque: owner LIFO, thieves FIFO, every element once --------- */

enum { DQ_N = 200000 / SCALE };
static tl_ult_deque *dq;
static _Atomic unsigned char taken[DQ_N];
static _Atomic int dq_done;

static void *thief(void *p)
{
    (void)p;
    while (!atomic_load(&dq_done)) {
        void *x = tl_ult_deque_steal(dq);
        if (x)
            atomic_fetch_add(&taken[(uintptr_t)x / 2 - 1], 1);
        else
            tl_ult_yield();
    }
    void *x;
    while ((x = tl_ult_deque_steal(dq)))
        atomic_fetch_add(&taken[(uintptr_t)x / 2 - 1], 1);
    return NULL;
}

/* ---- preemption (preempt.c) ------------------------------------------------ */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
static void test_preempt(void)
{
    printf("ult.adapt: no preemption under the sanitizers: its checks skipped\n");
}
#else
/* Spins in this program's own code, never calling the runtime, until the
 * other spinner has started or 5 s have passed (a cooperative VP runs
 * one spinner to its deadline before the other starts). */
static _Atomic int spin_started[2], spin_saw[2];

static void *spinner(void *p)
{
    int me = (int)(intptr_t)p;
    atomic_store(&spin_started[me], 1);
    uint64_t end = now_ns() + 5000000000u;
    while (!atomic_load_explicit(&spin_started[!me], memory_order_relaxed) && now_ns() < end) {
    }
    atomic_store(&spin_saw[me], atomic_load(&spin_started[!me]));
    return NULL;
}

/* Spins on the VP it was placed on until it finds itself on another one
 * (a VP told to stop lets its thread go within a slice) or 5 s passed. */
static _Atomic int mover_started, mover_vp;

static void *mover(void *p)
{
    (void)p;
    int first = tl_ult_vp_id();
    atomic_store(&mover_started, 1);
    uint64_t end = now_ns() + 5000000000u;
    int vp = first;
    while (vp == first && now_ns() < end)
        vp = tl_ult_vp_id();
    atomic_store(&mover_vp, vp);
    return NULL;
}

static void *lone_spinner(void *p)
{
    uint64_t end = now_ns() + (uint64_t)(uintptr_t)p;
    while (now_ns() < end) {
    }
    return NULL;
}

/* Whether the ticker's period (tl_ult_stats.slice_ns) becomes `ns`
 * within 2 s: it is set at the ticker's next look. */
static int slice_becomes(uint64_t ns)
{
    tl_ult_stats st;
    for (int i = 0; i < 200; i++) {
        tl_ult_get_stats(&st);
        if (st.slice_ns == ns)
            return 1;
        tl_ult_sleep_ns(10000000);
    }
    fprintf(stderr, "ult.adapt: the ticker's period is %llu ns, not %llu\n", (unsigned long long)st.slice_ns,
            (unsigned long long)ns);
    return 0;
}

static void test_preempt(void)
{
    tl_ult_stats before, after;
    tl_ult_attr a;
    tl_ult_t t[2];

    /* This program links the runtime statically: its text holds the
     * runtime's code too, where a thread must never be yielded (it may be
     * half-way through a switch: ult.identity crashed so in 4% of runs). */
    CHECK(tlu_preempt_pc_is_program((uintptr_t)&lone_spinner));
    CHECK(!tlu_preempt_pc_is_program((uintptr_t)&tl_ult_yield));
    CHECK(!tlu_preempt_pc_is_program((uintptr_t)&tl_ult_vp_id));
    CHECK(!tlu_preempt_pc_is_program((uintptr_t)&tl_ult_set_active_vps));

    /* Two spinners on the one active VP share it: each sees the other.
     * (The VPs told to stop are idle: they stop at once, before the
     * spinners exist, and cannot steal one.) */
    CHECK(tl_ult_set_active_vps(1) == 0);
    tl_ult_sleep_ns(20000000);
    tl_ult_get_stats(&before);
    for (int i = 0; i < 2; i++) {
        tl_ult_attr_init(&a);
        a.vp = 0;
        CHECK(tl_ult_create(&t[i], &a, spinner, (void *)(intptr_t)i) == 0);
    }
    for (int i = 0; i < 2; i++)
        CHECK(tl_ult_join(t[i], NULL) == 0);
    tl_ult_get_stats(&after);
    CHECK(atomic_load(&spin_saw[0]) && atomic_load(&spin_saw[1]));
    CHECK(after.preemptions > before.preemptions);

    /* A thread alone on the active VP is never interrupted. */
    tl_ult_get_stats(&before);
    tl_ult_attr_init(&a);
    a.vp = 0;
    CHECK(tl_ult_create(&t[0], &a, lone_spinner, (void *)(uintptr_t)100000000u) == 0);
    CHECK(tl_ult_join(t[0], NULL) == 0);
    tl_ult_get_stats(&after);
    CHECK(after.preemptions == before.preemptions);

    /* Peers that outnumber the VPs that run get slices of a fifth of the
     * period, whether the other VPs are stopped or not: a team of 2 on the
     * one VP of an allocation of 1 (3 VPs here) handed off once every two
     * 10 ms looks (velvet's velveth_de, 5x its time on the shim). */
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    uint64_t period = (uint64_t)cfg.preempt_ms * 1000000u;
    if (period) {
        CHECK(slice_becomes(period));
        tl_ult_peers_add(2);
        CHECK(slice_becomes(period / 5));
        tl_ult_peers_add(-2);
        CHECK(slice_becomes(period));
    }

    /* A VP told to stop while its thread spins lets it go to an active one. */
    CHECK(tl_ult_set_active_vps(3) == 0);
    tl_ult_attr_init(&a);
    a.vp = 2;
    CHECK(tl_ult_create(&t[0], &a, mover, NULL) == 0);
    while (!atomic_load(&mover_started))
        tl_ult_sleep_ns(1000000);
    CHECK(tl_ult_set_active_vps(2) == 0);
    CHECK(tl_ult_join(t[0], NULL) == 0);
    int moved = atomic_load(&mover_vp);
    CHECK(moved == 0 || moved == 1);
    CHECK(tl_ult_set_active_vps(3) == 0);
}
#endif

static void test_deque(void)
{
    CHECK(tl_ult_deque_create(&dq) == 0);
    CHECK(tl_ult_deque_take(dq) == NULL && tl_ult_deque_steal(dq) == NULL);
    /* elements i are stored as (i + 1) * 2: never NULL nor (void *)1 */
    tl_ult_deque_push(dq, (void *)2);
    tl_ult_deque_push(dq, (void *)4);
    CHECK(tl_ult_deque_size(dq) == 2);
    CHECK(tl_ult_deque_steal(dq) == (void *)2); /* thieves: the oldest */
    CHECK(tl_ult_deque_take(dq) == (void *)4);  /* owner: the newest */
    tl_ult_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK(tl_ult_create(&t[i], NULL, thief, NULL) == 0);
    for (uintptr_t i = 0; i < DQ_N; i++) {
        tl_ult_deque_push(dq, (void *)((i + 1) * 2)); /* grows past its first array */
        if (i % 3 == 0) {
            void *x = tl_ult_deque_take(dq);
            if (x)
                atomic_fetch_add(&taken[(uintptr_t)x / 2 - 1], 1);
        }
    }
    atomic_store(&dq_done, 1);
    void *x;
    while ((x = tl_ult_deque_take(dq)))
        atomic_fetch_add(&taken[(uintptr_t)x / 2 - 1], 1);
    for (int i = 0; i < 2; i++)
        CHECK(tl_ult_join(t[i], NULL) == 0);
    int bad = 0;
    for (int i = 0; i < DQ_N; i++)
        if (atomic_load(&taken[i]) != 1)
            bad++;
    CHECK(bad == 0);
    tl_ult_deque_destroy(dq);
}

static void test_local_ready(void)
{
    /* one VP: a created thread is ready on the caller's VP */
    ult_test_start(1);
    CHECK(tl_ult_local_ready() == 0);
    tl_ult_t t;
    CHECK(tl_ult_create(&t, NULL, nop, NULL) == 0);
    CHECK(tl_ult_local_ready() == 1);
    CHECK(tl_ult_join(t, NULL) == 0);
    CHECK(tl_ult_local_ready() == 0);
    CHECK(tl_ult_finalize() == 0);
}

int main(void)
{
    alarm(120);
    CHECK(tl_ult_set_active_vps(1) == EAGAIN);
    CHECK(tl_ult_active_vps() == 0);
    ult_test_start(3);
    test_wait_wake();
    test_active_vps();
    test_stopping_bound();
    test_placement();
    test_spawn_on();
    test_preempt();
    test_deque();
    CHECK(tl_ult_finalize() == 0);
    test_local_ready();
    CHECK(atomic_load(&async_failures) == 0);
    return check_report("ult.adapt");
}
