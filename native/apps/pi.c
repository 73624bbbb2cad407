/* pi.c - pi by the Leibniz series, pi/4 = sum (-1)^k / (2k + 1), its terms
 * split in ranges among the workers, the partial sums added at the end and
 * multiplied by four (seed 000; 1e9 terms there).
 *
 * Checked against pi within the series' error bound: an alternating series
 * with decreasing terms stops within its first omitted term, so
 * |4 S_N - pi| <= 4 / (2N + 1); plus the rounding of the sums (every
 * partial sum of a range lies within its first term, at most 1, so each
 * addition errs by at most u) and of the divisions. */
#include <math.h>

#include "kernel.h"

static void pi_work(const tl_app_operands *ops, uint64_t begin, uint64_t end, tl_app_partial *out)
{
    (void)ops;
    double acc = 0.0;
    double d = 2.0 * (double)begin + 1.0;
    double s = (begin & 1) ? -1.0 : 1.0;
    uint64_t k = begin;
    while (k < end) {
        uint64_t chunk = end - k < TL_APP_CHUNK ? end - k : TL_APP_CHUNK;
        for (unsigned long n = (unsigned long)chunk; n > 0; n--) {
            acc += s / d;
            d += 2.0;
            s = -s;
        }
        k += chunk;
    }
    tl_do_not_optimize(acc);
    out->sum = acc;
    out->isum = 0;
    out->items = end - begin;
}

static void pi_verdict(const tl_app_operands *ops, const tl_app_partial *parts, unsigned workers, int inject_error,
                       tl_app_verdict *out)
{
    double acc = 0.0;
    for (unsigned t = 0; t < workers; t++)
        acc += parts[t].sum;
    double result = 4.0 * acc;
    double n = (double)ops->items;
    double truncation = 4.0 / (2.0 * n + 1.0);
    double rounding = 4.0 * TL_APP_U * (n + workers + 2.0 + 0.5 * log(2.0 * n + 1.0));
    double bound = truncation + rounding;
    if (inject_error)
        result += tl_app_corruption(bound);
    tl_app_judge(out, result, M_PI, bound);
}

const tl_app_kernel tl_app_kernel_pi = {
    .name = "pi",
    .summary = "pi by the Leibniz series, ranges of terms per thread (de Sá et al.)",
    .size_unit = "terms",
    .rate_unit = "Mterms/s",
    .quantity = "series terms per second",
    .ops_per_item = 1,
    .default_size = 60000000ull,
    .quick_size = 6000000ull,
    .paper_size = 1000000000ull,
    .work = pi_work,
    .verdict = pi_verdict,
};
