/* write.c - a record as one JSON line (threadlab/record.h, docs/record-schema.md). */
#include <math.h>
#include <string.h>

#include "threadlab/json.h"
#include "threadlab/record.h"
#include "threadlab/summary.h"

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

static void write_stop(tl_json *j, const tl_record_stop *stop)
{
    tl_json_begin_object(j);
    tl_json_key(j, "rule"); tl_json_string(j, stop->rule);
    tl_json_key(j, "target"); tl_json_number(j, stop->target);
    tl_json_key(j, "reason"); tl_json_string(j, stop->reason);
    tl_json_key(j, "min_timings"); tl_json_int(j, stop->min_timings);
    tl_json_key(j, "max_timings"); tl_json_int(j, stop->max_timings);
    tl_json_key(j, "elapsed_s"); tl_json_number(j, stop->elapsed_s);
    tl_json_end_object(j);
}

static void write_checks(tl_json *j, const tl_record_check *checks, unsigned n)
{
    tl_json_begin_array(j);
    for (unsigned i = 0; i < n; i++) {
        tl_json_begin_object(j);
        tl_json_key(j, "name"); tl_json_string(j, checks[i].name);
        tl_json_key(j, "ok"); tl_json_bool(j, checks[i].ok);
        tl_json_key(j, "value"); tl_json_number(j, checks[i].value);
        tl_json_key(j, "detail"); tl_json_string(j, checks[i].detail ? checks[i].detail : "");
        tl_json_end_object(j);
    }
    tl_json_end_array(j);
}

static void write_extras(tl_json *j, const tl_record_extra *extras, unsigned n)
{
    tl_json_begin_object(j);
    for (unsigned i = 0; i < n; i++) {
        tl_json_key(j, extras[i].key);
        if (extras[i].string)
            tl_json_string(j, extras[i].string);
        else
            tl_json_number(j, extras[i].number);
    }
    tl_json_end_object(j);
}

int tl_record_write(const tl_record *r, FILE *out)
{
    int ok = r->status && strcmp(r->status, "ok") == 0;
    int measured = ok && r->nsamples > 0;
    int derived = ok && !measured && r->formula;
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "schema"); tl_json_string(&j, TL_RECORD_SCHEMA);
    tl_json_key(&j, "benchmark"); tl_json_string(&j, r->benchmark);
    tl_json_key(&j, "model"); tl_json_string(&j, r->model);
    tl_json_key(&j, "metric"); tl_json_string(&j, r->metric ? r->metric : "time");
    tl_json_key(&j, "params");
    tl_json_begin_object(&j);
    for (unsigned i = 0; i < r->nparams; i++) {
        tl_json_key(&j, r->param_names[i]);
        tl_json_string(&j, r->param_values[i]);
    }
    tl_json_end_object(&j);
    tl_json_key(&j, "placement"); tl_json_string(&j, r->placement ? r->placement : "none");
    tl_json_key(&j, "cpus");
    tl_json_begin_array(&j);
    for (unsigned i = 0; i < r->ncpus; i++)
        if (r->cpus[i] >= 0)
            tl_json_int(&j, r->cpus[i]);
        else
            tl_json_null(&j);
    tl_json_end_array(&j);
    tl_json_key(&j, "unit"); tl_json_string(&j, r->unit ? r->unit : "ns");
    tl_json_key(&j, "quantity"); tl_json_string(&j, r->quantity);
    tl_json_key(&j, "status"); tl_json_string(&j, r->status);
    tl_json_key(&j, "reason"); tl_json_string(&j, r->reason && r->reason[0] ? r->reason : NULL);
    tl_json_key(&j, "clock"); tl_json_string(&j, r->clock);
    tl_json_key(&j, "iterations");
    if (measured) tl_json_int(&j, r->iterations); else tl_json_null(&j);
    tl_json_key(&j, "actions_per_iteration");
    if (measured) tl_json_number(&j, r->actions_per_iteration); else tl_json_null(&j);
    tl_json_key(&j, "warmup"); tl_json_int(&j, r->warmup);
    tl_json_key(&j, "overhead_ns"); tl_json_number(&j, r->overhead_ns);
    tl_json_key(&j, "samples");
    tl_json_begin_array(&j);
    for (size_t i = 0; measured && i < r->nsamples; i++)
        tl_json_number(&j, r->samples[i]);
    tl_json_end_array(&j);
    tl_json_key(&j, "summary");
    if (measured || derived) {
        tl_summary s = measured ? tl_summarize(r->samples, r->nsamples) : tl_summarize(&r->derived_value, 1);
        write_summary(&j, &s);
    } else {
        tl_json_null(&j);
    }
    tl_json_key(&j, "stop");
    if ((measured || derived) && r->stop)
        write_stop(&j, r->stop);
    else
        tl_json_null(&j);
    tl_json_key(&j, "derived");
    if (derived) {
        tl_json_begin_object(&j);
        tl_json_key(&j, "formula"); tl_json_string(&j, r->formula);
        tl_json_end_object(&j);
    } else {
        tl_json_null(&j);
    }
    tl_json_key(&j, "checks"); write_checks(&j, r->checks, r->nchecks);
    tl_json_key(&j, "extra"); write_extras(&j, r->extras, r->nextras);
    if (r->mpi_json) {
        tl_json_key(&j, "mpi");
        tl_json_raw(&j, r->mpi_json);
    }
    tl_json_end_object(&j);
    int rc = tl_json_print_line(&j, out);
    tl_json_free(&j);
    return rc;
}
