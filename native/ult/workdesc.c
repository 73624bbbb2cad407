/*
 * workdesc.c - work descriptors and parallel loops (NTLib, after the
 * NanosCompiler's single-level parallel loops).
 *
 * A work descriptor is a function, its argument and a number of parts.
 * The caller (the "master") copies a share {descriptor, part id} into the
 * work-descriptor slot of VP (id mod nvps) for every part that is not its
 * own, wakes that VP if it sleeps, executes its own parts, then claims any
 * share no VP has started, and finally waits for the parts still running.
 * A VP finds its shares when it schedules or idles and executes them
 * directly on its scheduler context: no ULT, no stack, no queue. Each body
 * computes its chunk from (id, nparts), so the distribution costs one
 * atomic exchange per VP.
 *
 * Lifetime: the descriptor is reference counted (the master plus one per
 * share sitting in a slot), since a share can stay in a busy VP's slot
 * after the master claimed and finished it. Each share is executed exactly
 * once: whoever wins the CAS on its claimed flag.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <sched.h>

#define WD_DONE ((uintptr_t)1)

struct tlu_wd;

struct tlu_wd_share {
    struct tlu_wd_share *next;
    struct tlu_wd *wd;
    unsigned id;
    _Atomic int claimed;
};

struct tlu_wd {
    tl_ult_wd_fn fn;
    void *arg;
    unsigned nparts;
    _Atomic unsigned remaining; /* parts not finished */
    _Atomic unsigned refs;      /* master + shares in VP slots */
    _Atomic uintptr_t waiter;   /* 0, WD_DONE or the parked master */
    struct tlu_wd_share shares[];
};

static int claim(struct tlu_wd_share *s)
{
    int z = 0;
    return atomic_load_explicit(&s->claimed, RLX) == 0 &&
           atomic_compare_exchange_strong_explicit(&s->claimed, &z, 1, ACQREL, RLX);
}

static void run_share(tlu_vp *vp, struct tlu_wd_share *s)
{
    struct tlu_wd *wd = s->wd;
    wd->fn(s->id, wd->nparts, wd->arg);
    if (atomic_fetch_sub_explicit(&wd->remaining, 1, ACQREL) == 1) {
        uintptr_t w = atomic_exchange_explicit(&wd->waiter, WD_DONE, ACQREL);
        if (w > WD_DONE)
            tlu_sched_ready(vp, (tlu_thread *)w, 1);
    }
}

static void drop_ref(struct tlu_wd *wd)
{
    if (atomic_fetch_sub_explicit(&wd->refs, 1, ACQREL) == 1)
        free(wd);
}

void tlu_wd_process(tlu_vp *vp)
{
    struct tlu_wd_share *l = atomic_exchange_explicit(&vp->wd_inbox, NULL, ACQ);
    struct tlu_wd_share *rev = NULL;
    while (l) {
        struct tlu_wd_share *n = l->next;
        l->next = rev;
        rev = l;
        l = n;
    }
    while (rev) {
        struct tlu_wd_share *n = rev->next;
        struct tlu_wd *wd = rev->wd;
        if (claim(rev))
            run_share(vp, rev);
        drop_ref(wd);
        rev = n;
    }
}

void tlu_wd_post_wait(tlu_vp *vp, tlu_thread *t, void *p)
{
    struct tlu_wd *wd = p;
    uintptr_t z = 0;
    if (!atomic_compare_exchange_strong_explicit(&wd->waiter, &z, (uintptr_t)t, ACQREL, ACQ))
        tlu_sched_ready(vp, t, 1); /* finished meanwhile */
}

static void slot_push(tlu_vp *target, struct tlu_wd_share *s)
{
    struct tlu_wd_share *h = atomic_load_explicit(&target->wd_inbox, RLX);
    do {
        s->next = h;
    } while (!atomic_compare_exchange_weak_explicit(&target->wd_inbox, &h, s, SEQ, RLX));
    if (atomic_load_explicit(&target->state, SEQ) != VP_RUNNING)
        tlu_vp_kick(target);
}

/* How long a ULT master spins for the last parts before it parks. */
#define TLU_WD_SPIN_NS 3000u

/* Spins while parts are running and the master's VP has nothing else to
 * run (and VPs may spin at all): 1 once they all finished. */
static int wd_spin(tlu_vp *vp, struct tlu_wd *wd)
{
    if (!tlu_rt.cfg.spin_us)
        return 0;
    uint64_t until = 0;
    for (unsigned k = 1;; k++) {
        if (atomic_load_explicit(&wd->remaining, ACQ) == 0)
            return 1;
        tl_cpu_relax();
        if (k % 64)
            continue;
        if (tlu_sched_has_own_work(vp))
            return 0;
        uint64_t now = tlu_now_ns();
        if (!until)
            until = now + TLU_WD_SPIN_NS;
        else if (now >= until)
            return 0;
    }
}

int tl_ult_workdesc_run(tl_ult_wd_fn fn, void *arg, unsigned nparts)
{
    if (!tlu_rt.initialized)
        return EAGAIN;
    if (!fn)
        return EINVAL;
    unsigned n = tlu_rt.nvps;
    if (!nparts)
        nparts = n;
    struct tlu_wd *wd = malloc(sizeof *wd + (size_t)nparts * sizeof(struct tlu_wd_share));
    if (!wd)
        return ENOMEM;
    tlu_vp *vp = tlu_vp_self();
    unsigned me = vp ? vp->id : n; /* n: an external caller owns no part */
    unsigned remote = 0;
    wd->fn = fn;
    wd->arg = arg;
    wd->nparts = nparts;
    for (unsigned i = 0; i < nparts; i++) {
        wd->shares[i].wd = wd;
        wd->shares[i].id = i;
        wd->shares[i].next = NULL;
        atomic_init(&wd->shares[i].claimed, 0);
        if (i % n != me)
            remote++;
    }
    atomic_init(&wd->remaining, nparts);
    atomic_init(&wd->refs, 1 + remote);
    atomic_init(&wd->waiter, 0);

    for (unsigned i = 0; i < nparts; i++)
        if (i % n != me)
            slot_push(tlu_rt.vps[i % n], &wd->shares[i]);
    /* our own parts, then whatever nobody has started */
    /* a ULT master could move to another VP inside a body: re-read vp */
    tlu_thread *self = vp ? vp->current : NULL;
    for (unsigned i = 0; i < nparts; i++)
        if (i % n == me && claim(&wd->shares[i]))
            run_share(self ? self->vp : vp, &wd->shares[i]);
    for (unsigned i = 0; i < nparts; i++)
        if (claim(&wd->shares[i]))
            run_share(self ? self->vp : vp, &wd->shares[i]);

    if (atomic_load_explicit(&wd->remaining, ACQ) != 0) {
        if (self) {
            /* the parts left usually end within a few cache-line transfers:
             * parked, the master would be woken through its VP's inbox and
             * a switch (a combined dynamic loop of 2 threads: 1.7-1.8 us
             * per region parked at once, TLU_WD_SPIN_NS spun first) */
            if (!wd_spin(self->vp, wd))
                tlu_sched_park(self, POST_WD_WAIT, wd);
        } else {
            /* VP or external context: the parts left are running now */
            for (unsigned k = 0; atomic_load_explicit(&wd->remaining, ACQ) != 0; k++) {
                tl_cpu_relax();
                if (k % 128 == 127)
                    tlu_sched_yield_kernel();
            }
        }
    }
    drop_ref(wd);
    return 0;
}

void tl_ult_static_chunk(int64_t begin, int64_t end, unsigned id, unsigned nparts, int64_t *lo,
                         int64_t *hi)
{
    int64_t n = end > begin ? end - begin : 0;
    int64_t q = n / (int64_t)nparts, r = n % (int64_t)nparts;
    int64_t i = (int64_t)id;
    *lo = begin + i * q + (i < r ? i : r);
    *hi = *lo + q + (i < r ? 1 : 0);
}

struct pfor {
    int64_t begin, end;
    tl_ult_for_fn body;
    void *arg;
};

static void pfor_part(unsigned id, unsigned nparts, void *p)
{
    struct pfor *f = p;
    int64_t lo, hi;
    tl_ult_static_chunk(f->begin, f->end, id, nparts, &lo, &hi);
    if (lo < hi)
        f->body(lo, hi, f->arg);
}

int tl_ult_parallel_for(int64_t begin, int64_t end, tl_ult_for_fn body, void *arg)
{
    if (!body)
        return EINVAL;
    if (end <= begin)
        return 0;
    struct pfor f = {begin, end, body, arg};
    return tl_ult_workdesc_run(pfor_part, &f, 0);
}
