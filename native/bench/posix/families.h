/* families.h - the benchmark families of threadlab-bench-posix, one source
 * file each; main.c chains their tables into the program's registry. */
#ifndef THREADLAB_POSIX_FAMILIES_H
#define THREADLAB_POSIX_FAMILIES_H

#include "threadlab/bench.h"

extern const tl_bench tl_posix_empty[];     /* empty.c     the reference loop */
extern const tl_bench tl_posix_create[];    /* create.c    creation chain, create+join */
extern const tl_bench tl_posix_process[];   /* process.c   fork, vfork, posix_spawn */
extern const tl_bench tl_posix_yield[];     /* yield.c     sched_yield ping-pong */
extern const tl_bench tl_posix_timeslice[]; /* timeslice.c the two-thread spin protocol */
extern const tl_bench tl_posix_cancel[];    /* cancel.c    pthread_cancel latency */
extern const tl_bench tl_posix_ctxswitch[]; /* ctxswitch.c context switch by several methods */
extern const tl_bench tl_posix_cond[];      /* cond.c      condition variables */
extern const tl_bench tl_posix_mutex[];     /* mutex.c     mutexes, spinlock, rwlock */
extern const tl_bench tl_posix_sem[];       /* sem.c       semaphores */
extern const tl_bench tl_posix_barrier[];   /* barrier.c   barriers */
extern const tl_bench tl_posix_logp[];      /* logp.c      LogP parameters per mechanism */

#endif
