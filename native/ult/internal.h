/*
 * internal.h - private structures of libthreadlab-ult.
 *
 * Ownership rules (who may touch what without a lock):
 *  - fields marked [owner] of a tlu_vp are touched only by the kernel thread
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

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>

/* ---- build configuration ---------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define TLU_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define TLU_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(TLU_ASAN)
#define TLU_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(TLU_TSAN)
#define TLU_TSAN 1
#endif
#endif
#ifndef TLU_ASAN
#define TLU_ASAN 0
#endif
#ifndef TLU_TSAN
#define TLU_TSAN 0
#endif

#if !defined(TLU_CTX_ASM) && !defined(TLU_CTX_UCONTEXT)
#if defined(__x86_64__)
#define TLU_CTX_ASM 1
#else
#define TLU_CTX_UCONTEXT 1
#endif
#endif

/* The shared compiler guards are threadlab/compiler.h's, used by their
 * names (TL_CACHE_LINE, TL_ALIGNED_CACHE_LINE, TL_NOINLINE, tl_cpu_relax:
 * one definition each); these are the library's own. */
#define TLU_LIKELY(x) __builtin_expect(!!(x), 1)
#define TLU_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TLU_HIDDEN __attribute__((visibility("hidden")))
#define TLU_COLD __attribute__((cold, noinline))

#define RLX memory_order_relaxed
#define ACQ memory_order_acquire
#define REL memory_order_release
#define ACQREL memory_order_acq_rel
#define SEQ memory_order_seq_cst


/* Increment of a counter written only by its owner and read by others:
 * relaxed load + store, no locked instruction. */
#define TLU_OWNER_INC(field, n)                                                                     \
    atomic_store_explicit(&(field), atomic_load_explicit(&(field), RLX) + (n), RLX)

struct tlu_vp;
struct tlu_stack_pool;
typedef struct tl_ult_thread tlu_thread;

/* ---- context switch (context_x86_64.S / context.c) --------------- */

#if TLU_CTX_ASM
typedef struct tlu_ctx {
    void *sp; /* everything else lives on the suspended stack */
} tlu_ctx;
#else
typedef struct tlu_ctx {
    void *jb[5]; /* __builtin_setjmp buffer */
    void (*entry)(void *);
    void *arg;
    void *lo;
    size_t size; /* != 0 until the first switch boots it via ucontext */
} tlu_ctx;
#endif

/* Prepares ctx so that the first switch to it calls entry(arg) on the
 * stack [lo, lo + size). entry must never return. */
void tlu_ctx_init(tlu_ctx *ctx, void *lo, size_t size, void (*entry)(void *), void *arg);
/* Saves the current context in *from and resumes *to. Returns when
 * something switches back to *from. */
void tlu_ctx_switch(tlu_ctx *from, tlu_ctx *to);

#if TLU_CTX_ASM
/* The hot-path entry of tlu_ctx_switch: push the resume address and jmp,
 * so that neither side touches the return-stack buffer (see
 * context_x86_64.S). The red zone of the enclosing function is skipped.
 * Callee-saved registers are preserved by the switch code itself; the
 * caller-saved ones are declared clobbered, as a call would. */
static inline __attribute__((always_inline)) void tlu_ctx_jump(tlu_ctx *from, tlu_ctx *to)
{
    __asm__ volatile("leaq   -128(%%rsp), %%rsp\n\t"
                     "leaq   1f(%%rip), %%rax\n\t"
                     "pushq  %%rax\n\t"
                     "jmp    tlu_ctx_switch\n"
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
#define tlu_ctx_jump tlu_ctx_switch
#endif
/* Records the FPU control words new contexts start with. */
void tlu_ctx_capture_fpu(void);

/* ---- thread descriptor ------------------------------------------- */

enum tlu_thread_state {
    TS_NEW = 0,  /* created, no stack yet */
    TS_READY,    /* in a run queue */
    TS_RUNNING,  /* running (or about to) on vp */
    TS_BLOCKED,  /* parked */
    TS_EXITED
};

enum tlu_thread_flags {
    TF_SCHED = 1u << 0,      /* a VP's scheduler pseudo-thread */
    TF_PRIMORDIAL = 1u << 1, /* the thread that called tl_ult_init */
    TF_INLINE = 1u << 2,     /* running on its joiner's stack */
    TF_CANARY = 1u << 3,     /* the stack it runs on has a canary at stack_lo */
};

/* join word values besides a joiner's address */
#define TLU_JOIN_NONE ((uintptr_t)0)
#define TLU_JOIN_EXITED ((uintptr_t)1)
#define TLU_JOIN_DETACHED ((uintptr_t)2)
#define TLU_JOIN_IS_THREAD(w) ((w) > TLU_JOIN_DETACHED)

/* dependence word: low 31 bits count, top bit "the thread waits" */
#define TLU_DEP_WAITING 0x80000000u
#define TLU_DEP_COUNT(w) ((w) & ~TLU_DEP_WAITING)

struct tl_ult_thread {
    tlu_ctx ctx;
    tlu_thread *link;          /* run queue / wait queue / free list link */
    struct tlu_vp *vp;         /* VP it runs on (valid while running) */
    tl_ult_fn fn;
    void *arg;                /* argument; the return value after exit */
    char *stack_lo;           /* lowest address of the stack it runs on */
    uint32_t stack_size;      /* usable bytes above stack_lo */
    uint8_t state;            /* enum tlu_thread_state */
    uint8_t flags;            /* enum tlu_thread_flags */
    int16_t bound_vp;         /* -1, or the only VP allowed to run it */
    struct tlu_stack_pool *pool; /* where its own stack comes from */
    _Atomic uintptr_t join;   /* TLU_JOIN_* or the parked joiner */
    _Atomic uint32_t deps;    /* dependence counter (TLU_DEP_*) */
    uint32_t pad_;
    tlu_thread *successor;     /* satisfied when this thread finishes */
    void **tls;               /* tl_ult_setspecific table, lazily allocated */
    void *inline_jb;          /* jump buffer of the joiner running it inline */
    void *local;              /* tl_ult_set_local */
    struct tl_ult_identity *ident; /* the kernel-thread TLS it wears, NULL: its VP's */
    _Atomic uint32_t *wait_addr; /* tl_ult_wait: the word it is parked on */
#if TLU_ASAN
    void *asan_fake;          /* ASan fake stack saved while switched out */
#endif
#if TLU_TSAN
    void *tsan_fiber;         /* kept with the descriptor: creating one costs ~0.3 ms */
    unsigned tsan_uses;
#endif
} TL_ALIGNED_CACHE_LINE;

/* ---- Chase-Lev work-stealing deque (deque.c) --------------------- */

typedef struct tlu_deque_array {
    int64_t mask;
    struct tlu_deque_array *retired; /* older arrays, freed at destroy */
    _Atomic(void *) buf[];
} tlu_deque_array;

typedef struct tlu_deque {
    _Atomic int64_t top TL_ALIGNED_CACHE_LINE;           /* thieves CAS it */
    _Atomic int64_t bottom TL_ALIGNED_CACHE_LINE;        /* owner writes it */
    _Atomic(tlu_deque_array *) array;
    /* The owner's last reading of top (acquired). Thieves only raise top,
     * so bottom - top_seen bounds the size from above: push and
     * tlu_deque_holds read top, a line each steal takes from the owner,
     * only when that bound cannot decide. */
    int64_t top_seen;
} tlu_deque;

int tlu_deque_init(tlu_deque *q, int64_t capacity);
void tlu_deque_destroy(tlu_deque *q);
tlu_deque_array *tlu_deque_grow(tlu_deque *q, tlu_deque_array *a, int64_t t, int64_t b);
/* Owner: remove the most recently pushed element (LIFO). fenced: 0 lets
 * a single-VP runtime skip the fence (its scheduler has no thieves). */
void *tlu_deque_take_ex(tlu_deque *q, int fenced);
static inline void *tlu_deque_take(tlu_deque *q)
{
    return tlu_deque_take_ex(q, 0);
}
/* Anyone: remove the oldest element (FIFO). NULL when empty,
 * TLU_DEQUE_ABORT when it lost a race (retry). */
#define TLU_DEQUE_ABORT ((void *)1)
void *tlu_deque_steal(tlu_deque *q);

/* Owner: push at the bottom. */
static inline void tlu_deque_push(tlu_deque *q, void *t)
{
    int64_t b = atomic_load_explicit(&q->bottom, RLX);
    tlu_deque_array *a = atomic_load_explicit(&q->array, RLX);
    /* the slot reused is below top_seen: its thief's read of it happened
     * before the CAS that the acquire of top_seen saw */
    if (TLU_UNLIKELY(b - q->top_seen > a->mask)) {
        q->top_seen = atomic_load_explicit(&q->top, ACQ);
        if (b - q->top_seen > a->mask)
            a = tlu_deque_grow(q, a, q->top_seen, b);
    }
    atomic_store_explicit(&a->buf[b & a->mask], t, RLX);
    atomic_store_explicit(&q->bottom, b + 1, REL);
}

/* Owner: whether at least n elements are queued. */
static inline int tlu_deque_holds(tlu_deque *q, int64_t n)
{
    int64_t b = atomic_load_explicit(&q->bottom, RLX);
    if (b - q->top_seen < n)
        return 0;
    q->top_seen = atomic_load_explicit(&q->top, ACQ);
    return b - q->top_seen >= n;
}

/* Size as seen by the owner; may overestimate (a stale top), never reports
 * empty while non-empty. */
static inline int64_t tlu_deque_size_hint(tlu_deque *q)
{
    return atomic_load_explicit(&q->bottom, RLX) - atomic_load_explicit(&q->top, RLX);
}

/* Owner: how many more elements fit without growing the array. */
static inline size_t tlu_deque_room(tlu_deque *q)
{
    /* the size is at most the hint's (thieves only take) */
    int64_t room = atomic_load_explicit(&q->array, RLX)->mask + 1 - tlu_deque_size_hint(q);
    return room > 0 ? (size_t)room : 0;
}

/* ---- stacks (stack.c) -------------------------------------------- */

typedef struct tlu_stack_pool {
    size_t usable;    /* bytes a thread may use */
    size_t slot;      /* bytes per slot (usable + guard page) */
    int guard;        /* slots carry a guard page */
    void *free;       /* global free list (under tlu_rt.lock) */
    size_t nfree;
    char *carve, *carve_end; /* current chunk */
    struct tlu_stack_pool *next;
} tlu_stack_pool;

#define TLU_STACK_CACHE_WAYS 4
#define TLU_STACK_CACHE_MAX 64 /* per pool per VP, then half goes global */
#define TLU_CANARY_BYTES 16
#define TLU_STACK_MIN 512
#define TLU_STACK_MAX ((size_t)1 << 30)

struct tlu_stack_cache {
    tlu_stack_pool *pool;
    void *head;
    unsigned n;
};

/* The pool for a requested stack size (rounded); NULL + errno on error.
 * The default pool's size, rounded or not, takes no lock; another takes
 * the runtime's lock. Callers go through tlu_stack_pool_of. */
tlu_stack_pool *tlu_stack_pool_for(size_t size, int *err);
/* A stack of pool for VP vp (vp may be NULL): returns its lowest usable
 * address (canary written there). Aborts on ENOMEM. */
char *tlu_stack_get(struct tlu_vp *vp, tlu_stack_pool *pool);
void tlu_stack_put(struct tlu_vp *vp, tlu_stack_pool *pool, char *lo);
void tlu_stack_flush_cache(struct tlu_vp *vp);
void tlu_stack_finalize(void);
int tlu_stack_install_handler(void);
void tlu_stack_remove_handler(void);
int tlu_stack_altstack_enter(void **mem);
void tlu_stack_altstack_leave(void *mem);
TLU_COLD _Noreturn void tlu_stack_overflow(tlu_thread *t, const char *how);

static inline void tlu_stack_write_canary(char *lo);

/* ---- VP ------------------------------------------------------------ */

enum tlu_post_kind {
    POST_NONE = 0,
    POST_YIELD,        /* enqueue post_thread as a yielder */
    POST_UNLOCK,       /* release spinlock post_arg */
    POST_JOIN,         /* register post_thread as joiner of post_arg */
    POST_EXIT,         /* post_thread exited: free stack, publish, wake joiner */
    POST_EXIT_HANDOFF, /* same, we already switched to its joiner */
    POST_DEP_WAIT,     /* post_thread waits for its dependence counter */
    POST_SLEEP,        /* add post_thread to the timer heap, deadline post_arg */
    POST_WD_WAIT,      /* register post_thread as waiter of work descriptor */
    POST_GIVE_WAY,     /* post_thread left its VP to a bound thread: to the deque */
};

/* VP_STOPPED: told to stop by tl_ult_set_active_vps (id >= tlu_rt.active):
 * it forwards its queued threads to active VPs and sleeps until active. */
enum tlu_vp_state { VP_RUNNING = 0, VP_SLEEPING = 1, VP_STOPPED = 2 };

struct tlu_timer {
    uint64_t deadline;
    tlu_thread *t;
};

struct tlu_wd_share;

typedef struct tlu_vp {
    /* [owner] hot */
    tlu_thread *current;           /* running ULT, NULL in the scheduler */
    unsigned id;
    uint32_t tick;
    unsigned post_kind;
    tlu_thread *post_thread;
    void *post_arg;
    tlu_thread *runq_head, *runq_tail; /* private FIFO: yielders, bound threads */
    size_t runq_len;
    tlu_thread *desc_free;             /* descriptor cache */
    unsigned desc_nfree;
    uint64_t rng;
    struct tlu_stack_cache scache[TLU_STACK_CACHE_WAYS];
    struct tlu_timer *timers;          /* min-heap on deadline */
    size_t ntimers, timers_cap;
    tlu_thread sched;                  /* the scheduler pseudo-thread */
    void *sched_stack;                /* VP 0 only: mmap'd scheduler stack */
    size_t sched_stack_size;
    pthread_t thread;
    int cpu;                          /* pinned CPU or -1 */
    int in_slowpath;                  /* running on the scheduler stack */
    void *altstack;
    void *own_tcb;                    /* this kernel thread's TLS (fs base) */
    struct tl_ult_identity *worn;     /* identity worn now, NULL: its own */
    unsigned fwd_rr;                  /* round robin of a stopped VP's forwarding */
    uint32_t polls;                   /* idle polls so far (vp_idle) */
    struct tlu_vp_seen *seen;         /* per VP: its beat as last seen (tlu_vp_polling) */

    /* [owner-written, read by all] counters */
    _Atomic uint64_t n_created, n_exited, n_steals, n_inline, n_sleeps;

    /* [shared] */
    _Atomic(tlu_thread *) next TL_ALIGNED_CACHE_LINE;      /* handoff slot */
    tlu_deque dq;
    /* a pusher reads state right after its CAS on inbox (the Dekker pair
     * with vp_idle): on one line, one miss */
    _Atomic(tlu_thread *) inbox TL_ALIGNED_CACHE_LINE;     /* remote readies (LIFO) */
    _Atomic(struct tlu_wd_share *) wd_inbox;    /* work descriptor slot */
    _Atomic uint32_t state;                    /* enum tlu_vp_state */
    _Atomic uint32_t wake_seq;                 /* futex word */
    /* written while idle (beat every 64 polls): off the pushers' line */
    _Atomic uint32_t spinning TL_ALIGNED_CACHE_LINE; /* idle, polling its queues (vp_idle) */
    _Atomic uint32_t beat;                     /* bumped every 64 polls while spinning */
    /* the preemption ticker's (preempt.c): written rarely, read per tick */
    _Atomic int tid;                           /* its kernel thread, 0 before it runs */
    _Atomic int preempt_asked;                 /* a SIGURG to it is the ticker's */
} tlu_vp;

/* ---- the runtime --------------------------------------------------- */

struct tlu_rt {
    int initialized;
    unsigned nvps;
    _Atomic unsigned active;          /* VPs 0..active-1 run; the others stop */
    /* active is allotted (tl_ult_set_active_vps) plus lent (VPs the ticker
     * lends while a thread it cannot preempt holds others back), at most
     * nvps (vp.c, preempt.c) */
    _Atomic unsigned allotted;
    _Atomic unsigned lent;
    int external;                     /* tl_ult_config.external: VP 0 is internal too */
    int fsgsbase;                     /* wrfsbase is usable (identities) */
    tlu_vp **vps;
    tl_ult_config cfg;
    tlu_stack_pool *default_pool;
    tlu_thread *main_thread;
    size_t page;
    uint64_t canary;
    cpu_set_t *saved_affinity;

    pthread_mutex_t lock;             /* pools, descriptor slabs, chunks */
    tlu_stack_pool *pools;
    void **chunks;                    /* stack mappings: addr, len pairs */
    size_t nchunks, chunks_cap;
    void **slabs;                     /* descriptor slabs */
    size_t nslabs, slabs_cap;
    tlu_thread *desc_global;           /* global descriptor free list */
    size_t desc_global_n;
    uint64_t stack_slots, stack_bytes;
    uint64_t guard_budget;            /* guard pages we allow ourselves */
    uint64_t guarded;                 /* guard pages made so far */

    _Atomic unsigned nspinning TL_ALIGNED_CACHE_LINE;
    _Atomic unsigned nsleeping;
    _Atomic int stopping;
    _Atomic unsigned rr;              /* external create round robin */
    _Atomic uint64_t ext_created;
    _Atomic uint64_t guard_fallbacks;
    _Atomic uint32_t fence_dummy;
};

/* ---- preemption (preempt.c) --------------------------------------- */

/* Installs the SIGURG handler (tl_ult_config.preempt_ms, not under the
 * sanitizers); the ticker starts the first time a VP is told to stop. */
int tlu_preempt_init(void);
/* The active VP count changed to `active`: the ticker starts (the first
 * stop) or looks at once (resumed VPs may find a busy VP holding threads
 * they could run). */
void tlu_preempt_active_changed(unsigned active);
/* Lends one more VP beyond the allotted ones (delta 1) or takes one back
 * (-1); 0 when there was none to lend or to take back (vp.c). */
int tlu_vp_lend(int delta);
/* Stops the ticker and puts the program's SIGURG action back. */
void tlu_preempt_finalize(void);
uint64_t tlu_preempt_count(void);
uint64_t tlu_preempt_loans(void);
uint64_t tlu_preempt_slice_ns(void);
/* 1 when the handler would yield a thread interrupted at `pc`: time slices
 * are on and pc is the program's own code, not this runtime's (tests). */
int tlu_preempt_pc_is_program(uintptr_t pc);

extern struct tlu_rt tlu_rt;

/* The pool of a thread's stack_size attribute (0: the default). */
static inline tlu_stack_pool *tlu_stack_pool_of(size_t size, int *err)
{
    tlu_stack_pool *d = tlu_rt.default_pool;
    return !size || size == d->usable ? d : tlu_stack_pool_for(size, err);
}

/* The VP of the calling kernel thread (NULL for external threads). Never
 * inlined and never cached across a switch: a ULT can resume on another
 * kernel thread; after a switch use self->vp. */
tlu_vp *tlu_vp_self(void);
void tlu_vp_set_self(tlu_vp *vp);

/* Inline variant for the hot paths (yield, create, join). Rule: read it
 * once, before any switch, in a function that uses self->vp afterwards.
 * initial-exec TLS is a %fs-relative load, re-evaluated at each access; a
 * compiler may not reuse it across a switch because the asm below makes
 * every read a fresh, opaque value. */
extern __thread tlu_vp *tlu_tls_vp __attribute__((tls_model("initial-exec")));
static inline tlu_vp *tlu_vp_self_fast(void)
{
    tlu_vp *vp = tlu_tls_vp;
    __asm__ volatile("" : "+r"(vp));
    return vp;
}

static inline char *tlu_current_sp(void)
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
static inline void tlu_full_fence(void)
{
#if TLU_TSAN
    atomic_fetch_add_explicit(&tlu_rt.fence_dummy, 0, SEQ);
#else
    atomic_thread_fence(SEQ);
#endif
}

/* ---- sanitizer hooks around every switch --------------------------- */

#if TLU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if TLU_TSAN
#include <sanitizer/tsan_interface.h>
#endif

static inline void tlu_san_start_switch(tlu_thread *cur, tlu_thread *next, int exiting)
{
#if TLU_ASAN
    __sanitizer_start_switch_fiber(exiting ? NULL : &cur->asan_fake, next->stack_lo,
                                   next->stack_size);
#endif
#if TLU_TSAN
    __tsan_switch_to_fiber(next->tsan_fiber, 0);
#endif
    (void)cur;
    (void)next;
    (void)exiting;
}

static inline void tlu_san_finish_switch(tlu_thread *self)
{
#if TLU_ASAN
    __sanitizer_finish_switch_fiber(self->asan_fake, NULL, NULL);
#endif
    (void)self;
}

/* ---- canary -------------------------------------------------------- */

static inline void tlu_stack_write_canary(char *lo)
{
    uint64_t *w = (uint64_t *)(void *)lo;
    w[0] = tlu_rt.canary;
    w[1] = tlu_rt.canary ^ (uintptr_t)lo;
}

static inline int tlu_stack_needs_canary(const struct tlu_stack_pool *p)
{
    return !p->guard || atomic_load_explicit(&tlu_rt.guard_fallbacks, RLX) != 0;
}

static inline int tlu_stack_canary_ok(const char *lo)
{
    const uint64_t *w = (const uint64_t *)(const void *)lo;
    return w[0] == tlu_rt.canary && w[1] == (tlu_rt.canary ^ (uintptr_t)lo);
}

/* ---- slow paths off the ULT stack ------------------------------------ */

#if TLU_CTX_ASM
void tlu_ctx_call_on(void *sp, void (*fn)(void *), void *arg);
#endif

/* Runs fn(arg) on the scheduler stack of vp when the caller is a ULT
 * (whose stack may be a few hundred bytes): the scheduler context is
 * suspended while a ULT runs, so the part of its stack below its saved
 * stack pointer is free. Under the sanitizers (which track stacks) and
 * with the portable context, fn simply runs here. */
static inline void tlu_slowpath(struct tlu_vp *vp, void (*fn)(void *), void *arg);

/* ---- scheduler (sched.c) ------------------------------------------- */

/* Switch from cur (running on vp) to next; exiting: cur never resumes. */
void tlu_sched_switch(tlu_vp *vp, tlu_thread *cur, tlu_thread *next, int exiting);
/* Suspend self; the post action (kind, arg) runs after the switch. */
void tlu_sched_park(tlu_thread *self, unsigned kind, void *arg);
/* Same, switching to next (which the caller removed from a queue). */
void tlu_sched_park_to(tlu_thread *self, unsigned kind, void *arg, tlu_thread *next);
void tlu_sched_run_post(tlu_vp *vp);
/* Next thread for vp: local queues, then (steal) other VPs. Returns
 * &vp->sched when the scheduler has work descriptors to run (unless
 * from_sched). NULL when nothing. */
tlu_thread *tlu_sched_pick(tlu_vp *vp, int steal, int from_sched);
/* Make t runnable. vp: the caller's VP or NULL (external). handoff: put t
 * in the next-to-run slot. */
void tlu_sched_ready(tlu_vp *vp, tlu_thread *t, int handoff);
/* Publish a newly created / newly ready thread on vp's deque. */
void tlu_sched_push_new(tlu_vp *vp, tlu_thread *t);
/* Any stealable or local work visible for vp. `patient`: what a busy VP's
 * inbox or next slot holds counts only once it has waited there
 * (tlu_vp_waited: the polls of a spinning VP); else at once. */
int tlu_sched_has_work(tlu_vp *vp, int patient);
/* Work in vp's own queues (no timers, nothing to steal). */
int tlu_sched_has_own_work(tlu_vp *vp);
void tlu_sched_inbox_push(tlu_vp *target, tlu_thread *t);
/* A spawn request (tl_ult_spawn_on) into target's inbox. */
void tlu_sched_inbox_push_spawn(tlu_vp *target, tl_ult_spawn *s);
/* Empties from's inbox for self, the calling VP: a list of threads (on
 * link, newest first), the spawn requests in it made into threads on self. */
tlu_thread *tlu_sched_inbox_take(tlu_vp *from, tlu_vp *self);

/* Some VP sits idle (spinning or asleep, looking for work): work queued
 * where it can steal is taken soon. */
static inline int tlu_idle_vps(void)
{
    return (atomic_load_explicit(&tlu_rt.nsleeping, RLX) | atomic_load_explicit(&tlu_rt.nspinning, RLX)) != 0;
}

/* Wake an idle VP if work was published and nobody is looking for it. */
static inline void tlu_sched_notify(void)
{
    if (tlu_rt.nvps == 1)
        return;
    tlu_full_fence();
    if (atomic_load_explicit(&tlu_rt.nspinning, RLX) == 0 &&
        atomic_load_explicit(&tlu_rt.nsleeping, RLX) != 0) {
        void tlu_vp_wake_one(void);
        tlu_vp_wake_one();
    }
}

/* ---- VPs (vp.c) ---------------------------------------------------- */

/* The VP has been told to stop (tl_ult_set_active_vps): it must not pick
 * new work; it forwards what it holds and sleeps. VP 0 never stops. */
static inline int tlu_vp_must_stop(const tlu_vp *vp)
{
    return vp->id >= atomic_load_explicit(&tlu_rt.active, RLX);
}
struct tlu_vp_seen {
    uint32_t beat;        /* the other VP's beat */
    uint32_t polls;       /* this VP's polls when it changed */
    uint32_t waiting;       /* its inbox or next slot held a thread when last looked at */
    uint32_t waiting_polls; /* this VP's polls when it was first seen holding one */
};

/* Whether v (another VP) idles and polls its queues, so that what they
 * hold it runs itself: a thief leaves them alone. Not when v stopped
 * polling: its beat has not moved for 256 of self's polls (6 us or more:
 * the kernel took its CPU), and then what it holds is stolen as from a
 * busy VP. */
int tlu_vp_polling(tlu_vp *self, tlu_vp *v);
/* Whether busy VP v's inbox or next slot, found holding a thread now
 * (`holds`), has held one at each of self's looks for 64 of self's polls
 * (1.6 us or more): only then does self take from them. The owner takes
 * what they hold as soon as its running thread parks or yields, usually
 * within microseconds; taken at once, a region's workers pushed to their
 * VPs ran one after the other on the thief (Go waits 3 us before it
 * steals a P's runnext for the same reason). Any thread counts, not one:
 * threads that take turns on a VP pass through its next slot. With idle
 * VPs that do not spin (spin_us 0: more VPs than CPUs), at once. */
int tlu_vp_waited(tlu_vp *self, tlu_vp *v, int holds);
/* An active VP other than vp for work a stopped VP gives away. */
tlu_vp *tlu_vp_active_target(tlu_vp *vp);
/* Wakes vp whether it sleeps idle or stopped (a stopped VP forwards what
 * was pushed to it). */
void tlu_vp_kick(tlu_vp *vp);

int tlu_vp_start_all(void);
void tlu_vp_stop_all(void);
void tlu_vp_wake_one(void);
void tlu_vp_wake(tlu_vp *vp);
void tlu_vp_sched_entry(void *vp);
/* Stack bounds and sanitizer identity of the calling kernel thread. */
void tlu_vp_init_kernel_context(tlu_thread *t);
uint64_t tlu_now_ns(void);

/* ---- threads (thread.c) -------------------------------------------- */

int tlu_create(tl_ult_t *out, const tl_ult_attr *attr, tl_ult_fn fn, void *arg,
                     unsigned ndeps, tlu_thread *successor);
/* The thread a spawn request asks for, made on vp (its caches). */
tlu_thread *tlu_spawn_make(tlu_vp *vp, tl_ult_spawn *s);
/* First dispatch: stack + initial context. */
void tlu_thread_prepare(tlu_vp *vp, tlu_thread *t);
void tlu_thread_post_exit(tlu_vp *vp, tlu_thread *t, int handoff);
void tlu_thread_post_join(tlu_vp *vp, tlu_thread *joiner, tlu_thread *t);
tlu_thread *tlu_desc_alloc(tlu_vp *vp);
void tlu_desc_release(tlu_vp *vp, tlu_thread *t);
void tlu_desc_finalize(void);
tlu_thread *tlu_thread_current(void);

/* ---- kernel-thread TLS identities (identity.c) ----------------------- */

/* A kernel thread's TLS block (its thread pointer, the x86-64 fs base)
 * that a ULT wears wherever it runs: the donor kernel thread sleeps in a
 * raw futex wait and never touches it meanwhile. `worn` makes a block
 * worn by one kernel thread at a time. */
struct tl_ult_identity {
    void *tcb;                  /* the thread pointer to load into fs */
    _Atomic uint32_t worn;      /* 1 while a VP (or its lender) uses it */
    _Atomic uint32_t returned;  /* run_as_self: futex word of the lender */
    int returning;              /* run_as_self: its ULT has finished */
    int donor;                  /* 1: a kernel thread of ours sleeps under it */
    _Atomic uint32_t quit;      /* the donor's futex word */
    pthread_t thread;
};

/* Makes vp wear next's identity (its own TLS when next has none). */
void tlu_wear_slow(tlu_vp *vp, struct tl_ult_identity *want);
static inline void tlu_wear(tlu_vp *vp, tlu_thread *next)
{
    if (TLU_UNLIKELY(next->ident != vp->worn))
        tlu_wear_slow(vp, next->ident);
}
/* The calling kernel thread's thread pointer. */
static inline void *tlu_read_tp(void)
{
#if defined(__x86_64__)
    void *tp;
    __asm__ volatile("movq %%fs:0, %0" : "=r"(tp));
    return tp;
#else
    return NULL;
#endif
}
void tlu_identity_init(void);
void tlu_fence_init(int membarrier); /* park.c: registers for membarrier(2) when asked */

/* ---- others --------------------------------------------------------- */

void tlu_tls_run_destructors(tlu_thread *t);                      /* tls.c */
void tlu_dep_satisfy(tlu_vp *vp, tlu_thread *t);                   /* dep.c */
void tlu_dep_post_wait(tlu_vp *vp, tlu_thread *t);                 /* dep.c */
void tlu_timer_add(tlu_vp *vp, tlu_thread *t, uint64_t deadline);  /* sleep.c */
int tlu_timers_fire(tlu_vp *vp, uint64_t now);                    /* sleep.c */
uint64_t tlu_timers_next(tlu_vp *vp);                             /* sleep.c */
void tlu_wd_process(tlu_vp *vp);                                  /* workdesc.c */
void tlu_wd_post_wait(tlu_vp *vp, tlu_thread *t, void *wd);        /* workdesc.c */

/* Intrusive FIFO wait queue (under the primitive's spinlock). */
static inline void tlu_waitq_push(tlu_thread **head, tlu_thread **tail, tlu_thread *t)
{
    t->link = NULL;
    if (*tail)
        (*tail)->link = t;
    else
        *head = t;
    *tail = t;
}

static inline tlu_thread *tlu_waitq_pop(tlu_thread **head, tlu_thread **tail)
{
    tlu_thread *t = *head;
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
static inline long tlu_syscall4(long nr, long a, long b, long c, long d)
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
static inline long tlu_syscall4(long nr, long a, long b, long c, long d)
{
    return syscall(nr, a, b, c, d);
}
#endif

/* Private futex wait (timeout_ns 0: none; returns on a wake, a signal,
 * the timeout, or at once when *addr != val) and wake, by the raw call. */
static inline void tlu_futex_wait(_Atomic uint32_t *addr, uint32_t val, uint64_t timeout_ns)
{
    struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
    tlu_syscall4(SYS_futex, (long)(uintptr_t)addr, FUTEX_WAIT_PRIVATE, (long)val, timeout_ns ? (long)(uintptr_t)&ts : 0);
}

static inline void tlu_futex_wake(_Atomic uint32_t *addr, int n)
{
    tlu_syscall4(SYS_futex, (long)(uintptr_t)addr, FUTEX_WAKE_PRIVATE, n, 0);
}

static inline void tlu_sched_yield_kernel(void)
{
#if defined(__x86_64__)
    tlu_syscall4(24 /* SYS_sched_yield */, 0, 0, 0, 0);
#else
    sched_yield();
#endif
}

/* Spinlock of the wait queues: held for a few instructions, and across
 * one context switch (released by POST_UNLOCK). Spins, then yields the
 * kernel thread in case the holder's VP was preempted. */
static inline void tlu_spin_lock(_Atomic uint32_t *l)
{
    for (unsigned n = 0;; n++) {
        if (!atomic_exchange_explicit(l, 1, ACQ))
            return;
        while (atomic_load_explicit(l, RLX)) {
            tl_cpu_relax();
            if (++n > 256) {
                tlu_sched_yield_kernel();
                n = 0;
            }
        }
    }
}

static inline void tlu_spin_unlock(_Atomic uint32_t *l)
{
    atomic_store_explicit(l, 0, REL);
}

/* The ULT running on the caller's kernel thread, with its VP. */
static inline tlu_thread *tlu_self_ult(tlu_vp **vpp)
{
    tlu_vp *vp = tlu_vp_self();
    *vpp = vp;
    return vp ? vp->current : NULL;
}

TLU_COLD _Noreturn void tlu_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- inline scheduler paths ------------------------------------------ */

/* ---- private run queue (owner only) -------------------------------- */

static inline void tlu_runq_push(tlu_vp *vp, tlu_thread *t)
{
    t->link = NULL;
    if (vp->runq_tail)
        vp->runq_tail->link = t;
    else
        vp->runq_head = t;
    vp->runq_tail = t;
    vp->runq_len++;
}

static inline tlu_thread *tlu_runq_pop(tlu_vp *vp)
{
    tlu_thread *t = vp->runq_head;
    if (t) {
        vp->runq_head = t->link;
        if (!vp->runq_head)
            vp->runq_tail = NULL;
        vp->runq_len--;
    }
    return t;
}

void tlu_sched_enqueue_yielder(tlu_vp *vp, tlu_thread *t);
size_t tlu_sched_publish_runq(tlu_vp *vp, size_t n);
void tlu_sched_give_way(tlu_vp *vp);

/* The post action, with the yield case inline: a yielder goes to the tail
 * of the private run queue unless another VP is idle. */
static inline void tlu_run_post_fast(tlu_vp *vp)
{
    if (TLU_LIKELY(vp->post_kind == POST_YIELD) &&
        (tlu_rt.nvps == 1 || !tlu_idle_vps())) {
        vp->post_kind = POST_NONE;
        tlu_thread *t = vp->post_thread;
        if (t->bound_vp < 0 || t->bound_vp == (int)vp->id) {
            tlu_runq_push(vp, t);
            return;
        }
        vp->post_kind = POST_YIELD;
    }
    tlu_sched_run_post(vp);
}

/* The switch: first dispatch of a new thread, stack checks of the
 * outgoing one, sanitizer hand-over, the jump, and the post action once
 * cur runs again. Always inlined, so that exit paths leave no return
 * address behind on the return-stack buffer. */

static inline __attribute__((always_inline)) void tlu_switch_to(tlu_vp *vp, tlu_thread *cur, tlu_thread *next, int exiting)
{
    if (cur->flags & TF_CANARY) {
        /* one word at every switch, both when the thread exits */
        if (TLU_UNLIKELY(*(const uint64_t *)(const void *)cur->stack_lo != tlu_rt.canary ||
                        (exiting && !tlu_stack_canary_ok(cur->stack_lo))))
            tlu_stack_overflow(cur, "canary overwritten");
        if (TLU_UNLIKELY(tlu_current_sp() < cur->stack_lo + TLU_CANARY_BYTES))
            tlu_stack_overflow(cur, "stack pointer below the stack");
    }
    if (TLU_UNLIKELY(next->ident && next->ident != vp->worn && vp->post_kind &&
                     atomic_load_explicit(&next->ident->worn, RLX))) {
        /* next's identity is still worn on another VP (a thread of that
         * identity is leaving there, a recalled one replaces it) and this
         * switch leaves a post action for after it, a lock released then:
         * waiting for the identity here would hold that lock, which the
         * leaving thread may need (the wake-up of a region's master took
         * a parking lot's bucket the master's VP held: both VPs spun for
         * good). The scheduler runs the post action, then takes next
         * again. */
        tlu_sched_ready(vp, next, 1);
        next = &vp->sched;
    }
    if (TLU_UNLIKELY(next->state == TS_NEW))
        tlu_thread_prepare(vp, next);
#ifdef TLU_DEBUG
    if (next->state == TS_RUNNING && !(next->flags & TF_SCHED))
        tlu_die("debug: dispatching running thread %p on VP %u", (void *)next, vp->id);
#endif
    next->state = TS_RUNNING;
    next->vp = vp;
    vp->current = (next->flags & TF_SCHED) ? NULL : next;
    tlu_wear(vp, next);
    tlu_san_start_switch(cur, next, exiting);
    tlu_ctx_jump(&cur->ctx, &next->ctx);
    /* resumed, possibly on another VP */
    tlu_san_finish_switch(cur);
    vp = cur->vp;
    if (vp->post_kind)
        tlu_run_post_fast(vp);
}


static inline void tlu_slowpath(struct tlu_vp *vp, void (*fn)(void *), void *arg)
{
#if TLU_CTX_ASM && !TLU_ASAN && !TLU_TSAN
    if (vp && vp->current && !vp->in_slowpath) {
        vp->in_slowpath = 1;
        tlu_ctx_call_on((char *)vp->sched.ctx.sp - 256, fn, arg);
        vp->in_slowpath = 0;
        return;
    }
#endif
    (void)vp;
    fn(arg);
}

#endif
