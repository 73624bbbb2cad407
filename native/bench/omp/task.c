/* task.c - omp.task: the overhead of creating and running explicit tasks
 * (EPCC taskbench's method).  One iteration of a timing gives every thread
 * one task's worth of the delay; the reference is one thread running the
 * delay that many times:
 *
 *   parallel_task  every thread creates one task per iteration (the
 *                  region's end waits for them all)
 *   master_task    the master creates n tasks per iteration, the team runs
 *                  them
 *   taskwait       every thread creates one task and waits for it
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "ompb.h"

typedef enum { T_PARALLEL, T_MASTER, T_WAIT, T_COUNT } task_kind;

static const char *const kind_names[] = {"parallel_task", "master_task", "taskwait", NULL};

/* The thread running a task counts it. */
static inline void task_work(ompb_run *r, long len)
{
    ompb_delay(len);
    r->t[omp_get_thread_num()].work++;
}

static double time_parallel_task(ompb_run *r, uint64_t iterations)
{
    long len = r->delay_length;
    uint64_t t0 = tl_now();
#pragma omp parallel num_threads(r->n)
    {
        for (uint64_t j = 0; j < iterations; j++) {
#pragma omp task
            task_work(r, len);
        }
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

static double time_master_task(ompb_run *r, uint64_t iterations)
{
    long len = r->delay_length;
    int n = r->n;
    uint64_t t0 = tl_now();
#pragma omp parallel num_threads(n)
    {
#pragma omp master
        for (uint64_t j = 0; j < iterations; j++)
            for (int i = 0; i < n; i++) {
#pragma omp task
                task_work(r, len);
            }
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

static double time_taskwait(ompb_run *r, uint64_t iterations)
{
    long len = r->delay_length;
    uint64_t t0 = tl_now();
#pragma omp parallel num_threads(r->n)
    {
        for (uint64_t j = 0; j < iterations; j++) {
#pragma omp task
            task_work(r, len);
#pragma omp taskwait
        }
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

static double task_time(void *arg, uint64_t iterations)
{
    ompb_run *r = arg;
    task_kind kind = *(const task_kind *)r->data;
    double t = kind == T_PARALLEL ? time_parallel_task(r, iterations)
             : kind == T_MASTER   ? time_master_task(r, iterations)
                                  : time_taskwait(r, iterations);
    r->expected += iterations * (uint64_t)r->n;
    ompb_verify_team(r);
    return t;
}

static double task_reference(void *arg, uint64_t iterations)
{
    return ompb_delays(arg, iterations);
}

static int task_run(tl_ctx *ctx)
{
    task_kind kind = T_COUNT;
    const char *name = tl_param(ctx, "construct");
    for (int k = 0; k < T_COUNT; k++)
        if (strcmp(name, kind_names[k]) == 0)
            kind = (task_kind)k;
    if (kind == T_COUNT) {
        tl_fail(ctx, "construct=%s: expected parallel_task, master_task or taskwait", name);
        return -1;
    }
    ompb_run r;
    int rc = ompb_open(ctx, &r);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    r.data = &kind;
    tl_measure_spec spec = {
        .metric = "overhead",
        .quantity = "overhead per task of each thread (the delay subtracted)",
        .reference = task_reference,
        /* The end of a region with tasks can cost milliseconds (workers
         * asleep at its barrier): enough tasks per timing that it stays a
         * small part of each. */
        .min_iterations = 1024,
    };
    rc = tl_measure(ctx, task_time, &r, &spec);
    if (rc == 0)
        ompb_checks(&r, "tasks run by the team");
    ompb_close(&r);
    return rc;
}

static const tl_param_def task_params[] = {
    {.name = "construct", .help = "parallel_task (every thread creates tasks), master_task (the master "
                                  "creates them), taskwait (create one, wait for it)",
     .values = kind_names, .quick_values = kind_names},
    OMPB_THREADS_PARAM,
    {0},
};

const tl_bench ompb_task[] = {
    OMPB_BENCH("omp.task",
               "overhead of OpenMP task creation, execution and taskwait (EPCC taskbench)",
               "overhead per task (the delay subtracted)",
               task_params, task_run),
    {0},
};
