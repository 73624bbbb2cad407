/* mt.c - several threads of a rank communicating at once, the measures of
 * OSU's multithreaded latency and message-rate tests (thread i of rank 0
 * talks to thread i of the partner, with tag i):
 *
 *   mpi.latency.mt   each pair ping-pongs: one-way time per message while
 *                    all the pairs run at once;
 *   mpi.msgrate.mt   each thread of rank 0 sends windows of W non-blocking
 *                    messages, its partner thread receives them into W
 *                    buffers and answers every window with a short ack:
 *                    time per message of the whole rank, and the rate.
 *
 * Parameter `level` asks MPI for FUNNELED (one thread only: the main one
 * calls MPI) or MULTIPLE support, so the same run shows what MULTIPLE costs
 * a single thread, and what several threads get from it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpib.h"

#define MT_MAX_SIZE (1L << 20)
#define MT_MAX_WINDOW 4096

typedef struct mt_run mt_run;

typedef struct {
    mt_run *run;
    unsigned index;
    unsigned char *buf; /* window x size: what is sent, or received */
    unsigned char *ack;
    MPI_Request *req;
    uint64_t seq;       /* messages of this thread so far */
    uint64_t rounds;    /* iterations run */
    uint64_t bad;       /* messages that did not carry the expected stamp */
} TL_ALIGNED_CACHE_LINE mt_thread;

struct mt_run {
    mpib_world *w;
    int rate;        /* mpi.msgrate.mt */
    size_t size;
    int window;
    unsigned n;
    mt_thread *t;
    tl_team team;
};

/* Every message carries its thread and its number within the thread, so
 * a message matched to another thread's receive, lost, or reordered fails. */
static inline uint64_t mt_stamp(unsigned thread, uint64_t seq)
{
    return (uint64_t)thread << 48 | (seq & ((UINT64_C(1) << 48) - 1));
}

static inline void mt_put(unsigned char *buf, uint64_t stamp)
{
    memcpy(buf, &stamp, sizeof stamp);
}

static inline int mt_has(const unsigned char *buf, uint64_t stamp)
{
    return memcmp(buf, &stamp, sizeof stamp) == 0;
}

static void mt_latency(mt_thread *t, uint64_t iterations)
{
    mt_run *r = t->run;
    MPI_Comm comm = r->w->comm;
    int size = (int)r->size, tag = (int)t->index;
    if (r->w->rank == 0) {
        for (uint64_t k = 0; k < iterations; k++) {
            uint64_t stamp = mt_stamp(t->index, t->seq++);
            mt_put(t->buf, stamp);
            MPI_Send(t->buf, size, MPI_BYTE, 1, tag, comm);
            MPI_Recv(t->buf, size, MPI_BYTE, 1, tag, comm, MPI_STATUS_IGNORE);
            t->bad += !mt_has(t->buf, stamp);
        }
    } else {
        for (uint64_t k = 0; k < iterations; k++) {
            MPI_Recv(t->buf, size, MPI_BYTE, 0, tag, comm, MPI_STATUS_IGNORE);
            t->bad += !mt_has(t->buf, mt_stamp(t->index, t->seq++));
            MPI_Send(t->buf, size, MPI_BYTE, 0, tag, comm);
        }
    }
    t->rounds += iterations;
}

static void mt_rate(mt_thread *t, uint64_t iterations)
{
    mt_run *r = t->run;
    MPI_Comm comm = r->w->comm;
    int size = (int)r->size, tag = (int)t->index;
    for (uint64_t k = 0; k < iterations; k++) {
        if (r->w->rank == 0) {
            for (int j = 0; j < r->window; j++) {
                unsigned char *slot = t->buf + (size_t)j * r->size;
                mt_put(slot, mt_stamp(t->index, t->seq++));
                MPI_Isend(slot, size, MPI_BYTE, 1, tag, comm, &t->req[j]);
            }
            MPI_Waitall(r->window, t->req, MPI_STATUSES_IGNORE);
            MPI_Recv(t->ack, 4, MPI_BYTE, 1, tag, comm, MPI_STATUS_IGNORE);
        } else {
            for (int j = 0; j < r->window; j++)
                MPI_Irecv(t->buf + (size_t)j * r->size, size, MPI_BYTE, 0, tag, comm, &t->req[j]);
            MPI_Waitall(r->window, t->req, MPI_STATUSES_IGNORE);
            /* Messages of one sender and tag are not overtaken: slot j holds
             * the j-th of the window. */
            for (int j = 0; j < r->window; j++)
                t->bad += !mt_has(t->buf + (size_t)j * r->size, mt_stamp(t->index, t->seq++));
            MPI_Send(t->ack, 4, MPI_BYTE, 0, tag, comm);
        }
    }
    t->rounds += iterations;
}

static void mt_work(mt_thread *t, uint64_t iterations)
{
    if (t->run->rate)
        mt_rate(t, iterations);
    else
        mt_latency(t, iterations);
}

static void mt_partner(void *arg, uint64_t iterations)
{
    mt_thread *t = arg;
    mpib_place_note(t->run->w, mpib_slot(t->run->w, (int)t->index));
    mt_work(t, iterations);
}

static double mt_body(void *arg, uint64_t iterations)
{
    mt_run *r = arg;
    uint64_t t0 = tl_now();
    tl_team_go(&r->team, iterations);
    mt_work(&r->t[0], iterations);
    tl_team_wait(&r->team);
    uint64_t t1 = tl_now();
    mpib_place_note(r->w, mpib_slot(r->w, 0));
    return tl_ticks_to_ns(t1 - t0);
}

/* What the checks need, gathered from both ranks (collective). */
typedef struct {
    uint64_t iterations, messages, bad, wrong_rounds, lo, hi;
} mt_verdict;

static void mt_collect(mt_run *r, uint64_t rank_iterations, mt_verdict *v)
{
    uint64_t bad = 0, wrong = 0;
    v->messages = 0;
    for (unsigned i = 0; i < r->n; i++) {
        bad += r->t[i].bad;
        v->messages += r->t[i].seq;
        wrong += r->t[i].rounds != rank_iterations;
    }
    v->iterations = rank_iterations;
    v->bad = mpib_sum(r->w, bad);
    v->wrong_rounds = mpib_sum(r->w, wrong);
    v->lo = mpib_min(r->w, rank_iterations);
    v->hi = mpib_max(r->w, rank_iterations);
}

static void mt_checks(tl_ctx *ctx, const mt_run *r, const mt_verdict *v)
{
    tl_check(ctx, "payload", v->bad == 0, (double)v->bad,
             "%llu messages each way: %llu arrived at a thread without the stamp (thread, number) expected there",
             (unsigned long long)v->messages, (unsigned long long)v->bad);
    tl_check(ctx, "rounds", v->wrong_rounds == 0 && v->lo == v->hi, (double)v->lo,
             "each of the %u threads of both ranks ran %llu iterations (%llu threads another count; ranks "
             "%llu and %llu)",
             r->n, (unsigned long long)v->iterations, (unsigned long long)v->wrong_rounds,
             (unsigned long long)v->lo, (unsigned long long)v->hi);
    mpib_checks(r->w);
}

static int mt_run_point(tl_ctx *ctx, int rate)
{
    long threads = tl_param_long(ctx, "threads", 1, TL_MAX_SLOTS / 2);
    size_t size = (size_t)tl_param_long(ctx, "size", 8, MT_MAX_SIZE);
    int window = rate ? (int)tl_param_long(ctx, "window", 1, MT_MAX_WINDOW) : 1;
    int multiple = strcmp(tl_param(ctx, "level"), "multiple") == 0;
    mpib_world w;
    if (mpib_init(ctx, &w, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED) != MPIB_OK)
        return mpib_finish(&w, 0);
    if (!multiple && threads > 1) {
        tl_unsupported(ctx, "level=funneled: only the main thread may call MPI, so one thread per rank "
                            "(threads=%ld needs level=multiple)", threads);
        return mpib_finish(&w, 0);
    }
    char reason[400];
    int partner = mpib_partner(&w, reason, sizeof reason);
    if (partner < 0) {
        tl_unsupported(ctx, "%s", reason);
        return mpib_finish(&w, 0);
    }
    int members[2] = {0, partner};
    int rc = mpib_join(&w, members, 2, (int)threads);
    if (rc != MPIB_OK || !mpib_member(&w))
        return mpib_finish(&w, 0);

    mt_run r = {.w = &w, .rate = rate, .size = size, .window = window, .n = (unsigned)threads};
    r.t = aligned_alloc(TL_CACHE_LINE, r.n * sizeof *r.t);
    if (!r.t)
        mpib_die("out of memory");
    memset(r.t, 0, r.n * sizeof *r.t);
    for (unsigned i = 0; i < r.n; i++) {
        mt_thread *t = &r.t[i];
        t->run = &r;
        t->index = i;
        t->buf = calloc((size_t)window, size);
        t->ack = calloc(1, 4);
        t->req = calloc((size_t)window, sizeof *t->req);
        if (!t->buf || !t->ack || !t->req)
            mpib_die("out of memory");
    }
    if (tl_team_start(ctx, &r.team, mpib_slot(&w, 1), r.n - 1, mt_partner, &r.t[1], sizeof *r.t) != 0) {
        mpib_die("cannot start the threads: %s", strerror(errno));
    }
    char quantity[128];
    if (rate)
        snprintf(quantity, sizeof quantity, "time per message of the rank (%ld threads, windows of %d)", threads,
                 window);
    else
        snprintf(quantity, sizeof quantity, "one-way time per message, %ld thread pairs at once", threads);
    tl_measure_spec spec = {
        .metric = rate ? "time_per_message" : "latency",
        .quantity = quantity,
        .actions_per_iteration = rate ? (double)window * (double)threads : 2.0,
    };
    uint64_t iterations = 0;
    rc = mpib_measure(&w, mt_body, &r, &spec, NULL, &iterations);
    tl_team_stop(&r.team);
    mpib_collect(&w);
    mt_verdict verdict;
    mt_collect(&r, iterations, &verdict);
    if (w.rank == 0 && rc == 0) {
        mt_checks(ctx, &r, &verdict);
        tl_extra_num(ctx, "partner_rank", partner);
        tl_extra_str(ctx, "partner_host", w.hosts[partner]);
        if (rate) {
            double per_message = tl_pending_median(ctx);
            tl_emit(ctx);
            tl_derived(ctx, "rate", "messages per second of the rank (1 / time per message)",
                       1e9 / per_message, "1e9 / time_per_message.median");
            tl_set_unit(ctx, "msg/s");
            mt_checks(ctx, &r, &verdict);
        }
    }
    for (unsigned i = 0; i < r.n; i++) {
        free(r.t[i].buf);
        free(r.t[i].ack);
        free(r.t[i].req);
    }
    free(r.t);
    return mpib_finish(&w, rc);
}

static int mt_run_latency(tl_ctx *ctx) { return mt_run_point(ctx, 0); }
static int mt_run_rate(tl_ctx *ctx) { return mt_run_point(ctx, 1); }

static const char *const thread_values[] = {"1", "2", "4", NULL};
static const char *const thread_quick[] = {"1", "2", NULL};
static const char *const levels[] = {"funneled", "multiple", NULL};
static const char *const sizes[] = {"8", NULL};
static const char *const windows[] = {"64", NULL};

#define MT_COMMON_PARAMS                                                                                      \
    {.name = "threads", .help = "threads per rank, each with its partner thread on the other rank",        \
     .values = thread_values, .quick_values = thread_quick, .check = tl_check_positive_int},                \
    {.name = "level", .help = "MPI thread support asked: funneled (one thread) or multiple",                \
     .values = levels, .quick_values = levels},                                                             \
    {.name = "size", .help = "message size in bytes (8 to 1048576)", .values = sizes,                       \
     .check = tl_check_positive_int}

static const tl_param_def latency_params[] = {
    MT_COMMON_PARAMS,
    MPIB_PAIR_PARAM(mpib_pair_intra),
    MPIB_TRANSPORT_PARAM(mpib_transport_default),
    {0},
};

static const tl_param_def rate_params[] = {
    MT_COMMON_PARAMS,
    {.name = "window", .help = "messages each thread sends before waiting for them (1 to 4096)",
     .values = windows, .check = tl_check_positive_int},
    MPIB_PAIR_PARAM(mpib_pair_intra),
    MPIB_TRANSPORT_PARAM(mpib_transport_default),
    {0},
};

const tl_bench mpib_mt[] = {
    MPIB_BENCH("mpi.latency.mt",
               "MPI ping-pong latency with T thread pairs at once (osu_latency_mt's measure), FUNNELED vs MULTIPLE",
               "one-way time per message",
               latency_params, mt_run_latency),
    MPIB_BENCH("mpi.msgrate.mt",
               "MPI message rate of T threads per rank sending windows of messages, FUNNELED vs MULTIPLE",
               "time per message of the rank",
               rate_params, mt_run_rate),
    {0},
};
