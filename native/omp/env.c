/*
 * env.c - the environment of a program run under threadlab-rm (the shim
 * or libthreadlab-gomp)
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

int tl_omp_find_library(const char *name, const char *env_var, char *out, size_t len)
{
    const char *env = getenv(env_var);
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return access(out, R_OK) == 0 ? canonical(out, len) : -1;
    }
    char relative[PATH_MAX];
    snprintf(relative, sizeof relative, "../lib/%s", name);
    if (tl_beside_program(relative, out, len) != 0)
        return -1;
    return canonical(out, len);
}

int tl_omp_find_shim(char *out, size_t len)
{
    return tl_omp_find_library(TL_OMP_SHIM_LIBRARY, "THREADLAB_OMP_LIB", out, len);
}

/* An LD_PRELOAD entry (n bytes at p) that names `library`, or another of
 * threadlab's OpenMP runtimes (by its file name: one from another build
 * interposes the same entries). */
static int is_runtime(const char *p, size_t n, const char *library)
{
    if (n == strlen(library) && !strncmp(p, library, n))
        return 1;
    char entry[PATH_MAX];
    if (n >= sizeof entry)
        return 0;
    memcpy(entry, p, n);
    entry[n] = '\0';
    const char *base = strrchr(entry, '/');
    base = base ? base + 1 : entry;
    if (!strcmp(base, TL_OMP_SHIM_LIBRARY) || !strcmp(base, TL_OMP_ULT_LIBRARY))
        return 1;
    return canonical(entry, sizeof entry) == 0 && !strcmp(entry, library);
}

int tl_omp_preload(const char *library)
{
    /* The library first, then what was preloaded already, without it or
     * the other runtime (a nested run); entries are separated by ':' or ' '. */
    char preload[8192];
    int used = snprintf(preload, sizeof preload, "%s", library);
    const char *old = getenv("LD_PRELOAD");
    for (const char *p = old ? old : ""; *p;) {
        size_t n = strcspn(p, ": ");
        if (n && !is_runtime(p, n, library)) {
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

int tl_omp_setenv_ult(const char *library, int quiet)
{
    if (tl_omp_preload(library) != 0)
        return -1;
    const char *orig = getenv("THREADLAB_OMP_DYNAMIC_ORIG");
    if (orig) {
        if (!strcmp(orig, "unset"))
            unsetenv("OMP_DYNAMIC");
        else
            setenv("OMP_DYNAMIC", orig, 1);
        unsetenv("THREADLAB_OMP_DYNAMIC_ORIG");
    }
    if (quiet)
        setenv("THREADLAB_GOMP_QUIET", "1", 1);
    return 0;
}
