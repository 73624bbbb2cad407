/*
 * single.c - the single construct. Without copyprivate, the first thread
 * to reach a given single executes it: the team counts singles, each
 * thread counts its own, and the CAS from the thread's count to the next
 * one succeeds for exactly one thread per construct (libgomp's scheme; no
 * work share needed). With copyprivate, a work share carries the pointer
 * the executing thread publishes in GOMP_single_copy_end; the others pick
 * it up after a barrier, and GCC's code ends the construct with another.
 * The scope construct with task reductions is also handled here.
 */
#define _GNU_SOURCE
#include "gomp.h"

TLG_EXPORT bool GOMP_single_start(void)
{
    tlg_thread *thr = tlg_self();
    tlg_team *team = thr->team;
    if (!team)
        return true;
    unsigned long mine = thr->single_count++;
    return atomic_compare_exchange_strong_explicit(&team->single_count, &mine, mine + 1, ACQREL, RLX);
}

static void nothing(tlg_thread *thr, tlg_ws *ws, void *arg)
{
    (void)thr;
    (void)ws;
    (void)arg;
}

TLG_EXPORT void *GOMP_single_copy_start(void)
{
    tlg_thread *thr = tlg_self();
    if (tlg_ws_start(thr)) {
        tlg_ws_ready(thr);
        return NULL;
    }
    tlg_barrier(thr);
    void *p = thr->ws->copyprivate;
    tlg_ws_end_nowait(thr);
    return p;
}

TLG_EXPORT void GOMP_single_copy_end(void *data)
{
    tlg_thread *thr = tlg_self();
    if (thr->team) {
        thr->ws->copyprivate = data;
        tlg_barrier(thr);
    }
    tlg_ws_end_nowait(thr);
}

/* scope with task reductions: a work share only to choose who registers
 * the reductions first; the barrier and the unregistration come from
 * GCC's code. */
TLG_EXPORT void GOMP_scope_start(uintptr_t *reductions)
{
    tlg_thread *thr = tlg_self();
    tlg_ws_enter(thr, nothing, NULL, reductions, NULL);
    tlg_ws_end_nowait(thr);
}
