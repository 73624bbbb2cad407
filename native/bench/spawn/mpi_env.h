/* mpi_env.h - the MPI facts the spawn programs add to their --env. */
#ifndef THREADLAB_SPAWN_MPI_ENV_H
#define THREADLAB_SPAWN_MPI_ENV_H

#include <mpi.h>

/* With --env among the arguments: registers "mpi", "mpi_thread_level" and
 * "spawn_library" (tl_env_extra).  Call before tl_main. */
void tl_spawn_program_env(int argc, char **argv);

#endif
