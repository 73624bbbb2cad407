/* app.c - the command line of every threadlab-app-PLATFORM program
 * (docs/study.md, "The programs"):
 *
 *   threadlab-app-P --kernel K --threads T [--size N | --quick | --paper]
 *                   [--pin] [--priority P] [--inject-error]
 *   threadlab-app-P --probe [--priority P] [--pin --threads T]
 *   threadlab-app-P --kernels
 *   threadlab-app-P --env
 *
 * A run applies the priority to itself before any worker exists (the
 * workers inherit it), runs the kernel on T workers of the platform, times
 * the parallel part (thread start to the combined result) with
 * CLOCK_MONOTONIC_RAW, verifies the result, and prints one JSON object.
 *
 * Exit status: 0 verified; 1 the result is wrong (the JSON says by how
 * much); 2 usage error (message on stderr, no JSON); 3 unsupported here
 * (JSON with the reason: a priority the user may not set, more pinned
 * threads than CPUs); 4 the platform failed (JSON with the reason).
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

#include "kernel.h"

#ifndef THREADLAB_APP_CFLAGS
#define THREADLAB_APP_CFLAGS "unknown"
#endif
#ifndef THREADLAB_BUILD_TYPE
#define THREADLAB_BUILD_TYPE "unknown"
#endif

enum { EXIT_VERIFIED = 0, EXIT_WRONG = 1, EXIT_USAGE = 2, EXIT_UNSUPPORTED = 3, EXIT_PLATFORM = 4 };
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

/* ------------------------------------------------------------ JSON out */

static void json_string(const char *s)
{
    if (!s) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void json_number(double value)
{
    if (isfinite(value))
        printf("%.17g", value);
    else
        fputs("null", stdout);
}

static void key(const char *name, int first)
{
    printf("%s\"%s\":", first ? "" : ",", name);
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
    int size_given, quick, paper, pin, inject_error, probe;
    priority prio;
} options;

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
    printf("usage: %s --kernel K --threads T [--size N | --quick | --paper] [--pin] [--priority P]\n"
           "       %s --probe [--priority P] [--pin --threads T]\n"
           "       %s --kernels | --env | --help\n\n"
           "Runs one kernel of the application study on T %s workers, verifies its result and\n"
           "prints one JSON object (docs/study.md).\n\n"
           "  --kernel K       mips, mflops, pi or trapezoid\n"
           "  --threads T      workers, 1..%d\n"
           "  --size N         problem size in the kernel's unit (--kernels lists them)\n"
           "  --quick/--paper  the kernel's quick or paper size instead of its default\n"
           "  --pin            worker t bound to the t-th CPU this process may use\n"
           "  --priority P     normal, nice:N, fifo:P, rr:P, batch or idle (applied before the workers start)\n"
           "  --inject-error   TEST HOOK: corrupt the result so that verification must fail\n"
           "  --probe          apply the priority (and check the pinning), print the verdict, run nothing\n\n"
           "exit status: 0 verified, 1 wrong result, 2 usage error, 3 unsupported here, 4 platform failure\n",
           program, program, program, tl_app_platform_name, MAX_WORKERS);
}

static options parse_options(int argc, char **argv, int *mode)
{
    options o = {0};
    o.prio = parse_priority("normal");
    *mode = 0;
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
        } else if (strcmp(a, "--kernels") == 0) {
            *mode = 'k';
        } else if (strcmp(a, "--env") == 0) {
            *mode = 'e';
        } else if (strcmp(a, "--probe") == 0) {
            o.probe = 1;
        } else if (strcmp(a, "--kernel") == 0) {
            NEED_VALUE();
            o.kernel = tl_app_find_kernel(value);
            if (!o.kernel)
                usage_error("--kernel %s: expected one of mips, mflops, pi, trapezoid", value);
        } else if (strcmp(a, "--threads") == 0) {
            NEED_VALUE();
            o.threads = (unsigned)parse_count("--threads", value, MAX_WORKERS);
        } else if (strcmp(a, "--size") == 0) {
            NEED_VALUE();
            o.size = parse_count("--size", value, 1000000000000000ull);
            o.size_given = 1;
        } else if (strcmp(a, "--quick") == 0) {
            o.quick = 1;
        } else if (strcmp(a, "--paper") == 0) {
            o.paper = 1;
        } else if (strcmp(a, "--pin") == 0) {
            o.pin = 1;
        } else if (strcmp(a, "--priority") == 0) {
            NEED_VALUE();
            o.prio = parse_priority(value);
        } else if (strcmp(a, "--inject-error") == 0) {
            o.inject_error = 1;
        } else {
            usage_error("unknown option '%s'", a);
        }
#undef NEED_VALUE
    }
    if (*mode)
        return o;
    if (o.probe) {
        if (o.pin && !o.threads)
            usage_error("--probe --pin needs --threads");
        return o;
    }
    if (!o.kernel)
        usage_error("--kernel is required");
    if (!o.threads)
        usage_error("--threads is required");
    if (o.size_given + o.quick + o.paper > 1)
        usage_error("give at most one of --size, --quick and --paper");
    if (!o.size_given)
        o.size = o.paper ? o.kernel->paper_size : o.quick ? o.kernel->quick_size : o.kernel->default_size;
    if (o.size % o.kernel->ops_per_item)
        usage_error("--size %llu: %s counts %s in items of %u, so the size must be a multiple of %u",
                    (unsigned long long)o.size, o.kernel->name, o.kernel->size_unit, o.kernel->ops_per_item,
                    o.kernel->ops_per_item);
    return o;
}

/* --------------------------------------------------------------- modes */

static void print_kernels(void)
{
    for (const tl_app_kernel *const *k = tl_app_kernels; *k; k++) {
        putchar('{');
        key("kernel", 1); json_string((*k)->name);
        key("summary", 0); json_string((*k)->summary);
        key("size_unit", 0); json_string((*k)->size_unit);
        key("rate_unit", 0); json_string((*k)->rate_unit);
        key("quantity", 0); json_string((*k)->quantity);
        key("ops_per_item", 0); printf("%u", (*k)->ops_per_item);
        key("default_size", 0); printf("%llu", (unsigned long long)(*k)->default_size);
        key("quick_size", 0); printf("%llu", (unsigned long long)(*k)->quick_size);
        key("paper_size", 0); printf("%llu", (unsigned long long)(*k)->paper_size);
        puts("}");
    }
}

static void print_env(void)
{
    putchar('{');
    key("program", 1); json_string(program);
    key("platform", 0); json_string(tl_app_platform_name);
    key("arch", 0); printf("\"%d\"", arch_bits());
    key("runtime", 0); json_string(tl_app_platform_runtime());
    key("compiler", 0); json_string("gcc " __VERSION__);
    key("cflags", 0); json_string(THREADLAB_APP_CFLAGS);
    key("build_type", 0); json_string(THREADLAB_BUILD_TYPE);
    key("sanitizer", 0); json_string(tl_sanitizer_name());
    key("libc", 0); json_string(gnu_get_libc_version());
    key("long_bits", 0); printf("%d", (int)(sizeof(long) * CHAR_BIT));
    puts("}");
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

/* Prints the JSON of a point that did not run (unsupported or failed). */
static int not_run(const options *o, const char *status, const char *reason, int code)
{
    putchar('{');
    key("status", 1); json_string(status);
    key("reason", 0); json_string(reason);
    key("kernel", 0); json_string(o->kernel ? o->kernel->name : NULL);
    key("platform", 0); json_string(tl_app_platform_name);
    key("arch", 0); printf("\"%d\"", arch_bits());
    key("threads", 0); printf("%u", o->threads);
    key("priority", 0); json_string(o->prio.text);
    key("pinned", 0); fputs(o->pin ? "true" : "false", stdout);
    puts("}");
    fprintf(stderr, "%s: %s: %s\n", program, status, reason);
    return code;
}

int main(int argc, char **argv)
{
    double main_start = now_s();
    const char *slash = strrchr(argv[0], '/');
    program = slash ? slash + 1 : argv[0];
    int mode;
    options o = parse_options(argc, argv, &mode);
    if (mode == 'k') {
        print_kernels();
        return 0;
    }
    if (mode == 'e') {
        print_env();
        return 0;
    }

    char reason[512];
    static int cpus[MAX_WORKERS];
    char cpu_text[256];
    unsigned ncpus = allowed_cpus(cpus, MAX_WORKERS, cpu_text, sizeof cpu_text);
    if (o.pin && o.threads > ncpus) {
        snprintf(reason, sizeof reason,
                 "pinning %u threads to distinct CPUs needs %u CPUs, but this process may use %u (CPUs %s)",
                 o.threads, o.threads, ncpus, cpu_text);
        return not_run(&o, "unsupported", reason, EXIT_UNSUPPORTED);
    }
    const char *what = "";
    int rc = apply_priority(&o.prio, &what);
    if (rc != 0) {
        snprintf(reason, sizeof reason, "priority %s: %s: %s%s", o.prio.text, what, strerror(rc),
                 rc == EPERM || rc == EACCES ? " (needs CAP_SYS_NICE, or a high enough RLIMIT_NICE / RLIMIT_RTPRIO)"
                                             : "");
        return not_run(&o, "unsupported", reason, rc == EPERM || rc == EACCES ? EXIT_UNSUPPORTED : EXIT_PLATFORM);
    }
    if (o.probe) {
        putchar('{');
        key("status", 1); json_string("ok");
        key("platform", 0); json_string(tl_app_platform_name);
        key("arch", 0); printf("\"%d\"", arch_bits());
        key("priority", 0); json_string(o.prio.text);
        key("policy", 0); json_string(policy_name(sched_getscheduler(0)));
        key("nice", 0); printf("%d", getpriority(PRIO_PROCESS, 0));
        key("cpus", 0); json_string(cpu_text);
        puts("}");
        return 0;
    }

    tl_app_operands ops = {
        .imul = operand_imul, .iadd = operand_iadd, .fmul = operand_fmul, .fadd = operand_fadd,
        .items = o.size / o.kernel->ops_per_item,
    };
    tl_app_slot *slots = aligned_alloc(64, sizeof(tl_app_slot) * o.threads);
    if (!slots)
        return not_run(&o, "failed", "out of memory", EXIT_PLATFORM);
    memset(slots, 0, sizeof(tl_app_slot) * o.threads);
    tl_app_job job = {
        .kernel = o.kernel, .ops = &ops, .workers = o.threads,
        .cpus = o.pin ? cpus : NULL, .slots = slots,
    };
    tl_app_partial *parts = calloc(o.threads, sizeof *parts);
    if (!parts)
        return not_run(&o, "failed", "out of memory", EXIT_PLATFORM);

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
        return not_run(&o, "failed", reason, EXIT_PLATFORM);

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
    double ops_done = (double)o.size;

    putchar('{');
    key("status", 1); json_string(verified ? "ok" : "failed");
    key("reason", 0);
    if (!covered) {
        snprintf(reason, sizeof reason, "the workers computed %llu of %llu items (%u of %u workers ran)",
                 (unsigned long long)items, (unsigned long long)ops.items, ran, o.threads);
        json_string(reason);
    } else if (!verdict.verified) {
        snprintf(reason, sizeof reason, "wrong result: %.17g, expected %.17g within %.3g (error %.3g)%s",
                 verdict.result, verdict.expected, verdict.bound, verdict.error,
                 o.inject_error ? " [--inject-error]" : "");
        json_string(reason);
    } else {
        json_string(NULL);
    }
    key("kernel", 0); json_string(o.kernel->name);
    key("platform", 0); json_string(tl_app_platform_name);
    key("arch", 0); printf("\"%d\"", arch_bits());
    key("runtime", 0); json_string(tl_app_platform_runtime());
    key("threads", 0); printf("%u", o.threads);
    key("size", 0); printf("%llu", (unsigned long long)o.size);
    key("size_unit", 0); json_string(o.kernel->size_unit);
    key("items", 0); printf("%llu", (unsigned long long)ops.items);
    key("time_s", 0); json_number(time_s);
    key("main_s", 0); json_number(now_s() - main_start);
    key("rate", 0); json_number(ops_done / time_s / 1e6);
    key("rate_unit", 0); json_string(o.kernel->rate_unit);
    key("result", 0);
    if (verdict.integer) printf("%llu", (unsigned long long)verdict.iresult); else json_number(verdict.result);
    key("expected", 0);
    if (verdict.integer) printf("%llu", (unsigned long long)verdict.iexpected); else json_number(verdict.expected);
    key("error", 0); json_number(verdict.error);
    key("error_bound", 0); json_number(verdict.bound);
    key("verified", 0); fputs(verified ? "true" : "false", stdout);
    key("inject_error", 0); fputs(o.inject_error ? "true" : "false", stdout);
    key("pinned", 0); fputs(o.pin ? "true" : "false", stdout);
    key("placement_ok", 0); fputs(placed == o.threads ? "true" : "false", stdout);
    key("cpus", 0);
    putchar('[');
    for (unsigned t = 0; t < o.threads; t++)
        printf("%s%d", t ? "," : "", slots[t].cpu_start);
    putchar(']');
    key("cpus_end", 0);
    putchar('[');
    for (unsigned t = 0; t < o.threads; t++)
        printf("%s%d", t ? "," : "", slots[t].cpu_end);
    putchar(']');
    key("priority", 0); json_string(o.prio.text);
    key("policy", 0); json_string(policy_name(slots[0].policy & ~SCHED_RESET_ON_FORK));
    key("nice", 0); printf("%d", slots[0].nice);
    key("priority_ok", 0); fputs(prioritized == o.threads ? "true" : "false", stdout);
    puts("}");
    fflush(stdout);
    free(parts);
    free(slots);
    if (!verified) {
        fprintf(stderr, "%s: %s: %s\n", program, o.kernel->name, reason);
        return EXIT_WRONG;
    }
    return EXIT_VERIFIED;
}
