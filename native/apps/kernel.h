/* kernel.h - helpers shared by the kernels' sources and app.c; not installed. */
#ifndef THREADLAB_APPS_KERNEL_H
#define THREADLAB_APPS_KERNEL_H

#include <stdint.h>

#include "threadlab/apps.h"
#include "threadlab/compiler.h"

/* MIPS and MFLOPS take their operand x from the item's index i as
 * (i mod 2^20) + 1: never zero, small enough that x*imul + iadd fits a
 * 32-bit long, and a block of 2^20 items runs with a native-width counter. */
#define TL_APP_BLOCK_BITS 20
#define TL_APP_BLOCK ((uint64_t)1 << TL_APP_BLOCK_BITS)

/* Longest inner loop of the pi and trapezoid kernels: a 32-bit build
 * counts in a native register, not in a pair. */
#define TL_APP_CHUNK ((uint64_t)1 << 30)

/* Sum over i in [0, n) of ((i mod 2^20) + 1), modulo 2^64. */
static inline uint64_t tl_app_sum_x(uint64_t n)
{
    uint64_t q = n >> TL_APP_BLOCK_BITS, rem = n & (TL_APP_BLOCK - 1);
    uint64_t full = (TL_APP_BLOCK / 2) * (TL_APP_BLOCK + 1);
    return q * full + rem * (rem + 1) / 2;
}

/* Items the partials say they computed, all together. */
static inline uint64_t tl_app_items(const tl_app_partial *parts, unsigned workers)
{
    uint64_t items = 0;
    for (unsigned t = 0; t < workers; t++)
        items += parts[t].items;
    return items;
}

/* The verdict of a floating-point result. */
static inline void tl_app_judge(tl_app_verdict *out, double result, double expected, double bound)
{
    double error = result - expected;
    out->integer = 0;
    out->result = result;
    out->expected = expected;
    out->error = error < 0 ? -error : error;
    out->bound = bound;
    /* NaN fails: the comparison is false. */
    out->verified = out->error <= bound;
}

/* What --inject-error adds to a floating-point result: far outside any
 * bound, so verification must fail. */
static inline double tl_app_corruption(double bound)
{
    return 1e-3 + 1e3 * bound;
}

#endif
