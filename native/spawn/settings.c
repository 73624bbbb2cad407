/* settings.c - the environment the library reads, and how it speaks. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

tlsp_settings tlsp_cfg = {
    .limit_mode = TLSP_LIMIT_AUTO,
    .limit = 0,
    .affinity_cpus = 1,
    .timeout_s = 60.0,
    .spin = 100000,
    .eager_bytes = 4096,
    .quiet = 0,
    .limit_counts = TL_SPAWN_COUNTS_RUNNABLE,
};

static void emit(const char *prefix, const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "%s", prefix);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* One write: lines of concurrent threads and processes do not mix. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void tlsp_note(const char *fmt, ...)
{
    if (tlsp_cfg.quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit("threadlab-spawn: ", fmt, ap);
    va_end(ap);
}

void tlsp_note_once(int *key, const char *fmt, ...)
{
    if (tlsp_cfg.quiet || __atomic_exchange_n(key, 1, __ATOMIC_RELAXED))
        return;
    va_list ap;
    va_start(ap, fmt);
    emit("threadlab-spawn: ", fmt, ap);
    va_end(ap);
}

/* Errors are printed even when quiet: they change what the program sees. */
static void error_line(const char *fmt, va_list ap)
{
    emit("threadlab-spawn: error: ", fmt, ap);
}

void tlsp_say_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_line(fmt, ap);
    va_end(ap);
}

static void emit_fatal_note(void)
{
    static const char line[] = "threadlab-spawn: the communicator's error handler is MPI_ERRORS_ARE_FATAL: aborting the job\n";
    ssize_t w = write(STDERR_FILENO, line, sizeof line - 1);
    (void)w;
}

static int fail(int errors_return, int always, int code, const char *fmt, va_list ap)
{
    if (errors_return && !always)
        return code;
    error_line(fmt, ap);
    if (errors_return)
        return code;
    emit_fatal_note();
    tlsp_abort_job(MPI_COMM_WORLD, code);
}

void tlsp_abort_job(MPI_Comm comm, int code)
{
    /* Thread tasks of one process can meet fatal errors together, and
     * Open MPI's MPI_Abort is not safe to enter twice at once: its
     * help-message parser frees one buffer from both ("corrupted size vs.
     * prev_size"), and the job died of a signal instead of the abort. The
     * first thread aborts; the others wait for the job to end. */
    static _Atomic int aborting;
    if (atomic_exchange_explicit(&aborting, 1, memory_order_acq_rel))
        for (;;)
            pause();
    if (tlsp_mpi_up)
        PMPI_Abort(comm, code);
    _exit(1);
}

int tlsp_error(const tlsp_view *view, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = fail(view && view->errors_return, 0, code, fmt, ap);
    va_end(ap);
    return rc;
}

int tlsp_fail(int errors_return, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = fail(errors_return, 0, code, fmt, ap);
    va_end(ap);
    return rc;
}

int tlsp_misuse(const tlsp_view *view, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = fail(view && view->errors_return, 1, code, fmt, ap);
    va_end(ap);
    return rc;
}

int tlsp_refuse(const tlsp_view *view, const char *call)
{
    return tlsp_misuse(view, MPI_ERR_UNSUPPORTED_OPERATION,
                       "%s is not supported on a communicator of thread tasks (docs/spawn.md lists the calls "
                       "that are)",
                       call);
}

/* ---------------------------------------------------------- environment */

static void bad_setting(const char *name, const char *value, const char *accepted)
{
    fprintf(stderr, "threadlab-spawn: error: %s=%s: expected %s\n", name, value, accepted);
    fflush(stderr);
    _exit(2);
}

static int parse_long(const char *text, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

void tlsp_settings_cpus(int after_init)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        tlsp_cfg.affinity_cpus = (unsigned)CPU_COUNT(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    /* Thread tasks inherit their process's mask: a launcher's binding
     * (Open MPI binds a job of 1 or 2 processes to one core each) makes
     * them share its CPUs, and auto mean that many.  Said once, when the
     * MPI has started (it may bind in MPI_Init). */
    if (after_init && tlsp_cfg.limit_mode == TLSP_LIMIT_AUTO && online > (long)tlsp_cfg.affinity_cpus)
        tlsp_note("this process may use %u of the %ld CPUs online (its launcher bound it): its thread tasks "
                  "share them, and the auto limit is %u; with Open MPI, mpirun --bind-to none gives it all "
                  "(threadlab-spawn-mpirun does)",
                  tlsp_cfg.affinity_cpus, online, tlsp_cfg.affinity_cpus);
}

void tlsp_settings_load(void)
{
    tlsp_settings_cpus(0);

    const char *v = getenv(TL_SPAWN_ENV_MAX_THREADS);
    if (v && *v && strcmp(v, "auto") != 0) {
        long n;
        if (parse_long(v, 0, 1000000, &n) != 0)
            bad_setting(TL_SPAWN_ENV_MAX_THREADS, v, "a number of thread tasks from 0 to 1000000, or 'auto'");
        tlsp_cfg.limit_mode = TLSP_LIMIT_NUMBER;
        tlsp_cfg.limit = n;
    }
    v = getenv(TL_SPAWN_ENV_LIMIT_COUNTS);
    if (v && *v) {
        if (strcmp(v, "running") == 0)
            tlsp_cfg.limit_counts = TL_SPAWN_COUNTS_RUNNING;
        else if (strcmp(v, "runnable") == 0)
            tlsp_cfg.limit_counts = TL_SPAWN_COUNTS_RUNNABLE;
        else
            bad_setting(TL_SPAWN_ENV_LIMIT_COUNTS, v, "running or runnable");
    }
    v = getenv(TL_SPAWN_ENV_TIMEOUT);
    if (v && *v) {
        char *end;
        errno = 0;
        double s = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(s) || s <= 0 || s > 86400)
            bad_setting(TL_SPAWN_ENV_TIMEOUT, v, "seconds, more than 0 and at most 86400");
        tlsp_cfg.timeout_s = s;
    }
    v = getenv(TL_SPAWN_ENV_SPIN);
    if (v && *v) {
        long n;
        if (parse_long(v, 0, 100000000, &n) != 0)
            bad_setting(TL_SPAWN_ENV_SPIN, v, "a number of iterations from 0 to 100000000");
        tlsp_cfg.spin = (unsigned)n;
    }
    v = getenv(TL_SPAWN_ENV_EAGER);
    if (v && *v) {
        long n;
        if (parse_long(v, 0, 1L << 30, &n) != 0)
            bad_setting(TL_SPAWN_ENV_EAGER, v, "a number of bytes from 0 to 1073741824");
        tlsp_cfg.eager_bytes = (size_t)n;
    }
    v = getenv(TL_SPAWN_ENV_QUIET);
    if (v && *v) {
        if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
            bad_setting(TL_SPAWN_ENV_QUIET, v, "0 or 1");
        tlsp_cfg.quiet = v[0] == '1';
    }
}
