/* internal.h - state shared by the timing core's files; not installed.
 * Each part is declared under the file that defines it; a file calls
 * down (die.c, params.c, options.c are leaves), never up into main.c. */
#ifndef THREADLAB_CORE_INTERNAL_H
#define THREADLAB_CORE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "threadlab/bench.h"
#include "threadlab/json.h"
#include "threadlab/summary.h"

/* ---- the record under construction ---- */
#define TL_MAX_CHECKS 16
#define TL_MAX_EXTRAS 24

typedef struct {
    char name[48];
    int ok;
    double value;
    char detail[256];
} tl_check_entry;

typedef struct {
    char key[48];
    int is_string;
    double number;
    char string[256];
} tl_extra_entry;

typedef enum { TL_STATUS_NONE = 0, TL_STATUS_OK, TL_STATUS_UNSUPPORTED, TL_STATUS_FAILED } tl_status;

typedef struct {
    tl_status status;
    char reason[512];
    char metric[48];
    char quantity[128];
    char unit[16];            /* "" = the benchmark's */
    double *samples;
    size_t nsamples, capsamples;
    uint64_t iterations;
    double actions_per_iteration;
    double overhead_ns;       /* reference per action subtracted; NAN if none */
    unsigned warmup_done;
    const char *stop_reason;  /* "target" | "max-timings" | "time-budget" | "derived" */
    double derived_value;
    char formula[128];
    double elapsed_s;         /* wall time of the sampling loop */
    tl_check_entry checks[TL_MAX_CHECKS];
    unsigned nchecks;
    tl_extra_entry extras[TL_MAX_EXTRAS];
    unsigned nextras;
} tl_pending;

#define TL_MAX_PARAMS 16

struct tl_ctx_private {
    const char *param_names[TL_MAX_PARAMS];
    const char *param_values[TL_MAX_PARAMS];
    unsigned nparams;
    unsigned owned_params; /* bit i: param_values[i] was copied by tl_set_param */
    tl_pending pending;
    unsigned emitted;
    unsigned emitted_failed;    /* records written with status failed */
    int placement_failed;       /* a thread ran elsewhere than its slot */
    char placement_detail[256];
    char *mpi_json;             /* the record's "mpi" object (tl_set_mpi), or NULL */
};

void tl_pending_reset(tl_pending *p);
void tl_pending_add_sample(tl_pending *p, double sample);

/* ---- placement planning (placement.c) ---- */
int tl_topology_init(char *err, size_t errlen);
/* Fills ctx->cpu for n slots; returns 0, or -1 with the reason. */
int tl_plan_slots(tl_ctx *ctx, unsigned n, char *reason, size_t reasonlen);
/* Writes the "topology" object of --env. */
void tl_topology_json(tl_json *j);

/* ---- the program's name and its end on a usage error (die.c) ---- */
void tl_set_program_name(const char *argv0);
const char *tl_program_name(void);
void tl_die(const char *fmt, ...) TL_PRINTF(1, 2) __attribute__((noreturn));

/* ---- placement names (placement.c) ---- */
const char *tl_placement_name(tl_placement p);
/* 0, or -1 when text names no placement. */
int tl_parse_placement(const char *text, tl_placement *out);

/* ---- parameters of a point (params.c) ---- */
/* --param NAME=VALUE, checked against the benchmark's definition. */
void tl_param_assign(tl_ctx *ctx, const char *assignment);
/* 0 and the value, or -1 when text is not an integer. */
int tl_parse_long(const char *text, long *out);

/* ---- the measurement options, stated once (options.c) ---- */
typedef enum { TL_OPTION_CHOICE, TL_OPTION_INTEGER, TL_OPTION_NUMBER } tl_option_kind;

typedef struct {
    const char *name;    /* the front end's name: "min_timings" */
    const char *flag;    /* "--min-timings" */
    const char *metavar;
    tl_option_kind kind;
    double min, max;     /* numbers and integers */
    double normal, quick; /* defaults (a choice: the index of its value) */
    const char *const *choices;
    const char *unit;    /* of the defaults in --help: " ms", " s" or "" */
    const char *help;
    const char *meaning; /* what a value is, for an error on a bad one ("" for none) */
} tl_option_def;

extern const tl_option_def tl_option_defs[]; /* terminated by a NULL name */
const tl_option_def *tl_option_find(const char *flag);
tl_options tl_default_options(int quick);
/* The value of text for the option (a choice: its index); a bad one ends
 * the program with the accepted range. */
double tl_option_value(const tl_option_def *d, const char *text);
void tl_option_set(tl_options *o, const tl_option_def *d, double value);
/* The defaults as one JSON object (--env's "defaults"). */
void tl_options_json(tl_json *j, int quick);
/* --options: one JSON object per option. */
void tl_print_options(void);
/* The options' lines of --help. */
void tl_print_options_help(FILE *out);

/* ---- what a program says about itself (describe.c) ---- */
void tl_print_list(const tl_bench *benches);
void tl_print_env(void);

#endif
