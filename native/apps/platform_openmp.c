/* platform_openmp.c - the workers as an OpenMP parallel region of T
 * threads (the initial thread is worker 0, as OpenMP has it). Built twice:
 * linked with GCC's libgomp (threadlab-app-gomp), and with LLVM's libomp,
 * which implements libgomp's GOMP_* entry points (threadlab-app-llvmomp).
 * Which library really runs is found at run time, not assumed (the gomp
 * program runs on libthreadlab-gomp as the omp-ult platform).
 * Dynamic adjustment is off, so the region has exactly T threads (checked);
 * pinned workers bind themselves at the start of the region. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "threadlab/apps.h"

#ifndef TL_APP_OPENMP_PLATFORM
#error "define TL_APP_OPENMP_PLATFORM (gomp or llvmomp)"
#endif

const char tl_app_platform_name[] = TL_APP_OPENMP_PLATFORM;

const char *tl_app_platform_runtime(void)
{
    static char text[512];
    /* libomp's own entry points are __kmpc_*, libthreadlab-gomp's
     * threadlab_gomp_*; libgomp has neither (omp-ult is the gomp program
     * with libthreadlab-gomp preloaded: it must not say libgomp) */
    const char *library = dlsym(RTLD_DEFAULT, "threadlab_gomp_tls_mode")    ? "threadlab libthreadlab-gomp"
                          : dlsym(RTLD_DEFAULT, "__kmpc_global_thread_num") ? "LLVM libomp"
                                                                            : "GNU libgomp";
    Dl_info info;
    const char *path = "?";
    if (dladdr((void *)omp_get_num_threads, &info) && info.dli_fname)
        path = info.dli_fname;
    snprintf(text, sizeof text, "%s (%s), OpenMP %d", library, path, _OPENMP);
    return text;
}

int tl_app_platform_run(tl_app_job *job, char *err, size_t errlen)
{
    int team = 0;
    omp_set_dynamic(0);
#pragma omp parallel num_threads((int)job->workers)
    {
        int t = omp_get_thread_num();
        if (t == 0)
            team = omp_get_num_threads(); /* written by one thread, read after the region */
        if ((unsigned)t < job->workers)
            tl_app_worker(job, (unsigned)t, 1);
    }
    if ((unsigned)team != job->workers) {
        snprintf(err, errlen, "the parallel region got %d threads, %u were asked", team, job->workers);
        return -1;
    }
    return 0;
}
