/*
 * parallel.c - the parallel construct's entries, the legacy split pair,
 * the team inquiries of the omp_* API, and cancellation.
 *
 * Cancellation, as libgomp 12 does it. With OMP_CANCELLATION unset or
 * false (the default; read at start-up) the cancel construct does nothing
 * and cancellation points return false, and nothing else looks. With it
 * true, a cancel construct sets a flag that only it writes, and the
 * cancellation points read it (GCC's code then jumps to the construct's
 * end):
 *   parallel   team->cancelled: every thread of the team leaves at its
 *              next cancellation point or cancellable barrier; the
 *              waiters of such a barrier are woken and leave (barrier.c);
 *              the region's tasks not started yet are discarded, and new
 *              ones are not created (task.c). A thread that leaves so
 *              says it will reach no further worksharing construct
 *              (tlg_ws_gone), for those who have not seen the cancel
 *              yet. Reset when the cached team starts its next region,
 *              with its barrier's counts.
 *   for, sections  team->ws_cancelled: threads skip the rest of the
 *              construct at their next cancellation point in it; its
 *              barrier's last arrival resets the flag, and its end
 *              (GOMP_loop_end_cancel) answers false: GCC's code leaves the
 *              region when it answers true, which only a cancel parallel
 *              means. Orphaned outside any team: the caller alone skips.
 *   taskgroup  the innermost taskgroup's flag (a worksharing construct's
 *              own taskgroup's outer one): its tasks not started yet are
 *              discarded, new ones not created; the one running ends at
 *              its next cancellation point. Tasks outside any team run at
 *              once and are not cancelled, as in libgomp.
 * A discarded task completes without running (its dependences released,
 * its taskgroup and parent told), unless cpyfn copied its arguments: its
 * body destroys them, so it runs.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <omp.h>

TLG_EXPORT void GOMP_parallel(tlg_fn fn, void *data, unsigned nthreads, unsigned flags)
{
    tlg_parallel(fn, data, tlg_resolve_threads(nthreads, 0), flags, NULL, NULL, NULL);
}

/* reduction(task, ...) on a parallel: the private copies are registered
 * for the team; GCC's code combines as many as this returns. */
TLG_EXPORT unsigned GOMP_parallel_reductions(tlg_fn fn, void *data, unsigned nthreads, unsigned flags)
{
    unsigned n = tlg_resolve_threads(nthreads, 0);
    uintptr_t *rdata = *(uintptr_t **)data;
    tlg_parallel(fn, data, n, flags, NULL, NULL, rdata);
    return n;
}

TLG_EXPORT void GOMP_parallel_start(tlg_fn fn, void *data, unsigned nthreads)
{
    tlg_parallel_start(fn, data, tlg_resolve_threads(nthreads, 0), NULL, NULL);
}

TLG_EXPORT void GOMP_parallel_end(void)
{
    tlg_parallel_end();
}

/* GOMP_cancel's and GOMP_cancellation_point's `which` (GCC's
 * gomp-constants.h; loop is for and do) */
#define TLG_CANCEL_PARALLEL 1
#define TLG_CANCEL_LOOP 2
#define TLG_CANCEL_SECTIONS 4
#define TLG_CANCEL_TASKGROUP 8

TLG_EXPORT bool GOMP_cancellation_point(int which)
{
    if (TLG_LIKELY(!tlg_env_v.cancellation))
        return false;
    tlg_thread *thr = tlg_self();
    tlg_team *team = thr->team;
    if (which & (TLG_CANCEL_LOOP | TLG_CANCEL_SECTIONS))
        return team && atomic_load_explicit(&team->ws_cancelled, RLX);
    if (which & TLG_CANCEL_TASKGROUP) /* its tasks are cancelled with their parallel too */
        return tlg_cancelled(team, thr->task->taskgroup);
    if (!tlg_cancelled(team, NULL))
        return false;
    tlg_ws_gone(thr); /* GCC's code leaves the region */
    return true;
}

TLG_EXPORT bool GOMP_cancel(int which, bool do_cancel)
{
    if (TLG_LIKELY(!tlg_env_v.cancellation))
        return false;
    if (!do_cancel)
        return GOMP_cancellation_point(which); /* an if clause that is false */
    tlg_thread *thr = tlg_self();
    tlg_team *team = thr->team;
    if (which & (TLG_CANCEL_LOOP | TLG_CANCEL_SECTIONS)) {
        if (team)
            atomic_store_explicit(&team->ws_cancelled, 1, RLX);
        return true;
    }
    if (which & TLG_CANCEL_TASKGROUP) {
        tlg_taskgroup *tg = thr->task->taskgroup;
        if (team && tg)
            atomic_store_explicit(&tlg_taskgroup_cancels(tg)->cancelled, 1, RLX);
        return true;
    }
    if (!team)
        return true;
    if (!atomic_load_explicit(&team->cancelled, RLX)) {
        /* then the event: the Dekker pair with a cancellable barrier's
         * waiters, which read the event, then the flag */
        atomic_store_explicit(&team->cancelled, 1, SEQ);
        tlg_team_event(team, 1);
    }
    tlg_ws_gone(thr);
    return true;
}

/* ---- team inquiries ------------------------------------------------------------ */

TLG_EXPORT int omp_get_num_threads(void)
{
    tlg_thread *thr = tlg_self();
    return thr->team ? (int)thr->team->nthreads : 1;
}

TLG_EXPORT int omp_get_thread_num(void)
{
    return (int)tlg_self()->id;
}

TLG_EXPORT int omp_in_parallel(void)
{
    return tlg_self()->active_level > 0;
}

TLG_EXPORT int omp_get_level(void)
{
    return (int)tlg_self()->level;
}

TLG_EXPORT int omp_get_active_level(void)
{
    return (int)tlg_self()->active_level;
}

/* The state of the encountering thread of `level` (0: the initial
 * thread), walking the masters' saved states. */
static tlg_thread *at_level(int level)
{
    tlg_thread *thr = tlg_self();
    if (level < 0 || level > (int)thr->level)
        return NULL;
    while ((int)thr->level > level) {
        /* the master of thr's team, outside that team */
        tlg_thread *m = thr->team->threads[0];
        thr = m->prev;
    }
    return thr;
}

TLG_EXPORT int omp_get_ancestor_thread_num(int level)
{
    tlg_thread *t = at_level(level);
    return t ? (int)t->id : -1;
}

TLG_EXPORT int omp_get_team_size(int level)
{
    tlg_thread *t = at_level(level);
    if (!t)
        return -1;
    return t->team ? (int)t->team->nthreads : 1;
}
