/*
 * stack.c - ULT stacks: size-class pools carved out of large mappings,
 * per-VP caches, guard pages or canaries, the overflow reporter.
 *
 * Memory. A pool serves one slot size. Slots are carved from chunks of
 * about 4 MiB mapped MAP_NORESERVE: the kernel commits a page only when a
 * thread first touches it, so a 64 KiB stack whose thread used 2 KiB costs
 * one 4 KiB page, and a chunk is one VMA however many stacks it holds
 * (vm.max_map_count, 65530 by default, limits VMAs, not bytes). Freed
 * stacks go to the freeing VP's cache (LIFO, still warm), overflowing into
 * the pool's global list. Nothing is unmapped before tl_ult_finalize.
 *
 * Guard mode. Every slot starts with a PROT_NONE page. mprotect on a page
 * in the middle of a chunk splits the VMA, so each guarded stack costs two
 * VMAs: about 32K guarded stacks per process by default. The runtime
 * keeps (vm.max_map_count - 8192) / 2 as its budget, leaving mappings for
 * the rest of the process; past it (or if mprotect fails) a slot gets the
 * canary only and tlu_rt.guard_fallbacks counts it.
 *
 * Canary. The lowest TLU_CANARY_BYTES of every stack hold a value derived
 * from a per-process secret and the address; the scheduler checks it (and
 * that the stack pointer is above it) whenever a ULT switches out or
 * exits. It detects an overflow after the fact, at the next switch, unless
 * the overflow skipped over it or the thread crashed first. Writing it
 * touches the lowest page of the stack: a stack larger than a page costs
 * two resident pages instead of one. Guard-mode stacks skip it (the guard
 * page detects more, for free) unless some slot fell back to the canary.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHUNK_TARGET ((size_t)4 << 20)

static size_t round_up(size_t x, size_t to)
{
    return (x + to - 1) / to * to;
}

tlu_stack_pool *tlu_stack_pool_for(size_t size, int *err)
{
    int guard = tlu_rt.cfg.stack_mode == TL_ULT_STACK_GUARD;
    if (size < TLU_STACK_MIN || size > TLU_STACK_MAX) {
        *err = EINVAL;
        return NULL;
    }
    size_t usable = guard ? round_up(size, tlu_rt.page) : round_up(size, 256);
    if (tlu_rt.default_pool && usable == tlu_rt.default_pool->usable)
        return tlu_rt.default_pool;
    pthread_mutex_lock(&tlu_rt.lock);
    tlu_stack_pool *p;
    for (p = tlu_rt.pools; p; p = p->next)
        if (p->usable == usable)
            break;
    if (!p) {
        p = calloc(1, sizeof *p);
        if (p) {
            p->usable = usable;
            p->guard = guard;
            p->slot = usable + (guard ? tlu_rt.page : 0);
            p->next = tlu_rt.pools;
            tlu_rt.pools = p;
        }
    }
    pthread_mutex_unlock(&tlu_rt.lock);
    if (!p)
        *err = ENOMEM;
    return p;
}

static int record_chunk(void *addr, size_t len)
{
    if (tlu_rt.nchunks + 2 > tlu_rt.chunks_cap) {
        size_t cap = tlu_rt.chunks_cap ? 2 * tlu_rt.chunks_cap : 64;
        void **n = realloc(tlu_rt.chunks, cap * sizeof *n);
        if (!n)
            return ENOMEM;
        tlu_rt.chunks = n;
        tlu_rt.chunks_cap = cap;
    }
    tlu_rt.chunks[tlu_rt.nchunks++] = addr;
    tlu_rt.chunks[tlu_rt.nchunks++] = (void *)len;
    return 0;
}

/* Under tlu_rt.lock: one slot from the pool's global list or a chunk. */
static char *pool_take(tlu_stack_pool *p)
{
    if (p->free) {
        char *lo = p->free;
        p->free = *(void **)(lo + p->usable - sizeof(void *));
        p->nfree--;
        return lo;
    }
    if (p->carve == p->carve_end) {
        size_t nslots = CHUNK_TARGET / p->slot;
        if (nslots == 0)
            nslots = 1;
        size_t len = round_up(nslots * p->slot, tlu_rt.page);
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        if (record_chunk(m, len)) {
            munmap(m, len);
            return NULL;
        }
        p->carve = m;
        p->carve_end = (char *)m + nslots * p->slot;
        tlu_rt.stack_bytes += len;
    }
    char *slot = p->carve;
    p->carve += p->slot;
    tlu_rt.stack_slots++;
    if (p->guard) {
        /* each guard page costs a VMA: stay well below vm.max_map_count,
         * or every later mmap of the process (malloc, thread stacks, our
         * own chunks) would fail */
        if (tlu_rt.guarded < tlu_rt.guard_budget && mprotect(slot, tlu_rt.page, PROT_NONE) == 0)
            tlu_rt.guarded++;
        else
            atomic_fetch_add_explicit(&tlu_rt.guard_fallbacks, 1, RLX);
        return slot + tlu_rt.page;
    }
    return slot;
}

static struct tlu_stack_cache *cache_of(tlu_vp *vp, tlu_stack_pool *p)
{
    for (int i = 0; i < TLU_STACK_CACHE_WAYS; i++)
        if (vp->scache[i].pool == p)
            return &vp->scache[i];
    /* evict the way with the fewest stacks */
    struct tlu_stack_cache *c = &vp->scache[0];
    for (int i = 1; i < TLU_STACK_CACHE_WAYS; i++)
        if (vp->scache[i].n < c->n)
            c = &vp->scache[i];
    if (c->pool && c->head) {
        pthread_mutex_lock(&tlu_rt.lock);
        while (c->head) {
            char *lo = c->head;
            c->head = *(void **)(lo + c->pool->usable - sizeof(void *));
            *(void **)(lo + c->pool->usable - sizeof(void *)) = c->pool->free;
            c->pool->free = lo;
            c->pool->nfree++;
        }
        pthread_mutex_unlock(&tlu_rt.lock);
    }
    c->pool = p;
    c->head = NULL;
    c->n = 0;
    return c;
}

struct refill {
    tlu_vp *vp;
    tlu_stack_pool *pool;
    char *lo;
};

/* cache miss: global list or a new chunk, under the lock (slow path, on
 * the scheduler stack) */
static void stack_refill(void *arg)
{
    struct refill *r = arg;
    tlu_stack_pool *p = r->pool;
    struct tlu_stack_cache *c = cache_of(r->vp, p);
    pthread_mutex_lock(&tlu_rt.lock);
    char *lo = pool_take(p);
    /* take a few more at once: fewer trips to the global lock */
    for (int i = 0; lo && i < 8 && p->free; i++) {
        char *x = pool_take(p);
        *(void **)(x + p->usable - sizeof(void *)) = c->head;
        c->head = x;
        c->n++;
    }
    pthread_mutex_unlock(&tlu_rt.lock);
    if (!lo)
        tlu_die("threadlab-ult: cannot map a %zu-byte stack: %s", p->slot, strerror(errno));
    r->lo = lo;
}

char *tlu_stack_get(tlu_vp *vp, tlu_stack_pool *p)
{
    struct tlu_stack_cache *c = cache_of(vp, p);
    char *lo = c->head;
    if (TLU_LIKELY(lo)) {
        c->head = *(void **)(lo + p->usable - sizeof(void *));
        c->n--;
    } else {
        struct refill r = {vp, p, NULL};
        tlu_slowpath(vp, stack_refill, &r);
        lo = r.lo;
    }
    if (tlu_stack_needs_canary(p))
        tlu_stack_write_canary(lo);
    return lo;
}

void tlu_stack_put(tlu_vp *vp, tlu_stack_pool *p, char *lo)
{
#if TLU_ASAN
    /* frames that never returned (the exit path) left poisoned redzones */
    ASAN_UNPOISON_MEMORY_REGION(lo, p->usable);
#endif
    struct tlu_stack_cache *c = cache_of(vp, p);
    *(void **)(lo + p->usable - sizeof(void *)) = c->head;
    c->head = lo;
    if (TLU_UNLIKELY(++c->n > TLU_STACK_CACHE_MAX)) {
        pthread_mutex_lock(&tlu_rt.lock);
        while (c->n > TLU_STACK_CACHE_MAX / 2) {
            char *x = c->head;
            c->head = *(void **)(x + p->usable - sizeof(void *));
            c->n--;
            *(void **)(x + p->usable - sizeof(void *)) = p->free;
            p->free = x;
            p->nfree++;
        }
        pthread_mutex_unlock(&tlu_rt.lock);
    }
}

void tlu_stack_flush_cache(tlu_vp *vp)
{
    for (int i = 0; i < TLU_STACK_CACHE_WAYS; i++) {
        vp->scache[i].pool = NULL;
        vp->scache[i].head = NULL;
        vp->scache[i].n = 0;
    }
}

void tlu_stack_finalize(void)
{
    for (size_t i = 0; i < tlu_rt.nchunks; i += 2)
        munmap(tlu_rt.chunks[i], (size_t)tlu_rt.chunks[i + 1]);
    free(tlu_rt.chunks);
    tlu_rt.chunks = NULL;
    tlu_rt.nchunks = tlu_rt.chunks_cap = 0;
    while (tlu_rt.pools) {
        tlu_stack_pool *p = tlu_rt.pools;
        tlu_rt.pools = p->next;
        free(p);
    }
}

/* ---- overflow reporting ------------------------------------------- */

TLU_COLD _Noreturn void tlu_stack_overflow(tlu_thread *t, const char *how)
{
    tlu_die("threadlab-ult: stack overflow in user-level thread %p (%s; stack %p, %u bytes)",
           (void *)t, how, (void *)t->stack_lo, (unsigned)t->stack_size);
}

static struct sigaction old_segv;
static int handler_installed;

static size_t fmt_hex(char *out, uintptr_t v)
{
    char tmp[2 + 16];
    size_t n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    out[0] = '0';
    out[1] = 'x';
    for (size_t i = 0; i < n; i++)
        out[2 + i] = tmp[n - 1 - i];
    return n + 2;
}

static void segv_handler(int sig, siginfo_t *si, void *uctx)
{
    tlu_vp *vp = tlu_vp_self();
    tlu_thread *t = vp ? vp->current : NULL;
    char *addr = si->si_addr;
    if (t && t->stack_lo && addr >= t->stack_lo - tlu_rt.page && addr < t->stack_lo) {
        char msg[160];
        size_t n = 0;
        static const char a[] = "threadlab-ult: stack overflow in user-level thread ";
        static const char b[] = " (guard page hit at ";
        static const char c[] = ")\n";
        memcpy(msg + n, a, sizeof a - 1);
        n += sizeof a - 1;
        n += fmt_hex(msg + n, (uintptr_t)t);
        memcpy(msg + n, b, sizeof b - 1);
        n += sizeof b - 1;
        n += fmt_hex(msg + n, (uintptr_t)addr);
        memcpy(msg + n, c, sizeof c - 1);
        n += sizeof c - 1;
        ssize_t w = write(2, msg, n);
        (void)w;
        /* die of the SIGSEGV: the faulting access repeats on return */
        signal(SIGSEGV, SIG_DFL);
        return;
    }
    if (old_segv.sa_flags & SA_SIGINFO) {
        if (old_segv.sa_sigaction) {
            old_segv.sa_sigaction(sig, si, uctx);
            return;
        }
    } else if (old_segv.sa_handler != SIG_DFL && old_segv.sa_handler != SIG_IGN &&
               old_segv.sa_handler != NULL) {
        old_segv.sa_handler(sig);
        return;
    }
    signal(SIGSEGV, SIG_DFL);
}

int tlu_stack_install_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = segv_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old_segv) != 0)
        return errno;
    handler_installed = 1;
    return 0;
}

void tlu_stack_remove_handler(void)
{
    if (handler_installed) {
        sigaction(SIGSEGV, &old_segv, NULL);
        handler_installed = 0;
    }
}

#define ALTSTACK_SIZE (64 * 1024)

/* The SIGSEGV of an overflow must be handled on another stack: give the
 * calling kernel thread an alternate signal stack unless it has one. */
int tlu_stack_altstack_enter(void **mem)
{
    stack_t old;
    *mem = NULL;
    if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE))
        return 0;
    void *m = malloc(ALTSTACK_SIZE);
    if (!m)
        return ENOMEM;
    stack_t ss = {.ss_sp = m, .ss_size = ALTSTACK_SIZE, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        free(m);
        return errno;
    }
    *mem = m;
    return 0;
}

void tlu_stack_altstack_leave(void *mem)
{
    if (!mem)
        return;
    stack_t ss = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
    sigaltstack(&ss, NULL);
    free(mem);
}
