/* main.c - threadlab-bench-omp-RUNTIME: the OpenMP directive suite on one
 * runtime (docs/omp-suite.md).  What a runtime is comes from the build
 * (CMakeLists.txt): OMPB_MODEL names it, OMPB_LIBRARY is what the path of
 * the library providing GOMP_parallel must contain, a runtime that is
 * preloaded gives OMPB_PRELOAD (a library of build/lib) and OMPB_PRELOAD_ENV
 * (its settings, "NAME=VALUE ..."), and OMPB_ULT says its OpenMP threads
 * are user-level threads on virtual processors (VPs).
 *
 * Placement on a runtime of user-level threads: an OpenMP thread has no
 * CPU of its own; it runs on whichever VP takes it, and the VPs are the
 * kernel threads the kernel places.  So different-cpus places the VPs:
 * the program re-executes itself with the slots' CPUs as its CPU mask and
 * OMP_PROC_BIND=true (the runtime starts one VP per CPU of its mask and
 * binds VP i to the i-th), and a thread's CPU is the CPU of the VP running
 * it when asked. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ompb.h"

#ifndef OMPB_MODEL
#error "OMPB_MODEL names the runtime (CMakeLists.txt)"
#endif
#ifndef OMPB_LIBRARY
#error "OMPB_LIBRARY is what the runtime library's path contains (CMakeLists.txt)"
#endif

const char *const ompb_model = OMPB_MODEL;
const char *const ompb_thread_values[] = {"1", "2", "4", "8", "16", NULL};
const char *const ompb_thread_quick[] = {"2", NULL};

/* EPCC's default delay: 0.1 microseconds. */
#define OMPB_DELAY_NS 100.0
#define OMPB_REEXEC_ENV "THREADLAB_OMPB_PRELOADED"

static char **saved_argv;
/* The CPU mask the program started with: the framework binds the main
 * thread before run(), and a re-executed program must start as this one
 * did, or it would inherit that one CPU. */
static cpu_set_t start_mask;

/* ------------------------------------------------------------ the delay */

void ompb_delay(long length)
{
    uint64_t a = 1;
    for (long i = 0; i < length; i++) {
        a = a * 6364136223846793005u + (uint64_t)i;
        tl_launder(a);
    }
    tl_do_not_optimize(a);
}

/* libthreadlab-gomp's VP of the calling ULT (its threads move between
 * VPs, which it binds to CPUs), found when the runtime is in place */
static int (*place_vp)(void);

int ompb_place(void)
{
    return place_vp ? place_vp() : sched_getcpu();
}

void ompb_sample_places(ompb_run *run, double (*time)(void *, uint64_t))
{
    for (int i = 0; i < run->n; i++)
        memset(run->t[i].where, 0xff, sizeof run->t[i].where);
    run->sampling = 1;
    time(run, OMPB_SAMPLES);
    run->sampling = 0;
    unsigned shared = 0;
    for (unsigned j = 0; j < OMPB_SAMPLES; j++) {
        int same = 0;
        for (int a = 0; a < run->n && !same; a++)
            for (int b = 0; b < a && !same; b++)
                same = run->t[a].where[j] >= 0 && run->t[a].where[j] == run->t[b].where[j];
        shared += (unsigned)same;
    }
    tl_extra_num(run->ctx, "team_shared_place", (double)shared / OMPB_SAMPLES);
    /* at most 1% of them: a runtime that moves its threads (a thread
     * woken while its VP was busy) may share a VP for an iteration */
    if (run->ctx->placement != TL_PLACE_UNBOUND)
        tl_check(run->ctx, "team_apart", shared * 100 <= OMPB_SAMPLES, (double)shared,
                 "%u of %d sampled iterations had two threads of the team on one %s (at most 1%% accepted)",
                 shared, OMPB_SAMPLES, place_vp ? "VP" : "CPU");
}

double ompb_delays(const ompb_run *run, uint64_t count)
{
    long len = run->delay_length;
    uint64_t scratch = 0;
    uint64_t t0 = tl_now();
    for (uint64_t j = 0; j < count; j++) {
        ompb_delay(len);
        scratch++;
        tl_launder(scratch);
    }
    double t = tl_ticks_to_ns(tl_now() - t0);
    tl_do_not_optimize(scratch);
    return t;
}

static double delay_time_ns(long length)
{
    uint64_t t0 = tl_now();
    ompb_delay(length);
    return tl_ticks_to_ns(tl_now() - t0);
}

/* The length whose delay lasts OMPB_DELAY_NS: the cost of one iteration
 * from long runs (the best of five, so a preemption does not inflate it). */
static void calibrate_delay(ompb_run *run)
{
    long length = 1024;
    while (delay_time_ns(length) < 50e3 && length < (1L << 30))
        length *= 2;
    double best = INFINITY;
    for (int i = 0; i < 5; i++) {
        double t = delay_time_ns(length) / (double)length;
        best = t < best ? t : best;
    }
    run->delay_length = lround(OMPB_DELAY_NS / best);
    if (run->delay_length < 1)
        run->delay_length = 1;
    run->delay_ns = delay_time_ns(run->delay_length * 1000) / 1000.0;
}

/* --------------------------------------------------------- the runtime */

/* The library that provides the entry every parallel region calls. */
static const char *runtime_library(void)
{
    void *entry = dlsym(RTLD_DEFAULT, "GOMP_parallel");
    Dl_info info;
    if (!entry || !dladdr(entry, &info) || !info.dli_fname)
        return NULL;
    return info.dli_fname;
}

#ifdef OMPB_ULT
/* The mask the re-executed program starts with: the slots' CPUs when they
 * are placed (its runtime binds one VP to each), else the program's own. */
static void ult_start_mask(const tl_ctx *ctx, cpu_set_t *mask)
{
    if (ctx->placement == TL_PLACE_UNBOUND || ctx->nslots == 0)
        return;
    CPU_ZERO(mask);
    for (unsigned i = 0; i < ctx->nslots; i++)
        if (ctx->cpu[i] >= 0)
            CPU_SET(ctx->cpu[i], mask);
    setenv("OMP_PROC_BIND", "true", 1);
}
#endif

#ifdef OMPB_PRELOAD
/* Re-executes the program with the runtime preloaded, before anything is
 * printed.  Returns only when that is impossible (unsupported, or failed). */
static int preload_runtime(tl_ctx *ctx)
{
    if (getenv(OMPB_REEXEC_ENV)) {
        tl_fail(ctx, "%s was preloaded but does not provide GOMP_parallel (it comes from %s)", OMPB_PRELOAD,
                runtime_library() ? runtime_library() : "nowhere");
        return -1;
    }
    char library[PATH_MAX];
    if (tl_beside_program("../lib/" OMPB_PRELOAD, library, sizeof library) != 0) {
        tl_unsupported(ctx, "%s is not built (looked in ../lib beside this program)", OMPB_PRELOAD);
        return 1;
    }
    char settings[] = OMPB_PRELOAD_ENV;
    for (char *save = NULL, *kv = strtok_r(settings, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        *eq = '\0';
        setenv(kv, eq + 1, 1);
    }
    /* A manager no other process can know of: the shim finds none and runs
     * unmanaged, whatever managers run on the machine (a random name, so no
     * other user can put an arena there first). */
    unsigned char random[8];
    if (getrandom(random, sizeof random, 0) != (ssize_t)sizeof random) {
        tl_fail(ctx, "getrandom: %s", strerror(errno));
        return -1;
    }
    char arena[64];
    snprintf(arena, sizeof arena, "/threadlab-ompb-%02x%02x%02x%02x%02x%02x%02x%02x", random[0], random[1],
             random[2], random[3], random[4], random[5], random[6], random[7]);
    setenv("THREADLAB_RM_ARENA", arena, 1);
    const char *old = getenv("LD_PRELOAD");
    char preload[2 * PATH_MAX];
    snprintf(preload, sizeof preload, "%s%s%s", library, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    setenv(OMPB_REEXEC_ENV, "1", 1);
#ifdef OMPB_ULT
    ult_start_mask(ctx, &start_mask);
#endif
    if (sched_setaffinity(0, sizeof start_mask, &start_mask) != 0) {
        tl_fail(ctx, "cannot restore the CPU mask before re-executing: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    execv("/proc/self/exe", saved_argv);
    tl_fail(ctx, "cannot re-execute with %s preloaded: %s", OMPB_PRELOAD, strerror(errno));
    return -1;
}
#endif

static int runtime_in_place(tl_ctx *ctx)
{
    const char *library = runtime_library();
#ifdef OMPB_PRELOAD
    if (!library || !strstr(library, OMPB_LIBRARY))
        return preload_runtime(ctx);
#endif
    if (!library || !strstr(library, OMPB_LIBRARY)) {
        tl_fail(ctx, "runtime %s: GOMP_parallel comes from %s, not %s", ompb_model, library ? library : "nowhere",
                OMPB_LIBRARY);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ the team */

/* The one-way hand-off between the team's first two CPUs (NAN unless
 * the team is apart). */
static double team_handoff_ns(ompb_run *run)
{
    if (run->ctx->placement != TL_PLACE_DIFFERENT_CPUS || run->n < 2)
        return NAN;
    return tl_line_handoff_ns(run->ctx, 0, 1);
}

int ompb_open(tl_ctx *ctx, ompb_run *run)
{
    memset(run, 0, sizeof *run);
    run->ctx = ctx;
    /* The slots first: a runtime that is preloaded may need them to start
     * (OMPB_ULT). */
    long n = tl_param_long(ctx, "threads", 1, TL_MAX_SLOTS);
    if (tl_require_threads(ctx, (unsigned)n) != 0)
        return 1;
    int rc = runtime_in_place(ctx);
    if (rc != 0)
        return rc;
    place_vp = (int (*)(void))dlsym(RTLD_DEFAULT, "threadlab_gomp_vp");
    run->n = (int)n;
    run->t = aligned_alloc(TL_CACHE_LINE, (size_t)n * sizeof *run->t);
    if (!run->t) {
        tl_fail(ctx, "out of memory");
        return -1;
    }
    memset(run->t, 0, (size_t)n * sizeof *run->t);
    /* Exactly n threads in every region, each bound once to its slot: the
     * runtimes keep their threads from region to region (checked after
     * every timing by ompb_verify_team). */
    omp_set_dynamic(0);
    /* The runtime starts its threads from the program's own mask, not from
     * the one CPU the framework bound the main thread to: LLVM's libomp
     * keeps the mask it starts with as its threads' (and runs a team whose
     * members were rebound later many times slower). */
    if (sched_setaffinity(0, sizeof start_mask, &start_mask) != 0) {
        tl_fail(ctx, "cannot restore the main thread's CPU mask: %s", strerror(errno));
        ompb_close(run);
        return -1;
    }
#pragma omp parallel num_threads(run->n)
    tl_do_not_optimize(omp_get_thread_num());
#ifndef OMPB_ULT
#pragma omp parallel num_threads(run->n)
    tl_bind_self(ctx, (unsigned)omp_get_thread_num());
#endif
    calibrate_delay(run);
    run->handoff_before = team_handoff_ns(run);
    return 0;
}

void ompb_close(ompb_run *run)
{
    free(run->t);
    run->t = NULL;
}

#ifdef OMPB_ULT
/* The one CPU the calling kernel thread (a VP) is bound to, if it runs
 * there; else -1.  Both asked of the kernel: glibc's sched_getcpu() reads
 * the CPU from the thread's rseq area, in TLS, and a ULT wearing another
 * kernel thread's TLS (libthreadlab-gomp's identities) would read that
 * thread's. */
static int vp_bound_cpu(void)
{
    cpu_set_t mask;
    unsigned cpu;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0 || CPU_COUNT(&mask) != 1 ||
        syscall(SYS_getcpu, &cpu, NULL, NULL) != 0)
        return -1;
    return cpu < CPU_SETSIZE && CPU_ISSET(cpu, &mask) ? (int)cpu : -1;
}

/* Each thread's VP bound to one CPU of the slots, and no two VPs to the
 * same CPU. */
static void ult_verify_vps(ompb_run *run)
{
    const tl_ctx *ctx = run->ctx;
    for (int i = 0; i < run->n; i++) {
        int inside = 0;
        for (unsigned k = 0; k < ctx->nslots; k++)
            inside |= run->t[i].vp_cpu >= 0 && ctx->cpu[k] == run->t[i].vp_cpu;
        for (int j = 0; j < i && inside; j++)
            if (run->t[j].vp_tid != run->t[i].vp_tid && run->t[j].vp_cpu == run->t[i].vp_cpu)
                inside = 0;
        if (!inside)
            run->t[i].misplaced++;
    }
}
#endif

void ompb_verify_team(ompb_run *run)
{
    int team = 0;
    const tl_ctx *ctx = run->ctx;
    int placed = ctx->placement != TL_PLACE_UNBOUND;
#pragma omp parallel num_threads(run->n)
    {
        int id = omp_get_thread_num();
        if (id == 0)
            team = omp_get_num_threads();
#ifdef OMPB_ULT
        if (placed) {
            run->t[id].vp_tid = syscall(SYS_gettid);
            run->t[id].vp_cpu = vp_bound_cpu();
        }
#else
        int cpu = placed && id < (int)ctx->nslots ? ctx->cpu[id] : -1;
        if (cpu >= 0 && sched_getcpu() != cpu)
            run->t[id].misplaced++;
#endif
    }
    if (team < run->n)
        run->small_teams++;
#ifdef OMPB_ULT
    if (placed)
        ult_verify_vps(run);
#endif
}

uint64_t ompb_work(const ompb_run *run)
{
    uint64_t sum = 0;
    for (int i = 0; i < run->n; i++)
        sum += run->t[i].work;
    return sum;
}

void ompb_checks(ompb_run *run, const char *what)
{
    tl_ctx *ctx = run->ctx;
    uint64_t work = ompb_work(run);
    tl_check(ctx, "work", work == run->expected, (double)work, "%s: %llu counted, %llu expected", what,
             (unsigned long long)work, (unsigned long long)run->expected);
    tl_check(ctx, "team", run->small_teams == 0, (double)run->small_teams,
             "%llu timings ran with fewer than %d threads", (unsigned long long)run->small_teams, run->n);
    if (ctx->placement != TL_PLACE_UNBOUND) {
        uint64_t misplaced = 0;
        for (int i = 0; i < run->n; i++)
            misplaced += run->t[i].misplaced;
#ifdef OMPB_ULT
        tl_check(ctx, "placement_team", misplaced == 0, (double)misplaced,
                 "%llu times a team thread was found on a VP not bound to one CPU of its own among the "
                 "placement's after a timing", (unsigned long long)misplaced);
#else
        tl_check(ctx, "placement_team", misplaced == 0, (double)misplaced,
                 "%llu times a team thread was found off its CPU after a timing", (unsigned long long)misplaced);
#endif
    }
    const char *library = runtime_library();
    tl_check(ctx, "runtime", library && strstr(library, OMPB_LIBRARY), NAN, "GOMP_parallel from %s (%s expected)",
             library ? library : "nowhere", OMPB_LIBRARY);
    tl_extra_str(ctx, "runtime_library", library ? library : "");
    tl_extra_num(ctx, "delay_ns", run->delay_ns);
    tl_extra_num(ctx, "delay_length", (double)run->delay_length);
    /* the figures of a team apart are made of such hand-offs: measured
     * before the timings and after them, they say whether the host moved
     * the CPUs meanwhile (the samples would then mix two machines) */
    double before = run->handoff_before, after = team_handoff_ns(run);
    if (isfinite(before) && isfinite(after)) {
        tl_extra_num(ctx, "line_handoff_ns", after);
        tl_extra_num(ctx, "line_handoff_before_ns", before);
        double ratio = before > after ? before / after : after / before;
        tl_check(ctx, "machine_state", ratio < OMPB_HANDOFF_UNLIKE, ratio,
                 "a cache line crossed between the team's first two CPUs in %.0f ns before the timings and %.0f ns "
                 "after them (%.0fx or more apart: the host moved the CPUs during the point)",
                 before, after, OMPB_HANDOFF_UNLIKE);
    }
}

/* ---------------------------------------------------------------- main */

static const tl_bench *const families[] = {ompb_sync, ompb_sched, ompb_task};

#ifdef OMPB_ULT
/* The re-executed program of a placed point: OMP_PROC_BIND makes libgomp's
 * constructor (libgomp is loaded, though not used) bind the initial thread
 * to its first place before main; the program's CPUs are all the places. */
static void ult_widen_main_thread(void)
{
    if (!getenv(OMPB_REEXEC_ENV) || omp_get_num_places() <= 0)
        return;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    int ids[CPU_SETSIZE];
    for (int p = 0; p < omp_get_num_places(); p++) {
        int k = omp_get_place_num_procs(p);
        if (k <= 0 || k > CPU_SETSIZE)
            continue;
        omp_get_place_proc_ids(p, ids);
        for (int i = 0; i < k; i++)
            if (ids[i] >= 0 && ids[i] < CPU_SETSIZE)
                CPU_SET(ids[i], &mask);
    }
    if (CPU_COUNT(&mask) > 0)
        sched_setaffinity(0, sizeof mask, &mask);
}
#endif

int main(int argc, char **argv)
{
    saved_argv = argv;
#ifdef OMPB_ULT
    ult_widen_main_thread();
#endif
    if (sched_getaffinity(0, sizeof start_mask, &start_mask) != 0)
        CPU_ZERO(&start_mask);
    return tl_main_families(argc, argv, families, sizeof families / sizeof families[0]);
}
