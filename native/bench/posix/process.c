/* process.c - the cost of a child process, the baseline thread creation is
 * compared against: fork, vfork and posix_spawn, each followed by waitpid.
 * Every child's exit status is verified: an iteration counts only when the
 * child ran and exited with status 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "families.h"

extern char **environ;

/* A process per iteration: cap the count a calibrated timing may ask for. */
#define PROCESS_MAX_ITERATIONS 5000

typedef struct {
    tl_ctx *ctx;
    const char *what;
    const char *true_path; /* posix_spawn's no-op program */
    pid_t (*start)(const char *path, int *err);
    uint64_t children, bad; /* children reaped, and those not exiting with 0 */
} process_state;

static pid_t start_fork(const char *path, int *err)
{
    (void)path;
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    *err = errno;
    return pid;
}

/* In its own function with no live locals: the child borrows this frame
 * until it exits. */
static TL_NOINLINE pid_t start_vfork(const char *path, int *err)
{
    (void)path;
    pid_t pid = vfork();
    if (pid == 0)
        _exit(0);
    *err = errno;
    return pid;
}

static pid_t start_spawn(const char *path, int *err)
{
    pid_t pid;
    char *argv[] = {(char *)path, NULL};
    int rc = posix_spawn(&pid, path, NULL, NULL, argv, environ);
    if (rc != 0) {
        *err = rc;
        return -1;
    }
    return pid;
}

static int reap(process_state *s, pid_t pid)
{
    int status;
    pid_t got;
    while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (got < 0) {
        tl_fail(s->ctx, "waitpid: %s", strerror(errno));
        return -1;
    }
    s->children++;
    s->bad += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return 0;
}

static double time_process(void *arg, uint64_t iterations)
{
    process_state *s = arg;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++) {
        int err = 0;
        pid_t pid = s->start(s->true_path, &err);
        if (pid < 0) {
            tl_fail(s->ctx, "%s: %s", s->what, strerror(err));
            return -1;
        }
        if (reap(s, pid) != 0)
            return -1;
    }
    uint64_t t1 = tl_now();
    return tl_ticks_to_ns(t1 - t0);
}

static int measure_process(tl_ctx *ctx, process_state *s)
{
    s->ctx = ctx;
    tl_measure_spec spec = {.max_iterations = PROCESS_MAX_ITERATIONS};
    /* The first children fault in the page tables fork copies; calibrating
     * on them would settle on too few iterations. */
    if (time_process(s, 2) < 0 || tl_measure(ctx, time_process, s, &spec) != 0)
        return -1;
    tl_check(ctx, "exit_status", s->bad == 0, (double)s->bad,
             "%llu children reaped; %llu did not exit normally with status 0", (unsigned long long)s->children,
             (unsigned long long)s->bad);
#if defined(__SANITIZE_THREAD__)
    if (s->start == start_vfork)
        tl_extra_str(ctx, "note", "ThreadSanitizer turns vfork into fork: this build does not measure vfork");
#endif
    return 0;
}

static int run_fork(tl_ctx *ctx)
{
    process_state s = {.what = "fork", .start = start_fork};
    return measure_process(ctx, &s);
}

static int run_vfork(tl_ctx *ctx)
{
    process_state s = {.what = "vfork", .start = start_vfork};
    return measure_process(ctx, &s);
}

static int run_spawn(tl_ctx *ctx)
{
    /* A program that exists everywhere and does nothing; /bin is a link
     * to /usr/bin on merged-/usr systems, which one we find is recorded. */
    static const char *const candidates[] = {"/bin/true", "/usr/bin/true"};
    process_state s = {.what = "posix_spawn", .start = start_spawn};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0] && !s.true_path; i++)
        if (access(candidates[i], X_OK) == 0)
            s.true_path = candidates[i];
    if (!s.true_path) {
        tl_unsupported(ctx, "no no-op program to spawn: neither /bin/true nor /usr/bin/true is executable");
        return 0;
    }
    tl_extra_str(ctx, "program", s.true_path);
    return measure_process(ctx, &s);
}

const tl_bench tl_posix_process[] = {
    TL_BENCH("process.fork.wait", "process",
             "fork a child that exits at once, then waitpid",
             "time per fork + _exit + waitpid",
             0, 0, NULL, run_fork),
    TL_BENCH("process.vfork.wait", "process",
             "vfork a child that exits at once, then waitpid",
             "time per vfork + _exit + waitpid",
             0, 0, NULL, run_vfork),
    TL_BENCH("process.posix_spawn.wait", "process",
             "posix_spawn /bin/true, then waitpid",
             "time per posix_spawn of true + waitpid",
             0, 0, NULL, run_spawn),
    {0},
};
