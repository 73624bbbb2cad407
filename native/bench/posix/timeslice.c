/* timeslice.c - the seed's time slice test.  Two threads share one CPU:
 * main sets a shared variable to 0 and spins until it is not 0; the partner
 * sets it to 1 and spins until it is not 1.  A thread can only see the
 * other's store after the scheduler took the CPU from the other, so each
 * thread sets the variable at the start of its slice and spins through the
 * rest: M rounds of each are 2M slices.
 *
 * The kernel's configured slice is recorded beside the measured one, from
 * every source that may hold it (which ones exist depends on the kernel:
 * CFS had sched_min_granularity_ns, EEVDF has base_slice_ns in debugfs). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "families.h"

enum { MAIN_TURN = 0, PARTNER_TURN = 1, RELEASED = 2 };

/* Anything shorter is not a slice: the threads were not sharing a CPU, or
 * something else than preemption passed the CPU. No kernel slices finer. */
#define SLICE_MIN_NS 50e3

typedef struct {
    _Atomic int turn;
    tl_partner *partner;
    uint64_t rounds;               /* timings; main's only */
    /* Transitions each thread saw, and those that did not see the other
     * thread's store; each written by its own thread, the partner's read by
     * main after joining it. */
    uint64_t seen[2], wrong[2];
} slice_state;

static int spin_while(_Atomic int *turn, int value)
{
    int now;
    while ((now = atomic_load_explicit(turn, memory_order_relaxed)) == value)
        tl_cpu_relax();
    return now;
}

/* One round more than main: the first is the one main aligns on. */
static void slice_partner(void *arg, uint64_t m)
{
    slice_state *s = arg;
    for (uint64_t r = 0; r <= m; r++) {
        atomic_store_explicit(&s->turn, PARTNER_TURN, memory_order_relaxed);
        int now = spin_while(&s->turn, PARTNER_TURN);
        s->seen[1]++;
        s->wrong[1] += now != (r < m ? MAIN_TURN : RELEASED);
    }
}

static double time_slices(void *arg, uint64_t m)
{
    slice_state *s = arg;
    s->rounds++;
    tl_partner_go(s->partner, m);
    /* The partner's first store becomes visible when main gets the CPU
     * back, i.e. at the start of a slice: the clock starts there. */
    while (atomic_load_explicit(&s->turn, memory_order_relaxed) != PARTNER_TURN)
        tl_cpu_relax();
    s->seen[0]++;
    uint64_t wrong = 0;
    uint64_t t0 = tl_now();
    for (uint64_t r = 0; r < m; r++) {
        atomic_store_explicit(&s->turn, MAIN_TURN, memory_order_relaxed);
        wrong += spin_while(&s->turn, MAIN_TURN) != PARTNER_TURN;
    }
    uint64_t t1 = tl_now();
    atomic_store_explicit(&s->turn, RELEASED, memory_order_relaxed);
    tl_partner_wait(s->partner);
    s->seen[0] += m;
    s->wrong[0] += wrong;
    return tl_ticks_to_ns(t1 - t0);
}

/* ------------------------------------------- the kernel's configured slice */

/* Records a number read from a file, or why it could not be read. */
static void extra_file_number(tl_ctx *ctx, const char *key, const char *path)
{
    char text[64], why[128];
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, sizeof why, "unreadable: %s", strerror(errno));
        tl_extra_str(ctx, key, why);
        return;
    }
    size_t len = fread(text, 1, sizeof text - 1, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    text[len] = '\0';
    char *end;
    double v = strtod(text, &end);
    if (err) {
        snprintf(why, sizeof why, "unreadable: %s", strerror(err));
        tl_extra_str(ctx, key, why);
    } else if (end == text) {
        snprintf(why, sizeof why, "not a number: %.60s", text);
        tl_extra_str(ctx, key, why);
    } else {
        tl_extra_num(ctx, key, v);
    }
}

static void *rr_interval(void *arg)
{
    struct timespec *ts = arg;
    return sched_rr_get_interval(0, ts) == 0 ? NULL : (void *)(intptr_t)errno;
}

/* The quantum sched_rr_get_interval reports depends on the asking thread's
 * policy, so a short-lived SCHED_RR thread asks (needs CAP_SYS_NICE); the
 * benchmark's own SCHED_OTHER thread asks too: for the fair class Linux
 * reports the thread's slice rounded to jiffies. */
static void extra_rr_intervals(tl_ctx *ctx)
{
    char why[128];
    struct timespec ts;
    if (sched_rr_get_interval(0, &ts) == 0)
        tl_extra_num(ctx, "sched_rr_get_interval_other_ns", (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec);
    pthread_attr_t attr;
    struct sched_param param = {.sched_priority = 1};
    pthread_t t;
    void *res = NULL;
    pthread_attr_init(&attr);
    int rc = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    if (rc == 0)
        rc = pthread_attr_setschedpolicy(&attr, SCHED_RR);
    if (rc == 0)
        rc = pthread_attr_setschedparam(&attr, &param);
    if (rc == 0)
        rc = tl_attr_place(ctx, 0, &attr);
    if (rc == 0 && (rc = pthread_create(&t, &attr, rr_interval, &ts)) == 0) {
        pthread_join(t, &res);
        rc = (int)(intptr_t)res;
    }
    pthread_attr_destroy(&attr);
    if (rc == 0) {
        tl_extra_num(ctx, "sched_rr_get_interval_rr_ns", (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec);
    } else {
        snprintf(why, sizeof why, "unreadable: %s", strerror(rc));
        tl_extra_str(ctx, "sched_rr_get_interval_rr_ns", why);
    }
}

/* The tick bounds how soon a slice can end without a high-resolution tick.
 * The kernel publishes its configuration, if at all, in /boot or
 * /proc/config.gz; gzip reads the latter. */
static void extra_config_hz(tl_ctx *ctx)
{
    struct utsname u;
    char cmd[512];
    const char *pattern = "'^CONFIG_HZ='";
    if (uname(&u) == 0)
        snprintf(cmd, sizeof cmd, "{ cat /boot/config-%s || gzip -dc /proc/config.gz; } 2>/dev/null | grep %s",
                 u.release, pattern);
    else
        snprintf(cmd, sizeof cmd, "gzip -dc /proc/config.gz 2>/dev/null | grep %s", pattern);
    FILE *p = popen(cmd, "r");
    char line[128] = "";
    if (p) {
        if (!fgets(line, sizeof line, p))
            line[0] = '\0';
        pclose(p);
    }
    long hz = strncmp(line, "CONFIG_HZ=", 10) == 0 ? strtol(line + 10, NULL, 10) : 0;
    if (hz > 0)
        tl_extra_num(ctx, "config_hz", (double)hz);
    else
        tl_extra_str(ctx, "config_hz", "unreadable: no kernel configuration in /boot or /proc/config.gz");
}

static void kernel_slice_extras(tl_ctx *ctx)
{
    extra_file_number(ctx, "proc_sched_min_granularity_ns", "/proc/sys/kernel/sched_min_granularity_ns");
    extra_file_number(ctx, "debugfs_base_slice_ns", "/sys/kernel/debug/sched/base_slice_ns");
    extra_file_number(ctx, "debugfs_min_granularity_ns", "/sys/kernel/debug/sched/min_granularity_ns");
    extra_file_number(ctx, "sched_rr_timeslice_ms", "/proc/sys/kernel/sched_rr_timeslice_ms");
    extra_rr_intervals(ctx);
    extra_config_hz(ctx);
}

/* --------------------------------------------------------------- checks */

static void slice_checks(tl_ctx *ctx, const slice_state *s, uint64_t m)
{
    uint64_t want = s->rounds * (m + 1);
    int ok = s->seen[0] == want && s->seen[1] == want && s->wrong[0] == 0 && s->wrong[1] == 0;
    tl_check(ctx, "alternated", ok, (double)(s->wrong[0] + s->wrong[1]),
             "main saw %llu and the partner %llu transitions of %llu expected; %llu and %llu did not come "
             "from the other thread",
             (unsigned long long)s->seen[0], (unsigned long long)s->seen[1], (unsigned long long)want,
             (unsigned long long)s->wrong[0], (unsigned long long)s->wrong[1]);
    double median = tl_pending_median(ctx);
    tl_check(ctx, "sliced", median >= SLICE_MIN_NS, median,
             "a half round lasted %.0f us; at least %.0f us means the scheduler's preemption passed the CPU",
             median / 1e3, SLICE_MIN_NS / 1e3);
}

static int run_timeslice(tl_ctx *ctx)
{
    static slice_state s;
    memset(&s, 0, sizeof s);
    atomic_store(&s.turn, RELEASED);
    uint64_t m = (uint64_t)tl_param_long(ctx, "switches", 1, 10000);
    s.partner = tl_partner_start(ctx, 1, slice_partner, &s);
    if (!s.partner) {
        tl_fail(ctx, "starting the partner thread: %s", strerror(errno));
        return -1;
    }
    /* Every timing starts aligned on a slice boundary and lasts 2M slices:
     * it is warm by construction, so no warm-up timings are spent. */
    tl_measure_spec spec = {.fixed_iterations = m, .actions_per_iteration = 2, .skip_warmup = 1};
    int rc = tl_measure(ctx, time_slices, &s, &spec);
    tl_partner_stop(s.partner);
    if (rc == 0) {
        slice_checks(ctx, &s, m);
        kernel_slice_extras(ctx);
    }
    return rc;
}

/* A timing lasts 2M slices, and a slice can be a 4 ms tick (HZ=250): M=50
 * keeps a default point (5 timings) near 2 s, M=10 a quick one (3 timings)
 * near 0.25 s. */
static const char *const switches_values[] = {"50", NULL};
static const char *const switches_quick[] = {"10", NULL};

static const tl_param_def slice_params[] = {
    {.name = "switches", .help = "M, the rounds of each thread per timing (2M slices; 1..10000)",
     .values = switches_values, .quick_values = switches_quick, .check = tl_check_positive_int},
    {0},
};

const tl_bench tl_posix_timeslice[] = {
    TL_BENCH("pthread.timeslice", "pthread",
             "two spinning threads on one CPU: the length of a scheduler time slice",
             "time per time slice (total / 2M)",
             2, TL_PLACE_BIT(TL_PLACE_SAME_CPU), slice_params, run_timeslice),
    {0},
};
