/* pingpong_yield.h - the sched_yield ping-pong, measured by
 * pthread.yield.pingpong (yield.c, which defines it) and ctxswitch.yield
 * (ctxswitch.c). */
#ifndef THREADLAB_POSIX_PINGPONG_YIELD_H
#define THREADLAB_POSIX_PINGPONG_YIELD_H

#include "threadlab/bench.h"

/* Measures two threads (slots 0 and 1) calling sched_yield, one iteration =
 * one yield by each, and adds the "alternated" check.  serial emulates the
 * seed's AIX behaviour (the partner does all its yields before main does
 * any) so that tests can see the check flag a run that did not alternate.
 * quantity names the sample for the record.  Returns run()'s result. */
int tl_posix_yield_pingpong(tl_ctx *ctx, int serial, const char *quantity);

#endif
