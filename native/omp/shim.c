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
 * request (a region with a num_threads clause keeps it, see dyn-var
 * below).  Regions inside an active region pass through untouched.
 *
 * dyn-var: libgomp's own dynamic adjustment (OMP_DYNAMIC=true) reads the
 * 15-minute load average and the affinity mask with system calls at every
 * region, so while managed the shim turns it off in libgomp (the manager
 * adjusts instead) and answers omp_get_dynamic() itself; unmanaged, the
 * program's own setting is back in force.  A program that calls
 * omp_set_dynamic(0) asks for exact team sizes: it gets them, unmanaged.
 * Left to threadlab (OMP_DYNAMIC unset), only regions without a
 * num_threads clause are sized by the manager; a region with one runs the
 * team it names, confined to the process's CPUs (may_shrink).
 *
 * While a region runs, its team's size cannot change (libgomp fixed it),
 * but its CPUs can: a watcher thread (confine.c) keeps every thread of a
 * managed process on the CPUs the manager gave it, moving them as soon as
 * the allocation changes.  A program whose regions outlast a quantum (and
 * a program's first region, whose length is not known yet) therefore runs
 * its full request, confined to the CPUs it owns, so that it can use more
 * CPUs when another program leaves mid-region; a program of short regions
 * runs min(request, allocation) threads, since barriers want one thread
 * per CPU (docs/rm.md "Team size against CPUs").
 *
 * No manager: the program runs exactly as without the shim (one notice);
 * the arena is looked for again once a second.  An arena that is not the
 * user's own, or that others may write, is never mapped (tl_rm_open): the
 * program runs unmanaged, with one notice.  A manager that stops, dies or
 * hangs (noticed by the watcher within a quantum, or at the next region),
 * and an arena that is full, leave the program *cooperative*: its threads
 * get their original CPUs back, and each region gets min(request, the
 * CPUs other work leaves idle), measured from /proc/stat and the
 * process's own CPU time at most every 50 ms (native/rm/coop.c).  One notice per
 * event: losing the manager, being refused, being managed again.
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
#include <sys/resource.h>
#include <unistd.h>

#include <omp.h>

#include "gomp_abi.h"
#include "shim.h"
#include "threadlab/compiler.h"
#include "threadlab/omp.h"
#include "threadlab/rm.h"
#include "threadlab/rm_client.h"

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

static int shim_notice(tl_rm_client *client, int event, const char *what);

static struct {
    int state;                  /* TL_OMP_STATE_* */
    int disabled;               /* THREADLAB_OMP_DISABLE */
    int pin;                    /* THREADLAB_OMP_PIN */
    int quiet;
    tl_rm_client rm;            /* the membership (threadlab/rm_client.h) */
    /* dyn-var (see the file comment) */
    int dyn_captured;
    int dyn_env;                /* libgomp's dyn-var from the environment */
    int dyn_orig;               /* the user's, before `threadlab omp run` */
    int dyn_orig_set;           /* -1: the user left OMP_DYNAMIC unset, else its value */
    int dyn_user;               /* -1, or the program's omp_set_dynamic() */
    unsigned dyn_gen;           /* bumped whenever the wanted real value changes */
    int dyn_noted;              /* the omp_set_dynamic(0) notice was printed */
    /* Region lengths: a region that outlasts long_ns cannot follow the
     * allocation at its boundary; the next one runs the full request. */
    uint64_t long_ns;           /* the manager's quantum */
    int long_regions;           /* the latest managed region was long (or none ran yet) */
    pthread_mutex_t lock;
} g = {.state = TL_OMP_STATE_INIT, .rm = TL_RM_CLIENT_INITIALIZER, .dyn_user = -1, .dyn_orig_set = -1, .dyn_gen = 1,
       .long_regions = 1, .long_ns = (uint64_t)TL_RM_DEFAULT_QUANTUM_MS * 1000000u,
       .lock = PTHREAD_MUTEX_INITIALIZER};

/* Cooperative teams (threadlab/rm_client.h): the CPUs of the process that
 * other work leaves idle. */
static tl_rm_coop co = TL_RM_COOP_INITIALIZER;

/* The shim is preloaded, so its thread-locals can live in the static TLS
 * block: initial-exec makes each access one %fs-relative load instead of a
 * __tls_get_addr call (sync_dyn() reads one at every region).  libgomp's
 * own thread-locals are initial-exec too. */
#define TLS_IE __attribute__((tls_model("initial-exec")))

static __thread unsigned tls_dyn_gen TLS_IE;
static __thread uint32_t tls_pin_epoch TLS_IE;
static __thread unsigned tls_pin_gen TLS_IE;
static __thread int tls_pin_tid TLS_IE = -1;
/* What omp_get_max_threads() last told this thread outside any active
 * region, until its next region: programs size per-thread data by it just
 * before a region and then read every entry (LULESH's time-step
 * constraints), so that region gets exactly that team (keep_promise). */
static __thread unsigned tls_promised TLS_IE;

static void say(const char *fmt, va_list ap)
{
    if (g.quiet)
        return;
    char text[512];
    vsnprintf(text, sizeof text, fmt, ap);
    fprintf(stderr, "threadlab-omp[%d]: %s\n", (int)getpid(), text);
}

static void notice(const char *fmt, ...) TL_PRINTF(1, 2);
static void notice(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(fmt, ap);
    va_end(ap);
}

/* The membership's events (one notice each, threadlab/rm_client.h), with
 * what the shim does about them: without a manager it runs unmanaged, and
 * cooperative once it was managed or refused (a lost manager, a full
 * arena). */
static int shim_notice(tl_rm_client *client, int event, const char *what)
{
    switch (event) {
    case TL_RM_CLIENT_ATTACHED:
        notice("%s", what);
        break;
    case TL_RM_CLIENT_FULL:
        notice("%s; running unmanaged but cooperative (teams sized by the idle CPUs), looking again every %llu ms",
               what, (unsigned long long)(client->probe_ns / UINT64_C(1000000)));
        break;
    case TL_RM_CLIENT_STOPPED:
    case TL_RM_CLIENT_GONE:
    case TL_RM_CLIENT_HUNG:
        notice("%s; running unmanaged but cooperative (teams sized by the idle CPUs)", what);
        break;
    default:
        notice("%s; running unmanaged", what);
        break;
    }
    return 1;
}

static void notice_dyn_off(const char *fmt, ...) TL_PRINTF(1, 2);
static void notice_dyn_off(const char *fmt, ...)
{
    if (g.dyn_noted)
        return;
    g.dyn_noted = 1;
    va_list ap;
    va_start(ap, fmt);
    say(fmt, ap);
    va_end(ap);
}

/* The shim decides the team sizes: managed, or cooperating without a
 * manager. */
static inline int deciding(int state)
{
    return state == TL_OMP_STATE_MANAGED || state == TL_OMP_STATE_COOPERATIVE;
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
    return deciding(__atomic_load_n(&g.state, __ATOMIC_ACQUIRE)) ? g.dyn_env : g.dyn_orig;
}

/* The real dyn-var libgomp should use now. */
static int dyn_wanted(void)
{
    return deciding(__atomic_load_n(&g.state, __ATOMIC_ACQUIRE)) ? 0 : dyn_visible();
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
        g.dyn_orig_set = v;
    } else {
        g.dyn_orig = g.dyn_env;
        g.dyn_orig_set = bool_text(getenv("OMP_DYNAMIC"));
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
    if (!g.dyn_user && deciding(g.state))
        notice_dyn_off("the program called omp_set_dynamic(0): its regions keep the sizes it asks for "
                       "(unmanaged while it does)");
    dyn_changed();
    pthread_mutex_unlock(&g.lock);
    real.set_dynamic(dyn_wanted());
    tls_dyn_gen = __atomic_load_n(&g.dyn_gen, __ATOMIC_ACQUIRE);
}

EXPORT int omp_get_max_threads(void)
{
    ensure_resolved();
    int n = real.get_max_threads();
    if (!g.disabled && real.get_active_level() == 0)
        tls_promised = n > 0 ? (unsigned)n : 1;
    return n;
}

/* gfortran's entries (LOGICAL(4) results, arguments by reference). */
EXPORT int32_t omp_get_max_threads_(void)
{
    return omp_get_max_threads();
}

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

/* Whether a region that asks for `specified` threads may get fewer: the
 * program's omp_set_dynamic(), else the user's OMP_DYNAMIC, else the
 * region names no size (tl_rm_region_may_shrink). */
static int may_shrink(unsigned specified)
{
    return tl_rm_region_may_shrink(g.dyn_user >= 0 ? g.dyn_user : g.dyn_orig_set, specified);
}

/* ------------------------------------------------------ cooperative teams */

/* The team of a region the shim does not give the manager's allocation:
 * cooperative, or exactly what libgomp would run. */
static unsigned unmanaged_team(int state, unsigned specified)
{
    sync_dyn();
    if (state != TL_OMP_STATE_COOPERATIVE || !may_shrink(specified))
        return specified;
    unsigned request = specified ? specified : (unsigned)real.get_max_threads();
    return tl_rm_coop_team(&co, request);
}

/* ---------------------------------------------------------- attach/detach */

/* The state of a process that could not be managed now: cooperative once
 * it has been managed or refused (a manager that left, a full arena),
 * else libgomp as it is (no manager was ever seen, or the arena is not
 * one to trust). */
static int without_manager(void)
{
    return tl_rm_coop_begun(&co) ? TL_OMP_STATE_COOPERATIVE : TL_OMP_STATE_UNMANAGED;
}

/* Under g.lock.  Looks for a manager and registers; returns the new state. */
static int attach_locked(unsigned request)
{
    capture_dyn();
    shim_confine_capture(); /* the process's own CPUs, before any confinement */
    int rc = tl_rm_client_attach(&g.rm, request);
    if (rc == TL_RM_CLIENT_FULL) {
        tl_rm_coop_begin_once(&co, shim_confine_original());
        return TL_OMP_STATE_COOPERATIVE;
    }
    if (rc != TL_RM_CLIENT_MANAGED)
        return without_manager();
    uint64_t quantum = tl_rm_client_quantum_ns(&g.rm);
    if (quantum)
        g.long_ns = quantum;
    /* cooperative from now on, whatever way the manager is lost later */
    tl_rm_coop_begin_once(&co, shim_confine_original());
    return TL_OMP_STATE_MANAGED;
}

static void set_state(int state)
{
    int old = __atomic_exchange_n(&g.state, state, __ATOMIC_ACQ_REL);
    if (old != state) {
        dyn_changed();
        /* The watcher confines a managed process and frees one that is
         * not any more. */
        if (state == TL_OMP_STATE_MANAGED || old == TL_OMP_STATE_MANAGED)
            shim_confine_kick(g.rm.my);
    }
}

/* The slow path: first region, or an unmanaged process's periodic look. */
static int attach(unsigned request)
{
    pthread_mutex_lock(&g.lock);
    int state = __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);
    if (state != TL_OMP_STATE_MANAGED && (state == TL_OMP_STATE_INIT || tl_rm_client_probe_due(&g.rm, tl_rm_coarse_ns())))
        state = attach_locked(request);
    set_state(state);
    pthread_mutex_unlock(&g.lock);
    return state;
}

/* The manager is lost (stopped, dead, hung: `why`, a TL_RM_CLIENT_*):
 * cooperate without it, from the team it had allocated. */
static void fall_back(int why)
{
    pthread_mutex_lock(&g.lock);
    if (g.state == TL_OMP_STATE_MANAGED) {
        tl_rm_client_lost(&g.rm, why);
        uint32_t alloc = g.rm.my ? __atomic_load_n(&g.rm.my->alloc, __ATOMIC_RELAXED) : 1;
        tl_rm_coop_begin(&co, shim_confine_original(), alloc);
        set_state(TL_OMP_STATE_COOPERATIVE);
    }
    pthread_mutex_unlock(&g.lock);
}

int shim_watch_state(tl_rm_slot **slot, const tl_rm_header **hdr)
{
    pthread_mutex_lock(&g.lock);
    int state = g.state;
    /* A slot the manager freed (and maybe gave to another program) is not
     * this process's allocation: the next region registers again. */
    tl_rm_slot *s = state == TL_OMP_STATE_MANAGED && tl_rm_client_slot_ours(&g.rm) ? g.rm.my : NULL;
    *slot = s;
    *hdr = s && g.rm.mapped ? g.rm.arena.hdr : NULL;
    pthread_mutex_unlock(&g.lock);
    return state;
}

int shim_watch_manager(const tl_rm_header *hdr)
{
    if (__atomic_load_n(&g.state, __ATOMIC_ACQUIRE) != TL_OMP_STATE_MANAGED || hdr != g.rm.arena.hdr)
        return 0;
    int why = tl_rm_client_check(&g.rm, tl_rm_coarse_ns());
    if (why == TL_RM_CLIENT_MANAGED || why == TL_RM_CLIENT_REPLACED)
        return 1; /* a freed slot: the next region registers again */
    fall_back(why);
    return 0;
}

EXPORT int threadlab_omp_state(void)
{
    return __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);
}

EXPORT int threadlab_omp_slot(void)
{
    return __atomic_load_n(&g.state, __ATOMIC_ACQUIRE) == TL_OMP_STATE_MANAGED ? g.rm.slot : -1;
}

/* ------------------------------------------------------------ the decision */

/* A region without a num_threads clause that follows a call of
 * omp_get_max_threads() on its thread runs the team that call promised
 * (while the ICV still says so), not a smaller one: dyn-var allows fewer threads,
 * but a program that sized per-thread data by that call and reads every
 * entry after the region would read entries no thread wrote. */
static inline unsigned keep_promise(unsigned team, unsigned specified, unsigned promised)
{
    if (!promised || specified || team == 0 || team >= promised)
        return team;
    /* a promise the ICV no longer matches (omp_set_num_threads since) is
     * forgotten */
    return promised == (unsigned)real.get_max_threads() ? promised : team;
}

static inline unsigned decide_team(unsigned specified, int *managed, uint64_t *t0);

/* The team to pass for a region whose num_threads argument is `specified`
 * (0 = the ICV); *managed says whether the manager decided it, and *t0 is
 * then when the region started (coarse clock: region_end() measures it). */
static inline unsigned decide(unsigned specified, int *managed, uint64_t *t0)
{
    unsigned promised = tls_promised;
    unsigned team = decide_team(specified, managed, t0);
    if (UNLIKELY(promised)) {
        tls_promised = 0;
        if (real.get_active_level() == 0)
            team = keep_promise(team, specified, promised);
    }
    return team;
}

static inline unsigned decide_team(unsigned specified, int *managed, uint64_t *t0)
{
    *managed = 0;
    ensure_resolved();
    if (UNLIKELY(g.disabled))
        return specified;
    if (real.get_active_level() > 0)
        return specified; /* nested inside an active region: pass through */
    int state = __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);
    if (UNLIKELY(state != TL_OMP_STATE_MANAGED)) {
        if (state == TL_OMP_STATE_INIT || tl_rm_client_probe_due(&g.rm, tl_rm_coarse_ns())) {
            unsigned request = specified ? specified : (unsigned)real.get_max_threads();
            state = attach(request ? request : 1);
        }
        if (state != TL_OMP_STATE_MANAGED)
            return unmanaged_team(state, specified);
    }
    if (UNLIKELY(g.dyn_user == 0)) {
        sync_dyn();
        return specified; /* the program asked for exact sizes */
    }
    uint64_t now = tl_rm_coarse_ns();
    int why = tl_rm_client_check(&g.rm, now);
    if (UNLIKELY(why != TL_RM_CLIENT_MANAGED)) {
        if (why != TL_RM_CLIENT_REPLACED) {
            fall_back(why);
            return unmanaged_team(__atomic_load_n(&g.state, __ATOMIC_ACQUIRE), specified);
        }
        /* Our slot was freed, or a new manager adopted the arena: register
         * again on the slow path (it keeps a slot that is still ours). */
        pthread_mutex_lock(&g.lock);
        int st = attach_locked(specified ? specified : (unsigned)real.get_max_threads());
        set_state(st);
        pthread_mutex_unlock(&g.lock);
        if (st != TL_OMP_STATE_MANAGED)
            return unmanaged_team(st, specified);
    }
    sync_dyn();
    unsigned request = specified ? specified : (unsigned)real.get_max_threads();
    if (request == 0)
        request = 1;
    unsigned alloc = tl_rm_client_request(&g.rm, request);
    if (UNLIKELY(alloc == 0))
        alloc = 1; /* not answered yet: the master alone */
    unsigned team = request < alloc ? request : alloc;
    /* A region that may outlast a quantum cannot follow the allocation at
     * its boundary, and one that may not shrink keeps its size: either
     * runs its request, and the watcher moves its CPUs. */
    if (__atomic_load_n(&g.long_regions, __ATOMIC_RELAXED) || !may_shrink(specified))
        team = request;
    tl_rm_client_ran(&g.rm, team, now);
    *managed = 1;
    *t0 = now;
    return team;
}

/* After a managed region: whether it outlasted a quantum.  One coarse
 * clock read (no system call). */
static inline void region_end(int managed, uint64_t t0)
{
    if (!managed)
        return;
    int outlasted = tl_rm_coarse_ns() - t0 >= g.long_ns;
    if (UNLIKELY(outlasted != __atomic_load_n(&g.long_regions, __ATOMIC_RELAXED)))
        __atomic_store_n(&g.long_regions, outlasted, __ATOMIC_RELAXED);
}

/* ----------------------------------------------------------------- pinning */

#define PIN_MAX_CPUS 256

typedef struct {
    tl_fn fn;
    void *data;
    uint32_t epoch;
    unsigned generation;        /* of the watcher's masks (confine.c) */
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
        const tl_rm_cpuset *all = &g.rm.arena.hdr->cpus;
        for (unsigned c = 0; c < CPU_SETSIZE && c < TL_RM_MAX_CPUS; c++)
            if (tl_rm_cpuset_has(all, c))
                CPU_SET(c, &set);
    }
    sched_setaffinity(0, sizeof set, &set); /* best effort */
    tls_pin_epoch = f->epoch;
    tls_pin_gen = f->generation;
    tls_pin_tid = tid;
}

static inline int pin_stale(const pin_frame *f, int tid)
{
    return tls_pin_epoch != f->epoch || tls_pin_gen != f->generation || tls_pin_tid != tid;
}

static void pin_trampoline(void *arg)
{
    const pin_frame *f = arg;
    int tid = real.get_thread_num();
    if (pin_stale(f, tid))
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
    tl_rm_read_alloc(g.rm.my, NULL, NULL, &epoch, &cpus);
    f->fn = fn;
    f->data = data;
    f->epoch = epoch;
    f->generation = shim_confine_generation();
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
    if (pin_prepare(&f, NULL, NULL) && pin_stale(&f, 0))
        pin_self(&f, 0);
}

/* Legacy GOMP_parallel_start/end: the frame lives until the end, and so
 * does the region's start time. */
#define LEGACY_DEPTH 8
static __thread pin_frame *tls_legacy[LEGACY_DEPTH] TLS_IE;
static __thread uint64_t tls_legacy_t0[LEGACY_DEPTH] TLS_IE; /* 0: not managed */
static __thread unsigned tls_legacy_depth TLS_IE;

static void legacy_push(pin_frame *f, int managed, uint64_t t0)
{
    if (tls_legacy_depth < LEGACY_DEPTH) {
        tls_legacy[tls_legacy_depth] = f;
        tls_legacy_t0[tls_legacy_depth] = managed ? (t0 ? t0 : 1) : 0;
    }
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
    uint64_t t0;
    unsigned n = decide(num_threads, &managed, &t0);
    WRAP(managed, frame, fn, data);
    real.parallel(fn, data, n, flags);
    region_end(managed, t0);
}

EXPORT unsigned GOMP_parallel_reductions(tl_fn fn, void *data, unsigned num_threads, unsigned flags)
{
    int managed;
    uint64_t t0;
    unsigned n = decide(num_threads, &managed, &t0);
    if (managed)
        pin_master_only(); /* libgomp reads the reduction descriptors in data: no wrapping */
    unsigned team = real.parallel_reductions(fn, data, n, flags);
    region_end(managed, t0);
    return team;
}

EXPORT void GOMP_parallel_sections(tl_fn fn, void *data, unsigned num_threads, unsigned count, unsigned flags)
{
    int managed;
    uint64_t t0;
    unsigned n = decide(num_threads, &managed, &t0);
    WRAP(managed, frame, fn, data);
    real.parallel_sections(fn, data, n, count, flags);
    region_end(managed, t0);
}

#define LOOP_CHUNKED(name, field)                                                                             \
    EXPORT void name(tl_fn fn, void *data, unsigned num_threads, long start, long end, long incr, long chunk,  \
                     unsigned flags)                                                                          \
    {                                                                                                         \
        int managed;                                                                                          \
        uint64_t t0;                                                                                          \
        unsigned n = decide(num_threads, &managed, &t0);                                                      \
        WRAP(managed, frame, fn, data);                                                                       \
        real.field(fn, data, n, start, end, incr, chunk, flags);                                              \
        region_end(managed, t0);                                                                              \
    }

#define LOOP_RUNTIME(name, field)                                                                             \
    EXPORT void name(tl_fn fn, void *data, unsigned num_threads, long start, long end, long incr,             \
                     unsigned flags)                                                                          \
    {                                                                                                         \
        int managed;                                                                                          \
        uint64_t t0;                                                                                          \
        unsigned n = decide(num_threads, &managed, &t0);                                                      \
        WRAP(managed, frame, fn, data);                                                                       \
        real.field(fn, data, n, start, end, incr, flags);                                                     \
        region_end(managed, t0);                                                                              \
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
static void legacy_frame(int managed, uint64_t t0, tl_fn *fn, void **data)
{
    pin_frame *f = NULL;
    if (managed && g.pin) {
        f = malloc(sizeof *f);
        if (f && pin_prepare(f, *fn, *data)) {
            *fn = pin_trampoline;
            *data = f;
            if (pin_stale(f, 0))
                pin_self(f, 0); /* the master runs the original fn itself */
        } else {
            free(f);
            f = NULL;
        }
    }
    legacy_push(f, managed, t0);
}

EXPORT void GOMP_parallel_start(tl_fn fn, void *data, unsigned num_threads)
{
    int managed;
    uint64_t t0;
    unsigned n = decide(num_threads, &managed, &t0);
    legacy_frame(managed, t0, &fn, &data);
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
            uint64_t t0 = tls_legacy_t0[tls_legacy_depth];
            region_end(t0 != 0, t0);
        }
    }
}

#define LOOP_START_CHUNKED(name, field)                                                                       \
    EXPORT void name(tl_fn fn, void *data, unsigned num_threads, long start, long end, long incr, long chunk)  \
    {                                                                                                         \
        int managed;                                                                                          \
        uint64_t t0;                                                                                          \
        unsigned n = decide(num_threads, &managed, &t0);                                                      \
        legacy_frame(managed, t0, &fn, &data);                                                                \
        real.field(fn, data, n, start, end, incr, chunk);                                                     \
    }

LOOP_START_CHUNKED(GOMP_parallel_loop_static_start, loop_static_start)
LOOP_START_CHUNKED(GOMP_parallel_loop_dynamic_start, loop_dynamic_start)
LOOP_START_CHUNKED(GOMP_parallel_loop_guided_start, loop_guided_start)

EXPORT void GOMP_parallel_loop_runtime_start(tl_fn fn, void *data, unsigned num_threads, long start, long end,
                                             long incr)
{
    int managed;
    uint64_t t0;
    unsigned n = decide(num_threads, &managed, &t0);
    legacy_frame(managed, t0, &fn, &data);
    real.loop_runtime_start(fn, data, n, start, end, incr);
}

EXPORT void GOMP_parallel_sections_start(tl_fn fn, void *data, unsigned num_threads, unsigned count)
{
    int managed;
    uint64_t t0;
    unsigned n = decide(num_threads, &managed, &t0);
    legacy_frame(managed, t0, &fn, &data);
    real.sections_start(fn, data, n, count);
}

/* ------------------------------------------------------ process lifecycle */

static void after_fork_child(void)
{
    /* The child is another process: the parent's slot is not its own. */
    tl_rm_client_after_fork(&g.rm);
    pthread_mutex_init(&g.lock, NULL);
    tl_rm_coop_after_fork(&co);
    shim_confine_after_fork();
    if (deciding(g.state)) {
        g.state = TL_OMP_STATE_INIT;
        dyn_changed();
    }
}

__attribute__((constructor)) static void shim_init(void)
{
    g.disabled = env_flag("THREADLAB_OMP_DISABLE");
    g.pin = env_flag("THREADLAB_OMP_PIN");
    g.quiet = env_flag("THREADLAB_OMP_QUIET");
    g.rm.probe_ns = env_ms("THREADLAB_OMP_PROBE_MS", 1000) * UINT64_C(1000000);
    g.rm.wait_ns = env_ms("THREADLAB_OMP_WAIT_MS", 50) * UINT64_C(1000000);
    g.rm.flags = g.pin ? TL_RM_APP_PINNED : 0;
    g.rm.notice = shim_notice;
    pthread_atfork(NULL, NULL, after_fork_child);
}

__attribute__((destructor)) static void shim_fini(void)
{
    tl_rm_client_release(&g.rm);
}
