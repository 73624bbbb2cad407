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
/* Spawns n copies of this program in role; the intercommunicator, or
 * MPI_COMM_NULL after tl_fail. */
MPI_Comm tlsb_spawn(tl_ctx *ctx, const char *role, int n);
/* 1 when comm is of the kind the point asked for. */
int tlsb_kind_is(MPI_Comm comm, const char *kind);
/* The task side: main.c dispatches, pingpong.c echoes. */
int tlsb_child(const char *role, MPI_Comm parent);
int tlsb_echo(MPI_Comm parent);

#endif
