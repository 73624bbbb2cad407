/*
 * sync_cond.c - condition variable that parks the ULT.
 *
 * The waiter enqueues itself under the queue lock *before* releasing the
 * mutex and releases the queue lock only after its context is saved
 * (POST_UNLOCK): a signal issued after the mutex was released (with or
 * without holding it) finds the waiter in the queue, so no wake-up is
 * lost. Lock order: condition queue lock, then the mutex's queue lock.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>

int tl_ult_cond_init(tl_ult_cond *c)
{
    atomic_init(&c->qlock, 0);
    c->head = c->tail = NULL;
    return 0;
}

int tl_ult_cond_destroy(tl_ult_cond *c)
{
    tlu_spin_lock(&c->qlock);
    int busy = c->head != NULL;
    tlu_spin_unlock(&c->qlock);
    return busy ? EBUSY : 0;
}

int tl_ult_cond_wait(tl_ult_cond *c, tl_ult_mutex *m)
{
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    if (!cur)
        return EPERM;
    tlu_spin_lock(&c->qlock);
    tlu_waitq_push(&c->head, &c->tail, cur);
    tl_ult_mutex_unlock(m);
    tlu_sched_park(cur, POST_UNLOCK, &c->qlock);
    return tl_ult_mutex_lock(m);
}

int tl_ult_cond_signal(tl_ult_cond *c)
{
    tlu_spin_lock(&c->qlock);
    tlu_thread *t = tlu_waitq_pop(&c->head, &c->tail);
    tlu_spin_unlock(&c->qlock);
    if (t)
        tlu_sched_ready(tlu_vp_self(), t, 1);
    return 0;
}

int tl_ult_cond_broadcast(tl_ult_cond *c)
{
    tlu_spin_lock(&c->qlock);
    tlu_thread *l = c->head;
    c->head = c->tail = NULL;
    tlu_spin_unlock(&c->qlock);
    tlu_vp *vp = l ? tlu_vp_self() : NULL;
    while (l) {
        tlu_thread *n = l->link;
        l->link = NULL;
        tlu_sched_ready(vp, l, 0);
        l = n;
    }
    return 0;
}
