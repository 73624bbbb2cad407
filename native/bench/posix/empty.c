/* empty.c - pthread.empty: the loop every calibrated benchmark runs, with
 * nothing in it.  It shows the floor of the method: what one iteration of
 * the timing loop costs, and that the clock and calibration resolve it. */
#include "families.h"

static double time_empty(void *arg, uint64_t iterations)
{
    (void)arg;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++)
        tl_launder(i); /* the loop counter must exist: the loop is not folded */
    uint64_t t1 = tl_now();
    return tl_ticks_to_ns(t1 - t0);
}

static int run_empty(tl_ctx *ctx)
{
    return tl_measure(ctx, time_empty, NULL, NULL);
}

const tl_bench tl_posix_empty[] = {
    TL_BENCH("pthread.empty", "pthread",
             "an empty iteration of the timing loop (the method's floor)",
             "time per empty iteration",
             0, 0, NULL, run_empty),
    {0},
};
