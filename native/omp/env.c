/*
 * env.c - the environment of a program run under threadlab-rm's shim
 * (env.h; docs/omp.md "Environment").
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env.h"
#include "threadlab/bench.h"

/* The canonical path of a file (no "bin/../lib", no symbolic links), so
 * that LD_PRELOAD names the shim one way. */
static int canonical(char *path, size_t len)
{
    char real[PATH_MAX];
    if (!realpath(path, real) || strlen(real) >= len)
        return -1;
    memcpy(path, real, strlen(real) + 1);
    return 0;
}

int tl_omp_find_shim(char *out, size_t len)
{
    const char *env = getenv("THREADLAB_OMP_LIB");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return access(out, R_OK) == 0 ? canonical(out, len) : -1;
    }
    if (tl_beside_program("../lib/libthreadlab-omp.so", out, len) != 0)
        return -1;
    return canonical(out, len);
}

/* An LD_PRELOAD entry (n bytes at p) that names the shim. */
static int is_shim(const char *p, size_t n, const char *shim)
{
    if (n == strlen(shim) && !strncmp(p, shim, n))
        return 1;
    char entry[PATH_MAX];
    if (n >= sizeof entry)
        return 0;
    memcpy(entry, p, n);
    entry[n] = '\0';
    return canonical(entry, sizeof entry) == 0 && !strcmp(entry, shim);
}

int tl_omp_preload(const char *shim)
{
    /* The shim first, then what was preloaded already, without the shim
     * again (a nested run); entries are separated by ':' or ' '. */
    char preload[8192];
    int used = snprintf(preload, sizeof preload, "%s", shim);
    const char *old = getenv("LD_PRELOAD");
    for (const char *p = old ? old : ""; *p;) {
        size_t n = strcspn(p, ": ");
        if (n && !is_shim(p, n, shim)) {
            int more = snprintf(preload + used, sizeof preload - (size_t)used, ":%.*s", (int)n, p);
            if (more < 0 || (size_t)(used + more) >= sizeof preload)
                return -1;
            used += more;
        }
        p += n;
        p += strspn(p, ": ");
    }
    setenv("LD_PRELOAD", preload, 1);
    return 0;
}

int tl_omp_setenv(const char *shim, int pin, int quiet)
{
    if (tl_omp_preload(shim) != 0)
        return -1;
    /* Kept across a nested run, which sees OMP_DYNAMIC=true. */
    const char *dynamic = getenv("OMP_DYNAMIC");
    setenv("THREADLAB_OMP_DYNAMIC_ORIG", dynamic ? dynamic : "unset", 0);
    setenv("OMP_DYNAMIC", "true", 1);
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT"))
        setenv("GOMP_SPINCOUNT", TL_OMP_SPINCOUNT, 1);
    if (pin)
        setenv("THREADLAB_OMP_PIN", "1", 1);
    else
        unsetenv("THREADLAB_OMP_PIN");
    if (quiet)
        setenv("THREADLAB_OMP_QUIET", "1", 1);
    return 0;
}
