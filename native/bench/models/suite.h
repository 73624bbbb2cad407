/* models.h - what the benchmark files of the models suite share: their
 * tables, the per-point set-up of the model, and the scaling of counts.
 * The benchmarks themselves (docs/thread-models.md) are written against
 * threadlab/model.h only, so that each compiles unchanged for every model. */
#ifndef THREADLAB_MODELS_H
#define THREADLAB_MODELS_H

#include <stdatomic.h>
#include <stdint.h>

#include "threadlab/bench.h"
#include "threadlab/model.h"

#define TL_MODELS_SUITE "models"

/* A benchmark of the suite: its model is the program's (tl_model_name)
 * and its suite the models suite, stated here once. */
#define TL_MODELS_BENCH(NAME, SUMMARY, QUANTITY, THREADS, PLACEMENTS, PARAMS, RUN)                         \
    {.name = NAME, .model = tl_model_name, .suite = TL_MODELS_SUITE, .summary = SUMMARY, .quantity = QUANTITY, \
     .threads = THREADS, .placements = PLACEMENTS, .params = PARAMS, .run = RUN}

extern const tl_bench tl_models_lifecycle[]; /* lifecycle.c create_join, chain, instantiate, start, start_join */
extern const tl_bench tl_models_handoff[];   /* handoff.c   yield, mutex and condition-variable ping-pongs */
extern const tl_bench tl_models_sleep[];     /* sleep.c     seed 003's sleep, yield, sleep */
extern const tl_bench tl_models_capacity[];  /* capacity.c  memory per suspended thread */

/* Runs body(ctx) between tl_model_init and tl_model_fini. */
int tl_models_run(tl_ctx *ctx, int (*body)(tl_ctx *));

/* The check of every count parameter: an integer from 1 to 10,000,000. */
const char *tl_models_check_count(const char *value);

/* A count scaled to the machine (see tl_models_count). */
typedef struct {
    uint64_t requested; /* the count asked for */
    uint64_t count;     /* the count used; 0 = unsupported */
    char because[320];  /* why it was lowered ("" = it was not) */
    int machine_limit;  /* lowered by this machine's limits (not a sanitizer build's cap) */
} tl_models_scaling;

/* Adds extra.scaled_from and extra.scaled_because to the pending record
 * when the count was lowered (again for each record of the point). */
void tl_models_scaling_extra(tl_ctx *ctx, const tl_models_scaling *s);

/* The value of the "count" parameter, scaled down to what this machine
 * allows when count threads of the model exist at once (stack: what they
 * get): kernel tasks, memory mappings, memory, and a cap in sanitizer
 * builds.  A scaled count is written to the record's params.count, with
 * extra.scaled_from and extra.scaled_because.  Returns 0 when not even
 * min(count, 1000) fits: the point is then unsupported with the reason. */
uint64_t tl_models_count(tl_ctx *ctx, tl_mstack stack, tl_models_scaling *scaling);

/* Yields (the model's yield) until *flag reaches at least value: how main
 * waits for threads outside the measured region, the same in every model
 * (on one CPU or one virtual processor it lets the awaited thread run). */
void tl_models_await(_Atomic uint64_t *flag, uint64_t value);

/* Initialises a mutex and one or two conditions (c2 may be NULL): 0, or
 * -1 after tl_fail with nothing left initialised. */
int tl_models_sync_init(tl_ctx *ctx, tl_mmutex *m, tl_mcond *c1, tl_mcond *c2);
void tl_models_sync_destroy(tl_mmutex *m, tl_mcond *c1, tl_mcond *c2);

/* Joins h[0..n): every thread is joined, the first error is returned. */
int tl_models_join_all(const tl_mthread *h, uint64_t n);

/* tl_model_shared_alloc, or NULL after tl_fail. */
void *tl_models_shared(tl_ctx *ctx, size_t bytes);

/* The threads of a count benchmark: COUNT (scaled), main's handles and the
 * block the threads share. */
typedef struct {
    uint64_t n;
    tl_mthread *h;
    void *shared;
    size_t shared_bytes;
    tl_models_scaling scaling;
} tl_models_batch;

/* Returns 1 when the batch is ready, 0 when the point is unsupported (the
 * reason is set), -1 after tl_fail. */
int tl_models_batch_open(tl_ctx *ctx, tl_mstack stack, size_t shared_bytes, tl_models_batch *b);
void tl_models_batch_close(tl_models_batch *b);

#endif
