/*
 * omp_overhead.c - threadlab-crosscheck-omp: the cost of an empty parallel
 * region and of a barrier, timed by hand, to check the omp suite's
 * omp.sync parallel and barrier overheads against (docs/omp-suite.md,
 * "Cross-checks").
 *
 * Shares nothing with the timing core or the suite: CLOCK_MONOTONIC, fixed
 * counts (by default 2,000: about a millisecond, like one of the suite's
 * timings), the median of a fixed number of repetitions, empty constructs
 * (no delay, so nothing to subtract), no placement.
 *
 *   threadlab-crosscheck-omp [THREADS [COUNT]]
 *
 * Prints one JSON object: {"threads":..., "count":..., "parallel_ns":
 * [...], "parallel_ns_median":..., "barrier_ns":[...], "barrier_ns_median":
 * ..., "team_errors":...}.
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "naive.h"

enum { REPEATS = 21 };

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : omp_get_num_procs();
    long count = argc > 2 ? atol(argv[2]) : 2000;
    if (threads < 1 || count < 1) {
        fprintf(stderr, "usage: %s [THREADS >= 1 [COUNT >= 1]]\n", argv[0]);
        return 2;
    }
    omp_set_dynamic(0);
    long team_errors = 0;
    double parallel_ns[REPEATS], barrier_ns[REPEATS];
    for (int r = -1; r < REPEATS; r++) { /* r = -1: warm-up */
        int team = 0;
        double t0 = now_ns();
        for (long i = 0; i < count; i++) {
#pragma omp parallel num_threads(threads)
            {
                if (omp_get_thread_num() == 0)
                    team = omp_get_num_threads();
            }
        }
        double t1 = now_ns();
#pragma omp parallel num_threads(threads)
        {
            for (long i = 0; i < count; i++) {
#pragma omp barrier
            }
        }
        double t2 = now_ns();
        team_errors += team != threads;
        if (r >= 0) {
            parallel_ns[r] = (t1 - t0) / (double)count;
            barrier_ns[r] = (t2 - t1) / (double)count;
        }
    }
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "threads"); tl_json_int(&j, threads);
    tl_json_key(&j, "count"); tl_json_int(&j, count);
    naive_json_list(&j, "parallel_ns", parallel_ns, REPEATS);
    naive_json_list(&j, "barrier_ns", barrier_ns, REPEATS);
    tl_json_key(&j, "team_errors"); tl_json_int(&j, team_errors);
    tl_json_end_object(&j);
    tl_json_emit(&j);
    return team_errors ? 1 : 0;
}
