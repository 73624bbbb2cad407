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

void tlu_sched_switch(tlu_vp *vp, tlu_thread *cur, tlu_thread *next, int exiting)
{
    tlu_switch_to(vp, cur, next, exiting);
}

void tlu_sched_park_to(tlu_thread *self, unsigned kind, void *arg, tlu_thread *next)
{
    tlu_vp *vp = self->vp;
    self->state = TS_BLOCKED;
    vp->post_kind = kind;
    vp->post_thread = self;
    vp->post_arg = arg;
    tlu_switch_to(vp, self, next, 0);
}

void tlu_sched_park(tlu_thread *self, unsigned kind, void *arg)
{
    tlu_vp *vp = self->vp;
    tlu_thread *next = tlu_sched_pick(vp, 1, 0);
    if (!next)
        next = &vp->sched;
    tlu_sched_park_to(self, kind, arg, next);
}

/* ---- making threads ready -------------------------------------------- */

/* VP 0 is the primordial thread's kernel thread, which may be blocked in
 * the kernel (a join, a read): work from external threads goes elsewhere
 * when there is an elsewhere. */
static tlu_vp *external_target(void)
{
    unsigned n = atomic_load_explicit(&tlu_rt.active, RLX);
    unsigned first = (n > 1 && !tlu_rt.external) ? 1 : 0;
    unsigned span = n - first;
    unsigned start = atomic_fetch_add_explicit(&tlu_rt.rr, 1, RLX);
    for (unsigned i = 0; i < span; i++) {
        tlu_vp *v = tlu_rt.vps[first + (start + i) % span];
        if (atomic_load_explicit(&v->state, RLX) == VP_SLEEPING)
            return v;
    }
    return tlu_rt.vps[first + start % span];
}

/* The inbox holds threads, and spawn requests (tl_ult_spawn_on) marked
 * by the low bit of their address; a request's link is its tl_private[0].
 * Only tlu_sched_inbox_take unmarks them: every other reader of an inbox
 * takes it through that. */
#define INBOX_SPAWN ((uintptr_t)1)

static inline int inbox_is_spawn(const tlu_thread *e)
{
    return ((uintptr_t)e & INBOX_SPAWN) != 0;
}

static inline tl_ult_spawn *inbox_spawn(tlu_thread *e)
{
    return (tl_ult_spawn *)((uintptr_t)e & ~INBOX_SPAWN);
}

static void inbox_push(tlu_vp *target, tlu_thread *e)
{
    tlu_thread *h = atomic_load_explicit(&target->inbox, RLX);
    do {
        if (inbox_is_spawn(e))
            inbox_spawn(e)->tl_private[0] = h;
        else
            e->link = h;
    } while (!atomic_compare_exchange_weak_explicit(&target->inbox, &h, e, SEQ, RLX));
    /* Dekker with vp_idle: it stores SLEEPING (or STOPPED), then reads the inbox */
    if (atomic_load_explicit(&target->state, SEQ) != VP_RUNNING)
        tlu_vp_kick(target);
}

void tlu_sched_inbox_push(tlu_vp *target, tlu_thread *t)
{
    inbox_push(target, t);
}

void tlu_sched_inbox_push_spawn(tlu_vp *target, tl_ult_spawn *s)
{
    inbox_push(target, (tlu_thread *)((uintptr_t)s | INBOX_SPAWN));
}

tlu_thread *tlu_sched_inbox_take(tlu_vp *from, tlu_vp *self)
{
    tlu_thread *l = atomic_exchange_explicit(&from->inbox, NULL, ACQ);
    for (tlu_thread **p = &l; *p; p = &(*p)->link) {
        if (inbox_is_spawn(*p)) {
            tl_ult_spawn *s = inbox_spawn(*p);
            tlu_thread *next = s->tl_private[0];
            *p = tlu_spawn_make(self, s);
            (*p)->link = next;
        }
    }
    return l;
}

void tlu_sched_push_new(tlu_vp *vp, tlu_thread *t)
{
    if (TLU_UNLIKELY(t->bound_vp >= 0)) {
        tlu_sched_ready(vp, t, 0); /* its VP's private queues */
        return;
    }
    if (TLU_UNLIKELY(!vp)) {
        tlu_sched_inbox_push(external_target(), t);
        return;
    }
    tlu_deque_push(&vp->dq, t);
    tlu_sched_notify();
}

void tlu_sched_ready(tlu_vp *vp, tlu_thread *t, int handoff)
{
    if (TLU_UNLIKELY(t->bound_vp >= 0)) {
        if (vp && (int)vp->id == t->bound_vp)
            tlu_runq_push(vp, t);
        else
            tlu_sched_inbox_push(tlu_rt.vps[t->bound_vp], t);
        return;
    }
    if (TLU_UNLIKELY(!vp)) {
        tlu_sched_inbox_push(external_target(), t);
        return;
    }
    if (handoff) {
        /* only the owner stores non-NULL here; thieves only swap it out */
        tlu_thread *old = NULL;
        if (atomic_load_explicit(&vp->next, RLX))
            old = atomic_exchange_explicit(&vp->next, t, ACQREL);
        else
            atomic_store_explicit(&vp->next, t, REL);
        if (old)
            tlu_deque_push(&vp->dq, old);
    } else {
        tlu_deque_push(&vp->dq, t);
    }
    tlu_sched_notify();
}

void tlu_sched_enqueue_yielder(tlu_vp *vp, tlu_thread *t)
{
    if (t->bound_vp < 0 && tlu_rt.nvps > 1 && tlu_idle_vps()) {
        /* some VP is idle: let it steal the yielder */
        tlu_deque_push(&vp->dq, t);
        tlu_sched_notify();
        return;
    }
    tlu_runq_push(vp, t);
}

void tlu_sched_run_post(tlu_vp *vp)
{
    unsigned kind = vp->post_kind;
    tlu_thread *p = vp->post_thread;
    void *arg = vp->post_arg;
    vp->post_kind = POST_NONE;
    switch (kind) {
    case POST_NONE:
        break;
    case POST_YIELD:
        tlu_sched_enqueue_yielder(vp, p);
        break;
    case POST_UNLOCK:
        tlu_spin_unlock(arg);
        break;
    case POST_JOIN:
        tlu_thread_post_join(vp, p, arg);
        break;
    case POST_EXIT:
        tlu_thread_post_exit(vp, p, 0);
        break;
    case POST_EXIT_HANDOFF:
        tlu_thread_post_exit(vp, p, 1);
        break;
    case POST_DEP_WAIT:
        tlu_dep_post_wait(vp, p);
        break;
    case POST_SLEEP:
        tlu_timer_add(vp, p, (uint64_t)(uintptr_t)arg);
        break;
    case POST_WD_WAIT:
        tlu_wd_post_wait(vp, p, arg);
        break;
    case POST_GIVE_WAY:
        tlu_deque_push(&vp->dq, p);
        tlu_sched_notify();
        break;
    default:
        tlu_die("threadlab-ult: bad post action %u", kind);
    }
}

/* ---- picking ------------------------------------------------------------- */

/* Moves the inbox to the VP's queues, oldest first; with `take`, returns
 * the oldest instead when another VP may run it (a thread woken into an
 * idle VP's inbox runs at once, without a push and a take of the deque's
 * fences). */
static tlu_thread *drain_inbox(tlu_vp *vp, int take)
{
    tlu_thread *l = tlu_sched_inbox_take(vp, vp);
    tlu_thread *rev = NULL;
    while (l) { /* LIFO -> FIFO */
        tlu_thread *n = l->link;
        l->link = rev;
        rev = l;
        l = n;
    }
    tlu_thread *got = NULL;
    if (take && rev && rev->bound_vp < 0) {
        got = rev;
        rev = rev->link;
        got->link = NULL;
    }
    int pushed = 0;
    while (rev) {
        tlu_thread *n = rev->link;
        if (rev->bound_vp >= 0) {
            tlu_runq_push(vp, rev);
        } else {
            tlu_deque_push(&vp->dq, rev);
            pushed++;
        }
        rev = n;
    }
    if (pushed > 1 || (got && pushed))
        tlu_sched_notify();
    return got;
}

/* Other VPs are idle and our private queue holds threads: move n of
 * them (bound ones excepted) to the deque, where they can be stolen;
 * returns how many moved. */
size_t tlu_sched_publish_runq(tlu_vp *vp, size_t n)
{
    size_t moved = 0;
    tlu_thread *keep = NULL, *keep_tail = NULL;
    size_t kept = 0;
    while (n && vp->runq_head) {
        tlu_thread *t = tlu_runq_pop(vp);
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
        tlu_deque_push(&vp->dq, t);
        n--;
        moved++;
    }
    if (keep) { /* bound threads back at the head, in order */
        keep_tail->link = vp->runq_head;
        vp->runq_head = keep;
        if (!vp->runq_tail)
            vp->runq_tail = keep_tail;
        vp->runq_len += kept;
    }
    if (moved)
        tlu_sched_notify();
    return moved;
}

/* The caller, an unbound thread, leaves its VP to the thread bound to it
 * at the head of its private queue (the program's main thread, released
 * from a barrier by the caller). It goes to the deque, not behind that
 * thread: any VP may take it there, and one that was waking up when the
 * caller looked for idle ones will. */
void tlu_sched_give_way(tlu_vp *vp)
{
    tlu_thread *cur = vp->current;
    tlu_thread *next = tlu_runq_pop(vp);
    vp->post_kind = POST_GIVE_WAY;
    vp->post_thread = cur;
    tlu_switch_to(vp, cur, next, 0);
}

static tlu_thread *pick_periodic(tlu_vp *vp)
{
    if (atomic_load_explicit(&vp->inbox, RLX))
        drain_inbox(vp, 0);
    if (vp->ntimers)
        tlu_timers_fire(vp, tlu_now_ns());
    if (vp->runq_len > 1 && tlu_rt.nvps > 1 && atomic_load_explicit(&tlu_rt.nsleeping, RLX))
        tlu_sched_publish_runq(vp, vp->runq_len / 2);
    return tlu_runq_pop(vp);
}

static inline tlu_thread *pick_local(tlu_vp *vp)
{
    tlu_thread *t;
    if (atomic_load_explicit(&vp->next, RLX)) {
        t = atomic_exchange_explicit(&vp->next, NULL, ACQ);
        if (t)
            return t;
    }
    if (tlu_deque_size_hint(&vp->dq) > 0) {
        t = tlu_deque_take(&vp->dq);
        if (t)
            return t;
    }
    return tlu_runq_pop(vp);
}

/* Takes the inbox of victim, a VP that may be busy in one long ULT or
 * blocked in the kernel: threads bound elsewhere go on to their VP. */
static tlu_thread *steal_inbox(tlu_vp *vp, tlu_vp *victim)
{
    tlu_thread *l = tlu_sched_inbox_take(victim, vp);
    tlu_thread *got = NULL;
    while (l) {
        tlu_thread *t = l;
        l = l->link;
        if (t->bound_vp >= 0 && t->bound_vp != (int)vp->id)
            tlu_sched_inbox_push(tlu_rt.vps[t->bound_vp], t);
        else if (t->bound_vp >= 0)
            tlu_runq_push(vp, t);
        else if (!got)
            got = t;
        else
            tlu_deque_push(&vp->dq, t);
    }
    return got;
}

/* Whether v, busy, holds a thread a thief may take once it has waited
 * (tlu_vp_waited): in its next slot, or in its inbox while it runs (a
 * sleeping VP was woken by the push and takes it itself). */
static int holds_for_thief(tlu_vp *v)
{
    return atomic_load_explicit(&v->next, SEQ) ||
           (atomic_load_explicit(&v->inbox, SEQ) && atomic_load_explicit(&v->state, SEQ) == VP_RUNNING);
}

static tlu_thread *steal_work(tlu_vp *vp, int take_next)
{
    unsigned n = tlu_rt.nvps;
    if (n == 1)
        return NULL;
    vp->rng ^= vp->rng << 13;
    vp->rng ^= vp->rng >> 7;
    vp->rng ^= vp->rng << 17;
    unsigned start = (unsigned)(vp->rng % n);
    for (unsigned i = 0; i < n; i++) {
        tlu_vp *v = tlu_rt.vps[(start + i) % n];
        /* a VP that idles polls its own queues: what is there, it runs
         * next. Taking it put the thief's threads and the one meant for
         * that VP together and left that VP idle (a team's two threads
         * then ran one after the other on one VP in 70-100% of the
         * iterations of omp.sync parallel and barrier). Unless it stopped
         * polling (tlu_vp_polling): then it is taken as from a busy VP */
        if (v == vp || tlu_vp_polling(vp, v))
            continue;
        tlu_thread *t;
        int tries = 0;
        do {
            t = tlu_deque_steal(&v->dq);
        } while (t == TLU_DEQUE_ABORT && ++tries < 8);
        if (t == TLU_DEQUE_ABORT)
            t = NULL;
        if (!t && take_next && tlu_vp_waited(vp, v, holds_for_thief(v))) {
            if (atomic_load_explicit(&v->next, RLX))
                t = atomic_exchange_explicit(&v->next, NULL, ACQ);
            if (!t && atomic_load_explicit(&v->inbox, RLX))
                t = steal_inbox(vp, v);
        }
        if (t) {
            TLU_OWNER_INC(vp->n_steals, 1);
            return t;
        }
    }
    return NULL;
}

tlu_thread *tlu_sched_pick(tlu_vp *vp, int steal, int from_sched)
{
    tlu_thread *t;
    if (TLU_UNLIKELY(tlu_vp_must_stop(vp)))
        return from_sched ? NULL : &vp->sched; /* the scheduler forwards and stops */
    if (TLU_UNLIKELY((++vp->tick & 31) == 0)) {
        t = pick_periodic(vp);
        if (t)
            return t;
    }
    t = pick_local(vp);
    if (TLU_LIKELY(t != NULL))
        return t;
    if (atomic_load_explicit(&vp->inbox, RLX)) {
        if ((t = drain_inbox(vp, 1)) || (t = pick_local(vp)))
            return t;
    }
    if (vp->ntimers && tlu_timers_fire(vp, tlu_now_ns())) {
        if ((t = pick_local(vp)))
            return t;
    }
    if (!from_sched && atomic_load_explicit(&vp->wd_inbox, RLX))
        return &vp->sched;
    if (steal)
        return steal_work(vp, steal > 1);
    return NULL;
}

int tlu_sched_has_own_work(tlu_vp *vp)
{
    /* runq_head is the owner's; the preemption ticker reads it too */
    return atomic_load_explicit(&vp->next, SEQ) || __atomic_load_n(&vp->runq_head, __ATOMIC_RELAXED) ||
           atomic_load_explicit(&vp->inbox, SEQ) ||
           atomic_load_explicit(&vp->wd_inbox, SEQ) ||
           atomic_load_explicit(&vp->dq.bottom, SEQ) > atomic_load_explicit(&vp->dq.top, SEQ);
}

int tlu_sched_has_work(tlu_vp *vp, int patient)
{
    if (tlu_sched_has_own_work(vp))
        return 1;
    if (vp->ntimers && tlu_timers_next(vp) <= tlu_now_ns())
        return 1;
    for (unsigned i = 0; i < tlu_rt.nvps; i++) {
        tlu_vp *v = tlu_rt.vps[i];
        /* what a polling VP holds is its own (steal_work) */
        if (v == vp || tlu_vp_polling(vp, v))
            continue;
        if (atomic_load_explicit(&v->dq.bottom, SEQ) > atomic_load_explicit(&v->dq.top, SEQ))
            return 1;
        /* the thread a busy VP runs next, or was given, is stealable once
         * it has waited (tlu_vp_waited); before a VP sleeps, at once: that
         * VP's running thread may be spinning for it (a user-level wait on
         * a flag), and a sleeping VP would never take it */
        int holds = holds_for_thief(v);
        if (patient ? tlu_vp_waited(vp, v, holds) : holds)
            return 1;
    }
    return 0;
}

/* ---- yield ------------------------------------------------------------------ */

/* tl_ult_yield on a VP: 1 when another thread ran, 0 when none was ready
 * (or the caller is the VP's scheduler) */
static int yield_on_vp(tlu_vp *vp)
{
    tlu_thread *cur = vp->current;
    if (TLU_UNLIKELY(!cur))
        return 0;
    tlu_thread *next;
    if (TLU_LIKELY((++vp->tick & 31) != 0 && vp->runq_head && !tlu_vp_must_stop(vp) &&
                  !atomic_load_explicit(&vp->next, RLX) && tlu_deque_size_hint(&vp->dq) <= 0 &&
                  !atomic_load_explicit(&vp->inbox, RLX))) {
        /* the common case of yielding threads: the next yielder in line */
        next = tlu_runq_pop(vp);
    } else {
        vp->tick--; /* tlu_sched_pick counts it */
        next = tlu_sched_pick(vp, 0, 0);
        if (!next)
            return 0;
    }
    if (TLU_LIKELY(tlu_rt.nvps == 1 || !(atomic_load_explicit(&tlu_rt.nsleeping, RLX) |
                                       atomic_load_explicit(&tlu_rt.nspinning, RLX))) &&
        (cur->bound_vp < 0 || cur->bound_vp == (int)vp->id)) {
        /* The private run queue is touched by this VP only, and this VP
         * pops nothing before the switch below has saved cur: it may be
         * queued already, which saves the post action. */
        tlu_runq_push(vp, cur);
    } else {
        vp->post_kind = POST_YIELD;
        vp->post_thread = cur;
    }
    tlu_switch_to(vp, cur, next, 0);
    return 1;
}

void tl_ult_yield(void)
{
    tlu_vp *vp = tlu_vp_self_fast();
    if (TLU_UNLIKELY(!vp))
        tlu_sched_yield_kernel();
    else
        yield_on_vp(vp);
}

int tl_ult_sched_yield(void)
{
    tlu_vp *vp = tlu_vp_self_fast();
    if (!vp || !yield_on_vp(vp))
        tlu_sched_yield_kernel();
    return 0;
}
