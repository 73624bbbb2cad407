/* trapezoid.c - the integral of f(x) = x^3 + x^2 + 2x + 1 on [1, 2] by N
 * trapezoids, each evaluating f at both of its ends as the seed's formula
 * does (1e8 trapezoids there).
 *
 * Checked against the exact value 121/12. For a cubic the Euler-Maclaurin
 * expansion of the trapezoid rule stops after its first term, so the
 * method's error is exactly h^2/12 (f'(2) - f'(1)) = 11 / (12 N^2); the
 * bound adds the rounding of the abscissae, of f (Horner) and of the sum.
 * The right end is x + h, not a + (i+1) h, so the compiler cannot reuse
 * one trapezoid's f(x_{i+1}) as the next one's f(x_i): the work is the
 * seed's two evaluations per trapezoid. */
#include "kernel.h"

static inline double f(double x)
{
    return ((x + 1.0) * x + 2.0) * x + 1.0;
}

static void trapezoid_work(const tl_app_operands *ops, uint64_t begin, uint64_t end, tl_app_partial *out)
{
    const double a = 1.0;
    double h = 1.0 / (double)ops->items;
    double acc = 0.0;
    double di = (double)begin;
    uint64_t i = begin;
    while (i < end) {
        uint64_t chunk = end - i < TL_APP_CHUNK ? end - i : TL_APP_CHUNK;
        for (unsigned long n = (unsigned long)chunk; n > 0; n--) {
            double x0 = a + di * h;
            double x1 = x0 + h;
            acc += f(x0) + f(x1);
            di += 1.0;
        }
        i += chunk;
    }
    tl_do_not_optimize(acc);
    out->sum = acc;
    out->isum = 0;
    out->items = end - begin;
}

static void trapezoid_verdict(const tl_app_operands *ops, const tl_app_partial *parts, unsigned workers,
                              int inject_error, tl_app_verdict *out)
{
    double acc = 0.0;
    for (unsigned t = 0; t < workers; t++)
        acc += parts[t].sum;
    double n = (double)ops->items;
    double h = 1.0 / n;
    double result = acc * h / 2.0;
    double method = 11.0 / (12.0 * n * n);
    double rounding = TL_APP_U * (17.0 * n + 17.0 * workers + 400.0);
    double bound = method + rounding;
    if (inject_error)
        result += tl_app_corruption(bound);
    tl_app_judge(out, result, 121.0 / 12.0, bound);
}

const tl_app_kernel tl_app_kernel_trapezoid = {
    .name = "trapezoid",
    .summary = "integral of x^3 + x^2 + 2x + 1 on [1, 2] by the trapezoid rule (de Sá et al.)",
    .size_unit = "trapezoids",
    .rate_unit = "Mtrapezoids/s",
    .quantity = "trapezoids per second",
    .ops_per_item = 1,
    .default_size = 40000000ull,
    .quick_size = 4000000ull,
    .paper_size = 100000000ull,
    .work = trapezoid_work,
    .verdict = trapezoid_verdict,
};
