/*
 * loop.c - worksharing loops over `long` iterations: GOMP_loop_* and the
 * combined GOMP_parallel_loop_*, every schedule, ordered, nonmonotonic
 * and maybe-nonmonotonic variants (the schedule of a loop is decided when
 * its work share is set up; every *_next entry asks that work share).
 *
 * Nonmonotonic and monotonic dynamic/guided schedules are served the same
 * way (chunks in increasing order, which both allow).
 */
#define _GNU_SOURCE
#include "gomp.h"

struct loop_args {
    long start, end, incr, chunk;
    int sched;
    int ordered;
};

static void loop_init(tlg_thread *thr, tlg_ws *ws, void *p)
{
    struct loop_args *a = p;
    tlg_loop_init(ws, a->start, a->end, a->incr, a->sched, a->chunk, thr->team ? thr->team->nthreads : 1);
    ws->ordered = a->ordered;
}

static bool loop_start(long start, long end, long incr, int sched, long chunk, int ordered, long *istart,
                       long *iend, uintptr_t *reductions, void **mem)
{
    tlg_thread *thr = tlg_self();
    thr->static_trip = 0;
    struct loop_args a = {start, end, incr, chunk, sched, ordered};
    tlg_ws_enter(thr, loop_init, &a, reductions, mem);
    if (!istart)
        return true;
    return tlg_iter_next(thr, istart, iend);
}

static bool loop_next(long *istart, long *iend)
{
    return tlg_iter_next(tlg_self(), istart, iend);
}

static bool runtime_start(long start, long end, long incr, int ordered, long *istart, long *iend)
{
    long chunk;
    int kind = tlg_runtime_sched(&chunk);
    return loop_start(start, end, incr, kind, chunk, ordered, istart, iend, NULL, NULL);
}

#define LOOP_START(name, kind, ordered)                                                                     \
    TLG_EXPORT bool name(long start, long end, long incr, long chunk, long *istart, long *iend)              \
    {                                                                                                       \
        return loop_start(start, end, incr, kind, chunk, ordered, istart, iend, NULL, NULL);                \
    }
#define LOOP_RUNTIME_START(name, ordered)                                                                   \
    TLG_EXPORT bool name(long start, long end, long incr, long *istart, long *iend)                        \
    {                                                                                                       \
        return runtime_start(start, end, incr, ordered, istart, iend);                                     \
    }
#define LOOP_NEXT(name)                                                                                     \
    TLG_EXPORT bool name(long *istart, long *iend)                                                         \
    {                                                                                                       \
        return loop_next(istart, iend);                                                                     \
    }

LOOP_START(GOMP_loop_static_start, TLG_SCHED_STATIC, 0)
LOOP_START(GOMP_loop_dynamic_start, TLG_SCHED_DYNAMIC, 0)
LOOP_START(GOMP_loop_guided_start, TLG_SCHED_GUIDED, 0)
LOOP_START(GOMP_loop_nonmonotonic_dynamic_start, TLG_SCHED_DYNAMIC, 0)
LOOP_START(GOMP_loop_nonmonotonic_guided_start, TLG_SCHED_GUIDED, 0)
LOOP_RUNTIME_START(GOMP_loop_runtime_start, 0)
LOOP_RUNTIME_START(GOMP_loop_nonmonotonic_runtime_start, 0)
LOOP_RUNTIME_START(GOMP_loop_maybe_nonmonotonic_runtime_start, 0)
LOOP_START(GOMP_loop_ordered_static_start, TLG_SCHED_STATIC, 1)
LOOP_START(GOMP_loop_ordered_dynamic_start, TLG_SCHED_DYNAMIC, 1)
LOOP_START(GOMP_loop_ordered_guided_start, TLG_SCHED_GUIDED, 1)
LOOP_RUNTIME_START(GOMP_loop_ordered_runtime_start, 1)

LOOP_NEXT(GOMP_loop_static_next)
LOOP_NEXT(GOMP_loop_dynamic_next)
LOOP_NEXT(GOMP_loop_guided_next)
LOOP_NEXT(GOMP_loop_runtime_next)
LOOP_NEXT(GOMP_loop_nonmonotonic_dynamic_next)
LOOP_NEXT(GOMP_loop_nonmonotonic_guided_next)
LOOP_NEXT(GOMP_loop_nonmonotonic_runtime_next)
LOOP_NEXT(GOMP_loop_maybe_nonmonotonic_runtime_next)
LOOP_NEXT(GOMP_loop_ordered_static_next)
LOOP_NEXT(GOMP_loop_ordered_dynamic_next)
LOOP_NEXT(GOMP_loop_ordered_guided_next)
LOOP_NEXT(GOMP_loop_ordered_runtime_next)

/* GOMP 5.0: the schedule as an argument, with task reductions and memory
 * shared by the construct's threads (lastprivate conditional, scan). */
TLG_EXPORT bool GOMP_loop_start(long start, long end, long incr, long sched, long chunk, long *istart,
                                long *iend, uintptr_t *reductions, void **mem)
{
    int kind = tlg_adjust_sched(sched, &chunk);
    return loop_start(start, end, incr, kind, chunk, 0, istart, iend, reductions, mem);
}

TLG_EXPORT bool GOMP_loop_ordered_start(long start, long end, long incr, long sched, long chunk,
                                        long *istart, long *iend, uintptr_t *reductions, void **mem)
{
    int kind = tlg_adjust_sched(sched, &chunk);
    return loop_start(start, end, incr, kind, chunk, 1, istart, iend, reductions, mem);
}

TLG_EXPORT void GOMP_loop_end(void)
{
    tlg_ws_end(tlg_self(), false);
}

/* GCC's code leaves the region when this returns true: only a cancel
 * parallel does that; a cancelled loop ends here (barrier.c). */
TLG_EXPORT bool GOMP_loop_end_cancel(void)
{
    return tlg_ws_end(tlg_self(), true);
}

TLG_EXPORT void GOMP_loop_end_nowait(void)
{
    tlg_ws_end_nowait(tlg_self());
}

/* ---- combined parallel loops: the loop is set up before the team runs ---- */

static void ws0_loop(tlg_team *team, void *p)
{
    struct loop_args *a = p;
    tlg_ws *ws = tlg_ws0(team);
    tlg_loop_init(ws, a->start, a->end, a->incr, a->sched, a->chunk, team->nthreads);
    tlg_ws0_ready(ws);
}

static void parallel_loop(tlg_fn fn, void *data, unsigned nthreads, long start, long end, long incr,
                          int sched, long chunk, unsigned flags)
{
    struct loop_args a = {start, end, incr, chunk, sched, 0};
    unsigned n = tlg_resolve_threads(nthreads, 0);
    if (!tlg_parallel_workdesc(fn, data, n, ws0_loop, &a))
        tlg_parallel(fn, data, n, flags, ws0_loop, &a, NULL);
}

#define PARALLEL_LOOP(name, kind)                                                                           \
    TLG_EXPORT void name(tlg_fn fn, void *data, unsigned nthreads, long start, long end, long incr,         \
                         long chunk, unsigned flags)                                                        \
    {                                                                                                       \
        parallel_loop(fn, data, nthreads, start, end, incr, kind, chunk, flags);                            \
    }
#define PARALLEL_LOOP_RUNTIME(name)                                                                         \
    TLG_EXPORT void name(tlg_fn fn, void *data, unsigned nthreads, long start, long end, long incr,         \
                         unsigned flags)                                                                    \
    {                                                                                                       \
        long chunk;                                                                                         \
        int kind = tlg_runtime_sched(&chunk);                                                               \
        parallel_loop(fn, data, nthreads, start, end, incr, kind, chunk, flags);                            \
    }

PARALLEL_LOOP(GOMP_parallel_loop_static, TLG_SCHED_STATIC)
PARALLEL_LOOP(GOMP_parallel_loop_dynamic, TLG_SCHED_DYNAMIC)
PARALLEL_LOOP(GOMP_parallel_loop_guided, TLG_SCHED_GUIDED)
PARALLEL_LOOP(GOMP_parallel_loop_nonmonotonic_dynamic, TLG_SCHED_DYNAMIC)
PARALLEL_LOOP(GOMP_parallel_loop_nonmonotonic_guided, TLG_SCHED_GUIDED)
PARALLEL_LOOP_RUNTIME(GOMP_parallel_loop_runtime)
PARALLEL_LOOP_RUNTIME(GOMP_parallel_loop_nonmonotonic_runtime)
PARALLEL_LOOP_RUNTIME(GOMP_parallel_loop_maybe_nonmonotonic_runtime)

/* GOMP 1.0: the caller runs fn as the master, then GOMP_parallel_end */
static void parallel_loop_start(tlg_fn fn, void *data, unsigned nthreads, long start, long end, long incr,
                                int sched, long chunk)
{
    struct loop_args a = {start, end, incr, chunk, sched, 0};
    tlg_parallel_start(fn, data, tlg_resolve_threads(nthreads, 0), ws0_loop, &a);
}

#define PARALLEL_LOOP_START(name, kind)                                                                     \
    TLG_EXPORT void name(tlg_fn fn, void *data, unsigned nthreads, long start, long end, long incr,         \
                         long chunk)                                                                        \
    {                                                                                                       \
        parallel_loop_start(fn, data, nthreads, start, end, incr, kind, chunk);                             \
    }

PARALLEL_LOOP_START(GOMP_parallel_loop_static_start, TLG_SCHED_STATIC)
PARALLEL_LOOP_START(GOMP_parallel_loop_dynamic_start, TLG_SCHED_DYNAMIC)
PARALLEL_LOOP_START(GOMP_parallel_loop_guided_start, TLG_SCHED_GUIDED)

TLG_EXPORT void GOMP_parallel_loop_runtime_start(tlg_fn fn, void *data, unsigned nthreads, long start, long end,
                                                 long incr)
{
    long chunk;
    int kind = tlg_runtime_sched(&chunk);
    parallel_loop_start(fn, data, nthreads, start, end, incr, kind, chunk);
}
