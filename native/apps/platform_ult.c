/* platform_ult.c - the workers as threadlab's user-level threads
 * (libthreadlab-ult, threadlab/ult.h): main starts the runtime with one
 * virtual processor per CPU this process may use, left to the kernel's
 * placement (the study's `os` affinity: the runtime, not the program,
 * places the workers), becomes its primordial thread, creates the T
 * workers as ULTs and joins them; the runtime's VPs run them, stealing
 * from each other.  Pinning worker t to CPU t is unsupported: a ULT runs
 * on whichever VP takes it, and the runtime binds VPs, not ULTs. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threadlab/apps.h"
#include "threadlab/ult.h"

const char tl_app_platform_name[] = "ult";

const char *tl_app_platform_runtime(void)
{
    static char text[128];
    snprintf(text, sizeof text, "libthreadlab-ult, %u virtual processors",
             tl_ult_initialized() ? tl_ult_num_vps() : 0);
    return text;
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
    if (job->cpus) {
        snprintf(err, errlen, "the ult platform cannot pin a worker to a CPU: a user-level thread runs on "
                 "whichever virtual processor takes it (libthreadlab-ult binds its VPs, not its threads)");
        return 1;
    }
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.pin = 0;
    int rc = tl_ult_init(&cfg);
    if (rc != 0) {
        snprintf(err, errlen, "tl_ult_init: %s", strerror(rc));
        return -1;
    }
    tl_ult_t *threads = calloc(job->workers, sizeof *threads);
    worker_arg *args = calloc(job->workers, sizeof *args);
    unsigned started = 0;
    if (!threads || !args) {
        snprintf(err, errlen, "out of memory for %u threads", job->workers);
        rc = ENOMEM;
    }
    for (unsigned t = 0; rc == 0 && t < job->workers; t++) {
        args[t] = (worker_arg){job, t};
        rc = tl_ult_create(&threads[t], NULL, worker, &args[t]);
        if (rc != 0)
            snprintf(err, errlen, "tl_ult_create of worker %u: %s", t, strerror(rc));
        else
            started++;
    }
    for (unsigned t = 0; t < started; t++)
        tl_ult_join(threads[t], NULL);
    free(threads);
    free(args);
    tl_ult_finalize();
    return rc == 0 ? 0 : -1;
}
