/*
 * iter.c - iteration chunks of worksharing loops: static, dynamic and
 * guided schedules, for `long` and `unsigned long long` iteration spaces.
 *
 * Chunks are returned as index bounds [s, e), which GCC's loop bodies walk
 * with their own step. Inside the runtime a loop is n logical iterations
 * 0..n-1 (index = start + i * incr) counted in unsigned long long, which
 * keeps the arithmetic the same in both directions and for both types.
 *
 *   static, no chunk: one block per thread; thread t gets
 *       [t*q + min(t, r), ...) with q = n / nthreads, r = n % nthreads
 *       (GCC's own inline static schedule, so both agree);
 *   static, chunk c: chunk k = iterations [k*c, k*c + c) goes to thread
 *       k mod nthreads (its static_trip-th chunk);
 *   dynamic, chunk c: the next c iterations, one atomic add (a CAS loop
 *       near the top of the range, where the add could wrap);
 *   guided, chunk c: max(c, ceil(remaining / nthreads)), a CAS loop.
 *
 * Ordered loops give every chunk a ticket in iteration order (ordered.c):
 * the chunk index for static schedules; for dynamic and guided ones the
 * chunk and its ticket are taken together under the work share's lock.
 *
 * Every chunk boundary is a safe point: a thread whose VP was told to stop
 * moves to an active VP before it starts its next chunk.
 */
#define _GNU_SOURCE
#include "gomp.h"

static void ws_lock(tlg_ws *ws)
{
    while (atomic_exchange_explicit(&ws->lock, 1, ACQ))
        while (atomic_load_explicit(&ws->lock, RLX))
            tl_cpu_relax();
}

static void ws_unlock(tlg_ws *ws)
{
    atomic_store_explicit(&ws->lock, 0, REL);
}

static void init_common(tlg_ws *ws, int sched, tlg_ull n, tlg_ull chunk, unsigned nthreads)
{
    ws->sched = sched;
    ws->n = n;
    ws->chunk = chunk > 0 ? chunk : (sched == TLG_SCHED_STATIC ? 0 : 1);
    /* decided once here, not by a division at every chunk: the adds of
     * nthreads threads past n cannot wrap */
    tlg_ull c = ws->chunk, k = (tlg_ull)nthreads + 1;
    ws->add_ok = sched == TLG_SCHED_DYNAMIC && c < ~0ull / k && n < ~0ull - k * c;
    atomic_store_explicit(&ws->next, 0, RLX);
}

void tlg_loop_init(tlg_ws *ws, long start, long end, long incr, int sched, long chunk, unsigned nthreads)
{
    tlg_ull n = 0;
    if (incr > 0 && start < end)
        n = ((tlg_ull)end - (tlg_ull)start + (tlg_ull)incr - 1) / (tlg_ull)incr;
    else if (incr < 0 && start > end)
        n = ((tlg_ull)start - (tlg_ull)end + (tlg_ull)(-incr) - 1) / (tlg_ull)(-incr);
    ws->ull = 0;
    ws->start = start;
    ws->incr = incr;
    init_common(ws, sched, n, chunk > 0 ? (tlg_ull)chunk : 0, nthreads);
}

void tlg_loop_init_ull(tlg_ws *ws, bool up, tlg_ull start, tlg_ull end, tlg_ull incr, int sched, tlg_ull chunk,
                       unsigned nthreads)
{
    tlg_ull n = 0;
    if (up && start < end)
        n = (end - start + incr - 1) / incr;
    else if (!up && start > end)
        n = (start - end + (-incr) - 1) / (-incr);
    ws->ull = 1;
    ws->start_ull = start;
    ws->incr_ull = incr;
    init_common(ws, sched, n, chunk, nthreads);
}

/* The caller's next logical iterations [a, b) and their ticket, or 0. */
static int next_logical(tlg_thread *thr, tlg_ws *ws, tlg_ull *a, tlg_ull *b, uint32_t *ticket)
{
    unsigned nthr = thr->team ? thr->team->nthreads : 1;
    tlg_ull n = ws->n, c = ws->chunk;
    if (ws->sched == TLG_SCHED_STATIC) {
        unsigned t = thr->id;
        if (c == 0) {
            if (thr->static_trip++ != 0)
                return 0;
            tlg_ull q = n / nthr, r = n % nthr;
            tlg_ull s0 = t * q + (t < r ? t : r);
            tlg_ull e0 = s0 + q + (t < r ? 1 : 0);
            if (s0 >= e0)
                return 0;
            *a = s0;
            *b = e0;
            *ticket = t;
            return 1;
        }
        tlg_ull k = (tlg_ull)thr->static_trip * nthr + t;
        if (n == 0 || k >= (n - 1) / c + 1)
            return 0;
        thr->static_trip++;
        *a = k * c;
        *b = n - *a > c ? *a + c : n;
        *ticket = (uint32_t)k;
        return 1;
    }
    if (ws->ordered)
        ws_lock(ws);
    tlg_ull s, e;
    if (ws->add_ok && !ws->ordered) {
        /* an add cannot wrap: next stays below n + nthreads * c */
        s = atomic_fetch_add_explicit(&ws->next, c, RLX);
        if (s >= n)
            return 0;
        *a = s;
        *b = n - s > c ? s + c : n;
        return 1;
    }
    s = atomic_load_explicit(&ws->next, RLX);
    for (;;) {
        if (s >= n) {
            if (ws->ordered)
                ws_unlock(ws);
            return 0;
        }
        tlg_ull left = n - s, q = c;
        if (ws->sched == TLG_SCHED_GUIDED) {
            q = (left + nthr - 1) / nthr;
            if (q < c)
                q = c;
        }
        e = q < left ? s + q : n;
        if (ws->ordered) {
            atomic_store_explicit(&ws->next, e, RLX);
            break;
        }
        if (atomic_compare_exchange_weak_explicit(&ws->next, &s, e, RLX, RLX))
            break;
    }
    if (ws->ordered) {
        *ticket = ws->ordered_tickets++;
        ws_unlock(ws);
    }
    *a = s;
    *b = e;
    return 1;
}

/* The safe point, the ticket passed on, and the next chunk. */
static int next_chunk(tlg_thread *thr, tlg_ull *a, tlg_ull *b)
{
    tlg_ws *ws = thr->ws;
    if (thr->ord_held)
        tlg_ordered_pass(thr);
    /* a work-descriptor part on a VP told to stop takes no more chunks of
     * a loop whose chunks any thread may take: the others take them */
    if (TLG_UNLIKELY(tlg_safe_point()) && ws->sched != TLG_SCHED_STATIC && !ws->ordered)
        return 0;
    uint32_t ticket = 0;
    if (!next_logical(thr, ws, a, b, &ticket))
        return 0;
    if (ws->ordered)
        tlg_ordered_take(thr, ticket);
    return 1;
}

int tlg_iter_next(tlg_thread *thr, long *s, long *e)
{
    tlg_ull a, b;
    if (!next_chunk(thr, &a, &b))
        return 0;
    tlg_ws *ws = thr->ws;
    *s = (long)((tlg_ull)ws->start + a * (tlg_ull)ws->incr);
    *e = (long)((tlg_ull)ws->start + b * (tlg_ull)ws->incr);
    return 1;
}

int tlg_iter_next_ull(tlg_thread *thr, tlg_ull *s, tlg_ull *e)
{
    tlg_ull a, b;
    if (!next_chunk(thr, &a, &b))
        return 0;
    tlg_ws *ws = thr->ws;
    *s = ws->start_ull + a * ws->incr_ull;
    *e = ws->start_ull + b * ws->incr_ull;
    return 1;
}

/* ---- schedules ---------------------------------------------------------------- */

int tlg_runtime_sched(long *chunk)
{
    tlg_icv *icv = tlg_icv_cur();
    int kind = (int)(icv->run_sched & ~TLG_SCHED_MONOTONIC);
    if (kind == TLG_SCHED_AUTO) {
        *chunk = 0;
        return TLG_SCHED_STATIC;
    }
    *chunk = icv->run_chunk;
    return kind;
}

int tlg_adjust_sched(long sched, long *chunk)
{
    switch ((unsigned long)sched & ~(unsigned long)TLG_SCHED_MONOTONIC) {
    case TLG_SCHED_STATIC:
    case TLG_SCHED_DYNAMIC:
    case TLG_SCHED_GUIDED:
        return (int)((unsigned long)sched & ~(unsigned long)TLG_SCHED_MONOTONIC);
    case TLG_SCHED_RUNTIME: /* runtime, possibly monotonic */
    case TLG_SCHED_AUTO:    /* runtime with nonmonotonic: GCC passes it as auto */
        return tlg_runtime_sched(chunk);
    default:
        tlg_fatal("GOMP_loop_start: unknown schedule kind %ld", sched);
    }
}
