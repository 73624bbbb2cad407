/* pingpong.c - mpi.pingpong: the one-way latency between rank 0 and one
 * partner (half the round trip of MPI_Send/MPI_Recv), over a sweep of
 * message sizes, and the bandwidth it implies (size / latency). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpib.h"

#define PP_TAG 17
#define PP_MAX_SIZE (64L << 20)

typedef struct {
    mpib_world *w;
    size_t size;
    unsigned char *send, *recv;
    uint64_t seq;      /* messages rank 0 sent so far */
    uint64_t timing;   /* timings so far: each fills the payload afresh */
    uint64_t bad_seq;  /* echoes that did not carry the number of the message sent */
    uint64_t corrupt;  /* timings whose last echo differed from what was sent */
} pp_run;

/* The first bytes of a message carry its number (as many as fit), so an
 * echo of another message, or a lost one, cannot pass for the right one. */
static inline void pp_stamp(unsigned char *buf, size_t size, uint64_t seq)
{
    memcpy(buf, &seq, size < sizeof seq ? size : sizeof seq);
}

static inline int pp_stamp_matches(const unsigned char *buf, size_t size, uint64_t seq)
{
    return memcmp(buf, &seq, size < sizeof seq ? size : sizeof seq) == 0;
}

static double pp_body(void *arg, uint64_t iterations)
{
    pp_run *r = arg;
    MPI_Comm comm = r->w->comm;
    int size = (int)r->size;
    if (r->w->rank != 0) {
        for (uint64_t i = 0; i < iterations; i++) {
            MPI_Recv(r->recv, size, MPI_BYTE, 0, PP_TAG, comm, MPI_STATUS_IGNORE);
            MPI_Send(r->recv, size, MPI_BYTE, 0, PP_TAG, comm);
        }
        return 0;
    }
    r->timing++;
    for (size_t j = 0; j < r->size; j++)
        r->send[j] = (unsigned char)(j * 131 + r->timing * 7 + 1);
    uint64_t bad = 0;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++) {
        uint64_t seq = r->seq + i;
        pp_stamp(r->send, r->size, seq);
        MPI_Send(r->send, size, MPI_BYTE, 1, PP_TAG, comm);
        MPI_Recv(r->recv, size, MPI_BYTE, 1, PP_TAG, comm, MPI_STATUS_IGNORE);
        bad += !pp_stamp_matches(r->recv, r->size, seq);
    }
    uint64_t t1 = tl_now();
    r->seq += iterations;
    r->bad_seq += bad;
    r->corrupt += memcmp(r->send, r->recv, r->size) != 0;
    return tl_ticks_to_ns(t1 - t0);
}

static void pp_checks(tl_ctx *ctx, const pp_run *r, uint64_t echoed_min, uint64_t echoed_max)
{
    tl_check(ctx, "payload", r->bad_seq == 0 && r->corrupt == 0, (double)(r->bad_seq + r->corrupt),
             "%llu echoes of %zu bytes came back: %llu with another message's number, %llu timings whose "
             "last echo differed from what was sent",
             (unsigned long long)r->seq, r->size, (unsigned long long)r->bad_seq, (unsigned long long)r->corrupt);
    tl_check(ctx, "echoed", echoed_min == echoed_max, (double)echoed_min,
             "both ranks ran %llu and %llu iterations", (unsigned long long)echoed_min,
             (unsigned long long)echoed_max);
}

static int pp_run_point(tl_ctx *ctx)
{
    size_t size = (size_t)tl_param_long(ctx, "size", 1, PP_MAX_SIZE);
    mpib_world w;
    int rc = mpib_init(ctx, &w, MPI_THREAD_FUNNELED);
    if (rc != MPIB_OK)
        return mpib_finish(&w, 0);
    char reason[400];
    int partner = mpib_partner(&w, reason, sizeof reason);
    if (partner < 0) {
        tl_unsupported(ctx, "%s", reason);
        return mpib_finish(&w, 0);
    }
    int members[2] = {0, partner};
    rc = mpib_join(&w, members, 2, 1);
    if (rc != MPIB_OK || !mpib_member(&w))
        return mpib_finish(&w, 0);

    pp_run r = {.w = &w, .size = size};
    r.send = malloc(size);
    r.recv = calloc(1, size);
    if (!r.send || !r.recv)
        mpib_die("out of memory (%zu-byte messages)", size);
    /* One iteration is a round trip: two messages, one each way. */
    tl_measure_spec spec = {.metric = "latency",
                            .quantity = "one-way time per message (half a round trip)",
                            .actions_per_iteration = 2};
    uint64_t iterations = 0;
    rc = mpib_measure(&w, pp_body, &r, &spec, NULL, &iterations);
    uint64_t lo = mpib_min(&w, iterations), hi = mpib_max(&w, iterations);
    mpib_collect(&w);
    if (w.rank == 0 && rc == 0) {
        double latency = tl_pending_median(ctx);
        pp_checks(ctx, &r, lo, hi);
        mpib_checks(&w);
        tl_extra_num(ctx, "partner_rank", partner);
        tl_extra_str(ctx, "partner_host", w.hosts[partner]);
        tl_emit(ctx);
        /* bytes per ns are GB/s: x1000 for MB/s (decimal, as MPI benchmarks report) */
        tl_derived(ctx, "bandwidth", "bandwidth of the ping-pong (size / one-way time)",
                   (double)size / latency * 1e3, "size / latency.median");
        tl_set_unit(ctx, "MB/s");
        pp_checks(ctx, &r, lo, hi);
        mpib_checks(&w);
    }
    free(r.send);
    free(r.recv);
    return mpib_finish(&w, rc);
}

static const char *pp_check_size(const char *value)
{
    char *end;
    long v = strtol(value, &end, 10);
    return *value && !*end && v >= 1 && v <= PP_MAX_SIZE ? NULL : "an integer number of bytes from 1 to 67108864";
}

static const char *const sizes[] = {"1", "8", "64", "512", "4096", "32768", "262144", "1048576", "4194304", NULL};
static const char *const sizes_quick[] = {"8", "262144", NULL};

static const tl_param_def pp_params[] = {
    {.name = "size", .help = "message size in bytes", .values = sizes, .quick_values = sizes_quick,
     .check = pp_check_size},
    MPIB_PAIR_PARAM(mpib_pair_values),
    MPIB_TRANSPORT_PARAM(mpib_transport_values),
    {0},
};

const tl_bench mpib_pingpong[] = {
    MPIB_BENCH("mpi.pingpong",
               "MPI ping-pong between two ranks: one-way latency and bandwidth over message sizes",
               "one-way time per message (half a round trip)",
               pp_params, pp_run_point),
    {0},
};
