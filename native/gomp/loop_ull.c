/*
 * loop_ull.c - worksharing loops over `unsigned long long` iterations
 * (GCC uses them for unsigned long long loop variables and for collapsed
 * nests whose count does not fit a long): GOMP_loop_ull_*. `up` tells
 * the direction; a downward loop's incr is the negated step.
 */
#define _GNU_SOURCE
#include "gomp.h"

struct ull_args {
    bool up;
    tlg_ull start, end, incr, chunk;
    int sched;
    int ordered;
};

static void ull_init(tlg_thread *thr, tlg_ws *ws, void *p)
{
    struct ull_args *a = p;
    tlg_loop_init_ull(ws, a->up, a->start, a->end, a->incr, a->sched, a->chunk,
                      thr->team ? thr->team->nthreads : 1);
    ws->ordered = a->ordered;
}

static bool ull_start(bool up, tlg_ull start, tlg_ull end, tlg_ull incr, int sched, tlg_ull chunk, int ordered,
                      tlg_ull *istart, tlg_ull *iend, uintptr_t *reductions, void **mem)
{
    tlg_thread *thr = tlg_self();
    thr->static_trip = 0;
    struct ull_args a = {up, start, end, incr, chunk, sched, ordered};
    tlg_ws_enter(thr, ull_init, &a, reductions, mem);
    if (!istart)
        return true;
    return tlg_iter_next_ull(thr, istart, iend);
}

static bool ull_runtime_start(bool up, tlg_ull start, tlg_ull end, tlg_ull incr, int ordered, tlg_ull *istart,
                              tlg_ull *iend)
{
    long chunk;
    int kind = tlg_runtime_sched(&chunk);
    return ull_start(up, start, end, incr, kind, (tlg_ull)chunk, ordered, istart, iend, NULL, NULL);
}

#define ULL_START(name, kind, ordered)                                                                      \
    TLG_EXPORT bool name(bool up, tlg_ull start, tlg_ull end, tlg_ull incr, tlg_ull chunk, tlg_ull *istart,  \
                         tlg_ull *iend)                                                                     \
    {                                                                                                       \
        return ull_start(up, start, end, incr, kind, chunk, ordered, istart, iend, NULL, NULL);             \
    }
#define ULL_RUNTIME_START(name, ordered)                                                                    \
    TLG_EXPORT bool name(bool up, tlg_ull start, tlg_ull end, tlg_ull incr, tlg_ull *istart, tlg_ull *iend) \
    {                                                                                                       \
        return ull_runtime_start(up, start, end, incr, ordered, istart, iend);                             \
    }
#define ULL_NEXT(name)                                                                                      \
    TLG_EXPORT bool name(tlg_ull *istart, tlg_ull *iend)                                                   \
    {                                                                                                       \
        return tlg_iter_next_ull(tlg_self(), istart, iend);                                                 \
    }

ULL_START(GOMP_loop_ull_static_start, TLG_SCHED_STATIC, 0)
ULL_START(GOMP_loop_ull_dynamic_start, TLG_SCHED_DYNAMIC, 0)
ULL_START(GOMP_loop_ull_guided_start, TLG_SCHED_GUIDED, 0)
ULL_START(GOMP_loop_ull_nonmonotonic_dynamic_start, TLG_SCHED_DYNAMIC, 0)
ULL_START(GOMP_loop_ull_nonmonotonic_guided_start, TLG_SCHED_GUIDED, 0)
ULL_RUNTIME_START(GOMP_loop_ull_runtime_start, 0)
ULL_RUNTIME_START(GOMP_loop_ull_nonmonotonic_runtime_start, 0)
ULL_RUNTIME_START(GOMP_loop_ull_maybe_nonmonotonic_runtime_start, 0)
ULL_START(GOMP_loop_ull_ordered_static_start, TLG_SCHED_STATIC, 1)
ULL_START(GOMP_loop_ull_ordered_dynamic_start, TLG_SCHED_DYNAMIC, 1)
ULL_START(GOMP_loop_ull_ordered_guided_start, TLG_SCHED_GUIDED, 1)
ULL_RUNTIME_START(GOMP_loop_ull_ordered_runtime_start, 1)

ULL_NEXT(GOMP_loop_ull_static_next)
ULL_NEXT(GOMP_loop_ull_dynamic_next)
ULL_NEXT(GOMP_loop_ull_guided_next)
ULL_NEXT(GOMP_loop_ull_runtime_next)
ULL_NEXT(GOMP_loop_ull_nonmonotonic_dynamic_next)
ULL_NEXT(GOMP_loop_ull_nonmonotonic_guided_next)
ULL_NEXT(GOMP_loop_ull_nonmonotonic_runtime_next)
ULL_NEXT(GOMP_loop_ull_maybe_nonmonotonic_runtime_next)
ULL_NEXT(GOMP_loop_ull_ordered_static_next)
ULL_NEXT(GOMP_loop_ull_ordered_dynamic_next)
ULL_NEXT(GOMP_loop_ull_ordered_guided_next)
ULL_NEXT(GOMP_loop_ull_ordered_runtime_next)

TLG_EXPORT bool GOMP_loop_ull_start(bool up, tlg_ull start, tlg_ull end, tlg_ull incr, long sched, tlg_ull chunk,
                                    tlg_ull *istart, tlg_ull *iend, uintptr_t *reductions, void **mem)
{
    long c = (long)chunk;
    int kind = tlg_adjust_sched(sched, &c);
    return ull_start(up, start, end, incr, kind, (tlg_ull)c, 0, istart, iend, reductions, mem);
}

TLG_EXPORT bool GOMP_loop_ull_ordered_start(bool up, tlg_ull start, tlg_ull end, tlg_ull incr, long sched,
                                            tlg_ull chunk, tlg_ull *istart, tlg_ull *iend, uintptr_t *reductions,
                                            void **mem)
{
    long c = (long)chunk;
    int kind = tlg_adjust_sched(sched, &c);
    return ull_start(up, start, end, incr, kind, (tlg_ull)c, 1, istart, iend, reductions, mem);
}
