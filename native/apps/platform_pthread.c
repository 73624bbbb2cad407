/* platform_pthread.c - the workers as POSIX threads: main creates T threads
 * (affinity set in their attributes when pinned, so a worker never runs
 * elsewhere, even briefly) and joins them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threadlab/apps.h"

const char tl_app_platform_name[] = "pthread";

const char *tl_app_platform_runtime(void)
{
    return "glibc NPTL";
}

typedef struct {
    tl_app_job *job;
    unsigned t;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *arg = p;
    tl_app_worker(arg->job, arg->t, 0);
    return NULL;
}

int tl_app_platform_run(tl_app_job *job, char *err, size_t errlen)
{
    pthread_t *threads = calloc(job->workers, sizeof *threads);
    worker_arg *args = calloc(job->workers, sizeof *args);
    if (!threads || !args) {
        free(threads);
        free(args);
        snprintf(err, errlen, "out of memory for %u threads", job->workers);
        return -1;
    }
    unsigned started = 0;
    int rc = 0;
    for (unsigned t = 0; t < job->workers; t++) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        if (job->cpus) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(job->cpus[t], &set);
            rc = pthread_attr_setaffinity_np(&attr, sizeof set, &set);
        }
        args[t] = (worker_arg){job, t};
        if (rc == 0)
            rc = pthread_create(&threads[t], &attr, worker, &args[t]);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            snprintf(err, errlen, "pthread_create of worker %u: %s", t, strerror(rc));
            break;
        }
        started++;
    }
    for (unsigned t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    free(threads);
    free(args);
    return rc == 0 ? 0 : -1;
}
