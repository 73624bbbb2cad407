/*
 * sync_barrier.c - barrier that parks the ULTs.
 *
 * The last of count arrivals takes the whole wait queue, starts the next
 * generation and makes every waiter ready (on its VP's deque, where idle
 * VPs can steal them); it returns TL_ULT_BARRIER_SERIAL_THREAD. Waiters
 * are only woken by that release, so there are no spurious returns, and
 * the barrier is immediately reusable.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>

int tl_ult_barrier_init(tl_ult_barrier *b, unsigned count)
{
    if (count == 0)
        return EINVAL;
    atomic_init(&b->qlock, 0);
    b->count = count;
    b->arrived = 0;
    b->generation = 0;
    b->head = b->tail = NULL;
    return 0;
}

int tl_ult_barrier_destroy(tl_ult_barrier *b)
{
    tlu_spin_lock(&b->qlock);
    int busy = b->arrived != 0;
    tlu_spin_unlock(&b->qlock);
    return busy ? EBUSY : 0;
}

int tl_ult_barrier_wait(tl_ult_barrier *b)
{
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    if (!cur)
        return -EPERM;
    tlu_spin_lock(&b->qlock);
    if (++b->arrived == b->count) {
        tlu_thread *l = b->head;
        b->head = b->tail = NULL;
        b->arrived = 0;
        b->generation++;
        tlu_spin_unlock(&b->qlock);
        while (l) {
            tlu_thread *n = l->link;
            l->link = NULL;
            tlu_sched_ready(vp, l, 0);
            l = n;
        }
        return TL_ULT_BARRIER_SERIAL_THREAD;
    }
    tlu_waitq_push(&b->head, &b->tail, cur);
    tlu_sched_park(cur, POST_UNLOCK, &b->qlock);
    return 0;
}
