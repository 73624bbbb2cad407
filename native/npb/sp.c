/*
 * sp.c - an SP/BT-like kernel: alternating-direction implicit time
 * stepping, one parallel region per time step, as NAS SP and BT are
 * organised (their block/pentadiagonal systems are replaced here by
 * scalar tridiagonal ones).
 *
 * The 3D heat equation u_t = Laplacian(u) on the unit cube, n^3 interior
 * points, zero Dirichlet boundary, h = 1/(n+1), dt = r h^2.  A step is
 * three Crank-Nicolson sweeps, one per direction (locally one-dimensional
 * splitting): (1 - r/2 D2) u' = (1 + r/2 D2) u along every line, each line
 * a tridiagonal system solved by the Thomas algorithm.  In the step's
 * region, three worksharing loops (x lines, then y, then z) are separated
 * by barriers.
 *
 * Verification in closed form: u0 = sin(kx pi x) sin(ky pi y) sin(kz pi z)
 * is an eigenvector of every sweep, which multiplies it by
 * g_d = (1 - 2r s_d) / (1 + 2r s_d), s_d = sin^2(k_d pi h / 2); after N
 * steps u = (g_x g_y g_z)^N u0 exactly but for rounding.  The largest
 * deviation, relative to the largest value, must stay below 1e-10.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npb.h"

static const char *const sp_params[] = {"n", "steps", "kx", "ky", "kz", NULL};

static const npb_size sp_sizes[] = {
    {"small", {16, 20, 1, 2, 1}, 0, 0},
    {"S", {32, 100, 1, 2, 1}, 0, 0},
    {"W", {64, 400, 1, 2, 1}, 0, 0},
    {"A", {96, 400, 1, 2, 1}, 0, 0},
    {NULL, {0}, 0, 0},
};

#define R_DT 1.0 /* dt / h^2 */

static int sp_run(const npb_size *size, npb_result *res)
{
    const long n = size->p[0], steps = size->p[1];
    const long kx = size->p[2], ky = size->p[3], kz = size->p[4];
    const double h = 1.0 / (double)(n + 1), r = R_DT;
    const long nn = n * n;
    double *u = npb_alloc((size_t)(n * nn) * sizeof *u);
    double *sx = npb_alloc((size_t)n * sizeof *sx), *sy = npb_alloc((size_t)n * sizeof *sy);
    double *sz = npb_alloc((size_t)n * sizeof *sz);
    for (long i = 0; i < n; i++) {
        sx[i] = sin((double)kx * M_PI * (double)(i + 1) * h);
        sy[i] = sin((double)ky * M_PI * (double)(i + 1) * h);
        sz[i] = sin((double)kz * M_PI * (double)(i + 1) * h);
    }
    for (long k = 0; k < n; k++)
        for (long j = 0; j < n; j++)
            for (long i = 0; i < n; i++)
                u[k * nn + j * n + i] = sx[i] * sy[j] * sz[k];

    /* The tridiagonal matrix -r/2, 1+r, -r/2 is the same for every line:
     * factor it once (Thomas: modified super-diagonal cp, inverse pivots). */
    const double off = -0.5 * r, diag = 1.0 + r;
    double *cp = npb_alloc((size_t)n * sizeof *cp), *inv = npb_alloc((size_t)n * sizeof *inv);
    inv[0] = 1.0 / diag;
    cp[0] = off * inv[0];
    for (long i = 1; i < n; i++) {
        inv[i] = 1.0 / (diag - off * cp[i - 1]);
        cp[i] = off * inv[i];
    }
    const double half = 0.5 * r;

    double start = npb_wtime();
    for (long step = 0; step < steps; step++) {
#pragma omp parallel
        {
            NPB_NOTE_TEAM();
            double *line = npb_alloc((size_t)n * sizeof *line);
            double *plane = npb_alloc((size_t)nn * sizeof *plane);
            /* x lines: contiguous. */
#pragma omp for schedule(static)
            for (long k = 0; k < n; k++)
                for (long j = 0; j < n; j++) {
                    double *x = &u[k * nn + j * n];
                    for (long i = 0; i < n; i++) {
                        double left = i > 0 ? x[i - 1] : 0.0, right = i + 1 < n ? x[i + 1] : 0.0;
                        line[i] = x[i] + half * (left - 2.0 * x[i] + right);
                    }
                    /* forward, then back substitution */
                    line[0] *= inv[0];
                    for (long i = 1; i < n; i++)
                        line[i] = (line[i] - off * line[i - 1]) * inv[i];
                    x[n - 1] = line[n - 1];
                    for (long i = n - 2; i >= 0; i--)
                        x[i] = line[i] - cp[i] * x[i + 1];
                }
            /* y lines: a whole plane at a time, vectorised along i. */
#pragma omp for schedule(static)
            for (long k = 0; k < n; k++) {
                double *p = &u[k * nn];
                for (long j = 0; j < n; j++)
                    for (long i = 0; i < n; i++) {
                        double lo = j > 0 ? p[(j - 1) * n + i] : 0.0, hi = j + 1 < n ? p[(j + 1) * n + i] : 0.0;
                        plane[j * n + i] = p[j * n + i] + half * (lo - 2.0 * p[j * n + i] + hi);
                    }
                for (long i = 0; i < n; i++)
                    plane[i] *= inv[0];
                for (long j = 1; j < n; j++)
                    for (long i = 0; i < n; i++)
                        plane[j * n + i] = (plane[j * n + i] - off * plane[(j - 1) * n + i]) * inv[j];
                for (long i = 0; i < n; i++)
                    p[(n - 1) * n + i] = plane[(n - 1) * n + i];
                for (long j = n - 2; j >= 0; j--)
                    for (long i = 0; i < n; i++)
                        p[j * n + i] = plane[j * n + i] - cp[j] * p[(j + 1) * n + i];
            }
            /* z lines: for each j, the (k, i) plane, vectorised along i. */
#pragma omp for schedule(static)
            for (long j = 0; j < n; j++) {
                for (long k = 0; k < n; k++)
                    for (long i = 0; i < n; i++) {
                        double c = u[k * nn + j * n + i];
                        double lo = k > 0 ? u[(k - 1) * nn + j * n + i] : 0.0;
                        double hi = k + 1 < n ? u[(k + 1) * nn + j * n + i] : 0.0;
                        plane[k * n + i] = c + half * (lo - 2.0 * c + hi);
                    }
                for (long i = 0; i < n; i++)
                    plane[i] *= inv[0];
                for (long k = 1; k < n; k++)
                    for (long i = 0; i < n; i++)
                        plane[k * n + i] = (plane[k * n + i] - off * plane[(k - 1) * n + i]) * inv[k];
                for (long i = 0; i < n; i++)
                    u[(n - 1) * nn + j * n + i] = plane[(n - 1) * n + i];
                for (long k = n - 2; k >= 0; k--)
                    for (long i = 0; i < n; i++)
                        u[k * nn + j * n + i] = plane[k * n + i] - cp[k] * u[(k + 1) * nn + j * n + i];
            }
            free(line);
            free(plane);
        }
    }
    res->time_s = npb_wtime() - start;

    double g = 1.0;
    const long ks[3] = {kx, ky, kz};
    for (int d = 0; d < 3; d++) {
        double s = sin((double)ks[d] * M_PI * h / 2.0);
        s *= s;
        g *= (1.0 - 2.0 * r * s) / (1.0 + 2.0 * r * s);
    }
    const double amp = pow(g, (double)steps);
    double worst = 0, peak = 0, checksum = 0;
    for (long k = 0; k < n; k++)
        for (long j = 0; j < n; j++)
            for (long i = 0; i < n; i++) {
                double exact = amp * sx[i] * sy[j] * sz[k];
                double d = fabs(u[k * nn + j * n + i] - exact);
                worst = d > worst ? d : worst;
                peak = fabs(exact) > peak ? fabs(exact) : peak;
                checksum += u[k * nn + j * n + i];
            }
    res->quantity = "max_relative_deviation";
    res->value = peak > 0 ? worst / peak : INFINITY;
    res->reference = 0;
    res->error = res->value;
    res->tolerance = 1e-10;
    res->value2 = amp;
    res->reference2 = NAN;
    res->verified = res->value <= res->tolerance;
    res->mops = res->time_s > 0 ? 30.0 * (double)steps * (double)(n * nn) / res->time_s / 1e6 : 0;
    snprintf(res->detail, sizeof res->detail, "decay factor per step %.12f, after %ld steps %.6e; checksum %.12e", g,
             steps, amp, checksum);
    free(u), free(sx), free(sy), free(sz), free(cp), free(inv);
    return 0;
}

const npb_kernel npb_sp = {
    .name = "sp",
    .summary = "SP/BT-like: ADI time steps (tridiagonal sweeps in x, y, z), one parallel region per step",
    .param_names = sp_params,
    .sizes = sp_sizes,
    .run = sp_run,
};
