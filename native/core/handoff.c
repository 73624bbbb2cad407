/* handoff.c - the one-way hand-off latency of a cache line between two
 * slots' CPUs (tl_line_handoff_ns).
 *
 * Why: on a virtual machine the host decides where the guest's CPUs run,
 * and may move them. On this project's 2-CPU machine a line moved between
 * its two CPUs in about 30 ns for minutes, then in about 170 ns for
 * minutes (the CPUs on one core complex, then on two), and every figure
 * made of cross-CPU hand-offs (a fork, a barrier, a stolen task) moved
 * with it, by up to 4x. A record that carries this figure, measured at
 * its point, says which machine it was taken on. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

#define HANDOFF_ROUNDS 4000 /* round trips per block */
#define HANDOFF_BLOCKS 7    /* blocks; the median is reported */
#define HANDOFF_CANCEL UINT64_MAX

struct handoff {
    _Atomic uint64_t turn TL_ALIGNED_CACHE_LINE;
    uint64_t total;
};

/* The answering side: turn odd -> even. */
static void *answer(void *arg)
{
    struct handoff *h = arg;
    for (uint64_t k = 1; k < h->total; k += 2) {
        uint64_t v;
        while ((v = atomic_load_explicit(&h->turn, memory_order_acquire)) != k)
            if (v == HANDOFF_CANCEL)
                return NULL;
        atomic_store_explicit(&h->turn, k + 1, memory_order_release);
    }
    return NULL;
}

struct asker {
    struct handoff *h;
    double ns[HANDOFF_BLOCKS];
};

static void *ask(void *arg)
{
    struct asker *a = arg;
    struct handoff *h = a->h;
    uint64_t k = 0;
    for (int b = 0; b < HANDOFF_BLOCKS; b++) {
        uint64_t t0 = tl_now();
        for (int r = 0; r < HANDOFF_ROUNDS; r++, k += 2) {
            while (atomic_load_explicit(&h->turn, memory_order_acquire) != k)
                ;
            atomic_store_explicit(&h->turn, k + 1, memory_order_release);
        }
        /* the last answer arrives before the clock is read */
        while (atomic_load_explicit(&h->turn, memory_order_acquire) != k)
            ;
        a->ns[b] = tl_ticks_to_ns(tl_now() - t0) / (2.0 * HANDOFF_ROUNDS);
    }
    return NULL;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double tl_line_handoff_ns(tl_ctx *ctx, unsigned slot_a, unsigned slot_b)
{
    if (ctx->placement == TL_PLACE_UNBOUND || slot_a >= ctx->nslots || slot_b >= ctx->nslots ||
        ctx->cpu[slot_a] == ctx->cpu[slot_b])
        return NAN;
    struct handoff *h = aligned_alloc(TL_CACHE_LINE, sizeof *h);
    if (!h)
        return NAN;
    atomic_init(&h->turn, 0);
    h->total = 2ull * HANDOFF_ROUNDS * HANDOFF_BLOCKS;
    struct asker a = {.h = h};
    pthread_t ta, tb;
    double ns = NAN;
    if (tl_thread_create(ctx, slot_b, &tb, answer, h) == 0) {
        if (tl_thread_create(ctx, slot_a, &ta, ask, &a) == 0) {
            pthread_join(ta, NULL);
            qsort(a.ns, HANDOFF_BLOCKS, sizeof a.ns[0], cmp_double);
            ns = a.ns[HANDOFF_BLOCKS / 2];
        } else {
            /* release the answerer: it waits for turns nobody will give */
            atomic_store_explicit(&h->turn, HANDOFF_CANCEL, memory_order_release);
        }
        pthread_join(tb, NULL);
    }
    free(h);
    return ns;
}
