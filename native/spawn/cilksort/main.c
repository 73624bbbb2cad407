/* main.c - threadlab-spawn-cilksort: CilkSort as one MPMD program, the
 * role in argv (the seed's cilksort-start, -sort and -merge as one binary,
 * so that libthreadlab-spawn can run its children as threads).
 *
 *   threadlab-spawn-cilksort --list | --env | --run spawn.cilksort [--param ...]
 *       the start: one CilkSort, one record (docs/native-protocol.md)
 *   threadlab-spawn-cilksort sort | merge
 *       a task, started by MPI_Comm_spawn only
 *
 * No global state: with the library the tasks are threads of one process. */
#include <stdio.h>
#include <string.h>

#include "cilksort_mpi.h"
#include "threadlab/bench.h"

extern const tl_bench tlcs_benches[];

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "sort") || !strcmp(argv[1], "merge"))) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        MPI_Comm parent;
        MPI_Comm_get_parent(&parent);
        int rc = 2;
        if (parent == MPI_COMM_NULL)
            fprintf(stderr, "threadlab-spawn-cilksort: '%s' is a task, started by MPI_Comm_spawn only; "
                            "run --run spawn.cilksort\n", argv[1]);
        else
            rc = tlcs_child_main(argv[0], argv[1], parent);
        MPI_Finalize();
        return rc;
    }
    return tl_main(argc, argv, tlcs_benches);
}
