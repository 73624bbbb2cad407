/*
 * init.c - configuration, tl_ult_init / tl_ult_finalize, statistics,
 * fatal errors.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct tlu_rt tlu_rt;

#define DEFAULT_STACK ((size_t)64 * 1024)
#define SCHED_STACK ((size_t)256 * 1024)

struct die_msg {
    const char *fmt;
    va_list *ap;
};

static void die_print(void *arg)
{
    struct die_msg *m = arg;
    vfprintf(stderr, m->fmt, *m->ap);
    fputc('\n', stderr);
    fflush(stderr);
}

/* Prints on the scheduler stack when called from a ULT: the ULT's stack
 * may be tiny, or it may be the stack that just overflowed. */
TLU_COLD _Noreturn void tlu_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    struct die_msg m = {fmt, &ap};
    tlu_slowpath(tlu_rt.initialized ? tlu_vp_self() : NULL, die_print, &m);
    va_end(ap);
    abort();
}

static unsigned long env_ulong(const char *name, unsigned long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    unsigned long v = strtoul(s, &end, 0);
    if (*end == 'k' || *end == 'K')
        v <<= 10;
    else if (*end == 'm' || *end == 'M')
        v <<= 20;
    return v;
}

void tl_ult_config_init(tl_ult_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->nvps = (unsigned)env_ulong("TL_ULT_VPS", 0);
    cfg->pin = (int)env_ulong("TL_ULT_PIN", 1);
    cfg->stack_size = env_ulong("TL_ULT_STACK_SIZE", DEFAULT_STACK);
    cfg->stack_mode = env_ulong("TL_ULT_STACK_GUARD", 0) ? TL_ULT_STACK_GUARD : TL_ULT_STACK_CANARY;
    cfg->overflow_handler = 1;
    cfg->spin_us = (unsigned)env_ulong("TL_ULT_SPIN_US", 50);
    cfg->inline_join = (int)env_ulong("TL_ULT_INLINE_JOIN", 1);
    cfg->membarrier = (int)env_ulong("TL_ULT_MEMBARRIER", 1);
    cfg->preempt_ms = (unsigned)env_ulong("TL_ULT_PREEMPT_MS", 10);
    cfg->external = 0;
}

void tl_ult_preinit(const tl_ult_config *cfg)
{
    tl_ult_config defaults;
    if (!cfg) {
        tl_ult_config_init(&defaults);
        cfg = &defaults;
    }
    tlu_fence_init(cfg->membarrier);
}

int tl_ult_initialized(void)
{
    return tlu_rt.initialized;
}

unsigned tl_ult_num_vps(void)
{
    return tlu_rt.initialized ? tlu_rt.nvps : 0;
}

int tl_ult_vp_id(void)
{
    tlu_vp *vp = tlu_vp_self();
    return vp ? (int)vp->id : -1;
}

static void free_vps(void)
{
    if (!tlu_rt.vps)
        return;
    for (unsigned i = 0; i < tlu_rt.nvps; i++) {
        tlu_vp *vp = tlu_rt.vps[i];
        if (!vp)
            continue;
        tlu_deque_destroy(&vp->dq);
        free(vp->timers);
        free(vp->seen);
        if (vp->sched_stack)
            munmap(vp->sched_stack, vp->sched_stack_size);
#if TLU_TSAN
        if (i == 0 && !tlu_rt.external && vp->sched.tsan_fiber)
            __tsan_destroy_fiber(vp->sched.tsan_fiber);
#endif
        free(vp);
    }
    free(tlu_rt.vps);
    tlu_rt.vps = NULL;
}

static void *main_altstack;

static void teardown(void)
{
    tlu_preempt_finalize();
    free_vps();
    tlu_desc_finalize();
    tlu_stack_finalize();
    if (tlu_rt.saved_affinity) {
        pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t), tlu_rt.saved_affinity);
        free(tlu_rt.saved_affinity);
    }
    tlu_stack_remove_handler();
    tlu_stack_altstack_leave(main_altstack);
    main_altstack = NULL;
    tlu_vp_set_self(NULL);
    pthread_mutex_destroy(&tlu_rt.lock);
    memset(&tlu_rt, 0, sizeof tlu_rt);
}

static int setup_vp(unsigned i, const int *cpus, int ncpus)
{
    tlu_vp *vp = aligned_alloc(TL_CACHE_LINE, (sizeof(tlu_vp) + TL_CACHE_LINE - 1) / TL_CACHE_LINE *
                                                 TL_CACHE_LINE);
    if (!vp)
        return ENOMEM;
    memset(vp, 0, sizeof *vp);
    tlu_rt.vps[i] = vp;
    vp->seen = calloc(tlu_rt.nvps, sizeof *vp->seen);
    if (!vp->seen)
        return ENOMEM;
    vp->id = i;
    vp->rng = 0x9e3779b97f4a7c15ull * (i + 1) ^ (uint64_t)tlu_now_ns();
    if (!vp->rng)
        vp->rng = 1;
    vp->cpu = tlu_rt.cfg.pin ? cpus[i % (unsigned)ncpus] : -1;
    if (tlu_deque_init(&vp->dq, 256))
        return ENOMEM;
    vp->sched.flags = TF_SCHED;
    vp->sched.bound_vp = (int16_t)i;
    vp->sched.vp = vp;
    vp->sched.state = TS_RUNNING;
    if (i == 0 && !tlu_rt.external) {
        vp->sched_stack_size = SCHED_STACK;
        vp->sched_stack = mmap(NULL, SCHED_STACK, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (vp->sched_stack == MAP_FAILED) {
            vp->sched_stack = NULL;
            return ENOMEM;
        }
        vp->sched.stack_lo = vp->sched_stack;
        vp->sched.stack_size = SCHED_STACK;
        vp->sched.state = TS_READY;
        tlu_ctx_init(&vp->sched.ctx, vp->sched_stack, SCHED_STACK, tlu_vp_sched_entry, vp);
#if TLU_TSAN
        vp->sched.tsan_fiber = __tsan_create_fiber(0);
#endif
    }
    return 0;
}

int tl_ult_init(const tl_ult_config *cfg_in)
{
    if (tlu_rt.initialized)
        return EBUSY;
    tl_ult_config cfg;
    if (cfg_in)
        cfg = *cfg_in;
    else
        tl_ult_config_init(&cfg);

    cpu_set_t allowed;
    int cpus[CPU_SETSIZE];
    int ncpus = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &allowed))
                cpus[ncpus++] = c;
    if (ncpus == 0) {
        cpus[0] = 0;
        ncpus = 1;
        cfg.pin = 0;
    }
    if (!cfg.nvps)
        cfg.nvps = (unsigned)ncpus;
    if (!cfg.stack_size)
        cfg.stack_size = DEFAULT_STACK;
    if (cfg.nvps > 4096 || cfg.stack_size < TLU_STACK_MIN || cfg.stack_size > TLU_STACK_MAX ||
        (cfg.stack_mode != TL_ULT_STACK_CANARY && cfg.stack_mode != TL_ULT_STACK_GUARD))
        return EINVAL;

    memset(&tlu_rt, 0, sizeof tlu_rt);
    pthread_mutex_init(&tlu_rt.lock, NULL);
    tlu_rt.cfg = cfg;
    tlu_rt.nvps = cfg.nvps;
    tlu_rt.external = cfg.external != 0;
    atomic_init(&tlu_rt.active, cfg.nvps);
    atomic_init(&tlu_rt.allotted, cfg.nvps);
    atomic_init(&tlu_rt.lent, 0);
    tlu_identity_init();
    tlu_fence_init(cfg.membarrier);
    tlu_rt.page = (size_t)sysconf(_SC_PAGESIZE);
    if (getrandom(&tlu_rt.canary, sizeof tlu_rt.canary, GRND_NONBLOCK) != sizeof tlu_rt.canary)
        tlu_rt.canary = 0x5a17c0de5a17c0deull ^ tlu_now_ns() ^ (uintptr_t)&tlu_rt;
    tlu_ctx_capture_fpu();
    long max_map = 65530;
    FILE *mm = fopen("/proc/sys/vm/max_map_count", "r");
    if (mm) {
        if (fscanf(mm, "%ld", &max_map) != 1)
            max_map = 65530;
        fclose(mm);
    }
    tlu_rt.guard_budget = max_map > 8192 ? (uint64_t)(max_map - 8192) / 2 : 0;

    int err = 0;
    tlu_rt.default_pool = tlu_stack_pool_for(cfg.stack_size, &err);
    if (!tlu_rt.default_pool)
        goto fail;
    tlu_rt.vps = calloc(cfg.nvps, sizeof *tlu_rt.vps);
    if (!tlu_rt.vps) {
        err = ENOMEM;
        goto fail;
    }
    for (unsigned i = 0; i < cfg.nvps; i++)
        if ((err = setup_vp(i, cpus, ncpus)))
            goto fail;
    if ((err = tlu_preempt_init()))
        goto fail;

    if (tlu_rt.external) {
        /* every VP is a thread of ours; the caller stays external */
        if (cfg.stack_mode == TL_ULT_STACK_GUARD && cfg.overflow_handler &&
            (err = tlu_stack_install_handler()))
            goto fail;
        tlu_rt.initialized = 1;
        if ((err = tlu_vp_start_all())) {
            tlu_rt.initialized = 0;
            goto fail;
        }
        return 0;
    }

    /* the caller becomes the primordial ULT of VP 0 */
    tlu_vp *vp0 = tlu_rt.vps[0];
    vp0->own_tcb = tlu_read_tp();
    tlu_thread *m = tlu_desc_alloc(NULL);
    if (!m) {
        err = ENOMEM;
        goto fail;
    }
    memset(m, 0, sizeof *m);
    m->flags = TF_PRIMORDIAL;
    m->bound_vp = 0;
    m->state = TS_RUNNING;
    m->vp = vp0;
    tlu_vp_init_kernel_context(m);
    tlu_rt.main_thread = m;
    vp0->current = m;
    tlu_vp_set_self(vp0);
    atomic_store_explicit(&vp0->tid, (int)syscall(SYS_gettid), RLX);

    if (vp0->cpu >= 0) {
        tlu_rt.saved_affinity = malloc(sizeof(cpu_set_t));
        if (tlu_rt.saved_affinity &&
            pthread_getaffinity_np(pthread_self(), sizeof(cpu_set_t), tlu_rt.saved_affinity) == 0) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(vp0->cpu, &one);
            pthread_setaffinity_np(pthread_self(), sizeof one, &one);
        } else {
            free(tlu_rt.saved_affinity);
            tlu_rt.saved_affinity = NULL;
        }
    }
    if (cfg.stack_mode == TL_ULT_STACK_GUARD && cfg.overflow_handler) {
        if ((err = tlu_stack_install_handler()))
            goto fail;
        tlu_stack_altstack_enter(&main_altstack);
    }
    tlu_rt.initialized = 1;
    if ((err = tlu_vp_start_all())) {
        tlu_rt.initialized = 0;
        goto fail;
    }
    return 0;
fail:
    teardown();
    return err ? err : ENOMEM;
}

static int64_t live_threads(void)
{
    uint64_t exited = 0, created = atomic_load_explicit(&tlu_rt.ext_created, RLX);
    for (unsigned i = 0; i < tlu_rt.nvps; i++)
        exited += atomic_load_explicit(&tlu_rt.vps[i]->n_exited, ACQ);
    for (unsigned i = 0; i < tlu_rt.nvps; i++)
        created += atomic_load_explicit(&tlu_rt.vps[i]->n_created, ACQ);
    return (int64_t)(created - exited);
}

int tl_ult_finalize(void)
{
    if (!tlu_rt.initialized)
        return EAGAIN;
    tlu_vp *vp = tlu_vp_self();
    if (tlu_rt.external) {
        if (vp)
            return EPERM;
        while (live_threads() > 0) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
        tlu_preempt_finalize();
        tlu_vp_stop_all();
        teardown();
        return 0;
    }
    if (!vp || vp->current != tlu_rt.main_thread)
        return EPERM;
    /* every other ULT must finish; VP 0 keeps scheduling meanwhile */
    while (live_threads() > 0)
        tl_ult_sleep_ns(20000);
    tlu_preempt_finalize();
    tlu_vp_stop_all();
    tlu_thread *m = tlu_rt.main_thread;
    if (m->tls)
        tlu_tls_run_destructors(m);
#if TLU_TSAN
    m->tsan_fiber = NULL; /* the kernel thread's own */
#endif
    teardown();
    return 0;
}

void tl_ult_get_stats(tl_ult_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!tlu_rt.initialized)
        return;
    st->created = atomic_load_explicit(&tlu_rt.ext_created, RLX);
    for (unsigned i = 0; i < tlu_rt.nvps; i++) {
        tlu_vp *vp = tlu_rt.vps[i];
        st->created += atomic_load_explicit(&vp->n_created, RLX);
        st->exited += atomic_load_explicit(&vp->n_exited, RLX);
        st->steals += atomic_load_explicit(&vp->n_steals, RLX);
        st->inline_joins += atomic_load_explicit(&vp->n_inline, RLX);
        st->vp_sleeps += atomic_load_explicit(&vp->n_sleeps, RLX);
    }
    st->live = st->created - st->exited;
    pthread_mutex_lock(&tlu_rt.lock);
    st->stack_slots = tlu_rt.stack_slots;
    st->stack_bytes = tlu_rt.stack_bytes;
    pthread_mutex_unlock(&tlu_rt.lock);
    st->guard_fallbacks = atomic_load_explicit(&tlu_rt.guard_fallbacks, RLX);
    st->preemptions = tlu_preempt_count();
    st->vp_loans = tlu_preempt_loans();
    st->slice_ns = tlu_preempt_slice_ns();
}
