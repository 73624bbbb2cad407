/*
 * ordered.c - the ordered construct inside a loop with an ordered clause.
 *
 * Every chunk of an ordered loop has a ticket, its rank in iteration
 * order (iter.c). A thread holds the ticket of its current chunk; its
 * ordered regions may run once the work share's `ordered_cur` equals that
 * ticket, and the ticket is passed on (ordered_cur + 1) when the chunk is
 * done, whether or not an ordered region ran in it: at the next chunk
 * request or at the end of the loop. As in libgomp, the order is kept per
 * chunk, so a thread runs the ordered regions of all the iterations of its
 * chunk in one turn.
 *
 * Doacross loops (ordered(n) with depend(sink/source)) are doacross.c's.
 */
#define _GNU_SOURCE
#include "gomp.h"

void tlg_ordered_take(tlg_thread *thr, uint32_t ticket)
{
    thr->ord_ticket = ticket;
    thr->ord_held = 1;
}

static void wait_turn(tlg_ws *ws, uint32_t ticket)
{
    for (;;) {
        uint32_t cur = atomic_load_explicit(&ws->ordered_cur, ACQ);
        if (cur == ticket)
            return;
        tlg_wait_word(&ws->ordered_cur, cur);
    }
}

void tlg_ordered_pass(tlg_thread *thr)
{
    tlg_ws *ws = thr->ws;
    thr->ord_held = 0;
    wait_turn(ws, thr->ord_ticket);
    atomic_store_explicit(&ws->ordered_cur, thr->ord_ticket + 1, REL);
    tl_ult_wake(&ws->ordered_cur, INT_MAX);
}

TLG_EXPORT void GOMP_ordered_start(void)
{
    tlg_thread *thr = tlg_self();
    /* outside an ordered loop (orphaned, or a team of one): nothing to order */
    if (thr->ws && thr->ord_held)
        wait_turn(thr->ws, thr->ord_ticket);
}

TLG_EXPORT void GOMP_ordered_end(void)
{
}
