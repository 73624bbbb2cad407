/*
 * threadlab-omp-run - runs an unmodified OpenMP program under threadlab-rm
 * (docs/commands/omp.md, docs/omp.md "Environment").
 *
 *   threadlab-omp-run [--runtime shim|ult] [--pin] [--quiet] [--] PROGRAM [ARGS ...]
 *
 * It sets the environment of the runtime (env.c: the libgomp shim, or
 * libthreadlab-gomp in place of libgomp) and execs PROGRAM, so a launch
 * costs one exec more than the program itself; `threadlab omp run` execs
 * it.  The manager is the one $THREADLAB_RM_DIR and $THREADLAB_RM_ARENA
 * name (both, for a directory other than the standard one), else the
 * user's standard manager.
 *
 * Exit status: PROGRAM's own; 2 bad usage (PROGRAM not found, an unknown
 * option); 1 the runtime's library is missing or PROGRAM cannot be executed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env.h"

#define USAGE "usage: threadlab-omp-run [--runtime shim|ult] [--pin] [--quiet] [--] PROGRAM [ARGS ...]"
#define RUNTIMES "shim (libgomp with threadlab's shim), ult (libthreadlab-gomp: OpenMP on user-level threads)"

static int usage_error(const char *fmt, const char *what)
{
    fprintf(stderr, "threadlab-omp-run: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n" USAGE "\n");
    return 2;
}

int main(int argc, char **argv)
{
    int pin = 0, quiet = 0, ult = 0, i = 1;
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
        } else if (!strcmp(a, "--runtime") || !strncmp(a, "--runtime=", 10)) {
            const char *value = a[9] == '=' ? a + 10 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value)
                return usage_error("%s--runtime needs a value (accepted: " RUNTIMES ")", "");
            if (!strcmp(value, "ult"))
                ult = 1;
            else if (!strcmp(value, "shim"))
                ult = 0;
            else
                return usage_error("--runtime '%s': unknown runtime (accepted: " RUNTIMES ")", value);
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf(USAGE "\nRuns PROGRAM (gcc/g++/gfortran -fopenmp) so that it follows threadlab-rm: with "
                   "libthreadlab-omp preloaded over libgomp (shim, the default), or on libthreadlab-gomp in "
                   "place of libgomp (ult).\n  --runtime R  shim or ult\n  --pin    pin team threads to the "
                   "allocated CPUs (shim)\n  --quiet  no notices from the runtime\nexit status: PROGRAM's "
                   "own; 2 bad usage; 1 the runtime's library is missing or PROGRAM cannot run.  See "
                   "docs/commands/omp.md.\n");
            return 0;
        } else {
            return usage_error("unknown option '%s' (accepted: --runtime, --pin, --quiet, --help)", a);
        }
    }
    if (ult && pin)
        return usage_error("%s--pin applies to --runtime shim only (libthreadlab-gomp binds its virtual "
                           "processors with OMP_PROC_BIND)", "");
    if (i >= argc)
        return usage_error("%sa program is required", "");
    char library[PATH_MAX];
    const char *name = ult ? TL_OMP_ULT_LIBRARY : TL_OMP_SHIM_LIBRARY;
    const char *variable = ult ? "THREADLAB_GOMP_LIB" : "THREADLAB_OMP_LIB";
    if (tl_omp_find_library(name, variable, library, sizeof library) != 0) {
        if (getenv(variable) && *getenv(variable))
            fprintf(stderr, "threadlab-omp-run: %s not found ($%s=%s is not a readable file)\n", name, variable,
                    getenv(variable));
        else
            fprintf(stderr, "threadlab-omp-run: %s not found (looked in lib/ beside this program's directory; "
                    "build it with `make build`, or name it with $%s)\n", name, variable);
        return 1;
    }
    if ((ult ? tl_omp_setenv_ult(library, quiet) : tl_omp_setenv(library, pin, quiet)) != 0) {
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
