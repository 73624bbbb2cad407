/*
 * test_spawn_semantics - an MPI program that checks the MPI semantics
 * libthreadlab-spawn must keep, and that runs unchanged with plain MPI
 * (its children are processes) and with the library (its children are
 * threads, or a mix).  It checks what it can itself and prints each
 * observed outcome as an "R ..." line; the test driver
 * (spawn-semantics.sh) runs it both ways and requires the same lines.
 *
 * Tree: the start spawns 4 `child`ren in one call; child 0 spawns a
 * `grandchild`, which spawns a `great` grandchild (from MPI_COMM_SELF);
 * all children live until then.  With the library and a limit of 4,
 * counting running tasks (the seed's count), the children are threads,
 * the grandchild a process (the limit is full) and
 * the great grandchild a thread of that process: a mixed tree.  "K ..." lines say which kind
 * each spawn gave (TL_SPAWN_KIND_*, read through a weak reference so the
 * program also runs without the library).
 *
 * Phases, between the start (P) and its children (C0..C3):
 *   order      80 messages, eager and rendezvous sizes mixed, received with
 *              wildcards: per sender in sending order, statuses right
 *   wildcards  specific (source, tag) receives that skip earlier messages
 *   status     MPI_Get_count / MPI_Get_elements on several types, empty
 *              messages, MPI_PROC_NULL, MPI_ERR_TRUNCATE under
 *              MPI_ERRORS_RETURN
 *   nonblock   receives posted before the sends, Waitall, Waitany, Test
 *   probe      Probe for the size, Iprobe polling
 *   world      Sendrecv ring, Barrier, Bcast, Reduce, Allreduce (also
 *              MPI_IN_PLACE), Gather, Scatter inside the children's world
 *   dup        a dup's messages never match the original communicator's
 *   derived    a vector datatype on either side
 *   merge      MPI_Intercomm_merge of the start and its children, a
 *              collective over it; the names of the children's
 *              communicators
 *   nested     the grandchildren's result, through two more spawns
 *
 * `test_spawn_semantics exit`, `refuse` and `fatal` are checks of the
 * library only (thread tasks): exit() in a task ends the task; a call the
 * library does not implement on its communicators fails with an error
 * naming it; a handle used by the wrong task is caught; fatal errors in
 * several tasks at once end the job by one abort.  `threads`: the
 * threads of one MPI rank, of the start and of its tasks, share it (two
 * threads spawn, the main thread uses both inter-communicators; threads a
 * task starts, pthreads and an OpenMP team, are that task).
 *
 * No global variables: with the library every child is a thread of one
 * process and would share them.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "threadlab/spawn.h"

#pragma weak tl_spawn_comm_kind
#pragma weak tl_spawn_get_stats

#define NCHILD 4
#define ORDER_MSGS 20
#define BIG 3000   /* ints: above the library's eager size */

typedef struct {
    int failed;
    const char *who;
} checker;

#define CHECK(ck, cond, ...)                                                                            \
    do {                                                                                               \
        if (!(cond)) {                                                                                 \
            fprintf(stderr, "FAIL %s (%s:%d): ", (ck)->who, __FILE__, __LINE__);                       \
            fprintf(stderr, __VA_ARGS__);                                                              \
            fputc('\n', stderr);                                                                       \
            (ck)->failed++;                                                                            \
        }                                                                                              \
    } while (0)

static int kind_of(MPI_Comm comm)
{
    return tl_spawn_comm_kind ? tl_spawn_comm_kind(comm) : TL_SPAWN_KIND_PROCESSES;
}

static const char *kind_name(int kind)
{
    return kind == TL_SPAWN_KIND_THREADS ? "threads" : kind == TL_SPAWN_KIND_PROCESSES ? "processes" : "none";
}

static int count_of(MPI_Status *st, MPI_Datatype t)
{
    int n = -42;
    MPI_Get_count(st, t, &n);
    return n;
}

static MPI_Comm spawn_self(const char *self, const char *role, int n)
{
    char *args[] = {(char *)role, NULL};
    MPI_Comm inter;
    if (MPI_Comm_spawn(self, args, n, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE) != MPI_SUCCESS) {
        fprintf(stderr, "spawn of %s failed\n", role);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return inter;
}

/* Phases are gated: no child sends a phase's messages before the start
 * asks for them, so the wildcard receives of one phase never take the
 * next phase's messages. */
static void release(MPI_Comm kids, int phase)
{
    for (int c = 0; c < NCHILD; c++)
        MPI_Send(&phase, 1, MPI_INT, c, 1000 + phase, kids);
}

static void await(MPI_Comm parent, int phase)
{
    int got = -1;
    MPI_Recv(&got, 1, MPI_INT, 0, 1000 + phase, parent, MPI_STATUS_IGNORE);
}

/* ------------------------------------------------------------- the start */

static void phase_order(checker *ck, MPI_Comm kids)
{
    int *buf = malloc(BIG * sizeof *buf);
    int next[NCHILD] = {0};
    int ok = 1;
    for (int m = 0; m < NCHILD * ORDER_MSGS; m++) {
        MPI_Status st;
        MPI_Recv(buf, BIG, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, kids, &st);
        int c = st.MPI_SOURCE, i = buf[1];
        int want = i % 2 ? BIG : 8;
        if (c < 0 || c >= NCHILD || buf[0] != c || i != next[c] || st.MPI_TAG != i % 3 ||
            count_of(&st, MPI_INT) != want || buf[want - 1] != c + i) {
            ok = 0;
            CHECK(ck, 0, "order: from %d got message %d (tag %d, %d ints), expected %d", c, i, st.MPI_TAG,
                  count_of(&st, MPI_INT), c >= 0 && c < NCHILD ? next[c] : -1);
        }
        if (c >= 0 && c < NCHILD)
            next[c]++;
    }
    printf("R order %s\n", ok ? "in-sending-order" : "OVERTAKEN");
    free(buf);
}

static void phase_wildcards(checker *ck, MPI_Comm kids)
{
    int v;
    MPI_Status st;
    MPI_Recv(&v, 1, MPI_INT, 3, 12, kids, &st);
    printf("R wild specific %d src %d tag %d\n", v, st.MPI_SOURCE, st.MPI_TAG);
    int seen = 0;
    for (int i = 0; i < NCHILD; i++) {
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 11, kids, &st);
        CHECK(ck, v == st.MPI_SOURCE * 1000 + 11 && st.MPI_TAG == 11, "wildcards: tag 11 gave %d from %d", v,
              st.MPI_SOURCE);
        seen |= 1 << st.MPI_SOURCE;
    }
    printf("R wild tag11 sources %x\n", seen);
    int sum = 0;
    for (int i = 0; i < 2 * NCHILD - 1; i++) {
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, kids, &st);
        CHECK(ck, v == st.MPI_SOURCE * 1000 + st.MPI_TAG, "wildcards: %d from %d tag %d", v, st.MPI_SOURCE,
              st.MPI_TAG);
        sum += v;
    }
    printf("R wild rest sum %d\n", sum);
}

static void phase_status(checker *ck, MPI_Comm kids)
{
    MPI_Status st;
    int small[5];
    MPI_Comm_set_errhandler(kids, MPI_ERRORS_RETURN);
    int rc = MPI_Recv(small, 5, MPI_INT, 1, 20, kids, &st);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    printf("R status truncate class %s src %d tag %d\n", cls == MPI_ERR_TRUNCATE ? "MPI_ERR_TRUNCATE" : "other",
           st.MPI_SOURCE, st.MPI_TAG);
    double d[10];
    MPI_Recv(d, 10, MPI_DOUBLE, 1, 21, kids, &st);
    int el = -1;
    MPI_Get_elements(&st, MPI_DOUBLE, &el);
    printf("R status doubles count %d bytes %d ints %d elements %d first %g\n", count_of(&st, MPI_DOUBLE),
           count_of(&st, MPI_BYTE), count_of(&st, MPI_INT), el, d[0]);
    int four[4];
    MPI_Recv(four, 4, MPI_INT, 1, 22, kids, &st);
    int c = count_of(&st, MPI_INT);
    printf("R status 3 bytes as int %s as char %d\n", c == MPI_UNDEFINED ? "undefined" : "defined",
           count_of(&st, MPI_CHAR));
    MPI_Recv(four, 4, MPI_INT, 1, 23, kids, &st);
    printf("R status empty count %d tag %d\n", count_of(&st, MPI_INT), st.MPI_TAG);
    MPI_Recv(four, 4, MPI_INT, MPI_PROC_NULL, 5, kids, &st);
    printf("R status proc_null src %s tag %s count %d\n", st.MPI_SOURCE == MPI_PROC_NULL ? "PROC_NULL" : "other",
           st.MPI_TAG == MPI_ANY_TAG ? "ANY_TAG" : "other", count_of(&st, MPI_INT));
    rc = MPI_Send(four, 1, MPI_INT, NCHILD + 3, 0, kids);
    MPI_Error_class(rc, &cls);
    CHECK(ck, cls == MPI_ERR_RANK, "a send to rank %d gave class %d", NCHILD + 3, cls);
    MPI_Comm_set_errhandler(kids, MPI_ERRORS_ARE_FATAL);
}

static void phase_nonblock(checker *ck, MPI_Comm kids)
{
    int *data = malloc(NCHILD * 2000 * sizeof *data);
    MPI_Request r[NCHILD];
    for (int c = 0; c < NCHILD; c++)
        MPI_Irecv(data + c * 2000, 2000, MPI_INT, c, 30, kids, &r[c]);
    int go = 1;
    for (int c = 0; c < NCHILD; c++)
        MPI_Send(&go, 1, MPI_INT, c, 31, kids);
    MPI_Status sts[NCHILD];
    MPI_Waitall(NCHILD, r, sts);
    long sum = 0;
    for (int c = 0; c < NCHILD; c++) {
        CHECK(ck, sts[c].MPI_SOURCE == c && count_of(&sts[c], MPI_INT) == 2000, "waitall status of %d", c);
        CHECK(ck, r[c] == MPI_REQUEST_NULL, "waitall left request %d", c);
        for (int i = 0; i < 2000; i++)
            sum += data[c * 2000 + i];
    }
    printf("R nonblock waitall sum %ld\n", sum);
    /* Two messages from each child: Waitany over all, then Test. */
    int vals[2 * NCHILD];
    MPI_Request rr[2 * NCHILD];
    for (int i = 0; i < 2 * NCHILD; i++)
        MPI_Irecv(&vals[i], 1, MPI_INT, i / 2, 32 + i % 2, kids, &rr[i]);
    int total = 0;
    for (int n = 0; n < 2 * NCHILD - 1; n++) {
        int idx;
        MPI_Status st;
        MPI_Waitany(2 * NCHILD, rr, &idx, &st);
        CHECK(ck, idx >= 0 && idx < 2 * NCHILD && st.MPI_SOURCE == idx / 2 && st.MPI_TAG == 32 + idx % 2,
              "waitany index %d source %d", idx, st.MPI_SOURCE);
        total += vals[idx];
    }
    int flag = 0, last = -1;
    for (int i = 0; i < 2 * NCHILD; i++)
        if (rr[i] != MPI_REQUEST_NULL)
            last = i;
    while (!flag)
        MPI_Test(&rr[last], &flag, MPI_STATUS_IGNORE);
    total += vals[last];
    int idx;
    MPI_Waitany(2 * NCHILD, rr, &idx, MPI_STATUS_IGNORE);
    printf("R nonblock waitany total %d after-all %s\n", total, idx == MPI_UNDEFINED ? "UNDEFINED" : "index");
    free(data);
}

static void phase_probe(checker *ck, MPI_Comm kids)
{
    MPI_Status st;
    MPI_Probe(MPI_ANY_SOURCE, 40, kids, &st);
    int n = count_of(&st, MPI_INT);
    int *buf = malloc((size_t)n * sizeof *buf);
    MPI_Recv(buf, n, MPI_INT, st.MPI_SOURCE, 40, kids, &st);
    long sum = 0;
    for (int i = 0; i < n; i++)
        sum += buf[i];
    printf("R probe count %d from %d sum %ld\n", n, st.MPI_SOURCE, sum);
    free(buf);
    int flag = 0, v = 0;
    while (!flag)
        MPI_Iprobe(0, 41, kids, &flag, &st);
    CHECK(ck, st.MPI_SOURCE == 0 && st.MPI_TAG == 41, "iprobe status");
    MPI_Recv(&v, 1, MPI_INT, 0, 41, kids, MPI_STATUS_IGNORE);
    printf("R probe iprobe value %d\n", v);
    /* matched probes: the message is taken at the probe (a receive of any
     * tag from its sender, posted in between, must not get it), small and
     * large */
    MPI_Message msg;
    MPI_Comm_set_errhandler(kids, MPI_ERRORS_RETURN); /* the message's errors go to its communicator */
    MPI_Mprobe(MPI_ANY_SOURCE, 42, kids, &msg, &st);
    n = count_of(&st, MPI_INT);
    int src = st.MPI_SOURCE;
    int other = 0;
    MPI_Recv(&other, 1, MPI_INT, src, MPI_ANY_TAG, kids, &st); /* its next: tag 44 */
    printf("R probe after mprobe tag %d value %d\n", st.MPI_TAG, other);
    buf = malloc((size_t)n * sizeof *buf);
    /* a bad count is refused and leaves the message to receive */
    int cls = -1, rc = MPI_Mrecv(buf, -1, MPI_INT, &msg, &st);
    MPI_Error_class(rc, &cls);
    printf("R probe mrecv count -1 %s, message kept %s\n", cls == MPI_ERR_COUNT ? "MPI_ERR_COUNT" : "other error",
           msg != MPI_MESSAGE_NULL ? "yes" : "no");
    MPI_Comm_set_errhandler(kids, MPI_ERRORS_ARE_FATAL);
    MPI_Mrecv(buf, n, MPI_INT, &msg, &st);
    sum = 0;
    for (int i = 0; i < n; i++)
        sum += buf[i];
    CHECK(ck, msg == MPI_MESSAGE_NULL && st.MPI_SOURCE == src && st.MPI_TAG == 42, "mrecv status and handle");
    printf("R probe mprobe count %d from %d sum %ld\n", n, src, sum);
    free(buf);
    flag = 0;
    while (!flag)
        MPI_Improbe(3, 43, kids, &flag, &msg, &st);
    n = count_of(&st, MPI_INT);
    buf = malloc((size_t)n * sizeof *buf);
    MPI_Request rq;
    MPI_Imrecv(buf, n, MPI_INT, &msg, &rq);
    MPI_Wait(&rq, &st);
    sum = 0;
    for (int i = 0; i < n; i++)
        sum += buf[i];
    CHECK(ck, msg == MPI_MESSAGE_NULL && rq == MPI_REQUEST_NULL && st.MPI_SOURCE == 3 && count_of(&st, MPI_INT) == n,
          "imrecv status and handles");
    printf("R probe improbe count %d from %d sum %ld\n", n, st.MPI_SOURCE, sum);
    free(buf);
    MPI_Mprobe(MPI_PROC_NULL, 42, kids, &msg, &st);
    int noproc = msg == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL;
    MPI_Mrecv(NULL, 0, MPI_INT, &msg, &st);
    noproc = noproc && st.MPI_SOURCE == MPI_PROC_NULL && msg == MPI_MESSAGE_NULL;
    printf("R probe mprobe proc_null %s\n", noproc ? "yes" : "no");
}

static void phase_collect(MPI_Comm kids, const char *what, int n)
{
    for (int c = 0; c < NCHILD; c++) {
        int vals[8];
        MPI_Recv(vals, n, MPI_INT, c, 50, kids, MPI_STATUS_IGNORE);
        printf("R %s child %d:", what, c);
        for (int i = 0; i < n; i++)
            printf(" %d", vals[i]);
        printf("\n");
    }
}

static void phase_derived(MPI_Comm kids)
{
    int got[4];
    MPI_Recv(got, 4, MPI_INT, 3, 60, kids, MPI_STATUS_IGNORE);
    printf("R derived from-vector %d %d %d %d\n", got[0], got[1], got[2], got[3]);
    int mine[4] = {41, 42, 43, 44};
    MPI_Send(mine, 4, MPI_INT, 3, 61, kids);
}

/* merge: the start passes high = 1, so the children come first (ranks
 * 0..3 as in their world) and the start last; an Allreduce and a Bcast
 * from the start run over the merged communicator. */
static void phase_merge(MPI_Comm kids)
{
    MPI_Comm all;
    MPI_Intercomm_merge(kids, 1, &all);
    int r = -1, n = -1;
    MPI_Comm_rank(all, &r);
    MPI_Comm_size(all, &n);
    int v = r + 1, sum = 0, b = 4242;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, all);
    MPI_Bcast(&b, 1, MPI_INT, n - 1, all);
    printf("R merge start rank %d of %d sum %d\n", r, n, sum);
    MPI_Comm_free(&all);
}

/* MPI_Bcast over the inter-communicator, both ways: the start (MPI_ROOT)
 * to every child, a large payload; then child 2 (MPI_ROOT in the
 * children's group, the others MPI_PROC_NULL) to the start. */
static void phase_bcast_inter(MPI_Comm kids)
{
    int *big = malloc(BIG * sizeof *big);
    for (int i = 0; i < BIG; i++)
        big[i] = i % 11;
    MPI_Bcast(big, BIG, MPI_INT, MPI_ROOT, kids);
    free(big);
    int back = 0;
    MPI_Bcast(&back, 1, MPI_INT, 2, kids);
    printf("R bcast inter from child 2 value %d\n", back);
}

static void child_bcast_inter(checker *ck, MPI_Comm parent, int rank)
{
    int *big = calloc(BIG, sizeof *big);
    MPI_Bcast(big, BIG, MPI_INT, 0, parent);
    long sum = 0;
    for (int i = 0; i < BIG; i++)
        sum += big[i];
    CHECK(ck, sum == 14988 && big[BIG - 1] == (BIG - 1) % 11, "inter-communicator broadcast from the start: sum %ld",
          sum);
    free(big);
    int mine = 700 + rank;
    MPI_Bcast(&mine, 1, MPI_INT, rank == 2 ? MPI_ROOT : MPI_PROC_NULL, parent);
}

static int run_start(const char *self)
{
    checker ck = {0, "start"};
    MPI_Comm kids = spawn_self(self, "child", NCHILD);
    printf("K start->children %s\n", kind_name(kind_of(kids)));
    int rs = 0;
    MPI_Comm_remote_size(kids, &rs);
    printf("R remote size %d\n", rs);
    release(kids, 1);
    phase_order(&ck, kids);
    release(kids, 2);
    phase_wildcards(&ck, kids);
    release(kids, 3);
    phase_status(&ck, kids);
    release(kids, 4);
    phase_nonblock(&ck, kids);
    release(kids, 5);
    phase_probe(&ck, kids);
    release(kids, 6);
    phase_collect(kids, "world", 8);
    phase_collect(kids, "dup", 2);
    phase_derived(kids);
    phase_merge(kids);
    phase_bcast_inter(kids);
    int nested[3];
    MPI_Recv(nested, 3, MPI_INT, 0, 70, kids, MPI_STATUS_IGNORE);
    printf("R nested value %d\n", nested[0]);
    printf("K child0->grandchild %s\n", kind_name(nested[1]));
    printf("K grandchild->great %s\n", kind_name(nested[2]));
    release(kids, 7);
    int failed_children = 0;
    for (int c = 0; c < NCHILD; c++) {
        int f = 0;
        MPI_Recv(&f, 1, MPI_INT, c, 99, kids, MPI_STATUS_IGNORE);
        failed_children += f;
    }
    MPI_Comm_disconnect(&kids);
    int failed = ck.failed + failed_children;
    printf("semantics: %d failed checks\n", failed);
    fflush(stdout);
    return failed ? 1 : 0;
}

/* ------------------------------------------------------------ a child */

static void child_world(checker *ck, MPI_Comm parent, int rank, int n)
{
    int out[8] = {0};
    /* ring */
    int left = (rank + n - 1) % n, right = (rank + 1) % n, got = -1;
    MPI_Status st;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &st);
    CHECK(ck, st.MPI_SOURCE == left && st.MPI_TAG == 7, "sendrecv status");
    out[0] = got;
    MPI_Barrier(MPI_COMM_WORLD);
    int arr[5] = {0};
    if (rank == 1)
        for (int i = 0; i < 5; i++)
            arr[i] = (i + 1) * 7;
    MPI_Bcast(arr, 5, MPI_INT, 1, MPI_COMM_WORLD);
    out[1] = arr[4];
    int v = rank + 1, sum = -1;
    MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_SUM, 2, MPI_COMM_WORLD);
    out[2] = rank == 2 ? sum : -1;
    int sq = rank * rank, mx = -1;
    MPI_Allreduce(&sq, &mx, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    out[3] = mx;
    int inplace = rank + 10;
    MPI_Allreduce(MPI_IN_PLACE, &inplace, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    out[4] = inplace;
    int pair[2] = {rank * 10, rank * 10 + 1}, all[2 * NCHILD] = {0};
    MPI_Gather(pair, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);
    out[5] = rank == 0 ? all[2 * n - 1] + all[2] : -1;
    int src[2 * NCHILD], mine[2] = {-1, -1};
    for (int i = 0; i < 2 * n; i++)
        src[i] = (i / 2) * 3 + i % 2;
    MPI_Scatter(src, 2, MPI_INT, mine, 2, MPI_INT, 3, MPI_COMM_WORLD);
    out[6] = mine[0] * 100 + mine[1];
    int sz = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &sz);
    out[7] = sz;
    MPI_Send(out, 8, MPI_INT, 0, 50, parent);
}

static void child_dup(checker *ck, MPI_Comm parent, int rank)
{
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int r = -1, res[2] = {0, 0};
    MPI_Comm_rank(dup, &r);
    CHECK(ck, r == rank, "dup rank %d vs %d", r, rank);
    if (rank == 0) {
        int one = 1, two = 2;
        MPI_Send(&one, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
        MPI_Send(&two, 1, MPI_INT, 1, 5, dup);
    } else if (rank == 1) {
        MPI_Recv(&res[0], 1, MPI_INT, 0, 5, dup, MPI_STATUS_IGNORE);
        MPI_Recv(&res[1], 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Comm_free(&dup);
    CHECK(ck, dup == MPI_COMM_NULL, "freed dup not null");
    MPI_Send(res, 2, MPI_INT, 0, 50, parent);
}

static void child_merge(checker *ck, MPI_Comm parent, int rank)
{
    MPI_Comm all;
    MPI_Intercomm_merge(parent, 0, &all);
    int r = -1, n = -1;
    MPI_Comm_rank(all, &r);
    MPI_Comm_size(all, &n);
    CHECK(ck, r == rank && n == NCHILD + 1, "merged: rank %d of %d, expected %d of %d", r, n, rank, NCHILD + 1);
    int v = r + 1, sum = 0, b = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, all);
    MPI_Bcast(&b, 1, MPI_INT, n - 1, all);
    CHECK(ck, sum == (NCHILD + 1) * (NCHILD + 2) / 2 && b == 4242, "merged: sum %d, broadcast %d", sum, b);
    MPI_Comm_free(&all);
}

/* The names MPI gives (MPI_COMM_WORLD, _SELF, _PARENT), one set and read
 * back (truncated to MPI_MAX_OBJECT_NAME - 1),
 * and a dup's: none. */
static void child_names(checker *ck, MPI_Comm parent)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(ck, strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world's name \"%s\" (%d)", name, len);
    MPI_Comm_get_name(MPI_COMM_SELF, name, &len);
    CHECK(ck, strcmp(name, "MPI_COMM_SELF") == 0, "self's name \"%s\"", name);
    MPI_Comm_get_name(parent, name, &len);
    CHECK(ck, strcmp(name, "MPI_COMM_PARENT") == 0, "parent's name \"%s\"", name);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_get_name(dup, name, &len);
    CHECK(ck, name[0] == '\0' && len == 0, "a dup's name \"%s\", none expected", name);
    char longer[2 * MPI_MAX_OBJECT_NAME];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    MPI_Comm_set_name(dup, longer);
    MPI_Comm_get_name(dup, name, &len);
    CHECK(ck, len == MPI_MAX_OBJECT_NAME - 1 && (int)strlen(name) == len, "a long name kept %d bytes", len);
    MPI_Comm_set_name(dup, "kids");
    MPI_Comm_get_name(dup, name, &len);
    CHECK(ck, strcmp(name, "kids") == 0 && len == 4, "dup's name \"%s\" (%d)", name, len);
    MPI_Comm_free(&dup);
}

static int run_child(const char *self, MPI_Comm parent, int init_seen)
{
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char who[32];
    snprintf(who, sizeof who, "child %d", rank);
    checker ck = {0, who};
    CHECK(&ck, init_seen, "MPI_Initialized: not before MPI_Init_thread, then yes");
    /* order */
    await(parent, 1);
    int *buf = calloc(BIG, sizeof *buf);
    for (int i = 0; i < ORDER_MSGS; i++) {
        int len = i % 2 ? BIG : 8;
        buf[0] = rank;
        buf[1] = i;
        buf[len - 1] = rank + i;
        MPI_Send(buf, len, MPI_INT, 0, i % 3, parent);
    }
    /* wildcards */
    await(parent, 2);
    for (int tag = 10; tag <= 12; tag++) {
        int v = rank * 1000 + tag;
        MPI_Send(&v, 1, MPI_INT, 0, tag, parent);
    }
    /* status */
    await(parent, 3);
    if (rank == 1) {
        int ten[10] = {0};
        MPI_Send(ten, 10, MPI_INT, 0, 20, parent);
        double d[7] = {2.5, 0, 0, 0, 0, 0, 0};
        MPI_Send(d, 7, MPI_DOUBLE, 0, 21, parent);
        char three[3] = {1, 2, 3};
        MPI_Send(three, 3, MPI_CHAR, 0, 22, parent);
        MPI_Send(NULL, 0, MPI_INT, 0, 23, parent);
    }
    /* nonblock */
    await(parent, 4);
    int go = 0;
    MPI_Recv(&go, 1, MPI_INT, 0, 31, parent, MPI_STATUS_IGNORE);
    for (int i = 0; i < 2000; i++)
        buf[i] = rank * 2000 + i;
    MPI_Send(buf, 2000, MPI_INT, 0, 30, parent);
    int two[2] = {rank * 10 + 1, rank * 10 + 2};
    MPI_Request rq[2];
    MPI_Isend(&two[0], 1, MPI_INT, 0, 32, parent, &rq[0]);
    MPI_Isend(&two[1], 1, MPI_INT, 0, 33, parent, &rq[1]);
    MPI_Status sts[2];
    MPI_Waitall(2, rq, sts);
    /* probe */
    await(parent, 5);
    if (rank == 2) {
        for (int i = 0; i < 123; i++)
            buf[i] = i;
        MPI_Send(buf, 123, MPI_INT, 0, 40, parent);
    }
    if (rank == 0) {
        int v = 4141;
        MPI_Send(&v, 1, MPI_INT, 0, 41, parent);
    }
    if (rank == 1) {
        for (int i = 0; i < 77; i++)
            buf[i] = 2 * i;
        MPI_Send(buf, 77, MPI_INT, 0, 42, parent);
        int v = 4444;
        MPI_Send(&v, 1, MPI_INT, 0, 44, parent);
    }
    if (rank == 3) {
        for (int i = 0; i < BIG; i++)
            buf[i] = i % 7;
        MPI_Send(buf, BIG, MPI_INT, 0, 43, parent);
    }
    free(buf);
    await(parent, 6);
    child_world(&ck, parent, rank, n);
    child_dup(&ck, parent, rank);
    /* derived */
    if (rank == 3) {
        int strided[12];
        for (int i = 0; i < 12; i++)
            strided[i] = 100 + i;
        MPI_Datatype vec;
        MPI_Type_vector(4, 1, 3, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        MPI_Send(strided, 1, vec, 0, 60, parent);
        int into[12] = {0};
        MPI_Recv(into, 1, vec, 0, 61, parent, MPI_STATUS_IGNORE);
        CHECK(&ck, into[0] == 41 && into[3] == 42 && into[6] == 43 && into[9] == 44 && into[1] == 0,
              "received into a vector: %d %d %d %d", into[0], into[3], into[6], into[9]);
        MPI_Type_free(&vec);
    }
    child_merge(&ck, parent, rank);
    child_bcast_inter(&ck, parent, rank);
    child_names(&ck, parent);
    /* nested */
    if (rank == 0) {
        MPI_Comm g = spawn_self(self, "grandchild", 1);
        int res[2] = {0, 0};
        MPI_Recv(res, 2, MPI_INT, 0, 80, g, MPI_STATUS_IGNORE);
        int out[3] = {res[0], kind_of(g), res[1]};
        MPI_Comm_disconnect(&g);
        MPI_Send(out, 3, MPI_INT, 0, 70, parent);
    }
    /* Every child stays until the nested spawns are done, so the thread
     * limit they see is the same at every run. */
    await(parent, 7);
    MPI_Send(&ck.failed, 1, MPI_INT, 0, 99, parent);
    MPI_Comm_disconnect(&parent);
    return 0;
}

static int run_grandchild(const char *self, MPI_Comm parent)
{
    MPI_Comm g = spawn_self(self, "great", 1);
    int v = 0;
    MPI_Recv(&v, 1, MPI_INT, 0, 81, g, MPI_STATUS_IGNORE);
    int res[2] = {v + 1, kind_of(g)};
    MPI_Comm_disconnect(&g);
    MPI_Send(res, 2, MPI_INT, 0, 80, parent);
    MPI_Comm_disconnect(&parent);
    return 0;
}

static int run_great(MPI_Comm parent)
{
    int rank = -1, size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int v = 7 + rank + size;
    MPI_Send(&v, 1, MPI_INT, 0, 81, parent);
    MPI_Comm_disconnect(&parent);
    return 0;
}

/* ------------------------------------------------- library-only checks */

/* exit() in a thread task ends that task only: the start goes on. */
static int run_exit_start(const char *self)
{
    MPI_Comm kids = spawn_self(self, "exiter", 2);
    int v[2];
    MPI_Recv(&v[0], 1, MPI_INT, 0, 1, kids, MPI_STATUS_IGNORE);
    MPI_Recv(&v[1], 1, MPI_INT, 1, 1, kids, MPI_STATUS_IGNORE);
    MPI_Comm_free(&kids);
    tl_spawn_stats s = {0};
    if (tl_spawn_get_stats)
        tl_spawn_get_stats(&s);
    printf("exit: start still running after its tasks called exit (got %d %d), %ld running\n", v[0], v[1],
           s.running);
    return v[0] == 10 && v[1] == 11 ? 0 : 1;
}

static int run_exiter(MPI_Comm parent)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int v = 10 + rank;
    MPI_Send(&v, 1, MPI_INT, 0, 1, parent);
    exit(3);
}

/* Refusals and misuse, each under MPI_ERRORS_RETURN. */
static int run_refuse_start(const char *self)
{
    MPI_Comm kids = spawn_self(self, "refuser", 2);
    int f[2] = {1, 1};
    MPI_Recv(&f[0], 1, MPI_INT, 0, 2, kids, MPI_STATUS_IGNORE);
    MPI_Recv(&f[1], 1, MPI_INT, 1, 2, kids, MPI_STATUS_IGNORE);
    MPI_Comm_free(&kids);
    printf("refuse: %d failed checks\n", f[0] + f[1]);
    return f[0] + f[1] ? 1 : 0;
}

static int run_refuser(MPI_Comm parent)
{
    checker ck = {0, "refuser"};
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm split = MPI_COMM_NULL;
    int rc = MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &split);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(&ck, cls == MPI_ERR_UNSUPPORTED_OPERATION && split == MPI_COMM_NULL,
          "MPI_Comm_split on thread tasks gave class %d", cls);
    int in = rank, out = -1;
    rc = MPI_Scan(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(&ck, cls == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Scan gave class %d", cls);
    /* A handle made by the other task: exchanged through a message, the
     * way a global variable shared by both would carry it. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MPI_Comm other = MPI_COMM_NULL;
    MPI_Sendrecv(&dup, sizeof dup, MPI_BYTE, 1 - rank, 3, &other, sizeof other, MPI_BYTE, 1 - rank, 3,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int r = -1;
    rc = MPI_Comm_rank(other, &r);
    MPI_Error_class(rc, &cls);
    CHECK(&ck, rc != MPI_SUCCESS && cls == MPI_ERR_COMM, "another task's handle was accepted (rank %d)", r);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&dup);
    MPI_Send(&ck.failed, 1, MPI_INT, 0, 2, parent);
    MPI_Comm_disconnect(&parent);
    return 0;
}

/* Every task of a spawn meets a fatal error at once (a refused call under
 * MPI_ERRORS_ARE_FATAL): the job must end by one MPI_Abort with the
 * error's code, not by a crash of several aborts at once. */
static int run_fatal_start(const char *self)
{
    MPI_Comm kids = spawn_self(self, "fataler", 8);
    int never = 0;
    MPI_Recv(&never, 1, MPI_INT, 0, 1, kids, MPI_STATUS_IGNORE);
    printf("fatal: the job was not aborted\n");
    return 1;
}

static int run_fataler(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &split);
    return 1; /* not reached: the job is aborted */
}

/* The decision, seen from the program: the kind of one spawn of one
 * `hello` child through each path. */
static int spawn_kind(const char *path, MPI_Info info)
{
    char *args[] = {"hello", NULL};
    MPI_Comm kid;
    if (MPI_Comm_spawn(path, args, 1, info, 0, MPI_COMM_SELF, &kid, MPI_ERRCODES_IGNORE) != MPI_SUCCESS)
        return -1;
    int v = 0;
    MPI_Recv(&v, 1, MPI_INT, 0, 4, kid, MPI_STATUS_IGNORE);
    int kind = v == 4242 ? kind_of(kid) : -1;
    MPI_Comm_disconnect(&kid);
    return kind;
}

static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0700);
    char buf[65536];
    ssize_t n = 0;
    int ok = in >= 0 && out >= 0;
    while (ok && (n = read(in, buf, sizeof buf)) > 0)
        ok = write(out, buf, (size_t)n) == n;
    ok = ok && n == 0;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return ok ? 0 : -1;
}

/* A directory of this test's own, in $TMPDIR (an absolute one) or /tmp:
 * mkdtemp picks a name nobody can predict and makes it 0700, never an
 * existing one; lstat confirms it is that (a directory, ours, 0700, not a
 * link) before anything is written in it. */
static int private_dir(char *dir, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/')
        tmp = "/tmp";
    int n = snprintf(dir, len, "%s/threadlab-spawn-decide-XXXXXX", tmp);
    struct stat st;
    if (n < 0 || (size_t)n >= len || !mkdtemp(dir))
        return -1;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
        fprintf(stderr, "decide: %s is not a private directory of this user\n", dir);
        return -1;
    }
    return 0;
}

static int run_decide_start(void)
{
    char exe[PATH_MAX], dir[PATH_MAX], link_path[PATH_MAX + 64], copy_path[PATH_MAX + 64];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0 || private_dir(dir, sizeof dir) != 0)
        return 2;
    exe[len] = '\0';
    snprintf(link_path, sizeof link_path, "%s/link", dir);
    snprintf(copy_path, sizeof copy_path, "%s/copy", dir);
    int rc = 1;
    if (symlink(exe, link_path) == 0 && copy_file(exe, copy_path) == 0) {
        int by_link = spawn_kind(link_path, MPI_INFO_NULL);
        int by_copy = spawn_kind(copy_path, MPI_INFO_NULL);
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "wdir", "/");
        int with_info = spawn_kind(exe, info);
        MPI_Info_free(&info);
        printf("decide: link %s, copy %s, info %s\n", kind_name(by_link), kind_name(by_copy), kind_name(with_info));
        rc = by_link == TL_SPAWN_KIND_THREADS && by_copy == TL_SPAWN_KIND_PROCESSES &&
                     with_info == TL_SPAWN_KIND_PROCESSES
                 ? 0
                 : 1;
    }
    unlink(link_path);
    unlink(copy_path);
    rmdir(dir);
    return rc;
}

static int run_hello(MPI_Comm parent)
{
    int v = 4242;
    MPI_Send(&v, 1, MPI_INT, 0, 4, parent);
    MPI_Comm_disconnect(&parent);
    return 0;
}

/* What the limit counts: a thread task asleep in MPI_Recv holds its slot
 * (running, the default) or gives it back (runnable).  At a limit of 1
 * the start spawns a waiter, a thread, and spawns again once the waiter
 * sleeps: a process, or under runnable counting a thread. */
static int parked_now(void)
{
    tl_spawn_stats s = {0};
    if (tl_spawn_get_stats)
        tl_spawn_get_stats(&s);
    return (int)s.parked;
}

static int run_park_start(const char *self)
{
    MPI_Comm waiter = spawn_self(self, "waiter", 1);
    int waiter_kind = kind_of(waiter);
    /* The waiter parks once its spin runs out: 30 s is a broken library. */
    double deadline = MPI_Wtime() + 30;
    while (parked_now() != 1 && MPI_Wtime() < deadline)
        usleep(1000);
    int parked = parked_now();
    int second = spawn_kind(self, MPI_INFO_NULL);
    int v = 77, back = 0;
    MPI_Send(&v, 1, MPI_INT, 0, 5, waiter);
    MPI_Recv(&back, 1, MPI_INT, 0, 6, waiter, MPI_STATUS_IGNORE);
    MPI_Comm_disconnect(&waiter);
    tl_spawn_stats s = {0};
    if (tl_spawn_get_stats)
        tl_spawn_get_stats(&s);
    printf("park: waiter %s, %d parked, second spawn %s (limit %ld counts %s), waiter answered %d, %ld parked "
           "after\n",
           kind_name(waiter_kind), parked, kind_name(second), s.limit,
           s.limit_counts == TL_SPAWN_COUNTS_RUNNABLE ? "runnable" : "running", back, s.parked);
    return waiter_kind == TL_SPAWN_KIND_THREADS && parked == 1 && back == 78 && s.parked == 0 && second > 0 ? 0 : 1;
}

static int run_waiter(MPI_Comm parent)
{
    int v = 0;
    MPI_Recv(&v, 1, MPI_INT, 0, 5, parent, MPI_STATUS_IGNORE);
    v++;
    MPI_Send(&v, 1, MPI_INT, 0, 6, parent);
    MPI_Comm_disconnect(&parent);
    return 0;
}

/* Whose slot a spawn may use: at a limit of 1 the start spawns a lender,
 * a thread task holding the only slot, and the lender spawns one child.
 * Counting runnable tasks, the lender's slot goes to its child (a
 * thread); counting running tasks, the limit is full (a process). */
static int run_lend_start(const char *self)
{
    MPI_Comm lender = spawn_self(self, "lender", 1);
    int lender_kind = kind_of(lender);
    int child_kind = -1;
    MPI_Recv(&child_kind, 1, MPI_INT, 0, 9, lender, MPI_STATUS_IGNORE);
    MPI_Comm_disconnect(&lender);
    tl_spawn_stats s = {0};
    if (tl_spawn_get_stats)
        tl_spawn_get_stats(&s);
    printf("lend: lender %s, its child %s (limit %ld counts %s), %ld alive after\n", kind_name(lender_kind),
           kind_name(child_kind), s.limit, s.limit_counts == TL_SPAWN_COUNTS_RUNNABLE ? "runnable" : "running",
           s.running);
    return lender_kind == TL_SPAWN_KIND_THREADS && child_kind > 0 ? 0 : 1;
}

static int run_lender(const char *self, MPI_Comm parent)
{
    int kind = spawn_kind(self, MPI_INFO_NULL);
    MPI_Send(&kind, 1, MPI_INT, 0, 9, parent);
    MPI_Comm_disconnect(&parent);
    return 0;
}

/* Where a busy wait's partner runs (docs/spawn.md, "Waiting"): the start
 * binds itself to one CPU and ping-pongs with a thread task bound to the
 * same CPU, then with one bound to another.  The library must find the
 * partner on the waiter's CPU in the first case (cpu_shared grows), and
 * never in the second: a wait ended from another CPU is not shared. */
#define SHARE_ROUNDS 2000

static long shared_now(void)
{
    tl_spawn_stats s = {0};
    if (tl_spawn_get_stats)
        tl_spawn_get_stats(&s);
    return s.cpu_shared;
}

static int share_rounds(const char *self, int cpu)
{
    char where[16];
    snprintf(where, sizeof where, "%d", cpu);
    char *args[] = {"sharer", where, NULL};
    MPI_Comm kid;
    if (MPI_Comm_spawn(self, args, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &kid, MPI_ERRCODES_IGNORE) != MPI_SUCCESS)
        return -1;
    int wrong = kind_of(kid) != TL_SPAWN_KIND_THREADS;
    for (int i = 0; i < SHARE_ROUNDS; i++) {
        int v = i, back = -1;
        MPI_Send(&v, 1, MPI_INT, 0, 11, kid);
        MPI_Recv(&back, 1, MPI_INT, 0, 12, kid, MPI_STATUS_IGNORE);
        wrong += back != i + 1;
    }
    int on = -1;
    MPI_Recv(&on, 1, MPI_INT, 0, 13, kid, MPI_STATUS_IGNORE);
    MPI_Comm_disconnect(&kid);
    return wrong || on != cpu ? -1 : 0;
}

static int run_share_start(const char *self)
{
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) != 0 || CPU_COUNT(&all) < 2) {
        printf("share: skipped: this process may use fewer than 2 CPUs\n");
        return 77;
    }
    int here = sched_getcpu(), other = -1;
    for (int c = 0; c < CPU_SETSIZE && other < 0; c++)
        if (c != here && CPU_ISSET(c, &all))
            other = c;
    CPU_ZERO(&one);
    CPU_SET(here, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return 1;
    long before = shared_now();
    int same = share_rounds(self, here);
    long after_same = shared_now();
    int apart = share_rounds(self, other);
    long after_apart = shared_now();
    printf("share: %d round trips on CPU %d: %s; on CPUs %d and %d: %s\n", SHARE_ROUNDS, here,
           after_same > before ? "partner found on the waiter's CPU" : "partner NOT found on the waiter's CPU", here,
           other, after_apart == after_same ? "never on the waiter's CPU" : "WRONGLY found on the waiter's CPU");
    return same == 0 && apart == 0 && after_same > before && after_apart == after_same ? 0 : 1;
}

static int run_sharer(MPI_Comm parent, int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof one, &one);
    for (int i = 0; i < SHARE_ROUNDS; i++) {
        int v = -1;
        MPI_Recv(&v, 1, MPI_INT, 0, 11, parent, MPI_STATUS_IGNORE);
        v++;
        MPI_Send(&v, 1, MPI_INT, 0, 12, parent);
    }
    int on = sched_getcpu();
    MPI_Send(&on, 1, MPI_INT, 0, 13, parent);
    MPI_Comm_disconnect(&parent);
    return 0;
}

/* A child that is slow to start MPI: its parent's MPI_Comm_spawn waits on
 * it, past a short THREADLAB_SPAWN_TIMEOUT (the hang test). */
/* ---------------------------------------------- threads of one rank */

#define THREAD_SPAWNERS 2
#define THREAD_KIDS 2
#define HELPERS 2

typedef struct {
    const char *self;
    MPI_Comm kids;
} spawner;

static void *spawn_from_thread(void *arg)
{
    spawner *s = arg;
    s->kids = spawn_self(s->self, "threader", THREAD_KIDS);
    return NULL;
}

/* Two threads spawn at once; the main thread then broadcasts over both
 * inter-communicators and collects each child's count of failed checks
 * (MPICH's threads/spawn/multispawn does the same with four). */
static int run_threads_start(const char *self)
{
    spawner s[THREAD_SPAWNERS];
    pthread_t th[THREAD_SPAWNERS];
    for (int i = 0; i < THREAD_SPAWNERS; i++) {
        s[i] = (spawner){self, MPI_COMM_NULL};
        if (pthread_create(&th[i], NULL, spawn_from_thread, &s[i]) != 0)
            return 1;
    }
    for (int i = 0; i < THREAD_SPAWNERS; i++)
        pthread_join(th[i], NULL);
    int failed = 0, kind = TL_SPAWN_KIND_THREADS;
    for (int i = 0; i < THREAD_SPAWNERS; i++) {
        MPI_Comm_set_errhandler(s[i].kids, MPI_ERRORS_RETURN);
        int value = 100 + i;
        if (MPI_Bcast(&value, 1, MPI_INT, MPI_ROOT, s[i].kids) != MPI_SUCCESS) {
            printf("threads: the main thread could not use the handle spawner %d got\n", i);
            return 1;
        }
        if (kind_of(s[i].kids) != TL_SPAWN_KIND_THREADS)
            kind = kind_of(s[i].kids);
        for (int c = 0; c < THREAD_KIDS; c++) {
            int f = 1;
            MPI_Recv(&f, 1, MPI_INT, c, 7, s[i].kids, MPI_STATUS_IGNORE);
            failed += f;
        }
        MPI_Comm_disconnect(&s[i].kids);
    }
    printf("threads: %d spawns from %d threads, used by the main thread: %s, %d failed checks\n",
           THREAD_SPAWNERS, THREAD_SPAWNERS, kind_name(kind), failed);
    return failed ? 1 : 0;
}

typedef struct {
    int index, rank, size, failed;
} helper;

/* A thread the task started: the task's rank, world and parent; helper 0
 * sends to the sibling task, helper 1 probes for and receives the
 * sibling's (through the task's mailbox, which its main thread shares). */
static void *helper_thread(void *arg)
{
    helper *h = arg;
    checker ck = {0, "helper"};
    int rank = -1, size = -1, is_main = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Is_thread_main(&is_main);
    CHECK(&ck, rank == h->rank && size == h->size, "a helper thread of task %d of %d sees rank %d of %d", h->rank,
          h->size, rank, size);
    CHECK(&ck, is_main == 0, "MPI_Is_thread_main in a helper thread says %d", is_main);
    MPI_Comm parent = MPI_COMM_NULL;
    MPI_Comm_get_parent(&parent);
    CHECK(&ck, parent != MPI_COMM_NULL, "no parent in a helper thread");
    int other = 1 - h->rank;
    if (h->index == 0) {
        int v = 500 + h->rank;
        MPI_Send(&v, 1, MPI_INT, other, 9, MPI_COMM_WORLD);
    } else {
        MPI_Status st;
        int count = -1, v = -1;
        MPI_Probe(other, 9, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        MPI_Recv(&v, 1, MPI_INT, other, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(&ck, count == 1 && v == 500 + other, "helper got %d ints, %d, from task %d", count, v, other);
    }
    h->failed = ck.failed;
    return NULL;
}

static int run_threader(MPI_Comm parent)
{
    checker ck = {0, "threader"};
    int rank = -1, size = -1, is_main = -1, value = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Is_thread_main(&is_main);
    CHECK(&ck, is_main == 1, "MPI_Is_thread_main in a task's own thread says %d", is_main);
    MPI_Bcast(&value, 1, MPI_INT, 0, parent);
    CHECK(&ck, value == 100 || value == 101, "broadcast from the start's main thread gave %d", value);
    helper h[HELPERS];
    pthread_t th[HELPERS];
    for (int i = 0; i < HELPERS; i++) {
        h[i] = (helper){i, rank, size, 0};
        CHECK(&ck, pthread_create(&th[i], NULL, helper_thread, &h[i]) == 0, "pthread_create failed");
    }
    for (int i = 0; i < HELPERS; i++) {
        pthread_join(th[i], NULL);
        ck.failed += h[i].failed;
    }
#ifdef _OPENMP
    int wrong = 0;
#pragma omp parallel num_threads(3) reduction(+ : wrong)
    {
        int r = -1, s = -1;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        MPI_Comm_size(MPI_COMM_WORLD, &s);
        wrong += r != rank || s != size;
    }
    CHECK(&ck, wrong == 0, "%d threads of an OpenMP team in task %d saw another rank or size", wrong, rank);
#endif
    MPI_Send(&ck.failed, 1, MPI_INT, 0, 7, parent);
    MPI_Comm_disconnect(&parent);
    return 0;
}

static int run_slow(void)
{
    sleep(30);
    return 0;
}

int main(int argc, char **argv)
{
    const char *role = argc > 1 ? argv[1] : "start";
    if (strcmp(role, "slow") == 0)
        return run_slow();
    int provided, initialized_before = -1, initialized_after = -1;
    /* a child, thread or process, is not initialized before its MPI_Init
     * (MPICH's test harness calls MPI_Init_thread only then) */
    MPI_Initialized(&initialized_before);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Initialized(&initialized_after);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    int rc;
    if (parent == MPI_COMM_NULL) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (strcmp(role, "start") == 0)
            rc = run_start(argv[0]);
        else if (strcmp(role, "exit") == 0)
            rc = run_exit_start(argv[0]);
        else if (strcmp(role, "refuse") == 0)
            rc = run_refuse_start(argv[0]);
        else if (strcmp(role, "fatal") == 0)
            rc = run_fatal_start(argv[0]);
        else if (strcmp(role, "decide") == 0)
            rc = run_decide_start();
        else if (strcmp(role, "park") == 0)
            rc = run_park_start(argv[0]);
        else if (strcmp(role, "lend") == 0)
            rc = run_lend_start(argv[0]);
        else if (strcmp(role, "share") == 0)
            rc = run_share_start(argv[0]);
        else if (strcmp(role, "threads") == 0)
            rc = run_threads_start(argv[0]);
        else if (strcmp(role, "hang") == 0) {
            spawn_self(argv[0], "slow", 1);
            rc = 1; /* not reached: the watchdog ends the process */
        } else {
            fprintf(stderr, "usage: %s [start|exit|refuse|fatal|decide|park|lend|share|threads|hang]\n", argv[0]);
            rc = 2;
        }
    } else if (strcmp(role, "child") == 0) {
        rc = run_child(argv[0], parent, initialized_before == 0 && initialized_after == 1);
    } else if (strcmp(role, "grandchild") == 0) {
        rc = run_grandchild(argv[0], parent);
    } else if (strcmp(role, "great") == 0) {
        rc = run_great(parent);
    } else if (strcmp(role, "exiter") == 0) {
        rc = run_exiter(parent);
    } else if (strcmp(role, "refuser") == 0) {
        rc = run_refuser(parent);
    } else if (strcmp(role, "fataler") == 0) {
        rc = run_fataler();
    } else if (strcmp(role, "lender") == 0) {
        rc = run_lender(argv[0], parent);
    } else if (strcmp(role, "sharer") == 0 && argc > 2) {
        rc = run_sharer(parent, atoi(argv[2]));
    } else if (strcmp(role, "waiter") == 0) {
        rc = run_waiter(parent);
    } else if (strcmp(role, "hello") == 0) {
        rc = run_hello(parent);
    } else if (strcmp(role, "threader") == 0) {
        rc = run_threader(parent);
    } else {
        fprintf(stderr, "unknown role %s\n", role);
        rc = 2;
    }
    MPI_Finalize();
    return rc;
}
