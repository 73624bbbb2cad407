/* record.c - one data point as one JSON line (docs/record-schema.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TL_RECORD_SCHEMA "threadlab.record/1"

static const char *status_name(tl_status s)
{
    switch (s) {
    case TL_STATUS_OK: return "ok";
    case TL_STATUS_UNSUPPORTED: return "unsupported";
    case TL_STATUS_FAILED: return "failed";
    default: return "failed";
    }
}

static void write_summary(tl_json *j, const tl_summary *s)
{
    tl_json_begin_object(j);
    tl_json_key(j, "n"); tl_json_int(j, (long long)s->n);
    tl_json_key(j, "mean"); tl_json_number(j, s->mean);
    tl_json_key(j, "sd"); tl_json_number(j, s->sd);
    tl_json_key(j, "rsd"); tl_json_number(j, s->rsd);
    tl_json_key(j, "se"); tl_json_number(j, s->se);
    tl_json_key(j, "rse"); tl_json_number(j, s->rse);
    tl_json_key(j, "median"); tl_json_number(j, s->median);
    tl_json_key(j, "min"); tl_json_number(j, s->min);
    tl_json_key(j, "max"); tl_json_number(j, s->max);
    tl_json_end_object(j);
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

    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "schema"); tl_json_string(&j, TL_RECORD_SCHEMA);
    tl_json_key(&j, "benchmark"); tl_json_string(&j, b->name);
    tl_json_key(&j, "model"); tl_json_string(&j, b->model);
    tl_json_key(&j, "metric"); tl_json_string(&j, p->metric[0] ? p->metric : "time");
    tl_json_key(&j, "params");
    tl_json_begin_object(&j);
    for (const tl_param_def *d = b->params; d && d->name; d++) {
        tl_json_key(&j, d->name);
        tl_json_string(&j, tl_param(ctx, d->name));
    }
    tl_json_end_object(&j);
    tl_json_key(&j, "placement");
    tl_json_string(&j, b->threads ? tl_placement_name(ctx->placement) : "none");
    tl_json_key(&j, "cpus");
    tl_json_begin_array(&j);
    for (unsigned i = 0; b->threads && i < ctx->nslots; i++)
        if (ctx->cpu[i] >= 0)
            tl_json_int(&j, ctx->cpu[i]);
        else
            tl_json_null(&j);
    tl_json_end_array(&j);
    tl_json_key(&j, "unit"); tl_json_string(&j, p->unit[0] ? p->unit : b->unit ? b->unit : "ns");
    tl_json_key(&j, "quantity"); tl_json_string(&j, p->quantity[0] ? p->quantity : b->quantity);
    tl_json_key(&j, "status"); tl_json_string(&j, status_name(p->status));
    tl_json_key(&j, "reason"); tl_json_string(&j, p->reason[0] ? p->reason : NULL);
    tl_json_key(&j, "clock"); tl_json_string(&j, tl_clock_source_name(tl_clock_get()->source));

    int measured = p->status == TL_STATUS_OK && p->nsamples > 0;
    int derived = p->status == TL_STATUS_OK && p->stop_reason && strcmp(p->stop_reason, "derived") == 0;
    tl_json_key(&j, "iterations");
    if (measured) tl_json_int(&j, (long long)p->iterations); else tl_json_null(&j);
    tl_json_key(&j, "actions_per_iteration");
    if (measured) tl_json_number(&j, p->actions_per_iteration); else tl_json_null(&j);
    tl_json_key(&j, "warmup"); tl_json_int(&j, p->warmup_done);
    tl_json_key(&j, "overhead_ns"); tl_json_number(&j, p->overhead_ns);
    tl_json_key(&j, "samples");
    tl_json_begin_array(&j);
    for (size_t i = 0; measured && i < p->nsamples; i++)
        tl_json_number(&j, p->samples[i]);
    tl_json_end_array(&j);
    tl_json_key(&j, "summary");
    if (measured) {
        tl_summary s = tl_summarize(p->samples, p->nsamples);
        write_summary(&j, &s);
    } else if (derived) {
        tl_summary s = tl_summarize(&p->derived_value, 1);
        write_summary(&j, &s);
    } else {
        tl_json_null(&j);
    }
    tl_json_key(&j, "stop");
    if (measured || derived) {
        /* A protocol that timed itself (tl_add_sample) ran no adaptive loop. */
        int fixed = p->stop_reason && strcmp(p->stop_reason, "fixed") == 0;
        tl_json_begin_object(&j);
        tl_json_key(&j, "rule"); tl_json_string(&j, fixed ? "fixed" : ctx->opt.rule == TL_RULE_RSE ? "rse" : "rsd");
        tl_json_key(&j, "target"); tl_json_number(&j, fixed ? NAN : ctx->opt.target);
        tl_json_key(&j, "reason"); tl_json_string(&j, p->stop_reason);
        tl_json_key(&j, "min_timings"); tl_json_int(&j, fixed ? (long long)p->nsamples : ctx->opt.min_timings);
        tl_json_key(&j, "max_timings"); tl_json_int(&j, fixed ? (long long)p->nsamples : ctx->opt.max_timings);
        tl_json_key(&j, "elapsed_s"); tl_json_number(&j, p->elapsed_s);
        tl_json_end_object(&j);
    } else {
        tl_json_null(&j);
    }
    tl_json_key(&j, "derived");
    if (derived) {
        tl_json_begin_object(&j);
        tl_json_key(&j, "formula"); tl_json_string(&j, p->formula);
        tl_json_end_object(&j);
    } else {
        tl_json_null(&j);
    }
    tl_json_key(&j, "checks");
    tl_json_begin_array(&j);
    for (unsigned i = 0; i < p->nchecks; i++) {
        tl_json_begin_object(&j);
        tl_json_key(&j, "name"); tl_json_string(&j, p->checks[i].name);
        tl_json_key(&j, "ok"); tl_json_bool(&j, p->checks[i].ok);
        tl_json_key(&j, "value"); tl_json_number(&j, p->checks[i].value);
        tl_json_key(&j, "detail"); tl_json_string(&j, p->checks[i].detail);
        tl_json_end_object(&j);
    }
    tl_json_end_array(&j);
    tl_json_key(&j, "extra");
    tl_json_begin_object(&j);
    for (unsigned i = 0; i < p->nextras; i++) {
        tl_json_key(&j, p->extras[i].key);
        if (p->extras[i].is_string)
            tl_json_string(&j, p->extras[i].string);
        else
            tl_json_number(&j, p->extras[i].number);
    }
    tl_json_end_object(&j);
    if (priv->mpi_json) {
        tl_json_key(&j, "mpi");
        tl_json_raw(&j, priv->mpi_json);
    }
    tl_json_end_object(&j);

    /* One write of the whole line, flushed, so a reader never sees half a
     * record even if the process dies right after. */
    fprintf(stdout, "%s\n", j.text);
    fflush(stdout);
    tl_json_free(&j);
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
