/* p2p.c - messages between threads: matching and copying.
 *
 * Each receiving rank's mailbox (its endpoint: a task's, or the process's,
 * shared by the rank's threads) holds two queues under
 * its own lock: the receives it posted, in order, and the messages that
 * arrived before a matching receive, in order.  A sender takes the
 * receiver's lock, gives its message to the first posted receive that
 * matches (source, tag, context), and copies straight into that receive's
 * buffer after releasing the lock; else it queues the message: an eager
 * copy when small (the send completes at once), or itself when large (the
 * receiver will copy straight from the sender's buffer, then complete the
 * send).  A receiver does the mirror image on its own mailbox.  Both
 * queues are searched from the front and appended at the back under one
 * lock, so two messages of one sender to one receiver on one communicator
 * match in the order they were sent (MPI's non-overtaking rule), and each
 * receive takes the earliest message it matches.  Exactly the thread that
 * waits for a request is woken, by the thread that completes it. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "threadlab/rm.h"

static inline int matches(uint32_t want_ctx, int want_src, int want_tag, uint32_t ctx, int src, int tag)
{
    return want_ctx == ctx && (want_src == MPI_ANY_SOURCE || want_src == src) &&
           (want_tag == MPI_ANY_TAG || want_tag == tag);
}

/* Fills receive r from a sender's buffer and completes it. */
static void deliver(tlsp_req *r, int src, int tag, const tlsp_buf *from, size_t bytes)
{
    int rc = tlsp_copy(from, bytes, &r->rbuf, r->cap);
    r->st_source = src;
    r->st_tag = tag;
    r->st_bytes = bytes < r->cap ? bytes : r->cap;
    r->st_error = rc;
    tlsp_req_complete(r);
}

/* Under dest->lock: queue m, and note whether a thread sleeps in a probe
 * on dest (all of them are woken: each looks for its own message). */
static int enqueue_locked(tlsp_endpoint *dest, tlsp_msg *m)
{
    m->next = NULL;
    tlsp_coloc_note(&dest->coloc);
    *dest->unexp_tail = m;
    dest->unexp_tail = &m->next;
    atomic_fetch_add_explicit(&dest->queued, 1, memory_order_release);
    if (dest->probing) {
        atomic_fetch_add_explicit(&dest->arrivals, 1, memory_order_release);
        return 1;
    }
    return 0;
}

void tlsp_isend_ep(tlsp_endpoint *dest, uint32_t ctx, int src, int tag, const tlsp_buf *b, tlsp_req *s)
{
    int err = MPI_SUCCESS;
    long lbytes = tlsp_buf_bytes(b, &err);
    size_t bytes = lbytes < 0 ? 0 : (size_t)lbytes;
    s->sbuf = *b;
    s->st_bytes = bytes;
    int wake = 0;

    tlsp_ep_lock(dest);
    tlsp_req **pp = &dest->posted_head, *r;
    for (r = *pp; r; pp = &r->next, r = r->next)
        if (matches(r->ctx, r->src, r->tag, ctx, src, tag))
            break;
    if (r) {
        *pp = r->next;
        if (dest->posted_tail == &r->next)
            dest->posted_tail = pp;
        tlsp_ep_unlock(dest);
        deliver(r, src, tag, b, bytes);
        tlsp_req_complete(s);
        return;
    }
    if (!s->sync && bytes <= tlsp_cfg.eager_bytes) {
        tlsp_msg *m = NULL;
        int block = bytes <= TLSP_BLOCK_PAYLOAD;
        if (block && dest->pool) {
            m = dest->pool;
            dest->pool = m->next;
            dest->pooled--;
        } else {
            m = block ? aligned_alloc(64, TLSP_BLOCK_BYTES) : malloc(sizeof *m + bytes);
        }
        if (m) {
            m->block = block;
            m->payload = (unsigned char *)(m + 1);
            if (tlsp_pack(b, m->payload, bytes) == MPI_SUCCESS) {
                m->ctx = ctx;
                m->src = src;
                m->tag = tag;
                m->bytes = bytes;
                m->sreq = NULL;
                wake = enqueue_locked(dest, m);
                tlsp_ep_unlock(dest);
                if (wake)
                    tl_rm_futex_wake((uint32_t *)&dest->arrivals, INT_MAX);
                tlsp_req_complete(s);
                return;
            }
            free(m);
        }
    }
    s->msg.ctx = ctx;
    s->msg.src = src;
    s->msg.tag = tag;
    s->msg.bytes = bytes;
    s->msg.sreq = s;
    s->msg.payload = NULL;
    wake = enqueue_locked(dest, &s->msg);
    tlsp_ep_unlock(dest);
    if (wake)
        tl_rm_futex_wake((uint32_t *)&dest->arrivals, INT_MAX);
}

/* Under self->lock: takes m, which *pp points to, out of the queue. */
static void unlink_locked(tlsp_endpoint *self, tlsp_msg **pp, tlsp_msg *m)
{
    *pp = m->next;
    if (self->unexp_tail == &m->next)
        self->unexp_tail = pp;
}

/* Called with self->lock held, releases it: fills receive r from m, a
 * message out of self's queue already, and disposes of m. */
static void take_locked(tlsp_endpoint *self, tlsp_msg *m, tlsp_req *r)
{
    if (m->block) {
        /* Copied out under the lock (a few bytes), the block goes back to
         * the pool in the same hold. */
        tlsp_buf packed = {m->payload, (int)m->bytes, MPI_BYTE};
        deliver(r, m->src, m->tag, &packed, m->bytes);
        int keep = self->pooled < TLSP_POOL_MAX;
        if (keep) {
            m->next = self->pool;
            self->pool = m;
            self->pooled++;
        }
        tlsp_ep_unlock(self);
        if (!keep)
            free(m);
        return;
    }
    tlsp_ep_unlock(self);
    if (m->sreq) {
        /* m lives inside the sender's request: done with it before the
         * sender may go on. */
        tlsp_req *s = m->sreq;
        deliver(r, m->src, m->tag, &s->sbuf, m->bytes);
        tlsp_req_complete(s);
    } else {
        tlsp_buf packed = {m->payload, (int)m->bytes, MPI_BYTE};
        deliver(r, m->src, m->tag, &packed, m->bytes);
        free(m);
    }
}

/* r receives into b (its capacity: 0 for a buffer MPI would reject). */
static void set_receive_buffer(tlsp_req *r, const tlsp_buf *b)
{
    int err = MPI_SUCCESS;
    long cap = tlsp_buf_bytes(b, &err);
    r->rbuf = *b;
    r->cap = cap < 0 ? 0 : (size_t)cap;
}

void tlsp_irecv_ctx(tlsp_endpoint *self, uint32_t ctx, int src, int tag, const tlsp_buf *b, tlsp_req *r)
{
    set_receive_buffer(r, b);
    r->ctx = ctx;
    r->src = src;
    r->tag = tag;

    tlsp_ep_lock(self);
    tlsp_msg **pp = &self->unexp_head, *m;
    for (m = *pp; m; pp = &m->next, m = m->next)
        if (matches(ctx, src, tag, m->ctx, m->src, m->tag))
            break;
    if (!m) {
        r->next = NULL;
        *self->posted_tail = r;
        self->posted_tail = &r->next;
        tlsp_ep_unlock(self);
        return;
    }
    unlink_locked(self, pp, m);
    take_locked(self, m, r);
}

/* ------------------------------------------------------- argument checks */

static int check_peer(const tlsp_view *v, int rank, int any_ok)
{
    if (rank == MPI_PROC_NULL || (any_ok && rank == MPI_ANY_SOURCE))
        return 1;
    return rank >= 0 && rank < tlsp_remote_size(v);
}

static void complete_proc_null(tlsp_req *r)
{
    r->st_source = MPI_PROC_NULL;
    r->st_tag = MPI_ANY_TAG;
    r->st_bytes = 0;
    tlsp_req_complete(r);
}

/* The arguments of a send (to a rank) or a receive (from a rank, or any). */
/* A buffer's count and datatype: MPI_ERR_COUNT, the datatype's error, or
 * MPI_SUCCESS. */
static int check_buffer(const tlsp_buf *b)
{
    if (b->count < 0)
        return MPI_ERR_COUNT;
    int err = MPI_SUCCESS;
    if (tlsp_buf_bytes(b, &err) < 0)
        return err;
    return MPI_SUCCESS;
}

static int check_args(const tlsp_view *v, const tlsp_buf *b, int peer, int tag, int receive)
{
    if (!check_peer(v, peer, receive))
        return MPI_ERR_RANK;
    if (tag < 0 && !(receive && tag == MPI_ANY_TAG))
        return MPI_ERR_TAG;
    return check_buffer(b);
}

int tlsp_isend(const tlsp_view *v, const tlsp_buf *b, int dest, int tag, int coll, tlsp_req *r)
{
    int rc = check_args(v, b, dest, tag, 0);
    if (rc != MPI_SUCCESS)
        return rc;
    if (dest == MPI_PROC_NULL) {
        complete_proc_null(r);
        return MPI_SUCCESS;
    }
    tlsp_isend_ep(tlsp_peer(v, dest), v->comm->ctx + (coll ? 1u : 0u), v->rank, tag, b, r);
    return MPI_SUCCESS;
}

int tlsp_irecv(const tlsp_view *v, const tlsp_buf *b, int src, int tag, int coll, tlsp_req *r)
{
    int rc = check_args(v, b, src, tag, 1);
    if (rc != MPI_SUCCESS)
        return rc;
    if (src == MPI_PROC_NULL) {
        complete_proc_null(r);
        return MPI_SUCCESS;
    }
    tlsp_irecv_ctx(v->owner, v->comm->ctx + (coll ? 1u : 0u), src, tag, b, r);
    return MPI_SUCCESS;
}

int tlsp_probe(const tlsp_view *v, int src, int tag, int blocking, tlsp_msg **take, int *out_src, int *out_tag,
               size_t *out_bytes)
{
    tlsp_endpoint *ep = v->owner;
    uint32_t ctx = v->comm->ctx;
    int spun = 0, slept = 0;
    for (;;) {
        uint32_t queued = atomic_load_explicit(&ep->queued, memory_order_acquire);
        tlsp_ep_lock(ep);
        if (slept) {
            ep->probing--;
            slept = 0;
        }
        for (tlsp_msg **pp = &ep->unexp_head, *m = *pp; m; pp = &m->next, m = m->next)
            if (matches(ctx, src, tag, m->ctx, m->src, m->tag)) {
                *out_src = m->src;
                *out_tag = m->tag;
                *out_bytes = m->bytes;
                if (take) {
                    unlink_locked(ep, pp, m);
                    *take = m;
                }
                tlsp_ep_unlock(ep);
                return 1;
            }
        if (!blocking) {
            tlsp_ep_unlock(ep);
            return 0;
        }
        /* Spin on the queue's counter first (a message is usually on its
         * way), then sleep until a sender sees the owner probing. */
        if (!spun) {
            tlsp_ep_unlock(ep);
            spun = !tlsp_spin_until_changed(&ep->queued, queued, &ep->coloc);
            continue;
        }
        uint32_t seen = atomic_load_explicit(&ep->arrivals, memory_order_acquire);
        ep->probing++;
        tlsp_ep_unlock(ep);
        int park = tlsp_park();
        tl_rm_futex_wait((uint32_t *)&ep->arrivals, seen, UINT64_C(1000000000));
        tlsp_unpark(park);
        tlsp_slept();
        spun = 0;
        slept = 1;
    }
}

/* --------------------------------------------------------------- status */

void tlsp_status_fill(MPI_Status *st, int source, int tag, int error, size_t bytes)
{
    if (st == MPI_STATUS_IGNORE)
        return;
    st->MPI_SOURCE = source;
    st->MPI_TAG = tag;
    st->MPI_ERROR = error;
    /* The hidden count, through the standard call: MPI_Get_count and
     * MPI_Get_elements of the real MPI then answer for any datatype. */
    PMPI_Status_set_elements_x(st, MPI_BYTE, (MPI_Count)bytes);
    PMPI_Status_set_cancelled(st, 0);
}

void tlsp_status_empty(MPI_Status *st)
{
    tlsp_status_fill(st, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0);
}

static int truncated(int errors_return, const char *call, const tlsp_req *r)
{
    return tlsp_fail(errors_return, MPI_ERR_TRUNCATE,
                     "%s: message truncated: the receive buffer holds %zu bytes, the message from rank %d "
                     "(tag %d) is longer",
                     call, r->cap, r->st_source, r->st_tag);
}

int tlsp_send_wait(const tlsp_view *v, const void *buf, int count, MPI_Datatype t, int dest, int tag, int coll)
{
    tlsp_req r;
    tlsp_req_init(&r, TLSP_REQ_SEND, v);
    tlsp_buf b = {(void *)buf, count, t};
    int rc = tlsp_isend(v, &b, dest, tag, coll, &r);
    if (rc != MPI_SUCCESS)
        return rc;
    tlsp_req_wait(&r);
    return MPI_SUCCESS;
}

int tlsp_recv_wait(const tlsp_view *v, void *buf, int count, MPI_Datatype t, int src, int tag, int coll,
                   MPI_Status *st)
{
    tlsp_req r;
    tlsp_req_init(&r, TLSP_REQ_RECV, v);
    tlsp_buf b = {buf, count, t};
    int rc = tlsp_irecv(v, &b, src, tag, coll, &r);
    if (rc != MPI_SUCCESS)
        return rc;
    tlsp_req_wait(&r);
    tlsp_status_fill(st, r.st_source, r.st_tag, r.st_error, r.st_bytes);
    return r.st_error;
}

/* ------------------------------------------------------------ the calls */

static const char *arg_error(int rc)
{
    switch (rc) {
    case MPI_ERR_RANK: return "invalid rank";
    case MPI_ERR_TAG: return "invalid tag";
    case MPI_ERR_COUNT: return "invalid count";
    case MPI_ERR_TYPE: return "invalid datatype";
    default: return "invalid argument";
    }
}

static int send_call(const char *call, const tlsp_view *v, const void *buf, int count, MPI_Datatype type, int dest,
                     int tag, int sync)
{
    tlsp_req r;
    tlsp_req_init(&r, TLSP_REQ_SEND, v);
    r.sync = sync;
    tlsp_buf b = {(void *)buf, count, type};
    int rc = tlsp_isend(v, &b, dest, tag, 0, &r);
    if (rc != MPI_SUCCESS)
        return tlsp_error(v, rc, "%s: %s (dest %d, tag %d, count %d)", call, arg_error(rc), dest, tag, count);
    tlsp_req_wait(&r);
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    VIEW_OR_PASS(comm, "MPI_Send", PMPI_Send(buf, count, type, dest, tag, comm));
    return send_call("MPI_Send", v, buf, count, type, dest, tag, 0);
}

TLSP_EXPORT int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    VIEW_OR_PASS(comm, "MPI_Ssend", PMPI_Ssend(buf, count, type, dest, tag, comm));
    return send_call("MPI_Ssend", v, buf, count, type, dest, tag, 1);
}

TLSP_EXPORT int MPI_Recv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    VIEW_OR_PASS(comm, "MPI_Recv", PMPI_Recv(buf, count, type, src, tag, comm, st));
    tlsp_req r;
    tlsp_req_init(&r, TLSP_REQ_RECV, v);
    tlsp_buf b = {buf, count, type};
    int rc = tlsp_irecv(v, &b, src, tag, 0, &r);
    if (rc != MPI_SUCCESS)
        return tlsp_error(v, rc, "MPI_Recv: %s (source %d, tag %d, count %d)", arg_error(rc), src, tag, count);
    tlsp_req_wait(&r);
    tlsp_status_fill(st, r.st_source, r.st_tag, r.st_error, r.st_bytes);
    if (r.st_error != MPI_SUCCESS)
        return truncated(r.errors_return, "MPI_Recv", &r);
    return MPI_SUCCESS;
}

static int start_call(const char *call, const tlsp_view *v, int kind, void *buf, int count, MPI_Datatype type,
                      int peer, int tag, int sync, MPI_Request *request)
{
    tlsp_req *r = tlsp_req_alloc(kind, v);
    if (!r)
        return tlsp_error(v, MPI_ERR_NO_MEM, "%s: out of request handles", call);
    r->sync = sync;
    tlsp_buf b = {buf, count, type};
    int rc = kind == TLSP_REQ_SEND ? tlsp_isend(v, &b, peer, tag, 0, r) : tlsp_irecv(v, &b, peer, tag, 0, r);
    if (rc != MPI_SUCCESS) {
        tlsp_req_free(r);
        return tlsp_error(v, rc, "%s: %s (rank %d, tag %d, count %d)", call, arg_error(rc), peer, tag, count);
    }
    *request = tlsp_req_handle(r);
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                          MPI_Request *request)
{
    VIEW_OR_PASS(comm, "MPI_Isend", PMPI_Isend(buf, count, type, dest, tag, comm, request));
    return start_call("MPI_Isend", v, TLSP_REQ_SEND, (void *)buf, count, type, dest, tag, 0, request);
}

TLSP_EXPORT int MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                           MPI_Request *request)
{
    VIEW_OR_PASS(comm, "MPI_Issend", PMPI_Issend(buf, count, type, dest, tag, comm, request));
    return start_call("MPI_Issend", v, TLSP_REQ_SEND, (void *)buf, count, type, dest, tag, 1, request);
}

TLSP_EXPORT int MPI_Irecv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
                          MPI_Request *request)
{
    VIEW_OR_PASS(comm, "MPI_Irecv", PMPI_Irecv(buf, count, type, src, tag, comm, request));
    return start_call("MPI_Irecv", v, TLSP_REQ_RECV, buf, count, type, src, tag, 0, request);
}

TLSP_EXPORT int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, int src, int recvtag,
                             MPI_Comm comm, MPI_Status *st)
{
    VIEW_OR_PASS(comm, "MPI_Sendrecv",
                 PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, src,
                               recvtag, comm, st));
    tlsp_req s, r;
    tlsp_req_init(&s, TLSP_REQ_SEND, v);
    tlsp_req_init(&r, TLSP_REQ_RECV, v);
    tlsp_buf sb = {(void *)sendbuf, sendcount, sendtype}, rb = {recvbuf, recvcount, recvtype};
    /* The receive first: a pair of threads exchanging large messages each
     * find the other's receive posted. */
    int rc = check_args(v, &sb, dest, sendtag, 0);
    if (rc != MPI_SUCCESS)
        return tlsp_error(v, rc, "MPI_Sendrecv: %s (dest %d, tag %d)", arg_error(rc), dest, sendtag);
    rc = tlsp_irecv(v, &rb, src, recvtag, 0, &r);
    if (rc != MPI_SUCCESS)
        return tlsp_error(v, rc, "MPI_Sendrecv: %s (source %d, tag %d)", arg_error(rc), src, recvtag);
    tlsp_isend(v, &sb, dest, sendtag, 0, &s);
    tlsp_req_wait(&s);
    tlsp_req_wait(&r);
    tlsp_status_fill(st, r.st_source, r.st_tag, r.st_error, r.st_bytes);
    if (r.st_error != MPI_SUCCESS)
        return truncated(r.errors_return, "MPI_Sendrecv", &r);
    return MPI_SUCCESS;
}

/* What every probe does first: its arguments checked, and a probe of
 * MPI_PROC_NULL answered.  1 when that ended the call, with *rc its
 * result. */
static int probe_prologue(const char *call, const tlsp_view *v, int src, int tag, int *flag, MPI_Status *st,
                          int *rc)
{
    *rc = MPI_SUCCESS;
    if (!check_peer(v, src, 1))
        *rc = tlsp_error(v, MPI_ERR_RANK, "%s: invalid source rank %d", call, src);
    else if (tag < 0 && tag != MPI_ANY_TAG)
        *rc = tlsp_error(v, MPI_ERR_TAG, "%s: invalid tag %d", call, tag);
    else if (src != MPI_PROC_NULL)
        return 0;
    else {
        if (flag)
            *flag = 1;
        tlsp_status_fill(st, MPI_PROC_NULL, MPI_ANY_TAG, MPI_SUCCESS, 0);
    }
    return 1;
}

static int probe_call(const char *call, const tlsp_view *v, int src, int tag, int blocking, int *flag,
                      MPI_Status *st)
{
    int rc;
    if (probe_prologue(call, v, src, tag, flag, st, &rc))
        return rc;
    int osrc, otag;
    size_t bytes;
    int found = tlsp_probe(v, src, tag, blocking, NULL, &osrc, &otag, &bytes);
    if (flag)
        *flag = found;
    if (found)
        tlsp_status_fill(st, osrc, otag, MPI_SUCCESS, bytes);
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    VIEW_OR_PASS(comm, "MPI_Probe", PMPI_Probe(src, tag, comm, st));
    return probe_call("MPI_Probe", v, src, tag, 1, NULL, st);
}

TLSP_EXPORT int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st)
{
    VIEW_OR_PASS(comm, "MPI_Iprobe", PMPI_Iprobe(src, tag, comm, flag, st));
    return probe_call("MPI_Iprobe", v, src, tag, 0, flag, st);
}

/* ------------------------------------------------- matched probe, receive */

/* MPI_Mprobe and MPI_Improbe take the message out of the queue, so that
 * no other receive can match it, and hand it out as a message handle: a
 * request of kind TLSP_REQ_MESSAGE holding it (the request table's slots
 * and encoding, handle.c).  MPI_Mrecv and MPI_Imrecv receive it from
 * there.  A large message keeps its sender waiting until then, as a
 * receive posted late would. */

static int mprobe_call(const char *call, const tlsp_view *v, int src, int tag, int blocking, int *flag,
                       MPI_Message *message, MPI_Status *st)
{
    int rc;
    if (probe_prologue(call, v, src, tag, flag, st, &rc)) {
        if (rc == MPI_SUCCESS)
            *message = MPI_MESSAGE_NO_PROC;
        return rc;
    }
    int osrc, otag;
    size_t bytes;
    /* a poll that finds nothing (MPI_Improbe in a loop) allocates no
     * handle: it looks first.  Another thread of the rank may take the
     * message between the look and the take (two holds of the lock): the
     * take then finds nothing, as a poll may */
    if (!blocking && !tlsp_probe(v, src, tag, 0, NULL, &osrc, &otag, &bytes)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    tlsp_req *h = tlsp_req_alloc(TLSP_REQ_MESSAGE, v);
    if (!h)
        return tlsp_error(v, MPI_ERR_NO_MEM, "%s: out of message handles", call);
    tlsp_msg *m = NULL;
    int found = tlsp_probe(v, src, tag, blocking, &m, &osrc, &otag, &bytes);
    if (flag)
        *flag = found;
    if (!found) {
        tlsp_req_free(h);
        return MPI_SUCCESS;
    }
    h->matched = m;
    h->matched_ep = v->owner;
    *message = tlsp_msg_handle(h);
    tlsp_status_fill(st, osrc, otag, MPI_SUCCESS, bytes);
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *st)
{
    VIEW_OR_PASS(comm, "MPI_Mprobe", PMPI_Mprobe(src, tag, comm, message, st));
    return mprobe_call("MPI_Mprobe", v, src, tag, 1, NULL, message, st);
}

TLSP_EXPORT int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *st)
{
    VIEW_OR_PASS(comm, "MPI_Improbe", PMPI_Improbe(src, tag, comm, flag, message, st));
    return mprobe_call("MPI_Improbe", v, src, tag, 0, flag, message, st);
}

/* The library's message handle a handle designates; NULL for one of the
 * real MPI (MPI_MESSAGE_NO_PROC included), and for a handle of the library
 * that is spent or no message (*bad set). */
static tlsp_req *message_of(MPI_Message message, int *bad)
{
    *bad = 0;
    if (TLSP_LIKELY(!tlsp_is_msg_handle(message)))
        return NULL;
    tlsp_req *h = tlsp_slot_get(TLSP_TABLE_REQ, tlsp_msg_index(message));
    if (!h || h->kind != TLSP_REQ_MESSAGE || !h->matched) {
        *bad = 1;
        return NULL;
    }
    return h;
}

/* Receives the message h holds into r (a receive request of its view) and
 * frees h. */
static void receive_matched(tlsp_req *h, tlsp_req *r, const tlsp_buf *b)
{
    set_receive_buffer(r, b);
    tlsp_endpoint *self = h->matched_ep;
    tlsp_msg *m = h->matched;
    tlsp_req_free(h);
    tlsp_ep_lock(self); /* a block goes back to its pool */
    take_locked(self, m, r);
}

/* What MPI_Mrecv and MPI_Imrecv do first: *h, the library's message the
 * handle designates (NULL: the real MPI's, for the caller to pass on),
 * and the buffer's check.  1 when that ended the call, with *rc its
 * result; a refused buffer leaves the message matched, to receive again. */
static int mrecv_prologue(const char *call, MPI_Message message, const tlsp_buf *b, tlsp_req **h, int *rc)
{
    int bad;
    *h = message_of(message, &bad);
    if (TLSP_UNLIKELY(bad)) {
        *rc = tlsp_fail(0, MPI_ERR_REQUEST, "%s: invalid message (a message of thread tasks received already)",
                        call);
        return 1;
    }
    if (TLSP_LIKELY(!*h))
        return 0;
    *rc = check_buffer(b);
    if (*rc == MPI_SUCCESS)
        return 0;
    *rc = tlsp_fail((*h)->errors_return, *rc, "%s: %s (count %d)", call, arg_error(*rc), b->count);
    return 1;
}

TLSP_EXPORT int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *st)
{
    tlsp_buf b = {buf, count, type};
    tlsp_req *h;
    int rc;
    if (mrecv_prologue("MPI_Mrecv", *message, &b, &h, &rc))
        return rc;
    if (TLSP_LIKELY(!h))
        return PMPI_Mrecv(buf, count, type, message, st);
    tlsp_req r;
    tlsp_req_init(&r, TLSP_REQ_RECV, NULL);
    r.errors_return = h->errors_return;
    receive_matched(h, &r, &b);
    *message = MPI_MESSAGE_NULL;
    tlsp_req_wait(&r);
    tlsp_status_fill(st, r.st_source, r.st_tag, r.st_error, r.st_bytes);
    if (r.st_error != MPI_SUCCESS)
        return truncated(r.errors_return, "MPI_Mrecv", &r);
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Request *request)
{
    tlsp_buf b = {buf, count, type};
    tlsp_req *h;
    int rc;
    if (mrecv_prologue("MPI_Imrecv", *message, &b, &h, &rc))
        return rc;
    if (TLSP_LIKELY(!h))
        return PMPI_Imrecv(buf, count, type, message, request);
    tlsp_req *r = tlsp_req_alloc(TLSP_REQ_RECV, NULL);
    if (!r)
        return tlsp_fail(h->errors_return, MPI_ERR_NO_MEM, "MPI_Imrecv: out of request handles");
    r->errors_return = h->errors_return;
    receive_matched(h, r, &b);
    *message = MPI_MESSAGE_NULL;
    *request = tlsp_req_handle(r);
    return MPI_SUCCESS;
}
