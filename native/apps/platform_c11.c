/* platform_c11.c - the workers as ISO C11 threads (<threads.h>): main
 * creates T threads with thrd_create and joins them with thrd_join. C11
 * threads have no attributes, so a pinned worker binds itself first thing. */
#include <stdio.h>
#include <stdlib.h>
#include <threads.h>

#include "threadlab/apps.h"

const char tl_app_platform_name[] = "c11";

const char *tl_app_platform_runtime(void)
{
    return "glibc ISO C11 threads";
}

typedef struct {
    tl_app_job *job;
    unsigned t;
} worker_arg;

static int worker(void *p)
{
    worker_arg *arg = p;
    tl_app_worker(arg->job, arg->t, 1);
    return 0;
}

int tl_app_platform_run(tl_app_job *job, char *err, size_t errlen)
{
    thrd_t *threads = calloc(job->workers, sizeof *threads);
    worker_arg *args = calloc(job->workers, sizeof *args);
    if (!threads || !args) {
        free(threads);
        free(args);
        snprintf(err, errlen, "out of memory for %u threads", job->workers);
        return -1;
    }
    unsigned started = 0;
    int rc = thrd_success;
    for (unsigned t = 0; t < job->workers; t++) {
        args[t] = (worker_arg){job, t};
        rc = thrd_create(&threads[t], worker, &args[t]);
        if (rc != thrd_success) {
            snprintf(err, errlen, "thrd_create of worker %u failed (%s)", t,
                     rc == thrd_nomem ? "thrd_nomem" : "thrd_error");
            break;
        }
        started++;
    }
    for (unsigned t = 0; t < started; t++)
        thrd_join(threads[t], NULL);
    free(threads);
    free(args);
    return rc == thrd_success ? 0 : -1;
}
