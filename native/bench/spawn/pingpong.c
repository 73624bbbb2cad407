/* pingpong.c - spawn.latency and spawn.bandwidth: a message between a
 * parent and the child it spawned, through libthreadlab-spawn between two
 * thread tasks of one process, against the real MPI between two processes
 * of the machine (its shared-memory transport).  A timing is N round
 * trips; a sample is half a round trip (one message, one way); the
 * bandwidth record derives from the median.  The ping-pong itself is
 * echo.c's, shared with the mpi suite. */
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

#include "spawn_bench.h"

static int run_pingpong(tl_ctx *ctx, int bytes)
{
    const char *kind = tl_param(ctx, "kind");
    if (tlsb_start(ctx, kind) != 0)
        return 0;
    MPI_Comm kid = tlsb_spawn(ctx, TLSB_ROLE_ECHO, 1, -1);
    if (kid == MPI_COMM_NULL) {
        MPI_Finalize();
        return -1;
    }
    int right_kind = tlsb_kind_is(kid, kind);
    tlsb_partner who;
    int rc = tlsb_pingpong(ctx, kid, bytes, &who);
    MPI_Comm_disconnect(&kid);
    if (rc == 0) {
        /* A thread task is another thread of this process, a process child
         * another process. */
        int threads = !strcmp(kind, "threads");
        int right_identity = threads ? who.pid == getpid() && who.tid != gettid() : who.pid != getpid();
        tl_check(ctx, "kind", right_kind && right_identity, (double)who.pid,
                 "the partner is %s: process %lld, thread %lld (this one: process %d, thread %d)",
                 right_kind && right_identity ? kind : "NOT of that kind", who.pid, who.tid, (int)getpid(),
                 (int)gettid());
        tl_extra_num(ctx, "bytes", bytes);
        if (bytes >= 1024) {
            double median = tl_pending_median(ctx);
            tl_emit(ctx);
            tl_derived(ctx, "bandwidth", "one-way bandwidth (from the median time per message)",
                       (double)bytes / median * 1e3, "bytes / median(time) in MB/s");
            tl_set_unit(ctx, "MB/s");
        }
    }
    MPI_Finalize();
    return rc;
}

static int run_latency(tl_ctx *ctx)
{
    return run_pingpong(ctx, 8);
}

static int run_bandwidth(tl_ctx *ctx)
{
    return run_pingpong(ctx, (int)tl_param_long(ctx, "bytes", 1024, 1 << 28));
}

static const char *const bytes_values[] = {"1048576", NULL};
static const char *const bytes_quick[] = {"1048576", NULL};

static const tl_param_def latency_params[] = {
    {.name = "kind", .help = "threads (libthreadlab-spawn) or processes (the real MPI)", .values = tlsb_kind_values,
     .quick_values = tlsb_kind_values},
    {0},
};

static const tl_param_def bandwidth_params[] = {
    {.name = "kind", .help = "threads (libthreadlab-spawn) or processes (the real MPI)", .values = tlsb_kind_values,
     .quick_values = tlsb_kind_values},
    {.name = "bytes", .help = "message size (1024 to 268435456)", .values = bytes_values,
     .quick_values = bytes_quick, .check = tl_check_positive_int},
    {0},
};

const tl_bench tl_spawn_pingpong[] = {
    TLSB_BENCH("spawn.latency", "an 8-byte message between a parent and its spawned child: threads vs processes",
               "time per message, one way (half a round trip)", latency_params, run_latency),
    TLSB_BENCH("spawn.bandwidth", "a large message between a parent and its spawned child: threads vs processes",
               "time per message, one way (half a round trip)", bandwidth_params, run_bandwidth),
    {0},
};
