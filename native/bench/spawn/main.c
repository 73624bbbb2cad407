/* main.c - threadlab-spawn-bench: the spawn benchmarks (create,
 * latency, bandwidth; docs/spawn.md) and, as `child ROLE`, the tasks they
 * spawn.  Started through the threadlab-bench-spawn launcher, which
 * preloads libthreadlab-spawn and sets what the MPI needs here. */
#include "mpi_env.h"
#include "spawn_bench.h"

static const tl_bench *const families[] = {tl_spawn_create, tl_spawn_pingpong};

int main(int argc, char **argv)
{
    int child = tlsb_child_main(argc, argv);
    if (child >= 0)
        return child;
    tl_spawn_program_env(argc, argv);
    return tl_main_families(argc, argv, families, sizeof families / sizeof families[0]);
}
