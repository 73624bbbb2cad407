/* summary.c - mean, spread and order statistics of a point's samples. */
#include "threadlab/summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tl_median(const double *values, size_t n)
{
    if (n == 0)
        return NAN;
    double *copy = malloc(n * sizeof *copy);
    if (!copy)
        return NAN;
    memcpy(copy, values, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, compare_double);
    double m = (n % 2) ? copy[n / 2] : 0.5 * (copy[n / 2 - 1] + copy[n / 2]);
    free(copy);
    return m;
}

tl_summary tl_summarize(const double *samples, size_t n)
{
    tl_summary s = {n, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    if (n == 0)
        return s;
    /* Welford's update: one pass, no cancellation for large means. */
    double mean = 0.0, m2 = 0.0, lo = samples[0], hi = samples[0];
    for (size_t i = 0; i < n; i++) {
        double x = samples[i];
        double delta = x - mean;
        mean += delta / (double)(i + 1);
        m2 += delta * (x - mean);
        if (x < lo)
            lo = x;
        if (x > hi)
            hi = x;
    }
    s.mean = mean;
    s.min = lo;
    s.max = hi;
    s.median = tl_median(samples, n);
    if (n >= 2) {
        s.sd = sqrt(m2 / (double)(n - 1));
        s.se = s.sd / sqrt((double)n);
        s.rsd = mean != 0.0 ? s.sd / fabs(mean) : INFINITY;
        s.rse = mean != 0.0 ? s.se / fabs(mean) : INFINITY;
    }
    return s;
}

double tl_summary_spread(const tl_summary *s, int rule_is_rse)
{
    return rule_is_rse ? s->rse : s->rsd;
}
