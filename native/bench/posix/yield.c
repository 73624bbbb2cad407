/* yield.c - the seed's thread yield test: two threads repeatedly call
 * sched_yield; when they alternate on one CPU, time / yields approximates a
 * context switch.  The seed found that they need not alternate (on AIX the
 * first thread did not regain the CPU until the other had finished all its
 * yields), so every yield here also records who ran, and the "alternated"
 * check says whether control really passed at each yield. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "families.h"
#include "pingpong_yield.h"

enum { MAIN_ID = 1, PARTNER_ID = 2 };

typedef struct {
    /* Who looked last, and on which CPU: id << 16 | cpu. */
    _Atomic uint32_t last;
    /* Rounds the partner has completed its yields for (see yield_partner). */
    _Atomic uint32_t finished;
    uint32_t rounds; /* rounds main has started; main's only */
    int serial;
    tl_partner *partner;
    /* Tallies per thread, each written by its own thread only; main reads
     * the partner's after joining it. */
    uint64_t yields[2], switches[2];
} yield_state;

static uint32_t where_am_i(uint32_t id)
{
    return id << 16 | ((uint32_t)sched_getcpu() & 0xffff);
}

/* True when the other thread looked last, on this CPU: it ran here since my
 * previous look.  The CPU matters: on two CPUs both threads return from
 * sched_yield at once, all the time, without any switch between them. */
static int other_ran_here(uint32_t prev, uint32_t mine)
{
    return (prev >> 16) == (MAIN_ID + PARTNER_ID - (mine >> 16)) && (prev & 0xffff) == (mine & 0xffff);
}

static uint64_t look(_Atomic uint32_t *last, uint32_t id)
{
    uint32_t mine = where_am_i(id);
    return (uint64_t)other_ran_here(atomic_exchange_explicit(last, mine, memory_order_relaxed), mine);
}

/* Main looks after each of its yields; the partner before each of its own,
 * so that the partner's last action is the yield that hands the CPU back
 * and main can stop the clock the moment its last yield returns.  Either
 * way a look counts whether the other thread ran between two of mine. */
static void yield_rounds(yield_state *s, uint32_t id, uint64_t n)
{
    uint64_t switches = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (id == PARTNER_ID) {
            switches += look(&s->last, id);
            if (i + 1 == n)
                atomic_fetch_add_explicit(&s->finished, 1, memory_order_release);
        }
        sched_yield();
        if (id == MAIN_ID)
            switches += look(&s->last, id);
    }
    s->yields[id - 1] += n;
    s->switches[id - 1] += switches;
}

static void yield_partner(void *arg, uint64_t iterations)
{
    yield_rounds(arg, PARTNER_ID, iterations);
}

static double time_yield(void *arg, uint64_t iterations)
{
    yield_state *s = arg;
    uint32_t round = ++s->rounds;
    uint64_t t0 = tl_now();
    tl_partner_go(s->partner, iterations);
    if (s->serial) /* AIX: main regains the CPU once the partner is done */
        tl_partner_wait(s->partner);
    yield_rounds(s, MAIN_ID, iterations);
    /* Only when the threads run on different CPUs can main get here first. */
    while (atomic_load_explicit(&s->finished, memory_order_acquire) != round)
        sched_yield();
    uint64_t t1 = tl_now();
    tl_partner_wait(s->partner);
    return tl_ticks_to_ns(t1 - t0);
}

/* The looks of one iteration (one per thread), without the yields, on a
 * word of their own: the measured one must only ever hold real looks. */
static double time_looks(void *arg, uint64_t iterations)
{
    (void)arg;
    _Atomic uint32_t last = 0;
    uint64_t sink = 0;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++)
        sink += look(&last, MAIN_ID) + look(&last, PARTNER_ID);
    uint64_t t1 = tl_now();
    tl_do_not_optimize(sink);
    return tl_ticks_to_ns(t1 - t0);
}

int tl_posix_yield_pingpong(tl_ctx *ctx, int serial, const char *quantity)
{
    static yield_state s;
    memset(&s, 0, sizeof s);
    s.serial = serial;
    s.partner = tl_partner_start(ctx, 1, yield_partner, &s);
    if (!s.partner) {
        tl_fail(ctx, "starting the partner thread: %s", strerror(errno));
        return -1;
    }
    tl_measure_spec spec = {.actions_per_iteration = 2, .reference = time_looks, .quantity = quantity};
    /* A first round wakes the partner from its creation; calibrating on
     * that one would settle on too few iterations. */
    time_yield(&s, 64);
    int rc = tl_measure(ctx, time_yield, &s, &spec);
    tl_partner_stop(s.partner);
    if (rc == 0)
        tl_check_alternated(ctx, s.switches, s.yields);
    return rc;
}

static int run_pingpong(tl_ctx *ctx)
{
    return tl_posix_yield_pingpong(ctx, strcmp(tl_param(ctx, "order"), "serial") == 0, NULL);
}

static const tl_param_def yield_params[] = {
    TL_YIELD_ORDER_PARAM,
    {0},
};

const tl_bench tl_posix_yield[] = {
    TL_BENCH("pthread.yield.pingpong", "pthread",
             "two threads call sched_yield in turn; alternation is verified",
             "time per sched_yield (one context switch when the threads alternate)",
             2, TL_PLACES_ALL, yield_params, run_pingpong),
    {0},
};
