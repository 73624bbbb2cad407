/* comm.c - the library's communicators and their handles (views). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Contexts: two per comm (point-to-point, collectives), never reused
 * while the process lives (2^31 comms). */
static _Atomic uint32_t next_ctx = 2;

tlsp_comm *tlsp_comm_new(int inter, tlsp_endpoint *const *g0, int n0, tlsp_endpoint *const *g1, int n1)
{
    tlsp_comm *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->inter = inter;
    c->size[0] = n0;
    c->size[1] = inter ? n1 : 0;
    c->ctx = atomic_fetch_add_explicit(&next_ctx, 2, memory_order_relaxed);
    for (int s = 0; s < (inter ? 2 : 1); s++) {
        int n = s ? n1 : n0;
        tlsp_endpoint *const *g = s ? g1 : g0;
        c->group[s] = malloc((size_t)n * sizeof *c->group[s]);
        if (!c->group[s]) {
            free(c->group[0]);
            free(c);
            return NULL;
        }
        for (int i = 0; i < n; i++) {
            c->group[s][i] = g[i];
            tlsp_endpoint_ref(g[i]);
        }
    }
    atomic_init(&c->refs, 0);
    return c;
}

void tlsp_comm_unref(tlsp_comm *c)
{
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (int s = 0; s < (c->inter ? 2 : 1); s++) {
        for (int i = 0; i < c->size[s]; i++)
            tlsp_endpoint_unref(c->group[s][i]);
        free(c->group[s]);
    }
    free(c);
}

tlsp_view *tlsp_view_new(tlsp_comm *c, int side, int rank, tlsp_endpoint *owner, const tlsp_view *like)
{
    tlsp_view *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->comm = c;
    v->side = side;
    v->rank = rank;
    v->owner = owner;
    v->errors_return = like ? like->errors_return : 0;
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    v->index = tlsp_slot_alloc(TLSP_TABLE_COMM, v);
    if (!v->index) {
        tlsp_comm_unref(c);
        free(v);
        return NULL;
    }
    return v;
}

void tlsp_view_free(tlsp_view *v)
{
    tlsp_slot_free(TLSP_TABLE_COMM, v->index);
    tlsp_comm_unref(v->comm);
    free(v);
}

/* A thread task's MPI_COMM_SELF: a comm of its own endpoint alone. */
static tlsp_view *task_self_view(tlsp_task *t)
{
    if (!t->self) {
        tlsp_comm *c = tlsp_comm_new(0, &t->ep, 1, NULL, 0);
        if (c)
            t->self = tlsp_view_new(c, 0, 0, t->ep, t->world);
    }
    return t->self;
}

tlsp_view *tlsp_view_lookup(MPI_Comm c, int *bad)
{
    *bad = 0;
    if (tlsp_is_comm_handle(c)) {
        tlsp_view *v = tlsp_slot_get(TLSP_TABLE_COMM, tlsp_comm_index(c));
        if (!v || v->owner != tlsp_self()) {
            *bad = 1;
            return NULL;
        }
        return v;
    }
    tlsp_task *t = tlsp_self_task;
    if (t && !t->finalized) {
        if (c == MPI_COMM_WORLD)
            return t->world;
        if (c == MPI_COMM_SELF)
            return task_self_view(t);
    }
    return NULL;
}

int tlsp_bad_comm(MPI_Comm c, const char *call)
{
    tlsp_view *v = tlsp_slot_get(TLSP_TABLE_COMM, tlsp_comm_index(c));
    if (!v)
        return tlsp_error(NULL, MPI_ERR_COMM,
                          "%s: invalid communicator (a handle of thread tasks that was freed or never existed)", call);
    return tlsp_misuse(v, MPI_ERR_COMM,
                      "%s: this communicator handle belongs to another thread task (rank %d of its group): thread "
                      "tasks share the program's global variables, so a handle kept in one is seen by all "
                      "(docs/spawn.md, \"What a program must respect\")",
                      call, v->rank);
}

/* ------------------------------------------------------------- the calls */

TLSP_EXPORT int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    VIEW_OR_PASS(comm, "MPI_Comm_rank", PMPI_Comm_rank(comm, rank));
    *rank = v->rank;
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Comm_size(MPI_Comm comm, int *size)
{
    VIEW_OR_PASS(comm, "MPI_Comm_size", PMPI_Comm_size(comm, size));
    *size = tlsp_local_size(v);
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Comm_remote_size(MPI_Comm comm, int *size)
{
    VIEW_OR_PASS(comm, "MPI_Comm_remote_size", PMPI_Comm_remote_size(comm, size));
    if (!v->comm->inter)
        return tlsp_error(v, MPI_ERR_COMM, "MPI_Comm_remote_size: not an inter-communicator");
    *size = tlsp_remote_size(v);
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
    VIEW_OR_PASS(comm, "MPI_Comm_test_inter", PMPI_Comm_test_inter(comm, flag));
    *flag = v->comm->inter;
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler eh)
{
    VIEW_OR_PASS(comm, "MPI_Comm_set_errhandler", PMPI_Comm_set_errhandler(comm, eh));
    if (eh == MPI_ERRORS_RETURN)
        v->errors_return = 1;
    else if (eh == MPI_ERRORS_ARE_FATAL)
        v->errors_return = 0;
    else
        return tlsp_refuse(v, "MPI_Comm_set_errhandler with a user error handler");
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *eh)
{
    VIEW_OR_PASS(comm, "MPI_Comm_get_errhandler", PMPI_Comm_get_errhandler(comm, eh));
    *eh = v->errors_return ? MPI_ERRORS_RETURN : MPI_ERRORS_ARE_FATAL;
    return MPI_SUCCESS;
}

/* The predefined attributes (MPI_TAG_UB, MPI_UNIVERSE_SIZE, ...) are the
 * process's: programs read them before spawning. */
TLSP_EXPORT int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *value, int *flag)
{
    VIEW_OR_PASS(comm, "MPI_Comm_get_attr", PMPI_Comm_get_attr(comm, keyval, value, flag));
    if (keyval == MPI_TAG_UB || keyval == MPI_UNIVERSE_SIZE || keyval == MPI_APPNUM || keyval == MPI_HOST ||
        keyval == MPI_IO || keyval == MPI_WTIME_IS_GLOBAL)
        return PMPI_Comm_get_attr(MPI_COMM_WORLD, keyval, value, flag);
    return tlsp_refuse(v, "MPI_Comm_get_attr with a user attribute key");
}

TLSP_EXPORT int MPI_Abort(MPI_Comm comm, int code)
{
    int bad;
    tlsp_view *v = tlsp_view_of(comm, &bad);
    if (v || bad) {
        tlsp_note("MPI_Abort(%d) in a thread task: aborting the whole job", code);
        tlsp_abort_job(MPI_COMM_WORLD, code);
    }
    if (tlsp_count.thread_tasks)
        tlsp_abort_job(comm, code); /* its thread tasks may be aborting too */
    return PMPI_Abort(comm, code);
}

static int free_view(MPI_Comm *comm, const char *call)
{
    tlsp_view *v = tlsp_slot_get(TLSP_TABLE_COMM, tlsp_comm_index(*comm));
    if (!v || v->owner != tlsp_self())
        return tlsp_bad_comm(*comm, call);
    tlsp_task *t = tlsp_self_task;
    if (t && (v == t->world || v == t->self))
        return tlsp_error(v, MPI_ERR_COMM, "%s: MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed", call);
    if (t && v == t->parent)
        t->parent = NULL; /* MPI_Comm_get_parent now gives MPI_COMM_NULL */
    tlsp_view_free(v);
    *comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Comm_free(MPI_Comm *comm)
{
    if (tlsp_is_comm_handle(*comm))
        return free_view(comm, "MPI_Comm_free");
    if (tlsp_self_task && (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF))
        return tlsp_error(tlsp_self_task->world, MPI_ERR_COMM,
                          "MPI_Comm_free: MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed");
    return PMPI_Comm_free(comm);
}

/* Messages between threads complete when their requests do: once the
 * program has waited for its own (as MPI requires before a disconnect),
 * nothing is pending, so disconnecting is freeing. */
TLSP_EXPORT int MPI_Comm_disconnect(MPI_Comm *comm)
{
    if (tlsp_is_comm_handle(*comm))
        return free_view(comm, "MPI_Comm_disconnect");
    int token = tlsp_watch_begin("MPI_Comm_disconnect", "an inter-communicator of processes");
    int rc = PMPI_Comm_disconnect(comm);
    tlsp_watch_end(token);
    return rc;
}

TLSP_EXPORT int MPI_Comm_get_parent(MPI_Comm *parent)
{
    tlsp_task *t = tlsp_self_task;
    if (t) {
        *parent = t->parent ? tlsp_comm_handle(t->parent) : MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    return PMPI_Comm_get_parent(parent);
}

/* The hand-out of a collective set-up over v's comm (both groups of an
 * inter-comm): its leader, rank 0 of group 0, sends `bytes` bytes at msg
 * to every other member, which receives them into msg.  The sends are
 * synchronous: the leader goes on once each member has read them. */
static int setup_hand_out(const tlsp_view *v, int tag, void *msg, int bytes, const char *call)
{
    tlsp_comm *c = v->comm;
    uint32_t ctx = c->ctx + 1;
    tlsp_buf b = {msg, bytes, MPI_BYTE};
    if (v->side == 0 && v->rank == 0) {
        int members = c->size[0] + (c->inter ? c->size[1] : 0);
        tlsp_req *reqs = tlsp_req_array((size_t)members);
        if (!reqs)
            return tlsp_error(v, MPI_ERR_NO_MEM, "%s: out of memory", call);
        int n = 0;
        for (int s = 0; s < (c->inter ? 2 : 1); s++)
            for (int i = 0; i < c->size[s]; i++) {
                if (s == 0 && i == 0)
                    continue;
                tlsp_req_init(&reqs[n], TLSP_REQ_SEND, v);
                reqs[n].sync = 1; /* read before the sender goes on */
                tlsp_isend_ep(c->group[s][i], ctx, 0, tag, &b, &reqs[n]);
                n++;
            }
        for (int i = 0; i < n; i++)
            tlsp_req_wait(&reqs[i]);
        free(reqs);
    } else {
        tlsp_req r;
        tlsp_req_init(&r, TLSP_REQ_RECV, v);
        tlsp_irecv_ctx(v->owner, ctx, 0, tag, &b, &r);
        tlsp_req_wait(&r);
    }
    return MPI_SUCCESS;
}

/* A comm the leader made for every member of v's comm: one set-up
 * reference per member, each dropped once that member has its view, so
 * that no member's early free can end it before the last one has its
 * view. */
static void setup_refs(tlsp_comm *made, const tlsp_comm *c)
{
    int members = c->size[0] + (c->inter ? c->size[1] : 0);
    atomic_fetch_add_explicit(&made->refs, members, memory_order_relaxed);
}

/* The calling member's view on made, at (side, rank); drops its set-up
 * reference. */
static int setup_view(const tlsp_view *v, tlsp_comm *made, int side, int rank, MPI_Comm *out, const char *call)
{
    tlsp_view *nv = tlsp_view_new(made, side, rank, v->owner, v);
    tlsp_comm_unref(made);
    if (!nv)
        return tlsp_error(v, MPI_ERR_NO_MEM, "%s: out of communicator handles", call);
    *out = tlsp_comm_handle(nv);
    return MPI_SUCCESS;
}

/* Collective over the comm's members (both groups of an inter-comm): the
 * leader makes the new comm and hands it to every other member, each of
 * which makes its own view. */
TLSP_EXPORT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    VIEW_OR_PASS(comm, "MPI_Comm_dup", PMPI_Comm_dup(comm, newcomm));
    tlsp_comm *c = v->comm;
    tlsp_comm *made = NULL;
    if (v->side == 0 && v->rank == 0) {
        made = tlsp_comm_new(c->inter, c->group[0], c->size[0], c->group[1], c->size[1]);
        if (!made)
            return tlsp_error(v, MPI_ERR_NO_MEM, "MPI_Comm_dup: out of memory");
        setup_refs(made, c);
    }
    int rc = setup_hand_out(v, TLSP_TAG_DUP, &made, (int)sizeof made, "MPI_Comm_dup");
    if (rc != MPI_SUCCESS)
        return rc;
    return setup_view(v, made, v->side, v->rank, newcomm, "MPI_Comm_dup");
}

/* Both groups of an inter-comm of threads as one intra-comm: the group
 * whose members passed high = false first (group 0, the parents, when
 * both passed the same value, which MPI leaves to the implementation).
 * Rank 0 of group 1 tells the leader its group's value; the leader makes
 * the comm and hands it out with the order. */
TLSP_EXPORT int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
    VIEW_OR_PASS(intercomm, "MPI_Intercomm_merge", PMPI_Intercomm_merge(intercomm, high, newintracomm));
    tlsp_comm *c = v->comm;
    if (!c->inter)
        return tlsp_error(v, MPI_ERR_COMM, "MPI_Intercomm_merge: not an inter-communicator");
    struct {
        tlsp_comm *made;
        int first; /* the group whose members come first */
    } m = {NULL, 0};
    int own = high != 0, other = 0;
    /* rank 0 to rank 0 of the other group, on the collective context */
    if (v->side == 1 && v->rank == 0) {
        tlsp_send_wait(v, &own, 1, MPI_INT, 0, TLSP_TAG_MERGE_HIGH, 1);
    } else if (v->side == 0 && v->rank == 0) {
        tlsp_recv_wait(v, &other, 1, MPI_INT, 0, TLSP_TAG_MERGE_HIGH, 1, MPI_STATUS_IGNORE);
        m.first = own && !other ? 1 : 0;
        int n = c->size[0] + c->size[1];
        tlsp_endpoint **all = malloc((size_t)n * sizeof *all);
        if (all) {
            memcpy(all, c->group[m.first], (size_t)c->size[m.first] * sizeof *all);
            memcpy(all + c->size[m.first], c->group[1 - m.first], (size_t)c->size[1 - m.first] * sizeof *all);
            m.made = tlsp_comm_new(0, all, n, NULL, 0);
            free(all);
        }
        if (!m.made)
            return tlsp_error(v, MPI_ERR_NO_MEM, "MPI_Intercomm_merge: out of memory");
        setup_refs(m.made, c);
    }
    int rc = setup_hand_out(v, TLSP_TAG_MERGE, &m, (int)sizeof m, "MPI_Intercomm_merge");
    if (rc != MPI_SUCCESS)
        return rc;
    int rank = v->side == m.first ? v->rank : c->size[m.first] + v->rank;
    return setup_view(v, m.made, 0, rank, newintracomm, "MPI_Intercomm_merge");
}

/* Names are each member's own (MPI_Comm_set_name is local): a view's.
 * MPI_COMM_WORLD, MPI_COMM_SELF and the parent of a task have the names
 * MPI gives them; a comm the program made has none (""). */
TLSP_EXPORT int MPI_Comm_set_name(MPI_Comm comm, const char *name)
{
    VIEW_OR_PASS(comm, "MPI_Comm_set_name", PMPI_Comm_set_name(comm, name));
    if (!name)
        return tlsp_error(v, MPI_ERR_ARG, "MPI_Comm_set_name: the name is NULL");
    /* truncated, as MPI says; otherwise kept whole (trailing spaces
     * too), as Open MPI and MPICH keep it */
    size_t len = strnlen(name, sizeof v->name - 1);
    memcpy(v->name, name, len);
    v->name[len] = '\0';
    v->named = 1;
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Comm_get_name(MPI_Comm comm, char *name, int *resultlen)
{
    VIEW_OR_PASS(comm, "MPI_Comm_get_name", PMPI_Comm_get_name(comm, name, resultlen));
    const char *n = v->name;
    tlsp_task *t = tlsp_self_task;
    if (!v->named)
        n = !t                ? ""
            : v == t->world  ? "MPI_COMM_WORLD"
            : v == t->self   ? "MPI_COMM_SELF"
            : v == t->parent ? "MPI_COMM_PARENT"
                             : "";
    size_t len = strlen(n);
    memcpy(name, n, len + 1);
    *resultlen = (int)len;
    return MPI_SUCCESS;
}

/* ----------------------------------------------------------- public API */

TLSP_EXPORT int tl_spawn_comm_kind(MPI_Comm comm)
{
    int bad;
    tlsp_view *v = tlsp_view_of(comm, &bad);
    if (v)
        return v->comm->inter ? TL_SPAWN_KIND_THREADS : TL_SPAWN_KIND_NONE;
    if (bad || comm == MPI_COMM_NULL)
        return TL_SPAWN_KIND_NONE;
    int inter = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return TL_SPAWN_KIND_NONE;
    return inter ? TL_SPAWN_KIND_PROCESSES : TL_SPAWN_KIND_NONE;
}
