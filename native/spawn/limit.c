/* limit.c - how many thread tasks this process may run at once.
 *
 * A number (THREADLAB_SPAWN_MAX_THREADS=N), or auto: the CPUs this process
 * may run on, or, while a threadlab-rm manager runs, the allocation it
 * gives this process (docs/rm.md).  The process registers with the
 * manager on its first spawn decision, asking for its CPUs; the manager's
 * answer is read at every decision (a few loads, no system call), and a
 * manager that stops or dies is noticed there: the limit falls back to
 * the CPUs.  The slots held against the limit are the one counter
 * tlsp_count.counted, taken by compare-and-swap: a decision never holds a
 * lock.  Under THREADLAB_SPAWN_LIMIT_COUNTS=runnable (the default) it
 * equals the thread tasks alive less those asleep in the library's waits
 * (tlsp_park): the limit then bounds the CPUs busy with thread tasks, what
 * auto and a manager's allocation mean.  Under running (the seed's count)
 * it equals the thread tasks alive (tlsp_count.running). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "threadlab/rm.h"

static struct {
    pthread_mutex_t lock;
    int tried;             /* looked for a manager */
    int mapped;
    tl_rm_arena arena;
    int slot;              /* -1: not registered */
    pid_t pid;
} rm = {.lock = PTHREAD_MUTEX_INITIALIZER, .slot = -1};

static void rm_attach(void)
{
    pthread_mutex_lock(&rm.lock);
    if (__atomic_load_n(&rm.tried, __ATOMIC_ACQUIRE) && rm.pid == getpid()) {
        pthread_mutex_unlock(&rm.lock);
        return;
    }
    rm.pid = getpid();
    char name[256], err[512];
    tl_rm_arena_name(name, sizeof name);
    if (tl_rm_open(&rm.arena, name, err, sizeof err) == TL_RM_OK) {
        rm.mapped = 1;
        tl_rm_header *h = rm.arena.hdr;
        if (tl_rm_manager_fresh(h, tl_rm_now_ns()) && tl_rm_manager_exists(h)) {
            uint32_t epoch0;
            int slot = tl_rm_register(&rm.arena, tlsp_cfg.affinity_cpus, 0, &epoch0);
            if (slot >= 0) {
                /* The manager answers a registration at once. */
                tl_rm_wait_epoch(&rm.arena.slots[slot], epoch0, UINT64_C(50000000));
                __atomic_store_n(&rm.slot, slot, __ATOMIC_RELEASE);
                tlsp_note("thread limit: the allocation of threadlab-rm (pid %d)", (int)h->manager_pid);
            }
        }
    }
    __atomic_store_n(&rm.tried, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&rm.lock);
}

TLSP_EXPORT int tl_spawn_set_max_threads(long n)
{
    if (n < 0)
        return -1;
    __atomic_store_n(&tlsp_cfg.limit, n, __ATOMIC_RELAXED);
    __atomic_store_n(&tlsp_cfg.limit_mode, TLSP_LIMIT_NUMBER, __ATOMIC_RELEASE);
    return 0;
}

long tlsp_limit_now(void)
{
    if (__atomic_load_n(&tlsp_cfg.limit_mode, __ATOMIC_ACQUIRE) == TLSP_LIMIT_NUMBER)
        return __atomic_load_n(&tlsp_cfg.limit, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&rm.tried, __ATOMIC_ACQUIRE))
        rm_attach();
    int slot = __atomic_load_n(&rm.slot, __ATOMIC_ACQUIRE);
    if (slot >= 0 && tl_rm_manager_fresh(rm.arena.hdr, tl_rm_coarse_ns())) {
        uint32_t alloc = 0;
        if (tl_rm_read_alloc(&rm.arena.slots[slot], &alloc, NULL, NULL, NULL) == 0 && alloc > 0)
            return alloc;
    }
    return tlsp_cfg.affinity_cpus;
}

int tlsp_limit_reserve(int n)
{
    long limit = tlsp_limit_now();
    /* Under runnable counting a spawning task's own slot goes to its
     * children: it is about to wait for them (the divide-and-conquer
     * pattern), and asleep it gives the slot back anyway.  Deciding as if
     * it already slept is what lets the first spawn of a tree fill the
     * limit, as the seed's first spawn did from a process's main thread,
     * which no count held.  A caller that goes on computing instead keeps
     * at most one runnable task above the limit. */
    long own = tlsp_cfg.limit_counts == TL_SPAWN_COUNTS_RUNNABLE && tlsp_self_task ? 1 : 0;
    long cur = atomic_load_explicit(&tlsp_count.counted, memory_order_relaxed);
    do {
        if (cur - own + n > limit)
            return 0;
    } while (!atomic_compare_exchange_weak_explicit(&tlsp_count.counted, &cur, cur + n, memory_order_acq_rel,
                                                    memory_order_relaxed));
    long alive = atomic_fetch_add_explicit(&tlsp_count.running, n, memory_order_acq_rel) + n;
    long peak = atomic_load_explicit(&tlsp_count.peak_running, memory_order_relaxed);
    while (alive > peak &&
           !atomic_compare_exchange_weak_explicit(&tlsp_count.peak_running, &peak, alive, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
    return 1;
}

/* Token bits of tlsp_park. */
enum { PARK_COUNTED = 1, PARK_SLOT = 2 };

int tlsp_park(void)
{
    if (!tlsp_self_main)
        return 0; /* a thread that is no task's own holds no slot */
    atomic_fetch_add_explicit(&tlsp_count.parked, 1, memory_order_relaxed);
    if (tlsp_cfg.limit_counts != TL_SPAWN_COUNTS_RUNNABLE)
        return PARK_COUNTED;
    atomic_fetch_sub_explicit(&tlsp_count.counted, 1, memory_order_acq_rel);
    return PARK_COUNTED | PARK_SLOT;
}

void tlsp_unpark(int token)
{
    /* The slot is taken back whatever the limit: the task is runnable
     * again and must finish its wait.  The count may exceed the limit for
     * a while; spawns meanwhile are processes until it falls back. */
    if (token & PARK_SLOT)
        atomic_fetch_add_explicit(&tlsp_count.counted, 1, memory_order_acq_rel);
    if (token & PARK_COUNTED)
        atomic_fetch_sub_explicit(&tlsp_count.parked, 1, memory_order_relaxed);
}

void tlsp_limit_shutdown(void)
{
    pthread_mutex_lock(&rm.lock);
    if (rm.slot >= 0 && rm.pid == getpid())
        tl_rm_release(&rm.arena, rm.slot);
    __atomic_store_n(&rm.slot, -1, __ATOMIC_RELEASE);
    if (rm.mapped)
        tl_rm_close(&rm.arena);
    rm.mapped = 0;
    pthread_mutex_unlock(&rm.lock);
}
