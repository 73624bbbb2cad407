/*
 * threadlab/record.h - libthreadlab-record: one data point as one line of
 * the record format (docs/record-schema.md), for every native program
 * that prints records: the benchmark programs (through the timing core's
 * tl_emit), the study programs threadlab-app-* and threadlab-npb.  It
 * needs only libc and libthreadlab-json, so 32-bit programs link it too
 * (threadlab_record_32).
 *
 * A producer fills a tl_record (zero-initialised: every field absent) and
 * calls tl_record_write; the summary is computed from the samples here
 * (threadlab/summary.h), the one place a native record's summary is made.
 */
#ifndef THREADLAB_RECORD_H
#define THREADLAB_RECORD_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TL_RECORD_SCHEMA "threadlab.record/1"

typedef struct {
    const char *name;
    int ok;
    double value; /* NAN: no value */
    const char *detail;
} tl_record_check;

typedef struct {
    const char *key;
    const char *string; /* NULL: the value is number */
    double number;      /* NAN: null */
} tl_record_extra;

/* How a measured point stopped (the record's "stop" object). */
typedef struct {
    const char *rule;   /* "rsd", "rse", "fixed" */
    double target;      /* NAN: null */
    const char *reason; /* "target", "max-timings", "time-budget", "derived", "fixed" */
    long long min_timings, max_timings;
    double elapsed_s;
} tl_record_stop;

typedef struct {
    const char *benchmark, *model;
    const char *metric;  /* NULL: "time" */
    const char *const *param_names, *const *param_values;
    unsigned nparams;
    const char *placement; /* "none", "unbound", "same-cpu", "different-cpus" */
    const int *cpus;       /* the CPU of each placed thread, -1: unbound (null) */
    unsigned ncpus;
    const char *unit, *quantity;
    const char *status; /* "ok", "unsupported", "failed" */
    const char *reason; /* NULL: null */
    const char *clock;  /* NULL: null */
    /* measured: nsamples > 0 */
    const double *samples;
    size_t nsamples;
    long long iterations;         /* per timing */
    double actions_per_iteration;
    unsigned warmup;
    double overhead_ns;           /* NAN: null */
    /* derived (no samples of its own): the value and its formula */
    const char *formula;          /* NULL: not derived */
    double derived_value;
    const tl_record_stop *stop;   /* NULL: null (a point that did not measure) */
    const tl_record_check *checks;
    unsigned nchecks;
    const tl_record_extra *extras;
    unsigned nextras;
    const char *mpi_json; /* the optional "mpi" object, already JSON; NULL: absent */
} tl_record;

/* Writes the record as one line on out, flushed (a reader never sees half
 * a record); 0, or -1 when the write failed. */
int tl_record_write(const tl_record *record, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
