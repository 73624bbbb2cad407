/* test_ult_workdesc.c - libthreadlab-ult work descriptors (every part and
 * every loop index exactly once, from every kind of caller, nested) and
 * dependence counters (a finishing thread satisfies its successor; nested
 * children finish before their creator's dep_wait returns; a thread with
 * input dependences starts only after all of them). */
#define _GNU_SOURCE
#include "check.h"
#include "check_async.h"
#include "threadlab/ult.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define SCALE 8
#else
#define SCALE 1
#endif

/* ---- work descriptors ------------------------------------------------------------- */

static _Atomic unsigned char *hits;
static _Atomic int parts_seen[256];
static _Atomic int parts_nparts;
static _Atomic int vps_used[64];

static void mark(int64_t lo, int64_t hi, void *arg)
{
    int64_t base = (int64_t)(intptr_t)arg;
    for (int64_t i = lo; i < hi; i++)
        atomic_fetch_add(&hits[i - base], 1);
    int vp = tl_ult_vp_id();
    if (vp >= 0 && vp < 64)
        atomic_fetch_add(&vps_used[vp], 1);
}

static int check_hits(int64_t n)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += hits[i] != 1;
    return bad == 0;
}

static void test_parallel_for(int64_t begin, int64_t end)
{
    int64_t n = end > begin ? end - begin : 0;
    hits = calloc((size_t)(n ? n : 1), 1);
    CHECK(tl_ult_parallel_for(begin, end, mark, (void *)(intptr_t)begin) == 0);
    CHECK(check_hits(n));
    free((void *)hits);
}

static void wd_body(unsigned id, unsigned nparts, void *arg)
{
    (void)arg;
    if (id < 256)
        atomic_fetch_add(&parts_seen[id], 1);
    atomic_store(&parts_nparts, (int)nparts);
}

static void test_workdesc(unsigned nparts)
{
    for (int i = 0; i < 256; i++)
        atomic_store(&parts_seen[i], 0);
    CHECK(tl_ult_workdesc_run(wd_body, NULL, nparts) == 0);
    unsigned expect = nparts ? nparts : tl_ult_num_vps();
    CHECK(atomic_load(&parts_nparts) == (int)expect);
    int ok = 1;
    for (unsigned i = 0; i < expect && i < 256; i++)
        ok &= atomic_load(&parts_seen[i]) == 1;
    CHECK(ok);
}

static void test_static_chunk(void)
{
    /* 10 over 4: 3,3,2,2 */
    int64_t lo, hi, prev = 5;
    const int64_t len[4] = {3, 3, 2, 2};
    for (unsigned id = 0; id < 4; id++) {
        tl_ult_static_chunk(5, 15, id, 4, &lo, &hi);
        CHECK(lo == prev && hi - lo == len[id]);
        prev = hi;
    }
    tl_ult_static_chunk(0, 2, 3, 4, &lo, &hi); /* more parts than indices */
    CHECK(lo == hi);
    tl_ult_static_chunk(7, 3, 0, 2, &lo, &hi); /* empty range */
    CHECK(lo == hi);
}

/* parallel_for inside a parallel_for body (the inner one is called from a
 * VP context or from the master ULT) */
static _Atomic long nested_total;

static void inner(int64_t lo, int64_t hi, void *arg)
{
    (void)arg;
    atomic_fetch_add(&nested_total, hi - lo);
}

static void outer(int64_t lo, int64_t hi, void *arg)
{
    (void)arg;
    for (int64_t i = lo; i < hi; i++)
        ACHECK(tl_ult_parallel_for(0, 100, inner, NULL) == 0);
}

static void *pfor_in_ult(void *arg)
{
    int64_t n = (int64_t)(intptr_t)arg;
    _Atomic unsigned char *h = calloc((size_t)n, 1);
    _Atomic unsigned char *saved = hits;
    (void)saved;
    hits = h;
    ACHECK(tl_ult_parallel_for(0, n, mark, (void *)0) == 0);
    ACHECK(check_hits(n));
    free((void *)h);
    return NULL;
}

static void *pfor_from_pthread(void *arg)
{
    int64_t n = (int64_t)(intptr_t)arg;
    _Atomic unsigned char *h = calloc((size_t)n, 1);
    hits = h;
    int err = tl_ult_parallel_for(0, n, mark, (void *)0);
    int ok = err == 0 && check_hits(n);
    free((void *)h);
    return (void *)(intptr_t)!ok;
}

static void test_workdescs(void)
{
    test_static_chunk();
    test_parallel_for(0, 1000000 / SCALE);
    test_parallel_for(-37, 1000);
    test_parallel_for(0, 1); /* fewer indices than VPs */
    test_parallel_for(5, 5); /* empty */
    test_parallel_for(10, 3);
    for (unsigned np = 0; np < 20; np += 3)
        test_workdesc(np);
    test_workdesc(200);
    /* repeated loops: the master helps, VPs pick shares up when they idle */
    int ok = 1;
    for (int r = 0; r < 200 / SCALE; r++) {
        hits = calloc(1000, 1);
        ok &= tl_ult_parallel_for(0, 1000, mark, (void *)0) == 0 && check_hits(1000);
        free((void *)hits);
    }
    CHECK(ok);
    atomic_store(&nested_total, 0);
    CHECK(tl_ult_parallel_for(0, 16, outer, NULL) == 0);
    CHECK(atomic_load(&nested_total) == 1600);
    /* from a ULT that is not the primordial one */
    tl_ult_t t;
    CHECK(tl_ult_create(&t, NULL, pfor_in_ult, (void *)(intptr_t)(100000 / SCALE)) == 0);
    tl_ult_yield();
    CHECK(tl_ult_join(t, NULL) == 0);
    /* from a foreign kernel thread (it helps and spins) */
    pthread_t p;
    void *r = (void *)1;
    CHECK(pthread_create(&p, NULL, pfor_from_pthread, (void *)(intptr_t)(100000 / SCALE)) == 0);
    while (pthread_tryjoin_np(p, &r) == EBUSY)
        tl_ult_usleep(100);
    CHECK(r == NULL);
}

/* ---- dependence counters ---------------------------------------------------------------- */

static _Atomic int seq;

struct node {
    int finished_at;
    int started_at;
    int children_done_before_wait; /* children finished when dep_wait returned */
    _Atomic int children_finished;
    struct node *parent;
    int depth;
};

static void *nested_child(void *arg);

static void spawn_children(struct node *self, int fanout)
{
    struct node *kids = calloc((size_t)fanout, sizeof *kids);
    for (int i = 0; i < fanout; i++) {
        kids[i].parent = self;
        kids[i].depth = self->depth - 1;
        tl_ult_attr attr;
        tl_ult_attr_init(&attr);
        attr.detached = 1; /* the dependence, not join, orders them */
        ACHECK(tl_ult_create_nested(NULL, &attr, nested_child, &kids[i]) == 0);
    }
    ACHECK(tl_ult_dep_wait() == 0);
    self->children_done_before_wait = atomic_load(&self->children_finished) == fanout;
    for (int i = 0; i < fanout; i++)
        ACHECK(kids[i].children_done_before_wait == 1);
    free(kids);
}

static void *nested_child(void *arg)
{
    struct node *self = arg;
    if (self->depth > 0)
        spawn_children(self, 3);
    else
        self->children_done_before_wait = 1;
    if (self->depth % 2)
        tl_ult_yield();
    if (self->parent)
        atomic_fetch_add(&self->parent->children_finished, 1);
    return NULL;
}

static void test_nested(int depth)
{
    struct node root = {0};
    root.depth = depth;
    spawn_children(&root, 3); /* the primordial ULT is the creator */
    CHECK(root.children_done_before_wait == 1);
    CHECK(tl_ult_dep_wait() == 0); /* nothing pending: returns at once */
}

/* DAG: a, b -> c (c created first with 2 input dependences); c -> d. */
static int order_a, order_b, order_c, order_d;
static tl_ult_t thread_d;

static void *dag_a(void *arg)
{
    (void)arg;
    tl_ult_usleep(300);
    order_a = atomic_fetch_add(&seq, 1);
    return NULL;
}

static void *dag_b(void *arg)
{
    (void)arg;
    order_b = atomic_fetch_add(&seq, 1);
    return NULL;
}

static void *dag_c(void *arg)
{
    (void)arg;
    order_c = atomic_fetch_add(&seq, 1);
    return NULL;
}

static void *dag_d(void *arg)
{
    (void)arg;
    order_d = atomic_fetch_add(&seq, 1);
    return (void *)0xd;
}

static void test_dag(void)
{
    for (int rep = 0; rep < 50 / SCALE + 1; rep++) {
        atomic_store(&seq, 0);
        tl_ult_t c;
        void *r = NULL;
        CHECK(tl_ult_create_dep(&thread_d, NULL, dag_d, NULL, 1, NULL) == 0);
        CHECK(tl_ult_create_dep(&c, NULL, dag_c, NULL, 2, thread_d) == 0);
        tl_ult_attr attr;
        tl_ult_attr_init(&attr);
        attr.detached = 1;
        CHECK(tl_ult_create_dep(NULL, &attr, dag_a, NULL, 0, c) == 0);
        CHECK(tl_ult_create_dep(NULL, &attr, dag_b, NULL, 0, c) == 0);
        CHECK(tl_ult_join(thread_d, &r) == 0);
        CHECK(r == (void *)0xd);
        CHECK(tl_ult_join(c, NULL) == 0);
        CHECK(order_c > order_a && order_c > order_b && order_d > order_c);
    }
    /* manual satisfaction, from a foreign context too */
    tl_ult_t g;
    atomic_store(&seq, 0);
    CHECK(tl_ult_create_dep(&g, NULL, dag_b, NULL, 2, NULL) == 0);
    CHECK(tl_ult_dep_add(g, 1) == 0);
    CHECK(tl_ult_dep_satisfy(g) == 0);
    CHECK(tl_ult_dep_satisfy(g) == 0);
    tl_ult_usleep(200);
    CHECK(atomic_load(&seq) == 0); /* one dependence left */
    CHECK(tl_ult_dep_satisfy(g) == 0);
    CHECK(tl_ult_join(g, NULL) == 0);
    CHECK(atomic_load(&seq) == 1);
}

static void run_all(void)
{
    test_workdescs();
    test_nested(SCALE > 1 ? 3 : 5);
    test_dag();
}

int main(void)
{
    alarm(100);
    unsigned vps[] = {1, 3, 8};
    for (int k = 0; k < 3; k++) {
        tl_ult_config cfg;
        tl_ult_config_init(&cfg);
        cfg.nvps = vps[k];
        cfg.pin = 0;
        CHECK(tl_ult_init(&cfg) == 0);
        for (int i = 0; i < 64; i++)
            atomic_store(&vps_used[i], 0);
        run_all();
        int used = 0;
        for (int i = 0; i < 64; i++)
            used += atomic_load(&vps_used[i]) > 0;
        printf("%u VPs: loop chunks ran on %d VPs\n", vps[k], used);
        CHECK(tl_ult_finalize() == 0);
    }
    CHECK(atomic_load(&async_failures) == 0);
    return check_report("ult.workdesc");
}
