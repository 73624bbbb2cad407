/*
 * threadlab/summary.h - the summary of a data point's samples and the
 * stopping rule of the adaptive loop.  The Python statistics module
 * recomputes everything from the raw samples; this is what the native side
 * needs to decide when to stop, and what it reports alongside the samples.
 */
#ifndef THREADLAB_SUMMARY_H
#define THREADLAB_SUMMARY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    size_t n;
    double mean, sd, rsd, se, rse; /* sd with n-1; rsd = sd/|mean|; se = sd/sqrt(n) */
    double median, min, max;
} tl_summary;

/* Summarises n samples (n may be 0: every field but n is NAN). */
tl_summary tl_summarize(const double *samples, size_t n);

/* The relative spread the rule looks at: rsd or rse (0 = RSD, 1 = RSE). */
double tl_summary_spread(const tl_summary *s, int rule_is_rse);

/* Median of n values; sorts a copy. */
double tl_median(const double *values, size_t n);

#ifdef __cplusplus
}
#endif
#endif
