/* worker.c - what every worker thread runs, whatever platform started it. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <sys/resource.h>

#include "threadlab/apps.h"

int tl_app_pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    /* pid 0: the calling thread (Linux affinity is per thread). */
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : errno;
}

void tl_app_worker(tl_app_job *job, unsigned t, int pin_self)
{
    tl_app_slot *slot = &job->slots[t];
    if (job->cpus && pin_self)
        slot->pin_error = tl_app_pin_self(job->cpus[t]);
    slot->cpu_start = sched_getcpu();
    /* The scheduling this thread runs with (inherited from the main thread,
     * which applied the priority before any worker existed). On Linux both
     * calls answer for the calling thread. */
    slot->policy = sched_getscheduler(0);
    errno = 0;
    slot->nice = getpriority(PRIO_PROCESS, 0);
    tl_app_range range = tl_app_split(job->ops->items, t, job->workers);
    job->kernel->work(job->ops, range.begin, range.end, &slot->partial);
    slot->cpu_end = sched_getcpu();
    slot->ran = 1;
}
