/* capacity.c - threads.capacity: how much resident memory a suspended
 * thread of the model costs, and how many can exist at once.
 *
 * One sample: return the model's cached memory (so the baseline is clean),
 * read the resident memory, create COUNT threads with the model's small
 * stack that each block on a condition variable, wait until all are
 * blocked, read the resident memory again, release and join them.  The
 * sample is the difference divided by COUNT: memory_per_thread.  The
 * kernel's part (kernel stacks, page tables), read around the same moments,
 * goes with it as extra.kernel_memory_per_thread.  When the
 * machine's limits forced a smaller count, a second record, max_threads,
 * says how many threads fit (docs/thread-models.md); a sanitizer build's
 * cap is no such limit. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"
#include "threadlab/resident.h"
#include "threadlab/summary.h"

typedef struct {
    tl_mmutex lock;
    tl_mcond arrived_cv; /* the last thread to block -> main */
    tl_mcond release_cv; /* main -> every thread */
    uint64_t n;          /* under lock */
    uint64_t arrived;    /* under lock */
    int release;         /* under lock */
    int error;           /* under lock: a thread's failed wait */
} capacity_shared;

/* Frugal on purpose: it runs on the model's small stack. */
static void *suspended(void *arg)
{
    capacity_shared *s = arg;
    tl_model_mutex_lock(&s->lock);
    if (++s->arrived == s->n)
        tl_model_cond_signal(&s->arrived_cv);
    while (!s->release) {
        int rc = tl_model_cond_wait(&s->release_cv, &s->lock);
        if (rc != 0) {
            s->error = rc;
            break;
        }
    }
    tl_model_mutex_unlock(&s->lock);
    return NULL;
}

typedef struct {
    tl_ctx *ctx;
    capacity_shared *s;
    tl_mthread *h;
    uint64_t n;
    uint64_t least_arrived; /* fewest threads blocked at once over the timings */
    double *kernel;         /* per timing (at most max_timings): kernel memory the COUNT threads added */
    unsigned nkernel;
    int kernel_unknown;     /* /proc/meminfo could not tell, once */
} capacity_state;

/* Releases and joins the threads h[0..made). */
static int release_all(capacity_state *c, uint64_t made)
{
    capacity_shared *s = c->s;
    tl_model_mutex_lock(&s->lock);
    s->release = 1;
    tl_model_cond_broadcast(&s->release_cv);
    tl_model_mutex_unlock(&s->lock);
    int first = tl_models_join_all(c->h, made);
    return first ? first : s->error;
}

/* Returns the resident bytes COUNT suspended threads added (tl_measure
 * divides by actions_per_iteration = COUNT). */
static double sample_capacity(void *arg, uint64_t iterations)
{
    (void)iterations; /* fixed at 1 */
    capacity_state *c = arg;
    capacity_shared *s = c->s;
    int rc = tl_model_release_cached();
    if (rc != 0) {
        tl_fail(c->ctx, "returning the %s model's cached memory: %s", tl_model_name, strerror(rc));
        return -1;
    }
    s->n = c->n;
    s->arrived = 0;
    s->release = 0;
    s->error = 0;
    double before = tl_model_resident_bytes();
    long kernel_before = tl_kernel_thread_memory_bytes();
    uint64_t made = 0;
    for (; made < c->n; made++)
        if ((rc = tl_model_create(&c->h[made], suspended, s, TL_MSTACK_SMALL)) != 0)
            break;
    if (rc == 0) {
        tl_model_mutex_lock(&s->lock);
        while (s->arrived < c->n && s->error == 0)
            tl_model_cond_wait(&s->arrived_cv, &s->lock);
        if (s->arrived < c->least_arrived)
            c->least_arrived = s->arrived;
        tl_model_mutex_unlock(&s->lock);
    }
    double during = tl_model_resident_bytes();
    long kernel_during = tl_kernel_thread_memory_bytes();
    int join_rc = release_all(c, made);
    if (rc != 0 || join_rc != 0) {
        tl_fail(c->ctx, "%s %s thread %llu of %llu: %s", rc ? "creating" : "joining", tl_model_name,
                (unsigned long long)made + (rc != 0), (unsigned long long)c->n, strerror(rc ? rc : join_rc));
        return -1;
    }
    if (before < 0 || during < 0) {
        tl_fail(c->ctx, "the resident memory could not be read (/proc)");
        return -1;
    }
    if (kernel_before < 0 || kernel_during < 0)
        c->kernel_unknown = 1;
    else if (c->nkernel < c->ctx->opt.max_timings)
        c->kernel[c->nkernel++] = (double)(kernel_during - kernel_before);
    return during - before;
}

/* When the machine's limits lowered the count: a second record says how
 * many threads fit. */
static void emit_max_threads(tl_ctx *ctx, const tl_models_batch *threads)
{
    tl_emit(ctx);
    tl_model_describe(ctx);
    tl_models_scaling_extra(ctx, &threads->scaling);
    tl_set_unit(ctx, "threads");
    tl_derived(ctx, "max_threads", "threads of the model that can exist at once here", (double)threads->n,
               "the count scaled to the machine's limits (extra.scaled_because)");
}

static int body_capacity(tl_ctx *ctx)
{
    tl_models_batch threads;
    int rc = tl_models_batch_open(ctx, TL_MSTACK_SMALL, sizeof(capacity_shared), &threads);
    capacity_state c = {.ctx = ctx, .n = threads.n, .h = threads.h, .s = threads.shared, .least_arrived = threads.n};
    /* Fixed iterations, no warm-up: one call of sample_capacity per timing. */
    if (rc > 0 && !(c.kernel = calloc(ctx->opt.max_timings, sizeof *c.kernel))) {
        tl_fail(ctx, "allocating %u kernel-memory readings: %s", ctx->opt.max_timings, strerror(ENOMEM));
        rc = -1;
    }
    if (rc > 0 && (rc = tl_models_sync_init(ctx, &c.s->lock, &c.s->arrived_cv, &c.s->release_cv)) == 0) {
        tl_extra_num(ctx, "thread_stack_bytes", (double)tl_model_stack_bytes(TL_MSTACK_SMALL));
        /* Every sample creates COUNT threads: no warm-up round. */
        tl_measure_spec spec = {
            .fixed_iterations = 1, .actions_per_iteration = (double)c.n, .metric = "memory_per_thread", .skip_warmup = 1};
        rc = tl_measure(ctx, sample_capacity, &c, &spec);
        tl_models_sync_destroy(&c.s->lock, &c.s->arrived_cv, &c.s->release_cv);
        /* Machine-wide, so the median: one timing that overlapped another
         * process's start or exit does not move it. */
        if (rc == 0 && !c.kernel_unknown && c.nkernel > 0)
            tl_extra_num(ctx, "kernel_memory_per_thread", tl_median(c.kernel, c.nkernel) / (double)c.n);
        if (rc == 0) {
            tl_check(ctx, "all_suspended", c.least_arrived == c.n, (double)c.least_arrived,
                     "%llu of %llu threads were blocked at once when the memory was read (in the worst timing)",
                     (unsigned long long)c.least_arrived, (unsigned long long)c.n);
            if (threads.scaling.machine_limit)
                emit_max_threads(ctx, &threads);
        }
    }
    tl_models_batch_close(&threads);
    free(c.kernel);
    return rc;
}

static int run_capacity(tl_ctx *ctx) { return tl_models_run(ctx, body_capacity); }

static const tl_param_def capacity_params[] = {
    {.name = "count", .help = "threads blocked at once (scaled down to the machine's limits)",
     .values = tl_model_capacity_counts, .quick_values = tl_model_capacity_quick, .check = tl_models_check_count},
    {0},
};

const tl_bench tl_models_capacity[] = {
    {.name = "threads.capacity",
     .model = tl_model_name,
     .summary = "memory per suspended thread: resident memory before and while COUNT threads block on a "
                "condition variable",
     .quantity = "bytes of resident memory per suspended thread",
     .unit = "bytes",
     .threads = 1,
     .placements = TL_PLACE_BIT(TL_PLACE_UNBOUND),
     .params = capacity_params,
     .run = run_capacity,
     .suite = TL_MODELS_SUITE},
    {0},
};
