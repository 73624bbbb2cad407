/* sem.c - POSIX semaphores: two threads ping-pong with two unnamed
 * semaphores, each posting the other's and waiting on its own. */
#define _GNU_SOURCE
#include "families.h"
#include "sync_pingpong.h"

static int run_pingpong(tl_ctx *ctx)
{
    /* A round trip is two handoffs; the record is per handoff. */
    return sync_pingpong(ctx, SYNC_MECH_SEM, NULL, NULL, NULL, 2.0);
}

const tl_bench tl_posix_sem[] = {
    TL_BENCH("pthread.sem.pingpong", "pthread",
             "two threads ping-pong with two POSIX semaphores (sem_post / sem_wait)",
             "time per one-way handoff (a round trip counts as 2)",
             2, TL_PLACES_ALL, NULL, run_pingpong),
    {0},
};
