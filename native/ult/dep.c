/*
 * dep.c - dependence counters (NTLib's dependence-driven execution).
 *
 * deps word: the count of unsatisfied input dependences in the low 31
 * bits, TLU_DEP_WAITING in the top bit while the thread waits for the count
 * to reach zero: either it has not started (created with ndeps > 0) or it
 * is parked in tl_ult_dep_wait (set by POST_DEP_WAIT after its context is
 * saved). The satisfier whose decrement leaves exactly TLU_DEP_WAITING owns
 * the wake-up: it clears the word and makes the thread ready (a new thread
 * goes to the satisfier's deque, a parked one to its next-to-run slot).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>

void tlu_dep_satisfy(tlu_vp *vp, tlu_thread *t)
{
    uint32_t old = atomic_fetch_sub_explicit(&t->deps, 1, ACQREL);
    if (TLU_UNLIKELY(TLU_DEP_COUNT(old) == 0))
        tlu_die("threadlab-ult: thread %p: more dependences satisfied than declared", (void *)t);
    if (old - 1 != TLU_DEP_WAITING)
        return;
    atomic_store_explicit(&t->deps, 0, RLX);
    if (t->state == TS_NEW)
        tlu_sched_push_new(vp, t);
    else
        tlu_sched_ready(vp, t, 1);
}

void tlu_dep_post_wait(tlu_vp *vp, tlu_thread *t)
{
    uint32_t old = atomic_fetch_or_explicit(&t->deps, TLU_DEP_WAITING, ACQREL);
    if (TLU_DEP_COUNT(old) == 0) { /* satisfied meanwhile */
        atomic_fetch_and_explicit(&t->deps, ~TLU_DEP_WAITING, RLX);
        tlu_sched_ready(vp, t, 1);
    }
}

int tl_ult_create_dep(tl_ult_t *thread, const tl_ult_attr *attr, tl_ult_fn fn, void *arg,
                      unsigned ndeps, tl_ult_t successor)
{
    return tlu_create(thread, attr, fn, arg, ndeps, successor);
}

int tl_ult_create_nested(tl_ult_t *thread, const tl_ult_attr *attr, tl_ult_fn fn, void *arg)
{
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    if (!cur)
        return tlu_rt.initialized ? EPERM : EAGAIN;
    atomic_fetch_add_explicit(&cur->deps, 1, RLX);
    int err = tlu_create(thread, attr, fn, arg, 0, cur);
    if (err)
        atomic_fetch_sub_explicit(&cur->deps, 1, RLX);
    return err;
}

int tl_ult_dep_add(tl_ult_t thread, unsigned n)
{
    if (!thread || n >= TLU_DEP_WAITING)
        return EINVAL;
    atomic_fetch_add_explicit(&thread->deps, n, RLX);
    return 0;
}

int tl_ult_dep_satisfy(tl_ult_t thread)
{
    if (!thread)
        return EINVAL;
    if (!tlu_rt.initialized)
        return EAGAIN;
    tlu_dep_satisfy(tlu_vp_self(), thread);
    return 0;
}

int tl_ult_dep_wait(void)
{
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    if (!cur)
        return EPERM;
    if (TLU_DEP_COUNT(atomic_load_explicit(&cur->deps, ACQ)) == 0)
        return 0;
    tlu_sched_park(cur, POST_DEP_WAIT, NULL);
    return 0;
}
