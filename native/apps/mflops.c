/* mflops.c - double-precision floating-point operations: additions,
 * subtractions, multiplications and divisions in equal share (seed 000's
 * MFLOPS; 1e8 operations there).
 *
 * One item is four operations, as in mips.c but in double:
 *   y = x * m;  z = y + r;  w = z / m;  acc -= w
 * with m = 3 and r = 1.5 read at run time, so w = x + 0.5 *exactly*
 * (3x + 1.5 is representable and IEEE division is correctly rounded), and
 * every partial sum is a multiple of 0.5 below 2^52 up to 4.3e9 items:
 * the result is then exact and checked for equality; beyond, against the
 * summation's rounding bound. x comes from a laundered integer, so the
 * loop is neither folded nor vectorized (no -ffast-math, no reassociation). */
#include <math.h>

#include "kernel.h"

static void mflops_work(const tl_app_operands *ops, uint64_t begin, uint64_t end, tl_app_partial *out)
{
    double m = ops->fmul, r = ops->fadd;
    double acc = 0.0;
    uint64_t i = begin;
    while (i < end) {
        uint64_t block_end = (i | (TL_APP_BLOCK - 1)) + 1;
        if (block_end > end)
            block_end = end;
        long x = (long)(i & (TL_APP_BLOCK - 1)) + 1;
        long last = x + (long)(block_end - i);
        for (; x < last; x++) {
            long v = x;
            tl_launder(v);
            double d = (double)v;
            double y = d * m; /* multiplication */
            double z = y + r; /* addition */
            double w = z / m; /* division: w == v + 0.5 */
            acc -= w;         /* subtraction */
        }
        i = block_end;
    }
    tl_do_not_optimize(acc);
    out->sum = acc;
    out->isum = 0;
    out->items = end - begin;
}

static void mflops_verdict(const tl_app_operands *ops, const tl_app_partial *parts, unsigned workers,
                           int inject_error, tl_app_verdict *out)
{
    double acc = 0.0;
    for (unsigned t = 0; t < workers; t++)
        acc += parts[t].sum;
    double result = -acc;
    double expected = (double)tl_app_sum_x(ops->items) + 0.5 * (double)ops->items;
    /* Exact while every partial sum stays below 2^52 (multiples of 0.5);
     * otherwise the bound of naive summation, gamma_n * sum |w|. */
    double bound = expected < 4503599627370496.0 ? 0.0
                                                 : ((double)ops->items + workers) * TL_APP_U * expected * 1.01;
    if (inject_error)
        result += tl_app_corruption(bound);
    tl_app_judge(out, result, expected, bound);
}

const tl_app_kernel tl_app_kernel_mflops = {
    .name = "mflops",
    .summary = "double +, -, *, / in equal share (de Sá et al.'s MFLOPS)",
    .size_unit = "operations",
    .rate_unit = "Mflop/s",
    .quantity = "floating-point operations per second",
    .ops_per_item = 4,
    .default_size = 280000000ull,
    .quick_size = 28000000ull,
    .paper_size = 100000000ull,
    .work = mflops_work,
    .verdict = mflops_verdict,
};
