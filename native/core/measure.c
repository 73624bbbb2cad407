/* measure.c - calibration, warm-up and the adaptive sampling loop. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void tl_pending_reset(tl_pending *p)
{
    free(p->samples);
    memset(p, 0, sizeof *p);
    p->overhead_ns = NAN;
    p->derived_value = NAN;
    p->actions_per_iteration = 1.0;
}

void tl_pending_add_sample(tl_pending *p, double sample)
{
    if (p->nsamples == p->capsamples) {
        p->capsamples = p->capsamples ? 2 * p->capsamples : 64;
        p->samples = realloc(p->samples, p->capsamples * sizeof *p->samples);
        if (!p->samples)
            tl_die("out of memory");
    }
    p->samples[p->nsamples++] = sample;
}

/* One timing must be long against the clock: a thousand times its
 * resolution and a hundred times the cost of reading it, and never shorter
 * than the configured minimum. */
static double minimum_timing_ns(const tl_ctx *ctx)
{
    const tl_clock_info *clk = tl_clock_get();
    double need = ctx->opt.min_timing_ns;
    if (need < 1000.0 * clk->resolution_ns)
        need = 1000.0 * clk->resolution_ns;
    if (need < 100.0 * clk->read_overhead_ns)
        need = 100.0 * clk->read_overhead_ns;
    return need;
}

/* Grows the iteration count until a timing lasts the minimum.  A count is
 * accepted only when a second timing confirms it: a single timing inflated
 * by a preemption or a cold first call would otherwise end the calibration
 * at a handful of iterations. */
static uint64_t calibrate(tl_ctx *ctx, tl_timing_fn fn, void *arg, const tl_measure_spec *spec, int *failed)
{
    double need = minimum_timing_ns(ctx);
    uint64_t iterations = spec->min_iterations ? spec->min_iterations : 1;
    for (;;) {
        double t = fn(arg, iterations);
        if (t >= need) {
            double again = fn(arg, iterations);
            if (again < t)
                t = again;
        }
        if (t < 0) {
            *failed = 1;
            return 0;
        }
        if (t >= need)
            return iterations;
        if (spec->max_iterations && iterations >= spec->max_iterations)
            return spec->max_iterations;
        /* Aim 20% past the target, at least doubling, at most x100 per
         * step so one noisy tiny timing cannot overshoot wildly. */
        double factor = t > 0 ? 1.2 * need / t : 100.0;
        if (factor < 2.0)
            factor = 2.0;
        if (factor > 100.0)
            factor = 100.0;
        uint64_t next = (uint64_t)((double)iterations * factor);
        if (spec->max_iterations && next > spec->max_iterations)
            next = spec->max_iterations;
        if (next > (UINT64_C(1) << 40))
            return iterations;
        iterations = next;
    }
}

int tl_measure(tl_ctx *ctx, tl_timing_fn fn, void *arg, const tl_measure_spec *spec)
{
    static const tl_measure_spec defaults = {0};
    if (!spec)
        spec = &defaults;
    tl_pending *p = &ctx->priv->pending;
    double per = spec->actions_per_iteration > 0 ? spec->actions_per_iteration : 1.0;
    snprintf(p->metric, sizeof p->metric, "%s", spec->metric ? spec->metric : "time");
    if (spec->quantity)
        snprintf(p->quantity, sizeof p->quantity, "%s", spec->quantity);
    p->actions_per_iteration = per;

    int failed = 0;
    uint64_t iterations = spec->fixed_iterations;
    if (!iterations)
        iterations = calibrate(ctx, fn, arg, spec, &failed);
    if (failed)
        return -1;
    p->iterations = iterations;

    if (spec->reference) {
        enum { REFERENCE_TIMINGS = 7 };
        double ref[REFERENCE_TIMINGS];
        for (int i = 0; i < REFERENCE_TIMINGS; i++)
            ref[i] = spec->reference(arg, iterations);
        p->overhead_ns = tl_median(ref, REFERENCE_TIMINGS) / ((double)iterations * per);
    }
    double overhead = isnan(p->overhead_ns) ? 0.0 : p->overhead_ns;

    for (unsigned w = 0; !spec->skip_warmup && w < ctx->opt.warmup; w++) {
        if (fn(arg, iterations) < 0)
            return -1;
        p->warmup_done++;
    }

    uint64_t start = tl_now_raw();
    int rse = ctx->opt.rule == TL_RULE_RSE;
    for (;;) {
        double t = fn(arg, iterations);
        if (t < 0)
            return -1;
        tl_pending_add_sample(p, t / ((double)iterations * per) - overhead);
        double elapsed = (double)(tl_now_raw() - start) * 1e-9;
        p->elapsed_s = elapsed;
        if (p->nsamples < ctx->opt.min_timings)
            continue;
        tl_summary s = tl_summarize(p->samples, p->nsamples);
        if (tl_summary_spread(&s, rse) <= ctx->opt.target) {
            p->stop_reason = "target";
            break;
        }
        if (p->nsamples >= ctx->opt.max_timings) {
            p->stop_reason = "max-timings";
            break;
        }
        if (elapsed >= ctx->opt.max_point_s) {
            p->stop_reason = "time-budget";
            break;
        }
    }
    if (p->status == TL_STATUS_NONE)
        p->status = TL_STATUS_OK;
    return 0;
}

void tl_add_sample(tl_ctx *ctx, double value)
{
    tl_pending *p = &ctx->priv->pending;
    tl_pending_add_sample(p, value);
    p->iterations = 1;
    p->actions_per_iteration = 1.0;
    p->stop_reason = "fixed";
    if (p->status == TL_STATUS_NONE)
        p->status = TL_STATUS_OK;
}

void tl_set_metric(tl_ctx *ctx, const char *metric, const char *quantity)
{
    tl_pending *p = &ctx->priv->pending;
    snprintf(p->metric, sizeof p->metric, "%s", metric);
    if (quantity)
        snprintf(p->quantity, sizeof p->quantity, "%s", quantity);
}

void tl_set_unit(tl_ctx *ctx, const char *unit)
{
    tl_pending *p = &ctx->priv->pending;
    snprintf(p->unit, sizeof p->unit, "%s", unit);
}

void tl_derived(tl_ctx *ctx, const char *metric, const char *quantity, double value, const char *formula)
{
    tl_pending *p = &ctx->priv->pending;
    tl_set_metric(ctx, metric, quantity);
    snprintf(p->formula, sizeof p->formula, "%s", formula);
    p->derived_value = value;
    p->stop_reason = "derived";
    if (p->status == TL_STATUS_NONE)
        p->status = TL_STATUS_OK;
}

double tl_pending_mean(const tl_ctx *ctx)
{
    const tl_pending *p = &ctx->priv->pending;
    return tl_summarize(p->samples, p->nsamples).mean;
}

double tl_pending_median(const tl_ctx *ctx)
{
    const tl_pending *p = &ctx->priv->pending;
    return tl_median(p->samples, p->nsamples);
}

void tl_check(tl_ctx *ctx, const char *name, int ok, double value, const char *fmt, ...)
{
    tl_pending *p = &ctx->priv->pending;
    if (p->nchecks == TL_MAX_CHECKS)
        tl_die("benchmark %s adds more than %d checks to one record", ctx->bench->name, TL_MAX_CHECKS);
    tl_check_entry *c = &p->checks[p->nchecks++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->ok = ok != 0;
    c->value = value;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
}

static tl_extra_entry *new_extra(tl_ctx *ctx, const char *key)
{
    tl_pending *p = &ctx->priv->pending;
    if (p->nextras == TL_MAX_EXTRAS)
        tl_die("benchmark %s adds more than %d extra values to one record", ctx->bench->name, TL_MAX_EXTRAS);
    tl_extra_entry *e = &p->extras[p->nextras++];
    snprintf(e->key, sizeof e->key, "%s", key);
    return e;
}

void tl_extra_num(tl_ctx *ctx, const char *key, double value)
{
    tl_extra_entry *e = new_extra(ctx, key);
    e->number = value;
}

void tl_extra_str(tl_ctx *ctx, const char *key, const char *value)
{
    tl_extra_entry *e = new_extra(ctx, key);
    e->is_string = 1;
    snprintf(e->string, sizeof e->string, "%s", value ? value : "");
}

static void set_status(tl_ctx *ctx, tl_status status, const char *fmt, va_list ap)
{
    tl_pending *p = &ctx->priv->pending;
    p->status = status;
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
}

void tl_unsupported(tl_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_status(ctx, TL_STATUS_UNSUPPORTED, fmt, ap);
    va_end(ap);
}

void tl_fail(tl_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_status(ctx, TL_STATUS_FAILED, fmt, ap);
    va_end(ap);
}
