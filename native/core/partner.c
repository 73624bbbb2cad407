/* partner.c - a partner thread that runs exactly one round per timing. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

long tl_futex_wait(uint32_t *word, uint32_t expected)
{
    return syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

long tl_futex_wake(uint32_t *word, int count)
{
    return syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

struct tl_partner {
    tl_ctx *ctx;
    unsigned slot;
    tl_partner_fn fn;
    void *arg;
    pthread_t thread;
    /* Commands count up: the partner runs a round for every increment of
     * `go`, and publishes the number it finished in `done`. */
    _Atomic uint32_t go;
    _Atomic uint32_t done;
    _Atomic uint64_t iterations;
    _Atomic int stop;
    /* Spinning before sleeping only helps when the two threads can run at
     * once; on one CPU it delays the very thread being waited for. */
    int spin;
};

/* Spins briefly (the handshake is usually immediate when the threads are on
 * different CPUs), then sleeps on the futex so a partner on the same CPU
 * does not steal the timeslice it is waiting for. */
static void wait_change(_Atomic uint32_t *word, uint32_t seen, int spin)
{
    for (int i = 0; spin && i < 2000; i++) {
        if (atomic_load_explicit(word, memory_order_acquire) != seen)
            return;
        tl_cpu_relax();
    }
    while (atomic_load_explicit(word, memory_order_acquire) == seen)
        tl_futex_wait((uint32_t *)word, seen);
}

static void *partner_main(void *arg)
{
    tl_partner *p = arg;
    tl_bind_self(p->ctx, p->slot);
    uint32_t seen = 0;
    for (;;) {
        wait_change(&p->go, seen, p->spin);
        seen = atomic_load_explicit(&p->go, memory_order_acquire);
        if (atomic_load_explicit(&p->stop, memory_order_acquire))
            break;
        p->fn(p->arg, atomic_load_explicit(&p->iterations, memory_order_relaxed));
        atomic_store_explicit(&p->done, seen, memory_order_release);
        tl_futex_wake((uint32_t *)&p->done, 1);
    }
    return NULL;
}

tl_partner *tl_partner_start(tl_ctx *ctx, unsigned slot, tl_partner_fn fn, void *arg)
{
    tl_partner *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->ctx = ctx;
    p->slot = slot;
    p->fn = fn;
    p->arg = arg;
    p->spin = !(slot < ctx->nslots && ctx->cpu[slot] >= 0 && ctx->cpu[slot] == ctx->cpu[0]);
    int rc = tl_thread_create(ctx, slot, &p->thread, partner_main, p);
    if (rc != 0) {
        errno = rc;
        free(p);
        return NULL;
    }
    return p;
}

void tl_partner_go(tl_partner *p, uint64_t iterations)
{
    atomic_store_explicit(&p->iterations, iterations, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->go, 1, memory_order_release);
    tl_futex_wake((uint32_t *)&p->go, 1);
}

void tl_partner_wait(tl_partner *p)
{
    uint32_t want = atomic_load_explicit(&p->go, memory_order_acquire);
    uint32_t seen;
    while ((seen = atomic_load_explicit(&p->done, memory_order_acquire)) != want)
        wait_change(&p->done, seen, p->spin);
}

void tl_partner_stop(tl_partner *p)
{
    if (!p)
        return;
    atomic_store_explicit(&p->stop, 1, memory_order_release);
    atomic_fetch_add_explicit(&p->go, 1, memory_order_release);
    tl_futex_wake((uint32_t *)&p->go, 1);
    pthread_join(p->thread, NULL);
    free(p);
}

int tl_team_start(tl_ctx *ctx, tl_team *t, unsigned first_slot, unsigned n, tl_partner_fn fn, void *args,
                  size_t arg_size)
{
    t->n = 0;
    t->p = calloc(n ? n : 1, sizeof *t->p);
    if (!t->p) {
        tl_fail(ctx, "out of memory");
        return -1;
    }
    for (; t->n < n; t->n++) {
        t->p[t->n] = tl_partner_start(ctx, first_slot + t->n, fn, (char *)args + t->n * arg_size);
        if (!t->p[t->n]) {
            tl_fail(ctx, "cannot start thread %u: %s", first_slot + t->n, strerror(errno));
            while (t->n > 0)
                tl_partner_stop(t->p[--t->n]);
            free(t->p);
            t->p = NULL;
            return -1;
        }
    }
    return 0;
}

void tl_team_go(tl_team *t, uint64_t iterations)
{
    for (unsigned i = 0; i < t->n; i++)
        tl_partner_go(t->p[i], iterations);
}

void tl_team_wait(tl_team *t)
{
    for (unsigned i = 0; i < t->n; i++)
        tl_partner_wait(t->p[i]);
}

void tl_team_stop(tl_team *t)
{
    for (unsigned i = 0; i < t->n; i++)
        tl_partner_stop(t->p[i]);
    free(t->p);
    t->p = NULL;
    t->n = 0;
}
