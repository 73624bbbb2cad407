/* model_pthread.c - the pthread model: POSIX threads (NPTL, one kernel
 * thread each) behind threadlab/model.h. */
#include <pthread.h>

#include "threadlab/model.h"
#include "threadlab/resident.h"

const char tl_model_name[] = "pthread";
const char *const tl_model_no_instantiate =
    "pthread_create creates and starts a thread in one call: POSIX threads have no created-but-not-started state";
const char *const tl_model_capacity_counts[] = {"10000", "100000", NULL};
const char *const tl_model_capacity_quick[] = {"1000", NULL};

_Static_assert(sizeof(pthread_t) <= sizeof(tl_mthread), "pthread_t fits a tl_mthread");

int tl_model_init(tl_ctx *ctx)
{
    (void)ctx;
    return 0;
}

void tl_model_describe(tl_ctx *ctx)
{
    (void)ctx;
}

void tl_model_fini(void)
{
}

/* A kernel task and two mappings (stack and guard page); resident: the
 * touched stack pages, TLS and the kernel's stack and task structures,
 * rounded up generously. */
tl_model_cost tl_model_thread_cost(tl_mstack stack)
{
    (void)stack;
    return (tl_model_cost){.kernel_task = 1, .maps = 2, .resident_bytes = 64 * 1024};
}

double tl_model_resident_bytes(void)
{
    return (double)tl_resident_bytes();
}

int tl_model_create(tl_mthread *t, tl_mthread_fn fn, void *arg, tl_mstack stack)
{
    (void)stack;
    pthread_t thread;
    int rc = pthread_create(&thread, NULL, fn, arg);
    if (rc == 0)
        *t = (tl_mthread)thread;
    return rc;
}

int tl_model_join(tl_mthread t)
{
    return pthread_join((pthread_t)t, NULL);
}

void tl_model_exit(void)
{
    pthread_exit(NULL);
}

int tl_model_mutex_init(tl_mmutex *m)
{
    return pthread_mutex_init((pthread_mutex_t *)m, NULL);
}

int tl_model_cond_init(tl_mcond *c)
{
    return pthread_cond_init((pthread_cond_t *)c, NULL);
}
