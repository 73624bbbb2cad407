/* spawn_bench.h - threadlab-bench-spawn: what a spawned task costs and
 * what a message between tasks costs, thread tasks of libthreadlab-spawn
 * against processes of the real MPI, side by side in one run
 * (docs/spawn.md, "Benchmarks").
 *
 * The program spawns itself: `threadlab-spawn-bench child ROLE` is a
 * task.  Thread points need the library (preloaded by the
 * threadlab-bench-spawn launcher, or linked in a sanitizer build); a
 * process point forces the real MPI_Comm_spawn with
 * tl_spawn_set_max_threads(0), so both kinds are measured by one program
 * with the same code. */
#ifndef THREADLAB_SPAWN_BENCH_H
#define THREADLAB_SPAWN_BENCH_H

#include <mpi.h>

#include "threadlab/bench.h"
#include "threadlab/spawn.h"

/* A benchmark of the suite: its model and suite are the suite's, stated
 * here once (times in ns, no placed threads: the kinds are the points). */
#define TLSB_BENCH(NAME, SUMMARY, QUANTITY, PARAMS, RUN)                                                     \
    {.name = NAME, .model = "mpi-spawn", .suite = "spawn", .summary = SUMMARY, .quantity = QUANTITY,        \
     .params = PARAMS, .run = RUN}

extern const tl_bench tl_spawn_create[];
extern const tl_bench tl_spawn_pingpong[];

/* The roles of a spawned task. */
#define TLSB_ROLE_HELLO "hello"   /* sends one int and ends */
#define TLSB_ROLE_ECHO "echo"     /* answers ping-pongs until told to stop */

enum { TLSB_TAG_HELLO = 1, TLSB_TAG_CTRL, TLSB_TAG_PING, TLSB_TAG_PONG };
#define TLSB_HELLO 4242

/* "threads" or "processes": the kind a point spawns. */
extern const char *const tlsb_kind_values[];

/* MPI up for a point (once per program); 0, or -1 after tl_fail/tl_unsupported. */
int tlsb_start(tl_ctx *ctx, const char *kind);
/* 1 when comm is of the kind the point asked for. */
int tlsb_kind_is(MPI_Comm comm, const char *kind);

/* echo.c: the ping-pong with a partner across an intercommunicator, shared
 * with the mpi suite (mpi.spawn.latency). */

/* Spawns n copies of this program in role, to run bound to cpu (-1: not
 * bound); the intercommunicator, or MPI_COMM_NULL after tl_fail. */
MPI_Comm tlsb_spawn(tl_ctx *ctx, const char *role, int n, int cpu);
/* A program's main as a spawned task (`PROGRAM child ROLE [CPU]`): its exit
 * status, or -1 when the arguments are not a task's. */
int tlsb_child_main(int argc, char **argv);
int tlsb_child(const char *role, MPI_Comm parent, int cpu);
/* The partner's side: says who it is, echoes until told to stop, says how
 * many it echoed. */
int tlsb_echo(MPI_Comm parent, int cpu);

/* Who answered the ping-pong. */
typedef struct {
    long long pid, tid; /* its process and thread */
    int cpu;            /* where it ran when it started */
    uint64_t misplaced; /* batches it ran off the CPU it was bound to */
} tlsb_partner;

/* The parent's side: times round trips of `bytes` with the partner of
 * the intercommunicator (tl_measure, a sample half a round trip), stops
 * it, and checks `echoed` (every echo, and the partner's count).  0, or
 * -1 (the measurement failed). */
int tlsb_pingpong(tl_ctx *ctx, MPI_Comm partner, int bytes, tlsb_partner *who);

#endif
