/*
 * cg.c - a CG-like kernel after NAS CG: the smallest eigenvalue of a
 * sparse symmetric positive definite matrix by inverse power iteration,
 * each inverse applied by 25 unpreconditioned conjugate gradient
 * iterations (NAS's conj_grad).
 *
 * The matrix is our own (NAS's makea is not reproduced): na rows; for each
 * row, (nonzer+1)^2/2 off-diagonal pairs (i, j) with j and the weight w in
 * (0, 1) drawn from NAS's generator, entered symmetrically as -w; the
 * diagonal is the row's sum of |w| plus `shift` plus u_i in (0, 1) drawn
 * after all the rows, so the matrix is strictly
 * diagonally dominant, hence SPD, with about (nonzer+1)^2 entries per row
 * as NAS's.
 *
 * Parallel structure, NAS-OpenMP-like but with a region per CG iteration
 * (many short regions): each iteration is one parallel region holding the
 * sparse product, two reductions and three vector updates, with a barrier
 * after each.
 *
 * Verification: zeta (the eigenvalue estimate after niter outer
 * iterations) against the reference of the size (relative 1e-9; the
 * references are this program's, agree to 1e-14 whatever the team size
 * (the ctest runs 1, 2 and 3 threads), and the small one is recomputed
 * independently with numpy by tests/test_multiprog.py), and the last
 * solve's relative residual ||x - A z|| / ||x|| below 1e-6.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npb.h"

static const char *const cg_params[] = {"na", "nonzer", "niter", "cgit", "shift", NULL};

static const npb_size cg_sizes[] = {
    {"small", {1400, 7, 8, 25, 10}, 0, 0},
    {"S", {1400, 7, 15, 25, 10}, 0, 0},
    {"W", {7000, 8, 15, 25, 12}, 0, 0},
    {"A", {14000, 11, 15, 25, 20}, 0, 0},
    {NULL, {0}, 0, 0},
};

/* zeta references, by size name (see the file comment). */
static double cg_reference(const char *size)
{
    if (!strcmp(size, "small"))
        return 10.50349832860188;
    if (!strcmp(size, "S"))
        return 10.503498328582884;
    if (!strcmp(size, "W"))
        return 12.500671729802553;
    if (!strcmp(size, "A"))
        return 20.504242762842932;
    return 0;
}

typedef struct {
    long n;
    long *rowstart; /* n+1 */
    int *col;
    double *val;
} csr;

typedef struct {
    int i, j;
    double v;
} triple;

static int by_row_col(const void *a, const void *b)
{
    const triple *x = a, *y = b;
    if (x->i != y->i)
        return x->i < y->i ? -1 : 1;
    if (x->j != y->j)
        return x->j < y->j ? -1 : 1;
    return 0;
}

/* The matrix of the file comment, deterministic for (na, nonzer, shift). */
static void make_matrix(long na, long nonzer, double shift, csr *a)
{
    long picks = (nonzer + 1) * (nonzer + 1) / 2;
    long cap = 2 * na * picks + na;
    triple *t = npb_alloc((size_t)cap * sizeof *t);
    double *rowsum = npb_alloc((size_t)na * sizeof *rowsum);
    double seed = 314159265.0, mult = 1220703125.0;
    long m = 0;
    for (long i = 0; i < na; i++) {
        for (long p = 0; p < picks; p++) {
            long j = (long)(npb_randlc(&seed, mult) * (double)na);
            double w = npb_randlc(&seed, mult);
            if (j == i || j >= na)
                continue;
            t[m++] = (triple){(int)i, (int)j, -w};
            t[m++] = (triple){(int)j, (int)i, -w};
            rowsum[i] += w;
            rowsum[j] += w;
        }
    }
    /* A row-dependent diagonal excess u_i in (0, 1): without it the matrix
     * would be a weighted graph Laplacian plus shift*I, whose smallest
     * eigenvector is the constant start vector itself (a trivial solve). */
    for (long i = 0; i < na; i++)
        t[m++] = (triple){(int)i, (int)i, rowsum[i] + shift + npb_randlc(&seed, mult)};
    qsort(t, (size_t)m, sizeof *t, by_row_col);
    a->n = na;
    a->rowstart = npb_alloc((size_t)(na + 1) * sizeof *a->rowstart);
    a->col = npb_alloc((size_t)m * sizeof *a->col);
    a->val = npb_alloc((size_t)m * sizeof *a->val);
    long nz = 0;
    for (long k = 0; k < m; k++) {
        if (nz > 0 && a->col[nz - 1] == t[k].j && k > 0 && t[k - 1].i == t[k].i) {
            a->val[nz - 1] += t[k].v; /* the same entry drawn twice */
            continue;
        }
        a->col[nz] = t[k].j;
        a->val[nz] = t[k].v;
        a->rowstart[t[k].i + 1] = nz + 1;
        nz++;
    }
    for (long i = 1; i <= na; i++)
        if (a->rowstart[i] < a->rowstart[i - 1])
            a->rowstart[i] = a->rowstart[i - 1];
    free(t);
    free(rowsum);
}

/* z ~ A^-1 x by cgit CG iterations; returns ||x - A z||.  One parallel
 * region per iteration. */
static double conj_grad(const csr *a, const double *x, double *z, double *p, double *q, double *r, long cgit)
{
    const long n = a->n;
    double rho = 0;
#pragma omp parallel
    {
        NPB_NOTE_TEAM();
#pragma omp for reduction(+ : rho) schedule(static)
        for (long i = 0; i < n; i++) {
            q[i] = 0;
            z[i] = 0;
            r[i] = x[i];
            p[i] = x[i];
            rho += x[i] * x[i];
        }
    }
    for (long it = 0; it < cgit; it++) {
        double d = 0, rho_new = 0;
#pragma omp parallel
        {
            NPB_NOTE_TEAM();
#pragma omp for schedule(static)
            for (long i = 0; i < n; i++) {
                double s = 0;
                for (long k = a->rowstart[i]; k < a->rowstart[i + 1]; k++)
                    s += a->val[k] * p[a->col[k]];
                q[i] = s;
            }
#pragma omp for reduction(+ : d) schedule(static)
            for (long i = 0; i < n; i++)
                d += p[i] * q[i];
            const double alpha = rho / d;
#pragma omp for reduction(+ : rho_new) schedule(static)
            for (long i = 0; i < n; i++) {
                z[i] += alpha * p[i];
                r[i] -= alpha * q[i];
                rho_new += r[i] * r[i];
            }
            const double beta = rho_new / rho;
#pragma omp for schedule(static)
            for (long i = 0; i < n; i++)
                p[i] = r[i] + beta * p[i];
        }
        rho = rho_new;
    }
    double sum = 0;
#pragma omp parallel
    {
        NPB_NOTE_TEAM();
#pragma omp for reduction(+ : sum) schedule(static)
        for (long i = 0; i < n; i++) {
            double s = 0;
            for (long k = a->rowstart[i]; k < a->rowstart[i + 1]; k++)
                s += a->val[k] * z[a->col[k]];
            double e = x[i] - s;
            sum += e * e;
        }
    }
    return sqrt(sum);
}

static int cg_run(const npb_size *size, npb_result *r)
{
    const long na = size->p[0], nonzer = size->p[1], niter = size->p[2], cgit = size->p[3];
    const double shift = (double)size->p[4];
    csr a;
    make_matrix(na, nonzer, shift, &a);
    double *x = npb_alloc((size_t)na * sizeof *x), *z = npb_alloc((size_t)na * sizeof *z);
    double *p = npb_alloc((size_t)na * sizeof *p), *q = npb_alloc((size_t)na * sizeof *q);
    double *res = npb_alloc((size_t)na * sizeof *res);

    double start = npb_wtime();
    const double xnorm0 = sqrt((double)na);
    for (long i = 0; i < na; i++)
        x[i] = 1.0 / xnorm0;
    double zeta = 0, rnorm = 0;
    for (long it = 0; it < niter; it++) {
        rnorm = conj_grad(&a, x, z, p, q, res, cgit);
        double xz = 0, zz = 0;
#pragma omp parallel
        {
            NPB_NOTE_TEAM();
#pragma omp for reduction(+ : xz, zz) schedule(static)
            for (long i = 0; i < na; i++) {
                xz += x[i] * z[i];
                zz += z[i] * z[i];
            }
        }
        zeta = 1.0 / xz; /* x has norm 1: the Rayleigh estimate of A's smallest eigenvalue */
        const double scale = 1.0 / sqrt(zz);
#pragma omp parallel
        {
            NPB_NOTE_TEAM();
#pragma omp for schedule(static)
            for (long i = 0; i < na; i++)
                x[i] = z[i] * scale;
        }
    }
    r->time_s = npb_wtime() - start;

    const double reference = cg_reference(size->name);
    r->quantity = "zeta";
    r->value = zeta;
    r->reference = reference;
    r->tolerance = 1e-9;
    r->error = reference != 0 ? fabs(zeta - reference) / reference : NAN;
    r->value2 = rnorm; /* ||x - A z|| with ||x|| = 1 */
    r->reference2 = 1e-6;
    r->verified = reference != 0 && r->error <= r->tolerance && rnorm <= 1e-6;
    long nnz = a.rowstart[na];
    r->mops = r->time_s > 0 ? (double)niter * (double)cgit * (2.0 * (double)nnz + 10.0 * (double)na) / r->time_s / 1e6 : 0;
    snprintf(r->detail, sizeof r->detail, "%ld nonzeros (%.1f per row); last relative residual %.3g (must be <= 1e-6)",
             nnz, (double)nnz / (double)na, rnorm);
    free(x), free(z), free(p), free(q), free(res), free(a.rowstart), free(a.col), free(a.val);
    return 0;
}

const npb_kernel npb_cg = {
    .name = "cg",
    .summary = "CG-like: inverse power iteration with 25 CG iterations per solve, a parallel region per iteration",
    .param_names = cg_params,
    .sizes = cg_sizes,
    .run = cg_run,
};
