/*
 * park.c - futex-like parking of ULTs on any 32-bit word (tl_ult_wait /
 * tl_ult_wake), for runtimes that keep their synchronization state in
 * words of their own (OpenMP locks are 4 bytes, barriers a generation
 * counter).
 *
 * A fixed table of buckets, each a spinlock and a FIFO of parked threads
 * tagged with the word they wait on (the "parking lot" of WebKit and of
 * Go's semaphores). The waiter compares the word under the bucket lock and
 * parks with POST_UNLOCK, so the lock is released only after its context
 * is saved; a waker changes the word before it takes the bucket lock, so
 * it either finds the waiter queued or the waiter sees the new value.
 *
 * Placement of woken threads: each goes back to the VP it parked on when
 * that VP is active and is not the waker's (its inbox, which wakes it):
 * a barrier's release then resumes every waiter where its data is, instead
 * of piling all of them on the waker's VP for the others to steal. A
 * single waiter parked on the waker's VP goes to its next-to-run slot.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PARK_BUCKETS 256

static struct park_bucket {
    _Atomic uint32_t lock;
    tlu_thread *head, *tail;
} TL_ALIGNED_CACHE_LINE buckets[PARK_BUCKETS];

static struct park_bucket *bucket_of(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    a ^= a >> 17;
    a *= 0x9e3779b97f4a7c15ull;
    return &buckets[(a >> 40) & (PARK_BUCKETS - 1)];
}

int tl_ult_wait(_Atomic uint32_t *addr, uint32_t expected)
{
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    if (!cur)
        return EPERM;
    struct park_bucket *b = bucket_of(addr);
    tlu_spin_lock(&b->lock);
    if (atomic_load_explicit(addr, ACQ) != expected) {
        tlu_spin_unlock(&b->lock);
        return EAGAIN;
    }
    cur->wait_addr = addr;
    tlu_waitq_push(&b->head, &b->tail, cur);
    tlu_sched_park(cur, POST_UNLOCK, &b->lock);
    return 0;
}

int tl_ult_wake(_Atomic uint32_t *addr, int n)
{
    struct park_bucket *b = bucket_of(addr);
    tlu_thread *woken = NULL, **tail = &woken;
    int count = 0;
    tlu_spin_lock(&b->lock);
    tlu_thread *prev = NULL, *t = b->head;
    while (t && count < n) {
        tlu_thread *next = t->link;
        if (t->wait_addr == addr) {
            if (prev)
                prev->link = next;
            else
                b->head = next;
            if (b->tail == t)
                b->tail = prev;
            t->wait_addr = NULL;
            t->link = NULL;
            *tail = t;
            tail = &t->link;
            count++;
        } else {
            prev = t;
        }
        t = next;
    }
    tlu_spin_unlock(&b->lock);
    if (!woken)
        return 0;
    tlu_vp *me = tlu_vp_self();
    while (woken) {
        t = woken;
        woken = t->link;
        t->link = NULL;
        tlu_vp *home = t->vp;
        if (t->bound_vp < 0 && home && home != me && !tlu_vp_must_stop(home))
            tlu_sched_inbox_push(home, t);
        else
            tlu_sched_ready(me, t, count == 1);
    }
    return count;
}

/* ---- the asymmetric Dekker pair (tl_ult_fence_publisher / _sleeper) ---- */

/* Set once, before any VP starts; membarrier registration lasts as long
 * as the process. */
static int membarrier_ok;

void tlu_fence_init(int membarrier)
{
#if TLU_TSAN
    (void)membarrier; /* TSan does not see the kernel's barrier: full fences */
#else
    if (!membarrier) {
        membarrier_ok = 0;
        return;
    }
    if (membarrier_ok)
        return;
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        return;
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0)
        return;
    membarrier_ok = 1;
#endif
}

void tl_ult_fence_publisher(void)
{
    if (membarrier_ok)
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

void tl_ult_fence_sleeper(void)
{
    if (!membarrier_ok) {
        atomic_thread_fence(memory_order_seq_cst);
        return;
    }
    /* publishers rely on it: a failure here would lose wake-ups */
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        tlu_die("threadlab-ult: membarrier(PRIVATE_EXPEDITED) failed after registration (errno %d)", errno);
}
