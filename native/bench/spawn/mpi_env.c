/* mpi_env.c - what the MPI programs of the spawn study and benchmarks add
 * to their --env (docs/native-protocol.md): which MPI, its version, the
 * thread level it gives, and the spawn library when loaded.  Asking for
 * the thread level starts the MPI once (a singleton), only for --env. */
#include <stdio.h>
#include <string.h>

#include "mpi_env.h"
#include "threadlab/bench.h"
#include "threadlab/spawn.h"

#pragma weak tl_spawn_version

void tl_spawn_program_env(int argc, char **argv)
{
    int env = 0;
    for (int i = 1; i < argc; i++)
        env |= !strcmp(argv[i], "--env");
    if (!env)
        return;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n,")] = '\0';
    tl_env_extra("mpi", lib);
    int provided = -1;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    MPI_Finalize();
    char level[64];
    snprintf(level, sizeof level, "%d (MPI_THREAD_%s)", provided,
             provided == MPI_THREAD_SINGLE       ? "SINGLE"
             : provided == MPI_THREAD_FUNNELED   ? "FUNNELED"
             : provided == MPI_THREAD_SERIALIZED ? "SERIALIZED"
             : provided == MPI_THREAD_MULTIPLE   ? "MULTIPLE"
                                                 : "?");
    tl_env_extra("mpi_thread_level", level);
    tl_env_extra("spawn_library", tl_spawn_version ? tl_spawn_version() : "none (plain MPI)");
}
