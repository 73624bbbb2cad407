/*
 * deque.c - Chase-Lev work-stealing deque (Chase & Lev, SPAA 2005), in the
 * C11 formulation of Le, Pop, Cohen and Zappa Nardelli (PPoPP 2013), with
 * the standalone fences replaced by seq_cst accesses on top/bottom so that
 * ThreadSanitizer (which does not model fences) understands it. On x86-64
 * that costs the same: one locked/xchg instruction in take, one CAS in
 * steal, plain stores in push. With a single VP there are no thieves and
 * take needs no fence at all.
 *
 * The owner pushes and takes at the bottom (LIFO: the most recent child
 * first, depth-first, cache-warm); thieves steal at the top (FIFO: the
 * oldest, usually the largest piece of work). The array grows by doubling;
 * old arrays stay allocated until the deque is destroyed because a slow
 * thief may still read them (its CAS on top then tells it whether what it
 * read is valid).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdlib.h>

static tlu_deque_array *array_new(int64_t capacity)
{
    tlu_deque_array *a = malloc(sizeof *a + (size_t)capacity * sizeof(a->buf[0]));
    if (!a)
        return NULL;
    a->mask = capacity - 1;
    a->retired = NULL;
    for (int64_t i = 0; i < capacity; i++)
        atomic_init(&a->buf[i], NULL);
    return a;
}

int tlu_deque_init(tlu_deque *q, int64_t capacity)
{
    tlu_deque_array *a = array_new(capacity);
    if (!a)
        return ENOMEM;
    atomic_init(&q->top, 0);
    atomic_init(&q->bottom, 0);
    atomic_init(&q->array, a);
    q->top_seen = 0;
    return 0;
}

void tlu_deque_destroy(tlu_deque *q)
{
    tlu_deque_array *a = atomic_load_explicit(&q->array, RLX);
    while (a) {
        tlu_deque_array *r = a->retired;
        free(a);
        a = r;
    }
    atomic_store_explicit(&q->array, NULL, RLX);
}

struct grow {
    int64_t capacity;
    tlu_deque_array *n;
};

static void grow_alloc(void *arg)
{
    struct grow *g = arg;
    g->n = array_new(g->capacity);
    if (!g->n)
        tlu_die("threadlab-ult: out of memory growing a run queue");
}

tlu_deque_array *tlu_deque_grow(tlu_deque *q, tlu_deque_array *a, int64_t t, int64_t b)
{
    struct grow g = {2 * (a->mask + 1), NULL};
    tlu_slowpath(tlu_vp_self(), grow_alloc, &g);
    tlu_deque_array *n = g.n;
    for (int64_t i = t; i < b; i++)
        atomic_store_explicit(&n->buf[i & n->mask],
                              atomic_load_explicit(&a->buf[i & a->mask], RLX), RLX);
    n->retired = a;
    atomic_store_explicit(&q->array, n, REL);
    return n;
}

void *tlu_deque_take_ex(tlu_deque *q, int fenced)
{
    int64_t b = atomic_load_explicit(&q->bottom, RLX) - 1;
    tlu_deque_array *a = atomic_load_explicit(&q->array, RLX);
    if (tlu_rt.nvps == 1 && !fenced) {
        /* no thief exists (external threads use the inboxes): no fence */
        int64_t t = atomic_load_explicit(&q->top, RLX);
        q->top_seen = t;
        if (t > b)
            return NULL;
        atomic_store_explicit(&q->bottom, b, RLX);
        return atomic_load_explicit(&a->buf[b & a->mask], RLX);
    }
    atomic_store_explicit(&q->bottom, b, SEQ);
    int64_t t = atomic_load_explicit(&q->top, SEQ);
    q->top_seen = t;
    void *x = NULL;
    if (t <= b) {
        x = atomic_load_explicit(&a->buf[b & a->mask], RLX);
        if (t == b) {
            /* last element: race with the thieves for it */
            if (!atomic_compare_exchange_strong_explicit(&q->top, &t, t + 1, SEQ, RLX))
                x = NULL;
            atomic_store_explicit(&q->bottom, b + 1, REL); /* release: thieves acquire it */
        }
    } else {
        atomic_store_explicit(&q->bottom, b + 1, REL); /* release: thieves acquire it */
    }
    return x;
}

void *tlu_deque_steal(tlu_deque *q)
{
    int64_t t = atomic_load_explicit(&q->top, SEQ);
    int64_t b = atomic_load_explicit(&q->bottom, SEQ);
    if (t >= b)
        return NULL;
    tlu_deque_array *a = atomic_load_explicit(&q->array, ACQ);
    void *x = atomic_load_explicit(&a->buf[t & a->mask], RLX);
    if (!atomic_compare_exchange_strong_explicit(&q->top, &t, t + 1, SEQ, RLX))
        return TLU_DEQUE_ABORT;
    return x;
}

/* ---- the public deque (threadlab/ult.h): the same structure for
 * runtimes built on the library; always fenced (its thieves may run on
 * the same VP as other ULTs, or on external threads) ---------------------- */

struct tl_ult_deque {
    tlu_deque q;
};

int tl_ult_deque_create(tl_ult_deque **out)
{
    tl_ult_deque *d = aligned_alloc(TL_CACHE_LINE, (sizeof *d + TL_CACHE_LINE - 1) / TL_CACHE_LINE * TL_CACHE_LINE);
    if (!d)
        return ENOMEM;
    if (tlu_deque_init(&d->q, 64)) {
        free(d);
        return ENOMEM;
    }
    *out = d;
    return 0;
}

void tl_ult_deque_destroy(tl_ult_deque *d)
{
    if (!d)
        return;
    tlu_deque_destroy(&d->q);
    free(d);
}

void tl_ult_deque_push(tl_ult_deque *d, void *p)
{
    tlu_deque_push(&d->q, p);
}

void *tl_ult_deque_take(tl_ult_deque *d)
{
    return tlu_deque_take_ex(&d->q, 1);
}

void *tl_ult_deque_steal(tl_ult_deque *d)
{
    void *x = tlu_deque_steal(&d->q);
    return x == TLU_DEQUE_ABORT ? NULL : x;
}

int tl_ult_deque_holds(tl_ult_deque *d, long n)
{
    return tlu_deque_holds(&d->q, n);
}

long tl_ult_deque_size(tl_ult_deque *d)
{
    int64_t n = tlu_deque_size_hint(&d->q);
    return n > 0 ? (long)n : 0;
}
