/* model_ult.c - the ult model: libthreadlab-ult user-level threads
 * (docs/ult.md).  The program's main thread becomes the primordial ULT on
 * VP 0.  One virtual processor unless TL_ULT_VPS says otherwise (the
 * library's own setting): the switch and creation figures are those of one
 * VP, and extra.vps says how many there were.  VPs are not pinned by the
 * runtime: VP 0 is the main thread, which the framework has placed as
 * --placement asks. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "threadlab/model.h"
#include "threadlab/ult.h"
#include "threadlab/resident.h"

const char tl_model_name[] = "ult";
const char *const tl_model_no_instantiate = NULL;
/* A suspended ULT with a small stack costs under a KiB: the million of
 * issue 4's target is part of the sweep. */
const char *const tl_model_capacity_counts[] = {"10000", "100000", "1000000", NULL};
const char *const tl_model_capacity_quick[] = {"1000", NULL};

_Static_assert(sizeof(tl_ult_mutex) <= sizeof(tl_mmutex), "tl_ult_mutex fits a tl_mmutex");
_Static_assert(sizeof(tl_ult_cond) <= sizeof(tl_mcond), "tl_ult_cond fits a tl_mcond");

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* Instrumented frames are several times larger: no tiny stacks there. */
#define SMALL_STACK_BYTES (16 * 1024)
#else
/* Enough for a body that only blocks on a ULT primitive: the runtime's
 * park + pick + switch use 368 bytes (docs/ult.md, "Small stacks"). */
#define SMALL_STACK_BYTES 768
#endif

static tl_ult_config config;

static int start_runtime(void)
{
    return tl_ult_init(&config);
}

int tl_model_init(tl_ctx *ctx)
{
    tl_ult_config_init(&config);
    const char *vps = getenv("TL_ULT_VPS");
    if (!vps || !*vps)
        config.nvps = 1;
    config.pin = 0;
    int rc = start_runtime();
    if (rc != 0) {
        tl_fail(ctx, "tl_ult_init: %s", strerror(rc));
        return -1;
    }
    return 0;
}

void tl_model_describe(tl_ctx *ctx)
{
    tl_extra_num(ctx, "vps", tl_ult_num_vps());
    tl_extra_num(ctx, "stack_size", (double)tl_model_stack_bytes(TL_MSTACK_DEFAULT));
    tl_extra_str(ctx, "stack_mode", config.stack_mode == TL_ULT_STACK_GUARD ? "guard" : "canary");
}

void tl_model_fini(void)
{
    tl_ult_finalize();
}

/* Stacks are unmapped only by tl_ult_finalize: restart the runtime. */
int tl_model_release_cached(void)
{
    int rc = tl_ult_finalize();
    return rc != 0 ? rc : start_runtime();
}

size_t tl_model_stack_bytes(tl_mstack stack)
{
    if (stack == TL_MSTACK_SMALL)
        return SMALL_STACK_BYTES;
    return config.stack_size ? config.stack_size : 64 * 1024;
}

/* No kernel task, no mapping of its own (stacks are carved from shared
 * chunks); resident: the descriptor and the touched stack pages. */
tl_model_cost tl_model_thread_cost(tl_mstack stack)
{
    double resident = stack == TL_MSTACK_SMALL ? 2048 : 3 * 4096;
#if defined(__SANITIZE_THREAD__)
    resident += 1024 * 1024; /* the fiber ThreadSanitizer keeps per ULT that ran */
#endif
    return (tl_model_cost){.kernel_task = 0, .maps = 0, .resident_bytes = resident};
}

double tl_model_resident_bytes(void)
{
    return (double)tl_resident_bytes();
}

int tl_model_create(tl_mthread *t, tl_mthread_fn fn, void *arg, tl_mstack stack)
{
    tl_ult_attr attr;
    tl_ult_attr_init(&attr);
    if (stack == TL_MSTACK_SMALL)
        attr.stack_size = SMALL_STACK_BYTES;
    tl_ult_t thread;
    int rc = tl_ult_create(&thread, stack == TL_MSTACK_SMALL ? &attr : NULL, fn, arg);
    if (rc == 0)
        *t = (tl_mthread)thread;
    return rc;
}

/* A ULT created with one unsatisfied dependence exists (descriptor, queue
 * membership pending) but does not run until the dependence is satisfied. */
int tl_model_instantiate(tl_mthread *t, tl_mthread_fn fn, void *arg)
{
    tl_ult_t thread;
    int rc = tl_ult_create_dep(&thread, NULL, fn, arg, 1, NULL);
    if (rc == 0)
        *t = (tl_mthread)thread;
    return rc;
}

int tl_model_start_instantiated(tl_mthread t)
{
    return tl_ult_dep_satisfy((tl_ult_t)t);
}

int tl_model_join(tl_mthread t)
{
    return tl_ult_join((tl_ult_t)t, NULL);
}

void tl_model_yield(void)
{
    tl_ult_yield();
}

void tl_model_exit(void)
{
    tl_ult_exit(NULL);
}

void tl_model_sleep_ms(unsigned ms)
{
    tl_ult_sleep_ns((uint64_t)ms * 1000000u);
}

int tl_model_mutex_init(tl_mmutex *m)
{
    return tl_ult_mutex_init((tl_ult_mutex *)m);
}

int tl_model_mutex_destroy(tl_mmutex *m)
{
    return tl_ult_mutex_destroy((tl_ult_mutex *)m);
}

int tl_model_mutex_lock(tl_mmutex *m)
{
    return tl_ult_mutex_lock((tl_ult_mutex *)m);
}

int tl_model_mutex_unlock(tl_mmutex *m)
{
    return tl_ult_mutex_unlock((tl_ult_mutex *)m);
}

int tl_model_cond_init(tl_mcond *c)
{
    return tl_ult_cond_init((tl_ult_cond *)c);
}

int tl_model_cond_destroy(tl_mcond *c)
{
    return tl_ult_cond_destroy((tl_ult_cond *)c);
}

int tl_model_cond_wait(tl_mcond *c, tl_mmutex *m)
{
    return tl_ult_cond_wait((tl_ult_cond *)c, (tl_ult_mutex *)m);
}

int tl_model_cond_signal(tl_mcond *c)
{
    return tl_ult_cond_signal((tl_ult_cond *)c);
}

int tl_model_cond_broadcast(tl_mcond *c)
{
    return tl_ult_cond_broadcast((tl_ult_cond *)c);
}
