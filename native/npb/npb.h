/*
 * npb.h - threadlab-npb: OpenMP kernels of threadlab's own written like
 * the NAS Parallel Benchmarks the seed (004) ran, each verifying its result
 * (docs/study-multiprog.md):
 *
 *   ep  embarrassingly parallel: NAS EP itself (Gaussian pairs from the NAS
 *       linear congruential generator), one long parallel region; verified
 *       against NAS's published sums for S, W and A
 *   cg  conjugate gradient on a generated sparse SPD matrix, inverse power
 *       iteration for its smallest eigenvalue; one parallel region per CG
 *       iteration with reductions and barriers inside (many short regions)
 *   mg  V-cycle multigrid for a periodic 3D Poisson problem with NAS MG's
 *       27-point operators; a region per grid operation and level
 *   sp  ADI time stepping of the 3D heat equation (Crank-Nicolson, one
 *       tridiagonal sweep per direction), one parallel region per step;
 *       verified in closed form (an eigenmode decays by a known factor)
 *
 * The harness (npb.c) runs one kernel at one size, times it, records the
 * team size of every region, and prints one JSON line.
 */
#ifndef THREADLAB_NPB_H
#define THREADLAB_NPB_H

#include <stddef.h>
#include <stdint.h>

#define NPB_MAX_PARAMS 8

typedef struct {
    const char *name;         /* "small", "S", "W", "A" */
    long p[NPB_MAX_PARAMS];   /* kernel-specific parameters */
    double reference;         /* the verification value (0 = computed in closed form) */
    double reference2;
} npb_size;

typedef struct {
    double time_s;            /* the timed part (NAS: the benchmark's own timer) */
    int verified;
    const char *quantity;     /* what value is, e.g. "zeta" */
    double value, reference, error, tolerance;
    double value2, reference2; /* a second verified value (EP: sy), NAN if none */
    char detail[256];
    double mops;              /* millions of operations per second (NAS style), 0 if not defined */
} npb_result;

typedef struct {
    const char *name;
    const char *summary;
    const char *const *param_names;   /* names of npb_size.p[], NULL-terminated */
    const npb_size *sizes;            /* terminated by name == NULL */
    int (*run)(const npb_size *size, npb_result *result);
} npb_kernel;

extern const npb_kernel npb_ep, npb_cg, npb_mg, npb_sp;

/* Called by one thread at the start of every parallel region (the
 * master): counts the region and its team size. */
void npb_note_team(void);
#define NPB_NOTE_TEAM()                                                                                     \
    do {                                                                                                    \
        if (omp_get_thread_num() == 0)                                                                      \
            npb_note_team();                                                                                \
    } while (0)

double npb_wtime(void);

/* NAS's pseudorandom generator: x <- a*x mod 2^46, returning x * 2^-46.
 * (Exact in integers here; NAS computes the same with doubles.) */
double npb_randlc(double *x, double a);
void npb_vranlc(long n, double *x, double a, double *y);

void *npb_alloc(size_t bytes); /* zeroed, 64-byte aligned; exits on failure */

#endif
