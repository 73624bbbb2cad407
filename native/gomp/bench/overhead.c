/*
 * threadlab-gomp-overhead - EPCC-style overheads of OpenMP constructs, for
 * comparing runtimes side by side: an ordinary OpenMP program (linked with
 * libgomp), run as is and with libthreadlab-gomp preloaded
 * (docs/omp-ult.md, "Overheads").
 *
 *   threadlab-gomp-overhead [--threads N] [--reps R] [--quick] [CONSTRUCT...]
 *
 * Constructs: parallel, parallel_for (combined, dynamic), barrier, for_dynamic, single, critical, reduction,
 * nested (a region of 2 inside each thread of a region of N), task (one
 * thread creates tasks that count themselves in a counter of the thread
 * that runs them, the team runs them, a taskwait ends each batch). Each is timed as R repetitions of a batch of operations sized
 * to last about 2 ms (10x less with --quick); a repetition's time per
 * operation is the batch's time divided by its size, minus nothing (the
 * constructs are empty: EPCC's reference time of an empty loop is below
 * the clock's resolution here). One JSON line per construct: the runtime
 * (libgomp or threadlab-gomp, found at run time), the team, the median
 * and the minimum in ns per operation, and whether the batch did what it
 * claims (team sizes, every task and nested thread ran: "verified").
 * Exit status 1 when a construct did not verify.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "threadlab/json.h"

static int threads = 2, reps = 21;
static double batch_s = 2e-3;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- the constructs: each runs n operations and says whether they did
 * what they claim ------------------------------------------------------------ */

static bool run_parallel(long n)
{
    int ok = 1;
    for (long i = 0; i < n; i++) {
#pragma omp parallel num_threads(threads)
        if (omp_get_thread_num() == 0 && omp_get_num_threads() != threads)
            ok = 0;
    }
    return ok;
}

/* a combined parallel loop (GOMP_parallel_loop_*: libthreadlab-gomp may
 * run it as a work descriptor) of one iteration per thread */
static bool run_parallel_for(long n)
{
    int per[1024];
    for (long i = 0; i < n; i++) {
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (int k = 0; k < threads; k++)
            per[k] = k;
    }
    int ok = 1;
    for (int k = 0; k < threads; k++)
        ok &= per[k] == k;
    return ok;
}

static bool run_barrier(long n)
{
    int team = 0;
#pragma omp parallel num_threads(threads)
    {
        if (omp_get_thread_num() == 0)
            team = omp_get_num_threads();
        for (long i = 0; i < n; i++) {
#pragma omp barrier
        }
    }
    return team == threads;
}

static bool run_for_dynamic(long n)
{
    long count = 0;
#pragma omp parallel num_threads(threads) reduction(+ : count)
    for (long i = 0; i < n; i++) {
#pragma omp for schedule(dynamic) nowait
        for (int k = 0; k < threads; k++)
            count++;
    }
    return count == n * threads;
}

static bool run_single(long n)
{
    long count = 0;
#pragma omp parallel num_threads(threads)
    for (long i = 0; i < n; i++) {
#pragma omp single
        count++;
    }
    return count == n;
}

static bool run_critical(long n)
{
    long count = 0;
#pragma omp parallel num_threads(threads)
    for (long i = 0; i < n / threads; i++) {
#pragma omp critical
        count++;
    }
    return count == (n / threads) * threads;
}

static bool run_reduction(long n)
{
    int ok = 1;
    for (long i = 0; i < n; i++) {
        int s = 0;
#pragma omp parallel num_threads(threads) reduction(+ : s)
        s += 1;
        if (s != threads)
            ok = 0;
    }
    return ok;
}

static bool run_nested(long n)
{
    long inner = 0;
#pragma omp parallel num_threads(threads)
    for (long i = 0; i < n; i++) {
#pragma omp parallel num_threads(2)
        if (omp_get_num_threads() == 2) {
#pragma omp atomic
            inner++;
        }
    }
    return inner == n * threads * 2;
}

/* per-thread counters, a cache line each: a task body touches its own */
static struct {
    long n;
    char pad[56];
} ran_by[1024];

static bool run_task(long n)
{
    memset(ran_by, 0, sizeof ran_by);
#pragma omp parallel num_threads(threads)
#pragma omp single
    {
        for (long i = 0; i < n; i++) {
#pragma omp task
            ran_by[omp_get_thread_num()].n++;
        }
#pragma omp taskwait
    }
    long count = 0;
    for (int t = 0; t < threads; t++)
        count += ran_by[t].n;
    return count == n;
}

static const struct {
    const char *name;
    bool (*run)(long n);
    int per_thread; /* n counts operations of each thread (critical: of all) */
} constructs[] = {
    {"parallel", run_parallel, 0}, {"parallel_for", run_parallel_for, 0}, {"barrier", run_barrier, 0},     {"for_dynamic", run_for_dynamic, 0},
    {"single", run_single, 0},     {"critical", run_critical, 0},   {"reduction", run_reduction, 0},
    {"nested", run_nested, 0},     {"task", run_task, 0},
};

static const char *runtime_name(void)
{
    return dlsym(RTLD_DEFAULT, "threadlab_gomp_tls_mode") ? "threadlab-gomp" : "libgomp";
}

static int measure(size_t c)
{
    /* warm up (threads, stacks, caches), then size a batch to last batch_s */
    long n = 1;
    bool ok = constructs[c].run(1) && constructs[c].run(16);
    for (;;) {
        double t0 = now_s();
        ok = constructs[c].run(n) && ok;
        double t = now_s() - t0;
        if (t >= batch_s || n >= 1L << 24)
            break;
        n = t > batch_s / 64 ? (long)((double)n * batch_s / t) + 1 : n * 8;
    }
    double *per = malloc((size_t)reps * sizeof *per);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        ok = constructs[c].run(n) && ok;
        per[r] = (now_s() - t0) / (double)n * 1e9;
    }
    qsort(per, (size_t)reps, sizeof *per, cmp);
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "construct"); tl_json_string(&j, constructs[c].name);
    tl_json_key(&j, "runtime"); tl_json_string(&j, runtime_name());
    tl_json_key(&j, "threads"); tl_json_int(&j, threads);
    tl_json_key(&j, "batch"); tl_json_int(&j, n);
    tl_json_key(&j, "reps"); tl_json_int(&j, reps);
    tl_json_key(&j, "median_ns"); tl_json_number(&j, per[reps / 2]);
    tl_json_key(&j, "min_ns"); tl_json_number(&j, per[0]);
    tl_json_key(&j, "verified"); tl_json_bool(&j, ok);
    tl_json_end_object(&j);
    tl_json_emit(&j);
    free(per);
    return ok ? 0 : 1;
}

static int usage(const char *why)
{
    fprintf(stderr,
            "threadlab-gomp-overhead: %s\nusage: threadlab-gomp-overhead [--threads N] [--reps R] [--quick] "
            "[CONSTRUCT...]\nconstructs: parallel parallel_for barrier for_dynamic single critical reduction nested task\n",
            why);
    return 2;
}

int main(int argc, char **argv)
{
    int chosen[sizeof constructs / sizeof constructs[0]] = {0}, any = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quick")) {
            batch_s = 2e-4;
            reps = 7;
        } else if (!strcmp(a, "--threads") || !strcmp(a, "--reps")) {
            if (i + 1 >= argc)
                return usage("an option lacks its value");
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1024) {
                fprintf(stderr, "threadlab-gomp-overhead: %s %s: expected an integer from 1 to 1024\n", a, argv[i]);
                return 2;
            }
            if (!strcmp(a, "--threads"))
                threads = (int)v;
            else
                reps = (int)v;
        } else {
            size_t c;
            for (c = 0; c < sizeof constructs / sizeof constructs[0]; c++)
                if (!strcmp(a, constructs[c].name))
                    break;
            if (c == sizeof constructs / sizeof constructs[0])
                return usage(a);
            chosen[c] = any = 1;
        }
    }
    omp_set_max_active_levels(2);
    omp_set_dynamic(0);
    int bad = 0;
    for (size_t c = 0; c < sizeof constructs / sizeof constructs[0]; c++)
        if (!any || chosen[c])
            bad |= measure(c);
    return bad;
}
