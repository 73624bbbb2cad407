/*
 * threadlab/rm_client.h - one application's membership of threadlab-rm:
 * what every runtime that follows the manager does alike (docs/rm.md
 * "Clients").  The libgomp shim (native/omp) and libthreadlab-gomp
 * (native/gomp) are its users; each keeps its own policy on top (the shim
 * sizes teams at region boundaries and confines its kernel threads, and
 * cooperates without a manager; the ULT runtime stops and starts virtual
 * processors at safe points).
 *
 * What the client does: it maps the arena (refusing one that is not the
 * user's own, of another layout, or overwritten), finds a running manager,
 * registers (and, after a fork, a freed slot or a new manager generation,
 * registers again), waits a little for the first allocation, publishes
 * each managed region's request and reads the allocation, notices a
 * manager that stopped, died or hangs (cheaply: the heartbeat at every
 * region, a system call at most every 5 ms once it is late), releases the
 * slot at exit, and tells the runtime each event once.
 *
 * Threads: tl_rm_client_attach, _lost, _release and _after_fork are called
 * with the runtime's own lock held (one at a time); the inline readers
 * (_check, _request, _ran, _answered) run on any thread at any time, with
 * atomic accesses.  A mapping, once made, is never unmapped (a thread may
 * still be reading its old slot); an arena replaced by a new one costs its
 * pages only.
 */
#ifndef THREADLAB_RM_CLIENT_H
#define THREADLAB_RM_CLIENT_H

#include <pthread.h>
#include <sched.h> /* cpu_set_t: its users define _GNU_SOURCE */
#include <stdint.h>
#include <sys/types.h>

#include "threadlab/rm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Results and events.  0 is managed; the others say why not. */
enum {
    TL_RM_CLIENT_MANAGED = 0,
    TL_RM_CLIENT_NONE,     /* no manager: no arena, or none running on it */
    TL_RM_CLIENT_STOPPED,  /* the manager stopped */
    TL_RM_CLIENT_GONE,     /* the manager's process is gone */
    TL_RM_CLIENT_HUNG,     /* it lives but its heartbeat is 10 quanta + 1 s old */
    TL_RM_CLIENT_REPLACED, /* this process's slot was freed, or another manager adopted the arena:
                              attach again (no notice) */
    TL_RM_CLIENT_FULL,     /* the arena has no free slot */
    TL_RM_CLIENT_VERSION,  /* an arena of another layout: refused */
    TL_RM_CLIENT_CORRUPT,  /* the arena's header was overwritten since it was mapped */
    TL_RM_CLIENT_UNSAFE,   /* not the user's own, or others may write it: never mapped */
    TL_RM_CLIENT_ATTACHED, /* a notice only: managed again after another notice */
};

typedef struct tl_rm_client tl_rm_client;

/* The runtime's notice of an event, called once per event: when its kind
 * differs from the latest one told (no manager, and a manager lost, are
 * one kind: both say the process runs without one).  `what` says what
 * happened ("no resource manager (threadlab-rm) is running", "the resource
 * manager stopped", "managed by threadlab-rm (pid N) from now on"); the
 * runtime adds what it does about it.  Returns 1 when the event counts as
 * told (printed, or silenced on purpose), 0 when this runtime does not
 * report events of that kind (a later one of the kind is offered again). */
typedef int (*tl_rm_client_notice_fn)(tl_rm_client *client, int event, const char *what);

struct tl_rm_client {
    /* Settings, before the first attach. */
    uint64_t probe_ns;       /* how long an unmanaged process waits before it looks again (0: never) */
    uint64_t wait_ns;        /* how long a registration waits for its first allocation */
    unsigned flags;          /* TL_RM_APP_* declared at registration */
    tl_rm_client_notice_fn notice;
    void *context;           /* the runtime's own, for its notice function */

    /* State. */
    tl_rm_arena arena;
    int mapped;
    int slot;                /* -1: none */
    tl_rm_slot *my;          /* the slot; stays a readable address once set */
    pid_t pid;               /* the process the slot belongs to */
    uint32_t epoch0;         /* the slot's epoch before registration */
    int answered;            /* the manager has written this registration's allocation */
    uint32_t generation;     /* the manager generation registered with */
    uint64_t next_probe_ns;  /* coarse clock: when an unmanaged process looks again */
    uint64_t next_check_ns;  /* coarse clock: the next liveness system call */
    int told;                /* the kind of the latest event told, 0: none */
};

#define TL_RM_CLIENT_INITIALIZER                                                                           \
    {.probe_ns = UINT64_C(1000000000), .wait_ns = UINT64_C(50000000), .slot = -1}

/* Looks for a manager and registers this process (or keeps its slot while
 * it is still its own), requesting `request` threads: TL_RM_CLIENT_MANAGED,
 * or why not (NONE, FULL, VERSION, CORRUPT, UNSAFE), told through the
 * notice function.  Sets the next probe either way. */
int tl_rm_client_attach(tl_rm_client *client, unsigned request);

/* The manager was lost (STOPPED, GONE or HUNG from tl_rm_client_check):
 * tells the event and sets the next probe. */
void tl_rm_client_lost(tl_rm_client *client, int why);

/* Frees the slot if this process still holds it (at exit). */
void tl_rm_client_release(tl_rm_client *client);

/* In a forked child: the slot is the parent's, not this process's. */
void tl_rm_client_after_fork(tl_rm_client *client);

/* 1 when the slot is still this process's (not freed or taken since). */
int tl_rm_client_slot_ours(const tl_rm_client *client);

/* The manager's quantum in ns, 0 when the header's is out of range. */
uint64_t tl_rm_client_quantum_ns(const tl_rm_client *client);

/* Starts a runtime's watcher: a detached kernel thread with a small stack
 * that takes none of the program's signals, named `name`.  0, or an errno
 * value. */
int tl_rm_client_watcher(void *(*fn)(void *), void *arg, const char *name);

/* The CPUs a managed program's threads may use (into out): those it owns;
 * when it owns none (more programs than CPUs), the managed CPUs not
 * withheld for other work, where it runs beside their owners; never
 * outside `original` (the process's own CPUs), which is the answer when
 * nothing else is left.  Returns 1 when they are its own.  Both runtimes
 * confine their threads to them: the manager reads busy time on a CPU
 * nobody owns as other work. */
int tl_rm_client_target_cpus(const tl_rm_cpuset *owned, const tl_rm_header *hdr, const cpu_set_t *original,
                             cpu_set_t *out);

/* How long a watcher thread waits on its slot's epoch before it looks at
 * the manager again: a quantum + 25 ms (a manager that stops wakes every
 * slot at once; one that dies says nothing, and its heartbeat ages). */
uint64_t tl_rm_client_watch_ns(const tl_rm_header *hdr);

/* The slow half of tl_rm_client_check: the heartbeat is late. */
int tl_rm_client_check_late(tl_rm_client *client, uint64_t now, uint64_t beat, uint64_t quantum_ns);

/* 1 when an unmanaged process should look for a manager again. */
static inline int tl_rm_client_probe_due(const tl_rm_client *client, uint64_t coarse_now)
{
    return coarse_now >= __atomic_load_n(&client->next_probe_ns, __ATOMIC_RELAXED);
}

/* Whether the manager still manages this registered process, at now (the
 * coarse clock): TL_RM_CLIENT_MANAGED, STOPPED, GONE, HUNG or REPLACED.
 * Loads from the arena only, until the heartbeat is late. */
static inline int tl_rm_client_check(tl_rm_client *client, uint64_t now)
{
    const tl_rm_header *h = client->arena.hdr;
    if (__builtin_expect(__atomic_load_n(&h->manager_state, __ATOMIC_ACQUIRE) != TL_RM_MANAGER_RUNNING, 0))
        return TL_RM_CLIENT_STOPPED;
    uint64_t beat = __atomic_load_n(&h->manager_heartbeat_ns, __ATOMIC_ACQUIRE);
    uint64_t quantum = (uint64_t)__atomic_load_n(&h->quantum_ms, __ATOMIC_RELAXED) * UINT64_C(1000000);
    if (__builtin_expect(now > beat + quantum + UINT64_C(20000000), 0)) {
        int why = tl_rm_client_check_late(client, now, beat, quantum);
        if (why != TL_RM_CLIENT_MANAGED)
            return why;
    }
    const tl_rm_slot *s = __atomic_load_n(&client->my, __ATOMIC_ACQUIRE);
    if (__builtin_expect(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TL_RM_SLOT_ACTIVE ||
                             __atomic_load_n(&client->generation, __ATOMIC_RELAXED) !=
                                 __atomic_load_n(&h->generation, __ATOMIC_ACQUIRE),
                         0))
        return TL_RM_CLIENT_REPLACED;
    return TL_RM_CLIENT_MANAGED;
}

/* 1 once the manager has written this registration's allocation (before,
 * the slot's manager part is the previous occupant's). */
static inline int tl_rm_client_answered(tl_rm_client *client)
{
    if (__builtin_expect(__atomic_load_n(&client->answered, __ATOMIC_RELAXED), 1))
        return 1;
    const tl_rm_slot *s = __atomic_load_n(&client->my, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE) == client->epoch0)
        return 0;
    __atomic_store_n(&client->answered, 1, __ATOMIC_RELAXED); /* once, not at every region */
    return 1;
}

/* A managed region's request (its parallelism, 0 counting as 1),
 * published for the manager; returns the allocation (>= 1), 0 before the
 * manager has answered. */
static inline unsigned tl_rm_client_request(tl_rm_client *client, unsigned request)
{
    tl_rm_slot *s = __atomic_load_n(&client->my, __ATOMIC_ACQUIRE);
    if (request == 0)
        request = 1;
    if (__builtin_expect(__atomic_load_n(&s->requested, __ATOMIC_RELAXED) != request, 0))
        __atomic_store_n(&s->requested, request, __ATOMIC_RELAXED);
    if (__builtin_expect(!tl_rm_client_answered(client), 0))
        return 0;
    unsigned alloc = __atomic_load_n(&s->alloc, __ATOMIC_ACQUIRE);
    return alloc ? alloc : 1;
}

/* What the region ran: its team, when (the coarse clock), one more region. */
static inline void tl_rm_client_ran(tl_rm_client *client, unsigned team, uint64_t now)
{
    tl_rm_slot *s = __atomic_load_n(&client->my, __ATOMIC_ACQUIRE);
    __atomic_store_n(&s->last_team, team, __ATOMIC_RELAXED);
    __atomic_store_n(&s->heartbeat_ns, now, __ATOMIC_RELAXED);
    __atomic_store_n(&s->regions, __atomic_load_n(&s->regions, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* Whether a region asking for `specified` threads (its num_threads
 * clause; 0: none, nthreads-var) may get fewer, managed or cooperating.
 * `chosen` is dyn-var as the program (omp_set_dynamic) or the user
 * (OMP_DYNAMIC) set it, -1 when neither did: then only a region that
 * names no size may shrink. A num_threads clause is the team the program
 * wants; it may have sized per-thread data by it and read every entry
 * after the region (GROMACS's domain decomposition crashed on a team of
 * one). Both runtimes decide by this rule (docs/omp.md, "dyn-var"). */
static inline int tl_rm_region_may_shrink(int chosen, unsigned specified)
{
    return chosen >= 0 ? chosen : specified == 0;
}

/* ---- cooperating without a manager (coop.c) ---------------------------- */

/* A program that lost its manager (stopped, dead, hung) or was refused (a
 * full arena) cooperates: each region gets min(request, the CPUs of the
 * process that other work leaves idle), measured at most every
 * TL_RM_COOP_PERIOD_NS from two /proc/stat readings and the process's own
 * CPU time between them; until the first measurement, the allocation it
 * last had (or, refused before any, the CPUs not running other threads).
 * tl_rm_coop_begin runs under the runtime's lock; tl_rm_coop_team on any
 * thread (one measures, the others take the latest team). */
#define TL_RM_COOP_PERIOD_NS UINT64_C(50000000)

typedef struct tl_rm_coop {
    pthread_mutex_t lock;
    tl_rm_cpuset cpus;          /* the process's own CPUs */
    unsigned ncpus;
    tl_rm_cpustat readings[2];  /* the previous one is readings[current] */
    unsigned current;
    uint64_t self_ns;           /* the process's CPU time at that reading */
    int have;                   /* a previous reading exists */
    unsigned team;              /* the current team, >= 1 */
    uint64_t next_ns;           /* coarse clock: the next measurement */
    int begun;                  /* cooperation began: the process was managed or refused once */
} tl_rm_coop;

#define TL_RM_COOP_INITIALIZER {.lock = PTHREAD_MUTEX_INITIALIZER, .team = 1}

/* Cooperation starts on the process's CPUs `cpus` (its affinity before
 * any confinement), from the allocation `alloc` (0: none): when the
 * process loses its manager, with the allocation it had. */
void tl_rm_coop_begin(tl_rm_coop *co, const cpu_set_t *cpus, uint32_t alloc);
/* The same with no allocation, unless cooperation began already: when the
 * process may cooperate from now on (its first registration, a full
 * arena), so that however it loses the manager later it cooperates. */
void tl_rm_coop_begin_once(tl_rm_coop *co, const cpu_set_t *cpus);
/* Whether cooperation began: a region without a manager cooperates. */
static inline int tl_rm_coop_begun(const tl_rm_coop *co)
{
    return __atomic_load_n(&co->begun, __ATOMIC_ACQUIRE);
}
/* The team of a region that asks for `request` threads. */
unsigned tl_rm_coop_team(tl_rm_coop *co, unsigned request);
void tl_rm_coop_after_fork(tl_rm_coop *co);

#ifdef __cplusplus
}
#endif
#endif
