/*
 * coop.c - cooperating without a manager (threadlab/rm_client.h): the
 * team of a program that lost its manager or was refused is the CPUs of
 * the process that other work leaves idle, so that it never runs more
 * threads than it can have CPUs beside that work (docs/rm.md, "Failure
 * behaviour").  Shared by the libgomp shim and libthreadlab-gomp.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/resource.h>

#include "threadlab/rm_client.h"

static unsigned clamp_team(const tl_rm_coop *co, long team)
{
    long n = (long)co->ncpus;
    return team < 1 ? 1u : team > n ? (unsigned)n : (unsigned)team;
}

void tl_rm_coop_begin(tl_rm_coop *co, const cpu_set_t *cpus, uint32_t alloc)
{
    pthread_mutex_lock(&co->lock);
    tl_rm_cpuset_zero(&co->cpus);
    for (unsigned c = 0; c < CPU_SETSIZE && c < TL_RM_MAX_CPUS; c++)
        if (CPU_ISSET(c, cpus))
            tl_rm_cpuset_add(&co->cpus, c);
    co->ncpus = tl_rm_cpuset_count(&co->cpus);
    if (co->ncpus == 0)
        co->ncpus = 1;
    unsigned team;
    if (alloc) {
        team = clamp_team(co, (long)alloc);
    } else {
        long runnable = (long)tl_rm_runnable_now();
        team = clamp_team(co, (long)co->ncpus - (runnable > 1 ? runnable - 1 : 0));
    }
    __atomic_store_n(&co->team, team, __ATOMIC_RELAXED);
    co->have = 0;
    __atomic_store_n(&co->next_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&co->begun, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&co->lock);
}

void tl_rm_coop_begin_once(tl_rm_coop *co, const cpu_set_t *cpus)
{
    if (!tl_rm_coop_begun(co))
        tl_rm_coop_begin(co, cpus, 0);
}

/* Under co->lock: the CPUs of the process other work kept busy since the
 * previous reading; the team is the rest, rounded, at least 1. */
static void measure(tl_rm_coop *co, uint64_t now)
{
    tl_rm_cpustat *next = &co->readings[co->current ^ 1u];
    __atomic_store_n(&co->next_ns, now + TL_RM_COOP_PERIOD_NS, __ATOMIC_RELAXED);
    if (tl_rm_cpustat_read(next) != 0)
        return;
    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    uint64_t self_ns = ((uint64_t)self.ru_utime.tv_sec + (uint64_t)self.ru_stime.tv_sec) * UINT64_C(1000000000) +
                       ((uint64_t)self.ru_utime.tv_usec + (uint64_t)self.ru_stime.tv_usec) * UINT64_C(1000);
    if (co->have) {
        double other = tl_rm_other_cpus(&co->readings[co->current], next, &co->cpus,
                                        self_ns > co->self_ns ? self_ns - co->self_ns : 0);
        double idle = (double)co->ncpus - other;
        __atomic_store_n(&co->team, clamp_team(co, (long)(idle + 0.5)), __ATOMIC_RELAXED);
    }
    co->self_ns = self_ns;
    co->have = 1;
    co->current ^= 1u;
}

unsigned tl_rm_coop_team(tl_rm_coop *co, unsigned request)
{
    uint64_t now = tl_rm_coarse_ns();
    if (now >= __atomic_load_n(&co->next_ns, __ATOMIC_RELAXED) && pthread_mutex_trylock(&co->lock) == 0) {
        if (now >= co->next_ns)
            measure(co, now);
        pthread_mutex_unlock(&co->lock);
    }
    unsigned team = __atomic_load_n(&co->team, __ATOMIC_RELAXED);
    if (request == 0)
        request = 1;
    return request < team ? request : team;
}

void tl_rm_coop_after_fork(tl_rm_coop *co)
{
    pthread_mutex_init(&co->lock, NULL);
}
