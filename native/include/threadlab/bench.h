/*
 * threadlab/bench.h - the framework every native benchmark program is
 * built on: a registry of benchmarks, their parameters and placements, the
 * adaptive measurement loop, and the JSON record each data point becomes.
 *
 * A benchmark is a tl_bench with a run() function.  run() receives a
 * tl_ctx describing one data point (parameter values, placement, options),
 * sets up its threads, calls tl_measure() with a timing function, adds the
 * checks that prove it measured what it claims, and returns.  The framework
 * writes one record per tl_emit() (run() may emit several, e.g. the LogP
 * parameters); whatever is pending when run() returns is emitted for it.
 *
 * The program's command line (tl_main) and the record format are described
 * in docs/native-protocol.md and docs/record-schema.md.
 */
#ifndef THREADLAB_BENCH_H
#define THREADLAB_BENCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "threadlab/clock.h"
#include "threadlab/compiler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- types */

typedef enum {
    TL_PLACE_UNBOUND = 0,    /* the scheduler decides */
    TL_PLACE_SAME_CPU,       /* every thread of the benchmark on one CPU */
    TL_PLACE_DIFFERENT_CPUS, /* each thread on its own CPU (distinct cores first) */
    TL_PLACE_COUNT
} tl_placement;

#define TL_PLACES_ALL ((1u << TL_PLACE_UNBOUND) | (1u << TL_PLACE_SAME_CPU) | (1u << TL_PLACE_DIFFERENT_CPUS))
#define TL_PLACE_BIT(p) (1u << (p))

typedef enum {
    TL_RULE_RSD = 0, /* relative standard deviation (the seed's criterion) */
    TL_RULE_RSE      /* relative standard error (SKaMPI's criterion) */
} tl_stop_rule;

typedef struct tl_ctx tl_ctx;

/* A parameter of a benchmark.  values: the default sweep; quick_values: the
 * sweep of --quick (NULL = the first default value only).  Both are
 * NULL-terminated.  Values outside the sweep are accepted on the command
 * line when check() (optional) accepts them; check returns NULL or a
 * description of the accepted values. */
typedef struct {
    const char *name;
    const char *help;
    const char *const *values;
    const char *const *quick_values;
    const char *(*check)(const char *value);
} tl_param_def;

typedef struct {
    const char *name;         /* stable dotted name: "pthread.mutex.pingpong" */
    const char *model;        /* thread model: "pthread", "process", ... */
    const char *summary;      /* one line for `threadlab list` */
    const char *quantity;     /* what one sample is: "time per ping-pong" */
    const char *unit;         /* "ns" unless stated */
    unsigned threads;         /* placed threads (slots); 0 = placement not applicable */
    unsigned placements;      /* TL_PLACE_BIT mask this benchmark accepts */
    unsigned default_placements; /* mask of the default sweep (0 = all accepted) */
    /* 1 = run() binds its threads itself, once its set-up is done; the
     * framework only plans the slots.  An MPI program must not be bound
     * before MPI_Init: what it reads of its CPUs there (the MPI, a library
     * such as libthreadlab-spawn) would be slot 0's one CPU. */
    unsigned binds_itself;
    const tl_param_def *params;  /* terminated by an entry with name == NULL */
    /* 0 = done.  Nonzero = failed: the pending record becomes a failed
     * one unless run() already emitted a failed record.  The program exits
     * 1 whenever any record it wrote is failed. */
    int (*run)(tl_ctx *ctx);
    /* The suite that runs it (`threadlab bench --suite`); NULL = primitives. */
    const char *suite;
} tl_bench;

/* A table entry of the common kind: no unit (ns), suite (primitives) or
 * default sweep of its own.  Other entries name their fields. */
#define TL_BENCH(NAME, MODEL, SUMMARY, QUANTITY, THREADS, PLACEMENTS, PARAMS, RUN)                      \
    {.name = NAME, .model = MODEL, .summary = SUMMARY, .quantity = QUANTITY, .threads = THREADS,          \
     .placements = PLACEMENTS, .params = PARAMS, .run = RUN}

/* Options of one data point (from the command line). */
typedef struct {
    tl_stop_rule rule;
    double target;            /* relative spread that ends the point (0.05) */
    unsigned warmup;          /* timings discarded before sampling */
    unsigned min_timings;
    unsigned max_timings;
    double min_timing_ns;     /* a calibrated timing lasts at least this long */
    double max_point_s;       /* time budget of the sampling loop */
    int quick;                /* --quick: smaller sweeps, shorter budgets */
} tl_options;

/* How tl_measure() drives a timing function. */
typedef struct {
    /* Actions per timing: 0 = calibrate (double until a timing lasts
     * min_timing_ns); otherwise exactly this many (e.g. the chain's M). */
    uint64_t fixed_iterations;
    /* Calibration never goes beyond this (0 = no cap). For actions that
     * consume resources (threads, processes). */
    uint64_t max_iterations;
    /* Calibration starts here (0 = 1): for protocols whose every timing has
     * start-up effects (a partner thread to set in motion) that a timing of
     * a handful of iterations would make the whole of what it checks. */
    uint64_t min_iterations;
    /* Each iteration performs this many of the measured actions: a sample
     * is elapsed / (iterations * actions_per_iteration).  0 means 1. */
    double actions_per_iteration;
    /* Optional reference loop with the same iteration structure minus the
     * action; its median time per iteration is subtracted. */
    double (*reference)(void *arg, uint64_t iterations);
    /* Record's metric name; NULL = "time". */
    const char *metric;
    /* What one sample is, overriding tl_bench.quantity (NULL = keep). */
    const char *quantity;
    /* No warm-up timings: for long fixed-count protocols (the time-slice
     * spin) whose every timing is already warm and costs seconds. */
    int skip_warmup;
} tl_measure_spec;

/* A timing function performs `iterations` iterations and returns the
 * elapsed time in nanoseconds, reading the clock itself with tl_now() so it
 * controls exactly what is inside the timed region.  A negative return
 * aborts the measurement (the function has called tl_fail()). */
typedef double (*tl_timing_fn)(void *arg, uint64_t iterations);

/* ------------------------------------------------------------ the context */

#define TL_MAX_SLOTS 256

struct tl_ctx {
    const tl_bench *bench;
    tl_placement placement;
    tl_options opt;
    /* The CPU of each thread slot (-1 = unbound), valid for slots below
     * tl_ctx_slots(). */
    int cpu[TL_MAX_SLOTS];
    unsigned nslots;
    /* The framework's private state. */
    struct tl_ctx_private *priv;
};

/* Value of a parameter (the command line's, else the definition's first). */
const char *tl_param(const tl_ctx *ctx, const char *name);
/* Integer parameter within [min, max]; out of range or not a number fails
 * the program with a message naming the value and the accepted range. */
long tl_param_long(const tl_ctx *ctx, const char *name, long min, long max);
/* Replaces a parameter's value for the rest of the point, so the record
 * shows the value actually used (a count scaled down to what the machine
 * allows; docs/thread-models.md).  value is copied. */
void tl_set_param(tl_ctx *ctx, const char *name, const char *value);
/* A check function accepting positive integers (for tl_param_def.check). */
const char *tl_check_positive_int(const char *value);

/* Re-plans the slots for n threads (benchmarks whose thread count is a
 * parameter).  Returns 0, or -1 after marking the point unsupported when the
 * placement cannot give n threads distinct CPUs. */
int tl_require_threads(tl_ctx *ctx, unsigned n);

/* Number of CPUs this process may run on. */
unsigned tl_allowed_cpus(void);

/* Binds the calling thread to slot's CPU (no-op for unbound) and verifies
 * with sched_getcpu() that it runs there; a mismatch is recorded as a failed
 * "placement" check.  Returns 0 or an errno value. */
int tl_bind_self(tl_ctx *ctx, unsigned slot);

/* pthread_create with the slot's affinity set in the attributes, so the
 * thread never runs elsewhere, even briefly (default attributes otherwise). */
int tl_thread_create(tl_ctx *ctx, unsigned slot, pthread_t *thread, void *(*fn)(void *), void *arg);

/* Sets the slot's CPU affinity in attributes the caller owns (for threads
 * that need other attributes too: detached, scope, stack).  No-op when the
 * slot is unbound.  Returns 0 or an errno value. */
int tl_attr_place(tl_ctx *ctx, unsigned slot, pthread_attr_t *attr);

/* The one-way latency of handing a cache line between the CPUs of two
 * slots (two partner threads bound there, passing a counter back and
 * forth; the median of 7 blocks of 4000 round trips, a few ms): the cost of
 * any cross-CPU hand-off, which a virtual machine's host may change
 * (core/handoff.c). NAN when the slots share a CPU or are unbound. */
double tl_line_handoff_ns(tl_ctx *ctx, unsigned slot_a, unsigned slot_b);

/* The path of a regular file relative to this program's directory (e.g.
 * "../lib/libthreadlab-omp.so" for a library of the build) in out.
 * Returns 0, or -1 when there is none. */
int tl_beside_program(const char *relative, char *out, size_t len);

/* Makes the process multi-threaded for the rest of its life (a parked
 * bystander thread).  glibc skips the atomic instructions of lock
 * operations in a process that never created a thread; single-thread lock
 * benchmarks call this first so that they measure what threaded programs
 * pay.  Returns 0, or -1 after tl_fail. */
int tl_process_multithreaded(tl_ctx *ctx);

/* ---------------------------------------------------------- measurement */

/* Calibrates, warms up and samples until the stopping rule is met.  The
 * samples go to the pending record.  Returns 0, or -1 when the timing
 * function failed. */
int tl_measure(tl_ctx *ctx, tl_timing_fn fn, void *arg, const tl_measure_spec *spec);

/* Adds one sample that the benchmark timed itself, in the record's unit:
 * for a protocol that runs once per program (a whole CilkSort, whose tasks
 * cannot be repeated inside one process), with no calibration and no
 * adaptive loop.  The record's stop rule is "fixed" (its timings are what
 * the protocol took, as many as added). */
void tl_add_sample(tl_ctx *ctx, double value);

/* A record that is computed from others (e.g. LogP's L), with no samples of
 * its own; formula names the derivation. */
void tl_derived(tl_ctx *ctx, const char *metric, const char *quantity, double value,
                const char *formula);

/* Names the pending record's metric (and quantity, NULL = keep) without
 * measuring: for a metric of a multi-record benchmark that is unsupported
 * or failed at this point. */
void tl_set_metric(tl_ctx *ctx, const char *metric, const char *quantity);

/* Names the pending record's unit, overriding tl_bench.unit: for a record
 * of another metric of the same benchmark (a count next to bytes). */
void tl_set_unit(tl_ctx *ctx, const char *unit);

/* Summary of the pending record's samples (valid after tl_measure). */
double tl_pending_mean(const tl_ctx *ctx);
double tl_pending_median(const tl_ctx *ctx);

/* A named check on what was measured; a failed check flags the point.
 * value may be NAN when the check has no numeric value. */
void tl_check(tl_ctx *ctx, const char *name, int ok, double value, const char *fmt, ...)
    TL_PRINTF(5, 6);

/* Extra named values carried by the record (e.g. the kernel's slice). */
void tl_extra_num(tl_ctx *ctx, const char *key, double value);
void tl_extra_str(tl_ctx *ctx, const char *key, const char *value);

/* The point cannot be measured here (reason says why); it is emitted as
 * such.  Return 0 from run() afterwards. */
void tl_unsupported(tl_ctx *ctx, const char *fmt, ...) TL_PRINTF(2, 3);
/* The point failed (reason says why). Return nonzero from run(). */
void tl_fail(tl_ctx *ctx, const char *fmt, ...) TL_PRINTF(2, 3);

/* Writes the pending record as one JSON line and starts a new one. */
void tl_emit(tl_ctx *ctx);

/* ------------------------------------------------- the ranks of a point */

/* Where a point of an MPI program ran (the record's "mpi" object,
 * docs/record-schema.md), set by the rank that writes the records.  It
 * stays for every further record of the point.  Strings are copied. */
typedef struct {
    int rank;                 /* the rank writing the record */
    const char *host;         /* that rank's host */
    int ranks;                /* ranks taking part in the measurement */
    int threads_per_rank;     /* threads of each of them in the measurement */
    int world;                /* ranks the launcher started */
    const char *transport;    /* "default" or "tcp" (the network transport forced) */
    const char *thread_level; /* MPI thread support: single, funneled, serialized, multiple */
    const char *library;      /* the MPI library (first line of MPI_Get_library_version) */
    const char *const *hosts; /* the distinct hosts of the ranks taking part */
    unsigned nhosts;
} tl_mpi_info;

void tl_set_mpi(tl_ctx *ctx, const tl_mpi_info *info);

/* ------------------------------------------- the yield ping-pong's check */

/* The "order" parameter of every yield ping-pong: "interleaved" (the
 * protocol, the only value swept) or "serial", accepted on the command line
 * as the self-test that proves the alternation check flags a run whose
 * threads did not alternate (the seed saw it on AIX). */
extern const char *const tl_yield_order_values[];
const char *tl_check_yield_order(const char *value);
#define TL_YIELD_ORDER_PARAM                                                                           \
    {.name = "order",                                                                                  \
     .help = "interleaved: both threads yield in turn; serial: self-test emulating AIX (not swept)",   \
     .values = tl_yield_order_values,                                                                  \
     .check = tl_check_yield_order}

/* The "alternated" check: switches[i] of yields[i] of thread i (main 0,
 * partner 1) found that the other thread had run since its previous look;
 * at least 90% means the yields alternated. */
void tl_check_alternated(tl_ctx *ctx, const uint64_t switches[2], const uint64_t yields[2]);

/* ------------------------------------------------------------ partners */

/* A partner thread for symmetric benchmarks.  Between timings the partner
 * waits; tl_partner_go() makes it run fn(arg, iterations) once, so both
 * threads perform the same number of iterations in every timing and the
 * adaptive loop can stop after any of them.  tl_partner_stop() ends and
 * joins it cleanly (no cancellation needed). */
typedef struct tl_partner tl_partner;
typedef void (*tl_partner_fn)(void *arg, uint64_t iterations);

tl_partner *tl_partner_start(tl_ctx *ctx, unsigned slot, tl_partner_fn fn, void *arg);
void tl_partner_go(tl_partner *partner, uint64_t iterations);
void tl_partner_wait(tl_partner *partner);
void tl_partner_stop(tl_partner *partner);

/* N partner threads on slots first_slot .. first_slot+N-1, each running fn
 * on its own argument (args + i * arg_size), driven together: every timing
 * starts them all and waits for them all, so each runs exactly as many
 * rounds as main. */
typedef struct {
    tl_partner **p;
    unsigned n;
} tl_team;

/* Returns 0, or -1 after failing the point (the started ones stopped). */
int tl_team_start(tl_ctx *ctx, tl_team *team, unsigned first_slot, unsigned n, tl_partner_fn fn, void *args,
                  size_t arg_size);
void tl_team_go(tl_team *team, uint64_t iterations);
void tl_team_wait(tl_team *team);
void tl_team_stop(tl_team *team);

/* ------------------------------------------------------- futex helpers */

/* Thin wrappers over futex(2) on a 32-bit word, private to the process. */
long tl_futex_wait(uint32_t *word, uint32_t expected);
long tl_futex_wake(uint32_t *word, int count);

/* ---------------------------------------------------------- the program */

/* A named string the program's --env prints in its "extra" object (what
 * the framework cannot know: the MPI under an MPI program).  Call before
 * tl_main; key and value are copied; at most 8. */
void tl_env_extra(const char *key, const char *value);

/* The main of a benchmark program: --list, --env, --run (see
 * docs/native-protocol.md). benches is terminated by a NULL name. */
int tl_main(int argc, char **argv, const tl_bench *benches);
/* tl_main over several tables (one per source file of a program), chained
 * in order. */
int tl_main_families(int argc, char **argv, const tl_bench *const *families, size_t nfamilies);

#ifdef __cplusplus
}
#endif
#endif
