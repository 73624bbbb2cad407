/* endpoint.c - a rank's mailbox (a task's, or the process's), and how a
 * thread waits for a request.
 *
 * A request's state word is the only thing its waiter sleeps on and the
 * only thing its completer touches last: the completer exchanges it to
 * DONE and, only when the waiter announced that it sleeps (SLEEPING),
 * issues a FUTEX_WAKE on it.  The waiter may return, and free or reuse the
 * request, as soon as it sees DONE; a wake-up that then lands on reused
 * memory is a spurious one, which every wait below tolerates. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "threadlab/rm.h"

TLSP_TLS tlsp_endpoint *tlsp_self_ep;
TLSP_TLS tlsp_task *tlsp_self_task;
TLSP_TLS int tlsp_self_main;

/* The mailbox of the process: its threads that belong to no task share it
 * (a process's threads are one MPI rank: a communicator one of them got,
 * by a spawn, serves the others, as in MPICH's threads/spawn/multispawn).
 * It lives as long as the process. */
static tlsp_endpoint *process_ep;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

/* A thread that is no task's own flushes its cache of handle slots when
 * it exits. */
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void thread_exit(void *arg)
{
    (void)arg;
    tlsp_slot_flush();
    tlsp_self_ep = NULL;
}

static void make_key(void)
{
    pthread_key_create(&exit_key, thread_exit);
}

/* size zeroed bytes aligned to align (a power of 2 dividing size: the
 * cache-aligned mailboxes and requests), or NULL. */
static void *zalloc_aligned(size_t align, size_t size)
{
    void *p = aligned_alloc(align, size);
    if (p)
        memset(p, 0, size);
    return p;
}

tlsp_endpoint *tlsp_endpoint_new(void)
{
    tlsp_endpoint *ep = zalloc_aligned(_Alignof(tlsp_endpoint), sizeof *ep);
    if (!ep)
        return NULL;
    ep->posted_tail = &ep->posted_head;
    ep->unexp_tail = &ep->unexp_head;
    atomic_init(&ep->refs, 1); /* its thread */
    return ep;
}

static void make_process_ep(void)
{
    process_ep = tlsp_endpoint_new();
    if (!process_ep) {
        tlsp_note("out of memory for the process's mailbox");
        abort();
    }
}

tlsp_endpoint *tlsp_self_slow(void)
{
    tlsp_endpoint *ep;
    /* a thread started from a task's (task.c) knows only its task so far */
    if (tlsp_self_task) {
        ep = tlsp_self_task->ep;
    } else {
        pthread_once(&process_once, make_process_ep);
        ep = process_ep;
    }
    pthread_once(&exit_once, make_key);
    pthread_setspecific(exit_key, ep);
    tlsp_self_ep = ep;
    return ep;
}

void tlsp_endpoint_trim(tlsp_endpoint *ep)
{
    tlsp_ep_lock(ep);
    tlsp_msg *m = ep->pool;
    ep->pool = NULL;
    ep->pooled = 0;
    tlsp_ep_unlock(ep);
    while (m) {
        tlsp_msg *next = m->next;
        free(m);
        m = next;
    }
}

void tlsp_endpoint_ref(tlsp_endpoint *ep)
{
    atomic_fetch_add_explicit(&ep->refs, 1, memory_order_relaxed);
}

void tlsp_endpoint_unref(tlsp_endpoint *ep)
{
    if (!ep || atomic_fetch_sub_explicit(&ep->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* Nobody can send here any more: what was never received goes. */
    for (tlsp_msg *m = ep->unexp_head, *next; m; m = next) {
        next = m->next;
        if (m->sreq)
            tlsp_req_complete(m->sreq); /* its sender must not wait forever */
        else
            free(m);
    }
    for (tlsp_msg *m = ep->pool, *next; m; m = next) {
        next = m->next;
        free(m);
    }
    free(ep);
}

/* The mailbox lock sleeps on its word's futex.  No wake-up is lost (the
 * argument of word_lock.h): FUTEX_WAIT compares the word with 2 under the
 * kernel's lock of the word's hash bucket, which FUTEX_WAKE, issued after
 * the unlock's exchange, takes too.  The timeout only bounds what a lost
 * one would cost, as in tlsp_req_wait.  FUTEX_WAKE does not read the
 * word: were the mailbox freed and reused before it, the wake-up would be
 * a spurious one, which every wait tolerates. */
static void ep_lock_wait(_Atomic uint32_t *lock, uint32_t val, void *ctx)
{
    (void)ctx;
    tl_rm_futex_wait((uint32_t *)lock, val, UINT64_C(1000000000));
}

void tlsp_ep_lock_slow(tlsp_endpoint *ep)
{
    /* The holder is in a few list steps: a short spin usually finds the
     * lock free. */
    tl_word_lock_contended(&ep->lock, 100, ep_lock_wait, NULL);
}

void tlsp_ep_wake_locker(_Atomic uint32_t *lock, void *ctx)
{
    (void)ctx;
    tl_rm_futex_wake((uint32_t *)lock, 1);
}

/* ------------------------------------------------------------- requests */

void tlsp_req_init(tlsp_req *r, int kind, const tlsp_view *view)
{
    memset(r, 0, sizeof *r);
    atomic_init(&r->state, TLSP_PENDING);
    r->kind = kind;
    r->errors_return = view && view->errors_return;
    r->st_error = MPI_SUCCESS;
}

int tlsp_req_done(const tlsp_req *r)
{
    return atomic_load_explicit(&((tlsp_req *)r)->state, memory_order_acquire) == TLSP_DONE;
}

void tlsp_req_complete(tlsp_req *r)
{
    tlsp_coloc_note(&r->coloc);
    uint32_t old = atomic_exchange_explicit(&r->state, TLSP_DONE, memory_order_acq_rel);
    if (old == TLSP_SLEEPING)
        tl_rm_futex_wake((uint32_t *)&r->state, 1);
}

/* ------------------------------------------------------------ spinning
 *
 * A waiter spins before it sleeps: a futex wake-up costs microseconds (tens
 * on a virtual machine, whose idle CPUs halt), a message between threads
 * on two CPUs a few hundred nanoseconds.  Three rules keep the spin from
 * hurting:
 *
 * - It spins only while every thread that may run has a CPU to spin on:
 *   the tasks alive less those asleep in the library's waits (counted
 *   under either limit count), so a tree of tasks mostly waiting for its
 *   children still lets its few runnable ones spin.
 * - It yields rarely, every TLSP_YIELD_EVERY steps (about 25 us of pause
 *   instructions), in case the thread that will end the wait needs this
 *   very CPU.  A yield is a system call (0.5 us on the development VM),
 *   and two threads that yield to each other every microsecond on one CPU
 *   stay there: a thread that ran a microsecond ago is "cache hot" to the
 *   scheduler's balancer, which then never moves it to the idle CPU.  That
 *   kept a parent and its task on one CPU for whole runs (2-3 us per
 *   message instead of 0.3).
 * - A waiter whose wait was ended, during its yield, by a thread on its own
 *   CPU shares that CPU with its partner (the completer tells: it knows
 *   its CPU, tlsp_coloc_note; only when the waiter announced a yield, so
 *   a wait ended by a thread elsewhere costs nothing).  The waiter then
 *   moves itself off that CPU, when its mask allows another: it narrows
 *   its mask to the others, which migrates it at once, and restores it.
 *   Neither the balancer (both threads are "hot") nor a sleep and a
 *   wake-up (the wake-up's search for an idle CPU is cut short when the
 *   CPUs look busy, and spinners look busy) reliably parted the two here.
 *   If the two meet again on one CPU right after (no other CPU was free),
 *   they share it for the next TLSP_SHARE_WAITS waits, yielding every
 *   TLSP_SHARE_YIELD steps (a message then costs two context switches),
 *   and then try again to get apart. */

enum { TLSP_YIELD_EVERY = 1024, TLSP_SHARE_YIELD = 32, TLSP_SHARE_WAITS = 1000 }; /* periods: powers of 2 */

/* This thread's view of where its partners run. */
static TLSP_TLS struct {
    int tried;      /* a partner ran on this CPU and this thread moved; no wait since ended spinning alone */
    unsigned share; /* waits left to share the CPU, yielding often */
} spin_view;

static int may_spin(void)
{
    long runnable = atomic_load_explicit(&tlsp_count.running, memory_order_relaxed) -
                    atomic_load_explicit(&tlsp_count.parked, memory_order_relaxed);
    return tlsp_cfg.spin && runnable < (long)tlsp_cfg.affinity_cpus;
}

void tlsp_coloc_note(tlsp_coloc *c)
{
    int on = atomic_load_explicit(&c->yielded_on, memory_order_relaxed);
    if (TLSP_UNLIKELY(on) && on - 1 == sched_getcpu())
        atomic_store_explicit(&c->shared, 1, memory_order_relaxed);
}

/* Moves the calling thread off CPU cpu, its mask unchanged; 0 when the
 * mask holds no other CPU. */
static int move_off(int cpu)
{
    cpu_set_t mine, others;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0 || CPU_COUNT(&mine) < 2 || !CPU_ISSET(cpu, &mine))
        return 0;
    others = mine;
    CPU_CLR(cpu, &others);
    if (sched_setaffinity(0, sizeof others, &others) != 0)
        return 0;
    sched_setaffinity(0, sizeof mine, &mine);
    return 1;
}

/* After a busy wait watched by c ended (done or not). */
static void spin_end(tlsp_coloc *c)
{
    if (spin_view.share)
        spin_view.share--;
    int on = atomic_load_explicit(&c->yielded_on, memory_order_relaxed);
    if (TLSP_LIKELY(!on)) {
        spin_view.tried = 0; /* it ended before a yield: the partner runs elsewhere */
        return;
    }
    int shared = atomic_load_explicit(&c->shared, memory_order_acquire);
    atomic_store_explicit(&c->yielded_on, 0, memory_order_relaxed);
    atomic_store_explicit(&c->shared, 0, memory_order_relaxed);
    if (!shared)
        return;
    atomic_fetch_add_explicit(&tlsp_count.cpu_shared, 1, memory_order_relaxed);
    if (spin_view.share)
        return;
    if (!spin_view.tried && move_off(on - 1)) {
        spin_view.tried = 1;
        atomic_fetch_add_explicit(&tlsp_count.cpu_moves, 1, memory_order_relaxed);
    } else {
        spin_view.tried = 0;
        spin_view.share = TLSP_SHARE_WAITS;
    }
}

int tlsp_spin_until_changed(_Atomic uint32_t *word, uint32_t seen, tlsp_coloc *c)
{
    if (!may_spin())
        return 0;
    /* every period-th step yields, announcing the CPU it yields on */
    unsigned period_mask = (spin_view.share ? TLSP_SHARE_YIELD : TLSP_YIELD_EVERY) - 1;
    int changed = 0;
    for (unsigned i = 1; i <= tlsp_cfg.spin && !changed; i++) {
        if (i & period_mask) {
            tl_cpu_relax();
        } else {
            atomic_store_explicit(&c->yielded_on, sched_getcpu() + 1, memory_order_relaxed);
            sched_yield();
        }
        changed = atomic_load_explicit(word, memory_order_acquire) != seen;
    }
    spin_end(c);
    return changed;
}

void tlsp_slept(void)
{
    atomic_fetch_add_explicit(&tlsp_count.waits_slept, 1, memory_order_relaxed);
}

void tlsp_req_wait(tlsp_req *r)
{
    /* Only its waiter sets SLEEPING: while it spins, the state leaves
     * PENDING only for DONE. */
    if (tlsp_req_done(r) || tlsp_spin_until_changed(&r->state, TLSP_PENDING, &r->coloc))
        return;
    int park = -1; /* parked at the first sleep, not before: a wait that ends spinning keeps its slot */
    for (;;) {
        uint32_t expected = TLSP_PENDING;
        if (!atomic_compare_exchange_strong_explicit(&r->state, &expected, TLSP_SLEEPING, memory_order_acq_rel,
                                                     memory_order_acquire) &&
            expected == TLSP_DONE)
            break;
        if (park < 0)
            park = tlsp_park();
        /* A long timeout: a lost wake-up (there is none by design) would
         * cost a second, never a hang. */
        tl_rm_futex_wait((uint32_t *)&r->state, TLSP_SLEEPING, UINT64_C(1000000000));
        if (tlsp_req_done(r))
            break;
    }
    if (park >= 0) {
        tlsp_unpark(park);
        tlsp_slept();
    }
}

tlsp_req *tlsp_req_array(size_t n)
{
    if (n == 0)
        n = 1;
    if (n > SIZE_MAX / sizeof(tlsp_req))
        return NULL;
    return zalloc_aligned(_Alignof(tlsp_req), n * sizeof(tlsp_req));
}

tlsp_req *tlsp_req_alloc(int kind, const tlsp_view *view)
{
    tlsp_req *r = tlsp_req_array(1);
    if (!r)
        return NULL;
    tlsp_req_init(r, kind, view);
    r->index = tlsp_slot_alloc(TLSP_TABLE_REQ, r);
    if (!r->index) {
        free(r);
        return NULL;
    }
    return r;
}

void tlsp_req_free(tlsp_req *r)
{
    tlsp_slot_free(TLSP_TABLE_REQ, r->index);
    free(r);
}

tlsp_req *tlsp_req_lookup(MPI_Request h, int *bad)
{
    *bad = 0;
    if (TLSP_LIKELY(!tlsp_is_req_handle(h)))
        return NULL;
    tlsp_req *r = tlsp_slot_get(TLSP_TABLE_REQ, tlsp_req_index(h));
    if (!r)
        *bad = 1;
    return r;
}
