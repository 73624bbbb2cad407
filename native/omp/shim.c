/*
 * libthreadlab-omp - a libgomp shim that makes unmodified OpenMP programs
 * (gcc, g++, gfortran) cooperate with threadlab-rm (seed 004; docs/omp.md).
 *
 * Loaded with LD_PRELOAD (`threadlab omp run -- PROGRAM`), it defines every
 * libgomp entry that starts a team and forwards to the real one, found with
 * dlsym(RTLD_NEXT):
 *   GOMP_parallel, GOMP_parallel_reductions, GOMP_parallel_sections,
 *   GOMP_parallel_loop_{static,dynamic,guided,runtime},
 *   GOMP_parallel_loop_nonmonotonic_{dynamic,guided,runtime},
 *   GOMP_parallel_loop_maybe_nonmonotonic_runtime,
 *   and the GOMP 1.0 forms GOMP_parallel_start/_end,
 *   GOMP_parallel_loop_{static,dynamic,guided,runtime}_start,
 *   GOMP_parallel_sections_start.
 * (GOMP_teams_reg, the host teams construct, runs its teams one after the
 * other on the encountering thread in libgomp and starts no team itself;
 * parallel regions inside it come through GOMP_parallel.)
 *
 * At every region that no active region encloses, the shim registers the
 * process on first use, publishes the region's request (its num_threads
 * clause, else the nthreads-var ICV), reads its allocation, and passes
 * min(request, allocation) as num_threads: never below 1, never above the
 * request.  Regions inside an active region pass through untouched.
 *
 * dyn-var: libgomp's own dynamic adjustment (OMP_DYNAMIC=true) reads the
 * 15-minute load average and the affinity mask with system calls at every
 * region, so while managed the shim turns it off in libgomp (the manager
 * adjusts instead) and answers omp_get_dynamic() itself; unmanaged, the
 * program's own setting is back in force.  A program that calls
 * omp_set_dynamic(0) asks for exact team sizes: it gets them, unmanaged.
 *
 * No manager: the program runs exactly as without the shim (one notice);
 * the arena is looked for again once a second.  An arena that is not the
 * user's own, or that others may write, is never mapped (tl_rm_open): the
 * program runs unmanaged, with one notice.  A manager that stops, dies
 * or hangs is noticed at the next region, which runs unmanaged.
 *
 * Environment: THREADLAB_OMP_PIN=1 pins team threads to the allocated CPUs
 * (re-pinning only when the allocation's epoch changes);
 * THREADLAB_OMP_QUIET=1 silences the notices; THREADLAB_OMP_DISABLE=1
 * forwards everything untouched (to measure the interposition alone);
 * THREADLAB_OMP_PROBE_MS (default 1000, 0 = never) is how often an
 * unmanaged program looks for a manager; THREADLAB_OMP_WAIT_MS (default 50)
 * how long a new registration waits for its first allocation;
 * THREADLAB_OMP_DYNAMIC_ORIG is set by `threadlab omp run` to the
 * OMP_DYNAMIC the user had (unset, true or false).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <omp.h>

#include "gomp_abi.h"
#include "threadlab/compiler.h"
#include "threadlab/omp.h"
#include "threadlab/rm.h"

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ------------------------------------------------------- the real entries */

static struct {
    void (*parallel)(tl_fn, void *, unsigned, unsigned);
    unsigned (*parallel_reductions)(tl_fn, void *, unsigned, unsigned);
    void (*parallel_sections)(tl_fn, void *, unsigned, unsigned, unsigned);
    void (*loop_static)(tl_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_dynamic)(tl_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_guided)(tl_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_runtime)(tl_fn, void *, unsigned, long, long, long, unsigned);
    void (*loop_nonmonotonic_dynamic)(tl_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_nonmonotonic_guided)(tl_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_nonmonotonic_runtime)(tl_fn, void *, unsigned, long, long, long, unsigned);
    void (*loop_maybe_nonmonotonic_runtime)(tl_fn, void *, unsigned, long, long, long, unsigned);
    void (*start)(tl_fn, void *, unsigned);
    void (*end)(void);
    void (*loop_static_start)(tl_fn, void *, unsigned, long, long, long, long);
    void (*loop_dynamic_start)(tl_fn, void *, unsigned, long, long, long, long);
    void (*loop_guided_start)(tl_fn, void *, unsigned, long, long, long, long);
    void (*loop_runtime_start)(tl_fn, void *, unsigned, long, long, long);
    void (*sections_start)(tl_fn, void *, unsigned, unsigned);
    int (*get_max_threads)(void);
    int (*get_active_level)(void);
    int (*get_thread_num)(void);
    int (*get_dynamic)(void);
    void (*set_dynamic)(int);
    int resolved;
} real;

static void *next_symbol(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "threadlab-omp: fatal: %s not found after the shim (is the program linked with libgomp?)\n",
                name);
        abort();
    }
    return p;
}

#define RESOLVE(field, name) (*(void **)&real.field = next_symbol(name))

/* Resolves everything at once (idempotent; racing threads store the same
 * pointers). */
static void resolve(void)
{
    RESOLVE(parallel, "GOMP_parallel");
    RESOLVE(parallel_reductions, "GOMP_parallel_reductions");
    RESOLVE(parallel_sections, "GOMP_parallel_sections");
    RESOLVE(loop_static, "GOMP_parallel_loop_static");
    RESOLVE(loop_dynamic, "GOMP_parallel_loop_dynamic");
    RESOLVE(loop_guided, "GOMP_parallel_loop_guided");
    RESOLVE(loop_runtime, "GOMP_parallel_loop_runtime");
    RESOLVE(loop_nonmonotonic_dynamic, "GOMP_parallel_loop_nonmonotonic_dynamic");
    RESOLVE(loop_nonmonotonic_guided, "GOMP_parallel_loop_nonmonotonic_guided");
    RESOLVE(loop_nonmonotonic_runtime, "GOMP_parallel_loop_nonmonotonic_runtime");
    RESOLVE(loop_maybe_nonmonotonic_runtime, "GOMP_parallel_loop_maybe_nonmonotonic_runtime");
    RESOLVE(start, "GOMP_parallel_start");
    RESOLVE(end, "GOMP_parallel_end");
    RESOLVE(loop_static_start, "GOMP_parallel_loop_static_start");
    RESOLVE(loop_dynamic_start, "GOMP_parallel_loop_dynamic_start");
    RESOLVE(loop_guided_start, "GOMP_parallel_loop_guided_start");
    RESOLVE(loop_runtime_start, "GOMP_parallel_loop_runtime_start");
    RESOLVE(sections_start, "GOMP_parallel_sections_start");
    RESOLVE(get_max_threads, "omp_get_max_threads");
    RESOLVE(get_active_level, "omp_get_active_level");
    RESOLVE(get_thread_num, "omp_get_thread_num");
    RESOLVE(get_dynamic, "omp_get_dynamic");
    RESOLVE(set_dynamic, "omp_set_dynamic");
    __atomic_store_n(&real.resolved, 1, __ATOMIC_RELEASE);
}

static inline void ensure_resolved(void)
{
    if (UNLIKELY(!__atomic_load_n(&real.resolved, __ATOMIC_ACQUIRE)))
        resolve();
}

/* ------------------------------------------------------------------ state */

static struct {
    int state;                  /* TL_OMP_STATE_* */
    int disabled;               /* THREADLAB_OMP_DISABLE */
    int pin;                    /* THREADLAB_OMP_PIN */
    int quiet;
    uint64_t probe_ns;          /* 0 = never look again */
    uint64_t wait_ns;
    /* Both deadlines are on the coarse clock, the one the fast path reads:
     * compared against it, a deadline from the precise clock would come
     * due up to a tick (and on a virtual machine somewhat more) late. */
    uint64_t next_probe_ns;     /* when an unmanaged process looks for a manager again */
    uint64_t next_check_ns;     /* rate limit of the manager-liveness system call */
    tl_rm_arena arena;
    int mapped;
    int slot;                   /* -1 = none */
    tl_rm_slot *my;
    pid_t pid;
    uint32_t epoch0;            /* the slot's epoch before registration */
    int answered;               /* the manager has written this occupant's allocation */
    unsigned generation;        /* manager generation last seen managing us */
    /* dyn-var (see the file comment) */
    int dyn_captured;
    int dyn_env;                /* libgomp's dyn-var from the environment */
    int dyn_orig;               /* the user's, before `threadlab omp run` */
    int dyn_user;               /* -1, or the program's omp_set_dynamic() */
    unsigned dyn_gen;           /* bumped whenever the wanted real value changes */
    int notices;                /* bit set of notices printed */
    pthread_mutex_t lock;
} g = {.state = TL_OMP_STATE_INIT, .slot = -1, .dyn_user = -1, .dyn_gen = 1, .lock = PTHREAD_MUTEX_INITIALIZER};

/* The shim is preloaded, so its thread-locals can live in the static TLS
 * block: initial-exec makes each access one %fs-relative load instead of a
 * __tls_get_addr call (sync_dyn() reads one at every region).  libgomp's
 * own thread-locals are initial-exec too. */
#define TLS_IE __attribute__((tls_model("initial-exec")))

static __thread unsigned tls_dyn_gen TLS_IE;
static __thread uint32_t tls_pin_epoch TLS_IE;
static __thread int tls_pin_tid TLS_IE = -1;

enum {
    NOTE_NO_MANAGER = 1,
    NOTE_FALLBACK = 2,
    NOTE_FULL = 4,
    NOTE_VERSION = 8,
    NOTE_DYN_OFF = 16,
    NOTE_ATTACHED = 32,
    NOTE_CORRUPT = 64,
    NOTE_UNSAFE = 128,
};

static void notice(int which, const char *fmt, ...) TL_PRINTF(2, 3);
static void notice(int which, const char *fmt, ...)
{
    if (g.notices & which)
        return;
    g.notices |= which;
    if (g.quiet)
        return;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(stderr, "threadlab-omp[%d]: %s\n", (int)getpid(), text);
}

static uint64_t env_ms(const char *name, uint64_t fallback)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    char *end;
    unsigned long long ms = strtoull(v, &end, 10);
    return *end ? fallback : (uint64_t)ms;
}

static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"));
}

/* OMP_DYNAMIC-style text: 1 true, 0 false, -1 unset/unknown. */
static int bool_text(const char *v)
{
    if (!v || !*v || !strcasecmp(v, "unset"))
        return -1;
    if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes"))
        return 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no"))
        return 0;
    return -1;
}

/* ----------------------------------------------------------------- dyn-var */

/* What omp_get_dynamic() answers the program. */
static int dyn_visible(void)
{
    if (g.dyn_user >= 0)
        return g.dyn_user;
    return __atomic_load_n(&g.state, __ATOMIC_ACQUIRE) == TL_OMP_STATE_MANAGED ? g.dyn_env : g.dyn_orig;
}

/* The real dyn-var libgomp should use now. */
static int dyn_wanted(void)
{
    return __atomic_load_n(&g.state, __ATOMIC_ACQUIRE) == TL_OMP_STATE_MANAGED ? 0 : dyn_visible();
}

static void capture_dyn(void)
{
    if (g.dyn_captured)
        return;
    g.dyn_env = real.get_dynamic() != 0;
    const char *orig = getenv("THREADLAB_OMP_DYNAMIC_ORIG");
    if (orig) {
        int v = bool_text(orig);
        g.dyn_orig = v < 0 ? 0 : v; /* unset: libgomp's default, false */
    } else {
        g.dyn_orig = g.dyn_env;
    }
    g.dyn_captured = 1;
}

static void dyn_changed(void)
{
    __atomic_add_fetch(&g.dyn_gen, 1, __ATOMIC_RELEASE);
}

/* Called outside any active region: brings this thread's real dyn-var to
 * the wanted value when it changed since this thread last looked. */
static inline void sync_dyn(void)
{
    unsigned gen = __atomic_load_n(&g.dyn_gen, __ATOMIC_ACQUIRE);
    if (LIKELY(tls_dyn_gen == gen))
        return;
    real.set_dynamic(dyn_wanted());
    tls_dyn_gen = gen;
}

EXPORT int omp_get_dynamic(void)
{
    ensure_resolved();
    if (g.disabled || !g.dyn_captured)
        return real.get_dynamic();
    return dyn_visible();
}

EXPORT void omp_set_dynamic(int dynamic)
{
    ensure_resolved();
    if (g.disabled) {
        real.set_dynamic(dynamic);
        return;
    }
    pthread_mutex_lock(&g.lock);
    capture_dyn();
    g.dyn_user = dynamic != 0;
    if (!g.dyn_user && g.state == TL_OMP_STATE_MANAGED)
        notice(NOTE_DYN_OFF, "the program called omp_set_dynamic(0): its regions keep the sizes it asks for "
                             "(unmanaged while it does)");
    dyn_changed();
    pthread_mutex_unlock(&g.lock);
    real.set_dynamic(dyn_wanted());
    tls_dyn_gen = __atomic_load_n(&g.dyn_gen, __ATOMIC_ACQUIRE);
}

/* gfortran's entries (LOGICAL(4) results, arguments by reference). */
EXPORT int32_t omp_get_dynamic_(void)
{
    return omp_get_dynamic() ? 1 : 0;
}

EXPORT void omp_set_dynamic_(const int32_t *set)
{
    omp_set_dynamic(*set != 0);
}

EXPORT void omp_set_dynamic_8_(const int64_t *set)
{
    omp_set_dynamic(*set != 0);
}

/* ---------------------------------------------------------- attach/detach */

static uint64_t next_probe_deadline(void)
{
    return g.probe_ns ? tl_rm_coarse_ns() + g.probe_ns : UINT64_MAX;
}

static void unmap(void)
{
    if (g.mapped)
        tl_rm_close(&g.arena);
    g.mapped = 0;
    g.slot = -1;
    g.my = NULL;
}

/* Under g.lock.  Looks for a manager and registers; returns the new state. */
static int attach_locked(unsigned request)
{
    capture_dyn();
    g.next_probe_ns = next_probe_deadline();
    pid_t pid = getpid();
    if (g.mapped && g.pid != pid) { /* a forked child: the slot is the parent's */
        g.slot = -1;
        g.my = NULL;
    }
    g.pid = pid;
    if (g.mapped && tl_rm_replaced(&g.arena))
        unmap();
    if (!g.mapped) {
        char name[256], err[512];
        tl_rm_arena_name(name, sizeof name);
        int rc = tl_rm_open(&g.arena, name, err, sizeof err);
        if (rc == TL_RM_EVERSION) {
            notice(NOTE_VERSION, "refusing the resource manager's arena %s: %s; running unmanaged", name, err);
            return TL_OMP_STATE_UNMANAGED;
        }
        if (rc == TL_RM_EUNSAFE) {
            /* Another user's object: joining it would let them size (or,
             * by cutting it short, kill) this program. */
            notice(NOTE_UNSAFE, "%s; running unmanaged", err);
            return TL_OMP_STATE_UNMANAGED;
        }
        if (rc != TL_RM_OK) {
            notice(NOTE_NO_MANAGER, "no resource manager (threadlab-rm) is running; running unmanaged");
            return TL_OMP_STATE_UNMANAGED;
        }
        g.mapped = 1;
        g.slot = -1;
        g.my = NULL;
    }
    /* Indices into the arena are bounded by the slot count it had when it
     * was mapped (g.arena.nslots), whatever the header says now; a header
     * that changed since was overwritten: run unmanaged until the manager
     * restores it (the mapping stays: other threads may be reading it). */
    char why[256];
    if (tl_rm_check(&g.arena, why, sizeof why) != TL_RM_OK) {
        notice(NOTE_CORRUPT, "the resource manager's arena %s was overwritten (%s); running unmanaged",
               g.arena.name, why);
        if (g.slot >= 0)
            tl_rm_release(&g.arena, g.slot);
        g.slot = -1; /* g.my stays a valid address for a thread still on the fast path */
        return TL_OMP_STATE_UNMANAGED;
    }
    tl_rm_header *h = g.arena.hdr;
    if (!tl_rm_manager_fresh(h, tl_rm_now_ns()) || !tl_rm_manager_exists(h)) {
        notice(NOTE_NO_MANAGER, "no resource manager (threadlab-rm) is running; running unmanaged");
        return TL_OMP_STATE_UNMANAGED;
    }
    if (g.slot >= 0) {
        tl_rm_slot *s = &g.arena.slots[g.slot];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TL_RM_SLOT_ACTIVE ||
            __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE) != pid) {
            g.slot = -1; /* freed meanwhile: register anew */
            g.my = NULL;
        }
    }
    if (g.slot < 0) {
        int slot = tl_rm_register(&g.arena, request, g.pin ? TL_RM_APP_PINNED : 0, &g.epoch0);
        if (slot < 0) {
            notice(NOTE_FULL, "the resource manager's arena is full (%u applications); running unmanaged",
                   g.arena.nslots);
            return TL_OMP_STATE_UNMANAGED;
        }
        g.slot = slot;
        g.my = &g.arena.slots[slot];
        g.answered = 0;
        /* The manager answers a registration at once; wait a little for it,
         * so the first region already has its allocation. */
        if (tl_rm_wait_epoch(g.my, g.epoch0, g.wait_ns) != g.epoch0)
            g.answered = 1;
    }
    g.generation = __atomic_load_n(&h->generation, __ATOMIC_ACQUIRE);
    if (g.notices & (NOTE_NO_MANAGER | NOTE_FALLBACK | NOTE_CORRUPT))
        notice(NOTE_ATTACHED, "managed by threadlab-rm (pid %d) from now on", (int)h->manager_pid);
    return TL_OMP_STATE_MANAGED;
}

static void set_state(int state)
{
    int old = __atomic_exchange_n(&g.state, state, __ATOMIC_ACQ_REL);
    if (old != state)
        dyn_changed();
}

/* The slow path: first region, or an unmanaged process's periodic look. */
static int attach(unsigned request)
{
    pthread_mutex_lock(&g.lock);
    int state = __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);
    if (state != TL_OMP_STATE_MANAGED && (state == TL_OMP_STATE_INIT || tl_rm_coarse_ns() >= g.next_probe_ns))
        state = attach_locked(request);
    set_state(state);
    pthread_mutex_unlock(&g.lock);
    return state;
}

/* The manager is gone (stopped, dead, hung): run unmanaged. */
static void fall_back(const char *why)
{
    pthread_mutex_lock(&g.lock);
    if (g.state == TL_OMP_STATE_MANAGED) {
        notice(NOTE_FALLBACK, "the resource manager %s; running unmanaged", why);
        g.next_probe_ns = next_probe_deadline();
        g.notices &= ~NOTE_ATTACHED;
        set_state(TL_OMP_STATE_UNMANAGED);
    }
    pthread_mutex_unlock(&g.lock);
}

/* 1 when the manager still manages; else falls back and returns 0.  The
 * heartbeat is read every region (no system call); only a late heartbeat
 * costs a liveness check, at most one every 5 ms. */
static int manager_ok(const tl_rm_header *h, uint64_t now)
{
    uint32_t mstate = __atomic_load_n(&h->manager_state, __ATOMIC_ACQUIRE);
    if (UNLIKELY(mstate != TL_RM_MANAGER_RUNNING)) {
        fall_back("stopped");
        return 0;
    }
    uint64_t beat = __atomic_load_n(&h->manager_heartbeat_ns, __ATOMIC_ACQUIRE);
    uint64_t quantum = (uint64_t)__atomic_load_n(&h->quantum_ms, __ATOMIC_RELAXED) * UINT64_C(1000000);
    if (LIKELY(now <= beat + quantum + UINT64_C(20000000)))
        return 1;
    if (now < __atomic_load_n(&g.next_check_ns, __ATOMIC_RELAXED))
        return 1;
    __atomic_store_n(&g.next_check_ns, now + UINT64_C(5000000), __ATOMIC_RELAXED);
    if (!tl_rm_manager_exists(h)) {
        fall_back("is gone");
        return 0;
    }
    if (now > beat + 10 * quantum + UINT64_C(1000000000)) {
        fall_back("does not answer");
        return 0;
    }
    return 1; /* alive, only late */
}

EXPORT int threadlab_omp_state(void)
{
    return __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);
}

EXPORT int threadlab_omp_slot(void)
{
    return __atomic_load_n(&g.state, __ATOMIC_ACQUIRE) == TL_OMP_STATE_MANAGED ? g.slot : -1;
}

/* ------------------------------------------------------------ the decision */

/* The team to pass for a region whose num_threads argument is `specified`
 * (0 = the ICV); *managed says whether the manager decided it. */
static inline unsigned decide(unsigned specified, int *managed)
{
    *managed = 0;
    ensure_resolved();
    if (UNLIKELY(g.disabled))
        return specified;
    if (real.get_active_level() > 0)
        return specified; /* nested inside an active region: pass through */
    int state = __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);
    if (UNLIKELY(state != TL_OMP_STATE_MANAGED)) {
        if (state == TL_OMP_STATE_INIT || tl_rm_coarse_ns() >= __atomic_load_n(&g.next_probe_ns, __ATOMIC_RELAXED)) {
            unsigned request = specified ? specified : (unsigned)real.get_max_threads();
            state = attach(request ? request : 1);
        }
        if (state != TL_OMP_STATE_MANAGED) {
            sync_dyn();
            return specified;
        }
    }
    if (UNLIKELY(g.dyn_user == 0)) {
        sync_dyn();
        return specified; /* the program asked for exact sizes */
    }
    uint64_t now = tl_rm_coarse_ns();
    const tl_rm_header *h = g.arena.hdr;
    if (UNLIKELY(!manager_ok(h, now))) {
        sync_dyn();
        return specified;
    }
    tl_rm_slot *s = g.my;
    if (UNLIKELY(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TL_RM_SLOT_ACTIVE ||
                 __atomic_load_n(&g.generation, __ATOMIC_RELAXED) != __atomic_load_n(&h->generation, __ATOMIC_ACQUIRE))) {
        /* Our slot was freed, or a new manager adopted the arena: register
         * again on the slow path (it keeps a slot that is still ours). */
        pthread_mutex_lock(&g.lock);
        int st = attach_locked(specified ? specified : (unsigned)real.get_max_threads());
        set_state(st);
        pthread_mutex_unlock(&g.lock);
        if (st != TL_OMP_STATE_MANAGED) {
            sync_dyn();
            return specified;
        }
        s = g.my;
    }
    sync_dyn();
    unsigned request = specified ? specified : (unsigned)real.get_max_threads();
    if (request == 0)
        request = 1;
    if (UNLIKELY(__atomic_load_n(&s->requested, __ATOMIC_RELAXED) != request))
        __atomic_store_n(&s->requested, request, __ATOMIC_RELAXED);
    unsigned alloc = 1;
    int answered = g.answered;
    if (UNLIKELY(!answered) && __atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE) != g.epoch0)
        g.answered = answered = 1; /* stored once, not at every region */
    if (LIKELY(answered)) {
        alloc = __atomic_load_n(&s->alloc, __ATOMIC_ACQUIRE);
        if (alloc == 0)
            alloc = 1;
    }
    unsigned team = request < alloc ? request : alloc;
    __atomic_store_n(&s->last_team, team, __ATOMIC_RELAXED);
    __atomic_store_n(&s->heartbeat_ns, now, __ATOMIC_RELAXED);
    __atomic_store_n(&s->regions, __atomic_load_n(&s->regions, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    *managed = 1;
    return team;
}

/* ----------------------------------------------------------------- pinning */

#define PIN_MAX_CPUS 256

typedef struct {
    tl_fn fn;
    void *data;
    uint32_t epoch;
    unsigned ncpus;             /* 0: owns none: unpinned (the managed CPUs) */
    int cpu[PIN_MAX_CPUS];
} pin_frame;

static void pin_self(const pin_frame *f, int tid)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (f->ncpus) {
        CPU_SET((unsigned)f->cpu[(unsigned)tid % f->ncpus], &set);
    } else {
        const tl_rm_cpuset *all = &g.arena.hdr->cpus;
        for (unsigned c = 0; c < CPU_SETSIZE && c < TL_RM_MAX_CPUS; c++)
            if (tl_rm_cpuset_has(all, c))
                CPU_SET(c, &set);
    }
    sched_setaffinity(0, sizeof set, &set); /* best effort */
    tls_pin_epoch = f->epoch;
    tls_pin_tid = tid;
}

static void pin_trampoline(void *arg)
{
    const pin_frame *f = arg;
    int tid = real.get_thread_num();
    if (tls_pin_epoch != f->epoch || tls_pin_tid != tid)
        pin_self(f, tid);
    f->fn(f->data);
}

/* Fills a frame for a managed region; 0 when pinning is off. */
static int pin_prepare(pin_frame *f, tl_fn fn, void *data)
{
    if (!g.pin)
        return 0;
    tl_rm_cpuset cpus;
    uint32_t epoch;
    tl_rm_read_alloc(g.my, NULL, NULL, &epoch, &cpus);
    f->fn = fn;
    f->data = data;
    f->epoch = epoch;
    f->ncpus = 0;
    /* Every region: the set bits only, not all TL_RM_MAX_CPUS of them. */
    for (unsigned w = 0; w < TL_RM_CPU_WORDS; w++)
        for (uint64_t bits = cpus.bits[w]; bits && f->ncpus < PIN_MAX_CPUS; bits &= bits - 1)
            f->cpu[f->ncpus++] = (int)(w * 64 + (unsigned)__builtin_ctzll(bits));
    return 1;
}

/* The master of a region whose function cannot be wrapped. */
static void pin_master_only(void)
{
    pin_frame f;
    if (pin_prepare(&f, NULL, NULL) && (tls_pin_epoch != f.epoch || tls_pin_tid != 0))
        pin_self(&f, 0);
}

/* Legacy GOMP_parallel_start/end: the frame lives until the end. */
#define LEGACY_DEPTH 8
static __thread pin_frame *tls_legacy[LEGACY_DEPTH] TLS_IE;
static __thread unsigned tls_legacy_depth TLS_IE;

static void legacy_push(pin_frame *f)
{
    if (tls_legacy_depth < LEGACY_DEPTH)
        tls_legacy[tls_legacy_depth] = f;
    tls_legacy_depth++;
}

/* ------------------------------------------------------ the entry points */

#define WRAP(managed, frame, fn, data)                                                                        \
    pin_frame frame;                                                                                          \
    if ((managed) && pin_prepare(&frame, fn, data)) {                                                        \
        fn = pin_trampoline;                                                                                  \
        data = &frame;                                                                                        \
    }

EXPORT void GOMP_parallel(tl_fn fn, void *data, unsigned num_threads, unsigned flags)
{
    int managed;
    unsigned n = decide(num_threads, &managed);
    WRAP(managed, frame, fn, data);
    real.parallel(fn, data, n, flags);
}

EXPORT unsigned GOMP_parallel_reductions(tl_fn fn, void *data, unsigned num_threads, unsigned flags)
{
    int managed;
    unsigned n = decide(num_threads, &managed);
    if (managed)
        pin_master_only(); /* libgomp reads the reduction descriptors in data: no wrapping */
    return real.parallel_reductions(fn, data, n, flags);
}

EXPORT void GOMP_parallel_sections(tl_fn fn, void *data, unsigned num_threads, unsigned count, unsigned flags)
{
    int managed;
    unsigned n = decide(num_threads, &managed);
    WRAP(managed, frame, fn, data);
    real.parallel_sections(fn, data, n, count, flags);
}

#define LOOP_CHUNKED(name, field)                                                                             \
    EXPORT void name(tl_fn fn, void *data, unsigned num_threads, long start, long end, long incr, long chunk,  \
                     unsigned flags)                                                                          \
    {                                                                                                         \
        int managed;                                                                                          \
        unsigned n = decide(num_threads, &managed);                                                           \
        WRAP(managed, frame, fn, data);                                                                       \
        real.field(fn, data, n, start, end, incr, chunk, flags);                                              \
    }

#define LOOP_RUNTIME(name, field)                                                                             \
    EXPORT void name(tl_fn fn, void *data, unsigned num_threads, long start, long end, long incr,             \
                     unsigned flags)                                                                          \
    {                                                                                                         \
        int managed;                                                                                          \
        unsigned n = decide(num_threads, &managed);                                                           \
        WRAP(managed, frame, fn, data);                                                                       \
        real.field(fn, data, n, start, end, incr, flags);                                                     \
    }

LOOP_CHUNKED(GOMP_parallel_loop_static, loop_static)
LOOP_CHUNKED(GOMP_parallel_loop_dynamic, loop_dynamic)
LOOP_CHUNKED(GOMP_parallel_loop_guided, loop_guided)
LOOP_CHUNKED(GOMP_parallel_loop_nonmonotonic_dynamic, loop_nonmonotonic_dynamic)
LOOP_CHUNKED(GOMP_parallel_loop_nonmonotonic_guided, loop_nonmonotonic_guided)
LOOP_RUNTIME(GOMP_parallel_loop_runtime, loop_runtime)
LOOP_RUNTIME(GOMP_parallel_loop_nonmonotonic_runtime, loop_nonmonotonic_runtime)
LOOP_RUNTIME(GOMP_parallel_loop_maybe_nonmonotonic_runtime, loop_maybe_nonmonotonic_runtime)

/* GOMP 1.0: the master calls fn itself between _start and _end, so a
 * wrapping frame must outlive _start: it is heap-allocated and freed by the
 * matching _end. */
static pin_frame *legacy_frame(int managed, tl_fn *fn, void **data)
{
    pin_frame *f = NULL;
    if (managed && g.pin) {
        f = malloc(sizeof *f);
        if (f && pin_prepare(f, *fn, *data)) {
            *fn = pin_trampoline;
            *data = f;
            if (tls_pin_epoch != f->epoch || tls_pin_tid != 0)
                pin_self(f, 0); /* the master runs the original fn itself */
        } else {
            free(f);
            f = NULL;
        }
    }
    legacy_push(f);
    return f;
}

EXPORT void GOMP_parallel_start(tl_fn fn, void *data, unsigned num_threads)
{
    int managed;
    unsigned n = decide(num_threads, &managed);
    legacy_frame(managed, &fn, &data);
    real.start(fn, data, n);
}

EXPORT void GOMP_parallel_end(void)
{
    ensure_resolved();
    real.end();
    if (tls_legacy_depth > 0) {
        tls_legacy_depth--;
        if (tls_legacy_depth < LEGACY_DEPTH) {
            free(tls_legacy[tls_legacy_depth]);
            tls_legacy[tls_legacy_depth] = NULL;
        }
    }
}

#define LOOP_START_CHUNKED(name, field)                                                                       \
    EXPORT void name(tl_fn fn, void *data, unsigned num_threads, long start, long end, long incr, long chunk)  \
    {                                                                                                         \
        int managed;                                                                                          \
        unsigned n = decide(num_threads, &managed);                                                           \
        legacy_frame(managed, &fn, &data);                                                                    \
        real.field(fn, data, n, start, end, incr, chunk);                                                     \
    }

LOOP_START_CHUNKED(GOMP_parallel_loop_static_start, loop_static_start)
LOOP_START_CHUNKED(GOMP_parallel_loop_dynamic_start, loop_dynamic_start)
LOOP_START_CHUNKED(GOMP_parallel_loop_guided_start, loop_guided_start)

EXPORT void GOMP_parallel_loop_runtime_start(tl_fn fn, void *data, unsigned num_threads, long start, long end,
                                             long incr)
{
    int managed;
    unsigned n = decide(num_threads, &managed);
    legacy_frame(managed, &fn, &data);
    real.loop_runtime_start(fn, data, n, start, end, incr);
}

EXPORT void GOMP_parallel_sections_start(tl_fn fn, void *data, unsigned num_threads, unsigned count)
{
    int managed;
    unsigned n = decide(num_threads, &managed);
    legacy_frame(managed, &fn, &data);
    real.sections_start(fn, data, n, count);
}

/* ------------------------------------------------------ process lifecycle */

static void after_fork_child(void)
{
    /* The child is another process: the parent's slot is not its own. */
    g.slot = -1;
    g.my = NULL;
    g.answered = 0;
    g.pid = getpid();
    pthread_mutex_init(&g.lock, NULL);
    if (g.state == TL_OMP_STATE_MANAGED) {
        g.state = TL_OMP_STATE_INIT;
        dyn_changed();
    }
}

__attribute__((constructor)) static void shim_init(void)
{
    g.disabled = env_flag("THREADLAB_OMP_DISABLE");
    g.pin = env_flag("THREADLAB_OMP_PIN");
    g.quiet = env_flag("THREADLAB_OMP_QUIET");
    g.probe_ns = env_ms("THREADLAB_OMP_PROBE_MS", 1000) * UINT64_C(1000000);
    g.wait_ns = env_ms("THREADLAB_OMP_WAIT_MS", 50) * UINT64_C(1000000);
    g.pid = getpid();
    pthread_atfork(NULL, NULL, after_fork_child);
}

__attribute__((destructor)) static void shim_fini(void)
{
    if (g.mapped && g.slot >= 0 && g.pid == getpid())
        tl_rm_release(&g.arena, g.slot);
}
