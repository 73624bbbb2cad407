/*
 * threadlab/spawn.h - libthreadlab-spawn: MPI_Comm_spawn that starts
 * threads of the running program while the process is under its thread
 * limit, and real MPI processes beyond it (seed 001, libSpawn;
 * docs/spawn.md).
 *
 * The library sits between a program and its MPI through the PMPI
 * profiling interface, either preloaded into an unmodified binary
 * (LD_PRELOAD=libthreadlab-spawn.so, or `threadlab spawn run`) or linked
 * before the MPI library.  A program needs nothing from this header; it
 * offers the few things a program or a benchmark may want to ask:
 * counters of what was spawned how, and which kind a communicator is.
 * Programs that must also run without the library declare these weak
 * (see native/spawn/cilksort/ for an example) and test them for NULL.
 *
 * The settings, from the environment (read once, at load time):
 *
 *   THREADLAB_SPAWN_MAX_THREADS  N | auto (default auto): at most N thread
 *                                tasks alive in this process at once; auto
 *                                = the CPUs this process may run on
 *                                (sched_getaffinity), or the allocation of
 *                                threadlab-rm when a manager runs.  0 =
 *                                every spawn is a real process spawn.
 *   THREADLAB_SPAWN_TIMEOUT      seconds (default 60): time limit of every
 *                                call of the real MPI that may hang (process
 *                                spawn, MPI_Init, MPI_Finalize, disconnect);
 *                                past it the process ends with status
 *                                TL_SPAWN_EXIT_HANG and says why.
 *   THREADLAB_SPAWN_SPIN         busy-wait steps before a waiting thread
 *                                sleeps (default 100000, a few
 *                                milliseconds; 0 = sleep at once).  No
 *                                spinning while thread tasks fill the
 *                                CPUs (docs/spawn.md, "Waiting").
 *   THREADLAB_SPAWN_EAGER        bytes (default 4096): a message up to this
 *                                size is copied at once when no receive
 *                                waits for it; a larger one waits for its
 *                                receive and is copied straight from the
 *                                sender's buffer into the receiver's.
 *   THREADLAB_SPAWN_QUIET        1: no notices on stderr (errors stay).
 */
#ifndef THREADLAB_SPAWN_H
#define THREADLAB_SPAWN_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TL_SPAWN_ENV_MAX_THREADS "THREADLAB_SPAWN_MAX_THREADS"
#define TL_SPAWN_ENV_TIMEOUT "THREADLAB_SPAWN_TIMEOUT"
#define TL_SPAWN_ENV_SPIN "THREADLAB_SPAWN_SPIN"
#define TL_SPAWN_ENV_EAGER "THREADLAB_SPAWN_EAGER"
#define TL_SPAWN_ENV_QUIET "THREADLAB_SPAWN_QUIET"
#define TL_SPAWN_ENV_LIMIT_COUNTS "THREADLAB_SPAWN_LIMIT_COUNTS"

/* The library's interface version (tl_spawn_version). */
#define TL_SPAWN_VERSION 1

/* Exit status of a process whose real MPI call ran past the time limit
 * (the status of timeout(1)). */
#define TL_SPAWN_EXIT_HANG 124

/* What a communicator connects to (tl_spawn_comm_kind). */
enum {
    TL_SPAWN_KIND_NONE = 0,      /* MPI_COMM_NULL, or no inter-communicator */
    TL_SPAWN_KIND_THREADS = 1,   /* one of the library's: thread tasks of this process */
    TL_SPAWN_KIND_PROCESSES = 2, /* an inter-communicator of the real MPI */
};

/* What the thread limit counts (THREADLAB_SPAWN_LIMIT_COUNTS, docs/spawn.md,
 * "The decision"). */
enum {
    TL_SPAWN_COUNTS_RUNNING = 0,  /* thread tasks alive (the seed's definition) */
    TL_SPAWN_COUNTS_RUNNABLE = 1, /* thread tasks alive and not asleep in the library's waits, a
                                     spawning task's own slot going to its children (the default) */
};

typedef struct {
    long limit;           /* the thread limit now (auto resolved) */
    long running;         /* thread tasks alive in this process */
    long peak_running;    /* the most alive at once */
    long thread_tasks;    /* thread tasks started by this process */
    long process_tasks;   /* processes this process asked the real MPI for */
    long thread_spawns;   /* MPI_Comm_spawn calls served with threads */
    long process_spawns;  /* MPI_Comm_spawn calls passed to the real MPI */
    int provided;         /* the thread level the real MPI gave */
    int in_task;          /* the calling thread is a thread task */
    long parked;          /* thread tasks asleep in the library's waits now */
    int limit_counts;     /* TL_SPAWN_COUNTS_*: what the limit counts */
    long waits_slept;     /* waits in the library (for a message, a request) that slept */
    long cpu_shared;      /* busy waits ended by a thread that ran on the waiter's own CPU
                             (docs/spawn.md, "Waiting") */
    long cpu_moves;       /* ... after which the waiter moved itself to another of its CPUs */
} tl_spawn_stats;

/* Fills *out; returns 0. */
int tl_spawn_get_stats(tl_spawn_stats *out);

/* TL_SPAWN_KIND_* of an inter-communicator returned by MPI_Comm_spawn or
 * MPI_Comm_get_parent, as seen by the calling thread. */
int tl_spawn_comm_kind(MPI_Comm comm);

/* Sets the thread limit of this process from now on (n >= 0; 0: every
 * spawn a process), as THREADLAB_SPAWN_MAX_THREADS=n would have at start;
 * thread tasks already running stay.  Returns 0, or -1 for n < 0. */
int tl_spawn_set_max_threads(long n);

/* The library's version string, "libthreadlab-spawn 1 (Open MPI v4.1.4 ...)". */
const char *tl_spawn_version(void);

#ifdef __cplusplus
}
#endif
#endif
