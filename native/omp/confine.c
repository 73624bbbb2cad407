/*
 * confine.c - the CPUs of a managed program's threads while it runs
 * (docs/omp.md "CPUs while a region runs", docs/rm.md).
 *
 * libgomp fixes a team's size when its region starts, so a program with
 * one long region (NAS EP) cannot give CPUs back by shrinking its team.
 * What can change at any time is where its threads may run: seed 004's
 * manager blocks and resumes a program's virtual processors; here a
 * watcher thread in each managed program sets the CPU mask of every
 * thread of the process (sched_setaffinity on each entry of
 * /proc/self/task) to the CPUs the manager gave it, as soon as the
 * manager publishes a new allocation (it waits on the slot's epoch, a
 * futex the manager wakes), and gives them the process's original CPUs
 * back once the program is no longer managed (the manager stopped or died:
 * the watcher notices within a quantum even while a region runs).
 *
 * The program's own threads are never blocked: a team larger than its
 * CPUs time-shares them, and libgomp's waiting threads sleep after a short
 * spin (threadlab omp run's GOMP_SPINCOUNT), so the kernel runs the
 * threads that have work.
 *
 * A mask that grows does not move anybody: a thread queued behind another
 * on a CPU it may still use stays there until the kernel's idle balancing
 * pulls it, 10-20 ms later on the machines measured (docs/omp.md, "CPUs
 * while a region runs").  So when the CPUs it owns grow, the watcher
 * itself moves the runnable threads that share a CPU onto the new CPUs
 * none of them is on.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"
#include "threadlab/omp.h"
#include "threadlab/procfs.h"
#include "threadlab/rm_client.h"

static struct {
    pthread_mutex_t lock;       /* capture and start */
    cpu_set_t original;         /* the process's CPUs before any confinement */
    int captured;
    pid_t watcher_pid;          /* the process whose watcher runs (none after a fork) */
    uint32_t kick;              /* futex word: the shim's state changed */
    unsigned generation;        /* +1 whenever the threads' masks are set */
    unsigned moves;             /* threads spread_runnable put on a gained CPU */
    int active;                 /* the threads' masks are not the original */
    /* The watcher's own. */
    int applied_valid;
    cpu_set_t applied;
} cf = {.lock = PTHREAD_MUTEX_INITIALIZER};

void shim_confine_capture(void)
{
    pthread_mutex_lock(&cf.lock);
    if (!cf.captured) {
        CPU_ZERO(&cf.original);
        if (sched_getaffinity(0, sizeof cf.original, &cf.original) != 0)
            for (long c = 0, n = sysconf(_SC_NPROCESSORS_ONLN); c < n && c < CPU_SETSIZE; c++)
                CPU_SET((int)c, &cf.original);
        cf.captured = 1;
    }
    pthread_mutex_unlock(&cf.lock);
}

const cpu_set_t *shim_confine_original(void)
{
    return &cf.original;
}

unsigned shim_confine_generation(void)
{
    return __atomic_load_n(&cf.generation, __ATOMIC_ACQUIRE);
}

unsigned shim_confine_moves(void)
{
    return __atomic_load_n(&cf.moves, __ATOMIC_ACQUIRE);
}

/* The runnable threads of the process and the CPU each is on or queued
 * on, as set_threads found them (a team's workers and master; at most
 * SPREAD_MAX_THREADS). */
#define SPREAD_MAX_THREADS 256
typedef struct {
    unsigned n;
    pid_t tid[SPREAD_MAX_THREADS];
    int cpu[SPREAD_MAX_THREADS];
} runnable_threads;

/* Sets the mask of every thread of the process (all), or only of those
 * whose mask reaches outside target (a thread created since, with the
 * mask of its creator; pinned team threads are inside and stay pinned).
 * With runnable, also notes there the runnable threads but the caller.
 * Returns the number of threads seen. */
static unsigned set_threads(const cpu_set_t *target, int all, runnable_threads *runnable)
{
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    DIR *dir = fdopendir(fd);
    if (!dir) {
        close(fd);
        return 0;
    }
    pid_t self = gettid();
    unsigned threads = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9')
            continue;
        pid_t tid = (pid_t)atoi(entry->d_name);
        threads++;
        int cpu;
        if (runnable && runnable->n < SPREAD_MAX_THREADS && tid != self && tl_proc_task_state(tid, &cpu) == 'R' &&
            cpu >= 0 && cpu < CPU_SETSIZE) {
            runnable->tid[runnable->n] = tid;
            runnable->cpu[runnable->n++] = cpu;
        }
        if (!all) {
            cpu_set_t now, inside;
            if (sched_getaffinity(tid, sizeof now, &now) != 0)
                continue; /* exited meanwhile */
            CPU_AND(&inside, &now, target);
            if (CPU_EQUAL(&inside, &now))
                continue;
        }
        sched_setaffinity(tid, sizeof *target, target); /* a thread that exited meanwhile: ESRCH */
    }
    closedir(dir);
    return threads;
}

/* After the mask grew to target with CPUs the manager just gave the
 * program (gained): each runnable thread that shares a CPU with another
 * (or sits outside target) moves to a gained CPU that none of them is
 * on, by a mask of that CPU alone (the kernel moves a thread at once when
 * its CPU leaves its mask), then target again.  Only CPUs it owns: those
 * the program shares with others (it owns none, or the manager is gone)
 * are the kernel's to balance. */
static void spread_runnable(const cpu_set_t *target, const cpu_set_t *gained, const runnable_threads *r)
{
    int on[CPU_SETSIZE] = {0};
    for (unsigned i = 0; i < r->n; i++)
        if (CPU_ISSET(r->cpu[i], target))
            on[r->cpu[i]]++;
    int free_cpu = 0;
    for (unsigned i = 0; i < r->n; i++) {
        int cpu = r->cpu[i];
        if (CPU_ISSET(cpu, target) && on[cpu] <= 1)
            continue;
        while (free_cpu < CPU_SETSIZE && (!CPU_ISSET(free_cpu, gained) || on[free_cpu]))
            free_cpu++;
        if (free_cpu == CPU_SETSIZE)
            return; /* every gained CPU has one */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(free_cpu, &one);
        if (sched_setaffinity(r->tid[i], sizeof one, &one) != 0)
            continue; /* exited meanwhile */
        int now = -1;
        if (tl_proc_task_state(r->tid[i], &now) == 'R' && now == free_cpu)
            __atomic_add_fetch(&cf.moves, 1, __ATOMIC_RELEASE);
        sched_setaffinity(r->tid[i], sizeof *target, target);
        if (CPU_ISSET(cpu, target))
            on[cpu]--;
        on[free_cpu]++;
    }
}

static void apply(const cpu_set_t *target, int owned)
{
    int changed = !cf.applied_valid || !CPU_EQUAL(target, &cf.applied);
    if (changed) {
        cpu_set_t gained; /* the owned CPUs target adds */
        CPU_ZERO(&gained);
        if (cf.applied_valid && owned) {
            CPU_XOR(&gained, target, &cf.applied);
            CPU_AND(&gained, &gained, target);
        }
        if (CPU_COUNT(&gained)) {
            runnable_threads runnable = {.n = 0};
            set_threads(target, 1, &runnable);
            spread_runnable(target, &gained, &runnable);
        } else {
            set_threads(target, 1, NULL);
        }
        cf.applied = *target;
        cf.applied_valid = 1;
        cf.active = !CPU_EQUAL(target, &cf.original);
        __atomic_add_fetch(&cf.generation, 1, __ATOMIC_RELEASE);
    }
}

static void *watcher(void *arg)
{
    (void)arg;
    for (;;) {
        uint32_t kick = __atomic_load_n(&cf.kick, __ATOMIC_ACQUIRE);
        tl_rm_slot *slot = NULL;
        const tl_rm_header *h = NULL;
        if (shim_watch_state(&slot, &h) == TL_OMP_STATE_MANAGED && slot && h) {
            uint32_t epoch;
            tl_rm_cpuset owned;
            if (tl_rm_read_alloc(slot, NULL, NULL, &epoch, &owned) == 0) {
                cpu_set_t target;
                apply(&target, tl_rm_client_target_cpus(&owned, h, &cf.original, &target));
                /* Again, for threads created while the masks were set, and
                 * every quantum for those started since (with their
                 * creator's mask, which is inside unless it was changed). */
                unsigned threads = set_threads(&target, 0, NULL);
                __atomic_store_n(&slot->threads, threads, __ATOMIC_RELAXED);
                __atomic_store_n(&slot->confined_epoch, epoch, __ATOMIC_RELEASE);
            }
            /* A new allocation, or the manager stopping, wakes it at once;
             * a manager that died is noticed when the wait times out. */
            tl_rm_futex_wait(&slot->epoch, epoch, tl_rm_client_watch_ns(h));
            shim_watch_manager(h);
            continue;
        }
        if (cf.active || (cf.applied_valid && !CPU_EQUAL(&cf.applied, &cf.original)))
            apply(&cf.original, 0);
        /* Not managed, or managed but its slot is gone: look again when the
         * shim's state changes, or soon. */
        tl_rm_futex_wait(&cf.kick, kick, UINT64_C(100000000));
    }
    return NULL;
}

void shim_confine_kick(tl_rm_slot *slot)
{
    shim_confine_capture();
    pthread_mutex_lock(&cf.lock);
    pid_t pid = getpid();
    if (cf.watcher_pid != pid && tl_rm_client_watcher(watcher, NULL, "threadlab-omp") == 0)
        cf.watcher_pid = pid;
    pthread_mutex_unlock(&cf.lock);
    __atomic_add_fetch(&cf.kick, 1, __ATOMIC_RELEASE);
    tl_rm_futex_wake(&cf.kick, INT_MAX);
    if (slot)
        tl_rm_futex_wake(&slot->epoch, INT_MAX); /* a watcher waiting for an allocation looks now */
}

void shim_confine_after_fork(void)
{
    pthread_mutex_init(&cf.lock, NULL);
    cf.watcher_pid = 0;
    if (cf.captured && (cf.active || cf.applied_valid))
        sched_setaffinity(0, sizeof cf.original, &cf.original);
    cf.active = 0;
    cf.applied_valid = 0;
}
