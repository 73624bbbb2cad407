/*
 * mg.c - an MG-like kernel after NAS MG: V-cycle multigrid for the 3D
 * Poisson problem A u = v on an n^3 periodic grid, with NAS MG's 27-point
 * residual operator A (a = -8/3, 0, 1/6, 1/12 for the centre, face, edge
 * and corner neighbours), its smoother S (c = -3/8, 1/32, -1/64, 0), full-
 * weighting restriction (1/2, 1/4, 1/8, 1/16) and trilinear interpolation.
 * The right-hand side is NAS-like: +1 at ten points and -1 at ten others,
 * drawn with NAS's generator (our own draw, not NAS's zran3).
 *
 * Parallel structure: every grid operation at every level is one parallel
 * region (a loop over planes, then the periodic ghost exchange with a
 * barrier per direction), so a V-cycle is some 4*log2(n) regions, most of
 * them short (the coarse levels).
 *
 * Verification: the residual's L2 norm after nit cycles against the
 * reference of the size (relative 1e-8; the references are this
 * program's, and agree to 1e-13 whatever the team size: the ctest runs
 * every kernel with 1, 2 and 3 threads), and every cycle at least halving
 * the residual (MG_WORST_FACTOR; a broken operator or transfer stalls).
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npb.h"

static const char *const mg_params[] = {"n", "nit", NULL};

static const npb_size mg_sizes[] = {
    {"small", {16, 4}, 0, 0},
    {"S", {32, 4}, 0, 0},
    {"W", {128, 4}, 0, 0},
    {"A", {256, 4}, 0, 0},
    {NULL, {0}, 0, 0},
};

static double mg_reference(const char *size)
{
    if (!strcmp(size, "small"))
        return 1.5754029982603597e-04;
    if (!strcmp(size, "S"))
        return 5.5398444928781197e-05;
    if (!strcmp(size, "W"))
        return 6.0043679761231683e-06;
    if (!strcmp(size, "A"))
        return 2.0759937986040466e-06;
    return 0;
}

/* Every V-cycle must at least halve the residual (these operators give
 * about 0.3 per cycle at every size). */
#define MG_WORST_FACTOR 0.5

static const double A0 = -8.0 / 3.0, A1 = 0.0, A2 = 1.0 / 6.0, A3 = 1.0 / 12.0;
static const double C0 = -3.0 / 8.0, C1 = 1.0 / 32.0, C2 = -1.0 / 64.0, C3 = 0.0;

/* A grid of n^3 interior points with one ghost layer: (n+2)^3, i fastest. */
typedef struct {
    long n, m; /* m = n + 2 */
    double *a;
} grid;

#define AT(g, i, j, k) ((g)->a[((long)(k) * (g)->m + (long)(j)) * (g)->m + (long)(i)])

static void grid_init(grid *g, long n)
{
    g->n = n;
    g->m = n + 2;
    g->a = npb_alloc((size_t)(g->m * g->m * g->m) * sizeof(double));
}

/* The periodic ghost exchange, one direction after the other (so edges and
 * corners are filled too); called inside a parallel region. */
static void comm3(grid *g)
{
    const long n = g->n, m = g->m;
#pragma omp for schedule(static)
    for (long k = 1; k <= n; k++)
        for (long j = 1; j <= n; j++) {
            AT(g, 0, j, k) = AT(g, n, j, k);
            AT(g, n + 1, j, k) = AT(g, 1, j, k);
        }
#pragma omp for schedule(static)
    for (long k = 1; k <= n; k++)
        for (long i = 0; i < m; i++) {
            AT(g, i, 0, k) = AT(g, i, n, k);
            AT(g, i, n + 1, k) = AT(g, i, 1, k);
        }
#pragma omp for schedule(static)
    for (long j = 0; j < m; j++)
        for (long i = 0; i < m; i++) {
            AT(g, i, j, 0) = AT(g, i, j, n);
            AT(g, i, j, n + 1) = AT(g, i, j, 1);
        }
}

/* r = v - A u (r may be v). */
static void resid(grid *u, const grid *v, grid *r)
{
    const long n = u->n, m = u->m;
#pragma omp parallel
    {
        NPB_NOTE_TEAM();
        double *u1 = npb_alloc((size_t)m * sizeof *u1), *u2 = npb_alloc((size_t)m * sizeof *u2);
#pragma omp for schedule(static)
        for (long k = 1; k <= n; k++)
            for (long j = 1; j <= n; j++) {
                for (long i = 0; i < m; i++) {
                    u1[i] = AT(u, i, j - 1, k) + AT(u, i, j + 1, k) + AT(u, i, j, k - 1) + AT(u, i, j, k + 1);
                    u2[i] = AT(u, i, j - 1, k - 1) + AT(u, i, j + 1, k - 1) + AT(u, i, j - 1, k + 1) +
                            AT(u, i, j + 1, k + 1);
                }
                for (long i = 1; i <= n; i++)
                    AT(r, i, j, k) = AT(v, i, j, k) - A0 * AT(u, i, j, k) -
                                     A1 * (AT(u, i - 1, j, k) + AT(u, i + 1, j, k) + u1[i]) -
                                     A2 * (u2[i] + u1[i - 1] + u1[i + 1]) - A3 * (u2[i - 1] + u2[i + 1]);
            }
        free(u1);
        free(u2);
        comm3(r);
    }
}

/* u = u + S r. */
static void psinv(const grid *r, grid *u)
{
    const long n = u->n, m = u->m;
#pragma omp parallel
    {
        NPB_NOTE_TEAM();
        double *r1 = npb_alloc((size_t)m * sizeof *r1), *r2 = npb_alloc((size_t)m * sizeof *r2);
#pragma omp for schedule(static)
        for (long k = 1; k <= n; k++)
            for (long j = 1; j <= n; j++) {
                for (long i = 0; i < m; i++) {
                    r1[i] = AT(r, i, j - 1, k) + AT(r, i, j + 1, k) + AT(r, i, j, k - 1) + AT(r, i, j, k + 1);
                    r2[i] = AT(r, i, j - 1, k - 1) + AT(r, i, j + 1, k - 1) + AT(r, i, j - 1, k + 1) +
                            AT(r, i, j + 1, k + 1);
                }
                for (long i = 1; i <= n; i++)
                    AT(u, i, j, k) += C0 * AT(r, i, j, k) + C1 * (AT(r, i - 1, j, k) + AT(r, i + 1, j, k) + r1[i]) +
                                      C2 * (r2[i] + r1[i - 1] + r1[i + 1]) + C3 * (r2[i - 1] + r2[i + 1]);
            }
        free(r1);
        free(r2);
        comm3(u);
    }
}

/* Coarse s (n/2) from fine r (n): full weighting around fine point 2I. */
static void rprj3(const grid *r, grid *s)
{
    const long nc = s->n;
#pragma omp parallel
    {
        NPB_NOTE_TEAM();
#pragma omp for schedule(static)
        for (long K = 1; K <= nc; K++)
            for (long J = 1; J <= nc; J++)
                for (long I = 1; I <= nc; I++) {
                    long i = 2 * I, j = 2 * J, k = 2 * K;
                    double sum[4] = {0, 0, 0, 0}; /* by neighbour class */
                    for (int dk = -1; dk <= 1; dk++)
                        for (int dj = -1; dj <= 1; dj++)
                            for (int di = -1; di <= 1; di++)
                                sum[abs(di) + abs(dj) + abs(dk)] += AT(r, i + di, j + dj, k + dk);
                    AT(s, I, J, K) = 0.5 * sum[0] + 0.25 * sum[1] + 0.125 * sum[2] + 0.0625 * sum[3];
                }
        comm3(s);
    }
}

/* u (fine) += trilinear interpolation of z (coarse). */
static void interp(const grid *z, grid *u)
{
    const long n = u->n;
#pragma omp parallel
    {
        NPB_NOTE_TEAM();
#pragma omp for schedule(static)
        for (long k = 1; k <= n; k++) {
            long k0 = k >> 1, k1 = (k + 1) >> 1;
            for (long j = 1; j <= n; j++) {
                long j0 = j >> 1, j1 = (j + 1) >> 1;
                for (long i = 1; i <= n; i++) {
                    long i0 = i >> 1, i1 = (i + 1) >> 1;
                    AT(u, i, j, k) += 0.125 * (AT(z, i0, j0, k0) + AT(z, i1, j0, k0) + AT(z, i0, j1, k0) +
                                               AT(z, i1, j1, k0) + AT(z, i0, j0, k1) + AT(z, i1, j0, k1) +
                                               AT(z, i0, j1, k1) + AT(z, i1, j1, k1));
                }
            }
        }
        comm3(u);
    }
}

static void zero(grid *g)
{
    const long m = g->m;
#pragma omp parallel
    {
        NPB_NOTE_TEAM();
#pragma omp for schedule(static)
        for (long k = 0; k < m; k++)
            memset(&AT(g, 0, 0, k), 0, (size_t)(m * m) * sizeof(double));
    }
}

static double norm2(const grid *g)
{
    const long n = g->n;
    double sum = 0;
#pragma omp parallel
    {
        NPB_NOTE_TEAM();
#pragma omp for reduction(+ : sum) schedule(static)
        for (long k = 1; k <= n; k++)
            for (long j = 1; j <= n; j++)
                for (long i = 1; i <= n; i++)
                    sum += AT(g, i, j, k) * AT(g, i, j, k);
    }
    return sqrt(sum / ((double)n * (double)n * (double)n));
}

static int mg_run(const npb_size *size, npb_result *res)
{
    const long n = size->p[0], nit = size->p[1];
    int lt = 0;
    while ((1L << lt) < n)
        lt++;
    if ((1L << lt) != n || lt < 2) {
        snprintf(res->detail, sizeof res->detail, "n=%ld is not a power of two >= 4", n);
        return 1;
    }
    /* Levels 1 (2^1 points a side) .. lt (n). */
    grid u[32], r[32], v;
    for (int l = 1; l <= lt; l++) {
        grid_init(&u[l], 1L << l);
        grid_init(&r[l], 1L << l);
    }
    grid_init(&v, n);

    /* Ten +1 and ten -1 charges at distinct points. */
    double seed = 314159265.0, mult = 1220703125.0;
    for (int c = 0; c < 20;) {
        long i = 1 + (long)(npb_randlc(&seed, mult) * (double)n);
        long j = 1 + (long)(npb_randlc(&seed, mult) * (double)n);
        long k = 1 + (long)(npb_randlc(&seed, mult) * (double)n);
        if (i > n || j > n || k > n || AT(&v, i, j, k) != 0)
            continue;
        AT(&v, i, j, k) = c < 10 ? 1.0 : -1.0;
        c++;
    }
#pragma omp parallel
    {
        comm3(&v);
    }

    double start = npb_wtime();
    grid *ut = &u[lt], *rt = &r[lt];
    resid(ut, &v, rt);
    const double rnm0 = norm2(rt);
    double rnm = rnm0, worst = 0;
    for (long it = 0; it < nit; it++) {
        for (int k = lt; k > 1; k--)
            rprj3(&r[k], &r[k - 1]);
        zero(&u[1]);
        psinv(&r[1], &u[1]);
        for (int k = 2; k < lt; k++) {
            zero(&u[k]);
            interp(&u[k - 1], &u[k]);
            resid(&u[k], &r[k], &r[k]);
            psinv(&r[k], &u[k]);
        }
        interp(&u[lt - 1], ut);
        resid(ut, &v, rt);
        psinv(rt, ut);
        resid(ut, &v, rt);
        double now = norm2(rt);
        double factor = now / rnm;
        worst = factor > worst ? factor : worst;
        rnm = now;
    }
    res->time_s = npb_wtime() - start;

    const double reference = mg_reference(size->name);
    res->quantity = "rnm2";
    res->value = rnm;
    res->reference = reference;
    res->tolerance = 1e-8;
    res->error = reference != 0 ? fabs(rnm - reference) / reference : NAN;
    res->value2 = worst;
    res->reference2 = MG_WORST_FACTOR;
    res->verified = reference != 0 && res->error <= res->tolerance && worst <= MG_WORST_FACTOR;
    res->mops = res->time_s > 0 ? 58.0 * (double)nit * (double)n * (double)n * (double)n / res->time_s / 1e6 : 0;
    snprintf(res->detail, sizeof res->detail,
             "initial residual %.6e; worst reduction per cycle %.4f (must be <= %g); %d levels", rnm0, worst,
             MG_WORST_FACTOR, lt);
    for (int l = 1; l <= lt; l++) {
        free(u[l].a);
        free(r[l].a);
    }
    free(v.a);
    return 0;
}

const npb_kernel npb_mg = {
    .name = "mg",
    .summary = "MG-like: V-cycle multigrid, periodic 3D Poisson, NAS MG operators, a region per grid operation",
    .param_names = mg_params,
    .sizes = mg_sizes,
    .run = mg_run,
};
