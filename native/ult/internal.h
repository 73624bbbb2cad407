/*
 * internal.h - private structures of libthreadlab-ult.
 *
 * Ownership rules (who may touch what without a lock):
 *  - fields marked [owner] of a tl_vp are touched only by the kernel thread
 *    of that VP (its scheduler or the ULT it runs);
 *  - fields marked [shared] are atomics touched by every VP;
 *  - a ULT descriptor belongs to whoever holds it: the VP running it, the
 *    queue it sits in, or the wait queue lock it is parked under.
 *
 * The switch protocol: a ULT never makes itself visible to other VPs
 * before its context is saved. Whatever publishes the suspended thread
 * (enqueue after a yield, releasing the lock of the wait queue it sits in,
 * registering as a joiner, freeing an exited thread's stack) is a "post
 * action" recorded in the VP and executed by the context that resumes on
 * that VP right after the switch (Go's gopark unlock function).
 */
#ifndef THREADLAB_ULT_INTERNAL_H
#define THREADLAB_ULT_INTERNAL_H

#include "threadlab/compiler.h"
#include "threadlab/ult.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* ---- build configuration ---------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define TL_ULT_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define TL_ULT_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(TL_ULT_ASAN)
#define TL_ULT_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(TL_ULT_TSAN)
#define TL_ULT_TSAN 1
#endif
#endif
#ifndef TL_ULT_ASAN
#define TL_ULT_ASAN 0
#endif
#ifndef TL_ULT_TSAN
#define TL_ULT_TSAN 0
#endif

#if !defined(TL_ULT_CTX_ASM) && !defined(TL_ULT_CTX_UCONTEXT)
#if defined(__x86_64__)
#define TL_ULT_CTX_ASM 1
#else
#define TL_ULT_CTX_UCONTEXT 1
#endif
#endif

/* The shared compiler guards are threadlab/compiler.h's (TL_CACHE_LINE,
 * TL_NOINLINE, tl_cpu_relax: one definition each); these are the library's
 * own spellings of two of them. */
#define TL_ALIGNED TL_ALIGNED_CACHE_LINE
#define tl_relax tl_cpu_relax
#define TL_LIKELY(x) __builtin_expect(!!(x), 1)
#define TL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TL_HIDDEN __attribute__((visibility("hidden")))
#define TL_COLD __attribute__((cold, noinline))

#define RLX memory_order_relaxed
#define ACQ memory_order_acquire
#define REL memory_order_release
#define ACQREL memory_order_acq_rel
#define SEQ memory_order_seq_cst


/* Increment of a counter written only by its owner and read by others:
 * relaxed load + store, no locked instruction. */
#define TL_OWNER_INC(field, n)                                                                     \
    atomic_store_explicit(&(field), atomic_load_explicit(&(field), RLX) + (n), RLX)

struct tl_vp;
struct tl_stack_pool;
typedef struct tl_ult_thread tl_thread;

/* ---- context switch (context_x86_64.S / context.c) --------------- */

#if TL_ULT_CTX_ASM
typedef struct tl_ctx {
    void *sp; /* everything else lives on the suspended stack */
} tl_ctx;
#else
typedef struct tl_ctx {
    void *jb[5]; /* __builtin_setjmp buffer */
    void (*entry)(void *);
    void *arg;
    void *lo;
    size_t size; /* != 0 until the first switch boots it via ucontext */
} tl_ctx;
#endif

/* Prepares ctx so that the first switch to it calls entry(arg) on the
 * stack [lo, lo + size). entry must never return. */
void tl_ctx_init(tl_ctx *ctx, void *lo, size_t size, void (*entry)(void *), void *arg);
/* Saves the current context in *from and resumes *to. Returns when
 * something switches back to *from. */
void tl_ctx_switch(tl_ctx *from, tl_ctx *to);

#if TL_ULT_CTX_ASM
/* The hot-path entry of tl_ctx_switch: push the resume address and jmp,
 * so that neither side touches the return-stack buffer (see
 * context_x86_64.S). The red zone of the enclosing function is skipped.
 * Callee-saved registers are preserved by the switch code itself; the
 * caller-saved ones are declared clobbered, as a call would. */
static inline __attribute__((always_inline)) void tl_ctx_jump(tl_ctx *from, tl_ctx *to)
{
    __asm__ volatile("leaq   -128(%%rsp), %%rsp\n\t"
                     "leaq   1f(%%rip), %%rax\n\t"
                     "pushq  %%rax\n\t"
                     "jmp    tl_ctx_switch\n"
                     "1:\n\t"
                     "leaq   128(%%rsp), %%rsp"
                     : "+D"(from), "+S"(to)
                     :
                     : "rax", "rcx", "rdx", "r8", "r9", "r10", "r11", "memory", "cc", "xmm0",
                       "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"
#ifdef __AVX512F__
                       ,
                       "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",
                       "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31",
                       "k1", "k2", "k3", "k4", "k5", "k6", "k7"
#endif
    );
}
#else
#define tl_ctx_jump tl_ctx_switch
#endif
/* Records the FPU control words new contexts start with. */
void tl_ctx_capture_fpu(void);

/* ---- thread descriptor ------------------------------------------- */

enum tl_thread_state {
    TS_NEW = 0,  /* created, no stack yet */
    TS_READY,    /* in a run queue */
    TS_RUNNING,  /* running (or about to) on vp */
    TS_BLOCKED,  /* parked */
    TS_EXITED
};

enum tl_thread_flags {
    TF_SCHED = 1u << 0,      /* a VP's scheduler pseudo-thread */
    TF_PRIMORDIAL = 1u << 1, /* the thread that called tl_ult_init */
    TF_INLINE = 1u << 2,     /* running on its joiner's stack */
    TF_CANARY = 1u << 3,     /* the stack it runs on has a canary at stack_lo */
};

/* join word values besides a joiner's address */
#define TL_JOIN_NONE ((uintptr_t)0)
#define TL_JOIN_EXITED ((uintptr_t)1)
#define TL_JOIN_DETACHED ((uintptr_t)2)
#define TL_JOIN_IS_THREAD(w) ((w) > TL_JOIN_DETACHED)

/* dependence word: low 31 bits count, top bit "the thread waits" */
#define TL_DEP_WAITING 0x80000000u
#define TL_DEP_COUNT(w) ((w) & ~TL_DEP_WAITING)

struct tl_ult_thread {
    tl_ctx ctx;
    tl_thread *link;          /* run queue / wait queue / free list link */
    struct tl_vp *vp;         /* VP it runs on (valid while running) */
    tl_ult_fn fn;
    void *arg;                /* argument; the return value after exit */
    char *stack_lo;           /* lowest address of the stack it runs on */
    uint32_t stack_size;      /* usable bytes above stack_lo */
    uint8_t state;            /* enum tl_thread_state */
    uint8_t flags;            /* enum tl_thread_flags */
    int16_t bound_vp;         /* -1, or the only VP allowed to run it */
    struct tl_stack_pool *pool; /* where its own stack comes from */
    _Atomic uintptr_t join;   /* TL_JOIN_* or the parked joiner */
    _Atomic uint32_t deps;    /* dependence counter (TL_DEP_*) */
    uint32_t pad_;
    tl_thread *successor;     /* satisfied when this thread finishes */
    void **tls;               /* tl_ult_setspecific table, lazily allocated */
    void *inline_jb;          /* jump buffer of the joiner running it inline */
#if TL_ULT_ASAN
    void *asan_fake;          /* ASan fake stack saved while switched out */
#endif
#if TL_ULT_TSAN
    void *tsan_fiber;         /* kept with the descriptor: creating one costs ~0.3 ms */
    unsigned tsan_uses;
#endif
} TL_ALIGNED;

/* ---- Chase-Lev work-stealing deque (deque.c) --------------------- */

typedef struct tl_deque_array {
    int64_t mask;
    struct tl_deque_array *retired; /* older arrays, freed at destroy */
    _Atomic(tl_thread *) buf[];
} tl_deque_array;

typedef struct tl_deque {
    _Atomic int64_t top TL_ALIGNED;           /* thieves CAS it */
    _Atomic int64_t bottom TL_ALIGNED;        /* owner writes it */
    _Atomic(tl_deque_array *) array;
} tl_deque;

int tl_deque_init(tl_deque *q, int64_t capacity);
void tl_deque_destroy(tl_deque *q);
tl_deque_array *tl_deque_grow(tl_deque *q, tl_deque_array *a, int64_t t, int64_t b);
/* Owner: remove the most recently pushed thread (LIFO). */
tl_thread *tl_deque_take(tl_deque *q);
/* Anyone: remove the oldest thread (FIFO). NULL when empty, TL_DEQUE_ABORT
 * when it lost a race (retry). */
#define TL_DEQUE_ABORT ((tl_thread *)1)
tl_thread *tl_deque_steal(tl_deque *q);

/* Owner: push at the bottom. */
static inline void tl_deque_push(tl_deque *q, tl_thread *t)
{
    int64_t b = atomic_load_explicit(&q->bottom, RLX);
    int64_t top = atomic_load_explicit(&q->top, ACQ);
    tl_deque_array *a = atomic_load_explicit(&q->array, RLX);
    if (TL_UNLIKELY(b - top > a->mask))
        a = tl_deque_grow(q, a, top, b);
    atomic_store_explicit(&a->buf[b & a->mask], t, RLX);
    atomic_store_explicit(&q->bottom, b + 1, REL);
}

/* Size as seen by the owner; may overestimate (a stale top), never reports
 * empty while non-empty. */
static inline int64_t tl_deque_size_hint(tl_deque *q)
{
    return atomic_load_explicit(&q->bottom, RLX) - atomic_load_explicit(&q->top, RLX);
}

/* ---- stacks (stack.c) -------------------------------------------- */

typedef struct tl_stack_pool {
    size_t usable;    /* bytes a thread may use */
    size_t slot;      /* bytes per slot (usable + guard page) */
    int guard;        /* slots carry a guard page */
    void *free;       /* global free list (under tl_rt.lock) */
    size_t nfree;
    char *carve, *carve_end; /* current chunk */
    struct tl_stack_pool *next;
} tl_stack_pool;

#define TL_STACK_CACHE_WAYS 4
#define TL_STACK_CACHE_MAX 64 /* per pool per VP, then half goes global */
#define TL_CANARY_BYTES 16
#define TL_STACK_MIN 512
#define TL_STACK_MAX ((size_t)1 << 30)

struct tl_stack_cache {
    tl_stack_pool *pool;
    void *head;
    unsigned n;
};

/* The pool for a requested stack size (rounded); NULL + errno on error. */
tl_stack_pool *tl_stack_pool_for(size_t size, int *err);
/* A stack of pool for VP vp (vp may be NULL): returns its lowest usable
 * address (canary written there). Aborts on ENOMEM. */
char *tl_stack_get(struct tl_vp *vp, tl_stack_pool *pool);
void tl_stack_put(struct tl_vp *vp, tl_stack_pool *pool, char *lo);
void tl_stack_flush_cache(struct tl_vp *vp);
void tl_stack_finalize(void);
int tl_stack_install_handler(void);
void tl_stack_remove_handler(void);
int tl_stack_altstack_enter(void **mem);
void tl_stack_altstack_leave(void *mem);
TL_COLD _Noreturn void tl_stack_overflow(tl_thread *t, const char *how);

static inline void tl_stack_write_canary(char *lo);

/* ---- VP ------------------------------------------------------------ */

enum tl_post_kind {
    POST_NONE = 0,
    POST_YIELD,        /* enqueue post_thread as a yielder */
    POST_UNLOCK,       /* release spinlock post_arg */
    POST_JOIN,         /* register post_thread as joiner of post_arg */
    POST_EXIT,         /* post_thread exited: free stack, publish, wake joiner */
    POST_EXIT_HANDOFF, /* same, we already switched to its joiner */
    POST_DEP_WAIT,     /* post_thread waits for its dependence counter */
    POST_SLEEP,        /* add post_thread to the timer heap, deadline post_arg */
    POST_WD_WAIT,      /* register post_thread as waiter of work descriptor */
};

enum tl_vp_state { VP_RUNNING = 0, VP_SLEEPING = 1 };

struct tl_timer {
    uint64_t deadline;
    tl_thread *t;
};

struct tl_wd_share;

typedef struct tl_vp {
    /* [owner] hot */
    tl_thread *current;           /* running ULT, NULL in the scheduler */
    unsigned id;
    uint32_t tick;
    unsigned post_kind;
    tl_thread *post_thread;
    void *post_arg;
    tl_thread *runq_head, *runq_tail; /* private FIFO: yielders, bound threads */
    size_t runq_len;
    tl_thread *desc_free;             /* descriptor cache */
    unsigned desc_nfree;
    uint64_t rng;
    struct tl_stack_cache scache[TL_STACK_CACHE_WAYS];
    struct tl_timer *timers;          /* min-heap on deadline */
    size_t ntimers, timers_cap;
    tl_thread sched;                  /* the scheduler pseudo-thread */
    void *sched_stack;                /* VP 0 only: mmap'd scheduler stack */
    size_t sched_stack_size;
    pthread_t thread;
    int cpu;                          /* pinned CPU or -1 */
    int in_slowpath;                  /* running on the scheduler stack */
    void *altstack;

    /* [owner-written, read by all] counters */
    _Atomic uint64_t n_created, n_exited, n_steals, n_inline, n_sleeps;

    /* [shared] */
    _Atomic(tl_thread *) next TL_ALIGNED;      /* handoff slot */
    tl_deque dq;
    _Atomic(tl_thread *) inbox TL_ALIGNED;     /* remote readies (LIFO) */
    _Atomic(struct tl_wd_share *) wd_inbox;    /* work descriptor slot */
    _Atomic uint32_t state TL_ALIGNED;         /* enum tl_vp_state */
    _Atomic uint32_t wake_seq;                 /* futex word */
} tl_vp;

/* ---- the runtime --------------------------------------------------- */

struct tl_rt {
    int initialized;
    unsigned nvps;
    tl_vp **vps;
    tl_ult_config cfg;
    tl_stack_pool *default_pool;
    tl_thread *main_thread;
    size_t page;
    uint64_t canary;
    cpu_set_t *saved_affinity;

    pthread_mutex_t lock;             /* pools, descriptor slabs, chunks */
    tl_stack_pool *pools;
    void **chunks;                    /* stack mappings: addr, len pairs */
    size_t nchunks, chunks_cap;
    void **slabs;                     /* descriptor slabs */
    size_t nslabs, slabs_cap;
    tl_thread *desc_global;           /* global descriptor free list */
    size_t desc_global_n;
    uint64_t stack_slots, stack_bytes;
    uint64_t guard_budget;            /* guard pages we allow ourselves */
    uint64_t guarded;                 /* guard pages made so far */

    _Atomic unsigned nspinning TL_ALIGNED;
    _Atomic unsigned nsleeping;
    _Atomic int stopping;
    _Atomic unsigned rr;              /* external create round robin */
    _Atomic uint64_t ext_created;
    _Atomic uint64_t guard_fallbacks;
    _Atomic uint32_t fence_dummy;
};

extern struct tl_rt tl_rt;

/* The VP of the calling kernel thread (NULL for external threads). Never
 * inlined and never cached across a switch: a ULT can resume on another
 * kernel thread; after a switch use self->vp. */
tl_vp *tl_vp_self(void);
void tl_vp_set_self(tl_vp *vp);

/* Inline variant for the hot paths (yield, create, join). Rule: read it
 * once, before any switch, in a function that uses self->vp afterwards.
 * initial-exec TLS is a %fs-relative load, re-evaluated at each access; a
 * compiler may not reuse it across a switch because the asm below makes
 * every read a fresh, opaque value. */
extern __thread tl_vp *tl_tls_vp __attribute__((tls_model("initial-exec")));
static inline tl_vp *tl_vp_self_fast(void)
{
    tl_vp *vp = tl_tls_vp;
    __asm__ volatile("" : "+r"(vp));
    return vp;
}

static inline char *tl_current_sp(void)
{
    char *sp;
#if defined(__x86_64__)
    __asm__ volatile("movq %%rsp, %0" : "=r"(sp));
#else
    sp = __builtin_frame_address(0);
#endif
    return sp;
}

/* Full StoreLoad barrier (the idle/wake Dekker handshake). A locked RMW
 * under TSan, which does not model standalone fences. */
static inline void tl_full_fence(void)
{
#if TL_ULT_TSAN
    atomic_fetch_add_explicit(&tl_rt.fence_dummy, 0, SEQ);
#else
    atomic_thread_fence(SEQ);
#endif
}

/* ---- sanitizer hooks around every switch --------------------------- */

#if TL_ULT_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if TL_ULT_TSAN
#include <sanitizer/tsan_interface.h>
#endif

static inline void tl_san_start_switch(tl_thread *cur, tl_thread *next, int exiting)
{
#if TL_ULT_ASAN
    __sanitizer_start_switch_fiber(exiting ? NULL : &cur->asan_fake, next->stack_lo,
                                   next->stack_size);
#endif
#if TL_ULT_TSAN
    __tsan_switch_to_fiber(next->tsan_fiber, 0);
#endif
    (void)cur;
    (void)next;
    (void)exiting;
}

static inline void tl_san_finish_switch(tl_thread *self)
{
#if TL_ULT_ASAN
    __sanitizer_finish_switch_fiber(self->asan_fake, NULL, NULL);
#endif
    (void)self;
}

/* ---- canary -------------------------------------------------------- */

static inline void tl_stack_write_canary(char *lo)
{
    uint64_t *w = (uint64_t *)(void *)lo;
    w[0] = tl_rt.canary;
    w[1] = tl_rt.canary ^ (uintptr_t)lo;
}

static inline int tl_stack_needs_canary(const struct tl_stack_pool *p)
{
    return !p->guard || atomic_load_explicit(&tl_rt.guard_fallbacks, RLX) != 0;
}

static inline int tl_stack_canary_ok(const char *lo)
{
    const uint64_t *w = (const uint64_t *)(const void *)lo;
    return w[0] == tl_rt.canary && w[1] == (tl_rt.canary ^ (uintptr_t)lo);
}

/* ---- slow paths off the ULT stack ------------------------------------ */

#if TL_ULT_CTX_ASM
void tl_ctx_call_on(void *sp, void (*fn)(void *), void *arg);
#endif

/* Runs fn(arg) on the scheduler stack of vp when the caller is a ULT
 * (whose stack may be a few hundred bytes): the scheduler context is
 * suspended while a ULT runs, so the part of its stack below its saved
 * stack pointer is free. Under the sanitizers (which track stacks) and
 * with the portable context, fn simply runs here. */
static inline void tl_slowpath(struct tl_vp *vp, void (*fn)(void *), void *arg);

/* ---- scheduler (sched.c) ------------------------------------------- */

/* Switch from cur (running on vp) to next; exiting: cur never resumes. */
void tl_sched_switch(tl_vp *vp, tl_thread *cur, tl_thread *next, int exiting);
/* Suspend self; the post action (kind, arg) runs after the switch. */
void tl_sched_park(tl_thread *self, unsigned kind, void *arg);
/* Same, switching to next (which the caller removed from a queue). */
void tl_sched_park_to(tl_thread *self, unsigned kind, void *arg, tl_thread *next);
void tl_sched_run_post(tl_vp *vp);
/* Next thread for vp: local queues, then (steal) other VPs. Returns
 * &vp->sched when the scheduler has work descriptors to run (unless
 * from_sched). NULL when nothing. */
tl_thread *tl_sched_pick(tl_vp *vp, int steal, int from_sched);
/* Make t runnable. vp: the caller's VP or NULL (external). handoff: put t
 * in the next-to-run slot. */
void tl_sched_ready(tl_vp *vp, tl_thread *t, int handoff);
/* Publish a newly created / newly ready thread on vp's deque. */
void tl_sched_push_new(tl_vp *vp, tl_thread *t);
/* Any stealable or local work visible for vp (read-only probe). */
int tl_sched_has_work(tl_vp *vp);
void tl_sched_inbox_push(tl_vp *target, tl_thread *t);

/* Wake an idle VP if work was published and nobody is looking for it. */
static inline void tl_sched_notify(void)
{
    if (tl_rt.nvps == 1)
        return;
    tl_full_fence();
    if (atomic_load_explicit(&tl_rt.nspinning, RLX) == 0 &&
        atomic_load_explicit(&tl_rt.nsleeping, RLX) != 0) {
        void tl_vp_wake_one(void);
        tl_vp_wake_one();
    }
}

/* ---- VPs (vp.c) ---------------------------------------------------- */

int tl_vp_start_all(void);
void tl_vp_stop_all(void);
void tl_vp_wake_one(void);
void tl_vp_wake(tl_vp *vp);
void tl_vp_sched_entry(void *vp);
/* Stack bounds and sanitizer identity of the calling kernel thread. */
void tl_vp_init_kernel_context(tl_thread *t);
uint64_t tl_now_ns(void);

/* ---- threads (thread.c) -------------------------------------------- */

int tl_ult_create_internal(tl_ult_t *out, const tl_ult_attr *attr, tl_ult_fn fn, void *arg,
                     unsigned ndeps, tl_thread *successor);
/* First dispatch: stack + initial context. */
void tl_thread_prepare(tl_vp *vp, tl_thread *t);
void tl_thread_post_exit(tl_vp *vp, tl_thread *t, int handoff);
void tl_thread_post_join(tl_vp *vp, tl_thread *joiner, tl_thread *t);
tl_thread *tl_desc_alloc(tl_vp *vp);
void tl_desc_release(tl_vp *vp, tl_thread *t);
void tl_desc_finalize(void);
tl_thread *tl_thread_current(void);

/* ---- others --------------------------------------------------------- */

void tl_tls_run_destructors(tl_thread *t);                      /* tls.c */
void tl_dep_satisfy(tl_vp *vp, tl_thread *t);                   /* dep.c */
void tl_dep_post_wait(tl_vp *vp, tl_thread *t);                 /* dep.c */
void tl_timer_add(tl_vp *vp, tl_thread *t, uint64_t deadline);  /* sleep.c */
int tl_timers_fire(tl_vp *vp, uint64_t now);                    /* sleep.c */
uint64_t tl_timers_next(tl_vp *vp);                             /* sleep.c */
void tl_wd_process(tl_vp *vp);                                  /* workdesc.c */
void tl_wd_post_wait(tl_vp *vp, tl_thread *t, void *wd);        /* workdesc.c */

/* Intrusive FIFO wait queue (under the primitive's spinlock). */
static inline void tl_waitq_push(tl_thread **head, tl_thread **tail, tl_thread *t)
{
    t->link = NULL;
    if (*tail)
        (*tail)->link = t;
    else
        *head = t;
    *tail = t;
}

static inline tl_thread *tl_waitq_pop(tl_thread **head, tl_thread **tail)
{
    tl_thread *t = *head;
    if (t) {
        *head = t->link;
        if (!*head)
            *tail = NULL;
        t->link = NULL;
    }
    return t;
}

/* System calls the runtime makes on ULT stacks, issued directly: no libc
 * wrapper frame and, above all, no first-call PLT resolution (the dynamic
 * linker saves the whole AVX-512 state, about 3 KB, on the caller's
 * stack, too much for a small ULT stack). */
#if defined(__x86_64__)
static inline long tl_syscall4(long nr, long a, long b, long c, long d)
{
    long ret;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                     : "rcx", "r11", "memory");
    return ret;
}
#else
#include <unistd.h>
#include <sys/syscall.h>
static inline long tl_syscall4(long nr, long a, long b, long c, long d)
{
    return syscall(nr, a, b, c, d);
}
#endif

static inline void tl_sched_yield_kernel(void)
{
#if defined(__x86_64__)
    tl_syscall4(24 /* SYS_sched_yield */, 0, 0, 0, 0);
#else
    sched_yield();
#endif
}

/* Spinlock of the wait queues: held for a few instructions, and across
 * one context switch (released by POST_UNLOCK). Spins, then yields the
 * kernel thread in case the holder's VP was preempted. */
static inline void tl_spin_lock(_Atomic uint32_t *l)
{
    for (unsigned n = 0;; n++) {
        if (!atomic_exchange_explicit(l, 1, ACQ))
            return;
        while (atomic_load_explicit(l, RLX)) {
            tl_relax();
            if (++n > 256) {
                tl_sched_yield_kernel();
                n = 0;
            }
        }
    }
}

static inline void tl_spin_unlock(_Atomic uint32_t *l)
{
    atomic_store_explicit(l, 0, REL);
}

/* The ULT running on the caller's kernel thread, with its VP. */
static inline tl_thread *tl_self_ult(tl_vp **vpp)
{
    tl_vp *vp = tl_vp_self();
    *vpp = vp;
    return vp ? vp->current : NULL;
}

TL_COLD _Noreturn void tl_ult_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- inline scheduler paths ------------------------------------------ */

/* ---- private run queue (owner only) -------------------------------- */

static inline void tl_runq_push(tl_vp *vp, tl_thread *t)
{
    t->link = NULL;
    if (vp->runq_tail)
        vp->runq_tail->link = t;
    else
        vp->runq_head = t;
    vp->runq_tail = t;
    vp->runq_len++;
}

static inline tl_thread *tl_runq_pop(tl_vp *vp)
{
    tl_thread *t = vp->runq_head;
    if (t) {
        vp->runq_head = t->link;
        if (!vp->runq_head)
            vp->runq_tail = NULL;
        vp->runq_len--;
    }
    return t;
}

void tl_sched_enqueue_yielder(tl_vp *vp, tl_thread *t);

/* The post action, with the yield case inline: a yielder goes to the tail
 * of the private run queue unless another VP is idle. */
static inline void tl_run_post_fast(tl_vp *vp)
{
    if (TL_LIKELY(vp->post_kind == POST_YIELD) &&
        (tl_rt.nvps == 1 || !(atomic_load_explicit(&tl_rt.nsleeping, RLX) |
                              atomic_load_explicit(&tl_rt.nspinning, RLX)))) {
        vp->post_kind = POST_NONE;
        tl_thread *t = vp->post_thread;
        if (t->bound_vp < 0 || t->bound_vp == (int)vp->id) {
            tl_runq_push(vp, t);
            return;
        }
        vp->post_kind = POST_YIELD;
    }
    tl_sched_run_post(vp);
}

/* The switch: first dispatch of a new thread, stack checks of the
 * outgoing one, sanitizer hand-over, the jump, and the post action once
 * cur runs again. Always inlined, so that exit paths leave no return
 * address behind on the return-stack buffer. */

static inline __attribute__((always_inline)) void tl_switch_to(tl_vp *vp, tl_thread *cur, tl_thread *next, int exiting)
{
    if (cur->flags & TF_CANARY) {
        /* one word at every switch, both when the thread exits */
        if (TL_UNLIKELY(*(const uint64_t *)(const void *)cur->stack_lo != tl_rt.canary ||
                        (exiting && !tl_stack_canary_ok(cur->stack_lo))))
            tl_stack_overflow(cur, "canary overwritten");
        if (TL_UNLIKELY(tl_current_sp() < cur->stack_lo + TL_CANARY_BYTES))
            tl_stack_overflow(cur, "stack pointer below the stack");
    }
    if (TL_UNLIKELY(next->state == TS_NEW))
        tl_thread_prepare(vp, next);
#ifdef TL_ULT_DEBUG
    if (next->state == TS_RUNNING && !(next->flags & TF_SCHED))
        tl_ult_die("debug: dispatching running thread %p on VP %u", (void *)next, vp->id);
#endif
    next->state = TS_RUNNING;
    next->vp = vp;
    vp->current = (next->flags & TF_SCHED) ? NULL : next;
    tl_san_start_switch(cur, next, exiting);
    tl_ctx_jump(&cur->ctx, &next->ctx);
    /* resumed, possibly on another VP */
    tl_san_finish_switch(cur);
    vp = cur->vp;
    if (vp->post_kind)
        tl_run_post_fast(vp);
}


static inline void tl_slowpath(struct tl_vp *vp, void (*fn)(void *), void *arg)
{
#if TL_ULT_CTX_ASM && !TL_ULT_ASAN && !TL_ULT_TSAN
    if (vp && vp->current && !vp->in_slowpath) {
        vp->in_slowpath = 1;
        tl_ctx_call_on((char *)vp->sched.ctx.sp - 256, fn, arg);
        vp->in_slowpath = 0;
        return;
    }
#endif
    (void)vp;
    fn(arg);
}

#endif
