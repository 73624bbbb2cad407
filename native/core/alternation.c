/* alternation.c - what every yield ping-pong (threadlab-bench-posix's and
 * the models suite's) shares: its self-test parameter and its check that
 * control really passed at each yield. */
#include <string.h>

#include "internal.h"

/* The rate at or above which the threads count as alternating: a few
 * yields may return at once (a round's first, a tick's migration). */
#define ALTERNATION_MIN 0.9

const char *const tl_yield_order_values[] = {"interleaved", NULL};

const char *tl_check_yield_order(const char *value)
{
    return strcmp(value, "serial") == 0 ? NULL
                                        : "interleaved (the protocol) or serial (self-test: one thread yields all "
                                          "its turns before the other yields any, as the Pthreads benchmark suite saw on AIX)";
}

void tl_check_alternated(tl_ctx *ctx, const uint64_t switches[2], const uint64_t yields[2])
{
    uint64_t all_yields = yields[0] + yields[1];
    uint64_t all_switches = switches[0] + switches[1];
    double ratio = all_yields ? (double)all_switches / (double)all_yields : 0.0;
    tl_check(ctx, "alternated", ratio >= ALTERNATION_MIN, ratio,
             "the other thread had run between two looks in %.1f%% of %llu yields "
             "(main %llu of %llu, partner %llu of %llu; at least %.0f%% means the yields alternated)",
             100.0 * ratio, (unsigned long long)all_yields, (unsigned long long)switches[0],
             (unsigned long long)yields[0], (unsigned long long)switches[1], (unsigned long long)yields[1],
             100.0 * ALTERNATION_MIN);
}
