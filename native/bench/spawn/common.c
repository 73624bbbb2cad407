/* common.c - what the spawn benchmarks share: MPI start-up and the
 * choice of threads or processes for a point (spawning and the ping-pong:
 * echo.c, shared with the mpi suite). */
#include <string.h>

#include "spawn_bench.h"

#pragma weak tl_spawn_set_max_threads
#pragma weak tl_spawn_version

const char *const tlsb_kind_values[] = {"threads", "processes", NULL};

int tlsb_start(tl_ctx *ctx, const char *kind)
{
    int threads = !strcmp(kind, "threads");
    if (threads && !tl_spawn_set_max_threads) {
        tl_unsupported(ctx, "thread tasks need libthreadlab-spawn, which is not loaded (run the program through "
                            "threadlab-bench-spawn or threadlab-spawn-mpirun)");
        return -1;
    }
    int provided;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    /* Threads: no limit in the way; processes: the real MPI_Comm_spawn. */
    if (tl_spawn_set_max_threads)
        tl_spawn_set_max_threads(threads ? 1000000 : 0);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int l = 0;
    MPI_Get_library_version(lib, &l);
    lib[strcspn(lib, "\n,")] = '\0';
    tl_extra_str(ctx, "mpi", lib);
    tl_extra_num(ctx, "thread_level", provided);
    tl_extra_str(ctx, "library", tl_spawn_version ? tl_spawn_version() : "none (plain MPI)");
    return 0;
}
