/* test_ult_basic.c - libthreadlab-ult: life cycle of threads (create, join,
 * detach, exit, yield, self), thread-local data, attributes, errors,
 * creation from a foreign kernel thread, re-initialisation. */
#define _GNU_SOURCE
#include "check_ult.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* CHECK is not thread-safe: ULTs on other VPs count failures here, and the
 * primordial ULT checks the count. */
static void init_with(unsigned nvps, int inline_join)
{
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.nvps = nvps;
    cfg.inline_join = inline_join;
    int err = tl_ult_init(&cfg);
    CHECK(err == 0);
    if (err) {
        fprintf(stderr, "tl_ult_init: %s\n", strerror(err));
        exit(1);
    }
}

/* ---- create / join / return values -------------------------------------- */

static void *add_one(void *arg)
{
    return (void *)((intptr_t)arg + 1);
}

static void test_create_join(void)
{
    enum { N = 2000 };
    static tl_ult_t t[N];
    for (intptr_t i = 0; i < N; i++)
        CHECK(tl_ult_create(&t[i], NULL, add_one, (void *)i) == 0);
    int ok = 1;
    for (intptr_t i = 0; i < N; i++) {
        void *r = NULL;
        if (tl_ult_join(t[i], &r) != 0 || r != (void *)(i + 1))
            ok = 0;
    }
    CHECK(ok);
    /* join in reverse order */
    for (intptr_t i = 0; i < N; i++)
        CHECK(tl_ult_create(&t[i], NULL, add_one, (void *)i) == 0);
    ok = 1;
    for (intptr_t i = N - 1; i >= 0; i--) {
        void *r = NULL;
        if (tl_ult_join(t[i], &r) != 0 || r != (void *)(i + 1))
            ok = 0;
    }
    CHECK(ok);
}

/* ---- yield: FIFO among yielders on one VP --------------------------------- */

static int order[64];
static int norder;

static void *yield_recorder(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int round = 0; round < 4; round++) {
        order[norder++] = id; /* one VP: no race */
        tl_ult_yield();
    }
    return NULL;
}

static void test_yield_fifo(void)
{
    tl_ult_t t[3];
    norder = 0;
    for (intptr_t i = 0; i < 3; i++)
        CHECK(tl_ult_create(&t[i], NULL, yield_recorder, (void *)i) == 0);
    /* let them start on their own stacks, then wait */
    for (int i = 0; i < 3; i++)
        CHECK(tl_ult_join(t[i], NULL) == 0);
    CHECK(norder == 12);
    /* every round contains each thread exactly once */
    int ok = 1;
    for (int round = 0; round < 4; round++) {
        int seen = 0;
        for (int k = 0; k < 3; k++)
            seen |= 1 << order[round * 3 + k];
        if (seen != 7)
            ok = 0;
    }
    CHECK(ok);
}

/* ---- exit from a nested function; exit of a thread run inline -------------- */

static int deep_exit(int depth, void *value)
{
    if (depth < 0)
        return 0;
    if (depth == 0)
        tl_ult_exit(value);
    int r = deep_exit(depth - 1, value);
    atomic_fetch_add(&async_failures, 1); /* never reached */
    return r + 1;
}

static void *exits_deep(void *arg)
{
    deep_exit(10, arg);
    return NULL;
}

static void test_exit(void)
{
    tl_ult_t t;
    void *r = NULL;
    /* joined at once: runs inline on the primordial stack, exits by longjmp */
    CHECK(tl_ult_create(&t, NULL, exits_deep, (void *)0x1234) == 0);
    CHECK(tl_ult_join(t, &r) == 0);
    CHECK(r == (void *)0x1234);
    /* started on its own stack first */
    CHECK(tl_ult_create(&t, NULL, exits_deep, (void *)0x5678) == 0);
    tl_ult_yield();
    CHECK(tl_ult_join(t, &r) == 0);
    CHECK(r == (void *)0x5678);
}

/* ---- self, inline identity ------------------------------------------------------ */

static void *returns_self(void *arg)
{
    (void)arg;
    void *lo;
    size_t size;
    ACHECK(tl_ult_stack_bounds(&lo, &size) == 0);
    ACHECK(tl_ult_vp_id() >= 0);
    return tl_ult_self();
}

static void test_self(void)
{
    tl_ult_t t;
    void *r = NULL;
    CHECK(tl_ult_self() != NULL); /* the primordial ULT */
    CHECK(tl_ult_create(&t, NULL, returns_self, NULL) == 0);
    CHECK(tl_ult_join(t, &r) == 0);
    CHECK(r == (void *)t); /* inline or not, a child is itself */
}

/* ---- detach ----------------------------------------------------------------------- */

static _Atomic int detached_done;

static void *detached_body(void *arg)
{
    (void)arg;
    tl_ult_yield();
    atomic_fetch_add(&detached_done, 1);
    return NULL;
}

static void test_detach(void)
{
    enum { N = 300 };
    tl_ult_attr attr;
    tl_ult_attr_init(&attr);
    attr.detached = 1;
    atomic_store(&detached_done, 0);
    for (int i = 0; i < N; i++)
        CHECK(tl_ult_create(NULL, &attr, detached_body, NULL) == 0);
    /* detach after creation, before and after it finished */
    tl_ult_t a, b;
    CHECK(tl_ult_create(&a, NULL, detached_body, NULL) == 0);
    CHECK(tl_ult_detach(a) == 0);
    CHECK(tl_ult_create(&b, NULL, detached_body, NULL) == 0);
    while (atomic_load(&detached_done) < N + 1)
        tl_ult_yield();
    CHECK(tl_ult_detach(b) == 0);
    while (atomic_load(&detached_done) < N + 2)
        tl_ult_yield();
    CHECK(atomic_load(&detached_done) == N + 2);
}

/* ---- errors ---------------------------------------------------------------------------- */

static void *join_self(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)tl_ult_join(tl_ult_self(), NULL);
}

static void test_errors(void)
{
    tl_ult_t t;
    void *r;
    CHECK(tl_ult_create(&t, NULL, NULL, NULL) == EINVAL);
    tl_ult_attr attr;
    tl_ult_attr_init(&attr);
    attr.stack_size = 16; /* too small */
    CHECK(tl_ult_create(&t, &attr, add_one, NULL) == EINVAL);
    CHECK(tl_ult_create(&t, NULL, join_self, NULL) == 0);
    CHECK(tl_ult_join(t, &r) == 0);
    CHECK((intptr_t)r == EDEADLK);
    attr.stack_size = 0;
    attr.detached = 1;
    CHECK(tl_ult_create(&t, &attr, detached_body, NULL) == 0);
    /* no join on a detached handle: it may already be recycled */
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    CHECK(tl_ult_init(&cfg) == EBUSY);
}

/* ---- thread-local data --------------------------------------------------------------------- */

static tl_ult_key_t key_a, key_b;
static _Atomic int dtor_calls;
static _Atomic intptr_t dtor_sum;

static void dtor(void *v)
{
    atomic_fetch_add(&dtor_calls, 1);
    atomic_fetch_add(&dtor_sum, (intptr_t)v);
}

static void *tls_body(void *arg)
{
    intptr_t id = (intptr_t)arg;
    ACHECK(tl_ult_getspecific(key_a) == NULL);
    ACHECK(tl_ult_setspecific(key_a, (void *)(id * 2 + 1)) == 0);
    ACHECK(tl_ult_setspecific(key_b, (void *)(id + 1)) == 0);
    for (int i = 0; i < 5; i++) {
        tl_ult_yield(); /* others set their own values meanwhile */
        ACHECK(tl_ult_getspecific(key_a) == (void *)(id * 2 + 1));
        ACHECK(tl_ult_getspecific(key_b) == (void *)(id + 1));
    }
    return NULL;
}

static void test_tls(void)
{
    enum { N = 50 };
    tl_ult_t t[N];
    CHECK(tl_ult_key_create(&key_a, dtor) == 0);
    CHECK(tl_ult_key_create(&key_b, NULL) == 0);
    CHECK(key_a != key_b);
    atomic_store(&dtor_calls, 0);
    atomic_store(&dtor_sum, 0);
    for (intptr_t i = 0; i < N; i++)
        CHECK(tl_ult_create(&t[i], NULL, tls_body, (void *)i) == 0);
    for (int i = 0; i < N; i++)
        CHECK(tl_ult_join(t[i], NULL) == 0);
    CHECK(atomic_load(&dtor_calls) == N);
    CHECK(atomic_load(&dtor_sum) == N * N); /* sum of 2i+1 */
    /* the primordial ULT has its own table too */
    CHECK(tl_ult_setspecific(key_b, (void *)7) == 0);
    CHECK(tl_ult_getspecific(key_b) == (void *)7);
    CHECK(tl_ult_setspecific(key_b, NULL) == 0);
    CHECK(tl_ult_key_delete(key_a) == 0);
    CHECK(tl_ult_key_delete(key_b) == 0);
}

/* ---- attributes ------------------------------------------------------------------------------- */

static void *report_stack(void *arg)
{
    size_t *out = arg;
    void *lo;
    ACHECK(tl_ult_stack_bounds(&lo, out) == 0);
    volatile char buf[3000]; /* use a good part of an 8 KiB stack */
    memset((char *)buf, 1, sizeof buf);
    return NULL;
}

static void test_attr(void)
{
    tl_ult_attr attr;
    tl_ult_attr_init(&attr);
    attr.stack_size = 8192 + 100;
    size_t size = 0;
    tl_ult_t t;
    CHECK(tl_ult_create(&t, &attr, report_stack, &size) == 0);
    tl_ult_yield(); /* runs on its own stack, not inline */
    CHECK(tl_ult_join(t, NULL) == 0);
    CHECK(size >= 8192 + 100 && size < 8192 + 100 + 4096);
    attr.stack_size = 1 << 20;
    CHECK(tl_ult_create(&t, &attr, report_stack, &size) == 0);
    tl_ult_yield();
    CHECK(tl_ult_join(t, NULL) == 0);
    CHECK(size >= (1 << 20));
}

/* ---- a foreign kernel thread creates ULTs ----------------------------------------------------- */

static _Atomic int foreign_ran;

static void *foreign_body(void *arg)
{
    (void)arg;
    atomic_fetch_add(&foreign_ran, 1);
    return NULL;
}

static void *foreign_pthread(void *arg)
{
    (void)arg;
    tl_ult_attr attr;
    tl_ult_attr_init(&attr);
    attr.detached = 1;
    for (int i = 0; i < 100; i++)
        if (tl_ult_create(NULL, &attr, foreign_body, NULL) != 0)
            atomic_fetch_add(&async_failures, 1);
    if (tl_ult_self() != NULL || tl_ult_vp_id() != -1)
        atomic_fetch_add(&async_failures, 1);
    return NULL;
}

static void test_foreign(void)
{
    pthread_t p;
    atomic_store(&foreign_ran, 0);
    CHECK(pthread_create(&p, NULL, foreign_pthread, NULL) == 0);
    /* a pthread_join would block the VP: poll instead */
    while (atomic_load(&foreign_ran) < 100)
        tl_ult_usleep(100);
    pthread_join(p, NULL);
    CHECK(atomic_load(&foreign_ran) == 100);
}

static void run_all(void)
{
    test_create_join();
    test_self();
    test_exit();
    test_detach();
    test_errors();
    test_tls();
    test_attr();
    test_foreign();
}

int main(void)
{
    alarm(120);
    CHECK(tl_ult_finalize() == EAGAIN);
    CHECK(tl_ult_self() == NULL);

    /* one VP: deterministic order */
    init_with(1, 1);
    CHECK(tl_ult_num_vps() == 1);
    test_yield_fifo();
    run_all();
    CHECK(tl_ult_finalize() == 0);
    CHECK(!tl_ult_initialized());

    /* several VPs, both join strategies; re-initialisation works */
    for (int inl = 0; inl < 2; inl++) {
        init_with(4, inl);
        run_all();
        tl_ult_stats st;
        for (int i = 0; i < 10000; i++) { /* detached stragglers */
            tl_ult_get_stats(&st);
            if (st.live == 0)
                break;
            tl_ult_usleep(100);
        }
        CHECK(st.created == st.exited);
        CHECK(inl || st.inline_joins == 0);
        CHECK(tl_ult_finalize() == 0);
    }
    (void)SCALE;
    CHECK(atomic_load(&async_failures) == 0);
    return check_report("ult.basic");
}
