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
 * Team sizes: while managed, dyn-var defaults to true (a region gets at
 * most as many threads as the allocation, as in the seed, where the master
 * creates as many user-level threads as it has processors); OMP_DYNAMIC or
 * omp_set_dynamic() set explicitly win.
 *
 * No manager (no arena, a stopped or dead one, a full arena): the program
 * runs unmanaged with every VP active and looks again once a second (at
 * top-level regions). THREADLAB_GOMP_WAIT_MS (default 50) is how long a
 * new registration waits for its first allocation.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include "threadlab/rm.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { RM_INIT = 0, RM_UNMANAGED = 1, RM_MANAGED = 2 };

static struct {
    _Atomic int state;
    pthread_mutex_t lock;
    tl_rm_arena arena;
    int mapped;
    int slot;
    tl_rm_slot *my;
    pid_t pid;
    uint32_t epoch0;
    int answered;
    uint32_t generation;
    uint64_t next_probe_ns;
    uint64_t wait_ns;
    /* the slot's epoch whose allocation the active VPs follow; safe
     * points compare it with the slot's, and whoever sees a change reads
     * the allocation consistently (seqlock) under follow_lock: a thread
     * holding a stale value cannot set an older allocation back */
    _Atomic uint32_t followed_epoch;
    _Atomic int follow_lock;
} rm = {.lock = PTHREAD_MUTEX_INITIALIZER, .slot = -1};

int tlg_rm_managed(void)
{
    return atomic_load_explicit(&rm.state, ACQ) == RM_MANAGED;
}

/* Under rm.lock: maps the arena, checks the manager and registers. */
static int attach_locked(unsigned request)
{
    rm.next_probe_ns = tl_rm_coarse_ns() + 1000000000ull;
    pid_t pid = getpid();
    if (rm.mapped && (rm.pid != pid || tl_rm_replaced(&rm.arena))) {
        /* map the new arena, but leave the old one mapped: threads at safe
         * points may still read their old slot */
        rm.mapped = 0;
        rm.slot = -1;
    }
    rm.pid = pid;
    if (!rm.mapped) {
        char name[256], err[512];
        tl_rm_arena_name(name, sizeof name);
        int rc = tl_rm_open(&rm.arena, name, err, sizeof err);
        if (rc == TL_RM_EVERSION)
            tlg_notice("refusing the resource manager's arena %s: %s; running unmanaged", name, err);
        if (rc != TL_RM_OK)
            return RM_UNMANAGED;
        rm.mapped = 1;
    }
    char why[256];
    if (tl_rm_check(&rm.arena, why, sizeof why) != TL_RM_OK) {
        tlg_notice("the resource manager's arena was overwritten (%s); running unmanaged", why);
        return RM_UNMANAGED;
    }
    tl_rm_header *h = rm.arena.hdr;
    if (!tl_rm_manager_fresh(h, tl_rm_now_ns()) || !tl_rm_manager_exists(h))
        return RM_UNMANAGED;
    if (rm.slot >= 0) {
        tl_rm_slot *s = &rm.arena.slots[rm.slot];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TL_RM_SLOT_ACTIVE ||
            __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE) != pid) {
            rm.slot = -1;
            rm.my = NULL;
        }
    }
    if (rm.slot < 0) {
        int slot = tl_rm_register(&rm.arena, request, 0, &rm.epoch0);
        if (slot < 0) {
            tlg_notice("the resource manager's arena is full; running unmanaged");
            return RM_UNMANAGED;
        }
        rm.slot = slot;
        rm.my = &rm.arena.slots[slot];
        rm.answered = tl_rm_wait_epoch(rm.my, rm.epoch0, rm.wait_ns) != rm.epoch0;
    }
    rm.generation = __atomic_load_n(&h->generation, __ATOMIC_ACQUIRE);
    return RM_MANAGED;
}

/* Every VP runs again (unmanaged). */
static void follow_all(void)
{
    if (tlg_ult_ready())
        tl_ult_set_active_vps(tl_ult_num_vps());
}

/* Sets the active VPs to the slot's latest allocation (one thread at a
 * time; another one already on it is enough). */
static void follow_latest(void)
{
    if (!tlg_ult_ready() || !rm.answered)
        return;
    int z = 0;
    if (!atomic_compare_exchange_strong_explicit(&rm.follow_lock, &z, 1, ACQ, RLX))
        return;
    uint32_t alloc, owned, epoch;
    if (tl_rm_read_alloc(rm.my, &alloc, &owned, &epoch, NULL) == 0) {
        unsigned nvps = tl_ult_num_vps();
        unsigned n = alloc == 0 ? 1 : alloc < nvps ? alloc : nvps;
        if (tl_ult_active_vps() != n)
            tl_ult_set_active_vps(n);
        atomic_store_explicit(&rm.followed_epoch, epoch, REL);
    }
    atomic_store_explicit(&rm.follow_lock, 0, REL);
}

void tlg_rm_follow(void)
{
    if (atomic_load_explicit(&rm.state, ACQ) == RM_MANAGED)
        follow_latest();
}

static void set_state(int state)
{
    atomic_store_explicit(&rm.state, state, REL);
    if (state != RM_MANAGED)
        follow_all();
}

void tlg_rm_init(void)
{
    const char *w = getenv("THREADLAB_GOMP_WAIT_MS");
    rm.wait_ns = (w && *w ? strtoull(w, NULL, 10) : 50) * 1000000ull;
}

/* 1 when the manager still manages this process (a cheap check: the
 * heartbeat and the generation; a late heartbeat costs a liveness test). */
static int still_managed(uint64_t now)
{
    tl_rm_header *h = rm.arena.hdr;
    if (__atomic_load_n(&h->manager_state, __ATOMIC_ACQUIRE) != TL_RM_MANAGER_RUNNING)
        return 0;
    if (__atomic_load_n(&h->generation, __ATOMIC_ACQUIRE) != rm.generation)
        return 0;
    tl_rm_slot *s = rm.my;
    if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TL_RM_SLOT_ACTIVE)
        return 0;
    uint64_t beat = __atomic_load_n(&h->manager_heartbeat_ns, __ATOMIC_ACQUIRE);
    uint64_t quantum = (uint64_t)__atomic_load_n(&h->quantum_ms, __ATOMIC_RELAXED) * 1000000ull;
    if (now <= beat + quantum + 20000000ull)
        return 1;
    return tl_rm_manager_exists(h) && now <= beat + 10 * quantum + 1000000000ull;
}

/* The allocation now (>= 1), or 0 before the manager has answered. */
static unsigned current_alloc(void)
{
    tl_rm_slot *s = rm.my;
    if (!rm.answered) {
        if (__atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE) == rm.epoch0)
            return 0;
        rm.answered = 1;
    }
    unsigned a = __atomic_load_n(&s->alloc, __ATOMIC_ACQUIRE);
    return a ? a : 1;
}

unsigned tlg_rm_region(unsigned request)
{
    if (tlg_forked)
        return 0;
    int state = atomic_load_explicit(&rm.state, ACQ);
    if (TLG_UNLIKELY(state != RM_MANAGED)) {
        if (state == RM_INIT || tl_rm_coarse_ns() >= rm.next_probe_ns) {
            pthread_mutex_lock(&rm.lock);
            state = atomic_load_explicit(&rm.state, RLX);
            if (state != RM_MANAGED)
                state = attach_locked(request ? request : 1);
            set_state(state);
            pthread_mutex_unlock(&rm.lock);
        }
        if (state != RM_MANAGED)
            return 0;
    }
    uint64_t now = tl_rm_coarse_ns();
    if (TLG_UNLIKELY(!still_managed(now))) {
        pthread_mutex_lock(&rm.lock);
        int st = attach_locked(request ? request : 1);
        set_state(st);
        pthread_mutex_unlock(&rm.lock);
        if (st != RM_MANAGED) {
            tlg_notice("the resource manager is gone; running unmanaged");
            return 0;
        }
    }
    tl_rm_slot *s = rm.my;
    if (request == 0)
        request = 1;
    if (__atomic_load_n(&s->requested, __ATOMIC_RELAXED) != request)
        __atomic_store_n(&s->requested, request, __ATOMIC_RELAXED);
    unsigned alloc = current_alloc();
    __atomic_store_n(&s->last_team, alloc && alloc < request ? alloc : request, __ATOMIC_RELAXED);
    __atomic_store_n(&s->heartbeat_ns, now, __ATOMIC_RELAXED);
    __atomic_store_n(&s->regions, __atomic_load_n(&s->regions, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    follow_latest();
    return alloc;
}

void tlg_safe_point(void)
{
    if (atomic_load_explicit(&rm.state, RLX) == RM_MANAGED &&
        TLG_UNLIKELY(__atomic_load_n(&rm.my->epoch, __ATOMIC_RELAXED) !=
                     atomic_load_explicit(&rm.followed_epoch, RLX)))
        follow_latest();
    tl_ult_safe_point();
}

/* The effective dyn-var: managed, it defaults to true unless set. */
int tlg_dyn(const tlg_icv *icv)
{
    if (icv->dyn_set || tlg_env_v.dyn_explicit)
        return icv->dyn;
    return icv->dyn || tlg_rm_managed();
}

__attribute__((destructor)) static void rm_fini(void)
{
    if (rm.mapped && rm.slot >= 0 && rm.pid == getpid())
        tl_rm_release(&rm.arena, rm.slot);
}
