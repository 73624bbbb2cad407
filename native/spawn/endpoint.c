/* endpoint.c - a thread's mailbox, and how a thread waits for a request.
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

/* A thread that is no task drops its endpoint when it exits. */
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void thread_exit(void *arg)
{
    tlsp_endpoint *ep = arg;
    tlsp_slot_flush();
    if (ep && tlsp_self_ep == ep)
        tlsp_self_ep = NULL;
    tlsp_endpoint_unref(ep);
}

static void make_key(void)
{
    pthread_key_create(&exit_key, thread_exit);
}

tlsp_endpoint *tlsp_endpoint_new(tlsp_task *task)
{
    tlsp_endpoint *ep = calloc(1, sizeof *ep);
    if (!ep)
        return NULL;
    pthread_mutex_init(&ep->lock, NULL);
    ep->posted_tail = &ep->posted_head;
    ep->unexp_tail = &ep->unexp_head;
    atomic_init(&ep->refs, 1); /* its thread */
    ep->task = task;
    return ep;
}

tlsp_endpoint *tlsp_self(void)
{
    tlsp_endpoint *ep = tlsp_self_ep;
    if (TLSP_LIKELY(ep))
        return ep;
    ep = tlsp_endpoint_new(NULL);
    if (!ep) {
        tlsp_note("out of memory for a thread's mailbox");
        abort();
    }
    pthread_once(&exit_once, make_key);
    pthread_setspecific(exit_key, ep);
    tlsp_self_ep = ep;
    return ep;
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
    pthread_mutex_destroy(&ep->lock);
    free(ep);
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
    uint32_t old = atomic_exchange_explicit(&r->state, TLSP_DONE, memory_order_acq_rel);
    if (old == TLSP_SLEEPING)
        tl_rm_futex_wake((uint32_t *)&r->state, 1);
}

/* Spinning helps only while every thread that may run has a CPU to spin
 * on: the tasks alive less those asleep in the library's waits (counted
 * under either limit count), so a tree of tasks mostly waiting for their
 * children still lets its few runnable ones spin. */
static int may_spin(void)
{
    long runnable = atomic_load_explicit(&tlsp_count.running, memory_order_relaxed) -
                    atomic_load_explicit(&tlsp_count.parked, memory_order_relaxed);
    return tlsp_cfg.spin && runnable < (long)tlsp_cfg.affinity_cpus;
}

/* One step of a busy wait.  Every so often it yields: on a machine with
 * more runnable threads than CPUs, the thread that will end the wait may
 * be waiting for this very CPU. */
static inline void spin_step(unsigned i)
{
    if ((i & 31u) == 31u)
        sched_yield();
    else
        tl_cpu_relax();
}

int tlsp_spin_until_changed(_Atomic uint32_t *word, uint32_t seen)
{
    if (!may_spin())
        return 0;
    for (unsigned i = 0; i < tlsp_cfg.spin; i++) {
        spin_step(i);
        if (atomic_load_explicit(word, memory_order_acquire) != seen)
            return 1;
    }
    return 0;
}

void tlsp_req_wait(tlsp_req *r)
{
    if (tlsp_req_done(r))
        return;
    if (may_spin())
        for (unsigned i = 0; i < tlsp_cfg.spin; i++) {
            spin_step(i);
            if (tlsp_req_done(r))
                return;
        }
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
    if (park >= 0)
        tlsp_unpark(park);
}

tlsp_req *tlsp_req_alloc(int kind, const tlsp_view *view)
{
    tlsp_req *r = malloc(sizeof *r);
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
