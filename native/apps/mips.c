/* mips.c - integer operations: additions, subtractions, multiplications
 * and divisions in equal share (seed 000's MIPS; 1e10 operations there).
 *
 * One item is four operations on the C program's natural integer, long,
 * whose width is what the architecture factor changes (64 or 32 bits):
 *   y = x * m;  z = y + r;  w = z / m;  acc -= w
 * with m and r read at run time (r < m, so w == x), x = (i mod 2^20) + 1
 * laundered through an empty asm, so the compiler can neither fold the
 * arithmetic nor turn x * m into an induction variable, nor vectorize.
 * The result, the sum of every w modulo 2^bits(long), has a closed form:
 * it is checked exactly, so a lost or doubled item is caught. */
#include "kernel.h"

static void mips_work(const tl_app_operands *ops, uint64_t begin, uint64_t end, tl_app_partial *out)
{
    unsigned long m = ops->imul, r = ops->iadd;
    unsigned long acc = 0;
    uint64_t i = begin;
    while (i < end) {
        uint64_t block_end = (i | (TL_APP_BLOCK - 1)) + 1;
        if (block_end > end)
            block_end = end;
        unsigned long x = (unsigned long)(i & (TL_APP_BLOCK - 1)) + 1;
        unsigned long last = x + (unsigned long)(block_end - i);
        for (; x < last; x++) {
            unsigned long v = x;
            tl_launder(v);
            unsigned long y = v * m; /* multiplication */
            unsigned long z = y + r; /* addition */
            unsigned long w = z / m; /* division: w == v */
            acc -= w;                /* subtraction */
        }
        i = block_end;
    }
    tl_do_not_optimize(acc);
    out->isum = (uint64_t)acc;
    out->sum = 0.0;
    out->items = end - begin;
}

static void mips_verdict(const tl_app_operands *ops, const tl_app_partial *parts, unsigned workers, int inject_error,
                         tl_app_verdict *out)
{
    unsigned long acc = 0;
    for (unsigned t = 0; t < workers; t++)
        acc += (unsigned long)parts[t].isum;
    unsigned long result = 0UL - acc; /* the sum of every w */
    if (inject_error)
        result += 1;
    unsigned long expected = (unsigned long)tl_app_sum_x(ops->items);
    out->integer = 1;
    out->iresult = result;
    out->iexpected = expected;
    out->result = (double)result;
    out->expected = (double)expected;
    out->error = result > expected ? (double)(result - expected) : (double)(expected - result);
    out->bound = 0.0;
    out->verified = result == expected;
}

const tl_app_kernel tl_app_kernel_mips = {
    .name = "mips",
    .summary = "integer +, -, *, / in equal share on long (de Sá et al.'s MIPS)",
    .size_unit = "operations",
    .rate_unit = "Mops/s",
    .quantity = "integer operations per second",
    .ops_per_item = 4,
    .default_size = 120000000ull,
    .quick_size = 12000000ull,
    .paper_size = 10000000000ull,
    .work = mips_work,
    .verdict = mips_verdict,
};
