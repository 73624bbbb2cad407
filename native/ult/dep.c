/*
 * dep.c - dependence counters (NTLib's dependence-driven execution).
 *
 * deps word: the count of unsatisfied input dependences in the low 31
 * bits, TL_DEP_WAITING in the top bit while the thread waits for the count
 * to reach zero: either it has not started (created with ndeps > 0) or it
 * is parked in tl_ult_dep_wait (set by POST_DEP_WAIT after its context is
 * saved). The satisfier whose decrement leaves exactly TL_DEP_WAITING owns
 * the wake-up: it clears the word and makes the thread ready (a new thread
 * goes to the satisfier's deque, a parked one to its next-to-run slot).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>

void tl_dep_satisfy(tl_vp *vp, tl_thread *t)
{
    uint32_t old = atomic_fetch_sub_explicit(&t->deps, 1, ACQREL);
    if (TL_UNLIKELY(TL_DEP_COUNT(old) == 0))
        tl_ult_die("threadlab-ult: thread %p: more dependences satisfied than declared", (void *)t);
    if (old - 1 != TL_DEP_WAITING)
        return;
    atomic_store_explicit(&t->deps, 0, RLX);
    if (t->state == TS_NEW)
        tl_sched_push_new(vp, t);
    else
        tl_sched_ready(vp, t, 1);
}

void tl_dep_post_wait(tl_vp *vp, tl_thread *t)
{
    uint32_t old = atomic_fetch_or_explicit(&t->deps, TL_DEP_WAITING, ACQREL);
    if (TL_DEP_COUNT(old) == 0) { /* satisfied meanwhile */
        atomic_fetch_and_explicit(&t->deps, ~TL_DEP_WAITING, RLX);
        tl_sched_ready(vp, t, 1);
    }
}

int tl_ult_create_dep(tl_ult_t *thread, const tl_ult_attr *attr, tl_ult_fn fn, void *arg,
                      unsigned ndeps, tl_ult_t successor)
{
    return tl_ult_create_internal(thread, attr, fn, arg, ndeps, successor);
}

int tl_ult_create_nested(tl_ult_t *thread, const tl_ult_attr *attr, tl_ult_fn fn, void *arg)
{
    tl_vp *vp;
    tl_thread *cur = tl_self_ult(&vp);
    if (!cur)
        return tl_rt.initialized ? EPERM : EAGAIN;
    atomic_fetch_add_explicit(&cur->deps, 1, RLX);
    int err = tl_ult_create_internal(thread, attr, fn, arg, 0, cur);
    if (err)
        atomic_fetch_sub_explicit(&cur->deps, 1, RLX);
    return err;
}

int tl_ult_dep_add(tl_ult_t thread, unsigned n)
{
    if (!thread || n >= TL_DEP_WAITING)
        return EINVAL;
    atomic_fetch_add_explicit(&thread->deps, n, RLX);
    return 0;
}

int tl_ult_dep_satisfy(tl_ult_t thread)
{
    if (!thread)
        return EINVAL;
    if (!tl_rt.initialized)
        return EAGAIN;
    tl_dep_satisfy(tl_vp_self(), thread);
    return 0;
}

int tl_ult_dep_wait(void)
{
    tl_vp *vp;
    tl_thread *cur = tl_self_ult(&vp);
    if (!cur)
        return EPERM;
    if (TL_DEP_COUNT(atomic_load_explicit(&cur->deps, ACQ)) == 0)
        return 0;
    tl_sched_park(cur, POST_DEP_WAIT, NULL);
    return 0;
}
