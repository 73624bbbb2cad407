/*
 * ep.c - EP, the embarrassingly parallel kernel of the NAS Parallel
 * Benchmarks, as NAS defines it: 2^(M+1) uniform numbers from NAS's
 * generator (a = 5^13, seed 271828183), taken in pairs, turned into
 * Gaussian pairs by the polar (acceptance-rejection) method, their sums
 * (sx, sy) and their counts in square annuli.  One parallel region over
 * 2^(M-16) batches, each starting from its own jump of the generator, so
 * every team size computes the same numbers.  Verification: NAS's
 * published sx and sy (relative 1e-8) for M = 24, 25, 28 (classes S, W,
 * A); for the small size (M = 20), the sums of a plain sequential
 * Python run of the same generator (tests/test_multiprog.py recomputes
 * them).
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npb.h"

#define MK 16
#define NK (1L << MK)
#define NQ 10
#define EP_A 1220703125.0
#define EP_S 271828183.0

static const char *const ep_params[] = {"m", NULL};

/* reference: sx, reference2: sy */
static const npb_size ep_sizes[] = {
    {"small", {20}, 6.741650709778492e+02, -1.508139842420412e+02},
    {"S", {24}, -3.247834652034740e+3, -6.958407078382297e+3},
    {"W", {25}, -2.863319731645753e+3, -6.320053679109499e+3},
    {"A", {28}, -4.295875165629892e+3, -1.580732573678431e+4},
    {NULL, {0}, 0, 0},
};

static int ep_run(const npb_size *size, npb_result *r)
{
    const int m = (int)size->p[0];
    const long nn = 1L << (m - MK);
    double q[NQ] = {0};
    double sx = 0, sy = 0;

    /* an = a^(2^(MK+1)): the generator's stride between batches. */
    double t1 = EP_A;
    for (int i = 0; i < MK + 1; i++)
        npb_randlc(&t1, t1);
    const double an = t1;

    double start = npb_wtime();
#pragma omp parallel
    {
        NPB_NOTE_TEAM();
        double *x = npb_alloc(2 * NK * sizeof *x);
        double qq[NQ] = {0};
#pragma omp for reduction(+ : sx, sy) schedule(static)
        for (long k = 1; k <= nn; k++) {
            long kk = k - 1;
            double s1 = EP_S, s2 = an;
            /* The seed of batch kk: s * an^kk, by binary powering. */
            for (int i = 1; i <= 100; i++) {
                long ik = kk / 2;
                if (2 * ik != kk)
                    npb_randlc(&s1, s2);
                if (ik == 0)
                    break;
                npb_randlc(&s2, s2);
                kk = ik;
            }
            npb_vranlc(2 * NK, &s1, EP_A, x);
            for (long i = 0; i < NK; i++) {
                double x1 = 2.0 * x[2 * i] - 1.0;
                double x2 = 2.0 * x[2 * i + 1] - 1.0;
                double tt = x1 * x1 + x2 * x2;
                if (tt <= 1.0) {
                    double f = sqrt(-2.0 * log(tt) / tt);
                    double g1 = x1 * f, g2 = x2 * f;
                    int l = (int)fmax(fabs(g1), fabs(g2));
                    qq[l] += 1.0;
                    sx += g1;
                    sy += g2;
                }
            }
        }
        for (int i = 0; i < NQ; i++) {
#pragma omp atomic
            q[i] += qq[i];
        }
        free(x);
    }
    r->time_s = npb_wtime() - start;

    double gc = 0;
    for (int i = 0; i < NQ; i++)
        gc += q[i];
    const double eps = 1e-8;
    r->quantity = "sx";
    r->value = sx;
    r->reference = size->reference;
    r->error = fabs((sx - size->reference) / size->reference);
    r->value2 = sy;
    r->reference2 = size->reference2;
    double err2 = fabs((sy - size->reference2) / size->reference2);
    r->tolerance = eps;
    r->verified = r->error <= eps && err2 <= eps;
    r->mops = r->time_s > 0 ? ldexp(1.0, m + 1) / r->time_s / 1e6 : 0;
    snprintf(r->detail, sizeof r->detail, "sy relative error %.3g; %.0f Gaussian pairs (%.4f accepted)", err2, gc,
             gc / ldexp(1.0, m));
    return 0;
}

const npb_kernel npb_ep = {
    .name = "ep",
    .summary = "NAS EP: Gaussian pairs from NAS's generator, one parallel region",
    .param_names = ep_params,
    .sizes = ep_sizes,
    .run = ep_run,
};
