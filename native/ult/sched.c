/*
 * sched.c - the scheduler: switching, post-switch actions, picking the
 * next thread, making threads ready, stealing, yield.
 *
 * Per-VP queues, in the order the owner looks at them:
 *   next   - the next-to-run slot: a thread woken by the running one
 *            (mutex unlock, semaphore post, join completion) runs next on
 *            the same VP, while its data is in cache (handoff). Stealable
 *            by idle VPs with an atomic exchange.
 *   dq     - Chase-Lev deque: new threads and woken threads. Owner LIFO,
 *            thieves FIFO.
 *   runq   - private FIFO without atomics: threads that yielded (so that
 *            yield is fair among yielders and costs no locked instruction)
 *            and threads bound to this VP. Published to the deque when
 *            other VPs are idle.
 *   inbox  - lock-free LIFO for threads made ready by other VPs or
 *            external threads when they must run here (bound threads) or
 *            have no VP of their own (external create).
 * Every 32 scheduling decisions the runq, the inbox and the timers are
 * looked at first, so nothing starves behind a stream of new threads.
 *
 * Switches go directly from thread to thread; a VP enters its scheduler
 * context only when it has nothing to run (the idle loop in vp.c) or work
 * descriptors to execute.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <sched.h>

void tl_sched_switch(tl_vp *vp, tl_thread *cur, tl_thread *next, int exiting)
{
    tl_switch_to(vp, cur, next, exiting);
}

void tl_sched_park_to(tl_thread *self, unsigned kind, void *arg, tl_thread *next)
{
    tl_vp *vp = self->vp;
    self->state = TS_BLOCKED;
    vp->post_kind = kind;
    vp->post_thread = self;
    vp->post_arg = arg;
    tl_switch_to(vp, self, next, 0);
}

void tl_sched_park(tl_thread *self, unsigned kind, void *arg)
{
    tl_vp *vp = self->vp;
    tl_thread *next = tl_sched_pick(vp, 1, 0);
    if (!next)
        next = &vp->sched;
    tl_sched_park_to(self, kind, arg, next);
}

/* ---- making threads ready -------------------------------------------- */

static tl_vp *external_target(void)
{
    unsigned n = tl_rt.nvps;
    unsigned start = atomic_fetch_add_explicit(&tl_rt.rr, 1, RLX);
    for (unsigned i = 0; i < n; i++) {
        tl_vp *v = tl_rt.vps[(start + i) % n];
        if (atomic_load_explicit(&v->state, RLX) == VP_SLEEPING)
            return v;
    }
    return tl_rt.vps[start % n];
}

void tl_sched_inbox_push(tl_vp *target, tl_thread *t)
{
    tl_thread *h = atomic_load_explicit(&target->inbox, RLX);
    do {
        t->link = h;
    } while (!atomic_compare_exchange_weak_explicit(&target->inbox, &h, t, SEQ, RLX));
    /* Dekker with vp_idle: it stores SLEEPING, then reads the inbox */
    if (atomic_load_explicit(&target->state, SEQ) == VP_SLEEPING)
        tl_vp_wake(target);
}

void tl_sched_push_new(tl_vp *vp, tl_thread *t)
{
    if (TL_UNLIKELY(!vp)) {
        tl_sched_inbox_push(external_target(), t);
        return;
    }
    tl_deque_push(&vp->dq, t);
    tl_sched_notify();
}

void tl_sched_ready(tl_vp *vp, tl_thread *t, int handoff)
{
    if (TL_UNLIKELY(t->bound_vp >= 0)) {
        if (vp && (int)vp->id == t->bound_vp)
            tl_runq_push(vp, t);
        else
            tl_sched_inbox_push(tl_rt.vps[t->bound_vp], t);
        return;
    }
    if (TL_UNLIKELY(!vp)) {
        tl_sched_inbox_push(external_target(), t);
        return;
    }
    if (handoff) {
        /* only the owner stores non-NULL here; thieves only swap it out */
        tl_thread *old = NULL;
        if (atomic_load_explicit(&vp->next, RLX))
            old = atomic_exchange_explicit(&vp->next, t, ACQREL);
        else
            atomic_store_explicit(&vp->next, t, REL);
        if (old)
            tl_deque_push(&vp->dq, old);
    } else {
        tl_deque_push(&vp->dq, t);
    }
    tl_sched_notify();
}

void tl_sched_enqueue_yielder(tl_vp *vp, tl_thread *t)
{
    if (t->bound_vp < 0 && tl_rt.nvps > 1 &&
        (atomic_load_explicit(&tl_rt.nsleeping, RLX) | atomic_load_explicit(&tl_rt.nspinning, RLX))) {
        /* some VP is idle: let it steal the yielder */
        tl_deque_push(&vp->dq, t);
        tl_sched_notify();
        return;
    }
    tl_runq_push(vp, t);
}

void tl_sched_run_post(tl_vp *vp)
{
    unsigned kind = vp->post_kind;
    tl_thread *p = vp->post_thread;
    void *arg = vp->post_arg;
    vp->post_kind = POST_NONE;
    switch (kind) {
    case POST_NONE:
        break;
    case POST_YIELD:
        tl_sched_enqueue_yielder(vp, p);
        break;
    case POST_UNLOCK:
        tl_spin_unlock(arg);
        break;
    case POST_JOIN:
        tl_thread_post_join(vp, p, arg);
        break;
    case POST_EXIT:
        tl_thread_post_exit(vp, p, 0);
        break;
    case POST_EXIT_HANDOFF:
        tl_thread_post_exit(vp, p, 1);
        break;
    case POST_DEP_WAIT:
        tl_dep_post_wait(vp, p);
        break;
    case POST_SLEEP:
        tl_timer_add(vp, p, (uint64_t)(uintptr_t)arg);
        break;
    case POST_WD_WAIT:
        tl_wd_post_wait(vp, p, arg);
        break;
    default:
        tl_ult_die("threadlab-ult: bad post action %u", kind);
    }
}

/* ---- picking ------------------------------------------------------------- */

static void drain_inbox(tl_vp *vp)
{
    tl_thread *l = atomic_exchange_explicit(&vp->inbox, NULL, ACQ);
    tl_thread *rev = NULL;
    while (l) { /* LIFO -> FIFO */
        tl_thread *n = l->link;
        l->link = rev;
        rev = l;
        l = n;
    }
    int pushed = 0;
    while (rev) {
        tl_thread *n = rev->link;
        if (rev->bound_vp >= 0) {
            tl_runq_push(vp, rev);
        } else {
            tl_deque_push(&vp->dq, rev);
            pushed++;
        }
        rev = n;
    }
    if (pushed > 1)
        tl_sched_notify();
}

/* Other VPs are idle and our private queue holds several threads: move
 * half of them to the deque, where they can be stolen. */
static void publish_runq(tl_vp *vp)
{
    size_t n = vp->runq_len / 2;
    tl_thread *keep = NULL, *keep_tail = NULL;
    size_t kept = 0;
    while (n && vp->runq_head) {
        tl_thread *t = tl_runq_pop(vp);
        if (t->bound_vp >= 0) {
            t->link = NULL;
            if (keep_tail)
                keep_tail->link = t;
            else
                keep = t;
            keep_tail = t;
            kept++;
            continue;
        }
        tl_deque_push(&vp->dq, t);
        n--;
    }
    if (keep) { /* bound threads back at the head, in order */
        keep_tail->link = vp->runq_head;
        vp->runq_head = keep;
        if (!vp->runq_tail)
            vp->runq_tail = keep_tail;
        vp->runq_len += kept;
    }
    tl_sched_notify();
}

static tl_thread *pick_periodic(tl_vp *vp)
{
    if (atomic_load_explicit(&vp->inbox, RLX))
        drain_inbox(vp);
    if (vp->ntimers)
        tl_timers_fire(vp, tl_now_ns());
    if (vp->runq_len > 1 && tl_rt.nvps > 1 && atomic_load_explicit(&tl_rt.nsleeping, RLX))
        publish_runq(vp);
    return tl_runq_pop(vp);
}

static inline tl_thread *pick_local(tl_vp *vp)
{
    tl_thread *t;
    if (atomic_load_explicit(&vp->next, RLX)) {
        t = atomic_exchange_explicit(&vp->next, NULL, ACQ);
        if (t)
            return t;
    }
    if (tl_deque_size_hint(&vp->dq) > 0) {
        t = tl_deque_take(&vp->dq);
        if (t)
            return t;
    }
    return tl_runq_pop(vp);
}

static tl_thread *steal_work(tl_vp *vp, int take_next)
{
    unsigned n = tl_rt.nvps;
    if (n == 1)
        return NULL;
    vp->rng ^= vp->rng << 13;
    vp->rng ^= vp->rng >> 7;
    vp->rng ^= vp->rng << 17;
    unsigned start = (unsigned)(vp->rng % n);
    for (unsigned i = 0; i < n; i++) {
        tl_vp *v = tl_rt.vps[(start + i) % n];
        if (v == vp)
            continue;
        tl_thread *t;
        int tries = 0;
        do {
            t = tl_deque_steal(&v->dq);
        } while (t == TL_DEQUE_ABORT && ++tries < 8);
        if (t == TL_DEQUE_ABORT)
            t = NULL;
        if (!t && take_next && atomic_load_explicit(&v->next, RLX))
            t = atomic_exchange_explicit(&v->next, NULL, ACQ);
        if (t) {
            TL_OWNER_INC(vp->n_steals, 1);
            return t;
        }
    }
    return NULL;
}

tl_thread *tl_sched_pick(tl_vp *vp, int steal, int from_sched)
{
    tl_thread *t;
    if (TL_UNLIKELY((++vp->tick & 31) == 0)) {
        t = pick_periodic(vp);
        if (t)
            return t;
    }
    t = pick_local(vp);
    if (TL_LIKELY(t != NULL))
        return t;
    if (atomic_load_explicit(&vp->inbox, RLX)) {
        drain_inbox(vp);
        if ((t = pick_local(vp)))
            return t;
    }
    if (vp->ntimers && tl_timers_fire(vp, tl_now_ns())) {
        if ((t = pick_local(vp)))
            return t;
    }
    if (!from_sched && atomic_load_explicit(&vp->wd_inbox, RLX))
        return &vp->sched;
    if (steal)
        return steal_work(vp, steal > 1);
    return NULL;
}

int tl_sched_has_work(tl_vp *vp)
{
    if (atomic_load_explicit(&vp->next, SEQ) || vp->runq_head ||
        atomic_load_explicit(&vp->inbox, SEQ) || atomic_load_explicit(&vp->wd_inbox, SEQ))
        return 1;
    if (atomic_load_explicit(&vp->dq.bottom, SEQ) > atomic_load_explicit(&vp->dq.top, SEQ))
        return 1;
    if (vp->ntimers && tl_timers_next(vp) <= tl_now_ns())
        return 1;
    for (unsigned i = 0; i < tl_rt.nvps; i++) {
        tl_vp *v = tl_rt.vps[i];
        if (v == vp)
            continue;
        if (atomic_load_explicit(&v->dq.bottom, SEQ) > atomic_load_explicit(&v->dq.top, SEQ) ||
            atomic_load_explicit(&v->next, SEQ))
            return 1;
    }
    return 0;
}

/* ---- yield ------------------------------------------------------------------ */

void tl_ult_yield(void)
{
    tl_vp *vp = tl_vp_self_fast();
    if (TL_UNLIKELY(!vp)) {
        tl_sched_yield_kernel();
        return;
    }
    tl_thread *cur = vp->current;
    if (TL_UNLIKELY(!cur))
        return;
    tl_thread *next;
    if (TL_LIKELY((++vp->tick & 31) != 0 && vp->runq_head &&
                  !atomic_load_explicit(&vp->next, RLX) && tl_deque_size_hint(&vp->dq) <= 0 &&
                  !atomic_load_explicit(&vp->inbox, RLX))) {
        /* the common case of yielding threads: the next yielder in line */
        next = tl_runq_pop(vp);
    } else {
        vp->tick--; /* tl_sched_pick counts it */
        next = tl_sched_pick(vp, 0, 0);
        if (!next)
            return;
    }
    if (TL_LIKELY(tl_rt.nvps == 1 || !(atomic_load_explicit(&tl_rt.nsleeping, RLX) |
                                       atomic_load_explicit(&tl_rt.nspinning, RLX))) &&
        (cur->bound_vp < 0 || cur->bound_vp == (int)vp->id)) {
        /* The private run queue is touched by this VP only, and this VP
         * pops nothing before the switch below has saved cur: it may be
         * queued already, which saves the post action. */
        tl_runq_push(vp, cur);
    } else {
        vp->post_kind = POST_YIELD;
        vp->post_thread = cur;
    }
    tl_switch_to(vp, cur, next, 0);
}
