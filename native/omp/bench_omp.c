/*
 * threadlab-bench-omp - what the libgomp shim adds to a parallel region,
 * measured EPCC-style (docs/omp.md, docs/native-protocol.md).
 *
 *   omp.region.overhead  params construct (parallel, parallel_for) and
 *                        threads (all, 1); a member of the omp suite
 *                        (docs/omp-suite.md)
 *   omp.launch.overhead  what threadlab-omp-run adds to starting a program
 *                        (primitives suite)
 *
 * One point runs in one process that has the shim preloaded and is managed
 * by threadlab-rm.  It times the same empty region two ways, through
 * libgomp's own entry (looked up in libgomp itself: the reference) and
 * through the shim's (what a managed program calls), and writes three
 * records: metric `libgomp`, metric `shim` (time per region, ns) and the
 * derived metric `added` (shim median - libgomp median).
 *
 * When the point's process does not have the shim, run() re-executes the
 * program with LD_PRELOAD set (before anything is printed); when no manager
 * runs, it starts a private one for the point and stops it afterwards, so
 * the shim path measured is always the managed one (checked: `managed`).
 * The private manager's directory is made by mkdtemp and its arena named
 * after it (tl_rm_private_make); the manager is owned by the point's
 * process (--owner): a point killed at its time limit or by Ctrl-C takes
 * its manager, arena and directory with it, and what a killed manager left
 * is swept away by the next point (tl_rm_sweep).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "threadlab/bench.h"
#include "threadlab/omp.h"
#include "threadlab/rm.h"

#include "env.h"
#include "gomp_abi.h"

typedef void (*parallel_fn)(tl_fn, void *, unsigned, unsigned);
typedef void (*loop_fn)(tl_fn, void *, unsigned, long, long, long, long, unsigned);

static char **saved_argv;

#define ENV_PRIVATE "THREADLAB_BENCH_OMP_PRIVATE_RM"

/* ------------------------------------------------------------ locations */

static int manager_running(void)
{
    char name[256], err[256];
    tl_rm_arena_name(name, sizeof name);
    tl_rm_arena a;
    if (tl_rm_open(&a, name, err, sizeof err) != TL_RM_OK)
        return 0;
    int live = tl_rm_manager_fresh(a.hdr, tl_rm_now_ns()) && tl_rm_manager_exists(a.hdr);
    tl_rm_close(&a);
    return live;
}

/* threadlab-rm with the arguments (NULL-terminated); its output is not
 * the point's (the records are on stdout), its errors are. */
static int run_rm(const char *const *args)
{
    char rm[PATH_MAX];
    if (tl_beside_program("threadlab-rm", rm, sizeof rm) != 0)
        return -1;
    char *argv[10] = {rm};
    for (int i = 0; args[i] && i < 8; i++)
        argv[i + 1] = (char *)args[i];
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 1);
        execv(rm, argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void say_removed(const char *line, void *context)
{
    (void)context;
    fprintf(stderr, "threadlab-bench-omp: %s\n", line);
}

/* Makes the point's process the right one: shim preloaded, manager up.
 * Returns 0 to go on measuring here; does not return when it re-executes;
 * -1 after marking the point unsupported. */
static int ensure_managed_process(tl_ctx *ctx)
{
    if (dlsym(RTLD_DEFAULT, "threadlab_omp_state"))
        return 0;
    char shim[PATH_MAX];
    if (tl_omp_find_shim(shim, sizeof shim) != 0) {
        tl_unsupported(ctx, "libthreadlab-omp.so not found (build/lib beside this program, or $THREADLAB_OMP_LIB)");
        return -1;
    }
    if (!manager_running()) {
        tl_rm_sweep(say_removed, NULL);
        char dir[PATH_MAX], arena[256], err[512], owner[32];
        if (tl_rm_private_make(getpid(), dir, sizeof dir, arena, sizeof arena, err, sizeof err) != 0) {
            tl_fail(ctx, "no threadlab-rm running, and a private one needs a directory: %s", err);
            return -1;
        }
        setenv(TL_RM_ENV_DIR, dir, 1);
        setenv(TL_RM_ENV_ARENA, arena, 1);
        /* The re-executed program keeps this pid: it stays the owner. */
        snprintf(owner, sizeof owner, "%d", (int)getpid());
        /* Other load ignored: the harness that reads this point's records
         * is load the manager would see and withhold a CPU for (a team of 1
         * now and then, regions stalled for a quantum: what the point
         * measures is the shim's path with the CPUs the process owns). */
        const char *start[] = {"--quantum-ms", "100", "--other-load", "ignore", "--owner", owner, NULL};
        if (run_rm(start) != 0) {
            tl_rm_dir_remove(dir, err, sizeof err);
            tl_unsupported(ctx, "no threadlab-rm running, and a private one could not be started");
            return -1;
        }
        setenv(ENV_PRIVATE, dir, 1);
    }
    /* The shim alone: the wait policy stays libgomp's, as the reference
     * path's, so that `added` is the interposition's cost only. */
    if (tl_omp_preload(shim) != 0) {
        tl_unsupported(ctx, "LD_PRELOAD is too long to add the shim to");
        return -1;
    }
    setenv("THREADLAB_OMP_QUIET", "1", 1);
    fflush(NULL);
    execv("/proc/self/exe", saved_argv);
    tl_fail(ctx, "cannot re-execute with the shim preloaded: %s", strerror(errno));
    return -1;
}

/* The manager removes its arena and directory as it stops; what stays
 * when it could not stop goes too. */
static void stop_private_manager(void)
{
    const char *dir = getenv(ENV_PRIVATE);
    if (!dir)
        return;
    const char *stop[] = {"--stop", NULL};
    run_rm(stop);
    char err[512];
    if (tl_rm_dir_remove(dir, err, sizeof err) != 0)
        fprintf(stderr, "threadlab-bench-omp: %s\n", err);
}

/* --------------------------------------------------------------- regions */

typedef struct {
    parallel_fn parallel;
    loop_fn loop;
    unsigned nthreads;
    int team;
} region_arg;

static void empty_body(void *p)
{
    region_arg *a = p;
    if (omp_get_thread_num() == 0)
        a->team = omp_get_num_threads();
}

static void loop_body(void *p)
{
    region_arg *a = p;
    if (omp_get_thread_num() == 0)
        a->team = omp_get_num_threads();
    long s, e;
    while (GOMP_loop_nonmonotonic_dynamic_next(&s, &e))
        tl_do_not_optimize(s);
    GOMP_loop_end_nowait();
}

static double time_parallel(void *p, uint64_t iterations)
{
    region_arg *a = p;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++)
        a->parallel(empty_body, a, a->nthreads, 0);
    uint64_t t1 = tl_now();
    return tl_ticks_to_ns(t1 - t0);
}

static double time_parallel_for(void *p, uint64_t iterations)
{
    region_arg *a = p;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++)
        a->loop(loop_body, a, a->nthreads, 0, 64, 1, 4, 0);
    uint64_t t1 = tl_now();
    return tl_ticks_to_ns(t1 - t0);
}

static int run_overhead(tl_ctx *ctx)
{
    if (ensure_managed_process(ctx) != 0)
        return 0;
    const char *construct = tl_param(ctx, "construct");
    const char *threads = tl_param(ctx, "threads");
    int is_loop = !strcmp(construct, "parallel_for");
    if (!is_loop && strcmp(construct, "parallel")) {
        tl_fail(ctx, "construct=%s: expected parallel or parallel_for", construct);
        return 1;
    }
    unsigned nthreads = 0;
    if (!strcmp(threads, "1"))
        nthreads = 1;
    else if (strcmp(threads, "all")) {
        tl_fail(ctx, "threads=%s: expected all or 1", threads);
        return 1;
    }
    const char *symbol = is_loop ? "GOMP_parallel_loop_nonmonotonic_dynamic" : "GOMP_parallel";
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *real = gomp ? dlsym(gomp, symbol) : NULL;
    void *shim = dlsym(RTLD_DEFAULT, symbol);
    Dl_info info;
    if (!real || !shim || real == shim || !dladdr(shim, &info) || !strstr(info.dli_fname, "threadlab-omp")) {
        tl_fail(ctx, "cannot tell libgomp's %s from the shim's", symbol);
        stop_private_manager();
        return 1;
    }
    region_arg via_gomp = {.nthreads = nthreads}, via_shim = {.nthreads = nthreads};
    if (is_loop) {
        via_gomp.loop = (loop_fn)real;
        via_shim.loop = (loop_fn)shim;
    } else {
        via_gomp.parallel = (parallel_fn)real;
        via_shim.parallel = (parallel_fn)shim;
    }
    tl_timing_fn fn = is_loop ? time_parallel_for : time_parallel;
    fn(&via_shim, 3); /* registers with the manager and gets the first allocation */
    fn(&via_gomp, 3);
    int (*state)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "threadlab_omp_state");
    int managed = state && state() == TL_OMP_STATE_MANAGED; /* and still after the shim's timings */
    const char *private_rm = getenv(ENV_PRIVATE) ? "private" : "running";

    tl_measure_spec spec = {.metric = "libgomp", .quantity = "time per empty region through libgomp's own entry"};
    if (tl_measure(ctx, fn, &via_gomp, &spec) != 0) {
        stop_private_manager();
        return 1;
    }
    double gomp_median = tl_pending_median(ctx);
    int gomp_team = via_gomp.team;
    tl_extra_num(ctx, "team", gomp_team);
    tl_emit(ctx);

    spec.metric = "shim";
    spec.quantity = "time per empty region through the shim (managed)";
    if (tl_measure(ctx, fn, &via_shim, &spec) != 0) {
        stop_private_manager();
        return 1;
    }
    double shim_median = tl_pending_median(ctx);
    /* A manager lost during the timings turns the shim's path unmanaged:
     * what was timed is then not the managed path. */
    managed = managed && state() == TL_OMP_STATE_MANAGED;
    tl_check(ctx, "managed", managed, NAN, "the shim %s managed by threadlab-rm (%s manager)",
             managed ? "was" : "was NOT", private_rm);
    tl_check(ctx, "same_team", via_shim.team == gomp_team, via_shim.team,
             "both paths ran teams of %d and %d threads", gomp_team, via_shim.team);
    tl_extra_num(ctx, "team", via_shim.team);
    tl_extra_str(ctx, "manager", private_rm);
    tl_emit(ctx);

    tl_derived(ctx, "added", "time the shim adds to one region (shim median - libgomp median)",
               shim_median - gomp_median, "shim.median - libgomp.median");
    tl_check(ctx, "managed", managed, NAN, "the shim %s managed by threadlab-rm", managed ? "was" : "was NOT");
    tl_extra_num(ctx, "libgomp_median_ns", gomp_median);
    tl_extra_num(ctx, "shim_median_ns", shim_median);
    tl_emit(ctx);
    stop_private_manager();
    return 0;
}

/* ---------------------------------------------------------------- launches */

/* One OpenMP program, started and waited for `iterations` times: the
 * probe with one region, directly (argv) or through the launcher. */
typedef struct {
    char *const *argv;
    int failures;               /* launches that did not exit 0 */
} launch_arg;

static int spawn_wait(char *const *argv, int out_fd)
{
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (out_fd >= 0)
        posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    else
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        return -1;
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static double time_launches(void *p, uint64_t iterations)
{
    launch_arg *a = p;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++)
        if (spawn_wait(a->argv, -1) != 0)
            a->failures++;
    uint64_t t1 = tl_now();
    return tl_ticks_to_ns(t1 - t0);
}

/* The probe's summary line, run through the launcher: the shim's state it
 * reports (-1 without the shim, -2 when there is no summary). */
static int launched_shim_state(char *const *argv)
{
    int fd = memfd_create("threadlab-omp-probe-output", MFD_CLOEXEC); /* no name in /tmp to squat */
    if (fd < 0)
        return -2;
    int rc = spawn_wait(argv, fd);
    char text[4096];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    if (rc != 0 || n <= 0)
        return -2;
    text[n] = '\0';
    const char *at = strstr(text, "\"shim_state\":");
    return at ? atoi(at + strlen("\"shim_state\":")) : -2; /* atoi skips the blank a writer may put */
}

static int run_launch(tl_ctx *ctx)
{
    char probe[PATH_MAX], launcher[PATH_MAX], shim[PATH_MAX];
    if (tl_beside_program("threadlab-omp-probe", probe, sizeof probe) != 0 ||
        tl_beside_program("threadlab-omp-run", launcher, sizeof launcher) != 0 ||
        tl_omp_find_shim(shim, sizeof shim) != 0) {
        tl_unsupported(ctx, "threadlab-omp-probe, threadlab-omp-run or libthreadlab-omp.so is not built beside "
                            "this program");
        return 0;
    }
    /* Both ways start the program with the same environment (the shim's):
     * what differs is the launcher's exec and its work. */
    if (tl_omp_setenv(shim, 0, 1) != 0) {
        tl_unsupported(ctx, "LD_PRELOAD is too long to add the shim to");
        return 0;
    }
    char *direct_argv[] = {probe, "--rounds", "1", "--kinds", "parallel", NULL};
    char *via_argv[] = {launcher, "--quiet", "--", probe, "--rounds", "1", "--kinds", "parallel", NULL};
    launch_arg direct = {.argv = direct_argv}, via = {.argv = via_argv};
    int state = launched_shim_state(via_argv);
    time_launches(&direct, 3); /* warm-up: the program and the shim in the page cache */
    time_launches(&via, 3);
    direct.failures = via.failures = 0;

    tl_measure_spec spec = {.metric = "direct", .quantity = "time to start an OpenMP program with the shim's "
                                                            "environment and wait for its exit (one region)"};
    if (tl_measure(ctx, time_launches, &direct, &spec) != 0)
        return 1;
    double direct_median = tl_pending_median(ctx);
    tl_check(ctx, "exited", direct.failures == 0, direct.failures, "%d launches did not exit 0", direct.failures);
    tl_emit(ctx);

    spec.metric = "launcher";
    spec.quantity = "the same through threadlab-omp-run";
    if (tl_measure(ctx, time_launches, &via, &spec) != 0)
        return 1;
    double via_median = tl_pending_median(ctx);
    tl_check(ctx, "exited", via.failures == 0, via.failures, "%d launches did not exit 0", via.failures);
    tl_check(ctx, "shim_loaded", state >= 0, state, "the launched program %s the shim (its state %d)",
             state >= 0 ? "had" : "did NOT have", state);
    tl_emit(ctx);

    tl_derived(ctx, "added", "time threadlab-omp-run adds to a launch (launcher median - direct median)",
               via_median - direct_median, "launcher.median - direct.median");
    tl_check(ctx, "shim_loaded", state >= 0, state, "the launched program %s the shim",
             state >= 0 ? "had" : "did NOT have");
    tl_extra_num(ctx, "direct_median_ns", direct_median);
    tl_extra_num(ctx, "launcher_median_ns", via_median);
    tl_emit(ctx);
    return 0;
}

static const char *const constructs[] = {"parallel", "parallel_for", NULL};
static const char *const constructs_quick[] = {"parallel", NULL};
static const char *const thread_values[] = {"all", "1", NULL};
static const char *const thread_quick[] = {"all", NULL};

static const tl_param_def overhead_params[] = {
    {.name = "construct", .help = "the region: parallel (GOMP_parallel) or parallel_for "
                                  "(GOMP_parallel_loop_nonmonotonic_dynamic, a dynamic loop of 64 iterations)",
     .values = constructs, .quick_values = constructs_quick},
    {.name = "threads", .help = "all: no num_threads clause (the manager's allocation); 1: num_threads(1), "
                                "where libgomp's own cost is smallest and the shim's shows best",
     .values = thread_values, .quick_values = thread_quick},
    {0},
};

static const tl_bench benches[] = {
    {.name = "omp.region.overhead",
     .model = "openmp",
     .summary = "what the libgomp shim of threadlab-rm adds to one parallel region (EPCC-style, managed)",
     .quantity = "time per empty region",
     .params = overhead_params,
     .run = run_overhead,
     .suite = "omp"},
    TL_BENCH("omp.launch.overhead", "openmp",
             "what threadlab-omp-run (and so `threadlab omp run`'s exec) adds to starting an OpenMP program",
             "time per launch and exit of a one-region OpenMP program",
             0, 0, NULL, run_launch),
    {0},
};

int main(int argc, char **argv)
{
    saved_argv = argv;
    return tl_main(argc, argv, benches);
}
