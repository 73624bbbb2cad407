/* model_kernel.c - what the kernel models (pthread, process) do alike:
 * sched_yield, nanosleep, no instantiation, default stacks, nothing cached,
 * and the operations on pthread mutexes and condition variables (which the
 * process model initialises process-shared: each model has its own _init). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "threadlab/model.h"

_Static_assert(sizeof(pthread_mutex_t) <= sizeof(tl_mmutex), "pthread_mutex_t fits a tl_mmutex");
_Static_assert(sizeof(pthread_cond_t) <= sizeof(tl_mcond), "pthread_cond_t fits a tl_mcond");

int tl_model_mutex_destroy(tl_mmutex *m)
{
    return pthread_mutex_destroy((pthread_mutex_t *)m);
}

int tl_model_mutex_lock(tl_mmutex *m)
{
    return pthread_mutex_lock((pthread_mutex_t *)m);
}

int tl_model_mutex_unlock(tl_mmutex *m)
{
    return pthread_mutex_unlock((pthread_mutex_t *)m);
}

int tl_model_cond_destroy(tl_mcond *c)
{
    return pthread_cond_destroy((pthread_cond_t *)c);
}

int tl_model_cond_wait(tl_mcond *c, tl_mmutex *m)
{
    return pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m);
}

int tl_model_cond_signal(tl_mcond *c)
{
    return pthread_cond_signal((pthread_cond_t *)c);
}

int tl_model_cond_broadcast(tl_mcond *c)
{
    return pthread_cond_broadcast((pthread_cond_t *)c);
}

/* glibc keeps the stacks of joined threads in a cache of about 40 MiB and
 * unmaps the rest; a child process's memory is gone with it. */
int tl_model_release_cached(void)
{
    return 0;
}

/* The default stack only reserves address space (RSS counts the pages a
 * thread touches), so the small-stack request changes nothing here. */
size_t tl_model_stack_bytes(tl_mstack stack)
{
    (void)stack;
    return 0;
}

int tl_model_instantiate(tl_mthread *t, tl_mthread_fn fn, void *arg)
{
    (void)t, (void)fn, (void)arg;
    return ENOTSUP;
}

int tl_model_start_instantiated(tl_mthread t)
{
    (void)t;
    return ENOTSUP;
}

void tl_model_yield(void)
{
    sched_yield();
}

/* Resumed after a signal: the whole interval is slept. */
void tl_model_sleep_ms(unsigned ms)
{
    struct timespec left = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
}
