/*
 * sections.c - the sections construct: a work share whose chunks are the
 * section numbers 1..count, handed out one at a time (a dynamic loop over
 * [1, count + 1)); 0 means no section is left.
 */
#define _GNU_SOURCE
#include "gomp.h"

static void sections_init(tlg_thread *thr, tlg_ws *ws, void *p)
{
    unsigned count = *(unsigned *)p;
    tlg_loop_init(ws, 1, (long)count + 1, 1, TLG_SCHED_DYNAMIC, 1, thr->team ? thr->team->nthreads : 1);
}

static unsigned next_section(tlg_thread *thr)
{
    long s, e;
    return tlg_iter_next(thr, &s, &e) ? (unsigned)s : 0;
}

TLG_EXPORT unsigned GOMP_sections_start(unsigned count)
{
    tlg_thread *thr = tlg_self();
    tlg_ws_enter(thr, sections_init, &count, NULL, NULL);
    return next_section(thr);
}

TLG_EXPORT unsigned GOMP_sections2_start(unsigned count, uintptr_t *reductions, void **mem)
{
    tlg_thread *thr = tlg_self();
    tlg_ws_enter(thr, sections_init, &count, reductions, mem);
    return next_section(thr);
}

TLG_EXPORT unsigned GOMP_sections_next(void)
{
    return next_section(tlg_self());
}

TLG_EXPORT void GOMP_sections_end(void)
{
    tlg_ws_end(tlg_self(), false);
}

/* as GOMP_loop_end_cancel */
TLG_EXPORT bool GOMP_sections_end_cancel(void)
{
    return tlg_ws_end(tlg_self(), true);
}

TLG_EXPORT void GOMP_sections_end_nowait(void)
{
    tlg_ws_end_nowait(tlg_self());
}

static void ws0_sections(tlg_team *team, void *p)
{
    tlg_ws *ws = tlg_ws0(team);
    tlg_loop_init(ws, 1, (long)*(unsigned *)p + 1, 1, TLG_SCHED_DYNAMIC, 1, team->nthreads);
    tlg_ws0_ready(ws);
}

TLG_EXPORT void GOMP_parallel_sections(tlg_fn fn, void *data, unsigned nthreads, unsigned count, unsigned flags)
{
    tlg_parallel(fn, data, tlg_resolve_threads(nthreads, count), flags, ws0_sections, &count, NULL);
}

TLG_EXPORT void GOMP_parallel_sections_start(tlg_fn fn, void *data, unsigned nthreads, unsigned count)
{
    tlg_parallel_start(fn, data, tlg_resolve_threads(nthreads, count), ws0_sections, &count);
}
