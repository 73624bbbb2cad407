/*
 * sync_sem.c - counting semaphore that parks the ULT.
 *
 * wait: lock-free decrement while the count is positive; otherwise, under
 * the queue lock, retry and else enqueue and park. post: under the queue
 * lock, hand the unit directly to the oldest waiter (the count stays 0),
 * else increment. Invariant: the queue is non-empty only while the count
 * is 0, because posts (the only increments) go to waiters first.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>

int tl_ult_sem_init(tl_ult_sem *s, int64_t value)
{
    if (value < 0)
        return EINVAL;
    atomic_init(&s->count, value);
    atomic_init(&s->qlock, 0);
    s->head = s->tail = NULL;
    return 0;
}

int tl_ult_sem_destroy(tl_ult_sem *s)
{
    tlu_spin_lock(&s->qlock);
    int busy = s->head != NULL;
    tlu_spin_unlock(&s->qlock);
    return busy ? EBUSY : 0;
}

static int try_dec(tl_ult_sem *s)
{
    int64_t c = atomic_load_explicit(&s->count, RLX);
    while (c > 0)
        if (atomic_compare_exchange_weak_explicit(&s->count, &c, c - 1, ACQ, RLX))
            return 1;
    return 0;
}

int tl_ult_sem_trywait(tl_ult_sem *s)
{
    return try_dec(s) ? 0 : EAGAIN;
}

int tl_ult_sem_wait(tl_ult_sem *s)
{
    if (TLU_LIKELY(try_dec(s)))
        return 0;
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    if (!cur)
        return EPERM;
    tlu_spin_lock(&s->qlock);
    if (try_dec(s)) {
        tlu_spin_unlock(&s->qlock);
        return 0;
    }
    tlu_waitq_push(&s->head, &s->tail, cur);
    tlu_sched_park(cur, POST_UNLOCK, &s->qlock);
    return 0; /* the poster handed us its unit */
}

int tl_ult_sem_post(tl_ult_sem *s)
{
    tlu_spin_lock(&s->qlock);
    tlu_thread *t = tlu_waitq_pop(&s->head, &s->tail);
    if (!t)
        atomic_fetch_add_explicit(&s->count, 1, REL);
    tlu_spin_unlock(&s->qlock);
    if (t)
        tlu_sched_ready(tlu_vp_self(), t, 1);
    return 0;
}

int64_t tl_ult_sem_getvalue(tl_ult_sem *s)
{
    return atomic_load_explicit(&s->count, RLX);
}
