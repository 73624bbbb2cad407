/* coll.c - collectives inside a group of thread tasks (the seed's future
 * work): Barrier, Bcast, Reduce, Allreduce, Gather, Scatter; and Bcast
 * between a parent and its children (an inter-communicator).
 *
 * They run on the communicator's second context, so they never match the
 * program's own messages, and they are linear through the root: with
 * threads of one process a message costs a copy and a wake-up, and the
 * groups MPI_Comm_spawn makes are small.  Large payloads go straight from
 * buffer to buffer (rendezvous); reductions use MPI_Reduce_local, so every
 * predefined and user operation works, in rank order (x0 op x1 op ...). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int refuse_inter(const tlsp_view *v, const char *call)
{
    char what[96];
    snprintf(what, sizeof what, "%s on an inter-communicator", call);
    return tlsp_refuse(v, what);
}

/* A rank of the group; on an inter-communicator (a parent and its
 * spawned children), as MPI has it, MPI_ROOT at the root, MPI_PROC_NULL
 * at the rest of its group (no part in the call), the root's rank in the
 * other group. */
static int check_root(const tlsp_view *v, int root, const char *call)
{
    if (v->comm->inter) {
        if (root == MPI_ROOT || root == MPI_PROC_NULL || (root >= 0 && root < tlsp_remote_size(v)))
            return MPI_SUCCESS;
        return tlsp_error(v, MPI_ERR_ROOT,
                          "%s: invalid root %d on an inter-communicator (MPI_ROOT, MPI_PROC_NULL, or a rank of the "
                          "other group, which has %d members)",
                          call, root, tlsp_remote_size(v));
    }
    if (root < 0 || root >= tlsp_local_size(v))
        return tlsp_error(v, MPI_ERR_ROOT, "%s: invalid root %d (the group has %d members)", call, root,
                          tlsp_local_size(v));
    return MPI_SUCCESS;
}

static int barrier(const tlsp_view *v)
{
    int n = tlsp_local_size(v);
    if (n == 1)
        return MPI_SUCCESS;
    if (v->rank == 0) {
        for (int i = 1; i < n; i++)
            tlsp_recv_wait(v, NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, TLSP_TAG_BARRIER, 1, MPI_STATUS_IGNORE);
        for (int i = 1; i < n; i++)
            tlsp_send_wait(v, NULL, 0, MPI_BYTE, i, TLSP_TAG_BARRIER, 1);
    } else {
        tlsp_send_wait(v, NULL, 0, MPI_BYTE, 0, TLSP_TAG_BARRIER, 1);
        tlsp_recv_wait(v, NULL, 0, MPI_BYTE, 0, TLSP_TAG_BARRIER, 1, MPI_STATUS_IGNORE);
    }
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Barrier(MPI_Comm comm)
{
    VIEW_OR_PASS(comm, "MPI_Barrier", PMPI_Barrier(comm));
    if (v->comm->inter)
        return refuse_inter(v, "MPI_Barrier");
    return barrier(v);
}

/* Sends to every other member (of the remote group, on an
 * inter-communicator: all of them) and waits for all of them. */
static int fan_out(const tlsp_view *v, const void *buf, int count, MPI_Datatype t, MPI_Aint stride, int tag)
{
    int inter = v->comm->inter;
    int n = inter ? tlsp_remote_size(v) : tlsp_local_size(v);
    tlsp_req *reqs = tlsp_req_array((size_t)n);
    if (!reqs)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < n; i++) {
        if (!inter && i == v->rank)
            continue;
        tlsp_req_init(&reqs[i], TLSP_REQ_SEND, v);
        tlsp_buf b = {(char *)buf + (MPI_Aint)i * stride, count, t};
        tlsp_isend(v, &b, i, tag, 1, &reqs[i]);
    }
    for (int i = 0; i < n; i++)
        if (inter || i != v->rank)
            tlsp_req_wait(&reqs[i]);
    free(reqs);
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
    VIEW_OR_PASS(comm, "MPI_Bcast", PMPI_Bcast(buf, count, t, root, comm));
    int rc = check_root(v, root, "MPI_Bcast");
    if (rc != MPI_SUCCESS || root == MPI_PROC_NULL)
        return rc;
    if (v->comm->inter ? root == MPI_ROOT : v->rank == root)
        rc = fan_out(v, buf, count, t, 0, TLSP_TAG_BCAST);
    else
        rc = tlsp_recv_wait(v, buf, count, t, root, TLSP_TAG_BCAST, 1, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? rc : tlsp_error(v, rc, "MPI_Bcast failed (the members' counts differ?)");
}

/* A buffer of count elements of t, laid out as MPI would (true extent). */
static void *temp_buffer(int count, MPI_Datatype t, void **base)
{
    MPI_Aint lb, extent, tlb, textent;
    PMPI_Type_get_extent(t, &lb, &extent);
    PMPI_Type_get_true_extent(t, &tlb, &textent);
    size_t bytes = count > 0 ? (size_t)textent + (size_t)(count - 1) * (size_t)extent : 1;
    *base = malloc(bytes ? bytes : 1);
    return *base ? (char *)*base - tlb : NULL;
}

static int reduce(const tlsp_view *v, const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op,
                  int root)
{
    int n = tlsp_local_size(v);
    const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (v->rank != root)
        return tlsp_send_wait(v, mine, count, t, root, TLSP_TAG_REDUCE, 1);
    /* acc = x(n-1); then acc = x(i) op acc for i = n-2 .. 0. */
    void *acc_base, *tmp_base;
    void *acc = temp_buffer(count, t, &acc_base), *tmp = temp_buffer(count, t, &tmp_base);
    if (!acc || !tmp) {
        free(acc_base);
        free(tmp_base);
        return MPI_ERR_NO_MEM;
    }
    int rc = MPI_SUCCESS;
    for (int i = n - 1; i >= 0 && rc == MPI_SUCCESS; i--) {
        void *into = i == n - 1 ? acc : tmp;
        if (i == v->rank) {
            tlsp_buf src = {(void *)mine, count, t}, dst = {into, count, t};
            rc = tlsp_copy_local(&src, &dst);
        } else {
            rc = tlsp_recv_wait(v, into, count, t, i, TLSP_TAG_REDUCE, 1, MPI_STATUS_IGNORE);
        }
        if (rc == MPI_SUCCESS && i != n - 1)
            rc = PMPI_Reduce_local(tmp, acc, count, t, op);
    }
    if (rc == MPI_SUCCESS) {
        tlsp_buf src = {acc, count, t}, dst = {recvbuf, count, t};
        rc = tlsp_copy_local(&src, &dst);
    }
    free(acc_base);
    free(tmp_base);
    return rc;
}

TLSP_EXPORT int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op, int root,
                           MPI_Comm comm)
{
    VIEW_OR_PASS(comm, "MPI_Reduce", PMPI_Reduce(sendbuf, recvbuf, count, t, op, root, comm));
    if (v->comm->inter)
        return refuse_inter(v, "MPI_Reduce");
    int rc = check_root(v, root, "MPI_Reduce");
    if (rc == MPI_SUCCESS)
        rc = reduce(v, sendbuf, recvbuf, count, t, op, root);
    return rc == MPI_SUCCESS ? rc : tlsp_error(v, rc, "MPI_Reduce failed");
}

TLSP_EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op,
                              MPI_Comm comm)
{
    VIEW_OR_PASS(comm, "MPI_Allreduce", PMPI_Allreduce(sendbuf, recvbuf, count, t, op, comm));
    if (v->comm->inter)
        return refuse_inter(v, "MPI_Allreduce");
    int rc = reduce(v, sendbuf, recvbuf, count, t, op, 0);
    if (rc == MPI_SUCCESS) {
        if (v->rank == 0)
            rc = fan_out(v, recvbuf, count, t, 0, TLSP_TAG_BCAST);
        else
            rc = tlsp_recv_wait(v, recvbuf, count, t, 0, TLSP_TAG_BCAST, 1, MPI_STATUS_IGNORE);
    }
    return rc == MPI_SUCCESS ? rc : tlsp_error(v, rc, "MPI_Allreduce failed");
}

static MPI_Aint extent_of(MPI_Datatype t)
{
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(t, &lb, &extent);
    return extent;
}

TLSP_EXPORT int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    VIEW_OR_PASS(comm, "MPI_Gather",
                 PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm));
    if (v->comm->inter)
        return refuse_inter(v, "MPI_Gather");
    int rc = check_root(v, root, "MPI_Gather");
    if (rc != MPI_SUCCESS)
        return rc;
    if (v->rank != root) {
        rc = tlsp_send_wait(v, sendbuf, sendcount, sendtype, root, TLSP_TAG_GATHER, 1);
        return rc == MPI_SUCCESS ? rc : tlsp_error(v, rc, "MPI_Gather failed");
    }
    int n = tlsp_local_size(v);
    MPI_Aint stride = (MPI_Aint)recvcount * extent_of(recvtype);
    tlsp_req *reqs = tlsp_req_array((size_t)n);
    if (!reqs)
        return tlsp_error(v, MPI_ERR_NO_MEM, "MPI_Gather: out of memory");
    for (int i = 0; i < n; i++) {
        if (i == root)
            continue;
        tlsp_req_init(&reqs[i], TLSP_REQ_RECV, v);
        tlsp_buf b = {(char *)recvbuf + (MPI_Aint)i * stride, recvcount, recvtype};
        tlsp_irecv(v, &b, i, TLSP_TAG_GATHER, 1, &reqs[i]);
    }
    if (sendbuf != MPI_IN_PLACE) {
        tlsp_buf src = {(void *)sendbuf, sendcount, sendtype};
        tlsp_buf dst = {(char *)recvbuf + (MPI_Aint)root * stride, recvcount, recvtype};
        rc = tlsp_copy_local(&src, &dst);
    }
    for (int i = 0; i < n; i++)
        if (i != root) {
            tlsp_req_wait(&reqs[i]);
            if (reqs[i].st_error != MPI_SUCCESS)
                rc = reqs[i].st_error;
        }
    free(reqs);
    return rc == MPI_SUCCESS ? rc : tlsp_error(v, rc, "MPI_Gather failed (the members' counts differ?)");
}

TLSP_EXPORT int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    VIEW_OR_PASS(comm, "MPI_Scatter",
                 PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm));
    if (v->comm->inter)
        return refuse_inter(v, "MPI_Scatter");
    int rc = check_root(v, root, "MPI_Scatter");
    if (rc != MPI_SUCCESS)
        return rc;
    if (v->rank != root) {
        rc = tlsp_recv_wait(v, recvbuf, recvcount, recvtype, root, TLSP_TAG_SCATTER, 1, MPI_STATUS_IGNORE);
        return rc == MPI_SUCCESS ? rc : tlsp_error(v, rc, "MPI_Scatter failed (the members' counts differ?)");
    }
    MPI_Aint stride = (MPI_Aint)sendcount * extent_of(sendtype);
    if (recvbuf != MPI_IN_PLACE) {
        tlsp_buf src = {(char *)sendbuf + (MPI_Aint)root * stride, sendcount, sendtype};
        tlsp_buf dst = {recvbuf, recvcount, recvtype};
        rc = tlsp_copy_local(&src, &dst);
    }
    int frc = fan_out(v, sendbuf, sendcount, sendtype, stride, TLSP_TAG_SCATTER);
    if (rc == MPI_SUCCESS)
        rc = frc;
    return rc == MPI_SUCCESS ? rc : tlsp_error(v, rc, "MPI_Scatter failed");
}
