/*
 * vp.c - virtual processors: kernel threads, the scheduler loop, and the
 * idle protocol.
 *
 * Idle protocol (after Go's findrunnable/wakep):
 *  1. A VP that finds nothing to run spins for cfg.spin_us, polling the
 *     queues (its own, then stealing), counted in tlu_rt.nspinning and
 *     flagged in its own `spinning`. Every idle VP spins (as libgomp's
 *     idle threads do): with at most half of them, as Go does, the second
 *     of two VPs slept whenever the first idled, and a team thread pushed
 *     to it waited for a futex wake-up, or was taken by the other VP and
 *     ran after its partner instead of beside it.
 *  2. Then it sleeps: it reads its futex word wake_seq, stores
 *     state = SLEEPING and increments tlu_rt.nsleeping (seq_cst), checks all
 *     queues once more, and calls futex_wait(wake_seq, seen) with a timeout
 *     at its earliest timer.
 *  3. Whoever publishes work (tlu_sched_notify after a push; a full fence
 *     orders the push before reading the counters) wakes one sleeper if no
 *     VP is spinning: it claims a SLEEPING VP with a CAS to RUNNING, bumps
 *     its wake_seq and futex_wakes it. Pushing to a specific VP's inbox
 *     wakes that VP.
 * Lost wake-ups are excluded by the Dekker pattern of steps 2 and 3
 * (store, full barrier, load on both sides) plus the futex value check: a
 * wake between the read of wake_seq and futex_wait makes futex_wait return
 * at once.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "threadlab/thread_stack.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__thread tlu_vp *tlu_tls_vp __attribute__((tls_model("initial-exec")));

/* Not inlinable and not pure (the asm): a compiler must not reuse the
 * value, or the address of the TLS block, across a context switch. */
TL_NOINLINE tlu_vp *tlu_vp_self(void)
{
    tlu_vp *vp = tlu_tls_vp;
    __asm__ volatile("" : "+r"(vp));
    return vp;
}

void tlu_vp_set_self(tlu_vp *vp)
{
    tlu_tls_vp = vp;
}

uint64_t tlu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Claims vp if it sleeps; returns 1 if this call woke it. */
static int wake_if_sleeping(tlu_vp *vp)
{
    uint32_t s = VP_SLEEPING;
    if (atomic_load_explicit(&vp->state, RLX) != VP_SLEEPING ||
        !atomic_compare_exchange_strong_explicit(&vp->state, &s, VP_RUNNING, SEQ, RLX))
        return 0;
    atomic_fetch_sub_explicit(&tlu_rt.nsleeping, 1, RLX);
    atomic_fetch_add_explicit(&vp->wake_seq, 1, SEQ);
    tlu_futex_wake(&vp->wake_seq, 1);
    return 1;
}

void tlu_vp_wake(tlu_vp *vp)
{
    wake_if_sleeping(vp);
}

void tlu_vp_kick(tlu_vp *vp)
{
    if (wake_if_sleeping(vp))
        return;
    if (atomic_load_explicit(&vp->state, SEQ) == VP_STOPPED) {
        atomic_fetch_add_explicit(&vp->wake_seq, 1, SEQ);
        tlu_futex_wake(&vp->wake_seq, 1);
    }
}

void tlu_vp_wake_one(void)
{
    static _Atomic unsigned rotor;
    unsigned n = tlu_rt.nvps;
    unsigned start = atomic_fetch_add_explicit(&rotor, 1, RLX);
    for (unsigned i = 0; i < n; i++)
        if (wake_if_sleeping(tlu_rt.vps[(start + i) % n]))
            return;
}

/* Sleeps on the VP's futex word until woken or its earliest timer. */
static void vp_sleep(tlu_vp *vp, uint32_t seq)
{
    uint64_t timeout = 0;
    if (vp->ntimers) {
        uint64_t next = tlu_timers_next(vp), now = tlu_now_ns();
        timeout = next > now ? next - now : 1;
    }
    TLU_OWNER_INC(vp->n_sleeps, 1);
    tlu_futex_wait(&vp->wake_seq, seq, timeout);
}

/* VPs that end at finalize: all but VP 0, which runs tl_ult_finalize,
 * unless VP 0 is an internal thread too (tl_ult_config.external). */
static int vp_ends(const tlu_vp *vp)
{
    return vp->id != 0 || tlu_rt.external;
}

/* Returns 1 when the VP should stop (finalize), 0 to look for work again. */
static int vp_idle(tlu_vp *vp)
{
    if (tlu_vp_must_stop(vp))
        return 0; /* sched_loop stops it */
    int stopping = atomic_load_explicit(&tlu_rt.stopping, ACQ) && vp_ends(vp);
    if (stopping && !tlu_sched_has_work(vp, 0))
        return 1;

    /* 1. spin */
    if (tlu_rt.cfg.spin_us) {
        atomic_fetch_add_explicit(&tlu_rt.nspinning, 1, SEQ);
        atomic_store_explicit(&vp->spinning, 1, RLX);
        uint64_t end = tlu_now_ns() + (uint64_t)tlu_rt.cfg.spin_us * 1000u;
        int found = 0;
        /* The poll of its own queues is what a thread woken into this VP's
         * inbox waits for: one pause apart (25 ns on this project's AMD
         * machine: 8 of them and a clock read per poll made every wake-up
         * wait 115 ns more on average). The other VPs' queues, whose lines
         * their owners write, every 16th poll; the clock every 64th. */
        for (;;) {
            uint32_t polls = ++vp->polls;
            if (tlu_sched_has_own_work(vp) || ((polls & 15) == 0 && tlu_sched_has_work(vp, 1))) {
                found = 1;
                break;
            }
            tl_cpu_relax();
            if ((polls & 63) == 0) {
                atomic_store_explicit(&vp->beat, atomic_load_explicit(&vp->beat, RLX) + 1, RLX);
                if (tlu_now_ns() >= end)
                    break;
            }
        }
        atomic_store_explicit(&vp->spinning, 0, RLX);
        unsigned before = atomic_fetch_sub_explicit(&tlu_rt.nspinning, 1, SEQ);
        if (found) {
            /* the last spinner leaving: if more work is visible than this
             * VP will take, get someone else looking */
            if (before == 1)
                tlu_sched_notify();
            return 0;
        }
    }

    /* 2. sleep */
    uint32_t seq = atomic_load_explicit(&vp->wake_seq, SEQ);
    atomic_store_explicit(&vp->state, VP_SLEEPING, SEQ);
    atomic_fetch_add_explicit(&tlu_rt.nsleeping, 1, SEQ);
    stopping = atomic_load_explicit(&tlu_rt.stopping, SEQ) && vp_ends(vp);
    int work = tlu_sched_has_work(vp, 0) || tlu_vp_must_stop(vp);
    if (!work && !stopping) {
        vp_sleep(vp, seq);
    }
    uint32_t s = VP_SLEEPING;
    if (atomic_compare_exchange_strong_explicit(&vp->state, &s, VP_RUNNING, SEQ, RLX))
        atomic_fetch_sub_explicit(&tlu_rt.nsleeping, 1, RLX);
    return stopping && !work;
}

int tlu_vp_polling(tlu_vp *self, tlu_vp *v)
{
    if (!atomic_load_explicit(&v->spinning, RLX))
        return 0;
    uint32_t beat = atomic_load_explicit(&v->beat, RLX);
    struct tlu_vp_seen *seen = &self->seen[v->id];
    if (beat != seen->beat) {
        seen->beat = beat;
        seen->polls = self->polls;
        return 1;
    }
    return self->polls - seen->polls < 256;
}

int tlu_vp_waited(tlu_vp *self, tlu_vp *v, int holds)
{
    /* idle VPs that do not spin do not poll: the polls would not move */
    if (!tlu_rt.cfg.spin_us)
        return holds;
    struct tlu_vp_seen *seen = &self->seen[v->id];
    if (!holds || !seen->waiting) {
        seen->waiting = (uint32_t)holds;
        seen->waiting_polls = self->polls;
        return 0;
    }
    return self->polls - seen->waiting_polls >= 64;
}

/* ---- stopped VPs (tl_ult_set_active_vps) -------------------------------- */

tlu_vp *tlu_vp_active_target(tlu_vp *vp)
{
    unsigned n = atomic_load_explicit(&tlu_rt.active, RLX);
    unsigned i = vp ? vp->fwd_rr++ : 0;
    tlu_vp *t = tlu_rt.vps[i % n];
    return t == vp ? tlu_rt.vps[0] : t;
}

/* Gives every thread this VP holds that another VP may run to the active
 * VPs (their inboxes); threads bound here stay in its run queue. */
static void forward_all(tlu_vp *vp)
{
    tlu_thread *keep = NULL, *keep_tail = NULL;
    size_t kept = 0;
    tlu_thread *t;
    tlu_thread *in = tlu_sched_inbox_take(vp, vp);
    while (in) {
        t = in;
        in = in->link;
        tlu_runq_push(vp, t);
    }
    if ((t = atomic_exchange_explicit(&vp->next, NULL, ACQ)))
        tlu_runq_push(vp, t);
    while ((t = tlu_deque_take(&vp->dq)))
        tlu_runq_push(vp, t);
    while ((t = tlu_runq_pop(vp))) {
        if (t->bound_vp == (int)vp->id) {
            t->link = NULL;
            if (keep_tail)
                keep_tail->link = t;
            else
                keep = t;
            keep_tail = t;
            kept++;
            continue;
        }
        tlu_sched_inbox_push(tlu_vp_active_target(vp), t);
    }
    vp->runq_head = keep;
    vp->runq_tail = keep_tail;
    vp->runq_len = kept;
}

/* Sleeps while the VP is told to stop and has nothing bound to it to run;
 * wakes for its timers (whose threads it then forwards) and for pushes to
 * its inbox. */
static void stopped_sleep(tlu_vp *vp)
{
    uint32_t seq = atomic_load_explicit(&vp->wake_seq, SEQ);
    atomic_store_explicit(&vp->state, VP_STOPPED, SEQ);
    if (tlu_vp_must_stop(vp) && !atomic_load_explicit(&vp->inbox, SEQ) &&
        !atomic_load_explicit(&tlu_rt.stopping, SEQ)) {
        vp_sleep(vp, seq);
    }
    atomic_store_explicit(&vp->state, VP_RUNNING, SEQ);
    if (vp->ntimers)
        tlu_timers_fire(vp, tlu_now_ns());
}

/* One round of a stopped VP: 1 when it ran a thread bound to it. */
static int stopped_round(tlu_vp *vp)
{
    forward_all(vp);
    tlu_thread *t = tlu_runq_pop(vp);
    if (t) {
        tlu_sched_switch(vp, &vp->sched, t, 0);
        return 1;
    }
    if (atomic_load_explicit(&tlu_rt.stopping, ACQ) && vp_ends(vp))
        return 0;
    stopped_sleep(vp);
    return 1;
}

static void sched_loop(tlu_vp *vp)
{
    for (;;) {
        if (vp->post_kind)
            tlu_sched_run_post(vp);
        if (TLU_UNLIKELY(tlu_vp_must_stop(vp))) {
            if (stopped_round(vp) || !vp_ends(vp) || tlu_sched_has_work(vp, 0))
                continue;
            return;
        }
        if (atomic_load_explicit(&vp->wd_inbox, RLX))
            tlu_wd_process(vp);
        tlu_thread *t = tlu_sched_pick(vp, 2, 1);
        if (t) {
            tlu_sched_switch(vp, &vp->sched, t, 0);
            continue;
        }
        if (vp_idle(vp))
            return;
    }
}

/* VP 0's scheduler runs on its own stack (the kernel stack belongs to the
 * primordial ULT); it never stops: finalize runs on VP 0. */
void tlu_vp_sched_entry(void *p)
{
    tlu_vp *vp = p;
    tlu_san_finish_switch(&vp->sched);
    sched_loop(vp);
    tlu_die("threadlab-ult: VP 0 scheduler returned");
}

static void stack_of_current_thread(char **lo, uint32_t *size)
{
    pthread_attr_t a;
    void *addr = NULL;
    size_t sz = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstack(&a, &addr, &sz);
        pthread_attr_destroy(&a);
    }
    *lo = addr;
    *size = sz > UINT32_MAX ? UINT32_MAX : (uint32_t)sz;
}

void tlu_vp_init_kernel_context(tlu_thread *t)
{
    stack_of_current_thread(&t->stack_lo, &t->stack_size);
#if TLU_TSAN
    t->tsan_fiber = __tsan_get_current_fiber();
#endif
}

unsigned tl_ult_set_vps_cpus(const cpu_set_t *cpus)
{
    unsigned set = 0;
    for (unsigned i = 0; i < tlu_rt.nvps; i++) {
        tlu_vp *vp = tlu_rt.vps[i];
        int tid = vp ? atomic_load_explicit(&vp->tid, RLX) : 0;
        if (tid > 0 && vp->cpu < 0 && sched_setaffinity(tid, sizeof *cpus, cpus) == 0)
            set++;
    }
    return set;
}

static void pin_self(tlu_vp *vp)
{
    if (vp->cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(vp->cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *vp_main(void *p)
{
    tlu_vp *vp = p;
    vp->own_tcb = tlu_read_tp();
    tlu_vp_set_self(vp);
    atomic_store_explicit(&vp->tid, (int)syscall(SYS_gettid), RLX);
    pin_self(vp);
    tlu_vp_init_kernel_context(&vp->sched);
    if (tlu_rt.cfg.stack_mode == TL_ULT_STACK_GUARD && tlu_rt.cfg.overflow_handler)
        tlu_stack_altstack_enter(&vp->altstack);
    sched_loop(vp);
    tlu_stack_altstack_leave(vp->altstack);
    vp->altstack = NULL;
    tlu_vp_set_self(NULL);
    return NULL;
}

int tlu_vp_start_all(void)
{
    for (unsigned i = tlu_rt.external ? 0 : 1; i < tlu_rt.nvps; i++) {
        tlu_vp *vp = tlu_rt.vps[i];
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, tl_thread_stack_size(&a, 1 << 20));
        int err = pthread_create(&vp->thread, &a, vp_main, vp);
        pthread_attr_destroy(&a);
        if (err) {
            atomic_store_explicit(&tlu_rt.stopping, 1, SEQ);
            for (unsigned j = tlu_rt.external ? 0 : 1; j < i; j++) {
                tlu_vp_kick(tlu_rt.vps[j]);
                pthread_join(tlu_rt.vps[j]->thread, NULL);
            }
            return err;
        }
    }
    return 0;
}

void tlu_vp_stop_all(void)
{
    atomic_store_explicit(&tlu_rt.stopping, 1, SEQ);
    unsigned first = tlu_rt.external ? 0 : 1;
    for (unsigned i = first; i < tlu_rt.nvps; i++) {
        tlu_vp *vp = tlu_rt.vps[i];
        /* a VP between its last check and futex_wait sees the new seq */
        atomic_fetch_add_explicit(&vp->wake_seq, 1, SEQ);
        tlu_futex_wake(&vp->wake_seq, 1);
    }
    for (unsigned i = first; i < tlu_rt.nvps; i++)
        pthread_join(tlu_rt.vps[i]->thread, NULL);
}

/* ---- the active VP count ------------------------------------------------- */

/* Sets the active count to allotted + lent (at most nvps), from the
 * watcher of an allocation and the ticker alike: whoever changed either
 * last sees its value applied. */
static void active_update(void)
{
    for (;;) {
        unsigned allotted = atomic_load_explicit(&tlu_rt.allotted, SEQ);
        unsigned lent = atomic_load_explicit(&tlu_rt.lent, SEQ);
        unsigned n = allotted + lent < tlu_rt.nvps ? allotted + lent : tlu_rt.nvps;
        unsigned old = atomic_load_explicit(&tlu_rt.active, SEQ);
        if (old != n) {
            if (!atomic_compare_exchange_strong_explicit(&tlu_rt.active, &old, n, SEQ, SEQ))
                continue;
            /* Both ways the affected VPs must look now: the ones that
             * resume are stopped on their futex, the ones that stop may
             * sleep idle. */
            unsigned lo = old < n ? old : n, hi = old < n ? n : old;
            for (unsigned i = lo; i < hi; i++)
                tlu_vp_kick(tlu_rt.vps[i]);
            tlu_preempt_active_changed(n);
        }
        if (atomic_load_explicit(&tlu_rt.allotted, SEQ) == allotted &&
            atomic_load_explicit(&tlu_rt.lent, SEQ) == lent)
            return;
    }
}

int tl_ult_set_active_vps(unsigned n)
{
    if (!tlu_rt.initialized)
        return EAGAIN;
    if (n == 0)
        return EINVAL;
    if (n > tlu_rt.nvps)
        n = tlu_rt.nvps;
    /* a new allotment ends the loans made under the previous one (the
     * ticker lends again if a thread still holds others back) */
    atomic_store_explicit(&tlu_rt.lent, 0, SEQ);
    atomic_store_explicit(&tlu_rt.allotted, n, SEQ);
    active_update();
    return 0;
}

int tlu_vp_lend(int delta)
{
    unsigned lent = atomic_load_explicit(&tlu_rt.lent, SEQ);
    do {
        if (delta > 0 ? atomic_load_explicit(&tlu_rt.allotted, SEQ) + lent >= tlu_rt.nvps : lent == 0)
            return 0;
    } while (!atomic_compare_exchange_weak_explicit(&tlu_rt.lent, &lent, delta > 0 ? lent + 1 : lent - 1, SEQ,
                                                    SEQ));
    active_update();
    return 1;
}

unsigned tl_ult_active_vps(void)
{
    /* the allotment, not the loans: a manager's watcher compares it with
     * the allocation it last applied */
    return tlu_rt.initialized ? atomic_load_explicit(&tlu_rt.allotted, RLX) : 0;
}

int tl_ult_vp_stopping(void)
{
    tlu_vp *vp = tlu_vp_self();
    return vp && tlu_vp_must_stop(vp);
}

int tl_ult_vp_wanted(void)
{
    tlu_vp *vp = tlu_vp_self_fast();
    return !vp || tlu_vp_must_stop(vp) || tlu_sched_has_work(vp, 0);
}

int tl_ult_safe_point(void)
{
    tlu_vp *vp = tlu_vp_self_fast();
    if (TLU_UNLIKELY(!vp))
        return 0;
    if (TLU_LIKELY(!tlu_vp_must_stop(vp))) {
        /* Threads queued privately behind the caller while VPs sit idle
         * (those just resumed: nobody steals from that queue) are offered
         * to them here; code with no safe point gets the ticker's signal
         * for it (preempt.c). */
        if (TLU_UNLIKELY(vp->runq_head != NULL) && vp->current) {
            if (tlu_idle_vps())
                tlu_sched_publish_runq(vp, vp->runq_len);
            /* A thread bound here (the program's main thread, an OpenMP
             * master that the caller, a worker, just released from a
             * barrier) cannot go to other VPs, so the caller does. Left
             * running, a worker that then spins in the program's code
             * for its master (NAS LU's pipeline) spins until a time
             * slice ends, or for good where no ticker looks. */
            tlu_thread *head = vp->runq_head;
            if (head && head->bound_vp == (int)vp->id && vp->current->bound_vp < 0)
                tlu_sched_give_way(vp);
        }
        return 0;
    }
    if (!vp->current)
        return 1;
    tl_ult_yield(); /* to the scheduler, which forwards the caller */
    return 0;
}
