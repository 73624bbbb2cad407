/*
 * threadlab-rm - the resource manager of multiprogrammed OpenMP
 * applications (seed 004; docs/rm.md, docs/commands/rm.md).
 *
 *   threadlab-rm [--foreground] [--policy P] [--quantum-ms N] [--slots N]
 *                [--cpus LIST] [--reset] [--verbose] [--owner PID]
 *                                                          start the manager
 *   threadlab-rm --status [--json]                         the arena, live
 *   threadlab-rm --set [policy=P] [quantum_ms=N]           change it running
 *   threadlab-rm --stop [--timeout S]                      stop it (SIGTERM)
 *   threadlab-rm --sweep                                   remove what killed
 *                                                          private managers left
 *   threadlab-rm --layout                                  the arena layout, JSON
 *
 * The manager maps the arena, and every quantum (and at once when an
 * application registers or leaves): frees the slots of dead applications,
 * applies pending control requests, computes the policy, publishes each
 * changed allocation, and beats its heartbeat.  No root is needed: the
 * arena, the log (rm.log), the pid file (rm.pid) and the lock (rm.lock)
 * belong to the user; the directory is $THREADLAB_RM_DIR, else
 * $XDG_RUNTIME_DIR/threadlab, else /tmp/threadlab-<uid>, and is used only
 * once checked to be the user's own, mode 0700 (rundir.c).  With --owner
 * it is a private manager: it stops when that process exits and removes
 * its arena and directory (private.c).
 *
 * Exit status: 0 done; 1 failure (message on stderr); 2 usage error;
 * 3 (--status, --set, --stop) no manager running.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "threadlab/compiler.h"
#include "threadlab/json.h"
#include "threadlab/rm.h"

#define EXIT_USAGE 2
#define EXIT_NOT_RUNNING 3
#define CLAIM_TIMEOUT_NS UINT64_C(2000000000)
/* How often a private manager looks whether its owner still exists. */
#define OWNER_CHECK_NS UINT64_C(50000000)
/* How often the manager looks whether a program died between quanta: a
 * program killed (SIGKILL) cannot say goodbye, and its CPUs would stay
 * idle for up to a quantum; kill(pid, 0) and one /proc read per program. */
#define DEATH_CHECK_NS UINT64_C(10000000)
/* rm.log is rotated (to rm.log.1, replacing the previous one) when it
 * reaches --log-max-kb: the two files never hold more than twice that. */
#define LOG_DEFAULT_KB 256u
#define LOG_MIN_KB 4u
#define LOG_MAX_KB 1048576u

static volatile sig_atomic_t stop_signal;
static int verbose;
static FILE *log_file;

/* ------------------------------------------------------------- logging */

static void logmsg(const char *fmt, ...) TL_PRINTF(1, 2);
static int log_to_stderr;

/* rm.log's rotation: the checked directory it lives in, its size limit. */
static struct {
    int dirfd;                  /* -1: no rotation */
    const char *dir;
    uint64_t max_bytes;
    int stderr_too;             /* a daemon's stderr is the log: follow the new file */
    unsigned rotations;
} logrot = {.dirfd = -1};

static void log_stamp(FILE *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(out, "%s.%03ld threadlab-rm[%d]: ", when, ts.tv_nsec / 1000000, (int)getpid());
}

/* Once rm.log reaches its limit it becomes rm.log.1 (replacing the one
 * before) and a new rm.log starts with a line saying so: a manager that
 * runs for months keeps at most twice the limit.  Both names are opened
 * and renamed relative to the checked directory, never through a path. */
static void log_rotate(void)
{
    struct stat st;
    if (!log_file || logrot.dirfd < 0 || fstat(fileno(log_file), &st) != 0 ||
        (uint64_t)st.st_size < logrot.max_bytes)
        return;
    char err[1024];
    int fd = -1;
    if (renameat(logrot.dirfd, "rm.log", logrot.dirfd, "rm.log.1") == 0)
        fd = tl_rm_dir_file(logrot.dirfd, logrot.dir, "rm.log", O_WRONLY | O_APPEND | O_CREAT | O_EXCL, err,
                            sizeof err);
    FILE *next = fd >= 0 ? fdopen(fd, "a") : NULL;
    if (!next) {
        if (fd >= 0)
            close(fd);
        /* Keep writing where it was (the renamed file, if the rename
         * happened) and stop trying: one line says why. */
        log_stamp(log_file);
        fprintf(log_file, "cannot rotate %s/rm.log past %llu KiB (%s): it keeps growing\n", logrot.dir,
                (unsigned long long)(logrot.max_bytes / 1024), fd < 0 && err[0] ? err : strerror(errno));
        fflush(log_file);
        logrot.dirfd = -1;
        return;
    }
    fclose(log_file);
    log_file = next;
    if (logrot.stderr_too)
        dup2(fileno(log_file), 2);
    logrot.rotations++;
    log_stamp(log_file);
    fprintf(log_file, "rm.log reached %llu KiB: the lines before are in rm.log.1 (rotation %u; older ones are "
            "gone)\n", (unsigned long long)(logrot.max_bytes / 1024), logrot.rotations);
    fflush(log_file);
}

static void logmsg(const char *fmt, ...)
{
    FILE *out = log_file ? log_file : stderr;
    log_stamp(out);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    fflush(out);
    if (out == log_file)
        log_rotate();
    if (log_to_stderr && out != stderr) {
        fprintf(stderr, "threadlab-rm: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
}

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* -------------------------------------------------------------- options */

typedef struct {
    enum { MODE_RUN, MODE_STATUS, MODE_SET, MODE_STOP, MODE_SWEEP, MODE_LAYOUT } mode;
    int foreground, reset, json;
    unsigned policy, quantum_ms, nslots;
    tl_rm_cpuset cpus;
    int cpus_given;
    double timeout_s;
    pid_t owner;                /* --owner: a private manager's owner, 0 = none */
    int other_load;             /* --other-load: count (1, the default) or ignore (0) */
    unsigned log_max_kb;        /* --log-max-kb: rm.log's size before it is rotated */
    char arena[256];
    char **set_args;
    int nset;
} options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: threadlab-rm [--foreground] [--policy P] [--quantum-ms N] [--slots N] [--cpus LIST]\n"
            "                    [--other-load count|ignore] [--log-max-kb N] [--reset] [--verbose]\n"
            "                    [--arena NAME] [--owner PID]\n"
            "       threadlab-rm --status [--json]\n"
            "       threadlab-rm --set [policy=P] [quantum_ms=N]\n"
            "       threadlab-rm --stop [--timeout S]\n"
            "       threadlab-rm --sweep\n"
            "       threadlab-rm --layout\n"
            "policies: timeshare (default), equipartition, static; quantum %u..%u ms (default %u);\n"
            "other load: count (default: CPUs busy with work it does not manage are withheld) or ignore;\n"
            "log: rotated to rm.log.1 past %u..%u KiB (default %u)\n",
            TL_RM_MIN_QUANTUM_MS, TL_RM_MAX_QUANTUM_MS, TL_RM_DEFAULT_QUANTUM_MS, LOG_MIN_KB, LOG_MAX_KB,
            LOG_DEFAULT_KB);
}

static int bad(const char *fmt, ...) TL_PRINTF(1, 2);
static int bad(const char *fmt, ...)
{
    fprintf(stderr, "threadlab-rm: ");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_USAGE;
}

static int parse_unsigned(const char *text, unsigned low, unsigned high, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (end == text || *end || errno || text[0] == '-' || v < low || v > high)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->mode = MODE_RUN;
    o->policy = TL_RM_POLICY_DEFAULT;
    o->quantum_ms = TL_RM_DEFAULT_QUANTUM_MS;
    o->nslots = TL_RM_DEFAULT_SLOTS;
    o->timeout_s = 5.0;
    o->other_load = 1;
    o->log_max_kb = LOG_DEFAULT_KB;
    tl_rm_arena_name(o->arena, sizeof o->arena);
    static const struct option longs[] = {
        {"foreground", no_argument, 0, 'f'}, {"policy", required_argument, 0, 'p'},
        {"quantum-ms", required_argument, 0, 'q'}, {"slots", required_argument, 0, 'n'},
        {"cpus", required_argument, 0, 'c'}, {"reset", no_argument, 0, 'r'},
        {"verbose", no_argument, 0, 'v'}, {"arena", required_argument, 0, 'a'},
        {"status", no_argument, 0, 'S'}, {"json", no_argument, 0, 'j'},
        {"set", no_argument, 0, 'E'}, {"stop", no_argument, 0, 'K'},
        {"timeout", required_argument, 0, 't'}, {"layout", no_argument, 0, 'L'},
        {"owner", required_argument, 0, 'o'}, {"sweep", no_argument, 0, 'W'},
        {"other-load", required_argument, 0, 'O'}, {"log-max-kb", required_argument, 0, 'G'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+", longs, NULL)) != -1) {
        switch (c) {
        case 'f':
            o->foreground = 1;
            break;
        case 'p':
            o->policy = tl_rm_policy_parse(optarg);
            if (!o->policy)
                return bad("--policy %s: expected timeshare, equipartition or static", optarg);
            break;
        case 'q':
            if (parse_unsigned(optarg, TL_RM_MIN_QUANTUM_MS, TL_RM_MAX_QUANTUM_MS, &o->quantum_ms))
                return bad("--quantum-ms %s: expected an integer from %u to %u", optarg, TL_RM_MIN_QUANTUM_MS,
                           TL_RM_MAX_QUANTUM_MS);
            break;
        case 'n':
            if (parse_unsigned(optarg, 1, TL_RM_MAX_SLOTS, &o->nslots))
                return bad("--slots %s: expected an integer from 1 to %u", optarg, TL_RM_MAX_SLOTS);
            break;
        case 'c':
            if (tl_rm_cpuset_parse(optarg, &o->cpus))
                return bad("--cpus %s: expected a CPU list such as 0-3,6 (CPUs below %u)", optarg, TL_RM_MAX_CPUS);
            o->cpus_given = 1;
            break;
        case 'r':
            o->reset = 1;
            break;
        case 'v':
            verbose = 1;
            break;
        case 'a':
            snprintf(o->arena, sizeof o->arena, "%s%s", optarg[0] == '/' ? "" : "/", optarg);
            break;
        case 'S':
            o->mode = MODE_STATUS;
            break;
        case 'j':
            o->json = 1;
            break;
        case 'E':
            o->mode = MODE_SET;
            break;
        case 'K':
            o->mode = MODE_STOP;
            break;
        case 't': {
            char *end;
            o->timeout_s = strtod(optarg, &end);
            if (end == optarg || *end || !(o->timeout_s > 0 && o->timeout_s <= 3600))
                return bad("--timeout %s: expected seconds from 0 to 3600", optarg);
            break;
        }
        case 'L':
            o->mode = MODE_LAYOUT;
            break;
        case 'o': {
            unsigned pid;
            if (parse_unsigned(optarg, 1, INT_MAX, &pid))
                return bad("--owner %s: expected a process id (a positive integer)", optarg);
            o->owner = (pid_t)pid;
            break;
        }
        case 'W':
            o->mode = MODE_SWEEP;
            break;
        case 'O':
            if (!strcmp(optarg, "count"))
                o->other_load = 1;
            else if (!strcmp(optarg, "ignore"))
                o->other_load = 0;
            else
                return bad("--other-load %s: expected count or ignore", optarg);
            break;
        case 'G':
            if (parse_unsigned(optarg, LOG_MIN_KB, LOG_MAX_KB, &o->log_max_kb))
                return bad("--log-max-kb %s: expected an integer from %u to %u", optarg, LOG_MIN_KB, LOG_MAX_KB);
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return bad("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc && o->mode != MODE_SET)
        return bad("unexpected argument '%s' (see --help)", argv[optind]);
    o->set_args = argv + optind;
    o->nset = argc - optind;
    return 0;
}

/* ------------------------------------------------------------- layout */

static void layout_field(tl_json *j, const char *name, size_t offset, size_t size)
{
    tl_json_key(j, name);
    tl_json_begin_array(j);
    tl_json_int(j, (long long)offset);
    tl_json_int(j, (long long)size);
    tl_json_end_array(j);
}

static int cmd_layout(void)
{
#define FIELD(type, f) layout_field(&j, #f, offsetof(type, f), sizeof(((type *)0)->f))
    char magic[32];
    snprintf(magic, sizeof magic, "0x%016llx", (unsigned long long)TL_RM_MAGIC);
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "layout_version"); tl_json_int(&j, TL_RM_LAYOUT_VERSION);
    tl_json_key(&j, "magic"); tl_json_string(&j, magic);
    tl_json_key(&j, "max_cpus"); tl_json_int(&j, TL_RM_MAX_CPUS);
    tl_json_key(&j, "header_size"); tl_json_int(&j, (long long)sizeof(tl_rm_header));
    tl_json_key(&j, "slot_size"); tl_json_int(&j, (long long)sizeof(tl_rm_slot));
    tl_json_key(&j, "default_slots"); tl_json_int(&j, TL_RM_DEFAULT_SLOTS);
    tl_json_key(&j, "header");
    tl_json_begin_object(&j);
    FIELD(tl_rm_header, magic);
    FIELD(tl_rm_header, layout_version);
    FIELD(tl_rm_header, header_size);
    FIELD(tl_rm_header, slot_size);
    FIELD(tl_rm_header, nslots);
    FIELD(tl_rm_header, ncpus);
    FIELD(tl_rm_header, max_cpus);
    FIELD(tl_rm_header, created_ns);
    FIELD(tl_rm_header, manager_pid);
    FIELD(tl_rm_header, manager_state);
    FIELD(tl_rm_header, manager_start);
    FIELD(tl_rm_header, manager_heartbeat_ns);
    FIELD(tl_rm_header, generation);
    FIELD(tl_rm_header, policy);
    FIELD(tl_rm_header, quantum_ms);
    FIELD(tl_rm_header, quanta);
    FIELD(tl_rm_header, other_milli);
    FIELD(tl_rm_header, other_counted);
    FIELD(tl_rm_header, wake);
    FIELD(tl_rm_header, ctl_seq);
    FIELD(tl_rm_header, ctl_ack);
    FIELD(tl_rm_header, ctl_policy);
    FIELD(tl_rm_header, ctl_quantum_ms);
    FIELD(tl_rm_header, ctl_result);
    FIELD(tl_rm_header, ctl_lock);
    FIELD(tl_rm_header, arrivals);
    FIELD(tl_rm_header, reallocations);
    FIELD(tl_rm_header, reclaimed);
    FIELD(tl_rm_header, full);
    FIELD(tl_rm_header, cpus);
    FIELD(tl_rm_header, withheld);
    tl_json_end_object(&j);
    tl_json_key(&j, "slot");
    tl_json_begin_object(&j);
    FIELD(tl_rm_slot, state);
    FIELD(tl_rm_slot, pid);
    FIELD(tl_rm_slot, start_time);
    FIELD(tl_rm_slot, arrival);
    FIELD(tl_rm_slot, registered_ns);
    FIELD(tl_rm_slot, comm);
    FIELD(tl_rm_slot, max_request);
    FIELD(tl_rm_slot, flags);
    FIELD(tl_rm_slot, requested);
    FIELD(tl_rm_slot, last_team);
    FIELD(tl_rm_slot, heartbeat_ns);
    FIELD(tl_rm_slot, regions);
    FIELD(tl_rm_slot, confined_epoch);
    FIELD(tl_rm_slot, threads);
    FIELD(tl_rm_slot, seq);
    FIELD(tl_rm_slot, epoch);
    FIELD(tl_rm_slot, alloc);
    FIELD(tl_rm_slot, owned);
    FIELD(tl_rm_slot, changes);
    FIELD(tl_rm_slot, cpus);
    tl_json_end_object(&j);
    tl_json_end_object(&j);
    tl_json_emit(&j);
#undef FIELD
    return 0;
}

/* ------------------------------------------------------ status and set */

static const char *manager_state_name(uint32_t state)
{
    switch (state) {
    case TL_RM_MANAGER_RUNNING:
        return "running";
    case TL_RM_MANAGER_STOPPED:
        return "stopped";
    default:
        return "none";
    }
}

/* Opens the arena for --status/--set/--stop; prints why not.  Returns
 * TL_RM_OK or the error code. */
static int open_existing(const options *o, tl_rm_arena *arena, int quiet_absent)
{
    char err[512];
    int rc = tl_rm_open(arena, o->arena, err, sizeof err);
    if (rc == TL_RM_ENOENT || rc == TL_RM_EINIT) {
        if (!quiet_absent)
            fprintf(stderr, "threadlab-rm: not running (no arena %s)\n", o->arena);
    } else if (rc == TL_RM_EVERSION) {
        fprintf(stderr,
                "threadlab-rm: refusing the arena %s\n  %s\n  stop the programs using it, then start the "
                "manager with --reset\n",
                o->arena, err);
    } else if (rc != TL_RM_OK) {
        fprintf(stderr, "threadlab-rm: %s\n", err);
    }
    return rc;
}

static double age_ms(uint64_t now, uint64_t then)
{
    return then && now > then ? (double)(now - then) / 1e6 : 0.0;
}

static int cmd_status(const options *o)
{
    tl_rm_arena arena;
    int rc = open_existing(o, &arena, o->json);
    if (rc == TL_RM_ENOENT || rc == TL_RM_EINIT) {
        if (o->json) {
            tl_json j;
            tl_json_init(&j);
            tl_json_begin_object(&j);
            tl_json_key(&j, "arena"); tl_json_string(&j, o->arena);
            tl_json_key(&j, "running"); tl_json_bool(&j, 0);
            tl_json_key(&j, "reason"); tl_json_string(&j, "no arena");
            tl_json_end_object(&j);
            tl_json_emit(&j);
        }
        return EXIT_NOT_RUNNING;
    }
    if (rc != TL_RM_OK)
        return 1;
    tl_rm_header *h = arena.hdr;
    uint64_t now = tl_rm_now_ns();
    int alive = tl_rm_manager_exists(h);
    int fresh = tl_rm_manager_fresh(h, now);
    char cpus[256];
    tl_rm_cpuset managed;
    for (unsigned w = 0; w < TL_RM_CPU_WORDS; w++)
        managed.bits[w] = __atomic_load_n(&h->cpus.bits[w], __ATOMIC_RELAXED);
    tl_rm_cpuset_format(&managed, cpus, sizeof cpus);
    unsigned ncpus = tl_rm_cpuset_count(&managed);
    tl_rm_cpuset withheld;
    for (unsigned w = 0; w < TL_RM_CPU_WORDS; w++)
        withheld.bits[w] = __atomic_load_n(&h->withheld.bits[w], __ATOMIC_RELAXED) & managed.bits[w];
    char held[256];
    tl_rm_cpuset_format(&withheld, held, sizeof held);
    int counted = __atomic_load_n(&h->other_counted, __ATOMIC_RELAXED) != 0;
    double other = __atomic_load_n(&h->other_milli, __ATOMIC_RELAXED) / 1000.0;
    /* Bounds come from the mapping as validated, never from the header. */
    unsigned nslots = arena.nslots;
    unsigned napps = 0;
    for (unsigned i = 0; i < nslots; i++)
        if (__atomic_load_n(&arena.slots[i].state, __ATOMIC_ACQUIRE) == TL_RM_SLOT_ACTIVE)
            napps++;
    uint32_t state = __atomic_load_n(&h->manager_state, __ATOMIC_ACQUIRE);
    tl_json j;
    if (o->json) {
        tl_json_init(&j);
        tl_json_begin_object(&j);
        tl_json_key(&j, "arena"); tl_json_string(&j, o->arena);
        tl_json_key(&j, "running"); tl_json_bool(&j, alive);
        tl_json_key(&j, "layout_version"); tl_json_int(&j, TL_RM_LAYOUT_VERSION);
        tl_json_key(&j, "nslots"); tl_json_int(&j, nslots);
        tl_json_key(&j, "ncpus"); tl_json_int(&j, ncpus);
        tl_json_key(&j, "cpus"); tl_json_string(&j, cpus);
        tl_json_key(&j, "manager");
        tl_json_begin_object(&j);
        tl_json_key(&j, "pid"); tl_json_int(&j, (int)h->manager_pid);
        tl_json_key(&j, "state"); tl_json_string(&j, manager_state_name(state));
        tl_json_key(&j, "alive"); tl_json_bool(&j, alive);
        tl_json_key(&j, "fresh"); tl_json_bool(&j, fresh);
        tl_json_key(&j, "heartbeat_age_ms");
        tl_json_number(&j, age_ms(now, __atomic_load_n(&h->manager_heartbeat_ns, __ATOMIC_ACQUIRE)));
        tl_json_key(&j, "generation"); tl_json_int(&j, h->generation);
        tl_json_key(&j, "policy"); tl_json_string(&j, tl_rm_policy_name(__atomic_load_n(&h->policy, __ATOMIC_ACQUIRE)));
        tl_json_key(&j, "quantum_ms"); tl_json_int(&j, __atomic_load_n(&h->quantum_ms, __ATOMIC_ACQUIRE));
        tl_json_key(&j, "quanta"); tl_json_int(&j, (long long)__atomic_load_n(&h->quanta, __ATOMIC_RELAXED));
        tl_json_key(&j, "other_load"); tl_json_string(&j, counted ? "count" : "ignore");
        tl_json_key(&j, "other_cpus"); tl_json_number(&j, other);
        tl_json_key(&j, "withheld"); tl_json_string(&j, held);
        tl_json_end_object(&j);
        tl_json_key(&j, "counters");
        tl_json_begin_object(&j);
        tl_json_key(&j, "arrivals"); tl_json_int(&j, (long long)h->arrivals);
        tl_json_key(&j, "reallocations"); tl_json_int(&j, (long long)h->reallocations);
        tl_json_key(&j, "reclaimed"); tl_json_int(&j, (long long)h->reclaimed);
        tl_json_key(&j, "full"); tl_json_int(&j, (long long)h->full);
        tl_json_end_object(&j);
        tl_json_key(&j, "apps");
        tl_json_begin_array(&j);
    } else {
        printf("arena %s (layout %u): %u CPUs (%s), %u of %u slots used\n", o->arena, TL_RM_LAYOUT_VERSION, ncpus,
               cpus, napps, nslots);
        if (alive)
            printf("manager pid %d: %s, policy %s, quantum %u ms, generation %u, %llu quanta, heartbeat %.0f ms ago%s\n",
                   (int)h->manager_pid, manager_state_name(state), tl_rm_policy_name(h->policy), h->quantum_ms,
                   h->generation, (unsigned long long)h->quanta,
                   age_ms(now, __atomic_load_n(&h->manager_heartbeat_ns, __ATOMIC_ACQUIRE)),
                   fresh ? "" : " (STALE)");
        else
            printf("manager: not running (last pid %d, state %s)\n", (int)h->manager_pid, manager_state_name(state));
        if (alive && counted)
            printf("other work: %.2f CPUs busy, CPUs withheld: %s\n", other, held[0] ? held : "none");
        else if (alive)
            printf("other work: ignored (--other-load ignore)\n");
        printf("counters: %llu arrivals, %llu reallocations, %llu reclaimed, %llu refused (arena full)\n",
               (unsigned long long)h->arrivals, (unsigned long long)h->reallocations,
               (unsigned long long)h->reclaimed, (unsigned long long)h->full);
        if (napps)
            printf("%5s %8s %-16s %5s %5s %5s %-12s %8s %10s %9s\n", "slot", "pid", "program", "req", "team", "owns",
                   "cpus", "epoch", "regions", "last(ms)");
    }
    for (unsigned i = 0; i < nslots; i++) {
        tl_rm_slot *s = &arena.slots[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TL_RM_SLOT_ACTIVE)
            continue;
        uint32_t alloc, owned, epoch;
        tl_rm_cpuset set;
        tl_rm_read_alloc(s, &alloc, &owned, &epoch, &set);
        char scpus[256], comm[TL_RM_COMM_LEN + 1];
        tl_rm_cpuset_format(&set, scpus, sizeof scpus);
        for (unsigned k = 0; k < TL_RM_COMM_LEN; k++)
            comm[k] = __atomic_load_n(&s->comm[k], __ATOMIC_RELAXED);
        comm[TL_RM_COMM_LEN] = '\0';
        pid_t pid = __atomic_load_n(&s->pid, __ATOMIC_RELAXED);
        int app_alive = tl_rm_proc_alive(pid, __atomic_load_n(&s->start_time, __ATOMIC_RELAXED));
        uint64_t beat = __atomic_load_n(&s->heartbeat_ns, __ATOMIC_RELAXED);
        uint64_t coarse = tl_rm_coarse_ns();
        if (o->json) {
            tl_json_begin_object(&j);
            tl_json_key(&j, "slot"); tl_json_int(&j, i);
            tl_json_key(&j, "pid"); tl_json_int(&j, (int)pid);
            tl_json_key(&j, "comm"); tl_json_string(&j, comm);
            tl_json_key(&j, "alive"); tl_json_bool(&j, app_alive);
            tl_json_key(&j, "arrival"); tl_json_int(&j, (long long)s->arrival);
            tl_json_key(&j, "requested"); tl_json_int(&j, s->requested);
            tl_json_key(&j, "max_request"); tl_json_int(&j, s->max_request);
            tl_json_key(&j, "team"); tl_json_int(&j, alloc);
            tl_json_key(&j, "owned"); tl_json_int(&j, owned);
            tl_json_key(&j, "cpus"); tl_json_string(&j, scpus);
            tl_json_key(&j, "epoch"); tl_json_int(&j, epoch);
            tl_json_key(&j, "changes"); tl_json_int(&j, (long long)s->changes);
            tl_json_key(&j, "regions"); tl_json_int(&j, (long long)__atomic_load_n(&s->regions, __ATOMIC_RELAXED));
            tl_json_key(&j, "last_team"); tl_json_int(&j, s->last_team);
            tl_json_key(&j, "last_region_age_ms"); tl_json_number(&j, age_ms(coarse, beat));
            tl_json_key(&j, "pinned"); tl_json_bool(&j, (s->flags & TL_RM_APP_PINNED) != 0);
            tl_json_key(&j, "confined_epoch"); tl_json_int(&j, __atomic_load_n(&s->confined_epoch, __ATOMIC_RELAXED));
            tl_json_key(&j, "threads"); tl_json_int(&j, __atomic_load_n(&s->threads, __ATOMIC_RELAXED));
            tl_json_end_object(&j);
        } else {
            printf("%5u %8d %-16s %5u %5u %5u %-12s %8u %10llu %9.0f%s\n", i, (int)pid, comm, s->requested, alloc,
                   owned, scpus[0] ? scpus : "-", epoch,
                   (unsigned long long)__atomic_load_n(&s->regions, __ATOMIC_RELAXED), age_ms(coarse, beat),
                   app_alive ? "" : " (dead)");
        }
    }
    if (o->json) {
        tl_json_end_array(&j);
        tl_json_end_object(&j);
        tl_json_emit(&j);
    }
    tl_rm_close(&arena);
    return alive ? 0 : EXIT_NOT_RUNNING;
}

static int cmd_set(const options *o)
{
    unsigned policy = 0, quantum = 0;
    if (o->nset == 0)
        return bad("--set needs policy=P and/or quantum_ms=N");
    for (int i = 0; i < o->nset; i++) {
        const char *arg = o->set_args[i];
        const char *eq = strchr(arg, '=');
        if (!eq)
            return bad("--set %s: expected KEY=VALUE with KEY policy or quantum_ms", arg);
        size_t klen = (size_t)(eq - arg);
        if (klen == 6 && !strncmp(arg, "policy", 6)) {
            policy = tl_rm_policy_parse(eq + 1);
            if (!policy)
                return bad("--set %s: expected policy=timeshare, equipartition or static", arg);
        } else if ((klen == 10 && !strncmp(arg, "quantum_ms", 10)) || (klen == 10 && !strncmp(arg, "quantum-ms", 10)) ||
                   (klen == 7 && !strncmp(arg, "quantum", 7))) {
            if (parse_unsigned(eq + 1, TL_RM_MIN_QUANTUM_MS, TL_RM_MAX_QUANTUM_MS, &quantum))
                return bad("--set %s: expected quantum_ms from %u to %u", arg, TL_RM_MIN_QUANTUM_MS,
                           TL_RM_MAX_QUANTUM_MS);
        } else {
            return bad("--set %s: unknown key '%.*s' (accepted: policy, quantum_ms)", arg, (int)klen, arg);
        }
    }
    tl_rm_arena arena;
    int rc = open_existing(o, &arena, 0);
    if (rc == TL_RM_ENOENT || rc == TL_RM_EINIT)
        return EXIT_NOT_RUNNING;
    if (rc != TL_RM_OK)
        return 1;
    tl_rm_header *h = arena.hdr;
    if (!tl_rm_manager_exists(h)) {
        fprintf(stderr, "threadlab-rm: not running (the arena %s has no live manager)\n", o->arena);
        tl_rm_close(&arena);
        return EXIT_NOT_RUNNING;
    }
    /* One writer at a time fills the request. */
    uint64_t deadline = tl_rm_now_ns() + UINT64_C(2000000000);
    uint32_t unlocked = 0;
    while (!__atomic_compare_exchange_n(&h->ctl_lock, &unlocked, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        unlocked = 0;
        if (tl_rm_now_ns() > deadline) {
            /* A writer died holding it: take it over. */
            __atomic_store_n(&h->ctl_lock, 1, __ATOMIC_SEQ_CST);
            break;
        }
        usleep(1000);
    }
    __atomic_store_n(&h->ctl_policy, policy, __ATOMIC_RELAXED);
    __atomic_store_n(&h->ctl_quantum_ms, quantum, __ATOMIC_RELAXED);
    uint32_t seq = __atomic_add_fetch(&h->ctl_seq, 1, __ATOMIC_RELEASE);
    tl_rm_wake_manager(h);
    deadline = tl_rm_now_ns() + (uint64_t)(o->timeout_s * 1e9);
    int done = 0;
    while (tl_rm_now_ns() < deadline) {
        if ((int32_t)(__atomic_load_n(&h->ctl_ack, __ATOMIC_ACQUIRE) - seq) >= 0) {
            done = 1;
            break;
        }
        usleep(1000);
    }
    int result = __atomic_load_n(&h->ctl_result, __ATOMIC_ACQUIRE);
    __atomic_store_n(&h->ctl_lock, 0, __ATOMIC_RELEASE);
    if (!done) {
        fprintf(stderr, "threadlab-rm: the manager (pid %d) did not apply the change within %g s\n",
                (int)h->manager_pid, o->timeout_s);
        tl_rm_close(&arena);
        return 1;
    }
    if (result != 0) {
        fprintf(stderr, "threadlab-rm: the manager refused the change: %s\n", strerror(result));
        tl_rm_close(&arena);
        return 1;
    }
    printf("policy %s, quantum %u ms\n", tl_rm_policy_name(h->policy), h->quantum_ms);
    tl_rm_close(&arena);
    return 0;
}

/* The manager to stop is the one the directory's pid file names, once
 * checked to be a threadlab-rm of this user holding the directory's lock:
 * never a pid read from the arena, which names whatever its writer put
 * there. */
static int cmd_stop(const options *o)
{
    char dir[512], err[1024];
    if (tl_rm_runtime_dir(dir, sizeof dir, err, sizeof err) != 0) {
        fprintf(stderr, "threadlab-rm: %s\n", err);
        return 1;
    }
    int dirfd = tl_rm_dir_open(dir, 0, err, sizeof err);
    if (dirfd < 0 && errno != ENOENT) {
        fprintf(stderr, "threadlab-rm: %s\n", err);
        return 1;
    }
    pid_t pid = dirfd >= 0 ? tl_rm_pidfile_read(dirfd) : 0;
    char why[256] = "no pid file";
    if (pid > 0 && tl_rm_is_manager(pid, dirfd, why, sizeof why)) {
        uint64_t start = tl_rm_proc_start_time(pid);
        if (kill(pid, SIGTERM) != 0) {
            fprintf(stderr, "threadlab-rm: cannot signal the manager (pid %d): %s\n", (int)pid, strerror(errno));
            close(dirfd);
            return 1;
        }
        uint64_t deadline = tl_rm_now_ns() + (uint64_t)(o->timeout_s * 1e9);
        while (tl_rm_proc_alive(pid, start) && tl_rm_now_ns() < deadline)
            usleep(5000);
        close(dirfd);
        if (tl_rm_proc_alive(pid, start)) {
            fprintf(stderr, "threadlab-rm: the manager (pid %d) is still running after %g s\n", (int)pid,
                    o->timeout_s);
            return 1;
        }
        printf("threadlab-rm stopped (pid %d)\n", (int)pid);
        return 0;
    }
    /* No manager runs for this directory: what a killed one left goes. */
    int status = EXIT_NOT_RUNNING;
    tl_rm_arena arena;
    int rc = tl_rm_open(&arena, o->arena, err, sizeof err);
    if (rc == TL_RM_OK) {
        pid_t last = __atomic_load_n(&arena.hdr->manager_pid, __ATOMIC_ACQUIRE);
        if (tl_rm_manager_exists(arena.hdr)) {
            fprintf(stderr,
                    "threadlab-rm: the arena %s names a live manager (pid %d), but it is not the manager of %s "
                    "(%s): not signalling it; stop it through its own directory\n",
                    o->arena, (int)last, dir, why);
            status = 1;
        } else {
            tl_rm_unlink(o->arena);
            printf("threadlab-rm was not running (pid %d, killed?); removed the arena %s it left\n", (int)last,
                   o->arena);
        }
        tl_rm_close(&arena);
    } else if (rc == TL_RM_EUNSAFE || rc == TL_RM_ESYS) {
        fprintf(stderr, "threadlab-rm: %s\n", err);
        status = 1;
    } else {
        printf("threadlab-rm is not running\n");
    }
    if (dirfd >= 0) {
        close(dirfd);
        /* A private manager's directory has no use without its manager. */
        if (status == EXIT_NOT_RUNNING && tl_rm_private_owner(dir) && tl_rm_dir_remove(dir, err, sizeof err) != 0)
            fprintf(stderr, "threadlab-rm: %s\n", err);
    }
    return status;
}

static void print_line(const char *line, void *context)
{
    (void)context;
    printf("%s\n", line);
}

static int cmd_sweep(void)
{
    tl_rm_sweep(print_line, NULL);
    return 0;
}

/* ------------------------------------------------------------- manager */

/* Everything the manager decides with is its own: the arena's slot count
 * (arena.nslots), the CPUs, the policy, the quantum and the generation are
 * kept here and only published to the header, never read back from it (any
 * process of the user may overwrite the header). */
typedef struct {
    tl_rm_arena arena;
    tl_rm_cpuset machine;
    unsigned policy;            /* in force */
    unsigned quantum_ms;        /* in force */
    uint32_t generation;        /* this manager's */
    uint64_t overwritten;       /* times the header was found overwritten */
    uint64_t overwritten_logged_ns;
    uint64_t *known_arrival;    /* occupant each slot had at the last allocation */
    uint64_t *claimed_since;    /* when a CLAIMED slot was first seen, 0 = not claimed */
    tl_rm_policy_app *apps;
    tl_rm_policy_out *out;
    unsigned *slot_of;
    uint64_t round;
    char dir[512];
    int dirfd;                  /* the directory, checked (tl_rm_dir_open) */
    int wrote_pidfile;
    int lockfd;
    int locked;                 /* this manager holds the directory's lock */
    pid_t owner;                /* a private manager's owner, 0 = none */
    uint64_t owner_start;       /* its start time: a reused pid is not the owner */
    int owner_gone;
    /* Other work (load.c): measured every quantum when counted. */
    int other_load;             /* --other-load count */
    tl_rm_load load;
    tl_rm_cpustat *stat_prev, *stat_cur;
    int stat_ok;                /* stat_prev holds a reading */
    uint64_t *cpu_ns;           /* per slot: its occupant's CPU time at stat_prev */
    uint64_t *cpu_arrival;      /* per slot: that occupant */
    double *busy, *managed;     /* per CPU, scratch */
    double *earlier;            /* per CPU, scratch: new programs' time before the interval */
    unsigned napps;             /* programs at the latest decision */
    tl_rm_cpuset usable;        /* the managed CPUs not withheld */
} manager;

/* The measured other work and the CPUs withheld for it, for status. */
static void publish_load(manager *m)
{
    tl_rm_header *h = m->arena.hdr;
    double milli = m->load.total * 1000.0 + 0.5;
    __atomic_store_n(&h->other_milli, (uint32_t)(milli < 4e9 ? milli : 4e9), __ATOMIC_RELAXED);
    __atomic_store_n(&h->other_counted, (uint32_t)m->other_load, __ATOMIC_RELAXED);
    for (unsigned w = 0; w < TL_RM_CPU_WORDS; w++)
        __atomic_store_n(&h->withheld.bits[w], m->load.withheld.bits[w], __ATOMIC_RELAXED);
}

/* Publishes the manager's fields of the header from its own copies. */
static void publish_manager(manager *m)
{
    tl_rm_header *h = m->arena.hdr;
    __atomic_store_n(&h->policy, m->policy, __ATOMIC_RELEASE);
    __atomic_store_n(&h->quantum_ms, m->quantum_ms, __ATOMIC_RELEASE);
    __atomic_store_n(&h->manager_pid, getpid(), __ATOMIC_RELEASE);
    __atomic_store_n(&h->manager_start, tl_rm_proc_start_time(getpid()), __ATOMIC_RELEASE);
    __atomic_store_n(&h->manager_heartbeat_ns, tl_rm_now_ns(), __ATOMIC_RELEASE);
    __atomic_store_n(&h->generation, m->generation, __ATOMIC_RELEASE);
    __atomic_store_n(&h->quanta, m->round, __ATOMIC_RELAXED);
    publish_load(m);
    __atomic_store_n(&h->manager_state, TL_RM_MANAGER_RUNNING, __ATOMIC_RELEASE);
}

/* Notices a header that another process overwrote (a bug, or garbage
 * written into /dev/shm): says so in the log (at most every 10 s while it
 * goes on), restores what the manager owns, and carries on with its own
 * copies of every bound.  A new generation makes the programs register
 * again (their slots may be gone). */
static void guard_arena(manager *m, uint64_t now)
{
    tl_rm_header *h = m->arena.hdr;
    char why[256];
    int identity = tl_rm_check(&m->arena, why, sizeof why) != TL_RM_OK;
    if (!identity) {
        uint32_t state = __atomic_load_n(&h->manager_state, __ATOMIC_ACQUIRE);
        int32_t pid = __atomic_load_n(&h->manager_pid, __ATOMIC_ACQUIRE);
        uint32_t policy = __atomic_load_n(&h->policy, __ATOMIC_ACQUIRE);
        uint32_t quantum = __atomic_load_n(&h->quantum_ms, __ATOMIC_ACQUIRE);
        uint32_t generation = __atomic_load_n(&h->generation, __ATOMIC_ACQUIRE);
        if (state == TL_RM_MANAGER_RUNNING && pid == getpid() && policy == m->policy && quantum == m->quantum_ms &&
            generation == m->generation)
            return;
        snprintf(why, sizeof why, "manager fields: state %u, pid %d, policy %u, quantum %u ms, generation %u",
                 state, (int)pid, policy, quantum, generation);
    }
    m->overwritten++;
    if (m->overwritten == 1 || now - m->overwritten_logged_ns >= UINT64_C(10000000000)) {
        logmsg("the arena %s was overwritten by another process (%s; %llu time%s): restoring its header, "
               "carrying on with its %u slots",
               m->arena.name, why, (unsigned long long)m->overwritten, m->overwritten == 1 ? "" : "s",
               m->arena.nslots);
        m->overwritten_logged_ns = now;
    }
    if (identity)
        tl_rm_restore_identity(&m->arena, &m->machine);
    m->generation++;
    /* Nothing pending on the control channel: what is there is garbage. */
    __atomic_store_n(&h->ctl_ack, __atomic_load_n(&h->ctl_seq, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
    __atomic_store_n(&h->ctl_lock, 0, __ATOMIC_RELEASE);
    publish_manager(m);
}

/* A process that cuts the arena's file short (ftruncate: a bug, a stray
 * tool) turns the manager's next access past the new end into SIGBUS.  The
 * handler gives the file its size back and returns, so the access is made
 * again and reads zeros, as if another process had written them: the
 * manager survives that anyway (guard_arena repairs the header).  It does
 * not jump out of the fault: that left held whatever lock the access ran
 * under (ThreadSanitizer's lock on an atomic's address hung the manager
 * for ever; a stdio lock would do the same), and it neither logs nor
 * clears slots, which the loop does after (after_arena_cut).  The manager
 * is one thread: only its own accesses fault, and the loop reads what the
 * handler wrote between them. */
static volatile sig_atomic_t arena_guarded;
static int arena_fd = -1;
static char *arena_base;
static size_t arena_bytes;
static volatile sig_atomic_t arena_cuts;   /* faults the handler repaired */
static volatile off_t arena_cut_to = -1;   /* the shortest size it found since the loop last looked */
static volatile sig_atomic_t arena_lost;   /* errno of an ftruncate that failed */

static void on_arena_fault(int sig, siginfo_t *info, void *context)
{
    (void)context;
    char *at = info->si_addr;
    int fault = info->si_code > 0; /* raised by an access, not sent with kill() (si_addr is then no address) */
    if (fault && arena_guarded && at >= arena_base && at < arena_base + arena_bytes) {
        int saved_errno = errno;
        struct stat st;
        off_t cut = fstat(arena_fd, &st) == 0 ? st.st_size : 0;
        if (arena_cut_to < 0 || cut < arena_cut_to)
            arena_cut_to = cut;
        if (ftruncate(arena_fd, (off_t)arena_bytes) != 0) {
            /* The access must complete: private zeros take the file's
             * place, and the loop stops (the arena cannot be kept). */
            arena_lost = errno ? errno : EIO;
            if (mmap(arena_base, arena_bytes, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1,
                     0) == MAP_FAILED)
                signal(sig, SIG_DFL); /* the access faults again, now fatally */
        }
        arena_cuts++;
        errno = saved_errno;
        return;
    }
    /* Not the arena: the default action, on the faulting access itself
     * when the handler returns, or now for a signal that was sent. */
    signal(sig, SIG_DFL);
    if (!fault)
        raise(sig);
}

static void guard_arena_faults(const manager *m)
{
    arena_base = (char *)m->arena.hdr;
    arena_bytes = m->arena.size;
    arena_fd = m->arena.fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_arena_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &sa, NULL);
    arena_guarded = 1;
}

/* After the handler regrew the arena: logs it and clears the slots that
 * lost any byte (what was cut reads as zeros; a cut header is repaired by
 * guard_arena()), so their programs register anew.  Returns -1 when the
 * size could not be restored. */
static int after_arena_cut(manager *m, unsigned *seen)
{
    if ((unsigned)arena_cuts == *seen)
        return 0;
    *seen = (unsigned)arena_cuts;
    off_t cut = arena_cut_to;
    arena_cut_to = -1;
    if (arena_lost) {
        logmsg("the arena %s was cut to %lld of its %zu bytes by another process, and its size cannot be "
               "restored (%s): stopping", m->arena.name, (long long)cut, m->arena.size, strerror(arena_lost));
        return -1;
    }
    unsigned cleared = 0;
    for (unsigned i = 0; i < m->arena.nslots; i++) {
        tl_rm_slot *s = &m->arena.slots[i];
        off_t end = (off_t)((const char *)(s + 1) - (const char *)m->arena.hdr);
        if (cut >= 0 && end > cut) {
            memset(s, 0, sizeof *s);
            m->known_arrival[i] = 0;
            m->claimed_since[i] = 0;
            cleared++;
        }
    }
    logmsg("the arena %s was cut to %lld of its %zu bytes by another process: restored its size; "
           "%u slot%s past the cut cleared", m->arena.name, (long long)cut, m->arena.size, cleared,
           cleared == 1 ? "" : "s");
    return 0;
}

/* Frees CLAIMED slots whose registering process died half-way. */
static void free_stuck_claims(manager *m, uint64_t now)
{
    tl_rm_header *h = m->arena.hdr;
    for (unsigned i = 0; i < m->arena.nslots; i++) {
        tl_rm_slot *s = &m->arena.slots[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TL_RM_SLOT_CLAIMED) {
            m->claimed_since[i] = 0;
            continue;
        }
        if (!m->claimed_since[i]) {
            m->claimed_since[i] = now;
            continue;
        }
        if (now - m->claimed_since[i] < CLAIM_TIMEOUT_NS)
            continue;
        pid_t pid = __atomic_load_n(&s->pid, __ATOMIC_RELAXED);
        if (pid > 0 && kill(pid, 0) == 0)
            continue;
        uint32_t expected = TL_RM_SLOT_CLAIMED;
        if (__atomic_compare_exchange_n(&s->state, &expected, TL_RM_SLOT_FREE, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            logmsg("slot %u: freed a registration its process (pid %d) never finished", i, (int)pid);
            __atomic_add_fetch(&h->reclaimed, 1, __ATOMIC_RELAXED);
        }
        m->claimed_since[i] = 0;
    }
}

static void apply_control(manager *m)
{
    tl_rm_header *h = m->arena.hdr;
    uint32_t seq = __atomic_load_n(&h->ctl_seq, __ATOMIC_ACQUIRE);
    if (seq == __atomic_load_n(&h->ctl_ack, __ATOMIC_RELAXED))
        return;
    uint32_t policy = __atomic_load_n(&h->ctl_policy, __ATOMIC_RELAXED);
    uint32_t quantum = __atomic_load_n(&h->ctl_quantum_ms, __ATOMIC_RELAXED);
    int result = 0;
    if ((policy && !tl_rm_policy_parse(tl_rm_policy_name(policy))) ||
        (quantum && (quantum < TL_RM_MIN_QUANTUM_MS || quantum > TL_RM_MAX_QUANTUM_MS))) {
        result = EINVAL;
        logmsg("control request %u refused: policy %u, quantum %u ms", seq, policy, quantum);
    } else {
        if (policy && policy != m->policy) {
            logmsg("policy %s -> %s", tl_rm_policy_name(m->policy), tl_rm_policy_name(policy));
            m->policy = policy;
            __atomic_store_n(&h->policy, policy, __ATOMIC_RELEASE);
        }
        if (quantum && quantum != m->quantum_ms) {
            logmsg("quantum %u ms -> %u ms", m->quantum_ms, quantum);
            m->quantum_ms = quantum;
            __atomic_store_n(&h->quantum_ms, quantum, __ATOMIC_RELEASE);
        }
    }
    __atomic_store_n(&h->ctl_result, result, __ATOMIC_RELAXED);
    __atomic_store_n(&h->ctl_ack, seq, __ATOMIC_RELEASE);
}

/* Every quantum: how many of the managed CPUs work other than the managed
 * programs kept busy, per CPU (load.c), and which CPUs are withheld for
 * it.  A program's CPU time since the last reading is spread over the
 * CPUs it owned (its threads were confined to them), or over the usable
 * CPUs when it owned none.  A program seen for the first time is charged
 * its CPU time so far, up to what it could run in the interval (one
 * thread until it registered, its CPUs since), and the rest to the
 * interval before, over every usable CPU: a program registers at its
 * first parallel region, so its serial set-up (and its launcher's exec)
 * ran unmanaged, wherever the kernel put it, and without that a program
 * arriving in each of two quanta looked like other work in both and had
 * a CPU withheld from everybody (docs/rm.md "Other work"). */
static void measure_other_load(manager *m)
{
    /* The kernel counts CPU time in ticks (10 ms at USER_HZ 100): over a
     * 20 ms quantum a CPU's share could only read 0, 0.5 or 1, and noise
     * looked like work concentrated on one CPU.  Shorter quanta measure
     * over TL_RM_LOAD_PERIOD_NS instead. */
    if (!m->other_load || (m->stat_ok && tl_rm_now_ns() - m->stat_prev->when_ns < TL_RM_LOAD_PERIOD_NS))
        return;
    if (tl_rm_cpustat_read(m->stat_cur) != 0)
        return;
    double dt = m->stat_ok ? (double)(m->stat_cur->when_ns - m->stat_prev->when_ns) : 0.0;
    unsigned nusable = tl_rm_cpuset_count(&m->usable);
    if (dt > 0) {
        for (unsigned c = 0; c < TL_RM_MAX_CPUS; c++) {
            m->managed[c] = 0;
            m->earlier[c] = 0;
            m->busy[c] = tl_rm_cpuset_has(&m->machine, c) && tl_rm_cpuset_has(&m->stat_cur->seen, c) &&
                                 m->stat_cur->busy_ns[c] > m->stat_prev->busy_ns[c]
                             ? (double)(m->stat_cur->busy_ns[c] - m->stat_prev->busy_ns[c]) / dt
                             : 0.0;
        }
    }
    for (unsigned i = 0; i < m->arena.nslots; i++) {
        tl_rm_slot *s = &m->arena.slots[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TL_RM_SLOT_ACTIVE) {
            m->cpu_arrival[i] = 0;
            continue;
        }
        uint64_t arrival = __atomic_load_n(&s->arrival, __ATOMIC_RELAXED);
        uint64_t t = tl_rm_proc_cputime_ns(__atomic_load_n(&s->pid, __ATOMIC_RELAXED));
        if (dt > 0) {
            tl_rm_cpuset owned;
            tl_rm_read_alloc(s, NULL, NULL, NULL, &owned);
            for (unsigned w = 0; w < TL_RM_CPU_WORDS; w++)
                owned.bits[w] &= m->machine.bits[w];
            const tl_rm_cpuset *any = nusable ? &m->usable : &m->machine;
            const tl_rm_cpuset *over = tl_rm_cpuset_count(&owned) ? &owned : any;
            unsigned n = tl_rm_cpuset_count(over), nany = tl_rm_cpuset_count(any);
            double used, before = 0;
            if (m->cpu_arrival[i] == arrival) {
                used = t > m->cpu_ns[i] ? (double)(t - m->cpu_ns[i]) / dt : 0.0;
            } else {
                /* At most what it could run in this interval: one thread
                 * until it registered (its serial set-up: it registers at
                 * its first parallel region), its CPUs since; the rest is
                 * the intervals before, where it counted as other work,
                 * wherever the kernel ran it. */
                uint64_t from = m->stat_prev->when_ns, to = m->stat_cur->when_ns;
                uint64_t reg = __atomic_load_n(&s->registered_ns, __ATOMIC_RELAXED);
                reg = reg < from ? from : reg > to ? to : reg;
                double cap = (double)(reg - from) + (double)(to - reg) * (n ? n : 1);
                double ran = (double)t < cap ? (double)t : cap;
                used = ran / dt;
                before = ((double)t - ran) / dt;
                before = before < (double)nany ? before : (double)nany;
            }
            for (unsigned c = 0; n && c < TL_RM_MAX_CPUS; c++)
                if (tl_rm_cpuset_has(over, c))
                    m->managed[c] += used / n;
            for (unsigned c = 0; nany && c < TL_RM_MAX_CPUS; c++)
                if (tl_rm_cpuset_has(any, c))
                    m->earlier[c] += before / nany;
        }
        m->cpu_ns[i] = t;
        m->cpu_arrival[i] = arrival;
    }
    if (dt > 0) {
        tl_rm_cpuset before = m->load.withheld;
        tl_rm_load_update(&m->load, &m->machine, m->busy, m->managed, m->earlier);
        if (!tl_rm_cpuset_equal(&before, &m->load.withheld)) {
            char was[256], now[256];
            tl_rm_cpuset_format(&before, was, sizeof was);
            tl_rm_cpuset_format(&m->load.withheld, now, sizeof now);
            if (m->load.nwithheld == 0 && m->load.total >= TL_RM_LOAD_WITHHOLD)
                logmsg("other work keeps %.2f CPUs busy, also %.2f of each CPU left to the programs: withholding "
                       "none (were [%s])", m->load.total, m->load.spread, was);
            else
                logmsg("other work keeps %.2f CPUs busy: withholding CPUs [%s] (were [%s])", m->load.total, now,
                       was);
        }
        for (unsigned w = 0; w < TL_RM_CPU_WORDS; w++)
            m->usable.bits[w] = m->machine.bits[w] & ~m->load.withheld.bits[w];
        publish_load(m);
    }
    tl_rm_cpustat *swap = m->stat_prev;
    m->stat_prev = m->stat_cur;
    m->stat_cur = swap;
    m->stat_ok = 1;
}

/* Frees the slots of programs that ended without leaving (killed: no
 * goodbye); returns how many. */
static unsigned reap_dead(manager *m)
{
    unsigned reaped = tl_rm_reap(&m->arena);
    if (reaped)
        logmsg("freed %u slot%s of dead applications", reaped, reaped == 1 ? "" : "s");
    return reaped;
}

/* One scheduling decision: the policy over the active slots, published. */
static void schedule(manager *m, int quantum_tick)
{
    tl_rm_header *h = m->arena.hdr;
    reap_dead(m);
    unsigned n = 0;
    for (unsigned i = 0; i < m->arena.nslots; i++) {
        tl_rm_slot *s = &m->arena.slots[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TL_RM_SLOT_ACTIVE) {
            m->known_arrival[i] = 0;
            continue;
        }
        tl_rm_policy_app *a = &m->apps[n];
        a->key = i;
        a->arrival = __atomic_load_n(&s->arrival, __ATOMIC_RELAXED);
        a->request = __atomic_load_n(&s->requested, __ATOMIC_RELAXED);
        if (a->arrival != m->known_arrival[i]) {
            a->prev_alloc = 0; /* a new occupant */
            tl_rm_cpuset_zero(&a->prev_cpus);
            char comm[TL_RM_COMM_LEN + 1];
            for (unsigned k = 0; k < TL_RM_COMM_LEN; k++)
                comm[k] = __atomic_load_n(&s->comm[k], __ATOMIC_RELAXED);
            comm[TL_RM_COMM_LEN] = '\0';
            logmsg("slot %u: registered pid %d (%s), request %u", i, (int)s->pid, comm, a->request);
        } else {
            tl_rm_read_alloc(s, &a->prev_alloc, NULL, NULL, &a->prev_cpus);
        }
        m->slot_of[n] = i;
        n++;
    }
    m->napps = n;
    /* The CPUs other work keeps busy are no program's (measure_other_load). */
    tl_rm_policy_compute(m->policy, &m->usable, m->round, m->apps, n, m->out);
    for (unsigned j = 0; j < n; j++) {
        unsigned i = m->slot_of[j];
        tl_rm_slot *s = &m->arena.slots[i];
        int fresh = m->known_arrival[i] != m->apps[j].arrival;
        if (tl_rm_publish_alloc(s, m->out[j].alloc, &m->out[j].cpus, fresh)) {
            __atomic_add_fetch(&h->reallocations, 1, __ATOMIC_RELAXED);
            /* Team changes are logged; CPU rotations only with --verbose. */
            if (verbose || m->apps[j].prev_alloc != m->out[j].alloc) {
                char cpus[128];
                tl_rm_cpuset_format(&m->out[j].cpus, cpus, sizeof cpus);
                logmsg("slot %u (pid %d): team %u -> %u, cpus [%s]%s", i, (int)s->pid, m->apps[j].prev_alloc,
                       m->out[j].alloc, cpus, quantum_tick ? "" : " (at once)");
            }
        }
        m->known_arrival[i] = m->apps[j].arrival;
    }
}

static int take_lock(manager *m, char *err, size_t errlen)
{
    m->lockfd = tl_rm_dir_file(m->dirfd, m->dir, "rm.lock", O_RDWR | O_CREAT, err, errlen);
    if (m->lockfd < 0)
        return -1;
    if (flock(m->lockfd, LOCK_EX | LOCK_NB) != 0) {
        pid_t pid = tl_rm_pidfile_read(m->dirfd);
        char pidtext[32] = "?";
        if (pid > 0)
            snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
        snprintf(err, errlen, "already running (pid %s, lock %s/rm.lock)", pidtext, m->dir);
        return -1;
    }
    m->locked = 1;
    return 0;
}

/* A private manager's owner: a live process of this user. */
static int check_owner(manager *m, pid_t owner, char *err, size_t errlen)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)owner);
    m->owner = owner;
    m->owner_start = tl_rm_proc_start_time(owner);
    if (!m->owner_start || stat(path, &st) != 0 || st.st_uid != geteuid()) {
        snprintf(err, errlen, "--owner %d: no live process of this user", (int)owner);
        return -1;
    }
    return 0;
}

/* The machine's CPUs (this process's affinity), or the --cpus subset. */
static int machine_cpus(const options *o, tl_rm_cpuset *out, char *err, size_t errlen)
{
    cpu_set_t *set = CPU_ALLOC(TL_RM_MAX_CPUS);
    size_t size = CPU_ALLOC_SIZE(TL_RM_MAX_CPUS);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) != 0) {
        snprintf(err, errlen, "sched_getaffinity: %s", strerror(errno));
        CPU_FREE(set);
        return -1;
    }
    tl_rm_cpuset_zero(out);
    for (unsigned c = 0; c < TL_RM_MAX_CPUS; c++)
        if (CPU_ISSET_S(c, size, set))
            tl_rm_cpuset_add(out, c);
    CPU_FREE(set);
    if (o->cpus_given) {
        for (unsigned c = 0; c < TL_RM_MAX_CPUS; c++) {
            if (tl_rm_cpuset_has(&o->cpus, c) && !tl_rm_cpuset_has(out, c)) {
                char have[256];
                tl_rm_cpuset_format(out, have, sizeof have);
                snprintf(err, errlen, "--cpus: CPU %u is not available to this process (available: %s)", c, have);
                return -1;
            }
        }
        *out = o->cpus;
    }
    return 0;
}

/* Maps (adopting a dead manager's arena) or creates the arena. */
static int setup_arena(manager *m, const options *o, char *err, size_t errlen)
{
    char why[512];
    int rc = tl_rm_open(&m->arena, o->arena, why, sizeof why);
    int create = 0, reset = o->reset;
    if (rc == TL_RM_OK) {
        tl_rm_header *h = m->arena.hdr;
        if (tl_rm_manager_exists(h) && h->manager_pid != getpid()) {
            snprintf(err, errlen, "another manager (pid %d) runs on the arena %s", (int)h->manager_pid, o->arena);
            tl_rm_close(&m->arena);
            return -1;
        }
        if (reset || (o->nslots != TL_RM_DEFAULT_SLOTS && o->nslots != m->arena.nslots)) {
            tl_rm_close(&m->arena);
            create = 1;
            reset = 1;
        } else {
            unsigned live = 0;
            for (unsigned i = 0; i < m->arena.nslots; i++)
                if (__atomic_load_n(&m->arena.slots[i].state, __ATOMIC_ACQUIRE) == TL_RM_SLOT_ACTIVE)
                    live++;
            logmsg("adopting the arena %s of generation %u (%u registered slots)", o->arena, h->generation, live);
        }
    } else if (rc == TL_RM_ENOENT) {
        create = 1;
    } else if (rc == TL_RM_EINIT) {
        logmsg("replacing the arena %s left half-created: %s", o->arena, why);
        create = 1;
        reset = 1;
    } else if (rc == TL_RM_EVERSION) {
        if (!reset) {
            snprintf(err, errlen, "refusing the arena %s: %s; stop the programs using it and start with --reset",
                     o->arena, why);
            return -1;
        }
        create = 1;
    } else {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    if (create) {
        rc = tl_rm_create(&m->arena, o->arena, o->nslots, &m->machine, reset, why, sizeof why);
        if (rc != TL_RM_OK) {
            snprintf(err, errlen, "%s", why);
            return -1;
        }
        logmsg("created the arena %s (%u slots, %zu bytes)", o->arena, o->nslots, m->arena.size);
    }
    tl_rm_header *h = m->arena.hdr;
    for (unsigned w = 0; w < TL_RM_CPU_WORDS; w++)
        __atomic_store_n(&h->cpus.bits[w], m->machine.bits[w], __ATOMIC_RELAXED);
    __atomic_store_n(&h->ncpus, tl_rm_cpuset_count(&m->machine), __ATOMIC_RELEASE);
    /* Its own options (or their defaults), never what the header says: a
     * restarted manager is started afresh, whatever the dead one (or
     * anyone writing the arena) ran with. */
    m->policy = o->policy;
    m->quantum_ms = o->quantum_ms;
    __atomic_store_n(&h->ctl_ack, __atomic_load_n(&h->ctl_seq, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
    __atomic_store_n(&h->ctl_lock, 0, __ATOMIC_RELEASE);
    m->generation = __atomic_load_n(&h->generation, __ATOMIC_ACQUIRE) + 1;
    m->round = 0;
    publish_manager(m);
    return 0;
}

/* m->dir and m->dirfd are set: the directory, checked. */
static int manager_init(manager *m, const options *o, char *err, size_t errlen)
{
    if (take_lock(m, err, errlen))
        return -1;
    if (o->owner && check_owner(m, o->owner, err, errlen))
        return -1;
    /* The pid file before the arena says RUNNING: `threadlab-rm --stop`
     * trusts only the pid file, so a manager that programs can already see
     * must be one that --stop can find. */
    int fd = tl_rm_dir_file(m->dirfd, m->dir, "rm.pid", O_WRONLY | O_CREAT | O_TRUNC, err, errlen);
    if (fd < 0)
        return -1;
    m->wrote_pidfile = 1;
    char text[32];
    int len = snprintf(text, sizeof text, "%d\n", (int)getpid());
    ssize_t written = write(fd, text, (size_t)len);
    close(fd);
    if (written != len) {
        snprintf(err, errlen, "cannot write %s/rm.pid", m->dir);
        return -1;
    }
    if (machine_cpus(o, &m->machine, err, errlen))
        return -1;
    m->usable = m->machine;
    m->other_load = o->other_load;
    if (setup_arena(m, o, err, errlen))
        return -1;
    unsigned n = m->arena.nslots; /* validated when mapped; the header's is never read again */
    m->known_arrival = calloc(n, sizeof *m->known_arrival);
    m->claimed_since = calloc(n, sizeof *m->claimed_since);
    m->apps = calloc(n, sizeof *m->apps);
    m->out = calloc(n, sizeof *m->out);
    m->slot_of = calloc(n, sizeof *m->slot_of);
    m->cpu_ns = calloc(n, sizeof *m->cpu_ns);
    m->cpu_arrival = calloc(n, sizeof *m->cpu_arrival);
    m->stat_prev = calloc(1, sizeof *m->stat_prev);
    m->stat_cur = calloc(1, sizeof *m->stat_cur);
    m->busy = calloc(TL_RM_MAX_CPUS, sizeof *m->busy);
    m->managed = calloc(TL_RM_MAX_CPUS, sizeof *m->managed);
    m->earlier = calloc(TL_RM_MAX_CPUS, sizeof *m->earlier);
    if (!m->known_arrival || !m->claimed_since || !m->apps || !m->out || !m->slot_of || !m->cpu_ns ||
        !m->cpu_arrival || !m->stat_prev || !m->stat_cur || !m->busy || !m->managed ||
        !m->earlier) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* Adopted slots keep their allocation: the manager knows their occupant. */
    for (unsigned i = 0; i < n; i++)
        if (__atomic_load_n(&m->arena.slots[i].state, __ATOMIC_ACQUIRE) == TL_RM_SLOT_ACTIVE)
            m->known_arrival[i] = __atomic_load_n(&m->arena.slots[i].arrival, __ATOMIC_RELAXED);
    return 0;
}

/* Returns 0 when a signal stopped it, -1 when the arena could not be kept. */
static int manager_loop(manager *m)
{
    tl_rm_header *h = m->arena.hdr;
    uint64_t next_tick = tl_rm_now_ns();
    uint64_t next_owner_check = 0;
    uint64_t next_death_check = 0;
    unsigned cuts_seen = 0;
    guard_arena_faults(m);
    uint32_t seen_wake = __atomic_load_n(&h->wake, __ATOMIC_ACQUIRE);
    while (!stop_signal) {
        if (after_arena_cut(m, &cuts_seen) != 0)
            return -1;
        uint64_t now = tl_rm_now_ns();
        if (m->owner && now >= next_owner_check) {
            if (!tl_rm_proc_alive(m->owner, m->owner_start)) {
                m->owner_gone = 1;
                break;
            }
            next_owner_check = now + OWNER_CHECK_NS;
        }
        int tick = now >= next_tick;
        if (!tick) {
            uint64_t wait = next_tick - now;
            if (m->owner && next_owner_check - now < wait)
                wait = next_owner_check - now;
            if (m->napps && (next_death_check > now ? next_death_check - now : 0) < wait)
                wait = next_death_check > now ? next_death_check - now : 0;
            tl_rm_futex_wait(&h->wake, seen_wake, wait);
            if (stop_signal)
                break;
            uint32_t wake = __atomic_load_n(&h->wake, __ATOMIC_ACQUIRE);
            now = tl_rm_now_ns();
            tick = now >= next_tick;
            if (!tick && wake == seen_wake) {
                if (!m->napps || now < next_death_check)
                    continue; /* spurious */
                next_death_check = now + DEATH_CHECK_NS;
                if (!reap_dead(m))
                    continue;
                /* one died: its CPUs go to the others at once */
            }
            seen_wake = wake;
        }
        if (after_arena_cut(m, &cuts_seen) != 0)
            return -1;
        guard_arena(m, now);
        apply_control(m);
        if (tick) {
            uint64_t q = (uint64_t)m->quantum_ms * UINT64_C(1000000);
            next_tick += q;
            if (next_tick <= now)
                next_tick = now + q; /* fell behind: no burst of catch-up quanta */
            m->round++;
            __atomic_store_n(&h->quanta, m->round, __ATOMIC_RELAXED);
            free_stuck_claims(m, now);
            measure_other_load(m);
        }
        schedule(m, tick);
        __atomic_store_n(&h->manager_heartbeat_ns, tl_rm_now_ns(), __ATOMIC_RELEASE);
    }
    return 0;
}

static void manager_shutdown(manager *m, const options *o)
{
    tl_rm_header *h = m->arena.hdr;
    if (h) {
        /* A cut arena is regrown by the fault handler (if the loop ran) and
         * removed all the same. */
        __atomic_store_n(&h->manager_state, TL_RM_MANAGER_STOPPED, __ATOMIC_RELEASE);
        /* Applications waiting for an allocation stop waiting. */
        for (unsigned i = 0; i < m->arena.nslots; i++)
            tl_rm_futex_wake(&m->arena.slots[i].epoch, INT_MAX);
        /* A fresh start makes a fresh arena; running applications noticed
         * STOPPED and run unmanaged until they find the next one. */
        tl_rm_unlink(o->arena);
        arena_guarded = 0;
        tl_rm_close(&m->arena);
    }
    if (m->wrote_pidfile)
        unlinkat(m->dirfd, "rm.pid", 0);
    if (m->lockfd >= 0)
        close(m->lockfd);
    free(m->known_arrival);
    free(m->claimed_since);
    free(m->apps);
    free(m->out);
    free(m->slot_of);
    free(m->cpu_ns);
    free(m->cpu_arrival);
    free(m->stat_prev);
    free(m->stat_cur);
    free(m->busy);
    free(m->managed);
    free(m->earlier);
}

/* The log closed; a private manager that held its directory removes it
 * (its log included: nobody is left to read it). */
static void finish(manager *m, const options *o)
{
    if (log_file)
        fclose(log_file);
    log_file = NULL;
    if (m->dirfd >= 0)
        close(m->dirfd);
    char err[1024];
    if (o->owner && m->locked && tl_rm_dir_remove(m->dir, err, sizeof err) != 0)
        fprintf(stderr, "threadlab-rm: %s\n", err);
}

static int cmd_run(const options *o)
{
    int ready[2] = {-1, -1};
    char err[4096] = "";
    if (!o->foreground) {
        /* Daemonize; the first process waits for the daemon's verdict. */
        if (pipe(ready) != 0) {
            fprintf(stderr, "threadlab-rm: pipe: %s\n", strerror(errno));
            return 1;
        }
        pid_t child = fork();
        if (child < 0) {
            fprintf(stderr, "threadlab-rm: fork: %s\n", strerror(errno));
            return 1;
        }
        if (child > 0) {
            close(ready[1]);
            char msg[4200];
            ssize_t n, got = 0;
            while ((n = read(ready[0], msg + got, sizeof msg - 1 - (size_t)got)) > 0)
                got += n;
            msg[got > 0 ? got : 0] = '\0';
            waitpid(child, NULL, 0);
            if (strncmp(msg, "ok ", 3) == 0) {
                printf("threadlab-rm started (pid %s)\n", msg + 3);
                return 0;
            }
            fprintf(stderr, "threadlab-rm: %s\n", got > 0 ? msg : "the manager exited before it was ready");
            return 1;
        }
        close(ready[0]);
        setsid();
        pid_t daemon_pid = fork();
        if (daemon_pid < 0)
            _exit(1);
        if (daemon_pid > 0)
            _exit(0);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            close(null);
        }
        if (chdir("/") != 0)
            (void)0;
    }
    manager m;
    memset(&m, 0, sizeof m);
    m.lockfd = -1;
    /* The directory is checked before anything is written into it, the
     * log first. */
    int ok = tl_rm_runtime_dir(m.dir, sizeof m.dir, err, sizeof err) == 0;
    m.dirfd = ok ? tl_rm_dir_open(m.dir, 1, err, sizeof err) : -1;
    if (m.dirfd >= 0) {
        int fd = tl_rm_dir_file(m.dirfd, m.dir, "rm.log", O_WRONLY | O_APPEND | O_CREAT, err, sizeof err);
        log_file = fd >= 0 ? fdopen(fd, "a") : NULL;
        if (log_file && !o->foreground)
            dup2(fileno(log_file), 2);
        logrot.dirfd = m.dirfd;
        logrot.dir = m.dir;
        logrot.max_bytes = (uint64_t)o->log_max_kb * 1024u;
        logrot.stderr_too = !o->foreground;
    }
    log_to_stderr = o->foreground && verbose;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);

    if (!log_file || manager_init(&m, o, err, sizeof err) != 0) {
        if (log_file)
            logmsg("cannot start: %s", err);
        if (ready[1] >= 0) {
            ssize_t w = write(ready[1], err, strlen(err));
            (void)w;
            close(ready[1]);
        } else {
            fprintf(stderr, "threadlab-rm: %s\n", err);
        }
        manager_shutdown(&m, o);
        finish(&m, o);
        return 1;
    }
    char cpus[256];
    tl_rm_cpuset_format(&m.machine, cpus, sizeof cpus);
    logmsg("running: arena %s, CPUs %s, policy %s, quantum %u ms, other work %s, generation %u, log %s/rm.log "
           "(rotated past %u KiB)", o->arena, cpus, tl_rm_policy_name(m.policy), m.quantum_ms,
           m.other_load ? "counted" : "ignored", m.generation, m.dir, o->log_max_kb);
    if (ready[1] >= 0) {
        char msg[64];
        int len = snprintf(msg, sizeof msg, "ok %d", (int)getpid());
        ssize_t w = write(ready[1], msg, (size_t)len);
        (void)w;
        close(ready[1]);
    } else {
        printf("threadlab-rm running (pid %d), arena %s, CPUs %s; Ctrl-C stops it\n", (int)getpid(), o->arena, cpus);
        fflush(stdout);
    }
    int lost = manager_loop(&m) != 0;
    if (m.owner_gone)
        logmsg("stopping: its owner (pid %d) exited", (int)m.owner);
    else if (!lost)
        logmsg("stopping (%s)", stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
    manager_shutdown(&m, o);
    finish(&m, o);
    return lost ? 1 : 0;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc;
    switch (o.mode) {
    case MODE_STATUS:
        return cmd_status(&o);
    case MODE_SET:
        return cmd_set(&o);
    case MODE_STOP:
        return cmd_stop(&o);
    case MODE_SWEEP:
        return cmd_sweep();
    case MODE_LAYOUT:
        return cmd_layout();
    default:
        return cmd_run(&o);
    }
}
