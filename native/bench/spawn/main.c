/* main.c - threadlab-spawn-bench: the spawn benchmarks (create,
 * latency, bandwidth; docs/spawn.md) and, as `child ROLE`, the tasks they
 * spawn.  Started through the threadlab-bench-spawn launcher, which
 * preloads libthreadlab-spawn and sets what the MPI needs here. */
#include <stdio.h>
#include <string.h>

#include "mpi_env.h"
#include "spawn_bench.h"

int tlsb_child(const char *role, MPI_Comm parent)
{
    if (!strcmp(role, TLSB_ROLE_HELLO)) {
        int hello = TLSB_HELLO;
        MPI_Send(&hello, 1, MPI_INT, 0, TLSB_TAG_HELLO, parent);
        return 0;
    }
    if (!strcmp(role, TLSB_ROLE_ECHO))
        return tlsb_echo(parent);
    fprintf(stderr, "threadlab-bench-spawn: unknown task role '%s'\n", role);
    return 2;
}

static const tl_bench *const families[] = {tl_spawn_create, tl_spawn_pingpong};

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "child")) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        MPI_Comm parent;
        MPI_Comm_get_parent(&parent);
        int rc = 2;
        if (parent == MPI_COMM_NULL)
            fprintf(stderr, "threadlab-bench-spawn: 'child' is a task, started by MPI_Comm_spawn only\n");
        else {
            rc = tlsb_child(argv[2], parent);
            MPI_Comm_disconnect(&parent);
        }
        MPI_Finalize();
        return rc;
    }
    tl_spawn_program_env(argc, argv);
    return tl_main_families(argc, argv, families, sizeof families / sizeof families[0]);
}
