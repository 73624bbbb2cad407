/* ompb.h - what the benchmarks of the OpenMP directive suite share
 * (docs/omp-suite.md).  The method is EPCC's: each construct is timed
 * around a calibrated delay, and the same delays run by one thread without
 * the construct are the reference loop subtracted from every sample
 * (tl_measure_spec.reference), so a sample is the construct's overhead.
 *
 * One program per OpenMP runtime (the record's model): the same sources,
 * compiled by GCC, linked with libgomp or LLVM's libomp, or re-executed
 * with a shim preloaded (native/bench/omp/CMakeLists.txt lists them). */
#ifndef THREADLAB_OMPB_H
#define THREADLAB_OMPB_H

#include <stdatomic.h>
#include <stdint.h>

#include "threadlab/bench.h"

#define OMPB_SUITE "omp"

/* Iterations of the sampling pass (ompb_sample_places). */
#define OMPB_SAMPLES 256

/* One thread's counters, alone on its cache lines. */
typedef struct {
    uint64_t work;    /* delays (or increments) this thread ran */
    uint64_t early;   /* barrier passes before its neighbour arrived */
    _Atomic uint64_t arrived;
    uint64_t misplaced; /* timings after which it was not on its CPU */
    /* A runtime of user-level threads (OMPB_ULT): the virtual processor
     * (kernel thread) that ran it in the latest check, and the one CPU that
     * VP is bound to (-1: none, or more than one). */
    long vp_tid;
    int vp_cpu;
    /* Where it ran iteration j of the sampling pass (ompb_place). */
    int16_t where[OMPB_SAMPLES];
} TL_ALIGNED_CACHE_LINE ompb_thread;

/* One point: the team, the delay, what the checks count. */
typedef struct {
    tl_ctx *ctx;
    int n;                /* threads of the team */
    long delay_length;    /* iterations of ompb_delay giving delay_ns */
    double delay_ns;      /* measured */
    ompb_thread *t;       /* n of them */
    uint64_t shared;      /* updated inside critical sections, locks, atomics */
    uint64_t expected;    /* what the counts must add up to */
    uint64_t small_teams; /* timings whose team had fewer than n threads */
    void *data;           /* the benchmark's own */
    int sampling;         /* the sampling pass runs: OMPB_WHERE records */
    double handoff_before; /* tl_line_handoff_ns before the timings (NAN: team not apart) */
} ompb_run;

/* Hand-offs before and after a point's timings this many times apart or
 * more: the check machine_state fails (compare's "unlike machines" uses
 * the same factor). */
#define OMPB_HANDOFF_UNLIKE 2.0

/* The CPU, or for a runtime of user-level threads the virtual processor,
 * running the calling thread now. */
int ompb_place(void);

/* In the constructs whose threads each run one delay per iteration and
 * meet at its end: thread id ran iteration j there.  Outside the sampling
 * pass a load and a branch not taken. */
#define OMPB_WHERE(r, id, j)                                                                       \
    do {                                                                                           \
        if (__builtin_expect((r)->sampling, 0))                                                    \
            (r)->t[id].where[(j) % OMPB_SAMPLES] = (int16_t)ompb_place();                          \
    } while (0)

/* After the timings: runs `time` for OMPB_SAMPLES iterations with OMPB_WHERE
 * recording, and reports how many iterations had two threads of the team
 * in one place (extra team_shared_place, the fraction): a runtime of
 * user-level threads may run two OpenMP threads one after the other on
 * one VP, and then the sample timed no team working at once.  With a
 * placement (the threads on CPUs of their own) the check team_apart fails
 * when more than 1% did. */
void ompb_sample_places(ompb_run *run, double (*time)(void *, uint64_t));

/* The model this program measures ("gomp", "llvmomp", ...). */
extern const char *const ompb_model;

extern const tl_bench ompb_sync[];  /* sync.c   synchronisation constructs (EPCC syncbench) */
extern const tl_bench ompb_sched[]; /* sched.c  loop schedules (schedbench) */
extern const tl_bench ompb_task[];  /* task.c   tasks (taskbench) */

/* The delay of EPCC's method: `length` iterations of a dependent integer
 * computation the compiler cannot remove. */
void ompb_delay(long length);

/* EPCC's reference: `count` delays run by the calling thread alone, with
 * the counting the tests do; the elapsed nanoseconds. */
double ompb_delays(const ompb_run *run, uint64_t count);

/* Sets the point up for every benchmark: this program's runtime in place
 * (a preloaded one re-executes the program), the team of `threads`
 * (parameter) placed on the slots of the placement, the delay calibrated.
 * Returns 0, or 1 when the point is unsupported here (the reason is set),
 * -1 after tl_fail. */
int ompb_open(tl_ctx *ctx, ompb_run *run);
void ompb_close(ompb_run *run);

/* After each timing, outside it: a region that checks the team's size and
 * that every thread still runs on its CPU (on a runtime of user-level
 * threads: that the VP running it is bound to one CPU of the placement,
 * no other VP to the same one). */
void ompb_verify_team(ompb_run *run);

/* The checks every record has (team, placement, runtime), and `work`: the
 * counters add up to run->expected. */
void ompb_checks(ompb_run *run, const char *what);

/* Sum of the threads' work counters. */
uint64_t ompb_work(const ompb_run *run);

/* The threads parameter of every benchmark. */
extern const char *const ompb_thread_values[];
extern const char *const ompb_thread_quick[];
#define OMPB_THREADS_PARAM                                                                                 \
    {.name = "threads", .help = "threads of the team (different-cpus needs as many CPUs)",               \
     .values = ompb_thread_values, .quick_values = ompb_thread_quick, .check = tl_check_positive_int}

/* Placements: unbound (the runtime's own) and different-cpus (each team
 * thread bound to its CPU).  same-cpu is not offered: OpenMP runtimes spin
 * while they wait, so a team on one CPU measures its time slice. */
#define OMPB_PLACES (TL_PLACE_BIT(TL_PLACE_UNBOUND) | TL_PLACE_BIT(TL_PLACE_DIFFERENT_CPUS))

/* A benchmark of the suite: its model (the runtime), suite, placements and
 * one placed thread (the team's others are planned by the benchmark) are
 * the suite's, stated here once. */
#define OMPB_BENCH(NAME, SUMMARY, QUANTITY, PARAMS, RUN)                                               \
    {.name = NAME, .model = OMPB_MODEL, .suite = OMPB_SUITE, .summary = SUMMARY, .quantity = QUANTITY, \
     .threads = 1, .placements = OMPB_PLACES, .params = PARAMS, .run = RUN}

#endif
