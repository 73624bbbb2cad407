/*
 * threadlab-omp-probe - an OpenMP program that shows what teams it gets,
 * for the tests of threadlab-rm and its libgomp shim (tests/test_omp.py).
 *
 *   threadlab-omp-probe [--seconds S] [--rounds N] [--work-us U] [--kinds LIST]
 *                       [--num-threads K] [--until FILE] [--events] [--nested]
 *
 * Each round runs one region of every kind in LIST (default all):
 *   parallel, for_static, for_dynamic, for_monotonic_dynamic, for_guided,
 *   for_monotonic_guided, for_runtime, for_monotonic_runtime,
 *   for_nonmonotonic_runtime, sections, task_reduction, teams,
 *   direct (every GOMP_parallel_loop_* 4.0 entry called directly, with the
 *   static one gcc never emits), legacy (the GOMP 1.0 _start/_end forms),
 *   long (one region whose threads all compute until --seconds have passed
 *   since the start or the --until FILE exists, like NAS EP: it prints
 *   {"event": "long", "team": N} when it starts, so a test can look at its
 *   threads' CPUs while it runs),
 * records the team size each got (omp_get_num_threads() in the region) and
 * checks that every loop iteration and section ran exactly once.  It stops
 * after --rounds rounds, or after --seconds, or when --until FILE exists.
 * --events prints a JSON line whenever the team of a `parallel` region
 * changes (flushed: a test can follow it live).  --nested adds an inner
 * region (num_threads 2) inside a `parallel` one.  --num-threads K gives
 * the regions a num_threads(K) clause (default: none, the ICV).
 *
 * The last line is a JSON summary: regions, teams seen per kind (min, max,
 * last), the team histogram, whether the work checked out, the shim's
 * state (-1 without the shim), omp_get_dynamic(), and the nested teams.
 * Exit status 0, or 1 when a region lost or repeated work.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gomp_abi.h"
#include "threadlab/json.h"

#define N_ITER 64
#define MAX_TEAM 64

enum {
    K_PARALLEL, K_FOR_STATIC, K_FOR_DYNAMIC, K_FOR_MONO_DYNAMIC, K_FOR_GUIDED, K_FOR_MONO_GUIDED, K_FOR_RUNTIME,
    K_FOR_MONO_RUNTIME, K_FOR_NONMONO_RUNTIME, K_SECTIONS, K_TASK_REDUCTION, K_TEAMS, K_DIRECT, K_LEGACY, K_LONG,
    K_COUNT
};
static const char *kind_names[K_COUNT] = {
    "parallel", "for_static", "for_dynamic", "for_monotonic_dynamic", "for_guided", "for_monotonic_guided",
    "for_runtime", "for_monotonic_runtime", "for_nonmonotonic_runtime", "sections", "task_reduction", "teams",
    "direct", "legacy", "long"};

static struct {
    int min, max, last;
    long regions;
} seen[K_COUNT];
static long histogram[MAX_TEAM + 1];
static long regions;
static int work_ok = 1;
static double work_us;
static int num_threads; /* 0 = no clause */
static double started_s, stop_after_s; /* the long region's stop conditions */
static const char *stop_file;
static int nested_outer = -1, nested_inner_max = -1;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void spin(void)
{
    if (work_us <= 0)
        return;
    double end = now_s() + work_us * 1e-6;
    while (now_s() < end)
        ;
}

static void record(int kind, int team)
{
    if (team < 1 || team > MAX_TEAM)
        team = MAX_TEAM;
    if (!seen[kind].regions || team < seen[kind].min)
        seen[kind].min = team;
    if (team > seen[kind].max)
        seen[kind].max = team;
    seen[kind].last = team;
    seen[kind].regions++;
    histogram[team]++;
    regions++;
}

static void check_counts(const int *count, int n)
{
    for (int i = 0; i < n; i++)
        if (count[i] != 1)
            work_ok = 0;
}

/* ---- regions the compiler makes */

static int region_parallel(void)
{
    int team = 0;
    if (num_threads) {
#pragma omp parallel num_threads(num_threads)
        {
            if (omp_get_thread_num() == 0)
                team = omp_get_num_threads();
            spin();
        }
    } else {
#pragma omp parallel
        {
            if (omp_get_thread_num() == 0)
                team = omp_get_num_threads();
            spin();
        }
    }
    return team;
}

/* Combined constructs: these are what become GOMP_parallel_loop_*. */
#define DO_PRAGMA(x) _Pragma(#x)
#define COMBINED_REGION(fname, sched)                                                                           \
    static int fname(void)                                                                                      \
    {                                                                                                           \
        int team = 0, count[N_ITER] = {0};                                                                      \
        DO_PRAGMA(omp parallel for sched) for (int i = 0; i < N_ITER; i++)                                      \
        {                                                                                                       \
            __atomic_store_n(&team, omp_get_num_threads(), __ATOMIC_RELAXED);                                   \
            _Pragma("omp atomic") count[i]++;                                                                  \
        }                                                                                                       \
        check_counts(count, N_ITER);                                                                            \
        return team;                                                                                            \
    }

COMBINED_REGION(region_for_static, schedule(static))
COMBINED_REGION(region_for_dynamic, schedule(dynamic))
COMBINED_REGION(region_for_mono_dynamic, schedule(monotonic:dynamic))
COMBINED_REGION(region_for_guided, schedule(guided))
COMBINED_REGION(region_for_mono_guided, schedule(monotonic:guided))
COMBINED_REGION(region_for_runtime, schedule(runtime))
COMBINED_REGION(region_for_mono_runtime, schedule(monotonic:runtime))
COMBINED_REGION(region_for_nonmono_runtime, schedule(nonmonotonic:runtime))

static int region_sections(void)
{
    int team = 0, a = 0, b = 0, c = 0;
#pragma omp parallel sections
    {
#pragma omp section
        {
            a++;
            __atomic_store_n(&team, omp_get_num_threads(), __ATOMIC_RELAXED);
        }
#pragma omp section
        {
            b++;
            __atomic_store_n(&team, omp_get_num_threads(), __ATOMIC_RELAXED);
        }
#pragma omp section
        {
            c++;
            __atomic_store_n(&team, omp_get_num_threads(), __ATOMIC_RELAXED);
        }
    }
    if (a != 1 || b != 1 || c != 1)
        work_ok = 0;
    return team;
}

static int region_task_reduction(void)
{
    int team = 0;
    long s = 0;
#pragma omp parallel reduction(task, + : s)
    {
        __atomic_store_n(&team, omp_get_num_threads(), __ATOMIC_RELAXED);
        s += 1;
    }
    if (s != team)
        work_ok = 0;
    return team;
}

static int region_teams(void)
{
    int team = 0;
#pragma omp teams num_teams(2)
    {
#pragma omp parallel
        {
            if (omp_get_team_num() == 0 && omp_get_thread_num() == 0)
                team = omp_get_num_threads();
        }
    }
    return team;
}

/* ---- the entry points gcc does not emit (any more), called directly */

typedef struct {
    int team;
    int count[N_ITER];
    int sections[4];
} direct_data;

static void drain_loop(void *p)
{
    direct_data *d = p;
    __atomic_store_n(&d->team, omp_get_num_threads(), __ATOMIC_RELAXED);
    long s, e;
    while (GOMP_loop_runtime_next(&s, &e))
        for (long i = s; i < e; i++)
            __atomic_add_fetch(&d->count[i], 1, __ATOMIC_RELAXED);
    GOMP_loop_end_nowait();
}

static void drain_sections(void *p)
{
    direct_data *d = p;
    __atomic_store_n(&d->team, omp_get_num_threads(), __ATOMIC_RELAXED);
    unsigned s;
    while ((s = GOMP_sections_next()) != 0)
        if (s <= 3)
            __atomic_add_fetch(&d->sections[s], 1, __ATOMIC_RELAXED);
    GOMP_sections_end_nowait();
}

static void plain(void *p)
{
    direct_data *d = p;
    if (omp_get_thread_num() == 0)
        d->team = omp_get_num_threads();
}

static int finish_direct(direct_data *d, int loop)
{
    if (loop)
        check_counts(d->count, N_ITER);
    return d->team;
}

static int region_direct(void)
{
    unsigned nt = (unsigned)num_threads;
    int team = MAX_TEAM, t;
    direct_data d;
#define DIRECT(call)                                                                                           \
    memset(&d, 0, sizeof d);                                                                                   \
    call;                                                                                                      \
    t = finish_direct(&d, 1);                                                                                  \
    team = t < team ? t : team;
    DIRECT(GOMP_parallel_loop_static(drain_loop, &d, nt, 0, N_ITER, 1, 4, 0))
    DIRECT(GOMP_parallel_loop_dynamic(drain_loop, &d, nt, 0, N_ITER, 1, 4, 0))
    DIRECT(GOMP_parallel_loop_guided(drain_loop, &d, nt, 0, N_ITER, 1, 4, 0))
    DIRECT(GOMP_parallel_loop_runtime(drain_loop, &d, nt, 0, N_ITER, 1, 0))
    DIRECT(GOMP_parallel_loop_nonmonotonic_dynamic(drain_loop, &d, nt, 0, N_ITER, 1, 4, 0))
    DIRECT(GOMP_parallel_loop_nonmonotonic_guided(drain_loop, &d, nt, 0, N_ITER, 1, 4, 0))
    DIRECT(GOMP_parallel_loop_nonmonotonic_runtime(drain_loop, &d, nt, 0, N_ITER, 1, 0))
    DIRECT(GOMP_parallel_loop_maybe_nonmonotonic_runtime(drain_loop, &d, nt, 0, N_ITER, 1, 0))
#undef DIRECT
    return team;
}

static int region_legacy(void)
{
    unsigned nt = (unsigned)num_threads;
    int team = MAX_TEAM, t;
    direct_data d;
#define LEGACY(start, fn, loop)                                                                                \
    memset(&d, 0, sizeof d);                                                                                   \
    start;                                                                                                     \
    fn(&d);                                                                                                    \
    GOMP_parallel_end();                                                                                       \
    t = finish_direct(&d, loop);                                                                               \
    team = t < team ? t : team;
    LEGACY(GOMP_parallel_start(plain, &d, nt), plain, 0)
    LEGACY(GOMP_parallel_loop_static_start(drain_loop, &d, nt, 0, N_ITER, 1, 4), drain_loop, 1)
    LEGACY(GOMP_parallel_loop_dynamic_start(drain_loop, &d, nt, 0, N_ITER, 1, 4), drain_loop, 1)
    LEGACY(GOMP_parallel_loop_guided_start(drain_loop, &d, nt, 0, N_ITER, 1, 4), drain_loop, 1)
    LEGACY(GOMP_parallel_loop_runtime_start(drain_loop, &d, nt, 0, N_ITER, 1), drain_loop, 1)
    LEGACY(GOMP_parallel_sections_start(drain_sections, &d, nt, 3), drain_sections, 0)
    if (d.sections[1] != 1 || d.sections[2] != 1 || d.sections[3] != 1)
        work_ok = 0;
#undef LEGACY
    return team;
}

static void region_nested(void)
{
    int outer = 0, inner_max = 0;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0)
            outer = omp_get_num_threads();
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 0) {
                int n = omp_get_num_threads();
#pragma omp critical
                inner_max = n > inner_max ? n : inner_max;
            }
        }
    }
    nested_outer = outer;
    nested_inner_max = inner_max;
}

static int stop_now(void)
{
    return (stop_after_s > 0 && now_s() - started_s >= stop_after_s) || (stop_file && access(stop_file, F_OK) == 0);
}

static int region_long(void)
{
    int team = 0, stop = 0;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0) {
            team = omp_get_num_threads();
            tl_json j;
            tl_json_init(&j);
            tl_json_begin_object(&j);
            tl_json_key(&j, "event"); tl_json_string(&j, "long");
            tl_json_key(&j, "t_ms"); tl_json_number(&j, (now_s() - started_s) * 1e3);
            tl_json_key(&j, "team"); tl_json_int(&j, team);
            tl_json_end_object(&j);
            tl_json_emit(&j);
            while (!stop_now()) {
                double end = now_s() + 1e-3;
                while (now_s() < end)
                    ;
            }
            __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
        } else {
            while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
                ;
        }
    }
    return team;
}

typedef int (*region_fn)(void);
static const region_fn region_fns[K_COUNT] = {
    region_parallel, region_for_static, region_for_dynamic, region_for_mono_dynamic, region_for_guided,
    region_for_mono_guided, region_for_runtime, region_for_mono_runtime, region_for_nonmono_runtime,
    region_sections, region_task_reduction, region_teams, region_direct, region_legacy, region_long};

static int usage(const char *why)
{
    fprintf(stderr,
            "threadlab-omp-probe: %s\nusage: threadlab-omp-probe [--seconds S] [--rounds N] [--work-us U] "
            "[--kinds LIST] [--num-threads K] [--until FILE] [--events] [--nested]\n",
            why);
    return 2;
}

int main(int argc, char **argv)
{
    double seconds = 0;
    long rounds = -1;
    const char *until = NULL, *kinds = "all";
    int events = 0, nested = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--events")) {
            events = 1;
        } else if (!strcmp(a, "--nested")) {
            nested = 1;
        } else if (!v) {
            return usage("an option lacks its value");
        } else if (!strcmp(a, "--seconds")) {
            seconds = atof(v), i++;
        } else if (!strcmp(a, "--rounds")) {
            rounds = atol(v), i++;
        } else if (!strcmp(a, "--work-us")) {
            work_us = atof(v), i++;
        } else if (!strcmp(a, "--num-threads")) {
            num_threads = atoi(v), i++;
        } else if (!strcmp(a, "--until")) {
            until = v, i++;
        } else if (!strcmp(a, "--kinds")) {
            kinds = v, i++;
        } else {
            return usage(a);
        }
    }
    int enabled[K_COUNT];
    for (int k = 0; k < K_COUNT; k++) {
        if (!strcmp(kinds, "all")) {
            enabled[k] = k != K_LONG; /* only when asked for: it runs until told to stop */
        } else {
            char list[512];
            snprintf(list, sizeof list, ",%s,", kinds);
            char key[64];
            snprintf(key, sizeof key, ",%s,", kind_names[k]);
            enabled[k] = strstr(list, key) != NULL;
        }
    }
    if (rounds < 0 && seconds <= 0 && !until)
        rounds = 1;
    if (nested)
        omp_set_max_active_levels(2);

    double start = now_s();
    started_s = start;
    stop_after_s = seconds;
    stop_file = until;
    int last_team = -1;
    for (long r = 0; rounds < 0 || r < rounds; r++) {
        for (int k = 0; k < K_COUNT; k++) {
            if (!enabled[k])
                continue;
            int team = region_fns[k]();
            record(k, team);
            if (events && k == K_PARALLEL && team != last_team) {
                tl_json j;
                tl_json_init(&j);
                tl_json_begin_object(&j);
                tl_json_key(&j, "event"); tl_json_string(&j, "team");
                tl_json_key(&j, "t_ms"); tl_json_number(&j, (now_s() - start) * 1e3);
                tl_json_key(&j, "team"); tl_json_int(&j, team);
                tl_json_key(&j, "round"); tl_json_int(&j, r);
                tl_json_end_object(&j);
                tl_json_emit(&j);
                last_team = team;
            }
        }
        if (nested)
            region_nested();
        if (seconds > 0 && now_s() - start >= seconds)
            break;
        if (until && access(until, F_OK) == 0)
            break;
    }

    int (*state)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "threadlab_omp_state");
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "probe"); tl_json_string(&j, "threadlab-omp-probe");
    tl_json_key(&j, "regions"); tl_json_int(&j, regions);
    tl_json_key(&j, "work_ok"); tl_json_bool(&j, work_ok);
    tl_json_key(&j, "shim_state"); tl_json_int(&j, state ? state() : -1);
    tl_json_key(&j, "dynamic"); tl_json_int(&j, omp_get_dynamic());
    tl_json_key(&j, "max_threads"); tl_json_int(&j, omp_get_max_threads());
    tl_json_key(&j, "seconds"); tl_json_number(&j, now_s() - start);
    tl_json_key(&j, "nested_outer"); tl_json_int(&j, nested_outer);
    tl_json_key(&j, "nested_inner_max"); tl_json_int(&j, nested_inner_max);
    tl_json_key(&j, "histogram");
    tl_json_begin_object(&j);
    for (int t = 1; t <= MAX_TEAM; t++)
        if (histogram[t]) {
            char size[16];
            snprintf(size, sizeof size, "%d", t);
            tl_json_key(&j, size);
            tl_json_int(&j, histogram[t]);
        }
    tl_json_end_object(&j);
    tl_json_key(&j, "kinds");
    tl_json_begin_object(&j);
    for (int k = 0; k < K_COUNT; k++)
        if (seen[k].regions) {
            tl_json_key(&j, kind_names[k]);
            tl_json_begin_object(&j);
            tl_json_key(&j, "min"); tl_json_int(&j, seen[k].min);
            tl_json_key(&j, "max"); tl_json_int(&j, seen[k].max);
            tl_json_key(&j, "last"); tl_json_int(&j, seen[k].last);
            tl_json_key(&j, "regions"); tl_json_int(&j, seen[k].regions);
            tl_json_end_object(&j);
        }
    tl_json_end_object(&j);
    tl_json_end_object(&j);
    tl_json_emit(&j);
    return work_ok ? 0 : 1;
}
