/* tasks.c - mpi.spawn.latency: the spawn library's thread tasks against
 * process ranks of the same machine (docs/mpi.md).  Rank 0 ping-pongs
 * 8-byte messages with a thread task it spawned through
 * libthreadlab-spawn (the library's in-process matching), or with the
 * next process rank on its host (the MPI's own path); the ping-pong is the
 * spawn suite's (native/bench/spawn/echo.c), over an intercommunicator in
 * both cases.  Every rank runs with the library preloaded (the program
 * re-executes itself with it before MPI starts), so both partners are
 * measured by the same code. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpib.h"
#include "spawn_bench.h"

#pragma weak tl_spawn_version
#pragma weak tl_spawn_set_max_threads
#pragma weak tl_spawn_comm_kind

#define TASKS_LIBRARY "libthreadlab-spawn.so"
#define TASKS_REEXEC_ENV "THREADLAB_MPIB_SPAWN_REEXEC"
#define TASKS_TAG 23

static const char *const partner_values[] = {"thread-task", "process-rank", NULL};

/* The library in this process: re-executes with it preloaded (every rank,
 * before MPI_Init; the launcher's variables survive exec).  Returns 0 when
 * it is loaded, else after tl_unsupported/tl_fail. */
static int library_in_place(tl_ctx *ctx)
{
    if (tl_spawn_version)
        return 0;
#if defined(__SANITIZE_ADDRESS__)
    tl_unsupported(ctx, "a sanitized program cannot preload %s (the sanitizer's runtime must come first): "
                        "the plain build measures it", TASKS_LIBRARY);
    return 1;
#else
    if (getenv(TASKS_REEXEC_ENV)) {
        tl_fail(ctx, "%s was preloaded but is not in the process", TASKS_LIBRARY);
        return -1;
    }
    char library[PATH_MAX];
    if (tl_beside_program("../lib/" TASKS_LIBRARY, library, sizeof library) != 0) {
        tl_unsupported(ctx, "%s is not built (looked in ../lib beside this program)", TASKS_LIBRARY);
        return 1;
    }
    const char *old = getenv("LD_PRELOAD");
    char preload[2 * PATH_MAX];
    if ((size_t)snprintf(preload, sizeof preload, "%s%s%s", library, old && *old ? ":" : "",
                         old && *old ? old : "") >= sizeof preload) {
        tl_unsupported(ctx, "LD_PRELOAD is too long to add %s to", TASKS_LIBRARY);
        return 1;
    }
    setenv("LD_PRELOAD", preload, 1);
    setenv("THREADLAB_SPAWN_QUIET", "1", 1);
    setenv("THREADLAB_SPAWN_TIMEOUT", "30", 1);
    setenv(TASKS_REEXEC_ENV, "1", 1);
    if (CPU_COUNT(&mpib_start_mask) && sched_setaffinity(0, sizeof mpib_start_mask, &mpib_start_mask) != 0) {
        tl_fail(ctx, "cannot restore the CPU mask before re-executing: %m");
        return -1;
    }
    fflush(NULL);
    execv("/proc/self/exe", mpib_argv);
    tl_fail(ctx, "cannot re-execute with %s preloaded: %m", TASKS_LIBRARY);
    return -1;
#endif
}

/* Rank 0 and its partner rank as an intercommunicator of one process a
 * side, so both partners are reached the same way (remote rank 0). */
static MPI_Comm rank_pair(mpib_world *w)
{
    MPI_Comm self, inter;
    MPI_Comm_split(w->comm, w->rank, 0, &self);
    MPI_Intercomm_create(self, 0, w->comm, 1 - w->rank, TASKS_TAG, &inter);
    MPI_Comm_free(&self);
    return inter;
}

static int tasks_run(tl_ctx *ctx)
{
    int thread = strcmp(tl_param(ctx, "partner"), "thread-task") == 0;
    int rc = library_in_place(ctx);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    mpib_world w;
    rc = mpib_init(ctx, &w, MPI_THREAD_MULTIPLE);
    if (rc != MPIB_OK)
        return mpib_finish(&w, 0);
    char reason[400];
    int partner = 0;
    if (!thread && (partner = mpib_partner_on(&w, 0, reason, sizeof reason)) < 0) {
        tl_unsupported(ctx, "%s", reason);
        return mpib_finish(&w, 0);
    }
    /* A thread task: rank 0 alone, two slots (its own, the task's); a
     * process rank: rank 0 and its partner, a slot each. */
    int members[2] = {0, partner};
    rc = mpib_join(&w, members, thread ? 1 : 2, thread ? 2 : 1);
    if (rc != MPIB_OK || !mpib_member(&w))
        return mpib_finish(&w, 0);
    int cpu = w.ctx->nslots ? w.ctx->cpu[thread ? mpib_slot(&w, 1) : mpib_slot(&w, 0)] : -1;
    MPI_Comm other = MPI_COMM_NULL;
    if (thread) {
        tl_spawn_set_max_threads(1);
        other = tlsb_spawn(ctx, TLSB_ROLE_ECHO, 1, cpu);
        if (other == MPI_COMM_NULL)
            return mpib_finish(&w, -1);
    } else {
        other = rank_pair(&w);
    }
    tlsb_partner who = {0};
    if (w.rank != 0) {
        tlsb_echo(other, cpu);
        MPI_Comm_disconnect(&other);
        mpib_collect(&w);
        return mpib_finish(&w, 0);
    }
    int kind = tl_spawn_comm_kind(other);
    rc = tlsb_pingpong(ctx, other, 8, &who);
    MPI_Comm_disconnect(&other);
    mpib_collect(&w);
    if (rc == 0) {
        /* A thread task: another thread of this process; a process rank:
         * another process of this host. */
        int pid = getpid(), tid = gettid();
        int ok = thread ? kind == TL_SPAWN_KIND_THREADS && who.pid == pid && who.tid != tid
                        : kind == TL_SPAWN_KIND_PROCESSES && who.pid != pid &&
                              strcmp(w.hosts[partner], w.hosts[0]) == 0;
        tl_check(ctx, "partner", ok, (double)who.pid,
                 "the partner is %s%s: process %lld, thread %lld, on %s (rank 0: process %d, thread %d, on %s)",
                 ok ? "" : "NOT ", thread ? "a thread task of rank 0" : "another process of the host", who.pid,
                 who.tid, thread ? w.hosts[0] : w.hosts[partner], pid, tid, w.hosts[0]);
        if (w.ctx->placement != TL_PLACE_UNBOUND)
            tl_check(ctx, "placement_partner", who.misplaced == 0, (double)who.misplaced,
                     "%llu rounds of the partner found it elsewhere than its CPU",
                     (unsigned long long)who.misplaced);
        mpib_checks(&w);
        tl_extra_num(ctx, "partner_pid", (double)who.pid);
        tl_extra_num(ctx, "partner_tid", (double)who.tid);
        if (!thread)
            tl_extra_num(ctx, "partner_rank", partner);
        tl_extra_str(ctx, "spawn_library", tl_spawn_version());
    }
    return mpib_finish(&w, rc);
}

static const tl_param_def tasks_params[] = {
    {.name = "partner",
     .help = "thread-task: a thread task rank 0 spawned through libthreadlab-spawn; process-rank: the next "
             "process rank on rank 0's host",
     .values = partner_values, .quick_values = partner_values},
    /* The MPI's own transport only: what a process rank of the same host
     * gets (a thread task's messages never reach it). */
    {.name = "transport", .help = "default: the MPI library's choice (the only value here)",
     .values = mpib_transport_default, .quick_values = mpib_transport_default},
    {0},
};

const tl_bench mpib_tasks[] = {
    MPIB_BENCH("mpi.spawn.latency",
               "an 8-byte ping-pong from rank 0: a spawned thread task (libthreadlab-spawn) against a process "
               "rank of the same host",
               "time per message, one way (half a round trip)", tasks_params, tasks_run),
    {0},
};
