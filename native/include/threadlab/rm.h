/*
 * threadlab/rm.h - threadlab-rm, the resource manager of multiprogrammed
 * OpenMP applications (seed 004), and the shared-memory arena through which
 * it talks to them (docs/rm.md).
 *
 * The arena is one POSIX shared-memory object, "/threadlab-rm-<uid>" (or
 * $THREADLAB_RM_ARENA), created by the manager: a header, then one slot per
 * registered application.  Layout version 1 is defined by the two structs
 * below and nowhere else: `threadlab-rm --layout` prints their sizes and
 * offsets, and every reader refuses a mismatch of magic, version, header
 * size, slot size or object size with a message naming both sides.
 *
 * The object is mapped only when it belongs to the user and nobody else may
 * write it (tl_rm_open refuses anything else: anyone may create names in
 * /dev/shm; docs/security.md).  Anything in the arena may still be
 * overwritten at any time by any process of the user (a bug, or on
 * purpose), so no value read from it bounds an index
 * or a copy: the slot count is captured once, when the arena is created or
 * mapped and validated, into the process's own tl_rm_arena (nslots), and
 * every loop over the slots uses that private copy.  tl_rm_check() reports
 * a header that no longer matches it.
 *
 * Who writes what:
 *   header identity     the manager, once, at creation (magic last)
 *   header manager_*    the manager (heartbeat every quantum)
 *   header ctl_*        `threadlab-rm --set` (ctl_seq last), acked by the manager
 *   header wake         anyone: +1 then FUTEX_WAKE, to make the manager look now
 *   slot, app part      the application that claimed the slot (CAS on state)
 *   slot, manager part  the manager, under the slot's seqlock; epoch +1 and a
 *                       FUTEX_WAKE on it at every new allocation
 *
 * All shared fields are read and written with __atomic builtins.  Futexes
 * on the arena are shared (not FUTEX_PRIVATE), so they work across
 * processes.
 *
 * Terms: an application's *team* (alloc) is how many threads its next
 * parallel region may use, always >= 1 (its master always runs); the CPUs
 * it *owns* (owned, cpus) are the manager's CPUs given to it.  The sum of
 * owned CPUs never exceeds the managed CPUs; when applications outnumber
 * CPUs some own none and run their master only.
 */
#ifndef THREADLAB_RM_H
#define THREADLAB_RM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ constants */

#define TL_RM_MAGIC UINT64_C(0x414e5241204d524c) /* "LRM ARNA" little endian */
#define TL_RM_LAYOUT_VERSION 2u
#define TL_RM_MAX_CPUS 1024u
#define TL_RM_CPU_WORDS (TL_RM_MAX_CPUS / 64u)
#define TL_RM_DEFAULT_SLOTS 64u
#define TL_RM_MAX_SLOTS 4096u
#define TL_RM_DEFAULT_QUANTUM_MS 100u
#define TL_RM_MIN_QUANTUM_MS 1u
#define TL_RM_MAX_QUANTUM_MS 60000u
#define TL_RM_COMM_LEN 16u

/* Environment variables. */
#define TL_RM_ENV_ARENA "THREADLAB_RM_ARENA" /* shm name, default /threadlab-rm-<uid> */
#define TL_RM_ENV_DIR "THREADLAB_RM_DIR"     /* log/pid/lock directory */

/* Scheduling policies (header.policy). */
enum {
    TL_RM_POLICY_EQUI = 1,      /* equipartition (dynamic space sharing) */
    TL_RM_POLICY_TIMESHARE = 2, /* equipartition; the remainder and, when
                                   apps outnumber CPUs, the CPUs themselves
                                   rotate every quantum (the paper's) */
    TL_RM_POLICY_STATIC = 3,    /* a share fixed at arrival (baseline) */
};
#define TL_RM_POLICY_DEFAULT TL_RM_POLICY_TIMESHARE

/* header.manager_state */
enum { TL_RM_MANAGER_NONE = 0, TL_RM_MANAGER_RUNNING = 1, TL_RM_MANAGER_STOPPED = 2 };

/* slot.state */
enum { TL_RM_SLOT_FREE = 0, TL_RM_SLOT_CLAIMED = 1, TL_RM_SLOT_ACTIVE = 2 };

/* slot.flags (set by the application) */
#define TL_RM_APP_PINNED 1u /* pins its team threads to its CPUs */

/* Results of tl_rm_open / tl_rm_create. */
enum {
    TL_RM_OK = 0,
    TL_RM_ENOENT = 1,   /* no arena: no manager has run */
    TL_RM_EVERSION = 2, /* magic, version or sizes differ: refused */
    TL_RM_EINIT = 3,    /* being created (magic not yet written) */
    TL_RM_ESYS = 4,     /* a system call failed (err says which) */
    TL_RM_EBUSY = 5,    /* another manager runs on this arena */
    TL_RM_ECORRUPT = 6, /* tl_rm_check: the header was overwritten since mapped */
    TL_RM_EUNSAFE = 7,  /* not this user's, or others may write it: refused */
};

/* --------------------------------------------------------------- layout */

typedef struct {
    uint64_t bits[TL_RM_CPU_WORDS];
} tl_rm_cpuset;

typedef struct {
    /* Identity: written once by the creating manager; magic last. */
    uint64_t magic;
    uint32_t layout_version;
    uint32_t header_size;   /* sizeof(tl_rm_header) */
    uint32_t slot_size;     /* sizeof(tl_rm_slot) */
    uint32_t nslots;
    uint32_t ncpus;         /* managed CPUs (popcount of cpus) */
    uint32_t max_cpus;      /* TL_RM_MAX_CPUS: bits of a tl_rm_cpuset */
    uint64_t created_ns;    /* CLOCK_REALTIME at creation */
    uint64_t reserved0[3];

    /* The manager (64-byte line). */
    _Alignas(64) int32_t manager_pid;
    uint32_t manager_state;        /* TL_RM_MANAGER_* */
    uint64_t manager_start;        /* start time of manager_pid (clock ticks after boot) */
    uint64_t manager_heartbeat_ns; /* CLOCK_MONOTONIC, every quantum */
    uint32_t generation;           /* +1 at every manager start on this arena */
    uint32_t policy;               /* TL_RM_POLICY_* in force */
    uint32_t quantum_ms;           /* in force */
    uint32_t reserved1;
    uint64_t quanta;               /* quanta elapsed since the manager started */
    uint32_t other_milli;          /* CPUs kept busy by work it does not manage, in
                                      thousandths (smoothed; 0 when not counted) */
    uint32_t other_counted;        /* 1 when other work is counted (--other-load count) */
    uint64_t reserved2[1];

    /* Wake-up word (own line: every application writes it). */
    _Alignas(64) uint32_t wake;
    uint32_t reserved3[15];

    /* Control requests of `threadlab-rm --set` (own line). */
    _Alignas(64) uint32_t ctl_seq;   /* request number, written last */
    uint32_t ctl_ack;                /* the manager: the last request applied */
    uint32_t ctl_policy;             /* 0 = unchanged */
    uint32_t ctl_quantum_ms;         /* 0 = unchanged */
    int32_t ctl_result;              /* 0 applied, else an errno value */
    uint32_t ctl_lock;               /* 0 free, 1 a writer is filling ctl_* */
    uint64_t reserved4[5];

    /* Counters, for `threadlab rm status`. */
    _Alignas(64) uint64_t arrivals;  /* registrations ever (arrival order) */
    uint64_t reallocations;          /* allocations that changed */
    uint64_t reclaimed;              /* slots of dead applications freed */
    uint64_t full;                   /* registrations refused: arena full */
    uint64_t reserved5[4];

    /* The managed CPUs. */
    _Alignas(64) tl_rm_cpuset cpus;
    /* The managed CPUs withheld this quantum because other work keeps them
     * busy (load.c): no application owns them. */
    _Alignas(64) tl_rm_cpuset withheld;
} tl_rm_header;

typedef struct {
    /* Identity (written by the application while state is CLAIMED). */
    uint32_t state;          /* TL_RM_SLOT_*; claimed by CAS FREE -> CLAIMED */
    int32_t pid;
    uint64_t start_time;     /* /proc/PID/stat field 22: defeats pid reuse */
    uint64_t arrival;        /* header.arrivals at registration */
    uint64_t registered_ns;  /* CLOCK_MONOTONIC */
    char comm[TL_RM_COMM_LEN];
    uint32_t max_request;    /* omp_get_max_threads() at registration */
    uint32_t flags;          /* TL_RM_APP_* */

    /* Written by the application at every managed region (own line). */
    _Alignas(64) uint32_t requested; /* parallelism of its latest region, >= 1 */
    uint32_t last_team;      /* team size it used */
    uint64_t heartbeat_ns;   /* CLOCK_MONOTONIC_COARSE of its latest region */
    uint64_t regions;        /* managed regions started */
    uint32_t confined_epoch; /* the allocation whose CPUs its threads were last
                                confined to (0: none yet) */
    uint32_t threads;        /* its threads then (the team and any others) */
    uint64_t reserved0[4];

    /* Written by the manager (seqlock: seq odd while writing). */
    _Alignas(64) uint32_t seq;
    uint32_t epoch;          /* +1 at every new allocation; a futex word */
    uint32_t alloc;          /* team size allowed, >= 1 */
    uint32_t owned;          /* CPUs owned (popcount of cpus) */
    uint64_t changes;        /* allocations that changed */
    uint64_t reserved1[5];
    tl_rm_cpuset cpus;       /* CPUs owned */
} tl_rm_slot;

/* A mapped arena: the process's own handle.  Its fields are private
 * copies taken when the arena was created or mapped and validated; they
 * bound every index into the mapping and are never re-read from the
 * (shared, writable by anyone) header. */
typedef struct {
    tl_rm_header *hdr;
    tl_rm_slot *slots;       /* slots[0 .. nslots-1] */
    unsigned nslots;         /* the slot count validated against the object's size */
    size_t size;             /* bytes mapped */
    int fd;
    uint64_t dev, ino;       /* identity of the shm object */
    char name[256];
} tl_rm_arena;

/* ------------------------------------------------------------ cpu sets */

static inline void tl_rm_cpuset_zero(tl_rm_cpuset *s)
{
    for (unsigned i = 0; i < TL_RM_CPU_WORDS; i++)
        s->bits[i] = 0;
}
static inline void tl_rm_cpuset_add(tl_rm_cpuset *s, unsigned cpu)
{
    if (cpu < TL_RM_MAX_CPUS)
        s->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}
static inline void tl_rm_cpuset_del(tl_rm_cpuset *s, unsigned cpu)
{
    if (cpu < TL_RM_MAX_CPUS)
        s->bits[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}
static inline int tl_rm_cpuset_has(const tl_rm_cpuset *s, unsigned cpu)
{
    return cpu < TL_RM_MAX_CPUS && ((s->bits[cpu / 64] >> (cpu % 64)) & 1u);
}
static inline unsigned tl_rm_cpuset_count(const tl_rm_cpuset *s)
{
    unsigned n = 0;
    for (unsigned i = 0; i < TL_RM_CPU_WORDS; i++)
        n += (unsigned)__builtin_popcountll(s->bits[i]);
    return n;
}
static inline int tl_rm_cpuset_equal(const tl_rm_cpuset *a, const tl_rm_cpuset *b)
{
    for (unsigned i = 0; i < TL_RM_CPU_WORDS; i++)
        if (a->bits[i] != b->bits[i])
            return 0;
    return 1;
}
/* "0-3,8" (at most len bytes, always terminated). */
void tl_rm_cpuset_format(const tl_rm_cpuset *s, char *buf, size_t len);
/* Parses "0-3,8"; returns 0, or -1 on a malformed list or a CPU >= TL_RM_MAX_CPUS. */
int tl_rm_cpuset_parse(const char *text, tl_rm_cpuset *s);

/* -------------------------------------------------------------- policy */

/* One application as the policy sees it. */
typedef struct {
    uint32_t key;            /* the caller's identity (slot index) */
    uint64_t arrival;        /* registration order: smaller arrived earlier */
    uint32_t request;        /* requested parallelism (0 counts as 1) */
    uint32_t prev_alloc;     /* its previous team size, 0 = not allocated yet */
    tl_rm_cpuset prev_cpus;  /* the CPUs it owned (affinity history) */
} tl_rm_policy_app;

typedef struct {
    uint32_t alloc;          /* team size, >= 1, <= max(1, request) */
    tl_rm_cpuset cpus;       /* owned CPUs: disjoint, within the machine */
} tl_rm_policy_out;

/* The policy as a pure function of its inputs: out[i] for apps[i].  round
 * is the quantum number (the time-sharing variant rotates with it).
 * Guarantees (tested in native/tests/test_rm_policy.c):
 *   - every application gets a team of at least 1 (its master) and at most
 *     its request; alloc == max(1, CPUs owned);
 *   - owned CPU sets are disjoint subsets of `machine`, so their sizes sum
 *     to at most the CPUs; with napps <= CPUs the teams sum to at most the
 *     CPUs too (except under static, where an application arriving when
 *     every CPU is taken runs its master alone, owning none);
 *   - an application keeps the CPUs it owned as far as its new count allows
 *     (affinity), and takes free ones lowest first.
 * Unknown policies behave as TL_RM_POLICY_EQUI. */
void tl_rm_policy_compute(unsigned policy, const tl_rm_cpuset *machine, uint64_t round,
                          const tl_rm_policy_app *apps, unsigned napps, tl_rm_policy_out *out);

const char *tl_rm_policy_name(unsigned policy); /* "equipartition", ... or "unknown" */
/* Policy number of a name ("equipartition"/"equi"/"dss", "timeshare"/"ts",
 * "static"), 0 when unknown. */
unsigned tl_rm_policy_parse(const char *name);

/* --------------------------------------------------------------- arena */

/* The arena's name: $THREADLAB_RM_ARENA, else "/threadlab-rm-<uid>". */
void tl_rm_arena_name(char *buf, size_t len);

/* The bytes an arena of nslots slots occupies. */
size_t tl_rm_arena_bytes(unsigned nslots);

/* Checks a mapped object of `size` bytes: TL_RM_OK, TL_RM_EINIT (magic not
 * written yet) or TL_RM_EVERSION, with the difference in err.  Every field
 * is read once (another process may be writing it). */
int tl_rm_validate(const void *mem, size_t size, char *err, size_t errlen);

/* Maps an existing arena (read-write: applications and the manager write
 * it) and captures its validated slot count in arena->nslots.  TL_RM_OK, or
 * an error code with a message in err (the reason, without the arena's
 * name, for TL_RM_EVERSION and TL_RM_EINIT: callers name it).  An object
 * that does not belong to this user (the effective uid), or that its group
 * or others may write, is TL_RM_EUNSAFE, never mapped: err is then one
 * line naming it, its owner and mode, and what to do (another user could
 * have created it to steer or crash this user's programs). */
int tl_rm_open(tl_rm_arena *arena, const char *name, char *err, size_t errlen);
/* Creates a fresh arena for the manager: nslots slots, the given CPUs.
 * An existing object is replaced only with `reset`; without it the result
 * is TL_RM_ESYS with EEXIST named in err. */
int tl_rm_create(tl_rm_arena *arena, const char *name, unsigned nslots, const tl_rm_cpuset *cpus,
                 int reset, char *err, size_t errlen);
void tl_rm_close(tl_rm_arena *arena);
/* Removes the shared-memory object (the mappings stay valid). */
int tl_rm_unlink(const char *name);
/* 1 when `name` now designates another object than the one mapped (the
 * manager was reset or restarted on a fresh arena), or none at all. */
int tl_rm_replaced(const tl_rm_arena *arena);
/* Compares the header's identity (magic, version, sizes, CPU set width,
 * slot count) with what was validated when the arena was mapped: TL_RM_OK,
 * or TL_RM_ECORRUPT with what differs in err.  The handle's private copies
 * keep every operation in bounds either way; this only reports. */
int tl_rm_check(const tl_rm_arena *arena, char *err, size_t errlen);
/* The manager: rewrites the header's identity from the handle's private
 * copies and the managed CPUs (magic cleared first, written last). */
void tl_rm_restore_identity(tl_rm_arena *arena, const tl_rm_cpuset *cpus);

/* ----------------------------------------- the runtime directory (rundir.c) */

/* The manager's directory (log rm.log, pid file rm.pid, lock rm.lock):
 * $THREADLAB_RM_DIR, else $XDG_RUNTIME_DIR/threadlab when $XDG_RUNTIME_DIR
 * is a directory of this user that nobody else may enter, else
 * /tmp/threadlab-<uid>.  Only the name: 0, or -1 (too long) with err. */
int tl_rm_runtime_dir(char *buf, size_t len, char *err, size_t errlen);
/* Opens the directory `path` (made mode 0700 first with create) without
 * following a symbolic link and checks, on the descriptor, that it is a
 * directory of this user that nobody else may enter (mode 0700): the
 * descriptor (O_DIRECTORY, close-on-exec), or -1 with errno set and one
 * line in err naming it, its owner and mode, and what to do.  errno is
 * ENOENT when it does not exist (without create), EPERM when refused.
 * Every file in it is then opened relative to the descriptor. */
int tl_rm_dir_open(const char *path, int create, char *err, size_t errlen);
/* Opens `name` in the directory dirfd (opened by tl_rm_dir_open; dirpath
 * only names it in messages) with open(2)'s flags plus O_NOFOLLOW and
 * O_CLOEXEC, mode 0600 when created, and refuses anything but a regular
 * file of this user with one link: the descriptor, or -1 with errno and
 * err. */
int tl_rm_dir_file(int dirfd, const char *dirpath, const char *name, int flags, char *err, size_t errlen);
/* The pid in the directory's rm.pid, 0 when there is none or it is not a
 * pid. */
pid_t tl_rm_pidfile_read(int dirfd);
/* 1 when pid is the manager of the directory dirfd: a live process of this
 * user running threadlab-rm that holds the directory's rm.lock.  Else 0,
 * with why (for messages). */
int tl_rm_is_manager(pid_t pid, int dirfd, char *why, size_t whylen);

/* ------------------------------------------------ private managers (private.c) */

/* A private manager (a benchmark's, a study's) belongs to one process, its
 * owner: it stops when the owner exits (threadlab-rm --owner PID) and
 * removes its arena and directory.  Both are named after the owner, so
 * that the next run can find and remove the ones a killed manager left:
 * the directory is made by mkdtemp as
 * $TMPDIR/threadlab-rm-<uid>-pid<owner>-XXXXXX (TMPDIR an absolute path,
 * else /tmp), and the arena is named as the directory. */
#define TL_RM_PRIVATE_PREFIX "threadlab-rm-" /* then <uid>-pid<owner>- */
/* Makes a private manager's directory for the owner pid: dir receives its
 * path and arena its arena's name.  0, or -1 with err. */
int tl_rm_private_make(pid_t owner, char *dir, size_t dirlen, char *arena, size_t arenalen, char *err,
                       size_t errlen);
/* The owner pid in a private manager's directory or arena name (a path's
 * last component, or a name with or without its leading slash) of this
 * user; 0 when `name` is no such name. */
pid_t tl_rm_private_owner(const char *name);
/* Removes a directory of this user (checked as tl_rm_dir_open does) with
 * the manager's files in it: 0, or -1 (it stays: not this user's, or holds
 * other files) with err. */
int tl_rm_dir_remove(const char *path, char *err, size_t errlen);
/* Removes what private managers whose owner is gone left (their directories
 * in $TMPDIR and /tmp, their arenas in /dev/shm), except where a manager
 * still runs; calls report (when not NULL) with one line per object
 * removed, saying what and why, or that could not be removed.  Objects of
 * other users are never touched.  Returns how many were removed. */
unsigned tl_rm_sweep(void (*report)(const char *line, void *context), void *context);

/* ------------------------------------------------------------ processes */

/* Start time of a live process: field 22 of /proc/PID/stat (clock ticks
 * after boot); 0 when it is gone or a zombie. */
uint64_t tl_rm_proc_start_time(pid_t pid);
/* 1 when the process pid still is the one that started at start. */
int tl_rm_proc_alive(pid_t pid, uint64_t start);
/* The command name of a process (/proc/PID/comm), "?" when unreadable. */
void tl_rm_proc_comm(pid_t pid, char *buf, size_t len);

/* CPU time (user + system) of every thread of a process, live and
 * exited, in ns (/proc/PID/stat fields 14 and 15); 0 when it is gone. */
uint64_t tl_rm_proc_cputime_ns(pid_t pid);

uint64_t tl_rm_now_ns(void);        /* CLOCK_MONOTONIC */
uint64_t tl_rm_coarse_ns(void);     /* CLOCK_MONOTONIC_COARSE */

/* ------------------------------------- other work on the CPUs (load.c) */

/* Seed 004's Figure 1: the manager shares the CPUs among its programs, but
 * the kernel also runs work it does not manage (programs it refused,
 * programs started without the shim, anything else runnable).  The CPUs
 * that work keeps busy are measured from the CPUs' busy time minus the
 * managed programs' own CPU time, and withheld from the division. */

/* Busy time of each CPU since boot, from /proc/stat: user + nice + system
 * + irq + softirq (guest time is inside user; idle, iowait and steal are
 * not busy).  Read without stdio or allocation (the shim reads it on a
 * program's thread). */
typedef struct {
    uint64_t when_ns;                  /* CLOCK_MONOTONIC of the reading */
    tl_rm_cpuset seen;                 /* CPUs /proc/stat has a line for */
    uint64_t busy_ns[TL_RM_MAX_CPUS];
} tl_rm_cpustat;
/* 0, or -1 when /proc/stat cannot be read. */
int tl_rm_cpustat_read(tl_rm_cpustat *s);
/* How many CPUs of `cpus` work other than `own_ns` of CPU time (the
 * caller's own work over the same interval) kept busy between readings a
 * and b: (their busy time - own_ns) / elapsed, at least 0; 0 when b is
 * not later than a. */
double tl_rm_other_cpus(const tl_rm_cpustat *a, const tl_rm_cpustat *b, const tl_rm_cpuset *cpus, uint64_t own_ns);
/* Threads runnable on the machine right now (/proc/loadavg's fourth
 * field, the running ones included), 0 when unreadable. */
unsigned tl_rm_runnable_now(void);

/* The manager's estimate of other work, per managed CPU, updated once per
 * quantum (tl_rm_load_update), and the CPUs it withholds for it. */
#define TL_RM_LOAD_WITHHOLD 0.5    /* withhold one more CPU when the load exceeds
                                      the CPUs withheld by this much */
#define TL_RM_LOAD_RELEASE 0.75    /* give one back when it is this much below */
#define TL_RM_LOAD_PERIOD_NS 100000000ull /* measured at most this often (100 ms: ten ticks) */
#define TL_RM_LOAD_KEEP 0.75       /* a withheld CPU stays so while other work holds
                                      this much of it */
#define TL_RM_LOAD_COOLDOWN 10     /* measurements without new withholding after one
                                      was given back for that */
#define TL_RM_LOAD_SPREAD 0.25     /* give every CPU back when the CPUs left to the
                                      programs carry this much other work each */
typedef struct {
    double last[TL_RM_MAX_CPUS];   /* each CPU's share in the previous quantum */
    double other[TL_RM_MAX_CPUS];  /* the share other work kept busy: the smaller of
                                      the last two quanta's */
    double total;                  /* their sum over the managed CPUs */
    tl_rm_cpuset withheld;         /* the CPUs withheld, within the managed ones */
    unsigned nwithheld;
    double spread;                 /* other work per CPU on the CPUs not withheld */
    unsigned cooldown;             /* measurements left without new withholding */
} tl_rm_load;
/* One quantum: busy[c] is the fraction of the quantum CPU c was busy,
 * managed[c] the part of it the managed programs account for (each
 * program's CPU time spread over the CPUs it owned, or over all the managed
 * CPUs when it owned none); earlier[c] (NULL: none), the part of the
 * previous quantum's share that programs registered since account for
 * (their CPU time before they registered).  A CPU counts as kept busy by other work as
 * much as it was in both of the last two quanta: a program that registers
 * or leaves in the middle of a quantum, whose CPU time the manager cannot
 * split exactly, moves no CPU; work that goes on is seen after two quanta
 * and its end after one.  The count withheld becomes the total rounded
 * once the total reaches the count + TL_RM_LOAD_WITHHOLD (a thread that
 * competes with two others for two CPUs gets 0.67 of one) or falls to the
 * count - TL_RM_LOAD_RELEASE, and stays otherwise (so it does not flap on
 * a load near a boundary); the CPUs withheld are those other work keeps
 * busiest, the ones withheld already preferred.  A CPU withheld stays so
 * only while other work holds TL_RM_LOAD_KEEP of it in the latest
 * measurement, and all are given back when other work still keeps the
 * CPUs left busy (TL_RM_LOAD_SPREAD each on average: withholding did not
 * isolate it); either blocks new withholding for TL_RM_LOAD_COOLDOWN
 * measurements.
 * Deterministic (test_rm_policy.c). */
void tl_rm_load_update(tl_rm_load *load, const tl_rm_cpuset *machine, const double *busy, const double *managed,
                       const double *earlier);

/* ---------------------------------------------------- manager liveness */

/* How old a heartbeat may be before the manager counts as gone. */
uint64_t tl_rm_stale_ns(const tl_rm_header *hdr);
/* 1 when the arena has a running manager whose heartbeat is fresh at now. */
int tl_rm_manager_fresh(const tl_rm_header *hdr, uint64_t now_ns);
/* 1 when the manager process still exists (kill(pid,0) and its start time). */
int tl_rm_manager_exists(const tl_rm_header *hdr);

/* -------------------------------------------------------- applications */

/* Claims a free slot for this process (pid, start time, comm), with
 * request as its declared parallelism.  *epoch0 receives the slot's epoch
 * before the slot became visible: the manager's part of the slot belongs to
 * this process only once the epoch has moved past it (until then the team
 * is 1).  Returns the slot index, or -1 when the arena is full
 * (header.full is counted).  Wakes the manager. */
int tl_rm_register(tl_rm_arena *arena, unsigned request, unsigned flags, uint32_t *epoch0);
/* Frees the slot if this process still holds it; wakes the manager. */
void tl_rm_release(tl_rm_arena *arena, int slot);
/* Makes the manager look at the arena now. */
void tl_rm_wake_manager(tl_rm_header *hdr);
/* Waits until the slot's epoch differs from `epoch` or timeout_ns passes;
 * returns the epoch seen. */
uint32_t tl_rm_wait_epoch(tl_rm_slot *slot, uint32_t epoch, uint64_t timeout_ns);
/* A consistent copy of the manager's part of a slot: 0.  A sequence number
 * that stays odd or keeps moving (a writer stopped half-way, an overwritten
 * slot) is waited for at most TL_RM_READ_PATIENCE_NS: then -1, with alloc,
 * owned and cpus zero (the epoch as read). */
#define TL_RM_READ_PATIENCE_NS UINT64_C(50000000)
int tl_rm_read_alloc(const tl_rm_slot *slot, uint32_t *alloc, uint32_t *owned, uint32_t *epoch,
                     tl_rm_cpuset *cpus);

/* ------------------------------------------------------------- manager */

/* Writes a new allocation into a slot (seqlock, epoch+1, futex wake) when
 * it differs from the current one, or always with force (a new occupant
 * waits for the epoch to move) or when the slot cannot be read consistently
 * (the write makes its sequence number even again); returns 1 when it
 * wrote. */
int tl_rm_publish_alloc(tl_rm_slot *slot, uint32_t alloc, const tl_rm_cpuset *cpus, int force);
/* Frees the slots of applications that no longer exist (dead, zombie, or
 * pid reused), and slots whose state is no TL_RM_SLOT_* (overwritten);
 * returns how many were freed. */
unsigned tl_rm_reap(tl_rm_arena *arena);

/* ---------------------------------------------------------- futex words */

long tl_rm_futex_wait(uint32_t *word, uint32_t expected, uint64_t timeout_ns);
long tl_rm_futex_wake(uint32_t *word, int count);

#ifdef __cplusplus
}
#endif
#endif
