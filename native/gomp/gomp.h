/*
 * gomp.h - private structures of libthreadlab-gomp, GCC's libgomp ABI on
 * libthreadlab-ult (docs/omp-ult.md). Internals use the prefix tlg_; the
 * exported entries are the ABI's GOMP_* and omp_*.
 *
 * The objects, as in libgomp:
 *   tlg_thread  an OpenMP thread's state in one team (its implicit task,
 *               its place in the team's work shares). Reached through the
 *               ULT's local pointer (tl_ult_get_local); NULL outside any
 *               team: the thread is then the initial thread of its own
 *               contention group (tlg_initial()).
 *   tlg_team    a team: its threads' states, barrier, work-share ring,
 *               task queues.
 *   tlg_task    an explicit task (implicit tasks are embedded in
 *               tlg_thread); it carries the data environment (ICVs).
 *   tlg_ws      a work share: the state of one worksharing construct
 *               (loop, sections, single with copyprivate, scope), in a
 *               ring of TLG_WS_RING so that threads may be up to that many
 *               nowait constructs apart.
 */
#ifndef THREADLAB_GOMP_H
#define THREADLAB_GOMP_H

#include "threadlab/compiler.h"
#include "threadlab/ult.h"
#include "abi.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TLG_EXPORT __attribute__((visibility("default")))
#define TLG_LIKELY(x) __builtin_expect(!!(x), 1)
#define TLG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TLG_LINE 64
#define TLG_ALIGNED __attribute__((aligned(TLG_LINE)))
#define TLG_NORETURN __attribute__((noreturn))
#define TLG_PRINTF(a, b) __attribute__((format(printf, a, b)))

#define RLX memory_order_relaxed
#define ACQ memory_order_acquire
#define REL memory_order_release
#define ACQREL memory_order_acq_rel
#define SEQ memory_order_seq_cst

typedef void (*tlg_fn)(void *);

typedef unsigned long long tlg_ull;

/* Schedule kinds, as GCC passes them to GOMP_loop_start (libgomp's
 * enum gomp_schedule_type) and as omp_sched_t numbers them (1..4). */
enum {
    TLG_SCHED_RUNTIME = 0,
    TLG_SCHED_STATIC = 1,
    TLG_SCHED_DYNAMIC = 2,
    TLG_SCHED_GUIDED = 3,
    TLG_SCHED_AUTO = 4,
};
#define TLG_SCHED_MONOTONIC 0x80000000u

/* GOMP_task flags (GCC's gomp-constants.h) */
#define TLG_TASK_UNTIED (1u << 0)
#define TLG_TASK_FINAL (1u << 1)
#define TLG_TASK_MERGEABLE (1u << 2)
#define TLG_TASK_DEPEND (1u << 3)
#define TLG_TASK_PRIORITY (1u << 4)
#define TLG_TASK_UP (1u << 8)
#define TLG_TASK_GRAINSIZE (1u << 9)
#define TLG_TASK_IF (1u << 10)
#define TLG_TASK_NOGROUP (1u << 11)
#define TLG_TASK_REDUCTION (1u << 12)
#define TLG_TASK_DETACH (1u << 13)

/* omp_depend_t kinds (GCC's gomp-constants.h) */
#define TLG_DEPEND_IN 1
#define TLG_DEPEND_OUT 2
#define TLG_DEPEND_INOUT 3
#define TLG_DEPEND_MUTEXINOUTSET 4
#define TLG_DEPEND_INOUTSET 5

/* ---- ICVs (env.c, icv.c) --------------------------------------------- */

/* The ICVs of a data environment (OpenMP 5.1, 2.4), copied into every
 * task. */
typedef struct tlg_icv {
    unsigned nthreads;        /* nthreads-var, this level */
    unsigned thread_limit;    /* thread-limit-var */
    unsigned run_sched;       /* run-sched-var kind, | TLG_SCHED_MONOTONIC */
    long run_chunk;           /* its chunk (0: default) */
    unsigned max_active_levels;
    unsigned bind;            /* bind-var, this level (omp_proc_bind_t) */
    int dyn;                  /* dyn-var */
    int dyn_set;              /* set by omp_set_dynamic (tlg_dyn) */
    int default_device;
    uintptr_t def_allocator;  /* def-allocator-var (an omp_allocator_handle_t) */
} tlg_icv;

/* Process-wide settings: parsed once from the environment (env.c). */
typedef struct tlg_env {
    tlg_icv icv;              /* the initial data environment */
    unsigned *nthreads_list;  /* OMP_NUM_THREADS=4,2: per nesting level */
    unsigned nthreads_len;
    unsigned *bind_list;      /* OMP_PROC_BIND=spread,close */
    unsigned bind_len;
    size_t stacksize;         /* OMP_STACKSIZE (0: TLG_DEFAULT_STACK) */
    int wait_policy;          /* -1 unset, 0 passive, 1 active */
    uint64_t spin_ns;         /* how long a waiter spins before it parks */
    uint64_t dock_ns;         /* how long a worker waits for its team's next region (UINT64_MAX until tlg_init: as an idle VP spins) */
    int cancellation;         /* OMP_CANCELLATION */
    int max_task_priority;
    int target_offload;       /* OMP_TARGET_OFFLOAD: TLG_OFFLOAD_* */
    int nteams;               /* nteams-var (OMP_NUM_TEAMS; 0: unset) */
    int teams_thread_limit;   /* teams-thread-limit-var (OMP_TEAMS_THREAD_LIMIT; 0: unset) */
    char *affinity_format;    /* affinity-format-var (OMP_AFFINITY_FORMAT), malloc'd */
    int display_affinity;     /* OMP_DISPLAY_AFFINITY */
    int display_env;          /* OMP_DISPLAY_ENV: 0, 1 true, 2 verbose */
    int tls_mode;             /* TLG_TLS_* (THREADLAB_GOMP_TLS) */
    /* GOMP_task's fast path is open: identity mode, and no cancelled
     * region or taskgroup to look for (OMP_CANCELLATION false) */
    int task_fast;
    int dyn_explicit;         /* OMP_DYNAMIC was given */
    int quiet;                /* THREADLAB_GOMP_QUIET */
    unsigned nplaces;         /* one place per allowed CPU when bound */
    int *place_cpu;
    cpu_set_t cpus;           /* the process's CPUs at start (process_cpus) */
    unsigned ncpus;           /* CPU_COUNT(&cpus), >= 1 */
} tlg_env;

#define TLG_DEFAULT_STACK ((size_t)8 << 20)
/* An OpenMP thread's stack: OMP_STACKSIZE, else TLG_DEFAULT_STACK; at
 * least PTHREAD_STACK_MIN, as a pthread's would be. */
size_t tlg_stack_size(void);
/* How long a waiter spins before it parks, OMP_WAIT_POLICY unset (env.c). */
#define TLG_DEFAULT_SPIN_NS UINT64_C(3000)

enum { TLG_TLS_IDENTITY = 0, TLG_TLS_VP = 1 };
enum { TLG_OFFLOAD_DEFAULT = 0, TLG_OFFLOAD_MANDATORY = 1, TLG_OFFLOAD_DISABLED = 2 };

/* The host is the only device: omp_get_num_devices() is 0 and the host's
 * number, omp_get_initial_device(), is that count (as in libgomp). */
#define TLG_INITIAL_DEVICE 0

extern tlg_env tlg_env_v;

void tlg_env_init(void);                   /* env.c, once */
/* affinity-format-var: its default, and setting it from len bytes of
 * format (icv.c; a Fortran string has no terminating NUL) */
#define TLG_AFFINITY_FORMAT "level %L thread %i affinity %A"
void tlg_set_affinity_format(const char *format, size_t len);
/* The affinity format expanded for the calling thread into buffer (at
 * most size bytes, unterminated); returns the full length (icv.c). */
size_t tlg_format_affinity(char *buffer, size_t size, const char *format);
/* Writes the expansion and a newline to stderr (omp_display_affinity). */
void tlg_print_affinity(const char *format);
void tlg_display_env(int verbose);         /* env.c */

/* ---- work shares (work.c) --------------------------------------------- */

#define TLG_WS_RING 16

typedef struct tlg_ws {
    /* (construct sequence number << 1) | 1 when initialised; sequence
     * numbers of constructs that use a work share count from 0 */
    _Atomic int64_t tag;
    _Atomic unsigned left;    /* threads that have not ended it yet */
    int sched;                /* TLG_SCHED_STATIC/DYNAMIC/GUIDED */
    int ull;                  /* unsigned long long iteration space */
    int ordered;              /* an ordered loop */
    int add_ok;               /* dynamic: next + (nthreads + 1) * chunk cannot wrap */
    /* the loop as n logical iterations 0..n-1 (index = start + i * incr,
     * long or unsigned long long), handed out from `next`; chunk in
     * iterations (0: static without a chunk) */
    tlg_ull n, chunk;
    long start, incr;
    tlg_ull start_ull, incr_ull;
    unsigned sect_count;
    void *copyprivate;        /* single copyprivate */
    uintptr_t *task_reductions;
    void *mem;                /* GOMP_loop_start/sections2_start mem */
    struct tlg_doacross *doacross; /* a doacross loop's progress (doacross.c) */
    /* Written by every chunk or section taken: a line of its own, so that
     * taking one does not take the fields above (read at every chunk) from
     * the other threads' caches. */
    _Atomic tlg_ull next TLG_ALIGNED;
    _Atomic unsigned sect_next;
    /* ordered: the chunk ticket allowed in its ordered region; chunk
     * tickets are handed out in iteration order under `lock` */
    _Atomic uint32_t ordered_cur;
    uint32_t ordered_tickets;
    _Atomic uint32_t lock;
} TLG_ALIGNED tlg_ws;

/* ---- tasks (task.c) ---------------------------------------------------- */

#define TLG_TASK_STRICT (1u << 14)

typedef struct tlg_taskgroup {
    struct tlg_taskgroup *prev;
    _Atomic long pending;     /* tasks of this group not finished */
    uintptr_t *reductions;    /* task reductions registered here (a chain) */
    int workshare;            /* created for a worksharing task reduction */
    _Atomic int cancelled;    /* cancel taskgroup (parallel.c) */
} tlg_taskgroup;

struct tlg_dep_table;
struct tlg_thread;

typedef struct tlg_task {
    /* line 1: written by its creator, read by the thread that runs it */
    tlg_fn fn;                /* a deferred task's body and arguments */
    void *data;
    struct tlg_task *parent;
    struct tlg_team *team;
    tlg_taskgroup *taskgroup; /* the innermost taskgroup it belongs to */
    struct tlg_thread *thr;   /* the team thread running it */
    unsigned ndeps, nout;     /* its dependences (dep_addr, outs first) */
    unsigned char final, implicit, deferred;
    unsigned char stack;      /* its descriptor is on its creator's stack (run_inline) */
    _Atomic int detach_left;  /* detach: the body and the event, each counts 1 */
    /* line 2: what the thread that runs it and frees it reads and writes
     * (a thief of a task without dependences and children touches line 1,
     * this one and the arguments, no more) */
    struct tlg_thread *home;  /* the thread whose free list its memory returns to */
    struct tlg_task *next_free;
    struct tlg_dep_table *deps; /* the table of its children's dependences */
    struct tlg_task **succ;   /* tasks waiting for it (under the parent's table lock) */
    struct tlg_task *moved;   /* a stack descriptor promoted: its allocated copy */
    void *key;                /* who owns nest locks while it runs (NULL: itself) */
    _Atomic long created;     /* children created (deferred ones: taskwait), by the thread running it */
    uint32_t alloc;           /* bytes of its allocation (0: not freed here) */
    /* it has had a child: refs, finished and waiting (the line written by
     * other threads, which its creator leaves alone) are set up, by the
     * thread running it, when it creates its first child */
    unsigned char kids;
    /* deferred, its arguments copied by cpyfn: it runs even once its
     * region or taskgroup is cancelled (its body destroys the copies) */
    unsigned char copied;
    /* line 3: its data environment and its own dependences (its parent's
     * table: addresses at dep_addr[0..ndeps), outs first) */
    tlg_icv icv;
    void **dep_addr;
    unsigned nsucc, succ_cap;
    int done;                 /* finished (under the parent's table lock) */
    int priority;             /* its priority clause, clamped to max-task-priority-var */
    unsigned prio_seq;        /* queued with a priority: the order among equals */
    unsigned depth;           /* parents above it (implicit tasks: 0) */
    struct tlg_task *jump;    /* an ancestor further up (task.c, "Scheduling constraint") */
    /* written by other threads (its children as they finish, its
     * predecessors): a line of its own, so that creating children and
     * finishing them do not take each other's line */
    /* references to its memory, once it has had a child (kids): 1 until
     * it finishes, plus 1 per child still allocated (a child points to
     * its parent until it is freed, so that a chain of parents can be
     * walked); the memory of an explicit task goes when it drops to 0 (at
     * once when it finishes without having had a child). Implicit tasks
     * are not counted (they outlive their region's tasks) */
    _Atomic long refs TLG_ALIGNED;
    _Atomic long finished;    /* deferred children finished (taskwait waits for created) */
    _Atomic int waiting;      /* in taskwait: its last child bumps the event */
    _Atomic int npred;        /* predecessors not finished (+1 while registering), with dependences only */
} tlg_task;

/* ---- threads and teams (team.c) ---------------------------------------- */

typedef struct tlg_team tlg_team;

/* A contention group begun by a target region run on the host
 * (target.c): the OpenMP threads its teams hold, for thread-limit-var.
 * NULL stands for the program's initial group (team.c counts it). */
typedef struct tlg_cg {
    _Atomic unsigned busy;
    /* encountered outside any parallel region: its top-level regions are
     * the process's for the resource manager (rm.c), as the program's own */
    int top;
} tlg_cg;

typedef struct tlg_thread {
    /* what the master writes as it starts a region (region_start, spawn),
     * together on the first two lines; the rest the thread sets itself */
    tlg_team *team;           /* NULL: the initial thread of a group */
    unsigned id;              /* thread number in the team */
    /* a worker at the region's end (worker_end): TLG_END_LEAVING while it
     * leaves before the region's first task, which tlg_recall_workers
     * turns into TLG_END_RECALLED to run tasks in its place */
    _Atomic int end_state;
    /* a worker of a top-level team at the region's end waits a while for
     * the team's next region (TLG_DOCK_*, team.c) wearing dock_identity */
    _Atomic uint32_t dock;
    tl_ult_identity *dock_identity;
    tl_ult_identity *identity;
    tl_ult_spawn start;       /* its ULT, made by the VP it starts on (spawn) */
    unsigned level;           /* omp_get_level */
    unsigned active_level;    /* omp_get_active_level */
    /* what omp_get_max_threads() last answered outside any active region,
     * until the thread's next region, which then runs that team
     * (tlg_resolve_threads: programs size per-thread data by it) */
    unsigned promised;
    unsigned team_num, num_teams; /* host teams construct (num_teams 0: one team) */
    tlg_cg *cg;               /* its contention group (NULL: the program's initial one) */
    tlg_task implicit;        /* its implicit task */
    tlg_task *task;           /* the task it runs now */
    /* work shares */
    int64_t ws_seq;           /* the next construct's sequence number */
    /* it left a cancelled region: 1 + ws_seq then (0: it has not); the
     * constructs from ws_seq on go on without it (tlg_ws_gone) */
    _Atomic int64_t ws_gone;
    tlg_ws *ws;               /* the current one */
    unsigned long single_count;
    unsigned long static_trip;
    uint32_t ord_ticket;      /* ordered: the ticket of its current chunk */
    int ord_held;             /* it has a ticket it has not passed on */
    struct tlg_thread *prev;  /* the master's state outside this team */
    tl_ult_identity *top_identity; /* identity k of the top level, once looked up (kept with the cached team) */
    struct tlg_tops *tops;    /* a kernel thread's state outside any team: its top-level teams' identities (team.c) */
    unsigned top_gen;         /* the identities' generation it was looked up in (tlg_pause) */
    /* OMP_DISPLAY_AFFINITY: what it showed last (shown_n 0: nothing yet) */
    unsigned shown_level, shown_id, shown_n;
    int shown_place;
    tl_ult_deque *tq;         /* its queued tasks (it owns the bottom) */
    /* from here, what it writes per task, on lines of their own: thieves
     * read tq above at every steal */
    tlg_task *free_tasks TLG_ALIGNED; /* recycled task memory */
    unsigned nfree_tasks;
    /* memory of tasks of one other thread of its team (gone_head->home)
     * that it freed, chained from gone_head to gone_tail, handed back
     * gone_count at a time (task.c) */
    unsigned gone_count;
    tlg_task *gone_head, *gone_tail;
    unsigned inline_depth;    /* tasks running now on its stack, nested (run now, not queued) */
    unsigned inline_credit;   /* tasks it may still run at once before it looks at its queue again */
    unsigned char hungry;     /* it set its team's hungry (and clears it when it creates a task or its wait ends) */
    long pending_done;        /* tasks of its team it finished, not yet subtracted from task_pending */
    long pending_credit;      /* added to task_pending ahead, for tasks it has not created yet */
    /* task memory of its own freed by other threads, pushed here (a
     * stack of next_free; it takes the whole list when its own is empty) */
    tlg_task *_Atomic remote_free TLG_ALIGNED;
    _Atomic unsigned long remote_count; /* about how many (a cap, not exact) */
    int uid;                  /* OMP_1.0 nest locks: a thread number, 1.. */
    tlg_team *cached_team;    /* the team it last started as master */
    tlg_ws *solo;             /* work share of orphaned constructs */
    void *legacy;             /* GOMP_parallel_start's region */
} tlg_thread;

/* A node of the barrier's arrival tree: a count on a line of its own. */
typedef struct {
    _Atomic uint32_t arrived;
} TLG_ALIGNED tlg_bar_node;

struct tlg_team {
    unsigned nthreads;
    /* the region created a task (written once per region: on this
     * read-mostly line, every idle waiter reads it); its master reached
     * the region's end: until both, a worker at the end stays to run
     * tasks (the master may still create some: leaving when none is
     * pending would leave them all to the master) */
    _Atomic int tasks_seen;
    _Atomic int master_ending;
    unsigned level, active_level;
    unsigned team_num, num_teams; /* the master's (host teams) */
    tlg_cg *cg;               /* the master's contention group */
    int ws0;                  /* the region starts with work share 0 set up (combined loop) */
    tlg_fn fn;
    void *data;
    tlg_icv icv;              /* the members' implicit tasks start with it */
    /* waiters of anything task-related or the barrier park on it; the
     * barrier's generation beside it, so that a barrier's waiters read
     * one line, which only the release writes (arrivals are counted on
     * lines of their own: bar_nodes) */
    _Atomic uint32_t event TLG_ALIGNED;
    _Atomic uint32_t nparked;
    /* a waiter found no task to run (tlg_wait_step): creators queue new
     * tasks while it is set; while it is clear (every thread busy) a
     * creator that has TLG_KEEP tasks queued runs new ones at once
     * (task.c). Written only by the thread that set it, which clears it
     * when it creates a task or its barrier or taskwait ends (other
     * waits leave it set: creators then queue up to the cutoff). Not
     * when it runs one: a thread that runs tasks others create, one
     * after another (EPCC's master_task), then wrote it twice per task,
     * on the line its creator reads at each task */
    _Atomic uint32_t hungry;
    _Atomic uint32_t bar_gen;
    tlg_bar_node *bar_nodes;  /* the barrier's arrival tree (barrier.c), cap's worth */
    /* explicit tasks not finished: a creator adds them TLG_PENDING_BATCH
     * at a time ahead (pending_credit), a thread that finishes tasks of
     * its own team subtracts them in batches; both settle (tlg_task_flush)
     * before a thread waits and at barriers, so the count never reaches 0
     * early and is exact whenever every thread waits. Neither the creator
     * nor the thread running its tasks writes the line per task */
    _Atomic long task_pending TLG_ALIGNED;
    _Atomic uint32_t orphan_lock; /* tasks made ready by threads of no team */
    tlg_task *_Atomic orphans; /* written under orphan_lock */
    _Atomic long prio_queued; /* tasks in prio (task.c) */
    struct tlg_prio *_Atomic prio; /* queued tasks with a priority, highest first */
    /* workers done with the region, with TLG_END_BIAS and TLG_END_PARKED
     * (region_end, worker_end) */
    _Atomic uint32_t finished TLG_ALIGNED;
    _Atomic int64_t ws_high;  /* the most constructs a worker used (said as it finishes: the master reads this line anyway) */
    _Atomic unsigned long single_count TLG_ALIGNED;
    /* written only when a cancel construct fires (parallel.c) */
    _Atomic int cancelled;    /* cancel parallel */
    _Atomic int ws_cancelled; /* cancel for / sections: until the construct's barrier */
    uintptr_t *reductions;    /* GOMP_parallel_reductions */
    tlg_taskgroup *par_taskgroup;
    size_t cap;               /* threads this allocation holds */
    int dock;                 /* this region's workers may wait for its next (team.c: docking) */
    unsigned ws_dirty;        /* slots of the work-share ring used since tlg_ws_reset (the first ws_dirty) */
    tlg_ws ws[TLG_WS_RING];
    tlg_thread *threads[];    /* [nthreads] */
};

/* The calling OpenMP thread's state: a team member, or the initial
 * thread of its contention group (never NULL). Inline: every task
 * creation and omp_get_thread_num() asks. In identity mode every OpenMP
 * thread has TLS of its own wherever it runs (its identity, or the
 * initial thread's), so its state is one TLS word (tlg_tls_cur: one
 * fs-relative load, where the ULT's local pointer took a call and three
 * dependent loads); in vp mode a VP's TLS is shared by the OpenMP threads
 * it runs, so a team member is its ULT's local pointer. */
extern __thread tlg_thread *tlg_tls_cur __attribute__((tls_model("initial-exec")));
tlg_thread *tlg_self_slow(void);
static inline tlg_thread *tlg_self(void)
{
    tlg_thread *t = tlg_env_v.tls_mode == TLG_TLS_IDENTITY ? tlg_tls_cur : tl_ult_get_local();
    return TLG_LIKELY(t) ? t : tlg_self_slow();
}
static inline tlg_icv *tlg_icv_cur(void)
{
    return &tlg_self()->task->icv;
}

/* Starts a team of nthreads (already resolved) running fn(data) and runs
 * the master's part; returns when the region is over. ws0: the first work
 * share, set up by the combined constructs (NULL otherwise). */
void tlg_parallel(tlg_fn fn, void *data, unsigned nthreads, unsigned flags,
                  void (*ws0)(tlg_team *team, void *arg), void *ws0_arg, uintptr_t *reductions);
/* A combined parallel loop as a work descriptor (team.c): 1 if it ran,
 * 0 if it must run as a team of ULTs (tlg_parallel). */
int tlg_parallel_workdesc(tlg_fn fn, void *data, unsigned nthreads, void (*ws0)(tlg_team *, void *),
                          void *ws0_arg);
/* GOMP 1.0's split region: the caller runs the master's part between. */
void tlg_parallel_start(tlg_fn fn, void *data, unsigned nthreads, void (*ws0)(tlg_team *, void *), void *ws0_arg);
void tlg_parallel_end(void);
/* The region's first task is being queued (tasks_seen was just set):
 * every worker that has already left its end (before any task existed)
 * is brought back, as a new ULT of the same thread, to help run the
 * region's tasks until its master ends it. */
void tlg_recall_workers(tlg_team *team);
enum { TLG_END_RUNNING = 0, TLG_END_LEAVING = 1, TLG_END_RECALLED = 2 };
/* A team's finished count: TLG_END_BIAS plus the workers done (a recall
 * may take one back before its worker has counted: the bias keeps that
 * off the flag), and TLG_END_PARKED: the master waits for the last. */
#define TLG_END_BIAS (UINT32_C(1) << 20)
#define TLG_END_PARKED (UINT32_C(1) << 31)

/* The team size for a parallel construct (num_threads clause or 0, the
 * count of sections or 0). */
unsigned tlg_resolve_threads(unsigned specified, unsigned count);
/* The state of a thread outside any team (the initial thread of a
 * contention group): one per kernel thread or ULT that never joined a
 * team. */
tlg_thread *tlg_initial(void);
/* The state of a new initial thread (of contention group cg) with the
 * ICVs given, outside any team; and its end, with what it cached (a
 * target region run on the host: target.c). */
tlg_thread *tlg_thread_new(const tlg_icv *icv, tlg_cg *cg);
void tlg_thread_free(tlg_thread *t);
/* Makes t the calling OpenMP thread's state (what tlg_self answers). */
void tlg_set_current(tlg_thread *t);

/* Runtime start (idempotent; from the first construct that needs threads). */
void tlg_init(void);
int tlg_ult_ready(void);
/* omp_pause_resource on the host: outside every region (0; -1 inside
 * one), the OpenMP threads' TLS identities are retired and the next
 * teams get new ones (their threadprivate data starts afresh, as threads
 * libgomp destroyed and made again); a no-op while another top-level team
 * runs, and in vp mode. */
int tlg_pause(void);
/* 1 in a process forked after the runtime started: teams run serially. */
extern int tlg_forked;

/* ---- barrier and waiting (barrier.c) ----------------------------------- */

/* The team barrier: every thread arrives, explicit tasks of the team run
 * meanwhile, and nobody leaves before all tasks created before it are
 * done. */
void tlg_barrier(tlg_thread *thr);
/* The cancellable barrier (GOMP_barrier_cancel, the ends of loops and
 * sections that may be cancelled; one only while OMP_CANCELLATION is
 * true): a cancel parallel releases its waiters, and a thread of a
 * cancelled region does not arrive at all. True if the region was
 * cancelled: the caller leaves it. */
bool tlg_barrier_cancel(tlg_thread *thr);
/* A team's next region starts after a cancelled one: threads left that
 * region's barriers before everyone arrived, their counts stay. */
void tlg_bar_reset(tlg_team *team);
/* Nodes of the arrival tree of a team of n threads. */
size_t tlg_bar_nodes(unsigned n);
/* Wakes everything waiting on the team's event word. */
void tlg_team_event(tlg_team *team, int all);
/* Spins (as OMP_WAIT_POLICY says), then parks, while *word == val. */
void tlg_wait_word(_Atomic uint32_t *word, uint32_t val);
/* A waiter's spin so far, across its tlg_wait_step calls (zeroed before
 * the first: tlg_spin spin = {0}): steps taken, and when it began. */
typedef struct {
    uint64_t since;
    unsigned steps;
} tlg_spin;
/* thr creates a task, or its wait ends: the team's hungry flag, if thr
 * set it, goes (task.c's keep rule; barrier.c sets it) */
static inline void tlg_hungry_clear(tlg_thread *thr)
{
    if (thr->hungry) {
        thr->hungry = 0;
        atomic_store_explicit(&thr->team->hungry, 0, RLX);
    }
}
/* One pause of a spin that lasts budget_ns: 1 while within it (the clock
 * read every 64th pause, the time counted from the first read). */
int tlg_spin_within(tlg_spin *spin, uint64_t budget_ns);
/* One step of waiting for a team condition that a task may fulfil: runs
 * a task if one can run, else spins or parks on the team's event word
 * (seen before the condition was checked). */
void tlg_wait_step(tlg_thread *thr, uint32_t seen_event, tlg_spin *spin, tlg_task *ancestor);
/* Waits, as tlg_wait_step does, until done(arg) holds: a condition another
 * thread of the team makes true, then announces with tlg_team_signal. */
void tlg_wait_until(tlg_thread *thr, int (*done)(const void *), const void *arg);
/* After a change that tlg_wait_until's waiters may wait for: wakes them if
 * any parked (team may be NULL: nobody waits). */
void tlg_team_signal(tlg_team *team);

/* ---- work shares (work.c) ----------------------------------------------- */

/* Enters the next worksharing construct: returns 1 if the caller must
 * initialise it (then tlg_ws_ready), 0 if another thread did. */
int tlg_ws_start(tlg_thread *thr);
void tlg_ws_ready(tlg_thread *thr);
/* Leaves the current one (nowait); the last thread frees what it holds. */
void tlg_ws_end_nowait(tlg_thread *thr);
/* Leaves it and waits at its barrier (cancellable: tlg_barrier_cancel);
 * true if the region was cancelled. */
bool tlg_ws_end(tlg_thread *thr, bool cancellable);
/* The caller leaves its cancelled region (a cancellation point said so):
 * it will never reach the constructs it has not reached, so their work
 * shares do not wait for it to leave them. */
void tlg_ws_gone(tlg_thread *thr);
/* Makes the first n slots of the ring (those a region used) as new. */
void tlg_ws_reset(tlg_team *team, unsigned n);
/* A worksharing construct's start with its optional task reductions and
 * shared zeroed memory (GOMP_loop_start and co.): the thread that
 * initialises the work share calls init(thr, ws, arg). */
typedef void (*tlg_ws_init_fn)(tlg_thread *thr, tlg_ws *ws, void *arg);
void tlg_ws_enter(tlg_thread *thr, tlg_ws_init_fn init, void *arg, uintptr_t *reductions, void **mem);
/* Work share 0 set up before a combined construct's team runs: cleared,
 * then (once the caller has initialised it) marked ready. */
tlg_ws *tlg_ws0(tlg_team *team);
void tlg_ws0_ready(tlg_ws *ws);

/* ---- loops (iter.c) -------------------------------------------------------- */

void tlg_loop_init(tlg_ws *ws, long start, long end, long incr, int sched, long chunk, unsigned nthreads);
void tlg_loop_init_ull(tlg_ws *ws, bool up, tlg_ull start, tlg_ull end, tlg_ull incr, int sched,
                       tlg_ull chunk, unsigned nthreads);
/* The next chunk of the caller: 1 and [*s, *e), or 0 when none is left. */
int tlg_iter_next(tlg_thread *thr, long *s, long *e);
int tlg_iter_next_ull(tlg_thread *thr, tlg_ull *s, tlg_ull *e);
/* The runtime schedule resolved: kind (STATIC/DYNAMIC/GUIDED) and chunk. */
int tlg_runtime_sched(long *chunk);
/* GOMP_loop_start's sched argument resolved. */
int tlg_adjust_sched(long sched, long *chunk);

/* ---- doacross loops (doacross.c) -------------------------------------------- */

/* Frees a work share's doacross state (its slot is reused, or the team ended). */
void tlg_doacross_free(tlg_ws *ws);

/* ---- ordered (ordered.c) --------------------------------------------------- */

/* Called with a new chunk: its ticket. */
void tlg_ordered_take(tlg_thread *thr, uint32_t ticket);
/* Called when the caller's chunk is done (next chunk or loop end). */
void tlg_ordered_pass(tlg_thread *thr);

/* ---- tasks (task.c) -------------------------------------------------------- */

/* Runs one queued task of the team if any can run (with ancestor: only
 * its descendants, the tied-task scheduling constraint of a task waiting
 * in taskwait or taskgroup end): 1 if it did. */
int tlg_task_run_one(tlg_thread *thr, tlg_task *ancestor);
void tlg_task_thread_init(tlg_thread *thr);
/* Whether any task of the team is queued (its threads' deques, the
 * orphans): a hint, exact once the caller has counted itself parked. */
int tlg_task_queued(tlg_team *team);
/* Subtracts the tasks the thread finished from its team's task_pending
 * (bumping the event when it reaches 0): before it waits for anything. */
void tlg_task_flush_some(tlg_thread *thr);
static inline void tlg_task_flush(tlg_thread *thr)
{
    if (thr->pending_done | thr->pending_credit | thr->gone_count)
        tlg_task_flush_some(thr);
}
/* Whether no task of the team is pending, settling the caller's counts
 * only when that may be so (a thread that runs tasks in a loop would
 * otherwise write the count's line per task). */
static inline int tlg_tasks_done(tlg_thread *thr, tlg_team *team)
{
    if (atomic_load_explicit(&team->task_pending, ACQ) - thr->pending_done - thr->pending_credit > 0)
        return 0;
    tlg_task_flush(thr);
    return atomic_load_explicit(&team->task_pending, ACQ) <= 0;
}
/* The taskgroup a cancel taskgroup in tg cancels: a worksharing
 * construct's own taskgroup (for its task reductions) is the runtime's,
 * the one around it the program's, as in libgomp. */
static inline tlg_taskgroup *tlg_taskgroup_cancels(tlg_taskgroup *tg)
{
    return tg->workshare && tg->prev ? tg->prev : tg;
}
/* Whether a task of taskgroup tg (NULL: none) in team is not to start,
 * or not to be created: its region or its taskgroup was cancelled, as
 * libgomp asks. Only asked while OMP_CANCELLATION is true; outside any
 * team nothing is cancelled. */
static inline bool tlg_cancelled(tlg_team *team, tlg_taskgroup *tg)
{
    if (!team)
        return false;
    if (atomic_load_explicit(&team->cancelled, RLX))
        return true;
    return tg && atomic_load_explicit(&tlg_taskgroup_cancels(tg)->cancelled, RLX);
}
/* An implicit task ends (its region's tasks are all done). */
void tlg_task_implicit_end(tlg_task *t);
void tlg_task_thread_fini(tlg_thread *thr);
/* A team's memory goes: what its task queues hold besides its threads'. */
void tlg_task_team_fini(tlg_team *team);
/* Registers task reductions for a whole team (GOMP_parallel_reductions). */
tlg_taskgroup *tlg_parallel_reductions_register(uintptr_t *data, unsigned nthreads);
void tlg_reductions_free(uintptr_t *data);
void tlg_workshare_taskgroup_start(tlg_thread *thr);
/* Waits, running tasks, for the earlier sibling tasks that the depend
 * array (GCC's layout) names (taskwait depend; an undeferred task). */
void tlg_wait_deps(void **depend);
void tlg_workshare_reductions_register(tlg_thread *thr, uintptr_t *data, uintptr_t *first);
void tlg_taskgroup_register(tlg_thread *thr, uintptr_t *data);

/* ---- locks (lock.c) -------------------------------------------------------- */

/* A 4-byte lock (threadlab/word_lock.h): 0 free, 1 held, 2 held with
 * waiters (ULTs park with tl_ult_wait; other kernel threads spin, yield
 * and nap). */
void tlg_lock_word(_Atomic uint32_t *w);
void tlg_unlock_word(_Atomic uint32_t *w);
int tlg_trylock_word(_Atomic uint32_t *w);

/* ---- the resource manager (rm.c) --------------------------------------------- */

/* At the start of a top-level region: publishes its request and returns
 * the bound of a dynamic team (0 unmanaged or not answered yet): the
 * allocation, or for a region that may be long the request, up to the VPs
 * (rm.c). */
unsigned tlg_rm_region(unsigned request);
/* At a safe point: follows the allocation (cheap when nothing changed)
 * and moves the caller off a VP that must stop; 1 when the caller is a
 * work-descriptor part on a VP that must stop (tl_ult_safe_point). */
int tlg_safe_point(void);
void tlg_rm_init(void);
int tlg_rm_managed(void);
/* Applies the current allocation now (the runtime has just started). */
void tlg_rm_follow(void);
/* The effective dyn-var (true by default while managed or cooperative). */
int tlg_dyn(const tlg_icv *icv);
/* dyn-var as the program or the user set it, -1 when neither did. */
int tlg_dyn_chosen(const tlg_icv *icv);

/* ---- messages (error.c) --------------------------------------------------------- */

TLG_NORETURN void tlg_fatal(const char *fmt, ...) TLG_PRINTF(1, 2);
void tlg_notice(const char *fmt, ...) TLG_PRINTF(1, 2);
/* An entry the runtime does not implement: names it and aborts. */
TLG_NORETURN void tlg_unsupported(const char *entry, const char *why);

void *tlg_malloc(size_t n);
void *tlg_aligned_alloc(size_t align, size_t n);

uint64_t tlg_now_ns(void);

#endif
