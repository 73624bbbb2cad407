/* task.c - thread tasks: finding the program's main, running it in a
 * thread, and ending the thread (not the process) when it returns.
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

static void *task_thread(void *arg)
{
    tlsp_task *t = arg;
    tlsp_self_task = t;
    tlsp_self_ep = t->ep;
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
    err = pthread_create(&thread, &attr, task_thread, t);
    pthread_attr_destroy(&attr);
    return err;
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
    tlsp_slot_flush();
    for (int i = 0; i < t->argc; i++)
        free(t->argv[t->argc + 1 + i]);
    free(t->argv);
    tlsp_endpoint_unref(t->ep);
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
    tlsp_task *t = tlsp_self_task;
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
