/*
 * parallel.c - the parallel construct's entries, the legacy split pair,
 * the team inquiries of the omp_* API, and cancellation.
 *
 * Cancellation: with OMP_CANCELLATION unset or false (the default), the
 * cancel construct does nothing and cancellation points return false, as
 * OpenMP says. Actually cancelling (OMP_CANCELLATION=true and a cancel
 * construct that fires) is not implemented: it stops the program with a
 * message naming GOMP_cancel.
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

TLG_EXPORT bool GOMP_cancellation_point(int which)
{
    (void)which;
    return false; /* nothing is ever cancelled (see above) */
}

TLG_EXPORT bool GOMP_cancel(int which, bool do_cancel)
{
    (void)which;
    if (!tlg_env_v.cancellation || !do_cancel)
        return false;
    tlg_unsupported("GOMP_cancel", "cancelling a construct with OMP_CANCELLATION=true");
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
