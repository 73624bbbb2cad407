/*
 * threadlab-npb - the NAS-like OpenMP kernels of `threadlab study
 * multiprog` (npb.h, docs/study-multiprog.md).
 *
 *   threadlab-npb KERNEL [--size NAME]     run one kernel, print one JSON line
 *   threadlab-npb --list                   the kernels, sizes and parameters (JSON Lines)
 *
 * The JSON line: kernel, size, params, time_s (the timed part), wall_s
 * (the whole process until the line), verified with the verification
 * quantity, value, reference, error and tolerance, regions (parallel
 * regions started), team_min/team_max/teams (the team sizes those regions
 * got: under threadlab-rm they follow the allocation), max_threads
 * (omp_get_max_threads()), managed (whether threadlab-rm manages it at the
 * end, as the libgomp shim or libthreadlab-gomp says: true, false, or null
 * under neither), shim_state (TL_OMP_STATE_*: 2 managed, 3 cooperative
 * after the manager left; -1 without the shim), runtime (the library that
 * provides GOMP_parallel), and mops.
 *
 * Exit status: 0 verified; 1 ran but did not verify; 2 usage error.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npb.h"
#include "threadlab/omp.h"

#define MAX_TEAM 256

static const npb_kernel *const kernels[] = {&npb_ep, &npb_cg, &npb_mg, &npb_sp, NULL};

/* ------------------------------------------------------------ utilities */

static long team_hist[MAX_TEAM + 1];
static long regions;

void npb_note_team(void)
{
    int n = omp_get_num_threads();
    if (n < 1)
        n = 1;
    if (n > MAX_TEAM)
        n = MAX_TEAM;
    team_hist[n]++; /* only the master of a top-level region writes */
    regions++;
}

double npb_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define MASK46 ((UINT64_C(1) << 46) - 1)
static const double two_m46 = 1.0 / 70368744177664.0; /* 2^-46 */

double npb_randlc(double *x, double a)
{
    uint64_t xi = (uint64_t)*x, ai = (uint64_t)a;
    xi = (uint64_t)(((unsigned __int128)ai * xi) & MASK46);
    *x = (double)xi;
    return (double)xi * two_m46;
}

void npb_vranlc(long n, double *x, double a, double *y)
{
    uint64_t xi = (uint64_t)*x, ai = (uint64_t)a;
    for (long i = 0; i < n; i++) {
        xi = (uint64_t)(((unsigned __int128)ai * xi) & MASK46);
        y[i] = (double)xi * two_m46;
    }
    *x = (double)xi;
}

void *npb_alloc(size_t bytes)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = 64;
    if (posix_memalign(&p, 64, (bytes + 63) / 64 * 64) != 0 || !p) {
        fprintf(stderr, "threadlab-npb: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    memset(p, 0, bytes);
    return p;
}

/* ------------------------------------------------------------------ JSON */

static void json_num(const char *key, double v)
{
    if (isfinite(v))
        printf(", \"%s\": %.17g", key, v);
    else
        printf(", \"%s\": null", key);
}

/* A path as a JSON string (quotes, backslashes and control bytes escaped). */
static void json_str(const char *key, const char *v)
{
    printf(", \"%s\": \"", key);
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else if (*c < 0x20)
            printf("\\u%04x", *c);
        else
            putchar(*c);
    }
    putchar('"');
}

static void print_params(const npb_kernel *k, const npb_size *s)
{
    printf("{");
    for (int i = 0; k->param_names[i]; i++)
        printf("%s\"%s\": %ld", i ? ", " : "", k->param_names[i], s->p[i]);
    printf("}");
}

static int list(void)
{
    for (int i = 0; kernels[i]; i++) {
        const npb_kernel *k = kernels[i];
        printf("{\"kernel\": \"%s\", \"summary\": \"%s\", \"sizes\": {", k->name, k->summary);
        for (const npb_size *s = k->sizes; s->name; s++) {
            printf("%s\"%s\": ", s == k->sizes ? "" : ", ", s->name);
            print_params(k, s);
        }
        printf("}, \"default_size\": \"W\"}\n");
    }
    return 0;
}

static int usage(const char *why)
{
    fprintf(stderr, "threadlab-npb: %s\nusage: threadlab-npb KERNEL [--size NAME] | threadlab-npb --list\nkernels:", why);
    for (int i = 0; kernels[i]; i++)
        fprintf(stderr, " %s", kernels[i]->name);
    fprintf(stderr, "\n");
    return 2;
}

int main(int argc, char **argv)
{
    double started = npb_wtime();
    if (argc >= 2 && !strcmp(argv[1], "--list"))
        return list();
    if (argc < 2 || argv[1][0] == '-')
        return usage("a kernel is required");
    const npb_kernel *k = NULL;
    for (int i = 0; kernels[i]; i++)
        if (!strcmp(kernels[i]->name, argv[1]))
            k = kernels[i];
    if (!k) {
        char why[128];
        snprintf(why, sizeof why, "unknown kernel '%s'", argv[1]);
        return usage(why);
    }
    const char *size_name = "W";
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            size_name = argv[++i];
        } else {
            char why[160];
            snprintf(why, sizeof why, "unexpected argument '%s'", argv[i]);
            return usage(why);
        }
    }
    const npb_size *size = NULL;
    for (const npb_size *s = k->sizes; s->name; s++)
        if (!strcmp(s->name, size_name))
            size = s;
    if (!size) {
        fprintf(stderr, "threadlab-npb: --size %s: %s has sizes", size_name, k->name);
        for (const npb_size *s = k->sizes; s->name; s++)
            fprintf(stderr, " %s", s->name);
        fprintf(stderr, "\n");
        return 2;
    }

    npb_result r;
    memset(&r, 0, sizeof r);
    r.value2 = r.reference2 = NAN;
    int rc = k->run(size, &r);

    int (*state)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "threadlab_omp_state");
    int (*ult_managed)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "threadlab_gomp_managed");
    const char *managed = state         ? (state() == TL_OMP_STATE_MANAGED ? "true" : "false")
                          : ult_managed ? (ult_managed() ? "true" : "false")
                                        : "null";
    Dl_info runtime;
    void *entry = dlsym(RTLD_DEFAULT, "GOMP_parallel");
    if (!entry || !dladdr(entry, &runtime) || !runtime.dli_fname)
        runtime.dli_fname = "";
    int team_min = 0, team_max = 0;
    for (int t = 1; t <= MAX_TEAM; t++)
        if (team_hist[t]) {
            if (!team_min)
                team_min = t;
            team_max = t;
        }
    printf("{\"kernel\": \"%s\", \"size\": \"%s\", \"params\": ", k->name, size->name);
    print_params(k, size);
    json_num("time_s", r.time_s);
    printf(", \"verified\": %s, \"quantity\": \"%s\"", r.verified && rc == 0 ? "true" : "false", r.quantity);
    json_num("value", r.value);
    json_num("reference", r.reference);
    json_num("error", r.error);
    json_num("tolerance", r.tolerance);
    json_num("value2", r.value2);
    json_num("reference2", r.reference2);
    json_num("mops", r.mops);
    printf(", \"detail\": \"%s\", \"regions\": %ld, \"team_min\": %d, \"team_max\": %d, \"teams\": {", r.detail,
           regions, team_min, team_max);
    int first = 1;
    for (int t = 1; t <= MAX_TEAM; t++)
        if (team_hist[t]) {
            printf("%s\"%d\": %ld", first ? "" : ", ", t, team_hist[t]);
            first = 0;
        }
    printf("}, \"max_threads\": %d, \"managed\": %s, \"shim_state\": %d", omp_get_max_threads(), managed,
           state ? state() : -1);
    json_str("runtime", runtime.dli_fname);
    json_num("wall_s", npb_wtime() - started);
    printf("}\n");
    return r.verified && rc == 0 ? 0 : 1;
}
