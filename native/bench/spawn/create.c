/* create.c - spawn.create: the cost of one spawned task, from the
 * parent's MPI_Comm_spawn to the child's first message back (the child
 * has run MPI_Init and MPI_Comm_get_parent: it exists as an MPI task), a
 * thread task of libthreadlab-spawn against a process of the real MPI.
 * Each iteration spawns one child, receives its hello and disconnects. */
#include <math.h>
#include <string.h>

#include "spawn_bench.h"

typedef struct {
    tl_ctx *ctx;
    const char *kind;
    uint64_t spawned, wrong_kind, wrong_hello;
} create_state;

static double time_create(void *arg, uint64_t iterations)
{
    create_state *s = arg;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++) {
        MPI_Comm kid = tlsb_spawn(s->ctx, TLSB_ROLE_HELLO, 1, -1);
        if (kid == MPI_COMM_NULL)
            return -1;
        int hello = 0;
        MPI_Recv(&hello, 1, MPI_INT, 0, TLSB_TAG_HELLO, kid, MPI_STATUS_IGNORE);
        s->wrong_kind += !tlsb_kind_is(kid, s->kind);
        s->wrong_hello += hello != TLSB_HELLO;
        s->spawned++;
        MPI_Comm_disconnect(&kid);
    }
    return tl_ticks_to_ns(tl_now() - t0);
}

static int run_create(tl_ctx *ctx)
{
    const char *kind = tl_param(ctx, "kind");
    if (tlsb_start(ctx, kind) != 0)
        return 0;
    create_state s = {.ctx = ctx, .kind = kind};
    /* A process spawn takes a tenth of a second or more, and may hang:
     * one per timing, few timings (the options' budget). */
    tl_measure_spec spec = {.max_iterations = !strcmp(kind, "processes") ? 1 : 0,
                            .fixed_iterations = !strcmp(kind, "processes") ? 1 : 0};
    int rc = tl_measure(ctx, time_create, &s, &spec);
    if (rc == 0) {
        tl_check(ctx, "kind", s.wrong_kind == 0, (double)s.wrong_kind, "%llu of %llu spawns gave %s",
                 (unsigned long long)(s.spawned - s.wrong_kind), (unsigned long long)s.spawned, kind);
        tl_check(ctx, "ran", s.wrong_hello == 0, (double)s.spawned,
                 "every child ran MPI_Init and sent its hello (%llu children)", (unsigned long long)s.spawned);
        tl_extra_num(ctx, "children", (double)s.spawned);
    }
    MPI_Finalize();
    return rc;
}

static const tl_param_def create_params[] = {
    {.name = "kind", .help = "threads (libthreadlab-spawn) or processes (the real MPI_Comm_spawn)",
     .values = tlsb_kind_values, .quick_values = tlsb_kind_values},
    {0},
};

const tl_bench tl_spawn_create[] = {
    TLSB_BENCH("spawn.create", "one spawned task, from MPI_Comm_spawn to its first message: thread task vs process",
               "time per spawned child (spawn, its MPI_Init, one message back)", create_params, run_create),
    {0},
};
