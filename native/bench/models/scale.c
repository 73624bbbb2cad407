/* scale.c - how many threads of a model may exist at once on this machine,
 * and the count a benchmark uses (docs/thread-models.md, "count").
 *
 * The rules are those of the JVM and Go producers
 * (python/threadlab/producers/limits.py): of the free kernel tasks
 * (kernel.pid_max, kernel.threads-max, the cgroup's pids.max, for users
 * other than root RLIMIT_NPROC) a benchmark takes at most 75% less a
 * reserve of 512, so the rest of the machine can still fork; of the free
 * memory mappings (vm.max_map_count) 90%; of the available memory (and the
 * cgroup's) half.  The count is rounded down to two significant digits; a
 * point where not even min(count, 1000) fits is unsupported.
 * $THREADLAB_TEST_LIMITS (a JSON object of the same field names as
 * limits.py's MachineLimits) replaces values read, for the tests. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "suite.h"

#define TASK_SHARE 0.75
#define TASK_RESERVE 512.0
#define MAP_SHARE 0.9
#define MEMORY_SHARE 0.5
#define MINIMUM_COUNT 1000
#define MAX_COUNT 10000000L
/* Sanitizer builds check correctness, not capacity: ThreadSanitizer keeps
 * a fiber (about 1 MiB) per user-level thread and supports a few thousand
 * live kernel threads, and both make every creation (a fork under
 * ThreadSanitizer: about 2 ms) many times slower.  The cap applies after
 * the machine's limits, below the minimum count worth measuring there. */
#define SANITIZER_COUNT 200
#if defined(__SANITIZE_THREAD__)
#define SANITIZER_BUILD "a ThreadSanitizer"
#else
#define SANITIZER_BUILD "an AddressSanitizer"
#endif

const char *tl_models_check_count(const char *value)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    return errno == 0 && end != value && !*end && v >= 1 && v <= MAX_COUNT ? NULL
                                                                           : "an integer from 1 to 10000000";
}

/* ------------------------------------------------------------ reading */

/* A value of $THREADLAB_TEST_LIMITS ("key": number), if the key is there. */
static int test_override(const char *key, double *out)
{
    const char *text = getenv("THREADLAB_TEST_LIMITS");
    if (!text)
        return 0;
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *at = strstr(text, quoted);
    if (!at || !(at = strchr(at + strlen(quoted), ':')))
        return 0;
    char *end;
    double v = strtod(at + 1, &end);
    if (end == at + 1)
        return 0;
    *out = v;
    return 1;
}

/* The first number of a file ("max" and unreadable files: NAN). */
static double file_number(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NAN;
    double v;
    int ok = fscanf(f, "%lf", &v) == 1;
    fclose(f);
    return ok ? v : NAN;
}

/* key's override, else what read() gives. */
static double limit(const char *key, double value)
{
    double v;
    return test_override(key, &v) ? v : value;
}

/* Total tasks now (the 4th field of /proc/loadavg is running/total). */
static double tasks_now(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return NAN;
    double a, b, c, running, total;
    int ok = fscanf(f, "%lf %lf %lf %lf/%lf", &a, &b, &c, &running, &total) == 5;
    fclose(f);
    return ok ? total : NAN;
}

/* The cgroup (v2) directory of this process, or "" when unknown. */
static void cgroup_dir(char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return;
    char line[400]; /* shorter than out less "/sys/fs/cgroup" */
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, len, "/sys/fs/cgroup%s", strcmp(line + 3, "/") == 0 ? "" : line + 3);
        }
    fclose(f);
}

/* limit - usage of a cgroup controller, the tightest along the path to the
 * root (NAN when no level limits it). */
static double cgroup_free(const char *max_file, const char *current_file)
{
    char dir[512], path[600];
    cgroup_dir(dir, sizeof dir);
    double best = NAN;
    while (dir[0]) {
        snprintf(path, sizeof path, "%s/%s", dir, max_file);
        double max = file_number(path);
        snprintf(path, sizeof path, "%s/%s", dir, current_file);
        double current = file_number(path);
        if (!isnan(max) && !isnan(current) && (isnan(best) || max - current < best))
            best = max - current;
        char *slash = strrchr(dir, '/');
        if (!slash || strcmp(dir, "/sys/fs/cgroup") == 0)
            break;
        *slash = '\0';
    }
    return best;
}

static double mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return NAN;
    char line[256];
    double kib = NAN;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1)
            break;
    fclose(f);
    return kib * 1024.0;
}

static double maps_now(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return NAN;
    double n = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}

/* ------------------------------------------------------------ fitting */

typedef struct {
    double fit;        /* threads that fit at once */
    char because[256]; /* the binding limit, in words */
} fit_t;

static void tighter(fit_t *f, double fit, const char *fmt, double a, double b)
{
    if (isnan(fit) || fit >= f->fit)
        return;
    f->fit = fit < 0 ? 0 : floor(fit);
    snprintf(f->because, sizeof f->because, fmt, a, b);
}

static fit_t machine_fit(tl_model_cost cost)
{
    fit_t f = {.fit = INFINITY};
    if (cost.kernel_task) {
        double now = limit("tasks_now", tasks_now());
        double pid_max = limit("pid_max", file_number("/proc/sys/kernel/pid_max"));
        double threads_max = limit("threads_max", file_number("/proc/sys/kernel/threads-max"));
        double cg = limit("cgroup_pids_max", NAN), cg_now;
        cg = isnan(cg) ? cgroup_free("pids.max", "pids.current")
                       : cg - (test_override("cgroup_pids_current", &cg_now) ? cg_now : 0);
        const char *task_fmt = "%.0f kernel tasks left (%s) allow about %.0f";
        double free_tasks[3] = {pid_max - now, threads_max - now, cg};
        const char *names[3] = {"kernel.pid_max", "kernel.threads-max", "the cgroup's pids.max"};
        for (int i = 0; i < 3; i++) {
            double fit = free_tasks[i] * TASK_SHARE - TASK_RESERVE;
            if (!isnan(fit) && fit < f.fit) {
                f.fit = fit < 0 ? 0 : floor(fit);
                snprintf(f.because, sizeof f.because, task_fmt, free_tasks[i], names[i], f.fit);
            }
        }
        struct rlimit rl;
        if (geteuid() != 0 && getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
            tighter(&f, (double)rl.rlim_cur * TASK_SHARE - TASK_RESERVE,
                    "RLIMIT_NPROC %.0f allows about %.0f", (double)rl.rlim_cur,
                    (double)rl.rlim_cur * TASK_SHARE - TASK_RESERVE);
    }
    if (cost.maps > 0) {
        double max_maps = limit("max_map_count", file_number("/proc/sys/vm/max_map_count"));
        double fit = (max_maps - maps_now()) * MAP_SHARE / cost.maps;
        tighter(&f, fit, "vm.max_map_count %.0f at %.0f mappings per thread", max_maps, cost.maps);
    }
    double mem, cg_mem = NAN;
    if (!test_override("mem_available_bytes", &mem)) { /* the tests' memory stands for all memory */
        mem = mem_available();
        cg_mem = cgroup_free("memory.max", "memory.current");
    }
    if (!isnan(cg_mem) && (isnan(mem) || cg_mem < mem))
        mem = cg_mem;
    tighter(&f, mem * MEMORY_SHARE / cost.resident_bytes, "%.1f GiB of available memory at %.0f bytes per thread",
            mem / (1024.0 * 1024 * 1024), cost.resident_bytes);
    return f;
}

static uint64_t round_down_2_digits(uint64_t n)
{
    uint64_t scale = 1;
    while (n / scale >= 100)
        scale *= 10;
    return n / scale * scale;
}

void tl_models_scaling_extra(tl_ctx *ctx, const tl_models_scaling *s)
{
    if (!s->because[0])
        return;
    tl_extra_num(ctx, "scaled_from", (double)s->requested);
    tl_extra_str(ctx, "scaled_because", s->because);
}

uint64_t tl_models_count(tl_ctx *ctx, tl_mstack stack, tl_models_scaling *s)
{
    memset(s, 0, sizeof *s);
    uint64_t requested = (uint64_t)tl_param_long(ctx, "count", 1, MAX_COUNT);
    s->requested = s->count = requested;
    fit_t f = machine_fit(tl_model_thread_cost(stack));
    if ((double)requested > f.fit) {
        uint64_t floor_count = requested < MINIMUM_COUNT ? requested : MINIMUM_COUNT;
        if (f.fit < (double)floor_count) {
            tl_unsupported(ctx,
                           "%" PRIu64 " %s threads at once do not fit on this machine, not even %" PRIu64 ": %s",
                           requested, tl_model_name, floor_count, f.because);
            s->count = 0;
            return 0;
        }
        s->count = round_down_2_digits((uint64_t)f.fit);
        s->machine_limit = 1;
        snprintf(s->because, sizeof s->because, "%" PRIu64 " %s threads at once do not fit: %s", requested,
                 tl_model_name, f.because);
    }
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    if (s->count > SANITIZER_COUNT) {
        s->count = SANITIZER_COUNT;
        s->machine_limit = 0;
        snprintf(s->because, sizeof s->because, "%s build measures correctness, not capacity: at most %d threads",
                 SANITIZER_BUILD, SANITIZER_COUNT);
    }
#endif
    if (s->count != requested) {
        char text[32];
        snprintf(text, sizeof text, "%" PRIu64, s->count);
        tl_set_param(ctx, "count", text);
        tl_models_scaling_extra(ctx, s);
    }
    return s->count;
}
