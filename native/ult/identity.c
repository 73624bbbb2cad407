/*
 * identity.c - kernel-thread TLS identities: a ULT that wears the
 * thread-local storage of a kernel thread that sleeps meanwhile.
 *
 * Why: code compiled for kernel threads keeps per-thread state in TLS
 * (GCC's OpenMP threadprivate variables, errno, the C library's malloc
 * caches) and a compiler may keep a TLS address across any call, since a
 * kernel thread never changes its TLS. A ULT that migrates between VPs
 * breaks both. An identity gives the ULT a TLS block of its own that
 * follows it: the switch (tlu_wear, internal.h) loads the identity's
 * thread pointer into fs whenever a VP switches to a ULT wearing another
 * one than the VP wears now, and the VP's own when the next thread has no
 * identity.
 *
 * The block belongs to a donor kernel thread that blocks every signal and
 * sleeps in a raw futex wait (no libc call, so no TLS access) until the
 * identity is destroyed; or, for tl_ult_run_as_self, to the external
 * caller itself, which sleeps the same way until its ULT is done.
 *
 * Exclusivity: `worn` is held (exchange 1) by the VP wearing the block and
 * dropped after the VP has loaded another thread pointer, i.e. after the
 * wearer's context is saved and before the post action can publish it. A
 * VP that wants a block still held spins: that only happens while a
 * previous wearer of the same identity finishes its last switch.
 *
 * The runtime's own TLS word (tlu_tls_vp, the VP pointer) lives in every
 * static TLS block: a VP that puts a block on writes itself there.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "threadlab/thread_stack.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>

#if defined(__x86_64__) && !TLU_ASAN && !TLU_TSAN
#define IDENTITY_SUPPORTED 1
#else
#define IDENTITY_SUPPORTED 0
#endif

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif
#define ARCH_SET_FS_ 0x1002

int tl_ult_identity_supported(void)
{
#if IDENTITY_SUPPORTED
    return 1;
#else
    return 0;
#endif
}

void tlu_identity_init(void)
{
#if IDENTITY_SUPPORTED
    tlu_rt.fsgsbase = (getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE) != 0;
#endif
}

static void set_tp(void *tp)
{
#if IDENTITY_SUPPORTED
    if (TLU_LIKELY(tlu_rt.fsgsbase))
        __asm__ volatile("wrfsbase %0" ::"r"(tp) : "memory");
    else
        tlu_syscall4(SYS_arch_prctl, ARCH_SET_FS_, (long)(uintptr_t)tp, 0, 0);
#else
    (void)tp;
#endif
}

static void release(struct tl_ult_identity *id)
{
    if (TLU_UNLIKELY(id->returning)) {
        /* the last switch of a run_as_self ULT: hand the block back */
        atomic_store_explicit(&id->worn, 0, REL);
        atomic_store_explicit(&id->returned, 1, REL);
        tlu_futex_wake(&id->returned, 1);
        return;
    }
    atomic_store_explicit(&id->worn, 0, REL);
}

void tlu_wear_slow(tlu_vp *vp, struct tl_ult_identity *want)
{
    struct tl_ult_identity *old = vp->worn;
    if (want) {
        while (atomic_exchange_explicit(&want->worn, 1, ACQ))
            tl_cpu_relax();
        set_tp(want->tcb);
    } else {
        set_tp(vp->own_tcb);
    }
    /* written through the block just loaded (the asm above clobbers
     * memory: the store is not moved before it) */
    tlu_tls_vp = vp;
    vp->worn = want;
    if (old)
        release(old);
}

int tl_ult_wear(tl_ult_identity *id)
{
#if IDENTITY_SUPPORTED
    tlu_vp *vp = tlu_vp_self();
    if (!vp || vp->current)
        return EPERM; /* a ULT wears its own; this is for VP contexts */
    if (vp->worn != id)
        tlu_wear_slow(vp, id);
    return 0;
#else
    return id ? ENOTSUP : 0;
#endif
}

/* ---- donors ----------------------------------------------------------- */

#if IDENTITY_SUPPORTED

/* Sleeps until destroyed, touching nothing but the identity. */
static TL_NOINLINE void donor_sleep(struct tl_ult_identity *id)
{
    atomic_store_explicit(&id->worn, 0, REL);
    while (!atomic_load_explicit(&id->quit, ACQ))
        tlu_futex_wait(&id->quit, 0, 0);
}

static void *donor_main(void *p)
{
    struct tl_ult_identity *id = p;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    id->tcb = tlu_read_tp();
    donor_sleep(id);
    return NULL;
}

#endif

int tl_ult_identity_create(tl_ult_identity **out)
{
#if IDENTITY_SUPPORTED
    struct tl_ult_identity *id = calloc(1, sizeof *id);
    if (!id)
        return ENOMEM;
    atomic_init(&id->worn, 1); /* the donor holds it until it sleeps */
    id->donor = 1;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, tl_thread_stack_size(&a, 64 * 1024));
    int err = pthread_create(&id->thread, &a, donor_main, id);
    pthread_attr_destroy(&a);
    if (err) {
        free(id);
        return err;
    }
    for (unsigned n = 0; atomic_load_explicit(&id->worn, ACQ); n++)
        if (n > 64)
            tlu_sched_yield_kernel();
        else
            tl_cpu_relax();
    *out = id;
    return 0;
#else
    (void)out;
    return ENOTSUP;
#endif
}

/* The donor's end, once the caller holds the block (worn). */
static void donor_end(tl_ult_identity *id)
{
    atomic_store_explicit(&id->quit, 1, REL);
    tlu_futex_wake(&id->quit, 1);
    pthread_join(id->thread, NULL);
    free(id);
}

void tl_ult_identity_destroy(tl_ult_identity *id)
{
    if (!id || !id->donor)
        return;
    if (atomic_exchange_explicit(&id->worn, 1, ACQ))
        tlu_die("threadlab-ult: tl_ult_identity_destroy: the identity is being worn");
    donor_end(id);
}

int tl_ult_identity_try_destroy(tl_ult_identity *id)
{
    if (!id || !id->donor)
        return 0;
    uint32_t unworn = 0;
    if (!atomic_compare_exchange_strong_explicit(&id->worn, &unworn, 1, ACQ, RLX))
        return EBUSY;
    donor_end(id);
    return 0;
}

/* ---- run_as_self -------------------------------------------------------- */

#if IDENTITY_SUPPORTED

struct lend {
    tl_ult_fn fn;
    void *arg;
    void *ret;
    struct tl_ult_identity *id;
};

static void *lend_entry(void *p)
{
    struct lend *l = p;
    l->ret = l->fn(l->arg);
    /* read by release() at this thread's last switch */
    l->id->returning = 1;
    return NULL;
}

/* The caller's part once its block is lent: no TLS access until the ULT
 * has handed it back (the loop uses the stack and raw system calls). */
static TL_NOINLINE void lender_sleep(struct tl_ult_identity *id)
{
    atomic_store_explicit(&id->worn, 0, REL);
    while (!atomic_load_explicit(&id->returned, ACQ))
        tlu_futex_wait(&id->returned, 0, 0);
    while (atomic_exchange_explicit(&id->worn, 1, ACQ))
        tl_cpu_relax();
}

#endif

int tl_ult_run_as_self(tl_ult_fn fn, void *arg, size_t stack_size, void **retval)
{
#if IDENTITY_SUPPORTED
    if (!tlu_rt.initialized)
        return EAGAIN;
    if (!fn)
        return EINVAL;
    if (tlu_vp_self())
        return EPERM;
    struct tl_ult_identity id;
    memset(&id, 0, sizeof id);
    id.tcb = tlu_read_tp();
    atomic_init(&id.worn, 1); /* held by this thread until it sleeps */
    struct lend l = {fn, arg, NULL, &id};
    tl_ult_attr a;
    tl_ult_attr_init(&a);
    a.stack_size = stack_size;
    a.detached = 1;
    a.identity = &id;
    int err = tl_ult_create(NULL, &a, lend_entry, &l);
    if (err)
        return err;
    lender_sleep(&id);
    /* the VPs that wore the block left their pointer in it */
    tlu_tls_vp = NULL;
    if (retval)
        *retval = l.ret;
    return 0;
#else
    (void)fn;
    (void)arg;
    (void)stack_size;
    (void)retval;
    return ENOTSUP;
#endif
}
