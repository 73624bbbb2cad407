/*
 * blas_gemm.c - an unmodified third-party OpenMP library on the runtime:
 * a BLAS built with OpenMP, linked by the build or the test. Debian's
 * OpenBLAS (libopenblas0-openmp) packs blocks on every team thread and
 * makes the threads wait for each other's blocks with sched_yield between
 * looks; BLIS (libblis4-openmp) makes them wait at barriers of its own,
 * spinning in its code. Under threadlab-rm, two such programs sharing two
 * CPUs hung on libthreadlab-gomp (two team threads on the one VP of an
 * allocation of one CPU, the one spinning inside the library never
 * letting the other run); with OpenBLAS, THREADLAB_GOMP_VPS=1 reproduces
 * that alone.
 *
 * Multiplies two n x n matrices with OpenBLAS's dgemm_ from inside and
 * outside a parallel region of the program's own and checks entries of
 * the product against sums computed here. Exit 0 and "PASSED", or 1.
 * Usage: blas_gemm [N] (default 400).
 */
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* OpenBLAS's Fortran interface (its own C, no hidden string lengths) */
void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const double *alpha,
            const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
            const int *ldc);
int openblas_get_num_threads(void) __attribute__((weak)); /* OpenBLAS's only */

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "blas_gemm: FAILED: no progress in 60 s (a hang)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

/* c = a b (column-major n x n), then the largest error of 100 entries */
static double gemm_error(int n, const double *a, const double *b, double *c, unsigned seed)
{
    const double one = 1.0, zero = 0.0;
    dgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n);
    double worst = 0;
    for (int k = 0; k < 100; k++) {
        int i = (int)(rand_r(&seed) % (unsigned)n), j = (int)(rand_r(&seed) % (unsigned)n);
        double s = 0;
        for (int l = 0; l < n; l++)
            s += a[i + (long)l * n] * b[l + (long)j * n];
        double e = fabs(s - c[i + (long)j * n]);
        worst = e > worst ? e : worst;
    }
    return worst;
}

int main(int argc, char **argv)
{
    signal(SIGALRM, on_alarm);
    alarm(60);
    int n = argc > 1 ? atoi(argv[1]) : 400;
    if (n < 1 || n > 4000) {
        fprintf(stderr, "blas_gemm: N %s: expected 1 to 4000\n", argv[1]);
        return 2;
    }
    size_t bytes = sizeof(double) * (size_t)n * (size_t)n;
    double *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    if (!a || !b || !c)
        return 1;
    unsigned seed = 1;
    for (long i = 0; i < (long)n * n; i++) {
        a[i] = rand_r(&seed) / (double)RAND_MAX - 0.5;
        b[i] = rand_r(&seed) / (double)RAND_MAX - 0.5;
    }
    int failures = 0;
    /* the library's own team, five times */
    for (int r = 0; r < 5; r++)
        if (gemm_error(n, a, b, c, 7u + (unsigned)r) > 1e-9 * n)
            failures++;
    /* and from the program's region: one small product per thread (the
     * library runs it on the calling thread alone, as nested) */
    int bad = 0;
#pragma omp parallel reduction(+ : bad)
    {
        int m = 16;
        double x[256], y[256], z[256];
        for (int i = 0; i < 256; i++) {
            x[i] = i % 7;
            y[i] = (i + omp_get_thread_num()) % 5;
        }
        bad += gemm_error(m, x, y, z, 3u + (unsigned)omp_get_thread_num()) > 1e-12;
    }
    failures += bad;
    printf("blas_gemm: %d x %d dgemm, %d OpenMP threads", n, n, omp_get_max_threads());
    if (openblas_get_num_threads)
        printf(", %d OpenBLAS threads", openblas_get_num_threads());
    printf("\n");
    free(a);
    free(b);
    free(c);
    if (failures) {
        fprintf(stderr, "blas_gemm: %d product(s) wrong: FAILED\n", failures);
        return 1;
    }
    printf("blas_gemm: PASSED\n");
    return 0;
}
