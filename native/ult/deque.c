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

tlu_thread *tlu_deque_take(tlu_deque *q)
{
    int64_t b = atomic_load_explicit(&q->bottom, RLX) - 1;
    tlu_deque_array *a = atomic_load_explicit(&q->array, RLX);
    if (tlu_rt.nvps == 1) {
        /* no thief exists (external threads use the inboxes): no fence */
        int64_t t = atomic_load_explicit(&q->top, RLX);
        if (t > b)
            return NULL;
        atomic_store_explicit(&q->bottom, b, RLX);
        return atomic_load_explicit(&a->buf[b & a->mask], RLX);
    }
    atomic_store_explicit(&q->bottom, b, SEQ);
    int64_t t = atomic_load_explicit(&q->top, SEQ);
    tlu_thread *x = NULL;
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

tlu_thread *tlu_deque_steal(tlu_deque *q)
{
    int64_t t = atomic_load_explicit(&q->top, SEQ);
    int64_t b = atomic_load_explicit(&q->bottom, SEQ);
    if (t >= b)
        return NULL;
    tlu_deque_array *a = atomic_load_explicit(&q->array, ACQ);
    tlu_thread *x = atomic_load_explicit(&a->buf[t & a->mask], RLX);
    if (!atomic_compare_exchange_strong_explicit(&q->top, &t, t + 1, SEQ, RLX))
        return TLU_DEQUE_ABORT;
    return x;
}
