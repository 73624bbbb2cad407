/* tasks.c - CilkSort's tasks over MPI: the `sort` and `merge` roles of the
 * one MPMD program (the seed's cilksort-sort and cilksort-merge), and the
 * spawn a parent does for its children.
 *
 * Protocol, per child (the seed's two synchronizations): the parent sends
 * its count(s) (TAG_COUNT: n for a sort, na and nb for a merge), then its
 * elements (TAG_DATA: a merge's A then B); the child sends back its result
 * (TAG_RESULT), then a tally of its subtree (TAG_TALLY: the tasks it and
 * its descendants spawned, by kind).  The tally is the one message the
 * seed did not have: it lets the start count threads and processes over
 * the whole tree, across processes. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cilksort_mpi.h"

#pragma weak tl_spawn_comm_kind

void tlcs_tally_add(tlcs_tally *into, const tlcs_tally *from)
{
    for (int i = 0; i < TLCS_TALLY_FIELDS; i++)
        into->v[i] += from->v[i];
}

static void die(const char *what)
{
    fprintf(stderr, "threadlab-spawn-cilksort: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static void *alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

MPI_Comm tlcs_spawn(const char *self, const char *role, int children, tlcs_tally *tally)
{
    char *args[] = {(char *)role, NULL};
    MPI_Comm kids;
    int errs[4];
    if (MPI_Comm_spawn(self, args, children, MPI_INFO_NULL, 0, MPI_COMM_SELF, &kids, errs) != MPI_SUCCESS)
        die("MPI_Comm_spawn failed");
    int kind = tl_spawn_comm_kind ? tl_spawn_comm_kind(kids) : TL_SPAWN_KIND_PROCESSES;
    tally->v[kind == TL_SPAWN_KIND_THREADS ? TLCS_THREADS : TLCS_PROCESSES] += children;
    tally->v[TLCS_CALLS]++;
    return kids;
}

/* Collects child i's result into `into` and adds its tally. */
static void collect(MPI_Comm kids, int i, tlcs_elem *into, long n, tlcs_tally *tally)
{
    MPI_Recv(into, (int)n, MPI_INT, i, TLCS_TAG_RESULT, kids, MPI_STATUS_IGNORE);
    tlcs_tally sub;
    MPI_Recv(sub.v, TLCS_TALLY_FIELDS, MPI_LONG_LONG, i, TLCS_TAG_TALLY, kids, MPI_STATUS_IGNORE);
    tlcs_tally_add(tally, &sub);
}

/* One merge child: its counts, then A and B (one message each part:
 * straight from the parent's arrays, no packing copy). */
static void send_merge(MPI_Comm kids, int i, const tlcs_elem *a, long na, const tlcs_elem *b, long nb)
{
    long long counts[2] = {na, nb};
    MPI_Send(counts, 2, MPI_LONG_LONG, i, TLCS_TAG_COUNT, kids);
    MPI_Send(a, (int)na, MPI_INT, i, TLCS_TAG_DATA, kids);
    MPI_Send(b, (int)nb, MPI_INT, i, TLCS_TAG_DATA, kids);
}

/* Merges a[na] and b[nb] into out through one spawn of two merge tasks
 * (the median split), or itself below the grain. */
static void merge_split(const char *self, const tlcs_elem *a, size_t na, const tlcs_elem *b, size_t nb,
                        tlcs_elem *out, tlcs_tally *tally)
{
    if (tlcs_merge_is_leaf(na, nb)) {
        tlcs_merge(a, na, b, nb, out);
        tally->v[TLCS_LEAVES]++;
        return;
    }
    size_t ma, mb;
    tlcs_longer_first(&a, &na, &b, &nb);
    tlcs_merge_split(a, na, b, nb, &ma, &mb);
    MPI_Comm kids = tlcs_spawn(self, "merge", 2, tally);
    send_merge(kids, 0, a, (long)ma, b, (long)mb);
    send_merge(kids, 1, a + ma, (long)(na - ma), b + mb, (long)(nb - mb));
    collect(kids, 0, out, (long)(ma + mb), tally);
    collect(kids, 1, out + ma + mb, (long)(na + nb - ma - mb), tally);
    MPI_Comm_disconnect(&kids);
}

/* The sort task: quicksort below the grain; else 4 sorts, 2 merges, 1 merge. */
static void sort_task(const char *self, tlcs_elem *a, long n, tlcs_tally *tally)
{
    if (n <= TLCS_GRAIN) {
        tlcs_quicksort(a, (size_t)n);
        tally->v[TLCS_LEAVES]++;
        return;
    }
    long q = n / 4, off[5] = {0, q, 2 * q, 3 * q, n};
    MPI_Comm kids = tlcs_spawn(self, "sort", 4, tally);
    for (int i = 0; i < 4; i++) {
        long long count = off[i + 1] - off[i];
        MPI_Send(&count, 1, MPI_LONG_LONG, i, TLCS_TAG_COUNT, kids);
        MPI_Send(a + off[i], (int)count, MPI_INT, i, TLCS_TAG_DATA, kids);
    }
    for (int i = 0; i < 4; i++)
        collect(kids, i, a + off[i], off[i + 1] - off[i], tally);
    MPI_Comm_disconnect(&kids);

    tlcs_elem *tmp = alloc((size_t)n * sizeof *tmp);
    MPI_Comm merges = tlcs_spawn(self, "merge", 2, tally);
    send_merge(merges, 0, a, off[1], a + off[1], off[2] - off[1]);
    send_merge(merges, 1, a + off[2], off[3] - off[2], a + off[3], off[4] - off[3]);
    collect(merges, 0, tmp, off[2], tally);
    collect(merges, 1, tmp + off[2], n - off[2], tally);
    MPI_Comm_disconnect(&merges);

    MPI_Comm last = tlcs_spawn(self, "merge", 1, tally);
    send_merge(last, 0, tmp, off[2], tmp + off[2], n - off[2]);
    collect(last, 0, a, n, tally);
    MPI_Comm_disconnect(&last);
    free(tmp);
}

int tlcs_child_main(const char *self, const char *role, MPI_Comm parent)
{
    tlcs_tally tally = {{0}};
    long long counts[2] = {0, 0};
    int merge = strcmp(role, "merge") == 0;
    MPI_Recv(counts, merge ? 2 : 1, MPI_LONG_LONG, 0, TLCS_TAG_COUNT, parent, MPI_STATUS_IGNORE);
    long n = (long)(counts[0] + (merge ? counts[1] : 0));
    tlcs_elem *data = alloc((size_t)n * sizeof *data);
    if (merge) {
        MPI_Recv(data, (int)counts[0], MPI_INT, 0, TLCS_TAG_DATA, parent, MPI_STATUS_IGNORE);
        MPI_Recv(data + counts[0], (int)counts[1], MPI_INT, 0, TLCS_TAG_DATA, parent, MPI_STATUS_IGNORE);
        tlcs_elem *out = alloc((size_t)n * sizeof *out);
        merge_split(self, data, (size_t)counts[0], data + counts[0], (size_t)counts[1], out, &tally);
        free(data);
        data = out;
    } else {
        MPI_Recv(data, (int)n, MPI_INT, 0, TLCS_TAG_DATA, parent, MPI_STATUS_IGNORE);
        sort_task(self, data, n, &tally);
    }
    MPI_Send(data, (int)n, MPI_INT, 0, TLCS_TAG_RESULT, parent);
    MPI_Send(tally.v, TLCS_TALLY_FIELDS, MPI_LONG_LONG, 0, TLCS_TAG_TALLY, parent);
    free(data);
    MPI_Comm_disconnect(&parent);
    return 0;
}
