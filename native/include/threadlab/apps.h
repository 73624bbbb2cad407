/*
 * threadlab/apps.h - the application kernels of `threadlab study apps`
 * (seed 000): MIPS, MFLOPS, Leibniz pi and the trapezoid integral, each
 * split over T workers by one work split, run by one small platform layer
 * per thread platform (pthreads, C11 threads, OpenMP, threadlab's
 * user-level threads), verified on every run.
 *
 * The pieces, and who provides them:
 *   tl_app_split()        split.c: the range of worker t of T over n items
 *   tl_app_kernels[]      mips.c, mflops.c, pi.c, trapezoid.c (kernels.c lists them)
 *   tl_app_worker()       worker.c: what every worker thread runs (the
 *                         platforms call it, whatever they are)
 *   tl_app_platform_run() platform_<name>.c: start the workers, wait for them
 *   main                  app.c: command line, timing, verification, the record
 *
 * Adding a platform is one file, platform_NAME.c, defining
 * tl_app_platform_name, tl_app_platform_runtime() and tl_app_platform_run(),
 * plus a threadlab_app(NAME ...) line in native/apps/CMakeLists.txt and its
 * name in the study's PLATFORMS (python/threadlab/study/apps.py). The
 * front end picks the program up by its name, threadlab-app-NAME. See
 * docs/study.md.
 *
 * None of this needs hwloc or the timing core, so that the kernels also
 * build as 32-bit programs (-m32) on a 64-bit machine; the records are
 * written by libthreadlab-record, built for both.
 */
#ifndef THREADLAB_APPS_H
#define THREADLAB_APPS_H

#include <stddef.h>
#include <stdint.h>

#include "threadlab/compiler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- the split */

typedef struct {
    uint64_t begin, end; /* [begin, end) */
} tl_app_range;

/* The items of worker t (0 <= t < workers) out of n: contiguous ranges in
 * worker order, sizes differing by at most one (the first n % workers
 * workers get one more), so any worker count covers every item exactly
 * once, including counts that do not divide n and counts above n (the
 * surplus workers get empty ranges). workers == 0 gives an empty range. */
tl_app_range tl_app_split(uint64_t n, unsigned t, unsigned workers);

/* ----------------------------------------------------------- the kernels */

/* What one worker computed over its range. Integer kernels use isum
 * (modular arithmetic of the kernel's integer type), floating-point ones
 * sum; items counts what was computed, so the combination can check that
 * the workers together covered the work exactly. */
typedef struct {
    double sum;
    uint64_t isum;
    uint64_t items;
} tl_app_partial;

/* Run-time operands of the kernels. They are read from a volatile at run
 * time, so the compiler can neither fold them into the loops nor
 * strength-reduce the divisions. */
typedef struct {
    unsigned long imul, iadd; /* MIPS: y = x*imul + iadd, x = y / imul (iadd < imul) */
    double fmul, fadd;        /* MFLOPS: the same in double (exact: x + fadd/fmul) */
    uint64_t items;           /* the whole problem (trapezoid: its step h = 1/items) */
} tl_app_operands;

/* The verdict on a combined result. */
typedef struct {
    int integer;              /* result is an integer (modular checksum) */
    uint64_t iresult, iexpected;
    double result, expected;
    double error;             /* |result - expected| (0 for an equal checksum) */
    double bound;             /* accepted |error|: the method's error plus rounding */
    int verified;
} tl_app_verdict;

typedef struct {
    const char *name;       /* "mips" */
    const char *summary;    /* one line */
    const char *size_unit;  /* what size counts: "operations", "terms", "trapezoids" */
    const char *rate_unit;  /* unit of the rate: "Mops/s", ... */
    const char *quantity;   /* what the rate is */
    unsigned ops_per_item;  /* size = items * ops_per_item */
    uint64_t default_size, quick_size, paper_size;
    /* The work of one range. */
    void (*work)(const tl_app_operands *ops, uint64_t begin, uint64_t end, tl_app_partial *out);
    /* Combines the partials of `workers` workers and judges the result.
     * inject_error (a test hook) corrupts the combined result first. */
    void (*verdict)(const tl_app_operands *ops, const tl_app_partial *parts, unsigned workers, int inject_error,
                    tl_app_verdict *out);
} tl_app_kernel;

extern const tl_app_kernel tl_app_kernel_mips;
extern const tl_app_kernel tl_app_kernel_mflops;
extern const tl_app_kernel tl_app_kernel_pi;
extern const tl_app_kernel tl_app_kernel_trapezoid;

/* NULL-terminated, in the study's order. */
extern const tl_app_kernel *const tl_app_kernels[];
const tl_app_kernel *tl_app_find_kernel(const char *name);

/* The unit roundoff of double, 2^-53: rounding bounds are multiples of it. */
#define TL_APP_U 1.1102230246251565e-16

/* ----------------------------------------------------------- the workers */

/* What one worker saw, written by that worker alone (one cache line each). */
typedef struct {
    tl_app_partial partial;
    int cpu_start, cpu_end;   /* sched_getcpu() before and after the work */
    int policy, nice;         /* the worker thread's scheduling, as it ran */
    int pin_error;            /* errno of pinning itself, 0 = fine */
    int ran;                  /* 1 once the worker finished */
} TL_ALIGNED_CACHE_LINE tl_app_slot;

typedef struct {
    const tl_app_kernel *kernel;
    const tl_app_operands *ops; /* ops->items: the whole problem */
    unsigned workers;
    /* NULL: placement left to the OS. Else the CPU of worker t. */
    const int *cpus;
    tl_app_slot *slots; /* workers entries */
} tl_app_job;

/* The body of worker t: pins itself when pin_self and the job has CPUs,
 * computes its range, records what it saw in its slot. */
void tl_app_worker(tl_app_job *job, unsigned t, int pin_self);

/* Binds the calling thread to one CPU; 0 or an errno value. */
int tl_app_pin_self(int cpu);

/* ---------------------------------------------------------- a platform */

/* The platform's name ("pthread", "c11", "gomp", "llvmomp", "ult"). */
extern const char tl_app_platform_name[];

/* The runtime that really runs the threads, found at run time (e.g. which
 * OpenMP library got loaded), with its version where known. */
const char *tl_app_platform_runtime(void);

/* Runs job->workers workers, each calling tl_app_worker(job, t, ...), and
 * returns when all have finished.  Returns 0; -1 with a message in err
 * when the platform failed; 1 with the reason in err when it cannot do
 * what the job asks here (the run is unsupported, not failed). */
int tl_app_platform_run(tl_app_job *job, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
