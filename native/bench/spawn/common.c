/* common.c - what the spawn benchmarks share: MPI start-up, the choice
 * of threads or processes for a point, spawning this program. */
#define _GNU_SOURCE
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "spawn_bench.h"

#pragma weak tl_spawn_set_max_threads
#pragma weak tl_spawn_comm_kind
#pragma weak tl_spawn_version

const char *const tlsb_kind_values[] = {"threads", "processes", NULL};

static char self[PATH_MAX];

int tlsb_start(tl_ctx *ctx, const char *kind)
{
    int threads = !strcmp(kind, "threads");
    if (threads && !tl_spawn_set_max_threads) {
        tl_unsupported(ctx, "thread tasks need libthreadlab-spawn, which is not loaded (run the program through "
                            "threadlab-bench-spawn or threadlab-spawn-mpirun)");
        return -1;
    }
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        tl_fail(ctx, "cannot read /proc/self/exe: the program spawns itself");
        return -1;
    }
    self[len] = '\0';
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

MPI_Comm tlsb_spawn(tl_ctx *ctx, const char *role, int n)
{
    char *args[] = {"child", (char *)role, NULL};
    MPI_Comm inter = MPI_COMM_NULL;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (MPI_Comm_spawn(self, args, n, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE) != MPI_SUCCESS) {
        tl_fail(ctx, "MPI_Comm_spawn of %s failed", self);
        return MPI_COMM_NULL;
    }
    return inter;
}

int tlsb_kind_is(MPI_Comm comm, const char *kind)
{
    int k = tl_spawn_comm_kind ? tl_spawn_comm_kind(comm) : TL_SPAWN_KIND_PROCESSES;
    return !strcmp(kind, "threads") ? k == TL_SPAWN_KIND_THREADS : k == TL_SPAWN_KIND_PROCESSES;
}
