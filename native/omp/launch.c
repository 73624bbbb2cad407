/*
 * threadlab-omp-run - runs an unmodified OpenMP program under threadlab-rm
 * (docs/commands/omp.md, docs/omp.md "Environment").
 *
 *   threadlab-omp-run [--pin] [--quiet] [--] PROGRAM [ARGS ...]
 *
 * It sets the shim's environment (env.c) and execs PROGRAM, so a launch
 * costs one exec more than the program itself; `threadlab omp run` execs
 * it.  The manager is the one $THREADLAB_RM_DIR and $THREADLAB_RM_ARENA
 * name (both, for a directory other than the standard one), else the
 * user's standard manager.
 *
 * Exit status: PROGRAM's own; 2 bad usage (PROGRAM not found, an unknown
 * option); 1 the shim is missing or PROGRAM cannot be executed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env.h"

#define USAGE "usage: threadlab-omp-run [--pin] [--quiet] [--] PROGRAM [ARGS ...]"

static int usage_error(const char *fmt, const char *what)
{
    fprintf(stderr, "threadlab-omp-run: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n" USAGE "\n");
    return 2;
}

int main(int argc, char **argv)
{
    int pin = 0, quiet = 0, i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (!strcmp(a, "--pin")) {
            pin = 1;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf(USAGE "\nRuns PROGRAM (gcc/g++/gfortran -fopenmp) with libthreadlab-omp preloaded, so that it "
                   "follows threadlab-rm.\n  --pin    pin team threads to the allocated CPUs\n  --quiet  no "
                   "notices from the shim\nexit status: PROGRAM's own; 2 bad usage; 1 the shim is missing or "
                   "PROGRAM cannot run.  See docs/commands/omp.md.\n");
            return 0;
        } else {
            return usage_error("unknown option '%s' (accepted: --pin, --quiet, --help)", a);
        }
    }
    if (i >= argc)
        return usage_error("%sa program is required", "");
    char shim[PATH_MAX];
    if (tl_omp_find_shim(shim, sizeof shim) != 0) {
        fprintf(stderr, "threadlab-omp-run: libthreadlab-omp.so not found (%s; lib/ beside this program's "
                "directory, or $THREADLAB_OMP_LIB)\n", getenv("THREADLAB_OMP_LIB") ? "$THREADLAB_OMP_LIB" : "build it with `make`");
        return 1;
    }
    if (tl_omp_setenv(shim, pin, quiet) != 0) {
        fprintf(stderr, "threadlab-omp-run: LD_PRELOAD is too long\n");
        return 1;
    }
    const char *program = argv[i];
    execvp(program, argv + i);
    int e = errno;
    if (e == ENOENT)
        return usage_error(strchr(program, '/') ? "PROGRAM %s: not found" : "PROGRAM %s: not found on $PATH",
                           program);
    if (e == EACCES)
        return usage_error("PROGRAM %s: not executable", program);
    fprintf(stderr, "threadlab-omp-run: cannot run %s: %s\n", program, strerror(e));
    return 1;
}
