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
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"

#define HANDOFF_ROUNDS 4000 /* round trips per block */
#define HANDOFF_BLOCKS 7    /* blocks; the median is reported */
#define HANDOFF_TURNS (2ull * HANDOFF_ROUNDS * HANDOFF_BLOCKS)

struct handoff {
    _Atomic uint64_t turn TL_ALIGNED_CACHE_LINE;
    double ns[HANDOFF_BLOCKS] TL_ALIGNED_CACHE_LINE; /* the asker's blocks */
};

/* Waits for turn k (the other thread's store); no pause: it would be
 * part of the latency measured. */
static inline void wait_turn(struct handoff *h, uint64_t k)
{
    while (atomic_load_explicit(&h->turn, memory_order_acquire) != k)
        ;
}

/* Waits for turn k, then gives turn k + 1. */
static inline void take_turn(struct handoff *h, uint64_t k)
{
    wait_turn(h, k);
    atomic_store_explicit(&h->turn, k + 1, memory_order_release);
}

/* The answering side: the odd turns. */
static void answer(void *arg, uint64_t turns)
{
    for (uint64_t k = 1; k < turns; k += 2)
        take_turn(arg, k);
}

/* The asking side: the even turns, timed block by block. */
static void ask(void *arg, uint64_t turns)
{
    (void)turns;
    struct handoff *h = arg;
    uint64_t k = 0;
    for (int b = 0; b < HANDOFF_BLOCKS; b++) {
        uint64_t t0 = tl_now();
        for (int r = 0; r < HANDOFF_ROUNDS; r++, k += 2)
            take_turn(h, k);
        wait_turn(h, k); /* the last answer, before the clock is read */
        h->ns[b] = tl_ticks_to_ns(tl_now() - t0) / (2.0 * HANDOFF_ROUNDS);
    }
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
    /* both started before either runs a turn: neither waits for a
     * partner that could not be started */
    tl_partner *answerer = tl_partner_start(ctx, slot_b, answer, h);
    tl_partner *asker = answerer ? tl_partner_start(ctx, slot_a, ask, h) : NULL;
    double ns = NAN;
    if (asker) {
        tl_partner_go(answerer, HANDOFF_TURNS);
        tl_partner_go(asker, HANDOFF_TURNS);
        tl_partner_wait(asker);
        tl_partner_wait(answerer);
        ns = tl_median(h->ns, HANDOFF_BLOCKS);
    }
    tl_partner_stop(asker);
    tl_partner_stop(answerer);
    free(h);
    return ns;
}
