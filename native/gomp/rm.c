/*
 * rm.c - following threadlab-rm, the resource manager of seed 004
 * (docs/rm.md), through its arena (threadlab/rm.h).
 *
 * The process registers on its first top-level parallel region when a
 * manager runs, and publishes at every top-level region the parallelism
 * it asks for (the region's request), as the libgomp shim does. The
 * difference with the shim: the allocation is followed inside regions.
 * At every safe point (a barrier, a loop chunk, a task switch) a thread
 * reads its slot's epoch (one load from the shared arena) and, when it
 * changed, reads the allocation and sets the number of active VPs of
 * libthreadlab-ult to it: VPs
 * beyond stop at their next safe point and their OpenMP threads move to
 * the others; when the allocation grows they come back. The master's VP
 * (VP 0) always runs, as the seed wants (allocations are >= 1).
 *
 * Team sizes: while managed, dyn-var defaults to true and a region gets
 * at most as many threads as the allocation (as in the seed, where the
 * master creates as many user-level threads as it has processors), except
 * a region that may be long: the first one since registration (its length
 * is unknown) and one that starts a quantum or more after the previous
 * top-level region started. Those get their request (up to the VPs), the
 * threads beyond the allocation multiplexed on the active VPs, so that VPs
 * the allocation gives back mid-region find OpenMP threads to run (a team
 * of one could never use them: NAS EP's only region, a partner program
 * killed). The extra threads cost a short region a ULT each and a switch
 * per barrier; a region a quantum apart from the previous one pays that
 * once a quantum at most. OMP_DYNAMIC or omp_set_dynamic() set explicitly
 * win (the team then has its full size), and the default never shrinks a
 * region with a num_threads clause (tlg_resolve_threads).
 *
 * A watcher thread (a kernel thread of the runtime, not a VP) waits on the
 * slot's epoch while managed: it sets the active VPs the moment the
 * manager publishes an allocation (VPs that resume need no safe point;
 * the ones that stop do so at theirs), and notices a manager that stopped
 * (it wakes every slot) or died or hangs (within a quantum + 25 ms) even
 * while a long region runs, when no region start would.
 *
 * No manager (no arena, a stopped or dead one, a full arena): the program
 * runs unmanaged with every VP active and looks again once a second (at
 * top-level regions). Once it was managed or refused (a lost manager, a
 * full arena) it is *cooperative*, as the shim: while dyn-var is true (its
 * default then too) a region gets at most the CPUs of the process that
 * other work leaves idle (threadlab/rm_client.h, tl_rm_coop), so that a
 * fallback never runs more threads than passive libgomp beside that work
 * would have CPUs for. THREADLAB_GOMP_WAIT_MS (default 50) is how long a
 * new registration waits for its first allocation.
 *
 * The membership itself (the arena, registration, liveness, the notices
 * of each event once) is libthreadlab-rm's client (threadlab/rm_client.h),
 * shared with the libgomp shim; this file is the runtime's policy.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include "threadlab/rm_client.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { RM_INIT = 0, RM_UNMANAGED = 1, RM_MANAGED = 2 };

static int rm_notice(tl_rm_client *client, int event, const char *what);

static struct {
    _Atomic int state;
    pthread_mutex_t lock;
    tl_rm_client c;
    /* the slot's epoch whose allocation the active VPs follow; safe
     * points compare it with the slot's, and whoever sees a change reads
     * the allocation consistently (seqlock) under follow_lock: a thread
     * holding a stale value cannot set an older allocation back */
    _Atomic uint32_t followed_epoch;
    _Atomic int follow_lock;
    /* coarse clock: the start of the latest managed top-level region; 0
     * after a registration (the next region is the first) */
    _Atomic uint64_t region_ns;
    uint32_t kick;    /* futex word: +1 at every state change (the watcher looks) */
    pid_t watcher;    /* the process whose watcher runs (none after a fork) */
    /* the VPs' CPUs (under follow_lock): the allocation's, as the shim
     * confines its threads; confined: not the process's own (follow_all,
     * which takes no lock, gives those back) */
    cpu_set_t vp_cpus;
    uint32_t cpus_epoch; /* the slot's epoch vp_cpus follows */
    _Atomic int confined;
} rm = {.lock = PTHREAD_MUTEX_INITIALIZER, .c = TL_RM_CLIENT_INITIALIZER};

/* Cooperative teams (threadlab/rm_client.h): 16 KB of readings, apart
 * from the fields every region reads. */
static tl_rm_coop coop = TL_RM_COOP_INITIALIZER;

static void start_watcher(void);

int tlg_rm_managed(void)
{
    return atomic_load_explicit(&rm.state, ACQ) == RM_MANAGED;
}

/* The membership's events, once each: a program that finds no manager
 * when it starts is the usual case and says nothing; losing one, or being
 * refused, is told, with what the runtime does about it (as the shim). */
static int rm_notice(tl_rm_client *client, int event, const char *what)
{
    (void)client;
    switch (event) {
    case TL_RM_CLIENT_NONE:
        return 0;
    case TL_RM_CLIENT_ATTACHED:
        tlg_notice("%s", what);
        break;
    case TL_RM_CLIENT_FULL:
    case TL_RM_CLIENT_STOPPED:
    case TL_RM_CLIENT_GONE:
    case TL_RM_CLIENT_HUNG:
        tlg_notice("%s; running unmanaged but cooperative (every VP active, teams sized by the idle CPUs)", what);
        break;
    default:
        tlg_notice("%s; running unmanaged (every VP active)", what);
        break;
    }
    return 1;
}

/* Every VP runs again (unmanaged), on the process's own CPUs. */
static void follow_all(void)
{
    if (!tlg_ult_ready())
        return;
    tl_ult_set_active_vps(tl_ult_num_vps());
    if (tlg_forked)
        return; /* a forked child: the VPs' thread ids are the parent's */
    if (atomic_exchange_explicit(&rm.confined, 0, ACQREL))
        tl_ult_set_vps_cpus(&tlg_env_v.cpus);
}

/* The VPs' CPUs: those the allocation gives (a VP's kernel thread with
 * the whole mask ran on CPUs nobody owned, where the manager counted its
 * time as other work and withheld them for good). */
static void follow_cpus(const tl_rm_cpuset *owned, uint32_t epoch, int again)
{
    /* every managed region comes here: the mask is worked out again only
     * when the allocation changed (its epoch), or when the watcher asks
     * (again: the withheld CPUs change without an epoch) */
    int confined = atomic_load_explicit(&rm.confined, ACQ);
    if (confined && epoch == rm.cpus_epoch && !again)
        return;
    const tl_rm_header *h = rm.c.mapped ? rm.c.arena.hdr : NULL;
    if (!h || tlg_forked || atomic_load_explicit(&rm.state, ACQ) != RM_MANAGED)
        return;
    cpu_set_t target;
    tl_rm_client_target_cpus(owned, h, &tlg_env_v.cpus, &target);
    rm.cpus_epoch = epoch;
    if (confined && CPU_EQUAL(&target, &rm.vp_cpus))
        return;
    tl_ult_set_vps_cpus(&target);
    rm.vp_cpus = target;
    atomic_store_explicit(&rm.confined, 1, SEQ);
    /* the state changed meanwhile (a follow_all that saw nothing confined
     * yet): the process's own CPUs again */
    if (atomic_load_explicit(&rm.state, SEQ) != RM_MANAGED && atomic_exchange_explicit(&rm.confined, 0, ACQREL))
        tl_ult_set_vps_cpus(&tlg_env_v.cpus);
}

/* Sets the active VPs to the slot's latest allocation (one thread at a
 * time; another one already on it is enough); again: work out the VPs'
 * CPUs even if the allocation is the one followed. */
static void follow_latest(int again)
{
    if (!tlg_ult_ready() || !tl_rm_client_answered(&rm.c))
        return;
    int z = 0;
    if (!atomic_compare_exchange_strong_explicit(&rm.follow_lock, &z, 1, ACQ, RLX))
        return;
    uint32_t alloc, owned, epoch;
    tl_rm_cpuset cpus;
    if (tl_rm_read_alloc(__atomic_load_n(&rm.c.my, __ATOMIC_ACQUIRE), &alloc, &owned, &epoch, &cpus) == 0) {
        unsigned nvps = tl_ult_num_vps();
        unsigned n = alloc == 0 ? 1 : alloc < nvps ? alloc : nvps;
        if (tl_ult_active_vps() != n)
            tl_ult_set_active_vps(n);
        follow_cpus(&cpus, epoch, again);
        atomic_store_explicit(&rm.followed_epoch, epoch, REL);
    }
    atomic_store_explicit(&rm.follow_lock, 0, REL);
}

void tlg_rm_follow(void)
{
    if (atomic_load_explicit(&rm.state, ACQ) == RM_MANAGED)
        follow_latest(0);
}

/* Under rm.lock. */
static void set_state(int state)
{
    atomic_store_explicit(&rm.state, state, REL);
    if (state != RM_MANAGED)
        follow_all();
    else
        start_watcher();
    __atomic_add_fetch(&rm.kick, 1, __ATOMIC_RELEASE);
    tl_rm_futex_wake(&rm.kick, INT_MAX);
}

void tlg_rm_init(void)
{
    const char *w = getenv("THREADLAB_GOMP_WAIT_MS");
    rm.c.wait_ns = (w && *w ? strtoull(w, NULL, 10) : 50) * 1000000ull;
    rm.c.notice = rm_notice;
}

/* Under rm.lock: looks for a manager and registers (again). */
static int attach_locked(unsigned request)
{
    atomic_store_explicit(&rm.region_ns, 0, RLX); /* the next region is the first */
    int rc = tl_rm_client_attach(&rm.c, request ? request : 1);
    /* managed or refused: cooperative from now on, whatever way the
     * manager is lost later (a loss, a replaced slot that finds none) */
    if (rc == TL_RM_CLIENT_MANAGED || rc == TL_RM_CLIENT_FULL)
        tl_rm_coop_begin_once(&coop, &tlg_env_v.cpus);
    return rc == TL_RM_CLIENT_MANAGED ? RM_MANAGED : RM_UNMANAGED;
}

/* The manager was lost (`why`: stopped, gone, hung), seen by a region or
 * the watcher: unmanaged, every VP active (while a region runs too, as
 * the shim gives its threads their CPUs back), cooperative from the next
 * region on, one notice. */
static void lose(int why)
{
    pthread_mutex_lock(&rm.lock);
    if (atomic_load_explicit(&rm.state, RLX) == RM_MANAGED) {
        tl_rm_client_lost(&rm.c, why);
        tl_rm_slot *my = __atomic_load_n(&rm.c.my, __ATOMIC_ACQUIRE);
        tl_rm_coop_begin(&coop, &tlg_env_v.cpus, my ? __atomic_load_n(&my->alloc, __ATOMIC_RELAXED) : 1);
        set_state(RM_UNMANAGED);
    }
    pthread_mutex_unlock(&rm.lock);
}

static void *watcher(void *arg)
{
    (void)arg;
    for (;;) {
        uint32_t kick = __atomic_load_n(&rm.kick, __ATOMIC_ACQUIRE);
        if (atomic_load_explicit(&rm.state, ACQ) != RM_MANAGED) {
            tl_rm_futex_wait(&rm.kick, kick, UINT64_C(1000000000));
            continue;
        }
        tl_rm_slot *slot = __atomic_load_n(&rm.c.my, __ATOMIC_ACQUIRE);
        uint32_t epoch = __atomic_load_n(&slot->epoch, __ATOMIC_ACQUIRE);
        /* a new allocation; else (the wait below timed out, once a
         * quantum) the CPUs the manager withholds, which change without
         * one (a process that owns no CPU runs on the managed ones not
         * withheld), as the shim's watcher looks again */
        follow_latest(epoch == atomic_load_explicit(&rm.followed_epoch, ACQ));
        tl_rm_wait_epoch(slot, epoch, tl_rm_client_watch_ns(rm.c.arena.hdr));
        if (atomic_load_explicit(&rm.state, ACQ) != RM_MANAGED)
            continue;
        int why = tl_rm_client_check(&rm.c, tl_rm_coarse_ns());
        if (why != TL_RM_CLIENT_MANAGED && why != TL_RM_CLIENT_REPLACED)
            lose(why); /* a freed slot or a new manager: the next region registers again */
    }
    return NULL;
}

/* Under rm.lock: the watcher of this process, once (it does not survive a
 * fork, whose child runs its teams serially anyway). */
static void start_watcher(void)
{
    pid_t pid = getpid();
    if (rm.watcher != pid && tl_rm_client_watcher(watcher, NULL, "threadlab-gomp") == 0)
        rm.watcher = pid;
}

/* The bound of an unmanaged region: cooperative, the CPUs other work
 * leaves idle; else none. */
static unsigned unmanaged_bound(unsigned request)
{
    return tl_rm_coop_begun(&coop) ? tl_rm_coop_team(&coop, request) : 0;
}

unsigned tlg_rm_region(unsigned request)
{
    if (tlg_forked)
        return 0;
    int state = atomic_load_explicit(&rm.state, ACQ);
    if (TLG_UNLIKELY(state != RM_MANAGED)) {
        if (state == RM_INIT || tl_rm_client_probe_due(&rm.c, tl_rm_coarse_ns())) {
            pthread_mutex_lock(&rm.lock);
            state = atomic_load_explicit(&rm.state, RLX);
            if (state != RM_MANAGED)
                state = attach_locked(request);
            set_state(state);
            pthread_mutex_unlock(&rm.lock);
        }
        if (state != RM_MANAGED)
            return unmanaged_bound(request);
    }
    uint64_t now = tl_rm_coarse_ns();
    int why = tl_rm_client_check(&rm.c, now);
    if (TLG_UNLIKELY(why != TL_RM_CLIENT_MANAGED)) {
        if (why != TL_RM_CLIENT_REPLACED) {
            lose(why);
            return unmanaged_bound(request);
        }
        /* our slot was freed, or a new manager adopted the arena */
        pthread_mutex_lock(&rm.lock);
        state = atomic_load_explicit(&rm.state, RLX);
        if (state == RM_MANAGED) {
            state = attach_locked(request);
            set_state(state);
        }
        pthread_mutex_unlock(&rm.lock);
        if (state != RM_MANAGED)
            return unmanaged_bound(request);
    }
    if (request == 0)
        request = 1;
    unsigned alloc = tl_rm_client_request(&rm.c, request);
    follow_latest(0);
    /* the bound: the allocation and the active VPs, or for a region that
     * may be long (see the top) the request, up to the VPs */
    unsigned bound = alloc;
    uint64_t prev = atomic_exchange_explicit(&rm.region_ns, now ? now : 1, RLX);
    uint64_t quantum = tl_rm_client_quantum_ns(&rm.c);
    if (quantum == 0)
        quantum = (uint64_t)TL_RM_DEFAULT_QUANTUM_MS * 1000000u;
    if (alloc && (prev == 0 || now - prev >= quantum))
        bound = tlg_ult_ready() && tl_ult_num_vps() < request ? tl_ult_num_vps() : request;
    else if (alloc && tlg_ult_ready() && tl_ult_active_vps() < bound)
        bound = tl_ult_active_vps();
    tl_rm_client_ran(&rm.c, bound && bound < request ? bound : request, now);
    return bound;
}

int tlg_safe_point(void)
{
    if (atomic_load_explicit(&rm.state, ACQ) == RM_MANAGED &&
        TLG_UNLIKELY(__atomic_load_n(&__atomic_load_n(&rm.c.my, __ATOMIC_RELAXED)->epoch, __ATOMIC_RELAXED) !=
                     atomic_load_explicit(&rm.followed_epoch, RLX)))
        follow_latest(0);
    return tl_ult_safe_point();
}

/* dyn-var as the program (omp_set_dynamic) or the user (OMP_DYNAMIC) set
 * it, -1 when neither did. */
int tlg_dyn_chosen(const tlg_icv *icv)
{
    return icv->dyn_set || tlg_env_v.dyn_explicit ? icv->dyn : -1;
}

/* The effective dyn-var: managed or cooperative, it defaults to true
 * unless set. */
int tlg_dyn(const tlg_icv *icv)
{
    int chosen = tlg_dyn_chosen(icv);
    if (chosen >= 0)
        return chosen;
    return tlg_rm_managed() || tl_rm_coop_begun(&coop);
}

__attribute__((destructor)) static void rm_fini(void)
{
    tl_rm_client_release(&rm.c);
}
