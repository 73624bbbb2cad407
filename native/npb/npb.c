/*
 * threadlab-npb - the NAS-like OpenMP kernels of `threadlab study
 * multiprog` (npb.h, docs/study-multiprog.md), on the native protocol
 * (docs/native-protocol.md):
 *
 *   threadlab-npb --list                                the kernels (study.multiprog.K), their sizes
 *   threadlab-npb --env                                 its build and OpenMP runtime
 *   threadlab-npb --run study.multiprog.K [--param size=NAME]   one run, one record
 *
 * The record (libthreadlab-record): the timed part as its one sample; the
 * check "verified" with the verification quantity, value, reference,
 * error and tolerance; extras: the parallel regions started, the team
 * sizes they got (team_min, team_max, teams "SIZE:COUNT,..."; under
 * threadlab-rm they follow the allocation), omp_get_max_threads(), whether
 * threadlab-rm manages it at the end, as the libgomp shim or
 * libthreadlab-gomp says (managed: yes, no, or null under neither), the
 * shim's state (shim_state, TL_OMP_STATE_*: 2 managed, 3 cooperative after
 * the manager left; -1 without the shim), the library that provides
 * GOMP_parallel (runtime), the whole process's wall time until the record
 * (wall_s) and the kernel's size parameters.
 *
 * Exit status: 0 a record was written (a result that did not verify is a
 * record whose check failed); 2 usage error.
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
#include "threadlab/compiler.h"
#include "threadlab/json.h"
#include "threadlab/omp.h"
#include "threadlab/record.h"

#define BENCHMARK_PREFIX "study.multiprog."
#define DEFAULT_SIZE "W"

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

/* -------------------------------------------------------------- protocol */

static const npb_kernel *find_kernel(const char *benchmark)
{
    size_t prefix = strlen(BENCHMARK_PREFIX);
    if (strncmp(benchmark, BENCHMARK_PREFIX, prefix) != 0)
        return NULL;
    for (int i = 0; kernels[i]; i++)
        if (!strcmp(kernels[i]->name, benchmark + prefix))
            return kernels[i];
    return NULL;
}

static int list(void)
{
    for (int i = 0; kernels[i]; i++) {
        const npb_kernel *k = kernels[i];
        char name[64];
        snprintf(name, sizeof name, BENCHMARK_PREFIX "%s", k->name);
        tl_json j;
        tl_json_init(&j);
        tl_json_begin_object(&j);
        tl_json_key(&j, "benchmark"); tl_json_string(&j, name);
        tl_json_key(&j, "model"); tl_json_string(&j, "openmp");
        tl_json_key(&j, "suite"); tl_json_string(&j, "study");
        tl_json_key(&j, "summary"); tl_json_string(&j, k->summary);
        tl_json_key(&j, "quantity"); tl_json_string(&j, "time of the kernel's timed part");
        tl_json_key(&j, "unit"); tl_json_string(&j, "s");
        tl_json_key(&j, "threads"); tl_json_int(&j, 0);
        tl_json_key(&j, "placements"); tl_json_begin_array(&j); tl_json_end_array(&j);
        tl_json_key(&j, "default_placements"); tl_json_begin_array(&j); tl_json_end_array(&j);
        tl_json_key(&j, "params");
        tl_json_begin_array(&j);
        tl_json_begin_object(&j);
        tl_json_key(&j, "name"); tl_json_string(&j, "size");
        tl_json_key(&j, "help"); tl_json_string(&j, "the kernel's size (see sizes)");
        tl_json_key(&j, "values");
        tl_json_begin_array(&j);
        for (const npb_size *s = k->sizes; s->name; s++)
            tl_json_string(&j, s->name);
        tl_json_end_array(&j);
        tl_json_key(&j, "quick_values"); tl_json_begin_array(&j); tl_json_string(&j, k->sizes[0].name); tl_json_end_array(&j);
        tl_json_end_object(&j);
        tl_json_end_array(&j);
        tl_json_key(&j, "sizes");
        tl_json_begin_object(&j);
        for (const npb_size *s = k->sizes; s->name; s++) {
            tl_json_key(&j, s->name);
            tl_json_begin_object(&j);
            for (int p = 0; k->param_names[p]; p++) {
                tl_json_key(&j, k->param_names[p]);
                tl_json_int(&j, s->p[p]);
            }
            tl_json_end_object(&j);
        }
        tl_json_end_object(&j);
        tl_json_key(&j, "default_size"); tl_json_string(&j, DEFAULT_SIZE);
        tl_json_end_object(&j);
        tl_json_emit(&j);
    }
    return 0;
}

static int env(void)
{
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "program"); tl_json_string(&j, "threadlab-npb");
    tl_json_key(&j, "compiler"); tl_json_string(&j, "gcc " __VERSION__);
    tl_json_key(&j, "sanitizer"); tl_json_string(&j, tl_sanitizer_name());
    tl_json_key(&j, "openmp"); tl_json_int(&j, _OPENMP);
    tl_json_key(&j, "max_threads"); tl_json_int(&j, omp_get_max_threads());
    tl_json_end_object(&j);
    tl_json_emit(&j);
    return 0;
}

static int usage(const char *why)
{
    fprintf(stderr, "threadlab-npb: error: %s\nusage: threadlab-npb --run study.multiprog.K [--param size=NAME] | "
            "--list | --env\nkernels:", why);
    for (int i = 0; kernels[i]; i++)
        fprintf(stderr, " %s", kernels[i]->name);
    fprintf(stderr, "\n");
    return 2;
}

int main(int argc, char **argv)
{
    double started = npb_wtime();
    const char *benchmark = NULL, *size_name = DEFAULT_SIZE;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list"))
            return list();
        if (!strcmp(argv[i], "--env"))
            return env();
        if (!strcmp(argv[i], "--run") && i + 1 < argc) {
            benchmark = argv[++i];
        } else if (!strcmp(argv[i], "--param") && i + 1 < argc && !strncmp(argv[i + 1], "size=", 5)) {
            size_name = argv[++i] + 5;
        } else {
            char why[160];
            snprintf(why, sizeof why, "unexpected argument '%s'", argv[i]);
            return usage(why);
        }
    }
    if (!benchmark)
        return usage("--run study.multiprog.K, --list or --env is required");
    const npb_kernel *k = find_kernel(benchmark);
    if (!k) {
        char why[128];
        snprintf(why, sizeof why, "unknown benchmark '%s'", benchmark);
        return usage(why);
    }
    const npb_size *size = NULL;
    for (const npb_size *s = k->sizes; s->name; s++)
        if (!strcmp(s->name, size_name))
            size = s;
    if (!size) {
        fprintf(stderr, "threadlab-npb: error: size=%s: %s has sizes", size_name, k->name);
        for (const npb_size *s = k->sizes; s->name; s++)
            fprintf(stderr, " %s", s->name);
        fprintf(stderr, "\n");
        return 2;
    }

    npb_result r;
    memset(&r, 0, sizeof r);
    r.value2 = r.reference2 = NAN;
    int rc = k->run(size, &r);
    int verified = r.verified && rc == 0;

    int (*state)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "threadlab_omp_state");
    int (*ult_managed)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "threadlab_gomp_managed");
    const char *managed = state         ? (state() == TL_OMP_STATE_MANAGED ? "yes" : "no")
                          : ult_managed ? (ult_managed() ? "yes" : "no")
                                        : NULL;
    Dl_info runtime;
    void *entry = dlsym(RTLD_DEFAULT, "GOMP_parallel");
    if (!entry || !dladdr(entry, &runtime) || !runtime.dli_fname)
        runtime.dli_fname = "";
    int team_min = 0, team_max = 0;
    char teams[1024] = "";
    size_t used = 0;
    for (int t = 1; t <= MAX_TEAM; t++)
        if (team_hist[t]) {
            if (!team_min)
                team_min = t;
            team_max = t;
            if (used < sizeof teams)
                used += (size_t)snprintf(teams + used, sizeof teams - used, "%s%d:%ld", used ? "," : "", t,
                                         team_hist[t]);
        }
    char name[64], detail[400];
    snprintf(name, sizeof name, BENCHMARK_PREFIX "%s", k->name);
    snprintf(detail, sizeof detail, "%s = %.17g, reference %.17g, tolerance %.3g: %s", r.quantity, r.value,
             r.reference, r.tolerance, r.detail);
    tl_record_check check = {"verified", verified, r.error, detail};
    tl_record_extra extras[12 + NPB_MAX_PARAMS];
    unsigned n = 0;
    extras[n++] = (tl_record_extra){"quantity", r.quantity, 0};
    extras[n++] = (tl_record_extra){"value", NULL, r.value};
    extras[n++] = (tl_record_extra){"reference", NULL, r.reference};
    extras[n++] = (tl_record_extra){"tolerance", NULL, r.tolerance};
    extras[n++] = (tl_record_extra){"value2", NULL, r.value2};
    extras[n++] = (tl_record_extra){"reference2", NULL, r.reference2};
    extras[n++] = (tl_record_extra){"mops", NULL, r.mops};
    extras[n++] = (tl_record_extra){"regions", NULL, (double)regions};
    extras[n++] = (tl_record_extra){"teams", teams, 0};
    extras[n++] = (tl_record_extra){"managed", managed, NAN};
    extras[n++] = (tl_record_extra){"shim_state", NULL, state ? state() : -1};
    extras[n++] = (tl_record_extra){"runtime", runtime.dli_fname, 0};
    for (int p = 0; k->param_names[p] && p < NPB_MAX_PARAMS; p++)
        extras[n++] = (tl_record_extra){k->param_names[p], NULL, (double)size->p[p]};
    tl_record_extra tail[] = {
        {"team_min", NULL, team_min}, {"team_max", NULL, team_max},
        {"max_threads", NULL, omp_get_max_threads()}, {"wall_s", NULL, npb_wtime() - started},
    };
    tl_record_extra all[sizeof extras / sizeof extras[0] + sizeof tail / sizeof tail[0]];
    memcpy(all, extras, n * sizeof *extras);
    memcpy(all + n, tail, sizeof tail);
    const char *names[] = {"size"}, *values[] = {size->name};
    tl_record_stop stop = {"fixed", NAN, "fixed", 1, 1, r.time_s};
    tl_record record = {
        .benchmark = name, .model = "openmp", .param_names = names, .param_values = values, .nparams = 1,
        .placement = "none", .unit = "s", .quantity = "time of the kernel's timed part", .status = "ok",
        .clock = "monotonic", .samples = &r.time_s, .nsamples = 1, .iterations = 1, .actions_per_iteration = 1,
        .overhead_ns = NAN, .stop = &stop, .checks = &check, .nchecks = 1, .extras = all,
        .nextras = n + (unsigned)(sizeof tail / sizeof tail[0]),
    };
    tl_record_write(&record, stdout);
    return 0;
}
