/* task.c - thread tasks: finding the program's main, running it in a
 * thread, ending the thread (not the process) when it returns, and the
 * threads a task starts belonging to it.
 *
 * How main is found: `main` is usually absent from an executable's dynamic
 * symbol table, so the library defines __libc_start_main, the C library's
 * entry that the executable's start code calls with main's address: the
 * dynamic linker binds that call to the first definition it finds, which
 * is the library's both when preloaded and when linked before libc.  It
 * notes main and goes on into the C library's own.  A program linked
 * with -rdynamic also has `main` in its dynamic symbols: the fallback. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

static tlsp_main_fn captured_main;

typedef int (*libc_start_main_fn)(tlsp_main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void),
                                  void *);

int __libc_start_main(tlsp_main_fn main_fn, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end);

TLSP_EXPORT int __libc_start_main(tlsp_main_fn main_fn, int argc, char **argv, void (*init)(void),
                                  void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    captured_main = main_fn;
    libc_start_main_fn real = (libc_start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (!real) {
        static const char msg[] = "threadlab-spawn: error: the C library's __libc_start_main was not found\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
        _exit(127);
    }
    return real(main_fn, argc, argv, init, fini, rtld_fini, stack_end);
}

tlsp_main_fn tlsp_program_main(void)
{
    if (!captured_main) {
        void *sym = dlsym(RTLD_DEFAULT, "main");
        memcpy(&captured_main, &sym, sizeof captured_main);
    }
    return captured_main;
}

/* ------------------------------------------------------------ the threads */

static pthread_mutex_t tasks_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tasks_cond = PTHREAD_COND_INITIALIZER;

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* Set while this thread starts a task: the thread is the new task's, not
 * one of the caller's (pthread_create below). */
static TLSP_TLS int starting_task;

/* The next pthread_create after the library's: the C library's (or a
 * sanitizer's, when the library comes first). */
static pthread_create_fn real_pthread_create(void)
{
    static _Atomic(pthread_create_fn) real;
    pthread_create_fn fn = atomic_load_explicit(&real, memory_order_acquire);
    if (!fn) {
        void *sym = dlsym(RTLD_NEXT, "pthread_create");
        memcpy(&fn, &sym, sizeof fn);
        if (!fn) {
            tlsp_say_error("the C library's pthread_create was not found");
            abort();
        }
        atomic_store_explicit(&real, fn, memory_order_release);
    }
    return fn;
}

static void *task_thread(void *arg)
{
    tlsp_task *t = arg;
    tlsp_self_task = t;
    tlsp_self_ep = t->ep;
    tlsp_self_main = 1;
    int status = tlsp_program_main()(t->argc, t->argv, environ);
    tlsp_task_end(t, status);
    return NULL;
}

int tlsp_task_start(tlsp_task *t)
{
    pthread_attr_t attr;
    pthread_t thread;
    int err = pthread_attr_init(&attr);
    if (err)
        return err;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* through the first pthread_create (a sanitizer's interceptor must
     * see every thread) */
    starting_task = 1;
    err = pthread_create(&thread, &attr, task_thread, t);
    starting_task = 0;
    pthread_attr_destroy(&attr);
    return err;
}

/* ------------------------------------------------ threads a task starts */

/* A thread started from one of a task's threads (an OpenMP team's, a
 * pthread of the program's) belongs to the task, as it would belong to
 * the task's process: MPI_COMM_WORLD there is the task's, its messages
 * go through the task's mailbox.  Without this such a thread was no task,
 * and MPI_COMM_WORLD there the process's (rank 0 of 1 in a child that was
 * rank 1 of 2).  The library defines pthread_create, found before the C
 * library's both when preloaded and when linked before libc.
 *
 * The new thread runs started_in_task before the program's start routine,
 * and under ThreadSanitizer before the sanitizer's own, which sets up the
 * thread's state: until then the thread must neither touch memory the
 * sanitizer watches nor call a function it intercepts (malloc, free,
 * pthread_*; it crashed there).  So what it needs comes in a record of a
 * static pool, read and handed back with atomic operations, it only sets
 * its task, and the rest (its mailbox, the exit hook) comes at its first
 * call of the library (tlsp_self).  A task that started a thread keeps
 * its descriptor and its mailbox's two lines until the process ends
 * (tlsp_task_end): such threads (a libgomp pool) may outlive it, and one
 * that asks MPI_Finalized afterwards must find them. */
enum { START_RECORDS = 64 };

static struct {
    _Atomic int busy;
    _Atomic(void *(*)(void *)) fn;
    _Atomic(void *) arg;
    _Atomic(tlsp_task *) task;
} start_records[START_RECORDS];

static tlsp_task *kept_tasks; /* under tasks_lock: linked by kept_next */

__attribute__((no_sanitize_thread)) static void *started_in_task(void *arg)
{
    __typeof__(&start_records[0]) r = arg;
    void *(*fn)(void *) = atomic_load_explicit(&r->fn, memory_order_relaxed);
    void *fn_arg = atomic_load_explicit(&r->arg, memory_order_relaxed);
    tlsp_self_task = atomic_load_explicit(&r->task, memory_order_relaxed);
    atomic_store_explicit(&r->busy, 0, memory_order_release);
    return fn(fn_arg);
}

TLSP_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    tlsp_task *t = tlsp_self_task;
    if (!t || starting_task)
        return real_pthread_create()(thread, attr, fn, arg);
    pthread_mutex_lock(&tasks_lock);
    if (!t->kept) {
        t->kept = 1;
        tlsp_endpoint_ref(t->ep);
    }
    pthread_mutex_unlock(&tasks_lock);
    /* a record is busy only until its thread starts */
    for (unsigned i = 0;; i = (i + 1) % START_RECORDS) {
        if (!atomic_exchange_explicit(&start_records[i].busy, 1, memory_order_acquire)) {
            atomic_store_explicit(&start_records[i].fn, fn, memory_order_relaxed);
            atomic_store_explicit(&start_records[i].arg, arg, memory_order_relaxed);
            atomic_store_explicit(&start_records[i].task, t, memory_order_relaxed);
            int err = real_pthread_create()(thread, attr, started_in_task, &start_records[i]);
            if (err)
                atomic_store_explicit(&start_records[i].busy, 0, memory_order_release);
            return err;
        }
        if (i == START_RECORDS - 1)
            sched_yield();
    }
}

void tlsp_task_finalize(tlsp_task *t)
{
    if (t->finalized)
        return;
    if (t->parent)
        tlsp_view_free(t->parent);
    if (t->self)
        tlsp_view_free(t->self);
    if (t->world)
        tlsp_view_free(t->world);
    t->parent = t->self = t->world = NULL;
    t->finalized = 1;
}

void tlsp_task_end(tlsp_task *t, int status)
{
    if (status != 0)
        tlsp_note("thread task %d (%s) ended with status %d", t->rank, t->argc > 0 ? t->argv[0] : "?", status);
    tlsp_task_finalize(t);
    tlsp_self_task = NULL;
    tlsp_self_ep = NULL;
    tlsp_self_main = 0;
    tlsp_slot_flush();
    for (int i = 0; i < t->argc; i++)
        free(t->argv[t->argc + 1 + i]);
    free(t->argv);
    t->argv = NULL;
    t->argc = 0;
    tlsp_endpoint_unref(t->ep); /* its thread's reference: a kept task holds one more */
    pthread_mutex_lock(&tasks_lock);
    int kept = t->kept;
    if (kept) {
        t->kept_next = kept_tasks;
        kept_tasks = t;
    }
    pthread_mutex_unlock(&tasks_lock);
    if (kept)
        tlsp_endpoint_trim(t->ep); /* what it keeps for good: its descriptor and the mailbox's two lines */
    else
        free(t);
    tlsp_limit_release(1);
}

void tlsp_limit_release(int n)
{
    atomic_fetch_sub_explicit(&tlsp_count.counted, n, memory_order_acq_rel);
    long left = atomic_fetch_sub_explicit(&tlsp_count.running, n, memory_order_acq_rel) - n;
    if (left == 0) {
        pthread_mutex_lock(&tasks_lock);
        pthread_cond_broadcast(&tasks_cond);
        pthread_mutex_unlock(&tasks_lock);
    }
}

void tlsp_tasks_wait_all(void)
{
    if (atomic_load_explicit(&tlsp_count.running, memory_order_acquire) == 0)
        return;
    pthread_mutex_lock(&tasks_lock);
    while (atomic_load_explicit(&tlsp_count.running, memory_order_acquire) > 0)
        pthread_cond_wait(&tasks_cond, &tasks_lock);
    pthread_mutex_unlock(&tasks_lock);
}

/* exit() in a thread task would end the whole process, every other task
 * with it: it ends the task only (docs/spawn.md). */
typedef void (*exit_fn)(int) __attribute__((noreturn));

TLSP_EXPORT void exit(int status)
{
    tlsp_task *t = tlsp_self_main ? tlsp_self_task : NULL;
    if (t) {
        static int note;
        tlsp_note_once(&note, "exit(%d) called in thread task %d: it ends that task only, not the process "
                              "(docs/spawn.md, \"What a program must respect\")",
                       status, t->rank);
        tlsp_task_end(t, status);
        pthread_exit(NULL);
    }
    void *sym = dlsym(RTLD_NEXT, "exit");
    exit_fn real;
    memcpy(&real, &sym, sizeof real);
    real(status);
}
