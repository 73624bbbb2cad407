/*
 * doacross.c - doacross loops: `ordered(n)` loops whose iterations wait
 * for earlier ones with `ordered depend(sink: ...)` and announce their
 * own progress with `ordered depend(source)` (GOMP_loop_doacross_*,
 * GOMP_doacross_post, GOMP_doacross_wait, and their ull forms).
 *
 * GCC hands the runtime the iteration counts of the n ordered loops,
 * normalised to 0..count-1; the first loop (the collapsed ones, when
 * there is a collapse clause) is the one shared out, as a loop from 0 to
 * counts[0] with the chosen schedule; a post and a wait name an iteration
 * by its n normalised indices.
 *
 * Progress is kept per owner of a run of iterations executed in order by
 * one thread: under a static schedule the thread (it runs its blocks or
 * chunks in increasing order), under dynamic the chunk, under guided the
 * iteration of the first loop (its chunks have no fixed bounds). An
 * owner's entry holds the last iteration it posted, and an iteration is
 * done once its owner's entry is past it, since each owner posts in
 * lexicographic order. The entry is one word: the index vector packed
 * into fields as wide as each count needs (none for a count of 1), plus
 * one. A nest whose fields need more than 63 bits would run at least 3^32
 * iterations; it stops the program with a message instead.
 *
 * A waiter spins, runs tasks, then parks on the team's event word
 * (tlg_wait_until); a post signals it (tlg_team_signal). A team of one
 * thread keeps no state: its iterations run in order.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { OWNER_THREAD_BLOCK, OWNER_THREAD_CHUNKS, OWNER_CHUNK, OWNER_ITERATION };

typedef struct tlg_doacross {
    unsigned ncounts;
    int owner_kind;
    unsigned nthreads;
    tlg_ull chunk;            /* OWNER_THREAD_CHUNKS, OWNER_CHUNK */
    tlg_ull q, r;             /* OWNER_THREAD_BLOCK: counts[0] = q * nthreads + r */
    size_t stride;            /* bytes from one owner's entry to the next */
    unsigned char *entries;
    unsigned shift[];         /* index i's field starts at bit shift[i] */
} tlg_doacross;

void tlg_doacross_free(tlg_ws *ws)
{
    free(ws->doacross);
    ws->doacross = NULL;
}

static unsigned bits_for(tlg_ull count)
{
    return count <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(count - 1);
}

static tlg_ull count_at(const void *counts, int ull, unsigned i)
{
    return ull ? ((const tlg_ull *)counts)[i] : (tlg_ull)((const long *)counts)[i];
}

/* The state of a loop whose work share ws was just initialised for a team
 * of nthreads, or NULL when no iteration can wait (one thread, or an
 * empty loop). */
static tlg_doacross *doacross_new(const tlg_ws *ws, unsigned ncounts, const void *counts, int ull,
                                  unsigned nthreads)
{
    if (nthreads < 2 || ncounts == 0)
        return NULL;
    unsigned bits = 0;
    for (unsigned i = 0; i < ncounts; i++) {
        tlg_ull c = count_at(counts, ull, i);
        if (c == 0)
            return NULL;
        bits += bits < 64 ? bits_for(c) : 0;
    }
    tlg_ull n = ws->n, owners;
    int kind;
    if (ws->sched == TLG_SCHED_STATIC) {
        kind = ws->chunk ? OWNER_THREAD_CHUNKS : OWNER_THREAD_BLOCK;
        owners = nthreads;
    } else if (ws->sched == TLG_SCHED_DYNAMIC) {
        kind = OWNER_CHUNK;
        owners = (n - 1) / ws->chunk + 1;
    } else {
        kind = OWNER_ITERATION;
        owners = n;
    }
    if (bits > 63)
        tlg_unsupported("GOMP_doacross_wait", "a doacross loop nest whose indices need more than 63 bits");
    /* threads post to their own entries all the time: a line each; the
     * per-chunk and per-iteration entries are many, and packed */
    size_t stride = kind == OWNER_CHUNK || kind == OWNER_ITERATION ? sizeof(tlg_ull) : TLG_LINE;
    if (owners > (SIZE_MAX - TLG_LINE) / stride)
        tlg_fatal("a doacross loop of %llu iterations needs more memory than can be addressed",
                  (unsigned long long)n);
    size_t head = (sizeof(tlg_doacross) + ncounts * sizeof(unsigned) + TLG_LINE - 1) / TLG_LINE * TLG_LINE;
    tlg_doacross *d = tlg_aligned_alloc(TLG_LINE, head + owners * stride);
    memset(d, 0, head + owners * stride);
    d->ncounts = ncounts;
    d->owner_kind = kind;
    d->nthreads = nthreads;
    d->chunk = ws->chunk;
    d->q = n / nthreads;
    d->r = n % nthreads;
    d->stride = stride;
    d->entries = (unsigned char *)d + head;
    for (unsigned i = ncounts, at = 0; i-- > 0;) {
        d->shift[i] = at;
        at += bits_for(count_at(counts, ull, i));
    }
    return d;
}

/* The entry of the owner of first-loop iteration i. */
static _Atomic tlg_ull *entry_of(const tlg_doacross *d, tlg_ull i)
{
    tlg_ull owner;
    switch (d->owner_kind) {
    case OWNER_THREAD_BLOCK: {
        /* iter.c's blocks: the first r threads get q + 1 iterations */
        tlg_ull big = d->r * (d->q + 1);
        owner = i < big ? i / (d->q + 1) : d->r + (i - big) / d->q;
        break;
    }
    case OWNER_THREAD_CHUNKS:
        owner = i / d->chunk % d->nthreads;
        break;
    case OWNER_CHUNK:
        owner = i / d->chunk;
        break;
    default:
        owner = i;
    }
    return (_Atomic tlg_ull *)(void *)(d->entries + owner * d->stride);
}

/* Marks iteration (i0, ...) of the calling owner done: packed is the
 * iteration's index vector packed (pack). */
static void post(tlg_thread *thr, const tlg_doacross *d, tlg_ull i0, tlg_ull packed)
{
    atomic_store_explicit(entry_of(d, i0), packed + 1, REL);
    tlg_team_signal(thr->team);
}

struct sink {
    _Atomic tlg_ull *entry;   /* its owner's */
    tlg_ull packed;           /* the sink iteration's index vector */
};

/* Whether the sink iteration has been posted by its owner. */
static int sink_done(const void *p)
{
    const struct sink *s = p;
    return atomic_load_explicit(s->entry, ACQ) > s->packed;
}

static void wait_for(tlg_thread *thr, const tlg_doacross *d, tlg_ull i0, tlg_ull packed)
{
    struct sink s = {entry_of(d, i0), packed};
    if (!sink_done(&s))
        tlg_wait_until(thr, sink_done, &s);
}

/* The doacross state of the caller's loop, or NULL when it keeps none. */
static tlg_doacross *current(tlg_thread *thr)
{
    return thr->ws ? thr->ws->doacross : NULL;
}

/* ---- the loops' starts ------------------------------------------------------------ */

struct start_args {
    unsigned ncounts;
    const void *counts;
    int ull;
    int sched;
    tlg_ull chunk;
};

static void doacross_init(tlg_thread *thr, tlg_ws *ws, void *p)
{
    const struct start_args *a = p;
    unsigned nthreads = thr->team ? thr->team->nthreads : 1;
    tlg_ull n = a->ncounts ? count_at(a->counts, a->ull, 0) : 0;
    if (a->ull)
        tlg_loop_init_ull(ws, true, 0, n, 1, a->sched, a->chunk, nthreads);
    else
        tlg_loop_init(ws, 0, (long)n, 1, a->sched, (long)a->chunk, nthreads);
    ws->doacross = doacross_new(ws, a->ncounts, a->counts, a->ull, nthreads);
}

static void start(const struct start_args *a, uintptr_t *reductions, void **mem)
{
    tlg_thread *thr = tlg_self();
    thr->static_trip = 0;
    tlg_ws_enter(thr, doacross_init, (void *)a, reductions, mem);
}

static bool start_long(unsigned ncounts, long *counts, int sched, long chunk, long *istart, long *iend,
                       uintptr_t *reductions, void **mem)
{
    struct start_args a = {ncounts, counts, 0, sched, chunk > 0 ? (tlg_ull)chunk : 0};
    start(&a, reductions, mem);
    return istart ? tlg_iter_next(tlg_self(), istart, iend) : true;
}

static bool start_ull(unsigned ncounts, tlg_ull *counts, int sched, tlg_ull chunk, tlg_ull *istart,
                      tlg_ull *iend, uintptr_t *reductions, void **mem)
{
    struct start_args a = {ncounts, counts, 1, sched, chunk};
    start(&a, reductions, mem);
    return istart ? tlg_iter_next_ull(tlg_self(), istart, iend) : true;
}

#define DOACROSS_START(name, kind)                                                                          \
    TLG_EXPORT bool name(unsigned ncounts, long *counts, long chunk, long *istart, long *iend)              \
    {                                                                                                       \
        return start_long(ncounts, counts, kind, chunk, istart, iend, NULL, NULL);                          \
    }
#define DOACROSS_ULL_START(name, kind)                                                                      \
    TLG_EXPORT bool name(unsigned ncounts, tlg_ull *counts, tlg_ull chunk, tlg_ull *istart, tlg_ull *iend)  \
    {                                                                                                       \
        return start_ull(ncounts, counts, kind, chunk, istart, iend, NULL, NULL);                           \
    }

DOACROSS_START(GOMP_loop_doacross_static_start, TLG_SCHED_STATIC)
DOACROSS_START(GOMP_loop_doacross_dynamic_start, TLG_SCHED_DYNAMIC)
DOACROSS_START(GOMP_loop_doacross_guided_start, TLG_SCHED_GUIDED)
DOACROSS_ULL_START(GOMP_loop_ull_doacross_static_start, TLG_SCHED_STATIC)
DOACROSS_ULL_START(GOMP_loop_ull_doacross_dynamic_start, TLG_SCHED_DYNAMIC)
DOACROSS_ULL_START(GOMP_loop_ull_doacross_guided_start, TLG_SCHED_GUIDED)

TLG_EXPORT bool GOMP_loop_doacross_runtime_start(unsigned ncounts, long *counts, long *istart, long *iend)
{
    long chunk;
    int kind = tlg_runtime_sched(&chunk);
    return start_long(ncounts, counts, kind, chunk, istart, iend, NULL, NULL);
}

TLG_EXPORT bool GOMP_loop_ull_doacross_runtime_start(unsigned ncounts, tlg_ull *counts, tlg_ull *istart,
                                                     tlg_ull *iend)
{
    long chunk;
    int kind = tlg_runtime_sched(&chunk);
    return start_ull(ncounts, counts, kind, chunk > 0 ? (tlg_ull)chunk : 0, istart, iend, NULL, NULL);
}

/* GOMP 5.0: the schedule as an argument, task reductions, shared memory */
TLG_EXPORT bool GOMP_loop_doacross_start(unsigned ncounts, long *counts, long sched, long chunk, long *istart,
                                         long *iend, uintptr_t *reductions, void **mem)
{
    int kind = tlg_adjust_sched(sched, &chunk);
    return start_long(ncounts, counts, kind, chunk, istart, iend, reductions, mem);
}

TLG_EXPORT bool GOMP_loop_ull_doacross_start(unsigned ncounts, tlg_ull *counts, long sched, tlg_ull chunk,
                                             tlg_ull *istart, tlg_ull *iend, uintptr_t *reductions, void **mem)
{
    long c = (long)chunk;
    int kind = tlg_adjust_sched(sched, &c);
    return start_ull(ncounts, counts, kind, (tlg_ull)c, istart, iend, reductions, mem);
}

/* ---- post and wait -------------------------------------------------------------------- */

/* A post of counts (long or unsigned long long, as ull says). */
static void post_counts(const void *counts, int ull)
{
    tlg_thread *thr = tlg_self();
    tlg_doacross *d = current(thr);
    if (!d)
        return;
    tlg_ull packed = 0;
    for (unsigned i = 0; i < d->ncounts; i++)
        packed |= count_at(counts, ull, i) << d->shift[i];
    post(thr, d, count_at(counts, ull, 0), packed);
}

TLG_EXPORT void GOMP_doacross_post(long *counts)
{
    post_counts(counts, 0);
}

TLG_EXPORT void GOMP_doacross_ull_post(tlg_ull *counts)
{
    post_counts(counts, 1);
}

TLG_EXPORT void GOMP_doacross_wait(long first, ...)
{
    tlg_thread *thr = tlg_self();
    tlg_doacross *d = current(thr);
    if (!d)
        return;
    tlg_ull packed = (tlg_ull)first << d->shift[0];
    va_list ap;
    va_start(ap, first);
    for (unsigned i = 1; i < d->ncounts; i++)
        packed |= (tlg_ull)va_arg(ap, long) << d->shift[i];
    va_end(ap);
    wait_for(thr, d, (tlg_ull)first, packed);
}

TLG_EXPORT void GOMP_doacross_ull_wait(tlg_ull first, ...)
{
    tlg_thread *thr = tlg_self();
    tlg_doacross *d = current(thr);
    if (!d)
        return;
    tlg_ull packed = first << d->shift[0];
    va_list ap;
    va_start(ap, first);
    for (unsigned i = 1; i < d->ncounts; i++)
        packed |= va_arg(ap, tlg_ull) << d->shift[i];
    va_end(ap);
    wait_for(thr, d, first, packed);
}
