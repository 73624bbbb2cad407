/* record.c - the pending record of a data point, written by
 * libthreadlab-record (threadlab/record.h) when the benchmark emits it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "threadlab/record.h"

static const char *status_name(tl_status s)
{
    switch (s) {
    case TL_STATUS_OK: return "ok";
    case TL_STATUS_UNSUPPORTED: return "unsupported";
    case TL_STATUS_FAILED: return "failed";
    default: return "failed";
    }
}

void tl_emit(tl_ctx *ctx)
{
    struct tl_ctx_private *priv = ctx->priv;
    tl_pending *p = &priv->pending;
    const tl_bench *b = ctx->bench;
    if (p->status == TL_STATUS_NONE) {
        p->status = TL_STATUS_FAILED;
        snprintf(p->reason, sizeof p->reason, "benchmark ended without measuring or giving a reason");
    }
    /* A measured point whose threads did not run where placed is flagged,
     * not dropped: the reader decides what it is worth. */
    if (p->status == TL_STATUS_OK && ctx->placement != TL_PLACE_UNBOUND && b->threads > 0 &&
        p->nchecks < TL_MAX_CHECKS) {
        tl_check(ctx, "placement", !priv->placement_failed, NAN, "%s",
                 priv->placement_failed ? priv->placement_detail : "every bound thread ran on its CPU");
    }

    const char *names[TL_MAX_PARAMS], *values[TL_MAX_PARAMS];
    unsigned nparams = 0;
    for (const tl_param_def *d = b->params; d && d->name && nparams < TL_MAX_PARAMS; d++, nparams++) {
        names[nparams] = d->name;
        values[nparams] = tl_param(ctx, d->name);
    }
    tl_record_check checks[TL_MAX_CHECKS];
    for (unsigned i = 0; i < p->nchecks; i++)
        checks[i] = (tl_record_check){p->checks[i].name, p->checks[i].ok, p->checks[i].value, p->checks[i].detail};
    tl_record_extra extras[TL_MAX_EXTRAS];
    for (unsigned i = 0; i < p->nextras; i++)
        extras[i] = (tl_record_extra){p->extras[i].key, p->extras[i].is_string ? p->extras[i].string : NULL,
                                      p->extras[i].number};
    int derived = p->status == TL_STATUS_OK && p->stop_reason && strcmp(p->stop_reason, "derived") == 0;
    /* A protocol that timed itself (tl_add_sample) ran no adaptive loop. */
    int fixed = p->stop_reason && strcmp(p->stop_reason, "fixed") == 0;
    tl_record_stop stop = {fixed ? "fixed" : ctx->opt.rule == TL_RULE_RSE ? "rse" : "rsd",
                           fixed ? NAN : ctx->opt.target, p->stop_reason,
                           fixed ? (long long)p->nsamples : ctx->opt.min_timings,
                           fixed ? (long long)p->nsamples : ctx->opt.max_timings, p->elapsed_s};
    tl_record r = {
        .benchmark = b->name,
        .model = b->model,
        .metric = p->metric[0] ? p->metric : NULL,
        .param_names = names,
        .param_values = values,
        .nparams = nparams,
        .placement = b->threads ? tl_placement_name(ctx->placement) : "none",
        .cpus = ctx->cpu,
        .ncpus = b->threads ? ctx->nslots : 0,
        .unit = p->unit[0] ? p->unit : b->unit,
        .quantity = p->quantity[0] ? p->quantity : b->quantity,
        .status = status_name(p->status),
        .reason = p->reason,
        .clock = tl_clock_source_name(tl_clock_get()->source),
        .samples = p->samples,
        .nsamples = p->status == TL_STATUS_OK ? p->nsamples : 0,
        .iterations = (long long)p->iterations,
        .actions_per_iteration = p->actions_per_iteration,
        .warmup = p->warmup_done,
        .overhead_ns = p->overhead_ns,
        .formula = derived ? p->formula : NULL,
        .derived_value = p->derived_value,
        .stop = &stop,
        .checks = checks,
        .nchecks = p->nchecks,
        .extras = extras,
        .nextras = p->nextras,
        .mpi_json = priv->mpi_json,
    };
    tl_record_write(&r, stdout);
    priv->emitted++;
    if (p->status == TL_STATUS_FAILED)
        priv->emitted_failed++;
    tl_pending_reset(p);
    priv->placement_failed = 0;
}

void tl_set_mpi(tl_ctx *ctx, const tl_mpi_info *info)
{
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "rank"); tl_json_int(&j, info->rank);
    tl_json_key(&j, "host"); tl_json_string(&j, info->host ? info->host : "");
    tl_json_key(&j, "ranks"); tl_json_int(&j, info->ranks);
    tl_json_key(&j, "threads_per_rank"); tl_json_int(&j, info->threads_per_rank);
    tl_json_key(&j, "world"); tl_json_int(&j, info->world);
    tl_json_key(&j, "transport"); tl_json_string(&j, info->transport ? info->transport : "default");
    tl_json_key(&j, "thread_level"); tl_json_string(&j, info->thread_level ? info->thread_level : "single");
    tl_json_key(&j, "library"); tl_json_string(&j, info->library ? info->library : "");
    tl_json_key(&j, "hosts");
    tl_json_begin_array(&j);
    for (unsigned i = 0; i < info->nhosts; i++)
        tl_json_string(&j, info->hosts[i]);
    tl_json_end_array(&j);
    tl_json_end_object(&j);
    free(ctx->priv->mpi_json);
    ctx->priv->mpi_json = j.text; /* the buffer is kept, not freed */
}
