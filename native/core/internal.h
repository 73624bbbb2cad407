/* internal.h - state shared by the framework's files; not installed. */
#ifndef THREADLAB_CORE_INTERNAL_H
#define THREADLAB_CORE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

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

/* ---- parsing helpers (main.c) ---- */
void tl_die(const char *fmt, ...) TL_PRINTF(1, 2) __attribute__((noreturn));
const char *tl_placement_name(tl_placement p);

#endif
