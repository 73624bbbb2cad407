/*
 * team.c - the runtime's start, OpenMP threads and teams.
 *
 * Threads. Every OpenMP thread but the initial one is a ULT of
 * libthreadlab-ult, created when its team starts (a descriptor from a
 * per-VP cache and a stack from a per-VP cache: no kernel thread, no
 * system call) and ended when the region ends, unless it waits for its
 * team's next region and runs it (a top-level team's worker: docking,
 * below). Its tlg_thread is the ULT's
 * local pointer. The master of a team is the encountering thread itself:
 * the main thread is the primordial ULT of VP 0 (the runtime starts on
 * the first team, from the main thread); another kernel thread that
 * starts a team lends its TLS to a ULT that runs the region
 * (tl_ult_run_as_self) and sleeps meanwhile.
 *
 * Thread-local storage. GCC compiles threadprivate variables to __thread
 * ones, so each OpenMP thread needs TLS of its own that does not change
 * when its ULT migrates between VPs (the VPs follow the resource manager
 * inside a region). In the default mode (THREADLAB_GOMP_TLS=identity)
 * every worker ULT wears a TLS identity of libthreadlab-ult: thread k of
 * a top-level team always wears identity k (threadprivate data persists
 * from one region to the next, as OpenMP wants), threads of nested teams
 * and of the teams a target region's body starts (wears_top) take
 * identities from a pool. Where identities do not exist (ASan and
 * TSan builds) or with THREADLAB_GOMP_TLS=vp, thread k of a team is bound
 * to VP k mod nvps and sees that VP's TLS: threadprivate data is then
 * right only while each VP runs at most one OpenMP thread (docs).
 *
 * Teams. A team is one allocation (team, then its threads' states),
 * cached by the master for its next region. The region ends with a final
 * barrier that only the master waits in: a worker that arrives runs tasks
 * while any is pending, counts itself finished and exits or docks (once
 * the region has tasks, it stays until the master arrives; one that left
 * before the first task is recalled by its creator: tlg_recall_workers).
 */
#define _GNU_SOURCE
#include "gomp.h"
#include "threadlab/rm_client.h"

#include <errno.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int tlg_forked;

/* The identities of the top-level teams one kernel thread of the program
 * starts (identity k for thread k >= 1), kept by that thread's state
 * outside any team: two kernel threads may each run a top-level team at
 * once, and one identity is worn by one running ULT. */
typedef struct tlg_tops {
    tl_ult_identity **ids;
    unsigned n;
    tlg_thread *root;
    struct tlg_tops *next;
} tlg_tops;

static struct {
    pthread_mutex_t lock;
    _Atomic int initialized;
    unsigned nvps;
    tlg_tops *tops;           /* every kernel thread's that has any */
    pthread_key_t root_key;   /* a kernel thread's state, for its exit (root_exit) */
    tl_ult_identity **pool;   /* free identities for nested teams */
    unsigned npool, pool_cap;
    /* omp_pause_resource retires the identities (tlg_pause): the
     * generation of the tops, bumped then; the top-level teams wearing
     * top identities now (a pause retires nothing while one runs); the
     * retired identities a VP still wore, destroyed when it no longer does */
    _Atomic unsigned top_gen;
    _Atomic unsigned top_active;
    tl_ult_identity **retired;
    _Atomic unsigned nretired;
    unsigned retired_cap;
    _Atomic unsigned busy;    /* OpenMP threads of the program's initial group (thread-limit-var) */
    _Atomic unsigned long docked; /* workers that ran a region they waited for (threadlab_gomp_docked_starts) */
} rt = {.lock = PTHREAD_MUTEX_INITIALIZER, .busy = 1};

static void undock_team(tlg_team *team);

/* The state of a kernel thread (or a TLS identity) outside any team; the
 * current state of the OpenMP thread whose TLS this is (identity mode,
 * see tlg_self), or of a non-ULT thread in a team (vp mode). */
static void root_exit(void *root);

static __thread tlg_thread *tls_initial __attribute__((tls_model("initial-exec")));
__thread tlg_thread *tlg_tls_cur __attribute__((tls_model("initial-exec")));

static void init_implicit(tlg_thread *t, const tlg_icv *icv)
{
    memset(&t->implicit, 0, sizeof t->implicit);
    t->implicit.icv = *icv;
    t->implicit.implicit = 1;
    atomic_init(&t->implicit.refs, 1); /* never dropped: it is not allocated */
    t->implicit.thr = t;
    t->implicit.jump = &t->implicit; /* a root of task.c's ancestry: depth 0, its own jump */
    t->task = &t->implicit;
}

tlg_thread *tlg_thread_new(const tlg_icv *icv, tlg_cg *cg)
{
    tlg_thread *t = tlg_aligned_alloc(TLG_LINE, sizeof *t);
    memset(t, 0, sizeof *t);
    init_implicit(t, icv);
    tlg_task_thread_init(t);
    t->cg = cg;
    return t;
}

tlg_thread *tlg_initial(void)
{
    tlg_thread *t = tls_initial;
    if (TLG_LIKELY(t))
        return t;
    t = tlg_thread_new(&tlg_env_v.icv, NULL);
    tls_initial = t;
    pthread_setspecific(rt.root_key, t); /* its top identities go back to the pool when it exits */
    return t;
}

tlg_thread *tlg_self_slow(void)
{
    tlg_thread *t = tlg_tls_cur;
    return t ? t : tlg_initial();
}

void tlg_set_current(tlg_thread *t)
{
    if (tlg_env_v.tls_mode != TLG_TLS_IDENTITY && tl_ult_self())
        tl_ult_set_local(t);
    else
        tlg_tls_cur = t;
}

int tlg_ult_ready(void)
{
    return atomic_load_explicit(&rt.initialized, ACQ);
}

static void atfork_child(void)
{
    /* the VPs are not in the child: its teams run serially */
    tlg_forked = 1;
}

__attribute__((constructor)) static void tlg_constructor(void)
{
    tlg_env_init();
    tlg_rm_init();
    pthread_atfork(NULL, NULL, atfork_child);
    if (pthread_key_create(&rt.root_key, root_exit) != 0)
        tlg_fatal("cannot create a thread-specific data key");
    /* The runtime starts at the first region, by when the manager's
     * watcher (or the program) has made threads: its membarrier
     * registration would then wait 10-20 ms for the kernel's RCU; a
     * preloaded library's constructor runs before any. */
    tl_ult_preinit(NULL);
}

static unsigned env_vps(void)
{
    const char *v = getenv("THREADLAB_GOMP_VPS");
    if (!v || !*v)
        return 0;
    char *end;
    unsigned long n = strtoul(v, &end, 10);
    if (*end || n == 0 || n > 4096) {
        tlg_notice("THREADLAB_GOMP_VPS=%s is not valid (accepted: 1 to 4096); ignored", v);
        return 0;
    }
    return (unsigned)n;
}

void tlg_init(void)
{
    if (TLG_LIKELY(atomic_load_explicit(&rt.initialized, ACQ)))
        return;
    pthread_mutex_lock(&rt.lock);
    if (!atomic_load_explicit(&rt.initialized, RLX)) {
        tl_ult_config cfg;
        tl_ult_config_init(&cfg);
        /* the OpenMP threads' stacks are the runtime's default pool, the
         * one every creation finds without a lookup */
        cfg.stack_size = tlg_stack_size();
        unsigned ncpu = tlg_env_v.ncpus;
        cfg.nvps = env_vps();
        if (!cfg.nvps) {
            cfg.nvps = ncpu;
            /* vp mode: one VP per thread of a top-level team, so that each
             * sees TLS of its own */
            if (tlg_env_v.tls_mode == TLG_TLS_VP && tlg_env_v.icv.nthreads > cfg.nvps)
                cfg.nvps = tlg_env_v.icv.nthreads;
        }
        cfg.pin = tlg_env_v.icv.bind != omp_proc_bind_false;
        /* more VPs than CPUs: a spinning VP would take the CPU of the one
         * it waits for, so idle VPs and waiting threads do not spin */
        if (cfg.nvps > ncpu) {
            cfg.spin_us = 0;
            tlg_env_v.spin_ns = 0;
            tlg_env_v.dock_ns = 0;
        }
        /* a docked worker spins in its VP's place: as long as the VP
         * would, idle, before it sleeps */
        if (tlg_env_v.dock_ns == UINT64_MAX)
            tlg_env_v.dock_ns = (uint64_t)cfg.spin_us * 1000u;
        /* the main thread becomes VP 0's primordial ULT; any other thread
         * may exit, so it stays external */
        cfg.external = syscall(SYS_gettid) != getpid();
        /* libthreadlab-ult places its VPs from the caller's mask: the
         * process's CPUs (env.c), which libgomp's constructor may have
         * narrowed to one on the initial thread.  A VP 0 that is this
         * thread is placed again by the runtime when it pins. */
        cpu_set_t caller;
        int widened = sched_getaffinity(0, sizeof caller, &caller) == 0 && !CPU_EQUAL(&caller, &tlg_env_v.cpus) &&
                      sched_setaffinity(0, sizeof tlg_env_v.cpus, &tlg_env_v.cpus) == 0;
        int err = tl_ult_init(&cfg);
        if (widened && (cfg.external || !cfg.pin))
            sched_setaffinity(0, sizeof caller, &caller);
        if (err)
            tlg_fatal("cannot start the user-level threads runtime: %s", strerror(err));
        rt.nvps = tl_ult_num_vps();
        atomic_store_explicit(&rt.initialized, 1, REL);
    }
    pthread_mutex_unlock(&rt.lock);
    tlg_rm_follow(); /* a manager registered us before the VPs existed */
}

/* ---- identities ---------------------------------------------------------- */

static tl_ult_identity *new_identity(void)
{
    tl_ult_identity *id;
    int err = tl_ult_identity_create(&id);
    if (err)
        tlg_fatal("cannot create a TLS identity (a sleeping kernel thread) for an OpenMP thread: %s",
                  strerror(err));
    return id;
}

/* Identity k of the top-level teams of root (under the lock). */
static tl_ult_identity *top_identity(tlg_thread *root, unsigned k, unsigned *gen)
{
    pthread_mutex_lock(&rt.lock);
    tlg_tops *t = root->tops;
    if (!t) {
        t = tlg_malloc(sizeof *t);
        *t = (tlg_tops){NULL, 0, root, rt.tops};
        rt.tops = root->tops = t;
    }
    if (k >= t->n) {
        unsigned n = k + 1 > 2 * t->n ? k + 1 : 2 * t->n;
        tl_ult_identity **g = realloc(t->ids, n * sizeof *g);
        if (!g)
            tlg_fatal("out of memory");
        memset(g + t->n, 0, (n - t->n) * sizeof *g);
        t->ids = g;
        t->n = n;
    }
    if (!t->ids[k])
        t->ids[k] = new_identity();
    tl_ult_identity *id = t->ids[k];
    *gen = atomic_load_explicit(&rt.top_gen, RLX); /* written under the lock */
    pthread_mutex_unlock(&rt.lock);
    return id;
}

/* Identity k of the top level for a member of a cached team of root:
 * looked up (under the lock) once per member and generation, not per
 * region. The caller counted its team in top_active first: with the
 * pause's order (bump the generation, then read top_active), either the
 * pause sees the team and retires nothing, or the team sees the new
 * generation. */
static tl_ult_identity *cached_top_identity(tlg_thread *root, tlg_thread *m, unsigned k)
{
    if (!m->top_identity || m->top_gen != atomic_load_explicit(&rt.top_gen, SEQ))
        m->top_identity = top_identity(root, k, &m->top_gen);
    return m->top_identity;
}

/* Destroys the retired identities no VP wears any more (under the lock). */
static void retired_sweep(void)
{
    unsigned n = atomic_load_explicit(&rt.nretired, RLX), kept = 0;
    for (unsigned i = 0; i < n; i++)
        if (tl_ult_identity_try_destroy(rt.retired[i]) != 0)
            rt.retired[kept++] = rt.retired[i];
    atomic_store_explicit(&rt.nretired, kept, RLX);
}

/* A list of identities (n of them) with room for one more. */
static tl_ult_identity **ids_room(tl_ult_identity **ids, unsigned n, unsigned *cap)
{
    if (n < *cap)
        return ids;
    unsigned c = *cap ? 2 * *cap : 16;
    tl_ult_identity **g = realloc(ids, c * sizeof *g);
    if (!g)
        tlg_fatal("out of memory");
    *cap = c;
    return g;
}

/* An identity no team uses goes to the pool (under the lock). */
static void pool_push(tl_ult_identity *id)
{
    rt.pool = ids_room(rt.pool, rt.npool, &rt.pool_cap);
    rt.pool[rt.npool++] = id;
}

static void retire(tl_ult_identity *id)
{
    unsigned n = atomic_load_explicit(&rt.nretired, RLX);
    rt.retired = ids_room(rt.retired, n, &rt.retired_cap);
    rt.retired[n] = id;
    atomic_store_explicit(&rt.nretired, n + 1, RLX);
}

int tlg_pause(void)
{
    if (tlg_self()->level > 0)
        return -1; /* in a region: its threads are in use */
    if (!tlg_ult_ready() || tlg_env_v.tls_mode != TLG_TLS_IDENTITY)
        return 0;
    /* its own workers waiting for its next region go (they wear the
     * identities retired below); another kernel thread's go within
     * dock_ns, and their identities once unworn (retired_sweep) */
    if (tlg_self()->cached_team)
        undock_team(tlg_self()->cached_team);
    pthread_mutex_lock(&rt.lock);
    atomic_fetch_add_explicit(&rt.top_gen, 1, SEQ);
    if (atomic_load_explicit(&rt.top_active, SEQ) == 0) {
        for (tlg_tops *t = rt.tops; t; t = t->next)
            for (unsigned k = 0; k < t->n; k++)
                if (t->ids[k]) {
                    retire(t->ids[k]);
                    t->ids[k] = NULL;
                }
        /* the pool holds only identities no team uses */
        for (unsigned i = 0; i < rt.npool; i++)
            retire(rt.pool[i]);
        rt.npool = 0;
    }
    retired_sweep();
    pthread_mutex_unlock(&rt.lock);
    return 0;
}

/* A kernel thread of the program exits: its top-level identities serve
 * nested teams (no team of its own runs any more), and its state and
 * cached team go. A destructor that runs later and enters OpenMP again
 * gets a new state (tlg_initial). */
static void root_exit(void *p)
{
    tlg_thread *root = p;
    if (tls_initial == root)
        tls_initial = NULL;
    /* its docked workers wear the identities given to the pool below */
    if (root->cached_team)
        undock_team(root->cached_team);
    pthread_mutex_lock(&rt.lock);
    tlg_tops *t = root->tops;
    if (t) {
        for (unsigned k = 0; k < t->n; k++)
            if (t->ids[k])
                pool_push(t->ids[k]);
        tlg_tops **at = &rt.tops;
        while (*at != t)
            at = &(*at)->next;
        *at = t->next;
        free(t->ids);
        free(t);
        root->tops = NULL;
    }
    pthread_mutex_unlock(&rt.lock);
    tlg_thread_free(root);
}

static tl_ult_identity *pool_get(void)
{
    pthread_mutex_lock(&rt.lock);
    tl_ult_identity *id = rt.npool ? rt.pool[--rt.npool] : NULL;
    pthread_mutex_unlock(&rt.lock);
    return id ? id : new_identity();
}

static void pool_put(tl_ult_identity *id)
{
    pthread_mutex_lock(&rt.lock);
    pool_push(id);
    pthread_mutex_unlock(&rt.lock);
}

/* ---- team size ------------------------------------------------------------- */

/* The count of OpenMP threads of a contention group (thread-limit-var):
 * the program's initial group, or a target region's. */
static _Atomic unsigned *cg_busy(tlg_cg *cg)
{
    return cg ? &cg->busy : &rt.busy;
}

unsigned tlg_resolve_threads(unsigned specified, unsigned count)
{
    tlg_thread *thr = tlg_self();
    tlg_icv *icv = &thr->task->icv;
    unsigned promised = thr->promised; /* see below */
    thr->promised = 0;
    if (specified == 1 || tlg_forked)
        return 1;
    if (thr->active_level >= icv->max_active_levels)
        return 1;
    unsigned n = specified ? specified : icv->nthreads;
    unsigned bound = thr->level == 0 && (!thr->cg || thr->cg->top) ? tlg_rm_region(n) : 0;
    int dyn = tlg_dyn(icv); /* after the region's registration: managed, it defaults to true */
    /* A region without a num_threads clause right after a call of
     * omp_get_max_threads() runs the team that call promised: dyn-var
     * allows fewer threads, but a program that sized per-thread data by
     * it and reads every entry after the region (LULESH) would read
     * entries no thread wrote. */
    if (promised && !specified && promised == n)
        dyn = 0; /* (a promise the ICV no longer matches is forgotten) */
    /* Nor, unless the program or the user chose dyn-var, does a region
     * with a num_threads clause (the rule both runtimes share:
     * tl_rm_region_may_shrink); its threads beyond the allocation are
     * ULTs on the VPs it allows. */
    if (!tl_rm_region_may_shrink(tlg_dyn_chosen(icv), specified))
        dyn = 0;
    if (dyn) {
        /* managed: the manager's bound (rm.c: it may exceed the active
         * VPs for a long region); else the active VPs */
        if (!bound && tlg_ult_ready())
            bound = tl_ult_active_vps();
        if (bound && n > bound)
            n = bound;
        if (count && count < n)
            n = count;
    }
    if (n <= 1)
        return 1;
    if (icv->thread_limit != INT_MAX) {
        /* threads of the contention group: the busy count */
        _Atomic unsigned *group = cg_busy(thr->cg);
        unsigned busy = atomic_load_explicit(group, RLX), want;
        do {
            want = n;
            if (busy >= icv->thread_limit)
                want = 1;
            else if (busy + want - 1 > icv->thread_limit)
                want = icv->thread_limit - busy + 1;
        } while (!atomic_compare_exchange_weak_explicit(group, &busy, busy + want - 1, RLX, RLX));
        n = want;
    }
    return n;
}

/* ---- teams ------------------------------------------------------------------- */

/* A team of n: its head and member pointers, its members, its barrier's
 * arrival tree; each part starting on a line of its own. */
static size_t team_bytes(unsigned n)
{
    size_t head = sizeof(tlg_team) + n * sizeof(tlg_thread *);
    head = (head + TLG_LINE - 1) / TLG_LINE * TLG_LINE;
    return head + n * ((sizeof(tlg_thread) + TLG_LINE - 1) / TLG_LINE * TLG_LINE) +
           tlg_bar_nodes(n) * sizeof(tlg_bar_node);
}

static tlg_thread *member(tlg_team *team, unsigned k)
{
    size_t head = sizeof(tlg_team) + team->cap * sizeof(tlg_thread *);
    head = (head + TLG_LINE - 1) / TLG_LINE * TLG_LINE;
    return (tlg_thread *)((char *)team + head + k * ((sizeof(tlg_thread) + TLG_LINE - 1) / TLG_LINE * TLG_LINE));
}

static void team_free(tlg_team *team);

/* What a thread's state holds: its task memory and queue, the team it
 * cached as a master (with its members' own, nested), its orphaned
 * constructs' work share. */
static void thread_parts_free(tlg_thread *t)
{
    if (t->cached_team)
        team_free(t->cached_team);
    t->cached_team = NULL;
    tlg_task_thread_fini(t);
    if (t->solo) {
        free(t->solo->mem);
        free(t->solo);
        t->solo = NULL;
    }
}

static void undock(tlg_thread *m, int wait);

static void undock_team(tlg_team *team)
{
    for (unsigned k = 1; k < team->cap; k++)
        undock(member(team, k), 1);
}

static void team_free(tlg_team *team)
{
    undock_team(team);
    tlg_ws_reset(team, team->ws_dirty); /* what its last region's constructs held (their doacross state leaked) */
    for (unsigned k = 0; k < team->cap; k++)
        thread_parts_free(member(team, k));
    tlg_task_team_fini(team);
    free(team);
}

/* Whether a team's threads wear the top-level identities: the program's
 * own top-level teams. A target region's contention group (target.c)
 * starts its top level afresh while the team that encountered it may run,
 * its threads wearing those identities (one identity, one running ULT):
 * its teams take identities from the pool, as nested teams do. */
static int wears_top(const tlg_team *team)
{
    return team->level == 1 && !team->cg;
}

/* Every thread's own team cache: the team it last started as master. */
static tlg_team *team_get(tlg_thread *thr, unsigned n)
{
    tlg_team *team = thr->cached_team;
    if (team && team->cap >= n)
        return team;
    if (team)
        team_free(team);
    unsigned cap = n < 4 ? 4 : n;
    team = tlg_aligned_alloc(TLG_LINE, team_bytes(cap));
    memset(team, 0, team_bytes(cap));
    team->cap = cap;
    team->ws_dirty = TLG_WS_RING; /* its ring is all zeros: reset before the first region */
    team->bar_nodes = (tlg_bar_node *)member(team, cap);
    for (unsigned k = 0; k < cap; k++)
        tlg_task_thread_init(member(team, k));
    thr->cached_team = team;
    return team;
}

void tlg_thread_free(tlg_thread *t)
{
    tlg_task_implicit_end(&t->implicit);
    thread_parts_free(t);
    free(t);
}

struct region {
    tlg_fn fn;
    void *data;
    unsigned nthreads;
    unsigned flags;
    void (*ws0)(tlg_team *, void *);
    void *ws0_arg;
    uintptr_t *reductions;
    tlg_team *team;      /* set by region_start */
    tlg_thread *master_prev;
    int workdesc;        /* its parts run as a work descriptor (tlg_parallel_workdesc) */
};

static int worker_end(tlg_thread *me, int for_master);
static int dock_wait(tlg_thread *me);

/* ---- docking: workers that wait for their team's next region ------------------
 *
 * A worker of a top-level team (identity mode) that reaches the region's
 * end docks: it says so on its state's dock word before it counts itself
 * finished, then spins there, wearing its identity, for as long as an idle
 * VP would spin before it sleeps (dock_ns). The master of the team's
 * next region claims it (WAITING -> CLAIMED, in region_start, if it wears
 * the identity the region gives thread k) and, once every member is set
 * up, releases it (GO): one store where making a ULT took a request to the
 * worker's VP, a stack, a switch and an exit. A docked worker leaves on
 * its own (WAITING -> NONE, the CAS deciding against a claim) when its
 * time is up or its VP has other work (tl_ult_vp_wanted: queued threads, a
 * work descriptor, a stop by the manager). Told to go (EVICT) by a master
 * that needs the identity for something else (a work-descriptor region, a
 * recalled worker, an identity of a new generation) or frees the team (its
 * dock word is the team's memory, so team_free waits for the answer,
 * NONE), it says NONE and exits. libgomp's threads wait so for their
 * next region (its pool's dock barrier); here they give the VP back to
 * anything else that wants it.
 */
enum { TLG_DOCK_NONE, TLG_DOCK_WAITING, TLG_DOCK_CLAIMED, TLG_DOCK_GO, TLG_DOCK_EVICT };

/* The worker answers EVICT: a master may wait for it (undock). */
static void dock_leave(tlg_thread *me)
{
    atomic_store_explicit(&me->dock, TLG_DOCK_NONE, REL);
    tl_ult_wake(&me->dock, INT_MAX);
}

/* The worker, before it counts itself finished: 1 when it docked. */
static int dock_enter(tlg_thread *me)
{
    me->dock_identity = me->identity;
    uint32_t s = TLG_DOCK_NONE;
    if (atomic_compare_exchange_strong_explicit(&me->dock, &s, TLG_DOCK_WAITING, REL, RLX))
        return 1;
    dock_leave(me); /* a recall told it to go before it docked */
    return 0;
}

/* The docked worker: 1 when claimed for the next region (its state is set
 * up), 0 when it leaves (it must then touch nothing of the team). */
static int dock_wait(tlg_thread *me)
{
    tlg_spin spun = {0};
    for (;;) {
        uint32_t s = atomic_load_explicit(&me->dock, ACQ);
        if (s == TLG_DOCK_GO) {
            atomic_store_explicit(&me->dock, TLG_DOCK_NONE, RLX);
            return 1;
        }
        if (s == TLG_DOCK_EVICT) {
            dock_leave(me);
            return 0;
        }
        if (s != TLG_DOCK_WAITING) { /* claimed: GO comes next */
            tl_cpu_relax();
            continue;
        }
        /* its VP wanted: looked at every 16th pause */
        if (!tlg_spin_within(&spun, tlg_env_v.dock_ns) || (!(spun.steps & 15) && tl_ult_vp_wanted())) {
            if (atomic_compare_exchange_strong_explicit(&me->dock, &s, TLG_DOCK_NONE, REL, RLX))
                return 0;
            /* claimed or told to go meanwhile */
        }
    }
}

/* A recalled worker's ULT that left (worker_end) must not dock, or go if
 * it did: its successor needs the identity. It has not counted itself
 * finished again, so it reaches dock_enter and answers. */
static void undock_recalled(tlg_thread *m)
{
    uint32_t s = atomic_load_explicit(&m->dock, ACQ);
    while ((s == TLG_DOCK_WAITING || s == TLG_DOCK_NONE) &&
           !atomic_compare_exchange_weak_explicit(&m->dock, &s, TLG_DOCK_EVICT, ACQREL, ACQ))
        ;
}

/* The master, for member m of a region it starts (m's identity set). */
static void dock_claim(tlg_team *team, tlg_thread *m)
{
    uint32_t s = atomic_load_explicit(&m->dock, ACQ);
    if (s != TLG_DOCK_WAITING)
        return;
    if (team->dock && m->dock_identity == m->identity)
        atomic_compare_exchange_strong_explicit(&m->dock, &s, TLG_DOCK_CLAIMED, ACQ, RLX); /* lost: it left */
    else
        undock(m, 0);
}

/* Tells a docked worker to go; with wait, until it has (and any told
 * before). */
static void undock(tlg_thread *m, int wait)
{
    uint32_t s = TLG_DOCK_WAITING;
    atomic_compare_exchange_strong_explicit(&m->dock, &s, TLG_DOCK_EVICT, ACQREL, ACQ);
    if (!wait)
        return;
    if (tlg_forked) { /* the child has no VPs: nobody is docked */
        atomic_store_explicit(&m->dock, TLG_DOCK_NONE, RLX);
        return;
    }
    while (atomic_load_explicit(&m->dock, ACQ) == TLG_DOCK_EVICT)
        tlg_wait_word(&m->dock, TLG_DOCK_EVICT);
}

/* Thread m's state for its team's region, but what others may read before
 * it runs (team, id, end_state, identity: region_start). Each worker sets
 * its own as it starts, so that its lines stay in its cache: written by
 * the master, about eight lines per worker crossed to the master's CPU
 * and back every region. */
static void member_init(tlg_team *team, tlg_thread *m)
{
    m->level = team->level;
    m->active_level = team->active_level;
    m->team_num = team->team_num;
    m->num_teams = team->num_teams;
    m->cg = team->cg;
    m->inline_credit = 0;
    m->hungry = 0;
    m->pending_credit = 0;
    init_implicit(m, &team->icv);
    m->implicit.taskgroup = team->par_taskgroup;
    m->ws_seq = team->ws0 ? 1 : 0;
    m->ws = team->ws0 ? &team->ws[0] : NULL;
    m->single_count = 0;
    m->static_trip = 0;
    m->ord_held = 0;
    m->prev = NULL;
}

/* OMP_DISPLAY_AFFINITY: a thread starting its part of a region shows
 * its affinity (affinity-format-var) when it has not shown it yet in this
 * team's thread state or when what the format can show changed (level,
 * number, team size, place), as libgomp does for its threads. Called once
 * the thread is current (the fields are the caller's). */
static void show_affinity(tlg_thread *m)
{
    if (TLG_LIKELY(!tlg_env_v.display_affinity))
        return;
    int place = omp_get_place_num();
    if (m->shown_n == m->team->nthreads && m->shown_level == m->level && m->shown_id == m->id &&
        m->shown_place == place)
        return;
    m->shown_n = m->team->nthreads;
    m->shown_level = m->level;
    m->shown_id = m->id;
    m->shown_place = place;
    tlg_print_affinity(tlg_env_v.affinity_format);
}

static void *worker_main(void *p)
{
    tlg_thread *me = p;
    do {
        tlg_set_current(me);
        tlg_team *team = me->team;
        member_init(team, me);
        show_affinity(me);
        team->fn(team->data);
    } while (worker_end(me, 1) && dock_wait(me));
    return NULL;
}

static void region_start(struct region *r)
{
    tlg_thread *thr = tlg_self();
    unsigned n = r->nthreads;
    tlg_team *team = team_get(thr, n);
    r->team = team;
    r->master_prev = thr;
    team->nthreads = n;
    team->level = thr->level + 1;
    team->active_level = thr->active_level + (n > 1);
    team->team_num = thr->team_num;
    team->num_teams = thr->num_teams;
    team->cg = thr->cg;
    team->ws0 = r->ws0 != NULL;
    team->fn = r->fn;
    team->data = r->data;
    team->icv = thr->task->icv;
    if (team->level < tlg_env_v.nthreads_len)
        team->icv.nthreads = tlg_env_v.nthreads_list[team->level];
    if (team->level < tlg_env_v.bind_len)
        team->icv.bind = tlg_env_v.bind_list[team->level];
    /* its barrier's nodes are all 0 (every barrier completed), unless
     * the last region was cancelled: then they go, and who left its work
     * shares early (barrier.c, work.c) */
    if (TLG_UNLIKELY(atomic_load_explicit(&team->cancelled, RLX))) {
        tlg_bar_reset(team);
        for (unsigned k = 0; k < team->cap; k++)
            atomic_store_explicit(&member(team, k)->ws_gone, 0, RLX);
    }
    atomic_store_explicit(&team->bar_gen, 0, RLX);
    atomic_store_explicit(&team->event, 0, RLX);
    atomic_store_explicit(&team->nparked, 0, RLX);
    atomic_store_explicit(&team->hungry, 0, RLX);
    atomic_store_explicit(&team->task_pending, 0, RLX);
    atomic_store_explicit(&team->tasks_seen, 0, RLX);
    atomic_store_explicit(&team->master_ending, 0, RLX);
    atomic_store_explicit(&team->finished, TLG_END_BIAS, RLX);
    atomic_store_explicit(&team->ws_high, 0, RLX);
    atomic_store_explicit(&team->single_count, 0, RLX);
    atomic_store_explicit(&team->cancelled, 0, RLX);
    atomic_store_explicit(&team->ws_cancelled, 0, RLX);
    team->reductions = r->reductions;
    team->par_taskgroup = r->reductions ? tlg_parallel_reductions_register(r->reductions, n) : NULL;
    if (team->ws_dirty)
        tlg_ws_reset(team, team->ws_dirty);
    team->ws_dirty = 0;
    if (r->ws0)
        r->ws0(team, r->ws0_arg);
    for (unsigned k = 0; k < n; k++) {
        tlg_thread *m = member(team, k);
        team->threads[k] = m;
        m->team = team;
        m->id = k;
        atomic_store_explicit(&m->end_state, TLG_END_RUNNING, RLX);
        m->identity = NULL;
    }
    member_init(team, member(team, 0));
    member(team, 0)->prev = thr;
    tlg_set_current(member(team, 0));
    /* team threads may spin for each other in the program's code (NAS
     * LU's pipeline): more of them than VPs need time slices */
    if (n > 1)
        tl_ult_peers_add((int)n);
    if (TLG_UNLIKELY(tlg_env_v.display_affinity))
        for (unsigned k = n; k < team->cap; k++)
            member(team, k)->shown_n = 0; /* out of this region: shown again when back, as libgomp's idle threads */
    show_affinity(member(team, 0));
    team->dock = 0;
    if (n > 1 && tlg_env_v.tls_mode == TLG_TLS_IDENTITY) {
        int top = wears_top(team);
        if (top) {
            atomic_fetch_add_explicit(&rt.top_active, 1, SEQ);
            if (TLG_UNLIKELY(atomic_load_explicit(&rt.nretired, RLX))) {
                pthread_mutex_lock(&rt.lock);
                retired_sweep();
                pthread_mutex_unlock(&rt.lock);
            }
        }
        /* docked workers: only a top-level team's */
        team->dock = top && tlg_env_v.dock_ns && !r->workdesc;
        for (unsigned k = 1; k < n; k++) {
            tlg_thread *m = member(team, k);
            m->identity = top ? cached_top_identity(thr, m, k) : pool_get();
            if (top)
                dock_claim(team, m);
        }
    }
}

/* Thread k of the team as a ULT: first placed on VP (master's + k) mod
 * active, free to migrate, wearing its identity; in vp mode bound to one
 * VP, whose TLS it then sees. That VP makes the ULT (tl_ult_spawn_on):
 * the master writes the request, beside what it writes of the member
 * anyway, and the VP's inbox; on 16 CPUs, making the ULTs itself cost the
 * master about 1,000 cycles per worker, mostly descriptor lines that the
 * workers' VPs wrote last. */
static void spawn(tlg_team *team, unsigned k, int bind, void *(*entry)(void *))
{
    tlg_thread *m = member(team, k);
    int vp = tl_ult_vp_id();
    unsigned base = vp < 0 ? 0 : (unsigned)vp;
    tl_ult_spawn *s = &m->start;
    tl_ult_attr_init(&s->attr);
    s->attr.stack_size = tlg_stack_size();
    s->attr.detached = 1;
    s->attr.identity = m->identity;
    if (tlg_env_v.tls_mode == TLG_TLS_IDENTITY) {
        s->attr.vp = (int)((base + k) % tl_ult_active_vps());
    } else {
        s->attr.vp = (int)(wears_top(team) ? k % rt.nvps : (base + k) % rt.nvps);
        s->attr.bound = bind;
    }
    s->fn = entry;
    s->arg = m;
    int err = tl_ult_spawn_on(s);
    if (err)
        tlg_fatal("cannot create OpenMP thread %u of a team of %u: %s", k, team->nthreads, strerror(err));
}

static void spawn_workers(tlg_team *team)
{
    for (unsigned k = 1; k < team->nthreads; k++) {
        tlg_thread *m = member(team, k);
        if (atomic_load_explicit(&m->dock, RLX) == TLG_DOCK_CLAIMED) {
            atomic_fetch_add_explicit(&rt.docked, 1, RLX);
            atomic_store_explicit(&m->dock, TLG_DOCK_GO, REL); /* after every write of region_start */
        } else {
            spawn(team, k, 1, worker_main);
        }
    }
}

/* The final barrier, worker side: help with tasks while any is pending,
 * then count itself finished (its last access to the team). In a region
 * without tasks a worker leaves at once (the master does not wait to let
 * it go); once the region created a task, a worker (for_master) stays
 * until the master reaches the end too, running the tasks the master
 * creates meanwhile. A work-descriptor part does not: the master reaches
 * the end only once every part has returned. */
static int worker_end(tlg_thread *me, int for_master)
{
    tlg_team *team = me->team;
    tlg_spin spun = {0};
    for (;;) {
        uint32_t ev = atomic_load_explicit(&team->event, ACQ);
        if (tlg_tasks_done(me, team)) {
            if (!for_master || atomic_load_explicit(&team->master_ending, SEQ))
                break;
            if (!atomic_load_explicit(&team->tasks_seen, SEQ)) {
                /* no task yet: it leaves, unless the first one comes now
                 * (the Dekker pair with submit: say so, then look); a
                 * creator that finds it leaving recalls it
                 * (tlg_recall_workers: a new ULT takes its place) */
                atomic_store_explicit(&me->end_state, TLG_END_LEAVING, SEQ);
                if (!atomic_load_explicit(&team->tasks_seen, SEQ))
                    break;
                int s = TLG_END_LEAVING;
                if (!atomic_compare_exchange_strong_explicit(&me->end_state, &s, TLG_END_RUNNING, SEQ, RLX))
                    break; /* recalled already */
                continue;
            }
        }
        tlg_wait_step(me, ev, &spun, NULL);
    }
    /* what the master would otherwise read from this thread's lines at
     * the region's end: its implicit task's end, and how many work
     * shares it used (published by the count below) */
    tlg_task_implicit_end(&me->implicit);
    int64_t high = atomic_load_explicit(&team->ws_high, RLX);
    while (me->ws_seq > high &&
           !atomic_compare_exchange_weak_explicit(&team->ws_high, &high, me->ws_seq, RLX, RLX))
        ;
    /* Count: the count's old value says whether the master waits for
     * the last (TLG_END_PARKED, set by the master's compare-and-swap on
     * the same word), so that the wake, which takes a lock the master's VP
     * used last, happens only then; and nothing of the team is read after
     * the count, which lets the master end the region and free the team
     * (a larger one next: team_get). The wake touches the parking lot's
     * bucket, never the word. */
    int docking = for_master && team->dock && dock_enter(me);
    uint32_t n = team->nthreads;
    _Atomic uint32_t *finished = &team->finished;
    uint32_t old = atomic_fetch_add_explicit(finished, 1, ACQREL);
    if ((old & TLG_END_PARKED) && (old & ~TLG_END_PARKED) + 1 == TLG_END_BIAS + n - 1)
        tl_ult_wake(finished, 1);
    return docking;
}

static void *recalled_main(void *p)
{
    tlg_thread *me = p;
    tlg_set_current(me);
    if (worker_end(me, 1) && dock_wait(me))
        return worker_main(me);
    return NULL;
}

void tlg_recall_workers(tlg_team *team)
{
    for (unsigned k = 1; k < team->nthreads; k++) {
        tlg_thread *m = team->threads[k];
        int s = TLG_END_LEAVING;
        if (atomic_load_explicit(&m->end_state, SEQ) != TLG_END_LEAVING ||
            !atomic_compare_exchange_strong_explicit(&m->end_state, &s, TLG_END_RECALLED, SEQ, RLX))
            continue;
        /* it counts itself finished as it leaves (perhaps not yet): its
         * new ULT counts itself again when the region ends */
        atomic_fetch_sub_explicit(&team->finished, 1, RLX);
        atomic_store_explicit(&m->end_state, TLG_END_RUNNING, RLX);
        /* the ULT that left wears the identity the new one needs: it
         * must not wait for the next region (it goes once it sees this,
         * before or after it docks) */
        if (team->dock)
            undock_recalled(m);
        spawn(team, k, 1, recalled_main);
    }
}

static void region_end(struct region *r)
{
    tlg_team *team = r->team;
    tlg_thread *me = member(team, 0);
    unsigned n = team->nthreads;
    tlg_spin spun = {0};
    /* workers waiting for more tasks may leave once none is pending (the
     * Dekker pair with worker_end: set, then bump the event it read) */
    atomic_store_explicit(&team->master_ending, 1, SEQ);
    if (atomic_load_explicit(&team->tasks_seen, SEQ))
        tlg_team_event(team, 1);
    for (;;) {
        uint32_t ev = atomic_load_explicit(&team->event, ACQ);
        if (!tlg_tasks_done(me, team)) {
            tlg_wait_step(me, ev, &spun, NULL);
            continue;
        }
        uint32_t f = atomic_load_explicit(&team->finished, ACQ);
        if ((f & ~TLG_END_PARKED) == TLG_END_BIAS + n - 1)
            break;
        /* say it waits, on the count's own word (worker_end) */
        if (!(f & TLG_END_PARKED) &&
            !atomic_compare_exchange_strong_explicit(&team->finished, &f, f | TLG_END_PARKED, ACQREL, ACQ))
            continue;
        tlg_wait_word(&team->finished, f | TLG_END_PARKED);
    }
    /* the next region resets only the ring's slots this one used (the
     * most constructs any thread counted; each worker said as it
     * finished, see worker_end): resetting all 16 cost a combined
     * dynamic loop of 2 threads about 180 ns of its 1.9 us here */
    tlg_task_implicit_end(&me->implicit);
    int64_t used = atomic_load_explicit(&team->ws_high, RLX);
    if (used < me->ws_seq)
        used = me->ws_seq;
    team->ws_dirty = used < TLG_WS_RING ? (unsigned)used : TLG_WS_RING;
    if (!wears_top(team))
        for (unsigned k = 1; k < n; k++)
            if (member(team, k)->identity)
                pool_put(member(team, k)->identity);
    if (wears_top(team) && n > 1 && tlg_env_v.tls_mode == TLG_TLS_IDENTITY)
        atomic_fetch_sub_explicit(&rt.top_active, 1, REL);
    if (team->par_taskgroup) {
        free(team->par_taskgroup);
        team->par_taskgroup = NULL;
    }
    if (n > 1 && tlg_self()->task->icv.thread_limit != INT_MAX)
        atomic_fetch_sub_explicit(cg_busy(team->cg), n - 1, RLX);
    if (n > 1)
        tl_ult_peers_add(-(int)n);
    team->nthreads = 0;
    tlg_set_current(r->master_prev);
}

static void *region_run(void *p)
{
    struct region *r = p;
    region_start(r);
    spawn_workers(r->team);
    r->fn(r->data);
    region_end(r);
    return NULL;
}

/* ---- single-level loops as work descriptors (the seed's NTLib) ----------------
 *
 * A combined parallel loop (GOMP_parallel_loop_*: the compiler says the
 * region is one loop) whose team fits the active VPs runs as a work
 * descriptor of libthreadlab-ult: part k is copied into VP k's slot and
 * the VP runs it on its scheduler context (no ULT, no stack) wearing
 * thread k's TLS identity; the master runs part 0 and any part a busy or
 * stopped VP has not started (as a ULT of its own, for its identity). A
 * part whose VP is told to stop takes no further chunk of a dynamic or
 * guided loop (iter.c): the other parts take them. Used only when a
 * region nested in the loop would be inactive (a VP context cannot lend
 * its TLS to a nested master); THREADLAB_GOMP_WORKDESC=0 turns it off. */

static _Atomic unsigned long wd_regions;

TLG_EXPORT unsigned long threadlab_gomp_workdesc_regions(void)
{
    return atomic_load_explicit(&wd_regions, RLX);
}

TLG_EXPORT unsigned long threadlab_gomp_docked_starts(void)
{
    return atomic_load_explicit(&rt.docked, RLX);
}

static void *claimed_part(void *p)
{
    tlg_thread *m = p;
    tlg_set_current(m);
    member_init(m->team, m);
    show_affinity(m);
    m->team->fn(m->team->data);
    worker_end(m, 0);
    return NULL;
}

static void wd_part(unsigned id, unsigned nparts, void *p)
{
    (void)nparts;
    tlg_team *team = p;
    tlg_thread *m = member(team, id);
    if (id == 0) {
        team->fn(team->data); /* the master's own part */
        /* the parts still running wait for no task pending: its counts
         * settle before it waits for them */
        tlg_task_flush(m);
        return;
    }
    if (tl_ult_self()) {
        /* claimed by the master: a ULT of its own wears its identity */
        tl_ult_attr a;
        tl_ult_attr_init(&a);
        a.stack_size = tlg_stack_size();
        a.identity = m->identity;
        tl_ult_t t;
        if (tl_ult_create(&t, &a, claimed_part, m) != 0 || tl_ult_join(t, NULL) != 0)
            tlg_fatal("cannot run part %u of a parallel loop", id);
        return;
    }
    tl_ult_wear(m->identity);
    tlg_tls_cur = m; /* in the worn TLS: this VP context is thread id now */
    member_init(team, m);
    show_affinity(m);
    team->fn(team->data);
    worker_end(m, 0);
    tlg_tls_cur = NULL;
    tl_ult_wear(NULL);
}

int tlg_parallel_workdesc(tlg_fn fn, void *data, unsigned nthreads, void (*ws0)(tlg_team *, void *),
                          void *ws0_arg)
{
    static int enabled = -1;
    if (enabled < 0) {
        const char *v = getenv("THREADLAB_GOMP_WORKDESC");
        enabled = !(v && !strcmp(v, "0"));
    }
    if (!enabled || nthreads < 2 || tlg_forked)
        return 0;
    tlg_init();
    tlg_thread *thr = tlg_self();
    /* part k runs on VP k: the master (part 0) must be VP 0's ULT */
    if (!tl_ult_self() || tl_ult_vp_id() != 0 || nthreads > tl_ult_active_vps() ||
        thr->active_level + 1 < thr->task->icv.max_active_levels)
        return 0;
    atomic_fetch_add_explicit(&wd_regions, 1, RLX);
    struct region r = {fn, data, nthreads, 0, ws0, ws0_arg, NULL, NULL, NULL, 1};
    region_start(&r);
    int err = tl_ult_workdesc_run(wd_part, r.team, nthreads);
    if (err)
        tlg_fatal("cannot run a parallel loop as a work descriptor: %s", strerror(err));
    region_end(&r);
    return 1;
}

void tlg_parallel(tlg_fn fn, void *data, unsigned nthreads, unsigned flags,
                  void (*ws0)(tlg_team *, void *), void *ws0_arg, uintptr_t *reductions)
{
    struct region r = {fn, data, nthreads, flags, ws0, ws0_arg, reductions, NULL, NULL, 0};
    if (nthreads > 1) {
        tlg_init();
        /* A kernel thread of the program lends its TLS to a ULT that
         * runs the region as its master. A work-descriptor part (its VP's
         * context, wearing its thread's identity) starts an active team
         * only from a target region's body, a new contention group (the
         * loop ran so because its nested regions would be inactive): it is
         * the master itself, and waits as external threads do (a VP
         * context cannot park). */
        if (!tl_ult_self() && tl_ult_vp_id() < 0 && tlg_env_v.tls_mode == TLG_TLS_IDENTITY) {
            size_t stack = tlg_stack_size();
            int err = tl_ult_run_as_self(region_run, &r, stack, NULL);
            if (err)
                tlg_fatal("cannot run a parallel region for this kernel thread: %s", strerror(err));
            return;
        }
    }
    region_run(&r);
}

/* The legacy pair (GOMP 1.0): _start starts the team, the caller runs fn
 * as the master, _end ends it. Only a ULT (or vp mode) can split the
 * region that way; a foreign kernel thread runs the legacy region with a
 * team of one. */
void tlg_parallel_start(tlg_fn fn, void *data, unsigned nthreads, void (*ws0)(tlg_team *, void *), void *ws0_arg)
{
    if (nthreads > 1) {
        tlg_init();
        if (!tl_ult_self() && tlg_env_v.tls_mode == TLG_TLS_IDENTITY)
            nthreads = 1;
    }
    struct region *r = tlg_malloc(sizeof *r);
    *r = (struct region){fn, data, nthreads, 0, ws0, ws0_arg, NULL, NULL, NULL, 0};
    region_start(r);
    spawn_workers(r->team);
    /* the master's state: the region, to be found by _end */
    member(r->team, 0)->legacy = r;
}

void tlg_parallel_end(void)
{
    tlg_thread *me = tlg_self();
    struct region *r = me->legacy;
    if (!r || !me->team || me->id != 0)
        tlg_fatal("GOMP_parallel_end without a matching GOMP_parallel_start");
    me->legacy = NULL;
    region_end(r);
    free(r);
}

TLG_EXPORT int threadlab_gomp_tls_mode(void)
{
    return tlg_env_v.tls_mode;
}

TLG_EXPORT int threadlab_gomp_managed(void)
{
    return tlg_rm_managed();
}

TLG_EXPORT int threadlab_gomp_active_vps(void)
{
    return tlg_ult_ready() ? (int)tl_ult_active_vps() : 0;
}

TLG_EXPORT int threadlab_gomp_vp(void)
{
    return tl_ult_vp_id();
}
