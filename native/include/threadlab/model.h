/*
 * threadlab/model.h - the thread model interface of the models suite.
 *
 * The benchmarks of docs/thread-models.md (native/bench/models/) are
 * written once against this interface and linked with one implementation
 * per model, giving one program per model:
 *
 *   model_pthread.c   pthread      POSIX threads (NPTL: one kernel thread each)
 *   model_process.c   process      fork(); shared state in MAP_SHARED memory,
 *                                  process-shared pthread mutexes and conditions
 *   model_ult.c       ult          libthreadlab-ult user-level threads
 *   model_fiber.cpp   boost-fiber  Boost.Fiber (C++, behind this C interface)
 *
 * Calls are direct (no function pointers): the figures of the fast models
 * are a few nanoseconds and must not carry an indirection the others do not.
 *
 * Conventions: functions return 0 or a positive errno value.  Blocking
 * calls block the calling thread of the model (for ult and boost-fiber the
 * user-level thread, never the kernel thread under it).  Everything the
 * threads of one benchmark share must live in tl_model_shared_alloc()
 * memory: for the process model it is the only memory the children and the
 * parent have in common.
 */
#ifndef THREADLAB_MODEL_H
#define THREADLAB_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "threadlab/bench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A thread of the model: pthread_t, pid_t, tl_ult_t or a fiber object. */
typedef uintptr_t tl_mthread;
typedef void *(*tl_mthread_fn)(void *arg);

/* The stack a thread gets.  SMALL is for bodies known to be frugal (they
 * only block on the model's primitives): it lets the capacity benchmark
 * measure the model at its densest.  Each model documents what it means. */
typedef enum { TL_MSTACK_DEFAULT = 0, TL_MSTACK_SMALL } tl_mstack;

/* Storage for the model's mutex and condition variable, large enough for
 * every model's object (each implementation checks its own at compile time)
 * so that benchmark state can embed them in shared memory. */
typedef union {
    unsigned char bytes[64];
    long double align_;
    void *ptr_;
} tl_mmutex;
typedef union {
    unsigned char bytes[96];
    long double align_;
    void *ptr_;
} tl_mcond;

/* What one thread that exists (started, not yet joined) takes from the
 * machine, generously: the count benchmarks scale their count to it. */
typedef struct {
    int kernel_task;       /* 1: a kernel task (pid) per thread */
    double maps;           /* memory mappings per thread (vm.max_map_count) */
    double resident_bytes; /* resident memory per thread */
} tl_model_cost;

/* The record's model name ("pthread", "process", "ult", "boost-fiber"). */
extern const char tl_model_name[];
/* NULL when the model can create a thread without starting it
 * (tl_model_instantiate); otherwise why it cannot. */
extern const char *const tl_model_no_instantiate;
/* The default and quick sweeps of threads.capacity's count (a model whose
 * thread is small offers a larger count). */
extern const char *const tl_model_capacity_counts[];
extern const char *const tl_model_capacity_quick[];

/* Starts the model for one data point (run() calls it first).  Returns 0,
 * or -1 after tl_fail. */
int tl_model_init(tl_ctx *ctx);
/* Adds the model's settings to the pending record's extra (e.g.
 * extra.vps): for every record of the point. */
void tl_model_describe(tl_ctx *ctx);
/* Ends it; every thread has been joined. */
void tl_model_fini(void);
/* Returns memory the model keeps for reuse (stacks of finished threads) so
 * that the next resident-memory baseline is clean.  No thread exists. */
int tl_model_release_cached(void);

/* Zeroed memory every thread of the model can read and write. */
void *tl_model_shared_alloc(size_t bytes);
void tl_model_shared_free(void *p, size_t bytes);

/* What a thread of the model costs (see tl_model_cost). */
tl_model_cost tl_model_thread_cost(tl_mstack stack);
/* The stack size a thread gets, in bytes (0 = the system's default). */
size_t tl_model_stack_bytes(tl_mstack stack);
/* Resident memory of everything the model's threads use, in bytes: the
 * process's RSS, or for the process model the proportional set size of the
 * process and all its children.  Negative when it cannot be read. */
double tl_model_resident_bytes(void);

/* Creates and starts a thread running fn(arg); fn's return value is
 * discarded (benchmarks verify through shared memory). */
int tl_model_create(tl_mthread *t, tl_mthread_fn fn, void *arg, tl_mstack stack);
/* Creates a thread that does not run before tl_model_start_instantiated;
 * ENOTSUP when tl_model_no_instantiate is set. */
int tl_model_instantiate(tl_mthread *t, tl_mthread_fn fn, void *arg);
int tl_model_start_instantiated(tl_mthread t);
/* Waits for t to end and releases it.  EIO: the thread (a child process)
 * did not end normally. */
int tl_model_join(tl_mthread t);
/* Lets the other ready threads of the model run first. */
void tl_model_yield(void);
/* Ends the calling thread (not the program's main thread). */
void tl_model_exit(void);
/* Suspends the calling thread for at least ms milliseconds. */
void tl_model_sleep_ms(unsigned ms);

int tl_model_mutex_init(tl_mmutex *m);
int tl_model_mutex_destroy(tl_mmutex *m);
int tl_model_mutex_lock(tl_mmutex *m);
int tl_model_mutex_unlock(tl_mmutex *m);
int tl_model_cond_init(tl_mcond *c);
int tl_model_cond_destroy(tl_mcond *c);
/* The caller holds m; released while waiting, held again on return. */
int tl_model_cond_wait(tl_mcond *c, tl_mmutex *m);
int tl_model_cond_signal(tl_mcond *c);
int tl_model_cond_broadcast(tl_mcond *c);

#ifdef __cplusplus
}
#endif
#endif
