/* main.c - threadlab-bench-mpi: the mixed MPI + threads suite (docs/mpi.md).
 * Started by a launcher (mpirun, srun) for --run and --hosts; --list and
 * --env do not touch MPI and run without one. */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>

#include "mpib.h"
#include "spawn_bench.h"

/* Under LeakSanitizer, the MPI library's own allocations (it keeps many
 * until the process ends) are suppressed by library name, while this
 * program's stay checked.  That needs whole stacks (the libraries have no
 * frame pointers: the slow unwinder) and Open MPI's components still
 * mapped at exit (mpib_sanitizer_setup keeps them). */
#if defined(__SANITIZE_ADDRESS__)
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0:print_suppressions=0";
}

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libpmix.so\nleak:libhwloc.so\n"
           "leak:libevent\nleak:mca_\nleak:libmpich.so\nleak:libucp.so\nleak:libucs.so\nleak:libfabric.so\n";
}
#endif

static const tl_bench *const families[] = {mpib_barrier, mpib_pingpong, mpib_mt, mpib_tasks};

char **mpib_argv;
cpu_set_t mpib_start_mask;

int main(int argc, char **argv)
{
    mpib_sanitizer_setup();
    mpib_argv = argv;
    if (sched_getaffinity(0, sizeof mpib_start_mask, &mpib_start_mask) != 0)
        CPU_ZERO(&mpib_start_mask);
    /* A thread task of mpi.spawn.latency runs this main (libthreadlab-spawn). */
    int child = tlsb_child_main(argc, argv);
    if (child >= 0)
        return child;
    if (argc == 2 && strcmp(argv[1], "--hosts") == 0)
        return mpib_hosts_main(argc, argv);
    return tl_main_families(argc, argv, families, sizeof families / sizeof families[0]);
}
