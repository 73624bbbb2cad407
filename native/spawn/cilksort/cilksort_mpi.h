/* cilksort_mpi.h - CilkSort's MPI protocol (tasks.c) shared with its
 * start (bench.c). */
#ifndef THREADLAB_CILKSORT_MPI_H
#define THREADLAB_CILKSORT_MPI_H

#include <mpi.h>

#include "cilksort.h"
#include "threadlab/spawn.h"

enum { TLCS_TAG_COUNT = 1, TLCS_TAG_DATA, TLCS_TAG_RESULT, TLCS_TAG_TALLY };

/* A subtree's spawned tasks, by kind, and its MPI_Comm_spawn calls and
 * sequential leaves (its own included). */
enum { TLCS_THREADS = 0, TLCS_PROCESSES, TLCS_CALLS, TLCS_LEAVES, TLCS_TALLY_FIELDS };
typedef struct {
    long long v[TLCS_TALLY_FIELDS];
} tlcs_tally;

void tlcs_tally_add(tlcs_tally *into, const tlcs_tally *from);

/* Spawns `children` copies of this program (self) in `role` from
 * MPI_COMM_SELF, and counts them in tally by the kind the spawn gave. */
MPI_Comm tlcs_spawn(const char *self, const char *role, int children, tlcs_tally *tally);

/* The body of a `sort` or `merge` task, from its first receive to its
 * last send; returns its exit status. */
int tlcs_child_main(const char *self, const char *role, MPI_Comm parent);

#endif
