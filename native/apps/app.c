/* app.c - the command line of every threadlab-app-PLATFORM program, the
 * native protocol of docs/native-protocol.md (docs/study.md, "The programs"):
 *
 *   threadlab-app-P --list      the kernels, one JSON object each (study.apps.K)
 *   threadlab-app-P --env       its build and platform, one JSON object
 *   threadlab-app-P --run study.apps.K --param threads=T [--param size=N]
 *                   [--param priority=P] [--placement different-cpus] [--inject-error]
 *   threadlab-app-P --probe [--param priority=P]
 *
 * A run applies the priority to itself before any worker exists (the
 * workers inherit it), runs the kernel on T workers of the platform (each
 * bound to the t-th CPU this process may use with --placement
 * different-cpus), times the parallel part (thread start to the combined
 * result) with CLOCK_MONOTONIC_RAW, verifies the result, and prints one
 * record (libthreadlab-record): the time as its one sample, the result's
 * verification, the workers' placement and priority as checks.
 *
 * Exit status, as every program of the protocol: 0 a record was written
 * (measured, or unsupported here: a priority the user may not set, more
 * pinned threads than CPUs; a wrong result is a measured record whose
 * "verified" check failed); 1 the platform failed (a failed record);
 * 2 usage error (message on stderr, no record).  --probe: 0 the priority
 * may be set here, 3 not (a JSON object with the reason).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "threadlab/apps.h"
#include "threadlab/compiler.h"
#include "threadlab/json.h"
#include "threadlab/record.h"

#include "kernel.h"

#ifndef THREADLAB_APP_CFLAGS
#define THREADLAB_APP_CFLAGS "unknown"
#endif
#ifndef THREADLAB_BUILD_TYPE
#define THREADLAB_BUILD_TYPE "unknown"
#endif

enum { EXIT_RECORD = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_REFUSED = 3 };
#define BENCHMARK_PREFIX "study.apps."
#define TIME_QUANTITY "wall time of the parallel part (workers start to combined result)"
#define MAX_WORKERS 4096

static const char *program = "threadlab-app";

/* The kernels' operands, read at run time so nothing can be folded. */
static volatile unsigned long operand_imul = 7, operand_iadd = 3;
static volatile double operand_fmul = 3.0, operand_fadd = 1.5;

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: error: ", program);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see %s --help)\n", program);
    exit(EXIT_USAGE);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int arch_bits(void)
{
    return (int)(sizeof(void *) * CHAR_BIT);
}

/* ------------------------------------------------------------ priority */

typedef enum { PRIO_NORMAL = 0, PRIO_NICE, PRIO_FIFO, PRIO_RR, PRIO_BATCH, PRIO_IDLE } prio_kind;

typedef struct {
    prio_kind kind;
    int value; /* nice for PRIO_NICE, real-time priority for FIFO/RR */
    const char *text;
} priority;

static priority parse_priority(const char *text)
{
    priority p = {PRIO_NORMAL, 0, text};
    char *end;
    long v;
    if (strcmp(text, "normal") == 0)
        return p;
    if (strcmp(text, "batch") == 0) {
        p.kind = PRIO_BATCH;
        return p;
    }
    if (strcmp(text, "idle") == 0) {
        p.kind = PRIO_IDLE;
        return p;
    }
    if (strncmp(text, "nice:", 5) == 0) {
        errno = 0;
        v = strtol(text + 5, &end, 10);
        if (errno || end == text + 5 || *end || v < -20 || v > 19)
            usage_error("--priority %s: the nice value must be an integer from -20 to 19", text);
        p.kind = PRIO_NICE;
        p.value = (int)v;
        return p;
    }
    if (strncmp(text, "fifo:", 5) == 0 || strncmp(text, "rr:", 3) == 0) {
        int fifo = text[0] == 'f';
        const char *number = text + (fifo ? 5 : 3);
        int policy = fifo ? SCHED_FIFO : SCHED_RR;
        int lo = sched_get_priority_min(policy), hi = sched_get_priority_max(policy);
        errno = 0;
        v = strtol(number, &end, 10);
        if (errno || end == number || *end || v < lo || v > hi)
            usage_error("--priority %s: the real-time priority must be an integer from %d to %d", text, lo, hi);
        p.kind = fifo ? PRIO_FIFO : PRIO_RR;
        p.value = (int)v;
        return p;
    }
    usage_error("--priority %s: expected normal, nice:N (-20..19), fifo:P, rr:P (1..99), batch or idle", text);
}

static int expected_policy(const priority *p)
{
    switch (p->kind) {
    case PRIO_FIFO: return SCHED_FIFO;
    case PRIO_RR: return SCHED_RR;
    case PRIO_BATCH: return SCHED_BATCH;
    case PRIO_IDLE: return SCHED_IDLE;
    default: return SCHED_OTHER;
    }
}

static const char *policy_name(int policy)
{
    switch (policy) {
    case SCHED_OTHER: return "SCHED_OTHER";
    case SCHED_FIFO: return "SCHED_FIFO";
    case SCHED_RR: return "SCHED_RR";
    case SCHED_BATCH: return "SCHED_BATCH";
    case SCHED_IDLE: return "SCHED_IDLE";
    default: return "unknown";
    }
}

/* Applies the priority to the calling thread, which is still the only one:
 * the workers inherit it. Returns 0, or an errno value with the call that
 * failed in what. */
static int apply_priority(const priority *p, const char **what)
{
    struct sched_param param = {0};
    switch (p->kind) {
    case PRIO_NORMAL:
        return 0;
    case PRIO_NICE:
        *what = "setpriority";
        return setpriority(PRIO_PROCESS, 0, p->value) == 0 ? 0 : errno;
    case PRIO_FIFO:
    case PRIO_RR:
    case PRIO_BATCH:
    case PRIO_IDLE:
        param.sched_priority = p->value; /* 0 for batch and idle */
        *what = "sched_setscheduler";
        return sched_setscheduler(0, expected_policy(p), &param) == 0 ? 0 : errno;
    }
    return 0;
}

/* ------------------------------------------------------------- options */

typedef struct {
    const tl_app_kernel *kernel;
    unsigned threads;
    uint64_t size;
    int pin, inject_error;
    priority prio;
    char threads_text[24], size_text[24];
} options;

enum mode { MODE_NONE, MODE_LIST, MODE_ENV, MODE_RUN, MODE_PROBE };

static unsigned long long parse_count(const char *option, const char *text, unsigned long long max)
{
    char *end;
    errno = 0;
    /* Integers, or a float notation that is an integer: 4e8. */
    double d = strtod(text, &end);
    if (errno || end == text || *end || !(d >= 1) || d > (double)max || d != floor(d))
        usage_error("%s %s: expected an integer from 1 to %llu", option, text, max);
    unsigned long long v = strtoull(text, &end, 10);
    if (*end) /* float notation */
        v = (unsigned long long)d;
    return v;
}

static void print_help(void)
{
    printf("usage: %s --list | --env | --help\n"
           "       %s --run study.apps.K --param threads=T [--param size=N] [--param priority=P]\n"
           "           [--placement unbound|different-cpus] [--inject-error]\n"
           "       %s --probe [--param priority=P]\n\n"
           "Runs one kernel of the application study on T %s workers, verifies its result and\n"
           "prints one record (docs/study.md, docs/native-protocol.md).\n\n"
           "  --run study.apps.K   K: mips, mflops, pi or trapezoid (--list)\n"
           "  threads=T            workers, 1..%d\n"
           "  size=N               problem size in the kernel's unit (default: the kernel's; --list)\n"
           "  priority=P           normal, nice:N, fifo:P, rr:P, batch or idle (applied before the workers start)\n"
           "  --placement P        unbound (the OS places the workers, the default) or different-cpus (worker t\n"
           "                       bound to the t-th CPU this process may use)\n"
           "  --inject-error       TEST HOOK: corrupt the result so that verification must fail\n"
           "  --probe              apply the priority, say whether it may be set here, run nothing\n\n"
           "exit status: 0 a record (measured or unsupported here), 1 the platform failed, 2 usage error;\n"
           "--probe: 0 allowed, 3 refused\n",
           program, program, program, tl_app_platform_name, MAX_WORKERS);
}

static void set_param(options *o, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (!eq)
        usage_error("--param %s: expected NAME=VALUE", assignment);
    size_t n = (size_t)(eq - assignment);
    const char *value = eq + 1;
    if (n == 7 && strncmp(assignment, "threads", n) == 0)
        o->threads = (unsigned)parse_count("threads", value, MAX_WORKERS);
    else if (n == 4 && strncmp(assignment, "size", n) == 0)
        o->size = parse_count("size", value, 1000000000000000ull);
    else if (n == 8 && strncmp(assignment, "priority", n) == 0)
        o->prio = parse_priority(value);
    else
        usage_error("--param %s: the study's kernels have the parameters threads, size and priority", assignment);
}

static options parse_options(int argc, char **argv, enum mode *mode)
{
    options o = {0};
    o.prio = parse_priority("normal");
    *mode = MODE_NONE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE()                                                                               \
    do {                                                                                           \
        if (!value)                                                                                \
            usage_error("%s needs a value", a);                                                    \
        i++;                                                                                       \
    } while (0)
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_help();
            exit(0);
        } else if (strcmp(a, "--list") == 0) {
            *mode = MODE_LIST;
        } else if (strcmp(a, "--env") == 0) {
            *mode = MODE_ENV;
        } else if (strcmp(a, "--probe") == 0) {
            *mode = MODE_PROBE;
        } else if (strcmp(a, "--run") == 0) {
            NEED_VALUE();
            *mode = MODE_RUN;
            size_t prefix = strlen(BENCHMARK_PREFIX);
            o.kernel = strncmp(value, BENCHMARK_PREFIX, prefix) == 0 ? tl_app_find_kernel(value + prefix) : NULL;
            if (!o.kernel)
                usage_error("--run %s: expected study.apps.K with K one of mips, mflops, pi, trapezoid", value);
        } else if (strcmp(a, "--param") == 0) {
            NEED_VALUE();
            set_param(&o, value);
        } else if (strcmp(a, "--placement") == 0) {
            NEED_VALUE();
            if (strcmp(value, "different-cpus") == 0)
                o.pin = 1;
            else if (strcmp(value, "unbound") != 0)
                usage_error("--placement %s: expected unbound or different-cpus", value);
        } else if (strcmp(a, "--inject-error") == 0) {
            o.inject_error = 1;
        } else {
            usage_error("unknown option '%s'", a);
        }
#undef NEED_VALUE
    }
    if (*mode == MODE_NONE)
        usage_error("one of --list, --env, --run or --probe is required");
    if (*mode != MODE_RUN)
        return o;
    if (!o.threads)
        usage_error("--param threads=T is required");
    if (!o.size)
        o.size = o.kernel->default_size;
    if (o.size % o.kernel->ops_per_item)
        usage_error("size=%llu: %s counts %s in items of %u, so the size must be a multiple of %u",
                    (unsigned long long)o.size, o.kernel->name, o.kernel->size_unit, o.kernel->ops_per_item,
                    o.kernel->ops_per_item);
    snprintf(o.threads_text, sizeof o.threads_text, "%u", o.threads);
    snprintf(o.size_text, sizeof o.size_text, "%llu", (unsigned long long)o.size);
    return o;
}

/* --------------------------------------------------------------- modes */

static void string_list(tl_json *j, const char *first, const char *second)
{
    tl_json_begin_array(j);
    tl_json_string(j, first);
    if (second)
        tl_json_string(j, second);
    tl_json_end_array(j);
}

static void param(tl_json *j, const char *name, const char *help, const char *value, const char *quick)
{
    tl_json_begin_object(j);
    tl_json_key(j, "name"); tl_json_string(j, name);
    tl_json_key(j, "help"); tl_json_string(j, help);
    tl_json_key(j, "values"); string_list(j, value, NULL);
    tl_json_key(j, "quick_values"); string_list(j, quick, NULL);
    tl_json_end_object(j);
}

/* --list: each kernel as a benchmark of the protocol, with what the study
 * needs to size it (its unit, its sizes, the item it counts in). */
static void print_list(void)
{
    char threads[16];
    snprintf(threads, sizeof threads, "%u", MAX_WORKERS);
    for (const tl_app_kernel *const *k = tl_app_kernels; *k; k++) {
        char name[64], size[24], quick[24];
        snprintf(name, sizeof name, BENCHMARK_PREFIX "%s", (*k)->name);
        snprintf(size, sizeof size, "%llu", (unsigned long long)(*k)->default_size);
        snprintf(quick, sizeof quick, "%llu", (unsigned long long)(*k)->quick_size);
        tl_json j;
        tl_json_init(&j);
        tl_json_begin_object(&j);
        tl_json_key(&j, "benchmark"); tl_json_string(&j, name);
        tl_json_key(&j, "model"); tl_json_string(&j, tl_app_platform_name);
        tl_json_key(&j, "suite"); tl_json_string(&j, "study");
        tl_json_key(&j, "summary"); tl_json_string(&j, (*k)->summary);
        tl_json_key(&j, "quantity"); tl_json_string(&j, TIME_QUANTITY);
        tl_json_key(&j, "unit"); tl_json_string(&j, "s");
        tl_json_key(&j, "threads"); tl_json_int(&j, 1);
        tl_json_key(&j, "placements"); string_list(&j, "unbound", "different-cpus");
        tl_json_key(&j, "default_placements"); string_list(&j, "unbound", NULL);
        tl_json_key(&j, "params");
        tl_json_begin_array(&j);
        param(&j, "threads", "worker threads, 1.. (required)", "1", "1");
        param(&j, "size", "problem size in the kernel's unit", size, quick);
        param(&j, "priority", "scheduling of the process: normal, nice:N, fifo:P, rr:P, batch or idle", "normal",
              "normal");
        tl_json_end_array(&j);
        tl_json_key(&j, "kernel"); tl_json_string(&j, (*k)->name);
        tl_json_key(&j, "size_unit"); tl_json_string(&j, (*k)->size_unit);
        tl_json_key(&j, "rate_unit"); tl_json_string(&j, (*k)->rate_unit);
        tl_json_key(&j, "rate_quantity"); tl_json_string(&j, (*k)->quantity);
        tl_json_key(&j, "ops_per_item"); tl_json_int(&j, (*k)->ops_per_item);
        tl_json_key(&j, "default_size"); tl_json_int(&j, (long long)(*k)->default_size);
        tl_json_key(&j, "quick_size"); tl_json_int(&j, (long long)(*k)->quick_size);
        tl_json_key(&j, "paper_size"); tl_json_int(&j, (long long)(*k)->paper_size);
        tl_json_end_object(&j);
        tl_json_emit(&j);
    }
}

static void print_env(void)
{
    char arch[8];
    snprintf(arch, sizeof arch, "%d", arch_bits());
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "program"); tl_json_string(&j, program);
    tl_json_key(&j, "platform"); tl_json_string(&j, tl_app_platform_name);
    tl_json_key(&j, "arch"); tl_json_string(&j, arch);
    tl_json_key(&j, "runtime"); tl_json_string(&j, tl_app_platform_runtime());
    tl_json_key(&j, "compiler"); tl_json_string(&j, "gcc " __VERSION__);
    tl_json_key(&j, "cflags"); tl_json_string(&j, THREADLAB_APP_CFLAGS);
    tl_json_key(&j, "build_type"); tl_json_string(&j, THREADLAB_BUILD_TYPE);
    tl_json_key(&j, "sanitizer"); tl_json_string(&j, tl_sanitizer_name());
    tl_json_key(&j, "libc"); tl_json_string(&j, gnu_get_libc_version());
    tl_json_key(&j, "long_bits"); tl_json_int(&j, (int)(sizeof(long) * CHAR_BIT));
    tl_json_end_object(&j);
    tl_json_emit(&j);
}

/* The CPUs this process may use, in order; their count. */
static unsigned allowed_cpus(int *cpus, unsigned max, char *text, size_t textlen)
{
    cpu_set_t set;
    unsigned n = 0;
    size_t used = 0;
    text[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        cpus[n++] = c;
        if (used < textlen)
            used += (size_t)snprintf(text + used, textlen - used, "%s%d", n > 1 ? "," : "", c);
    }
    return n;
}

/* The record of a run, whatever its status: the fields every run shares
 * are filled here, the caller's are left. */
static tl_record base_record(const options *o, const char *name, const char **names, const char **values)
{
    names[0] = "threads"; values[0] = o->threads_text;
    names[1] = "size"; values[1] = o->size_text;
    names[2] = "priority"; values[2] = o->prio.text;
    return (tl_record){
        .benchmark = name, .model = tl_app_platform_name, .param_names = names, .param_values = values,
        .nparams = 3, .placement = o->pin ? "different-cpus" : "unbound", .unit = "s", .quantity = TIME_QUANTITY,
        .clock = "monotonic_raw", .overhead_ns = NAN,
    };
}

/* A run that measured nothing: unsupported here (exit 0) or failed (exit 1). */
static int not_run(const options *o, const char *status, const char *reason)
{
    char name[64];
    const char *names[3], *values[3];
    snprintf(name, sizeof name, BENCHMARK_PREFIX "%s", o->kernel->name);
    tl_record r = base_record(o, name, names, values);
    r.status = status;
    r.reason = reason;
    tl_record_write(&r, stdout);
    fprintf(stderr, "%s: %s: %s\n", program, status, reason);
    return strcmp(status, "failed") == 0 ? EXIT_FAILED : EXIT_RECORD;
}

/* --probe: whether the priority may be set here (0), or why not (3). */
static int probe(const options *o)
{
    const char *what = "";
    int rc = apply_priority(&o->prio, &what);
    char reason[256] = "";
    if (rc != 0)
        snprintf(reason, sizeof reason, "priority %s: %s: %s%s", o->prio.text, what, strerror(rc),
                 rc == EPERM || rc == EACCES ? " (needs CAP_SYS_NICE, or a high enough RLIMIT_NICE / RLIMIT_RTPRIO)"
                                             : "");
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "status"); tl_json_string(&j, rc == 0 ? "ok" : "unsupported");
    tl_json_key(&j, "reason"); tl_json_string(&j, rc == 0 ? NULL : reason);
    tl_json_key(&j, "platform"); tl_json_string(&j, tl_app_platform_name);
    tl_json_key(&j, "priority"); tl_json_string(&j, o->prio.text);
    tl_json_key(&j, "policy"); tl_json_string(&j, policy_name(sched_getscheduler(0)));
    tl_json_key(&j, "nice"); tl_json_int(&j, getpriority(PRIO_PROCESS, 0));
    tl_json_end_object(&j);
    tl_json_emit(&j);
    return rc == 0 ? 0 : EXIT_REFUSED;
}

static void cpu_text(const tl_app_slot *slots, unsigned n, int end, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (unsigned t = 0; t < n && used < len; t++)
        used += (size_t)snprintf(out + used, len - used, "%s%d", t ? "," : "", end ? slots[t].cpu_end : slots[t].cpu_start);
}

int main(int argc, char **argv)
{
    double main_start = now_s();
    const char *slash = strrchr(argv[0], '/');
    program = slash ? slash + 1 : argv[0];
    enum mode mode;
    options o = parse_options(argc, argv, &mode);
    if (mode == MODE_LIST) {
        print_list();
        return 0;
    }
    if (mode == MODE_ENV) {
        print_env();
        return 0;
    }
    if (mode == MODE_PROBE)
        return probe(&o);

    char reason[512];
    static int cpus[MAX_WORKERS];
    char allowed_text[256];
    unsigned ncpus = allowed_cpus(cpus, MAX_WORKERS, allowed_text, sizeof allowed_text);
    if (o.pin && o.threads > ncpus) {
        snprintf(reason, sizeof reason,
                 "pinning %u threads to distinct CPUs needs %u CPUs, but this process may use %u (CPUs %s)",
                 o.threads, o.threads, ncpus, allowed_text);
        return not_run(&o, "unsupported", reason);
    }
    const char *what = "";
    int rc = apply_priority(&o.prio, &what);
    if (rc != 0) {
        snprintf(reason, sizeof reason, "priority %s: %s: %s%s", o.prio.text, what, strerror(rc),
                 rc == EPERM || rc == EACCES ? " (needs CAP_SYS_NICE, or a high enough RLIMIT_NICE / RLIMIT_RTPRIO)"
                                             : "");
        return not_run(&o, rc == EPERM || rc == EACCES ? "unsupported" : "failed", reason);
    }

    tl_app_operands ops = {
        .imul = operand_imul, .iadd = operand_iadd, .fmul = operand_fmul, .fadd = operand_fadd,
        .items = o.size / o.kernel->ops_per_item,
    };
    tl_app_slot *slots = aligned_alloc(64, sizeof(tl_app_slot) * o.threads);
    if (!slots)
        return not_run(&o, "failed", "out of memory");
    memset(slots, 0, sizeof(tl_app_slot) * o.threads);
    tl_app_job job = {
        .kernel = o.kernel, .ops = &ops, .workers = o.threads,
        .cpus = o.pin ? cpus : NULL, .slots = slots,
    };
    tl_app_partial *parts = calloc(o.threads, sizeof *parts);
    if (!parts)
        return not_run(&o, "failed", "out of memory");

    /* The parallel part: the workers start, compute, end, and their
     * partial results are combined. */
    tl_app_verdict verdict = {0};
    double t0 = now_s();
    rc = tl_app_platform_run(&job, reason, sizeof reason);
    if (rc == 0) {
        for (unsigned t = 0; t < o.threads; t++)
            parts[t] = slots[t].partial;
        o.kernel->verdict(&ops, parts, o.threads, o.inject_error, &verdict);
    }
    double t1 = now_s();
    if (rc != 0)
        return not_run(&o, rc > 0 ? "unsupported" : "failed", reason);

    /* What the workers saw. */
    unsigned ran = 0, placed = 0, prioritized = 0;
    int want_policy = expected_policy(&o.prio);
    for (unsigned t = 0; t < o.threads; t++) {
        const tl_app_slot *s = &slots[t];
        ran += s->ran != 0;
        if (!o.pin || (s->pin_error == 0 && s->cpu_start == cpus[t] && s->cpu_end == cpus[t]))
            placed++;
        int nice_ok = o.prio.kind != PRIO_NICE || s->nice == o.prio.value;
        int policy_ok = o.prio.kind == PRIO_NORMAL || (s->policy & ~SCHED_RESET_ON_FORK) == want_policy;
        prioritized += nice_ok && policy_ok;
    }
    uint64_t items = tl_app_items(parts, o.threads);
    int covered = ran == o.threads && items == ops.items;
    int verified = verdict.verified && covered;
    double time_s = t1 - t0;

    char verdict_text[512], placement_text[640], priority_text[256], starts[256], ends[256], arch[8];
    if (!covered)
        snprintf(verdict_text, sizeof verdict_text, "the workers computed %llu of %llu items (%u of %u workers ran)",
                 (unsigned long long)items, (unsigned long long)ops.items, ran, o.threads);
    else if (!verdict.verified)
        snprintf(verdict_text, sizeof verdict_text, "wrong result: %.17g, expected %.17g within %.3g (error %.3g)%s",
                 verdict.result, verdict.expected, verdict.bound, verdict.error,
                 o.inject_error ? " [--inject-error]" : "");
    else
        snprintf(verdict_text, sizeof verdict_text, "the result matched the expected value within %.3g (error %.3g)",
                 verdict.bound, verdict.error);
    cpu_text(slots, o.threads, 0, starts, sizeof starts);
    cpu_text(slots, o.threads, 1, ends, sizeof ends);
    snprintf(placement_text, sizeof placement_text, "%u of %u workers ran on their CPU from start to end "
             "(started on %s, ended on %s)", placed, o.threads, starts, ends);
    int policy = slots[0].policy & ~SCHED_RESET_ON_FORK;
    snprintf(priority_text, sizeof priority_text, "%u of %u workers ran with the priority's scheduling "
             "(worker 0: %s, nice %d)", prioritized, o.threads, policy_name(policy), slots[0].nice);
    snprintf(arch, sizeof arch, "%d", arch_bits());

    tl_record_check checks[3];
    unsigned nchecks = 0;
    checks[nchecks++] = (tl_record_check){"verified", verified, verdict.error, verdict_text};
    if (o.pin)
        checks[nchecks++] = (tl_record_check){"placement", placed == o.threads, placed, placement_text};
    if (o.prio.kind != PRIO_NORMAL)
        checks[nchecks++] = (tl_record_check){"priority", prioritized == o.threads, prioritized, priority_text};
    double integer_result = verdict.integer ? (double)verdict.iresult : verdict.result;
    double integer_expected = verdict.integer ? (double)verdict.iexpected : verdict.expected;
    tl_record_extra extras[] = {
        {"kernel", o.kernel->name, 0},
        {"platform", tl_app_platform_name, 0},
        {"arch", arch, 0},
        {"runtime", tl_app_platform_runtime(), 0},
        {"size_unit", o.kernel->size_unit, 0},
        {"items", NULL, (double)ops.items},
        {"rate", NULL, (double)o.size / time_s / 1e6},
        {"rate_unit", o.kernel->rate_unit, 0},
        {"result", NULL, integer_result},
        {"expected", NULL, integer_expected},
        {"error", NULL, verdict.error},
        {"error_bound", NULL, verdict.bound},
        {"policy", policy_name(policy), 0},
        {"nice", NULL, slots[0].nice},
        {"cpus_end", ends, 0},
        {"main_s", NULL, now_s() - main_start},
    };
    int placed_cpus[MAX_WORKERS];
    for (unsigned t = 0; t < o.threads; t++)
        placed_cpus[t] = o.pin ? slots[t].cpu_start : -1;
    tl_record_stop stop = {"fixed", NAN, "fixed", 1, 1, time_s};
    char name[64];
    const char *names[3], *values[3];
    snprintf(name, sizeof name, BENCHMARK_PREFIX "%s", o.kernel->name);
    tl_record r = base_record(&o, name, names, values);
    r.status = "ok";
    r.cpus = placed_cpus;
    r.ncpus = o.threads;
    r.samples = &time_s;
    r.nsamples = 1;
    r.iterations = 1;
    r.actions_per_iteration = 1;
    r.stop = &stop;
    r.checks = checks;
    r.nchecks = nchecks;
    r.extras = extras;
    r.nextras = sizeof extras / sizeof extras[0];
    tl_record_write(&r, stdout);
    free(parts);
    free(slots);
    if (!verified)
        fprintf(stderr, "%s: %s: %s\n", program, o.kernel->name, verdict_text);
    return EXIT_RECORD;
}
