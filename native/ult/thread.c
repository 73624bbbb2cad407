/*
 * thread.c - ULT descriptors and life cycle: create, first dispatch,
 * join (including running a not-yet-started child on the joiner's stack),
 * detach, exit.
 *
 * Descriptors (128 bytes) come from a per-VP free list refilled in batches
 * from slabs; a stack is attached only when the thread first runs, so a
 * created-but-not-started thread costs 128 bytes and a thread joined
 * before it started may never get a stack at all.
 *
 * The join word: TLU_JOIN_NONE, TLU_JOIN_DETACHED, TLU_JOIN_EXITED, or the
 * address of the parked joiner. The joiner registers itself with a CAS
 * after its context is saved (POST_JOIN); the exiting thread publishes
 * TLU_JOIN_EXITED only after it has switched off its stack (POST_EXIT), so
 * whoever sees EXITED may free the descriptor and the stack is already
 * back in a cache. If a joiner is registered when the thread exits, the
 * exit switches straight to it (handoff, no queue).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <setjmp.h>
#include <string.h>

#define DESC_SLAB 256
#define DESC_CACHE_MAX 512
#define DESC_BATCH 64

/* ---- descriptors --------------------------------------------------- */

static int record_slab(void *s)
{
    if (tlu_rt.nslabs == tlu_rt.slabs_cap) {
        size_t cap = tlu_rt.slabs_cap ? 2 * tlu_rt.slabs_cap : 64;
        void **n = realloc(tlu_rt.slabs, cap * sizeof *n);
        if (!n)
            return ENOMEM;
        tlu_rt.slabs = n;
        tlu_rt.slabs_cap = cap;
    }
    tlu_rt.slabs[tlu_rt.nslabs++] = s;
    return 0;
}

struct desc_refill {
    tlu_vp *vp;
    tlu_thread *got;
};

static void desc_refill(void *arg);

static TL_NOINLINE tlu_thread *desc_alloc_slow(tlu_vp *vp)
{
    struct desc_refill r = {vp, NULL};
    tlu_slowpath(vp, desc_refill, &r);
    return r.got;
}

static void desc_refill(void *arg)
{
    struct desc_refill *r = arg;
    tlu_vp *vp = r->vp;
    tlu_thread *got = NULL;
    pthread_mutex_lock(&tlu_rt.lock);
    if (!tlu_rt.desc_global) {
        tlu_thread *slab = aligned_alloc(TL_CACHE_LINE, DESC_SLAB * sizeof(tlu_thread));
        if (slab && record_slab(slab) == 0) {
            memset(slab, 0, DESC_SLAB * sizeof(tlu_thread));
            for (int i = DESC_SLAB - 1; i >= 0; i--) {
                slab[i].link = tlu_rt.desc_global;
                tlu_rt.desc_global = &slab[i];
            }
            tlu_rt.desc_global_n += DESC_SLAB;
        } else {
            free(slab);
        }
    }
    got = tlu_rt.desc_global;
    if (got) {
        tlu_rt.desc_global = got->link;
        tlu_rt.desc_global_n--;
        for (int i = 0; vp && i < DESC_BATCH && tlu_rt.desc_global; i++) {
            tlu_thread *t = tlu_rt.desc_global;
            tlu_rt.desc_global = t->link;
            tlu_rt.desc_global_n--;
            t->link = vp->desc_free;
            vp->desc_free = t;
            vp->desc_nfree++;
        }
    }
    pthread_mutex_unlock(&tlu_rt.lock);
    r->got = got;
}

tlu_thread *tlu_desc_alloc(tlu_vp *vp)
{
    if (TLU_LIKELY(vp && vp->desc_free)) {
        tlu_thread *t = vp->desc_free;
        vp->desc_free = t->link;
        vp->desc_nfree--;
        return t;
    }
    return desc_alloc_slow(vp);
}

void tlu_desc_release(tlu_vp *vp, tlu_thread *t)
{
    /* under TSan the descriptor keeps its fiber for the next thread */
    if (TLU_LIKELY(vp)) {
        t->link = vp->desc_free;
        vp->desc_free = t;
        if (TLU_LIKELY(++vp->desc_nfree <= DESC_CACHE_MAX))
            return;
        pthread_mutex_lock(&tlu_rt.lock);
        while (vp->desc_nfree > DESC_CACHE_MAX / 2) {
            tlu_thread *x = vp->desc_free;
            vp->desc_free = x->link;
            vp->desc_nfree--;
            x->link = tlu_rt.desc_global;
            tlu_rt.desc_global = x;
            tlu_rt.desc_global_n++;
        }
        pthread_mutex_unlock(&tlu_rt.lock);
        return;
    }
    pthread_mutex_lock(&tlu_rt.lock);
    t->link = tlu_rt.desc_global;
    tlu_rt.desc_global = t;
    tlu_rt.desc_global_n++;
    pthread_mutex_unlock(&tlu_rt.lock);
}

void tlu_desc_finalize(void)
{
#if TLU_TSAN
    for (size_t s = 0; s < tlu_rt.nslabs; s++) {
        tlu_thread *slab = tlu_rt.slabs[s];
        for (int i = 0; i < DESC_SLAB; i++)
            if (slab[i].tsan_fiber && slab[i].tsan_fiber != __tsan_get_current_fiber())
                __tsan_destroy_fiber(slab[i].tsan_fiber);
    }
#endif
    for (size_t s = 0; s < tlu_rt.nslabs; s++)
        free(tlu_rt.slabs[s]);
    free(tlu_rt.slabs);
    tlu_rt.slabs = NULL;
    tlu_rt.nslabs = tlu_rt.slabs_cap = 0;
    tlu_rt.desc_global = NULL;
    tlu_rt.desc_global_n = 0;
}

/* ---- create -------------------------------------------------------- */

/* A new thread's descriptor, not yet runnable: no stack, no successor. */
static inline void desc_init(tlu_thread *t, tl_ult_fn fn, void *arg, tlu_stack_pool *pool, int detached,
                             int bound_vp, struct tl_ult_identity *ident)
{
    t->link = NULL;
    t->vp = NULL;
    t->fn = fn;
    t->arg = arg;
    t->stack_lo = NULL;
    t->stack_size = (uint32_t)pool->usable;
    t->state = TS_NEW;
    t->flags = 0;
    t->bound_vp = (int16_t)bound_vp;
    t->pool = pool;
    atomic_store_explicit(&t->join, detached ? TLU_JOIN_DETACHED : TLU_JOIN_NONE, RLX);
    t->successor = NULL;
    t->tls = NULL;
    t->inline_jb = NULL;
    t->local = NULL;
    t->ident = ident;
    t->wait_addr = NULL;
#if TLU_ASAN
    t->asan_fake = NULL;
#endif
}

/* The VP a thread placed on VP place is queued on first: that one, or an
 * active one when it must stop and the thread is not bound to it. */
static tlu_vp *placed_target(tlu_vp *vp, int place, int bound)
{
    tlu_vp *target = tlu_rt.vps[place];
    return !bound && tlu_vp_must_stop(target) ? tlu_vp_active_target(vp) : target;
}

int tlu_create(tl_ult_t *out, const tl_ult_attr *attr, tl_ult_fn fn, void *arg,
                     unsigned ndeps, tlu_thread *successor)
{
    if (TLU_UNLIKELY(!tlu_rt.initialized))
        return EAGAIN;
    if (TLU_UNLIKELY(!fn || ndeps > TLU_DEP_WAITING - 1))
        return EINVAL;
    tlu_stack_pool *pool = tlu_rt.default_pool;
    int detached = 0, place = TL_ULT_VP_ANY, bound = 0;
    struct tl_ult_identity *ident = NULL;
    if (attr) {
        int err;
        if (!(pool = tlu_stack_pool_of(attr->stack_size, &err)))
            return err;
        detached = attr->detached;
        place = attr->vp;
        bound = attr->bound;
        ident = attr->identity;
        if (TLU_UNLIKELY(place < TL_ULT_VP_ANY || place >= (int)tlu_rt.nvps))
            return EINVAL;
    }
    tlu_vp *vp = tlu_vp_self_fast();
    if (TLU_UNLIKELY(bound && place == TL_ULT_VP_ANY)) {
        if (!vp)
            return EINVAL;
        place = (int)vp->id;
    }
    tlu_thread *t = tlu_desc_alloc(vp);
    if (TLU_UNLIKELY(!t))
        return ENOMEM;
    desc_init(t, fn, arg, pool, detached, bound ? place : -1, ident);
    t->successor = successor;
    if (out)
        *out = t;
    if (vp)
        TLU_OWNER_INC(vp->n_created, 1);
    else
        atomic_fetch_add_explicit(&tlu_rt.ext_created, 1, RLX);
    if (ndeps) {
        /* not runnable until the counter drops to zero (dep.c) */
        atomic_store_explicit(&t->deps, ndeps | TLU_DEP_WAITING, REL);
        return 0;
    }
    atomic_store_explicit(&t->deps, 0, RLX);
    if (TLU_UNLIKELY(place != TL_ULT_VP_ANY) && (!vp || place != (int)vp->id)) {
        tlu_sched_inbox_push(placed_target(vp, place, bound), t);
        return 0;
    }
    tlu_sched_push_new(vp, t);
    return 0;
}

int tl_ult_create(tl_ult_t *thread, const tl_ult_attr *attr, tl_ult_fn fn, void *arg)
{
    return tlu_create(thread, attr, fn, arg, 0, NULL);
}

/* ---- spawn on the VP that runs it ----------------------------------- */

int tl_ult_spawn_on(tl_ult_spawn *req)
{
    if (TLU_UNLIKELY(!tlu_rt.initialized))
        return EAGAIN;
    const tl_ult_attr *a = &req->attr;
    if (TLU_UNLIKELY(!req->fn || !a->detached || a->vp < 0 || a->vp >= (int)tlu_rt.nvps))
        return EINVAL;
    tlu_vp *vp = tlu_vp_self_fast();
    tlu_vp *target = placed_target(vp, a->vp, a->bound);
    if (target == vp) {
        /* its own VP: nothing to save (a bound thread's VP is a->vp) */
        tl_ult_attr here = *a;
        here.vp = a->bound ? a->vp : TL_ULT_VP_ANY;
        return tlu_create(NULL, &here, req->fn, req->arg, 0, NULL);
    }
    int err;
    tlu_stack_pool *pool = tlu_stack_pool_of(a->stack_size, &err);
    if (!pool)
        return err;
    req->tl_private[1] = pool;
    tlu_sched_inbox_push_spawn(target, req);
    return 0;
}

tlu_thread *tlu_spawn_make(tlu_vp *vp, tl_ult_spawn *s)
{
    tlu_thread *t = tlu_desc_alloc(vp);
    if (TLU_UNLIKELY(!t))
        tlu_die("threadlab-ult: no memory for a thread posted with tl_ult_spawn_on to VP %u", vp->id);
    desc_init(t, s->fn, s->arg, s->tl_private[1], 1, s->attr.bound ? s->attr.vp : -1, s->attr.identity);
    TLU_OWNER_INC(vp->n_created, 1);
    atomic_store_explicit(&t->deps, 0, RLX);
    return t;
}

void tl_ult_attr_init(tl_ult_attr *attr)
{
    attr->stack_size = 0;
    attr->detached = 0;
    attr->vp = TL_ULT_VP_ANY;
    attr->bound = 0;
    attr->identity = NULL;
}

/* ---- run and exit -------------------------------------------------- */

/* Thread-local destructors, then the successor's dependence. Runs as the
 * finishing thread (it may still block). */
static void thread_finish(tlu_thread *t)
{
    if (t->tls)
        tlu_tls_run_destructors(t);
    tlu_thread *s = t->successor;
    if (s) {
        t->successor = NULL;
        tlu_dep_satisfy(t->vp, s);
    }
}

/* Inlined into thread_entry: a thread that returns from its function
 * leaves nothing on the return-stack buffer. */
static inline __attribute__((always_inline)) void thread_exit_inline(tlu_thread *self)
{
    thread_finish(self);
    tlu_vp *vp = self->vp;
    TLU_OWNER_INC(vp->n_exited, 1);
    self->state = TS_EXITED;
    unsigned kind = POST_EXIT;
    tlu_thread *next;
    uintptr_t w = atomic_load_explicit(&self->join, ACQ);
    tlu_thread *j = (tlu_thread *)w;
    if (TLU_JOIN_IS_THREAD(w) && (j->bound_vp < 0 || j->bound_vp == (int)vp->id)) {
        /* the joiner is parked and registered: run it now, on this VP */
        next = j;
        kind = POST_EXIT_HANDOFF;
    } else {
        next = tlu_sched_pick(vp, 1, 0);
        if (!next)
            next = &vp->sched;
    }
    vp->post_kind = kind;
    vp->post_thread = self;
    vp->post_arg = NULL;
    tlu_switch_to(vp, self, next, 1);
    tlu_die("threadlab-ult: exited thread %p resumed", (void *)self);
}

static TL_NOINLINE _Noreturn void thread_exit(tlu_thread *self)
{
    thread_exit_inline(self);
    __builtin_unreachable();
}

static void thread_entry(void *p)
{
    tlu_thread *self = p;
    tlu_san_finish_switch(self);
    tlu_vp *vp = self->vp;
    if (vp->post_kind)
        tlu_sched_run_post(vp);
    self->arg = self->fn(self->arg);
    thread_exit_inline(self);
}

void tlu_thread_prepare(tlu_vp *vp, tlu_thread *t)
{
    t->stack_lo = tlu_stack_get(vp, t->pool);
    t->stack_size = (uint32_t)t->pool->usable;
    if (tlu_stack_needs_canary(t->pool))
        t->flags |= TF_CANARY;
    tlu_ctx_init(&t->ctx, t->stack_lo, t->stack_size, thread_entry, t);
#if TLU_TSAN
    /* Reuse the descriptor's fiber: TSan then sees the new thread as a
     * continuation of the old one on that fiber (an extra happens-before
     * edge, the old one having exited). Frames of an exited thread stay on
     * the fiber's shadow stack, so a fiber is renewed after 256 uses. */
    if (t->tsan_fiber && ++t->tsan_uses > 256) {
        __tsan_destroy_fiber(t->tsan_fiber);
        t->tsan_fiber = NULL;
    }
    if (!t->tsan_fiber) {
        t->tsan_fiber = __tsan_create_fiber(0);
        t->tsan_uses = 0;
    }
#endif
}

/* Runs on the context that took over vp after t's last switch. */
void tlu_thread_post_exit(tlu_vp *vp, tlu_thread *t, int handoff)
{
    if (t->stack_lo) {
        tlu_stack_put(vp, t->pool, t->stack_lo);
        t->stack_lo = NULL;
    }
    if (handoff) {
        atomic_store_explicit(&t->join, TLU_JOIN_EXITED, REL);
        return;
    }
    uintptr_t old = atomic_exchange_explicit(&t->join, TLU_JOIN_EXITED, ACQREL);
    if (old == TLU_JOIN_DETACHED)
        tlu_desc_release(vp, t);
    else if (TLU_JOIN_IS_THREAD(old))
        tlu_sched_ready(vp, (tlu_thread *)old, 1);
}

void tlu_thread_post_join(tlu_vp *vp, tlu_thread *joiner, tlu_thread *t)
{
    uintptr_t expected = TLU_JOIN_NONE;
    if (!atomic_compare_exchange_strong_explicit(&t->join, &expected, (uintptr_t)joiner, ACQREL,
                                                 ACQ))
        tlu_sched_ready(vp, joiner, 1); /* it exited meanwhile */
}

_Noreturn void tl_ult_exit(void *retval);

/* ---- join ---------------------------------------------------------- */

/* Running a child inline: the joiner calls the child's function on its own
 * stack, as a plain call. Only a child the joiner has just taken back from
 * the bottom of its own deque qualifies (so nobody else can run it), and
 * only when the joiner's stack has room for the child's whole stack. The
 * child is a normal ULT meanwhile (own identity, TLS keys, may block and
 * migrate: its saved context then points into the joiner's stack, which
 * is idle because the joiner is waiting for exactly this child). A child
 * that calls tl_ult_exit jumps back here. The result: create+join of a
 * short child costs no stack, no switch and no queue round trip. */
#if TLU_ASAN || TLU_TSAN
/* the sanitizers intercept _longjmp and fix their shadow stacks */
typedef jmp_buf tlu_jb;
#define TLU_SETJMP(b) _setjmp(b)
#define TLU_LONGJMP(p) _longjmp(*(jmp_buf *)(p), 1)
#else
typedef void *tlu_jb[5];
#define TLU_SETJMP(b) __builtin_setjmp(b)
#define TLU_LONGJMP(p) __builtin_longjmp((void **)(p), 1)
#endif

#define INLINE_SLACK 2048

struct inline_frame {
    tlu_thread *joiner;
    tlu_thread *child;
#if TLU_TSAN
    void *own_fiber;
#endif
    tlu_jb jb;
};

static TL_NOINLINE void inline_finish(struct inline_frame *f)
{
    tlu_thread *t = f->child;
    tlu_thread *joiner = f->joiner;
    thread_finish(t);
    tlu_vp *vp = t->vp; /* may differ from the start: t may have migrated */
    TLU_OWNER_INC(vp->n_exited, 1);
    TLU_OWNER_INC(vp->n_inline, 1);
    t->state = TS_EXITED;
    t->stack_lo = NULL;
#if TLU_TSAN
    t->tsan_fiber = f->own_fiber; /* it ran on the joiner's */
#endif
    atomic_store_explicit(&t->join, TLU_JOIN_EXITED, RLX);
    joiner->vp = vp;
    vp->current = joiner;
}

static TL_NOINLINE void run_inline(tlu_vp *vp, tlu_thread *joiner, tlu_thread *t)
{
    struct inline_frame f;
    f.joiner = joiner;
    f.child = t;
#if TLU_TSAN
    f.own_fiber = t->tsan_fiber;
#endif
    t->stack_lo = joiner->stack_lo;
    t->stack_size = joiner->stack_size;
    t->bound_vp = joiner->bound_vp;
    t->flags = (uint8_t)((joiner->flags & TF_CANARY) | TF_INLINE);
    t->state = TS_RUNNING;
#if TLU_TSAN
    t->tsan_fiber = joiner->tsan_fiber;
#endif
    t->inline_jb = &f.jb;
    t->vp = vp;
    vp->current = t;
    if (TLU_SETJMP(f.jb) == 0) {
        tlu_thread *c = f.child;
        c->arg = c->fn(c->arg);
    }
    inline_finish(&f);
}

static int can_inline(tlu_thread *joiner, tlu_thread *t)
{
    /* a call, not a switch: the child would run in the joiner's TLS */
    if (!tlu_rt.cfg.inline_join || !joiner->stack_lo || t->ident != joiner->ident)
        return 0;
    char *sp = tlu_current_sp();
    return sp > joiner->stack_lo &&
           (size_t)(sp - joiner->stack_lo) > (size_t)t->stack_size + INLINE_SLACK;
}

static TL_NOINLINE void join_wait(tlu_vp *vp, tlu_thread *cur, tlu_thread *t)
{
    tlu_thread *next = NULL;
    if (tlu_deque_size_hint(&vp->dq) > 0) {
        next = tlu_deque_take(&vp->dq);
        /* ours now: its state is stable. Only a never-started child can
         * run inline (a started one has a context to resume). */
        if (next == t && t->state == TS_NEW && can_inline(cur, t)) {
            run_inline(vp, cur, t);
            return;
        }
    }
    if (next == t && t->state == TS_NEW) {
        /* t cannot look at its join word before it runs, and it runs right
         * after this switch, on this VP: register without a CAS */
        atomic_store_explicit(&t->join, (uintptr_t)cur, RLX);
        tlu_sched_park_to(cur, POST_NONE, NULL, t);
        return;
    }
    if (!next) {
        next = tlu_sched_pick(vp, 1, 0);
        if (!next)
            next = &vp->sched;
    }
    tlu_sched_park_to(cur, POST_JOIN, t, next);
}

int tl_ult_join(tl_ult_t t, void **retval)
{
    tlu_vp *vp = tlu_vp_self_fast();
    tlu_thread *cur = vp ? vp->current : NULL;
    if (TLU_UNLIKELY(!cur))
        return tlu_rt.initialized ? EPERM : EAGAIN;
    if (TLU_UNLIKELY(t == cur))
        return EDEADLK;
    uintptr_t w = atomic_load_explicit(&t->join, ACQ);
    if (w != TLU_JOIN_EXITED) {
        if (w == TLU_JOIN_DETACHED)
            return EINVAL;
        join_wait(vp, cur, t);
        while (atomic_load_explicit(&t->join, ACQ) != TLU_JOIN_EXITED)
            tlu_die("threadlab-ult: joiner %p woken before %p exited", (void *)cur, (void *)t);
    }
    if (retval)
        *retval = t->arg;
    tlu_desc_release(cur->vp, t);
    return 0;
}

int tl_ult_detach(tl_ult_t t)
{
    uintptr_t old = atomic_exchange_explicit(&t->join, TLU_JOIN_DETACHED, ACQREL);
    if (old == TLU_JOIN_DETACHED)
        return EINVAL;
    if (old == TLU_JOIN_EXITED)
        tlu_desc_release(tlu_vp_self(), t);
    return 0;
}

_Noreturn void tl_ult_exit(void *retval)
{
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    if (!cur || (cur->flags & TF_PRIMORDIAL))
        tlu_die("threadlab-ult: tl_ult_exit called outside a ULT or by the primordial ULT");
    cur->arg = retval;
    if (cur->flags & TF_INLINE)
        TLU_LONGJMP(cur->inline_jb);
    thread_exit(cur);
}

tl_ult_t tl_ult_self(void)
{
    tlu_vp *vp = tlu_vp_self();
    return vp ? vp->current : NULL;
}

tlu_thread *tlu_thread_current(void)
{
    return tl_ult_self();
}

void tl_ult_set_local(void *p)
{
    tlu_vp *vp = tlu_vp_self_fast();
    if (vp && vp->current)
        vp->current->local = p;
}

void *tl_ult_get_local(void)
{
    tlu_vp *vp = tlu_vp_self_fast();
    tlu_thread *cur = vp ? vp->current : NULL;
    return cur ? cur->local : NULL;
}

int tl_ult_local_ready(void)
{
    tlu_vp *vp = tlu_vp_self_fast();
    if (!vp)
        return 0;
    return vp->runq_head || atomic_load_explicit(&vp->next, RLX) ||
           tlu_deque_size_hint(&vp->dq) > 0 || atomic_load_explicit(&vp->inbox, RLX);
}

int tl_ult_stack_bounds(void **lo, size_t *size)
{
    tlu_thread *cur = tl_ult_self();
    if (!cur || !cur->stack_lo)
        return EPERM;
    *lo = cur->stack_lo;
    *size = cur->stack_size;
    return 0;
}
