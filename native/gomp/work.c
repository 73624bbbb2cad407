/*
 * work.c - work shares: the shared state of one worksharing construct.
 *
 * The threads of a team meet the same worksharing constructs in the same
 * order (OpenMP requires it), so construct number s of the region (each
 * thread counts its own) is the same construct for everyone. Work share s
 * lives in slot s mod TLG_WS_RING of the team; its tag holds (s << 1) | 1
 * once initialised. The first thread to reach construct s claims the slot
 * (CAS of the tag from the previous occupant's, which every thread must
 * have left: `left` is 0) and initialises it; the others wait for the
 * tag. With nowait a fast thread may run ahead of slow ones by up to
 * TLG_WS_RING constructs; further than that it waits for the slot. The
 * thread that claims a slot frees what the previous construct held.
 *
 * A cancel parallel lets threads leave the region without reaching the
 * constructs after it (a cancellation point said so), while those that
 * have not seen it yet go on: the slot of a construct that a thread gone
 * so never reached is free once every thread it still counts is gone
 * (tlg_ws_gone; without that, the 16th nowait construct after the cancel
 * waited for ever).
 *
 * A combined parallel loop or sections construct initialises slot 0
 * before the team starts (GOMP_parallel_loop_*): the threads then begin
 * with it as their current work share.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* What a construct held in its slot goes: the slot is reused, or nobody
 * uses it any more. */
static void ws_release(tlg_ws *ws)
{
    free(ws->mem);
    ws->mem = NULL;
    tlg_doacross_free(ws);
}

void tlg_ws_reset(tlg_team *team, unsigned n)
{
    for (int64_t i = 0; i < n; i++) {
        tlg_ws *ws = &team->ws[i];
        /* as if construct i - RING had been left by everyone */
        atomic_store_explicit(&ws->tag, ((i - TLG_WS_RING) * 2) | 1, RLX);
        atomic_store_explicit(&ws->left, 0, RLX);
        ws_release(ws); /* nobody uses the slot: the team has ended */
    }
}

static void ws_clear(tlg_ws *ws)
{
    ws->sched = TLG_SCHED_STATIC;
    ws->ull = 0;
    ws->ordered = 0;
    atomic_store_explicit(&ws->ordered_cur, 0, RLX);
    ws->ordered_tickets = 0;
    atomic_store_explicit(&ws->lock, 0, RLX);
    atomic_store_explicit(&ws->sect_next, 1, RLX);
    ws->sect_count = 0;
    ws->copyprivate = NULL;
    ws->task_reductions = NULL;
}

/* In a cancelled region, whether every thread that the caller's slot ws
 * still counts in its previous construct has left the region without
 * reaching it (they never will: tlg_ws_gone). Threads only join those
 * gone, so a count read first cannot match a later tally too soon. */
__attribute__((noinline)) static int ws_left_gone(tlg_thread *thr, tlg_ws *ws)
{
    tlg_team *team = thr->team;
    if (!atomic_load_explicit(&team->cancelled, RLX))
        return 0;
    int64_t seq = thr->ws_seq - 1 - TLG_WS_RING;
    unsigned left = atomic_load_explicit(&ws->left, SEQ), gone = 0;
    for (unsigned k = 0; k < team->nthreads; k++) {
        int64_t g = atomic_load_explicit(&team->threads[k]->ws_gone, SEQ);
        gone += g && g - 1 <= seq;
    }
    return left == gone;
}

/* Whether every thread has left the previous construct of the caller's
 * slot ws (tlg_ws_start). */
static inline int ws_left(tlg_thread *thr, tlg_ws *ws)
{
    return atomic_load_explicit(&ws->left, SEQ) == 0 || (TLG_UNLIKELY(tlg_env_v.cancellation) && ws_left_gone(thr, ws));
}

static void ws_changed(tlg_team *team);

void tlg_ws_gone(tlg_thread *thr)
{
    /* the Dekker pair with tlg_ws_start's waiter: say so, then wake */
    atomic_store_explicit(&thr->ws_gone, thr->ws_seq + 1, SEQ);
    ws_changed(thr->team);
}

int tlg_ws_start(tlg_thread *thr)
{
    tlg_team *team = thr->team;
    if (TLG_UNLIKELY(!team)) {
        /* an orphaned construct outside any team: the thread is alone */
        if (!thr->solo) {
            thr->solo = tlg_aligned_alloc(TLG_LINE, sizeof(tlg_ws));
            memset(thr->solo, 0, sizeof(tlg_ws));
        }
        thr->ws = thr->solo;
        ws_release(thr->solo);
        ws_clear(thr->solo);
        atomic_store_explicit(&thr->solo->left, 1, RLX);
        return 1;
    }
    int64_t s = thr->ws_seq++;
    tlg_ws *ws = &team->ws[s % TLG_WS_RING];
    thr->ws = ws;
    int64_t mine = (s * 2) | 1, prev = ((s - TLG_WS_RING) * 2) | 1;
    for (unsigned n = 0;; n++) {
        uint32_t ev = atomic_load_explicit(&team->event, ACQ);
        int64_t tag = atomic_load_explicit(&ws->tag, SEQ);
        if (tag == mine)
            return 0;
        if (tag == prev && ws_left(thr, ws)) {
            if (atomic_compare_exchange_strong_explicit(&ws->tag, &tag, s * 2, ACQ, RLX)) {
                /* the slot is ours: what the previous construct held goes */
                ws_release(ws);
                ws_clear(ws);
                atomic_store_explicit(&ws->left, team->nthreads, RLX);
                return 1;
            }
            continue;
        }
        /* being initialised, or the previous occupant is still in use:
         * both are short unless a thread is far behind (or its VP's
         * kernel thread is not running): yield a while, then park on the
         * team's event word, which ws_changed bumps */
        if (!tl_ult_self()) {
            tl_cpu_relax();
            if (n >= 64)
                sched_yield();
        } else if (n < 16) {
            tl_ult_yield();
        } else {
            atomic_fetch_add_explicit(&team->nparked, 1, SEQ);
            int64_t again = atomic_load_explicit(&ws->tag, SEQ);
            if (again != mine && !(again == prev && ws_left(thr, ws)))
                tl_ult_wait(&team->event, ev);
            atomic_fetch_sub_explicit(&team->nparked, 1, RLX);
        }
    }
}

/* A slot became initialised or free: wake whoever parked waiting for it
 * (the Dekker pair with tlg_ws_start's waiter, which counts itself
 * parked, then re-reads the slot). */
static void ws_changed(tlg_team *team)
{
    if (team && atomic_load_explicit(&team->nparked, SEQ))
        tlg_team_event(team, 1);
}

void tlg_ws_ready(tlg_thread *thr)
{
    tlg_ws *ws = thr->ws;
    int64_t tag = atomic_load_explicit(&ws->tag, RLX);
    atomic_store_explicit(&ws->tag, tag | 1, SEQ);
    ws_changed(thr->team);
}

void tlg_ws_end_nowait(tlg_thread *thr)
{
    tlg_ws *ws = thr->ws;
    if (!ws)
        return;
    if (thr->ord_held)
        tlg_ordered_pass(thr);
    thr->ws = NULL;
    if (atomic_fetch_sub_explicit(&ws->left, 1, SEQ) == 1)
        ws_changed(thr->team);
}

bool tlg_ws_end(tlg_thread *thr, bool cancellable)
{
    tlg_ws_end_nowait(thr);
    if (cancellable)
        return tlg_barrier_cancel(thr);
    tlg_barrier(thr);
    return false;
}

void tlg_ws_enter(tlg_thread *thr, tlg_ws_init_fn init, void *arg, uintptr_t *reductions, void **mem)
{
    if (reductions)
        tlg_workshare_taskgroup_start(thr);
    if (tlg_ws_start(thr)) {
        tlg_ws *ws = thr->ws;
        init(thr, ws, arg);
        if (reductions) {
            tlg_taskgroup_register(thr, reductions);
            thr->task->taskgroup->workshare = 1;
            ws->task_reductions = reductions;
        }
        if (mem) {
            /* zeroed memory all the threads of the construct share */
            size_t size = (size_t)(uintptr_t)*mem;
            ws->mem = tlg_aligned_alloc(TLG_LINE, size);
            memset(ws->mem, 0, size);
            *mem = ws->mem;
        }
        tlg_ws_ready(thr);
        return;
    }
    tlg_ws *ws = thr->ws;
    if (reductions)
        tlg_workshare_reductions_register(thr, reductions, ws->task_reductions);
    if (mem)
        *mem = ws->mem;
}

tlg_ws *tlg_ws0(tlg_team *team)
{
    tlg_ws *ws = &team->ws[0];
    ws_clear(ws);
    atomic_store_explicit(&ws->left, team->nthreads, RLX);
    return ws;
}

void tlg_ws0_ready(tlg_ws *ws)
{
    atomic_store_explicit(&ws->tag, 1, RLX); /* construct 0, initialised */
}
