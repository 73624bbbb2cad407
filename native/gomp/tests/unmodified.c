/*
 * unmodified.c - a plain OpenMP program with nothing of threadlab in it.
 * The test gomp.unmodified compiles it with `gcc -fopenmp` when it runs
 * and runs the binary with libthreadlab-gomp preloaded (run_unmodified.sh).
 * It prints "unmodified: ok" when every result is right.
 */
#include <omp.h>
#include <stdio.h>

static long fib(int n)
{
    if (n < 2)
        return n;
    long a, b;
#pragma omp task shared(a)
    a = fib(n - 1);
#pragma omp task shared(b)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

int main(void)
{
    long sum = 0;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : sum)
    for (int i = 0; i < 100000; i++)
        sum += i;
    int threads = 0, nested = 0;
    omp_set_max_active_levels(2);
#pragma omp parallel num_threads(3)
    {
#pragma omp single
        threads = omp_get_num_threads();
#pragma omp parallel num_threads(2)
#pragma omp atomic
        nested++;
    }
    long f = 0;
#pragma omp parallel
#pragma omp single
    f = fib(20);
    int ok = sum == 4999950000L && threads == 3 && nested == 6 && f == 6765;
    printf("unmodified: %s (sum %ld, team %d, nested %d, fib %ld)\n", ok ? "ok" : "WRONG", sum, threads, nested, f);
    return ok ? 0 : 1;
}
