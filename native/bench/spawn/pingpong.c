/* pingpong.c - spawn.latency and spawn.bandwidth: a message between a
 * parent and the child it spawned, through libthreadlab-spawn between two
 * thread tasks of one process, against the real MPI between two processes
 * of the machine (its shared-memory transport).  A timing is N round
 * trips; a sample is half a round trip (one message, one way); the
 * bandwidth record derives from the median.  The child echoes every
 * message, and the parent checks the echo of the last one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "spawn_bench.h"

typedef struct {
    MPI_Comm kid;
    int bytes;
    unsigned char *buf;
    uint64_t rounds, bad_echo;
} pp_state;

static double time_pingpong(void *arg, uint64_t iterations)
{
    pp_state *s = arg;
    long long n = (long long)iterations;
    MPI_Send(&n, 1, MPI_LONG_LONG, 0, TLSB_TAG_CTRL, s->kid);
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++) {
        s->buf[0] = (unsigned char)i;
        MPI_Send(s->buf, s->bytes, MPI_BYTE, 0, TLSB_TAG_PING, s->kid);
        MPI_Recv(s->buf, s->bytes, MPI_BYTE, 0, TLSB_TAG_PONG, s->kid, MPI_STATUS_IGNORE);
        s->bad_echo += s->buf[0] != (unsigned char)(i + 1);
    }
    uint64_t t1 = tl_now();
    s->rounds += iterations;
    return tl_ticks_to_ns(t1 - t0);
}

int tlsb_echo(MPI_Comm parent)
{
    unsigned char *buf = NULL;
    int cap = 0;
    for (;;) {
        long long n = 0;
        MPI_Recv(&n, 1, MPI_LONG_LONG, 0, TLSB_TAG_CTRL, parent, MPI_STATUS_IGNORE);
        if (n <= 0)
            break;
        for (long long i = 0; i < n; i++) {
            MPI_Status st;
            MPI_Probe(0, TLSB_TAG_PING, parent, &st);
            int bytes = 0;
            MPI_Get_count(&st, MPI_BYTE, &bytes);
            if (bytes > cap) {
                free(buf);
                cap = bytes;
                buf = malloc((size_t)cap);
            }
            MPI_Recv(buf, bytes, MPI_BYTE, 0, TLSB_TAG_PING, parent, MPI_STATUS_IGNORE);
            buf[0]++;
            MPI_Send(buf, bytes, MPI_BYTE, 0, TLSB_TAG_PONG, parent);
        }
    }
    free(buf);
    return 0;
}

static int run_pingpong(tl_ctx *ctx, int bytes)
{
    const char *kind = tl_param(ctx, "kind");
    if (tlsb_start(ctx, kind) != 0)
        return 0;
    pp_state s = {.bytes = bytes};
    s.buf = calloc(1, (size_t)bytes);
    s.kid = tlsb_spawn(ctx, TLSB_ROLE_ECHO, 1);
    int rc = -1;
    if (s.buf && s.kid != MPI_COMM_NULL) {
        int right_kind = tlsb_kind_is(s.kid, kind);
        tl_measure_spec spec = {.actions_per_iteration = 2, .metric = "time"};
        rc = tl_measure(ctx, time_pingpong, &s, &spec);
        long long stop = 0;
        MPI_Send(&stop, 1, MPI_LONG_LONG, 0, TLSB_TAG_CTRL, s.kid);
        MPI_Comm_disconnect(&s.kid);
        if (rc == 0) {
            tl_check(ctx, "kind", right_kind, NAN, "the partner is %s", right_kind ? kind : "NOT of that kind");
            tl_check(ctx, "echoed", s.bad_echo == 0, (double)s.rounds, "%llu round trips, every echo checked",
                     (unsigned long long)s.rounds);
            tl_extra_num(ctx, "bytes", bytes);
            if (bytes >= 1024) {
                double median = tl_pending_median(ctx);
                tl_emit(ctx);
                tl_derived(ctx, "bandwidth", "one-way bandwidth (from the median time per message)",
                           (double)bytes / median * 1e3, "bytes / median(time) in MB/s");
                tl_set_unit(ctx, "MB/s");
            }
        }
    }
    free(s.buf);
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
