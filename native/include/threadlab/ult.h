/*
 * threadlab/ult.h - libthreadlab-ult: M:N user-level threads.
 *
 * User-level threads (ULTs) are multiplexed on "virtual processors" (VPs):
 * kernel threads, one per allowed CPU by default, optionally pinned. A ULT
 * that blocks on a primitive of this library (mutex, condition variable,
 * semaphore, barrier, join, sleep, dependence wait) suspends only itself:
 * its VP switches to another ready ULT. The runtime follows NTLib (Barekas
 * et al.): per-VP ready queues with work stealing, work descriptors for
 * parallel loops and dependence counters for nested threads. See
 * docs/ult.md for the design.
 *
 * Conventions
 *  - Every function returns 0 or a positive errno value unless documented
 *    otherwise. EPERM: the call needs a ULT caller (see "Contexts").
 *    EAGAIN: the runtime is not initialised.
 *  - Contexts. Code runs in one of three contexts:
 *      ULT       - a thread created by tl_ult_create*, or the thread that
 *                  called tl_ult_init (the "primordial" ULT, bound to VP 0);
 *      VP        - a work-descriptor body running directly on a VP;
 *      external  - any other kernel thread of the process.
 *    Blocking calls (join, yield, *_lock slow path, *_wait, sleep,
 *    dep_wait) need a ULT. Non-blocking calls that make threads runnable
 *    (create, unlock, signal, broadcast, post, dep_satisfy) work from every
 *    context once the runtime is initialised.
 *  - Handles (tl_ult_t) are like pthread_t: valid until the thread is
 *    joined, or until it exits if detached.
 *
 * Limits (documented in docs/ult.md)
 *  - Scheduling is cooperative: a ULT runs until it blocks, yields or
 *    exits. A blocking *system call* (read, nanosleep, pthread_mutex_lock,
 *    ...) blocks its whole VP and every ULT queued only there.
 *  - ULTs migrate between VPs at blocking points: kernel-thread TLS
 *    (__thread variables, errno) refers to the current VP; do not keep the
 *    address of a __thread variable across a blocking call. Use
 *    tl_ult_setspecific for per-ULT data.
 *  - Stacks are fixed-size (no growth). Overflow is detected, not
 *    prevented: by a guard page in TL_ULT_STACK_GUARD mode (SIGSEGV, with a
 *    message), or by a canary checked at every switch in canary mode.
 */
#ifndef THREADLAB_ULT_H
#define THREADLAB_ULT_H

#include <sched.h> /* cpu_set_t: its users define _GNU_SOURCE */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#error "threadlab/ult.h is a C11 header (it uses _Atomic)"
#endif

/* ------------------------------------------------------------------ */
/* Runtime                                                             */
/* ------------------------------------------------------------------ */

typedef enum tl_ult_stack_mode {
    /* Stacks are carved out of large shared mappings without guard pages;
     * a canary at the low end of every stack is checked whenever the ULT
     * switches out and when it exits (abort with a message). Unlimited by
     * vm.max_map_count: this is the mode for millions of threads. */
    TL_ULT_STACK_CANARY = 0,
    /* A PROT_NONE guard page under every stack: an overflow faults
     * immediately. Each guard page splits a mapping (two VMAs per stack)
     * and Linux caps a process at vm.max_map_count VMAs (65530 by
     * default), so the runtime guards at most (max_map_count - 8192) / 2
     * stacks (28669 by default); further stacks get the canary instead,
     * counted in tl_ult_stats.guard_fallbacks. */
    TL_ULT_STACK_GUARD = 1
} tl_ult_stack_mode;

typedef struct tl_ult_config {
    /* Number of virtual processors; 0 = one per CPU of the affinity mask
     * (env TL_ULT_VPS overrides the default). */
    unsigned nvps;
    /* Pin VP i to the (i mod n)-th allowed CPU (1, default) or let the
     * kernel place VPs (0). Env TL_ULT_PIN. */
    int pin;
    /* Default ULT stack size in bytes (0 = 64 KiB; env TL_ULT_STACK_SIZE).
     * Rounded up to 256 bytes (canary mode) or to a page (guard mode).
     * Memory is committed lazily: a stack costs only the pages it touches. */
    size_t stack_size;
    /* TL_ULT_STACK_CANARY (default) or TL_ULT_STACK_GUARD (env
     * TL_ULT_STACK_GUARD=1). */
    tl_ult_stack_mode stack_mode;
    /* In guard mode, install a SIGSEGV handler (on a per-VP alternate
     * signal stack) that names the overflowing ULT before the process dies
     * of the SIGSEGV. Default 1. */
    int overflow_handler;
    /* How long an idle VP spins looking for work before it sleeps on a
     * futex, in microseconds (default 50; env TL_ULT_SPIN_US). */
    unsigned spin_us;
    /* Let tl_ult_join run a child that has not started yet directly on the
     * joiner's stack when the joiner has room for the child's whole stack
     * (default 1; env TL_ULT_INLINE_JOIN). See docs/ult.md. */
    int inline_join;
    /* 1 (default): the sleeper's side of tl_ult_fence_sleeper is a
     * membarrier(2), registered at init where the kernel has it, and the
     * publisher's a compiler barrier; 0: full fences on both sides (env
     * TL_ULT_MEMBARRIER). */
    int membarrier;
    /* Time slice in milliseconds for threads that do not reach a
     * scheduling point (default 10; 0: never preempt; env
     * TL_ULT_PREEMPT_MS). While a VP is told to stop
     * (tl_ult_set_active_vps) or peers outnumber the VPs
     * (tl_ult_peers_add), a VP that must stop and still runs a
     * thread, or that has run one thread for a slice while it holds
     * other threads that could run, is sent SIGURG, and the thread
     * yields if it was interrupted in the main executable's own code.
     * x86-64, no sanitizer. See docs/ult.md, "Preemption". */
    unsigned preempt_ms;
    /* 0 (default): the caller of tl_ult_init becomes VP 0 and the
     * primordial ULT. 1: every VP is a new kernel thread and the caller
     * stays an external thread (it may call tl_ult_run_as_self and
     * tl_ult_finalize): for a runtime started by a thread that may exit. */
    int external;
} tl_ult_config;

/* Fills *cfg with the defaults (including the TL_ULT_* environment
 * overrides). */
void tl_ult_config_init(tl_ult_config *cfg);

/* Starts the runtime (cfg NULL: defaults). The calling kernel thread
 * becomes VP 0 and the caller becomes the primordial ULT, bound to VP 0:
 * from now on it may block, join, yield like any ULT. Other VPs are new
 * kernel threads. Returns EBUSY if already initialised, EINVAL for a bad
 * configuration, or the error of the failed resource allocation. Not
 * thread-safe with respect to tl_ult_finalize. */
int tl_ult_init(const tl_ult_config *cfg);

/* Does now, cheaply, the part of tl_ult_init that is dear once the
 * process has a second thread: the membarrier(2) registration of the
 * fences below (cfg->membarrier; cfg NULL: defaults) waits for an RCU
 * grace period when another thread shares the address space (10-20 ms
 * measured on a 2-CPU VM) and costs nothing while there is none.  A
 * library that starts the runtime later (at a program's first OpenMP
 * region, after the program or the library made threads) calls it from
 * its constructor.  Harmless before any tl_ult_init and repeatable. */
void tl_ult_preinit(const tl_ult_config *cfg);

/* Waits until every other ULT has exited (detached ones included: a ULT
 * that never finishes makes this wait forever), stops and joins the VPs and
 * releases every stack and descriptor. Must be called by the primordial
 * ULT (EPERM otherwise). The runtime can be initialised again afterwards. */
int tl_ult_finalize(void);

/* 1 between tl_ult_init and tl_ult_finalize. */
int tl_ult_initialized(void);

/* Number of VPs (0 when not initialised). */
unsigned tl_ult_num_vps(void);

/* Id (0..nvps-1) of the VP running the caller, or -1 in an external
 * context. A ULT can move between VPs at blocking points. */
int tl_ult_vp_id(void);

/* Active VPs: VPs 0..n-1 run threads, VPs n..nvps-1 stop (n is clamped to
 * 1..nvps; VP 0 always runs). A VP told to stop does so at its next
 * scheduling point (a ULT it runs blocks, yields or exits, or calls
 * tl_ult_safe_point): it hands every thread it holds to the active VPs and
 * sleeps until it is active again; threads bound to it keep it running
 * for them alone. The count can change at any time, from any context
 * (a resource manager's allocation: docs/ult.md). EAGAIN, EINVAL (0). */
int tl_ult_set_active_vps(unsigned n);
/* The count last set (the VPs the runtime lends beyond it while a thread
 * that cannot be made to yield holds others back are not counted:
 * docs/ult.md, "Lent VPs"); 0 when not initialised. */
unsigned tl_ult_active_vps(void);
/* Sets the CPU mask of every VP's kernel thread that is not pinned to a
 * CPU of its own (pinned ones keep theirs): where a resource manager's
 * allocation lets the program run.  The number of VPs changed; 0 when
 * not initialised. */
unsigned tl_ult_set_vps_cpus(const cpu_set_t *cpus);
/* 1 when the caller runs on a VP that has been told to stop. */
int tl_ult_vp_stopping(void);
/* 1 when the caller's VP has something else to do: it has been told to
 * stop, or threads, requests or a work descriptor wait for it, a timer is
 * due, or another VP holds work it could take; also 1 outside a VP. For a
 * thread that spins waiting for work (an OpenMP worker waiting for its
 * team's next region): it should give its VP back then. */
int tl_ult_vp_wanted(void);
/* A safe point: when the caller's VP has been told to stop, the calling
 * ULT moves to an active VP (and its VP stops); otherwise, when threads
 * wait in the VP's private queue while other VPs sit idle, they move to
 * its deque for those to take, and a thread bound to this VP, which
 * cannot move, gets it: the caller yields and goes to an idle VP; else
 * nothing (two loads). Call it where a long computation can be
 * interrupted. Returns 1
 * when the caller is no ULT (a work descriptor on its VP's scheduler
 * context, which cannot move) and its VP has been told to stop: it should
 * take no more work that others may take; 0 otherwise. */
int tl_ult_safe_point(void);

/* Peers: threads that may wait for each other in code with no scheduling
 * point (OpenMP team threads spinning on a flag, as NAS LU's pipeline
 * does). While more of them live than there are VPs, the preemption
 * ticker gives time slices even with every VP active, as the kernel does
 * for kernel threads: without them a thread spinning for one queued
 * behind it on its VP would spin forever. delta: peers that came (> 0) or
 * left (< 0). */
void tl_ult_peers_add(int delta);

typedef struct tl_ult_stats {
    uint64_t created;         /* ULTs created */
    uint64_t exited;          /* ULTs finished */
    uint64_t live;            /* created - exited (the primordial ULT excluded) */
    uint64_t steals;          /* ULTs taken from another VP's queues */
    uint64_t inline_joins;    /* children run on their joiner's stack */
    uint64_t vp_sleeps;       /* times a VP went to sleep on its futex */
    uint64_t stack_slots;     /* stack slots carved so far */
    uint64_t stack_bytes;     /* bytes of address space reserved for stacks */
    uint64_t guard_fallbacks; /* guard-mode stacks that got only a canary */
    uint64_t preemptions;     /* threads made to yield by a time slice's end */
    uint64_t vp_loans;        /* VPs lent beyond the active count set, while a thread that could not be
                               * made to yield held others back (docs/ult.md, "Preemption") */
    uint64_t slice_ns;        /* the preemption ticker's period now: preempt_ms, a fifth of it while peers
                               * outnumber the VPs that run, 0 while it sleeps or never started */
} tl_ult_stats;

/* Snapshot of the counters (racy while ULTs run; exact when quiescent). */
void tl_ult_get_stats(tl_ult_stats *stats);

/* ------------------------------------------------------------------ */
/* Threads                                                             */
/* ------------------------------------------------------------------ */

typedef struct tl_ult_thread *tl_ult_t;
typedef void *(*tl_ult_fn)(void *arg);

/* Kernel-thread TLS identities. A ULT normally sees the thread-local
 * storage (__thread variables, errno) of whichever VP runs it. A ULT
 * created with an identity wears that identity's TLS wherever it runs:
 * every VP that switches to it loads the identity's thread pointer (x86-64
 * fs base, with wrfsbase where the kernel allows it). An identity is the
 * TLS of a kernel thread that sleeps meanwhile ("donor"), so its
 * __thread variables, errno, and even what the C library keeps per thread
 * (malloc caches, pthread_self) belong to the ULT alone, and code that
 * keeps a TLS address across a blocking call stays right when the ULT
 * migrates. One identity is worn by one running ULT at a time (two live
 * ULTs may share one only if they never run at once). Supported on
 * x86-64/glibc builds without sanitizers (ASan and TSan keep their own
 * per-thread state in TLS). */
typedef struct tl_ult_identity tl_ult_identity;
/* 1 when identities work here. */
int tl_ult_identity_supported(void);
/* A new identity: a donor kernel thread that blocks every signal and
 * sleeps until tl_ult_identity_destroy. ENOTSUP, or pthread_create's
 * error. Callable before tl_ult_init. */
int tl_ult_identity_create(tl_ult_identity **id);
/* Ends the donor. No ULT may wear it or be created with it any more. */
void tl_ult_identity_destroy(tl_ult_identity *id);
/* tl_ult_identity_destroy once no VP wears it: EBUSY (and nothing done)
 * while one does. A VP keeps wearing the identity of the last ULT it ran
 * until it runs one with another, so an identity whose ULTs have all
 * ended may stay worn for a while: for a caller that retires identities
 * no new ULT will be created with, and tries again later. */
int tl_ult_identity_try_destroy(tl_ult_identity *id);

/* Runs fn(arg) as a ULT that wears the calling external kernel thread's
 * own TLS, and blocks the caller (a raw futex wait, its TLS untouched)
 * until that ULT has finished and no VP wears the TLS any more; stores
 * fn's result in *retval. For an external thread that must act as a ULT
 * (block, join) with its own thread-local data. EPERM from a VP or ULT,
 * ENOTSUP without identities, EAGAIN (not initialised). */
int tl_ult_run_as_self(tl_ult_fn fn, void *arg, size_t stack_size, void **retval);

/* In a VP context (a work-descriptor body running on a VP): wear id's
 * TLS until the next call (NULL: the VP's own again), e.g. to run a part
 * as the thread that owns it. The VP puts its own back on before it runs
 * anything else only when the body calls tl_ult_wear(NULL): a body that
 * wears must do so before it returns. EPERM from a ULT or an external
 * thread, ENOTSUP without identities. */
int tl_ult_wear(tl_ult_identity *id);

#define TL_ULT_VP_ANY (-1)
typedef struct tl_ult_attr {
    size_t stack_size; /* 0: the runtime default; minimum 512 bytes */
    int detached;      /* 1: the thread cleans up after itself; not joinable */
    /* The VP the new thread is queued on first (its inbox, which wakes it;
     * a stopped VP's goes to an active one), or TL_ULT_VP_ANY: the
     * creator's. Other VPs may still steal it unless bound. */
    int vp;
    /* 1: only that VP (vp, or the creator's with TL_ULT_VP_ANY) runs it. */
    int bound;
    /* NULL, or the TLS identity it wears (see above). */
    tl_ult_identity *identity;
} tl_ult_attr;

/* Default attributes: default stack, joinable, the creator's VP, unbound,
 * no identity. Initialise attributes with it: a zeroed attr means VP 0. */
void tl_ult_attr_init(tl_ult_attr *attr);

/* Creates a ULT running fn(arg) (attr NULL: defaults) and stores its
 * handle in *thread (may be NULL for detached threads). The thread is
 * pushed on the caller's VP queue and may be stolen by another VP. No
 * stack is allocated until the thread first runs. Callable from every
 * context. Errors: EAGAIN (not initialised), EINVAL (fn NULL, stack size
 * too small or too large), ENOMEM. */
int tl_ult_create(tl_ult_t *thread, const tl_ult_attr *attr, tl_ult_fn fn, void *arg);

/* A detached thread created by the VP that will run it: the caller fills
 * fn, arg and attr (attr.vp a VP, attr.detached 1) and posts the request
 * to that VP's inbox; the VP makes the thread from its own descriptor and
 * stack caches when it takes the request, and runs it. The creator writes
 * one line of the target's (the inbox) and no descriptor of its own: a
 * team's master starting n workers on n VPs does not pay n descriptors'
 * worth of lines that the workers' VPs wrote last (OpenMP regions:
 * docs/omp-ult.md). The request must stay valid and unchanged until the
 * thread has started (the VP reads it before then, never after). A VP
 * that must stop forwards it as it forwards threads; a VP that steals
 * another's inbox makes the thread itself. Errors: EAGAIN (not
 * initialised), EINVAL (fn NULL, not detached, vp not a VP, stack size),
 * ENOMEM; a VP that cannot make the thread when it takes the request
 * aborts the process, naming it. */
typedef struct tl_ult_spawn {
    tl_ult_fn fn;
    void *arg;
    tl_ult_attr attr;
    void *tl_private[2]; /* the runtime's: the inbox's link, the stack pool */
} tl_ult_spawn;
int tl_ult_spawn_on(tl_ult_spawn *req);

/* Waits for thread to finish, stores its return value in *retval (if not
 * NULL) and releases it. Joining a finished thread is a flag check; a
 * not-yet-started child on top of the caller's queue runs immediately
 * (possibly on the caller's stack, see tl_ult_config.inline_join).
 * Errors: EPERM (not a ULT), EDEADLK (joining self), EINVAL (detached).
 * Joining the same thread twice is undefined, as with pthreads. */
int tl_ult_join(tl_ult_t thread, void **retval);

/* Marks thread detached: its resources are released when it exits (now,
 * if it already has). Errors: EINVAL (already detached). */
int tl_ult_detach(tl_ult_t thread);

/* Lets the other ready ULTs of the caller's VP run first (FIFO among
 * yielding threads); returns at once if there is none. In a VP or an
 * external context this is sched_yield(). */
void tl_ult_yield(void);

/* sched_yield() for code that runs on ULTs without knowing it (a library
 * whose threads spin for each other with sched_yield, as OpenBLAS's do):
 * the other ready ULTs of the caller's VP first, as tl_ult_yield, since the
 * kernel's yield only hands the CPU to other kernel threads and a ULT
 * spinning for one queued behind it on its VP would spin forever; when
 * none ran (or outside a ULT), the kernel's sched_yield. Returns 0. */
int tl_ult_sched_yield(void);

/* Ends the calling ULT with retval (thread-local destructors run, the
 * successor's dependence is satisfied, a joiner is woken). Must not be
 * called by the primordial ULT or outside a ULT (abort). */
_Noreturn void tl_ult_exit(void *retval);

/* The calling ULT, or NULL in a VP or external context. */
tl_ult_t tl_ult_self(void);

/* One pointer per ULT for the code running in it (a runtime built on this
 * library keeps its per-thread state there): set by the ULT itself, NULL
 * initially. get returns NULL outside a ULT. */
void tl_ult_set_local(void *p);
void *tl_ult_get_local(void);

/* 1 when other ULTs are ready on the caller's VP (its own queues), so
 * that spinning there would delay them. */
int tl_ult_local_ready(void);

/* Lowest address and size of the stack the calling context runs on (for
 * a child running inline: the joiner's stack). EPERM outside a ULT. */
int tl_ult_stack_bounds(void **lo, size_t *size);

/* ------------------------------------------------------------------ */
/* Blocking primitives: they block the ULT, never the VP.             */
/* All are unfair (a running ULT may barge ahead of a woken one) and   */
/* have no spurious wake-ups except where noted. Objects need no       */
/* destruction beyond the *_destroy calls, which only check for        */
/* waiters (EBUSY).                                                    */
/* ------------------------------------------------------------------ */

/* Its waiters park on the state's address (tl_ult_wait): nothing else in
 * it, and an unlock reads nothing of it after releasing it, so the mutex
 * may be destroyed and freed as soon as it is unlocked. */
typedef struct tl_ult_mutex {
    _Atomic uint32_t state; /* 0 free, 1 locked, 2 locked with waiters */
} tl_ult_mutex;
#define TL_ULT_MUTEX_INITIALIZER {0}

int tl_ult_mutex_init(tl_ult_mutex *m);
int tl_ult_mutex_destroy(tl_ult_mutex *m);
/* Uncontended lock/unlock: one atomic instruction each, any context.
 * Contended lock parks the ULT (EPERM outside a ULT). Not recursive;
 * unlocking a mutex the caller does not hold is undefined. */
int tl_ult_mutex_lock(tl_ult_mutex *m);
int tl_ult_mutex_trylock(tl_ult_mutex *m); /* 0 or EBUSY */
int tl_ult_mutex_unlock(tl_ult_mutex *m);

typedef struct tl_ult_cond {
    _Atomic uint32_t qlock;
    struct tl_ult_thread *head, *tail;
} tl_ult_cond;
#define TL_ULT_COND_INITIALIZER {0, NULL, NULL}

int tl_ult_cond_init(tl_ult_cond *c);
int tl_ult_cond_destroy(tl_ult_cond *c);
/* Atomically releases m and parks until signalled, then re-locks m. The
 * caller must hold m. Callers should re-check their predicate in a loop
 * (there are no spurious wake-ups, but another ULT may consume the state
 * change before the woken one re-acquires m). */
int tl_ult_cond_wait(tl_ult_cond *c, tl_ult_mutex *m);
int tl_ult_cond_signal(tl_ult_cond *c);    /* wakes one waiter, if any */
int tl_ult_cond_broadcast(tl_ult_cond *c); /* wakes all waiters */

typedef struct tl_ult_sem {
    _Atomic int64_t count;
    _Atomic uint32_t qlock;
    struct tl_ult_thread *head, *tail;
} tl_ult_sem;
#define TL_ULT_SEM_INITIALIZER(value) {(value), 0, NULL, NULL}

int tl_ult_sem_init(tl_ult_sem *s, int64_t value); /* EINVAL if value < 0 */
int tl_ult_sem_destroy(tl_ult_sem *s);
int tl_ult_sem_wait(tl_ult_sem *s);    /* P: decrement, parking while 0 */
int tl_ult_sem_trywait(tl_ult_sem *s); /* 0 or EAGAIN */
/* V: hands the unit directly to the oldest waiter (FIFO), else
 * increments. Any context. */
int tl_ult_sem_post(tl_ult_sem *s);
int64_t tl_ult_sem_getvalue(tl_ult_sem *s);

typedef struct tl_ult_barrier {
    _Atomic uint32_t qlock;
    uint32_t count, arrived, generation;
    struct tl_ult_thread *head, *tail;
} tl_ult_barrier;

#define TL_ULT_BARRIER_SERIAL_THREAD 1
int tl_ult_barrier_init(tl_ult_barrier *b, unsigned count); /* EINVAL if 0 */
int tl_ult_barrier_destroy(tl_ult_barrier *b);
/* Parks until count ULTs have arrived; then all leave and the barrier is
 * reset for the next round. Exactly one of them (the last to arrive) gets
 * TL_ULT_BARRIER_SERIAL_THREAD, the others 0. Negative errno on error. */
int tl_ult_barrier_wait(tl_ult_barrier *b);

/* Futex-like parking on any 32-bit word. tl_ult_wait parks the calling
 * ULT if *addr still equals expected (checked under the lock of the
 * word's wait queue, so a wake after the caller changed nothing cannot be
 * lost) until tl_ult_wake(addr, ...): 0, or EAGAIN when *addr differed,
 * EPERM outside a ULT. tl_ult_wake makes up to n waiters of addr ready
 * (FIFO), each on the VP it parked on when that VP is active, and returns
 * how many; any context. Callers re-check their condition: a woken ULT
 * may find the word changed again. */
int tl_ult_wait(_Atomic uint32_t *addr, uint32_t expected);
int tl_ult_wake(_Atomic uint32_t *addr, int n);

/* The two sides of a Dekker pair whose one side runs often and the other
 * seldom: a publisher writes work, fences, then reads whether anyone
 * sleeps (a task queued, then a look at the parked count); a sleeper
 * writes that it sleeps, fences, then looks for work before it parks.
 * Once tl_ult_init found membarrier(2) (private expedited; Linux 4.14),
 * the publisher's fence is a compiler barrier and the sleeper's makes
 * every running thread of the process pass a full barrier (an
 * interprocessor interrupt each, microseconds): the common side no longer
 * waits for its stores to reach the other CPUs. Without it, or under
 * ThreadSanitizer (which does not know that barrier), or with
 * tl_ult_config.membarrier 0 (TL_ULT_MEMBARRIER=0), both are full fences.
 * Any thread of the process. */
void tl_ult_fence_publisher(void);
void tl_ult_fence_sleeper(void);

/* Parks the calling ULT for at least ns nanoseconds (CLOCK_MONOTONIC). The
 * timer lives on the VP the ULT slept on and is checked whenever that VP
 * schedules or is idle: a VP busy in one long ULT delays its sleepers.
 * Outside a ULT it is nanosleep(). 0 yields. */
int tl_ult_sleep_ns(uint64_t ns);
int tl_ult_usleep(uint64_t us);

/* ------------------------------------------------------------------ */
/* Thread-local data (per ULT, like pthread keys).                     */
/* ------------------------------------------------------------------ */

#define TL_ULT_KEYS_MAX 64
typedef unsigned tl_ult_key_t;

/* destructor (may be NULL) runs at thread exit for non-NULL values, up to
 * 4 rounds. EAGAIN when all TL_ULT_KEYS_MAX keys are in use. */
int tl_ult_key_create(tl_ult_key_t *key, void (*destructor)(void *));
int tl_ult_key_delete(tl_ult_key_t key);
/* EPERM outside a ULT; ENOMEM if the per-thread table cannot be allocated
 * (it is allocated on the first set, so threads that use no key pay
 * nothing). */
int tl_ult_setspecific(tl_ult_key_t key, const void *value);
void *tl_ult_getspecific(tl_ult_key_t key); /* NULL outside a ULT */

/* ------------------------------------------------------------------ */
/* Work descriptors and parallel loops (NTLib / NanosCompiler model).  */
/* ------------------------------------------------------------------ */

/* Body of a work descriptor: executed once for every part id in
 * [0, nparts); the body derives its share of the work from (id, nparts). */
typedef void (*tl_ult_wd_fn)(unsigned id, unsigned nparts, void *arg);

/* Runs fn(id, nparts, arg) for every id in [0, nparts) (nparts 0: one per
 * VP) and returns when all have finished. Part id is copied to VP
 * (id mod nvps)'s work-descriptor slot; each VP executes its part directly
 * on its scheduler (no ULT is created) when it next schedules or is idle,
 * and the caller runs its own part, then claims parts not yet started, so
 * a busy VP never delays the loop. Bodies run in a VP context when
 * executed by another VP: they must not block (no join, lock slow path,
 * wait, sleep); they may create ULTs and use atomics. Any caller context;
 * a ULT caller parks while waiting. ENOMEM possible. */
int tl_ult_workdesc_run(tl_ult_wd_fn fn, void *arg, unsigned nparts);

/* Static block chunking of [begin, end) for part id of nparts: the first
 * (end-begin) mod nparts parts get one extra index. */
void tl_ult_static_chunk(int64_t begin, int64_t end, unsigned id, unsigned nparts, int64_t *lo,
                         int64_t *hi);

/* parallel_for: body(lo, hi, arg) over a static partition of [begin, end)
 * into one chunk per VP, every index exactly once; built on
 * tl_ult_workdesc_run (same rules for the body). */
typedef void (*tl_ult_for_fn)(int64_t lo, int64_t hi, void *arg);
int tl_ult_parallel_for(int64_t begin, int64_t end, tl_ult_for_fn body, void *arg);

/* ------------------------------------------------------------------ */
/* The work-stealing deque of the scheduler, for runtimes built on the */
/* library (task queues): Chase-Lev, one owner pushes and takes at the */
/* bottom (LIFO), any thread steals the oldest at the top (FIFO).      */
/* ------------------------------------------------------------------ */

/* Elements are pointers other than NULL and (void *)1 (the scheduler's
 * mark of a lost race). */
typedef struct tl_ult_deque tl_ult_deque;
int tl_ult_deque_create(tl_ult_deque **q); /* ENOMEM */
void tl_ult_deque_destroy(tl_ult_deque *q);
void tl_ult_deque_push(tl_ult_deque *q, void *p); /* owner; grows as needed */
void *tl_ult_deque_take(tl_ult_deque *q);         /* owner: NULL when empty */
/* Anyone: NULL when empty or when it lost a race with another taker. */
void *tl_ult_deque_steal(tl_ult_deque *q);
/* Elements now (approximate while others take). */
long tl_ult_deque_size(tl_ult_deque *q);
/* Owner: whether at least n elements are queued. Cheaper than size for
 * the owner: it reads top, a line every steal takes, only when its last
 * reading of top (at a push, take or holds) cannot decide. */
int tl_ult_deque_holds(tl_ult_deque *q, long n);

/* ------------------------------------------------------------------ */
/* Dependence counters (NTLib dependence-driven execution).            */
/*                                                                     */
/* Every ULT has a dependence counter and at most one successor. A ULT */
/* created with ndeps > 0 does not start before its counter drops to   */
/* zero. When a ULT finishes it satisfies one dependence of its         */
/* successor. A running ULT that created nested children with          */
/* tl_ult_create_nested (each one adds a dependence to the creator and */
/* names it as successor) waits for all of them with tl_ult_dep_wait.  */
/* ------------------------------------------------------------------ */

/* Creates a ULT that starts once ndeps dependences have been satisfied
 * (ndeps 0: at once) and that, when it finishes, satisfies one dependence
 * of successor (may be NULL). The successor's counter is not changed: a
 * successor declares its predecessors in its own ndeps (or with
 * tl_ult_dep_add), e.g. create c with ndeps 2, then a and b with successor
 * c. Any context. */
int tl_ult_create_dep(tl_ult_t *thread, const tl_ult_attr *attr, tl_ult_fn fn, void *arg,
                      unsigned ndeps, tl_ult_t successor);

/* Nested creation (NTLib): adds one dependence to the caller's counter,
 * then tl_ult_create_dep(thread, attr, fn, arg, 0, self). The caller waits
 * for its nested children with tl_ult_dep_wait. EPERM outside a ULT. */
int tl_ult_create_nested(tl_ult_t *thread, const tl_ult_attr *attr, tl_ult_fn fn, void *arg);

/* Adds n input dependences to thread (which must not have started yet, or
 * be the caller). */
int tl_ult_dep_add(tl_ult_t thread, unsigned n);

/* Satisfies one input dependence of thread: a not-started thread whose
 * counter reaches zero becomes ready; a thread parked in tl_ult_dep_wait
 * is woken. Any context. */
int tl_ult_dep_satisfy(tl_ult_t thread);

/* Parks the calling ULT until its dependence counter is zero (returns at
 * once if it is). EPERM outside a ULT. */
int tl_ult_dep_wait(void);

#endif
