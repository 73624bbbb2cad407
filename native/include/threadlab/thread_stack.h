/*
 * threadlab/thread_stack.h - the stack size to give pthread_create for a
 * runtime's own threads (the ULT runtime's VPs, TLS donors and preemption
 * ticker, the manager clients' watchers).
 *
 * glibc places a new thread's static TLS (the __thread data of the program
 * and of every library loaded at start, an OpenMP program's threadprivate
 * arrays included) inside the stack it is given, and pthread_create fails
 * with EINVAL when the TLS does not fit.  NAS EP keeps 1 MiB of
 * threadprivate data: a 64 KiB stack cannot hold it.  So a size asked for
 * is what the thread's own code needs, and this adds what glibc takes.
 * Header-only: the libraries that call it link nothing in common.
 */
#ifndef THREADLAB_THREAD_STACK_H
#define THREADLAB_THREAD_STACK_H

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>

/* The stack size for a thread whose own code needs `usable` bytes.
 * glibc's __pthread_get_minstack (GLIBC_PRIVATE, exported since glibc 2.15,
 * used by the JVM for the same purpose) is the smallest stack a thread
 * with these attributes can have: a page, the static TLS and
 * PTHREAD_STACK_MIN.  Without it (another C library) the static TLS is not
 * known, and a generous 1 MiB stands for it. */
static inline size_t tl_thread_stack_size(const pthread_attr_t *attr, size_t usable)
{
    size_t (*minstack)(const pthread_attr_t *) =
        (size_t (*)(const pthread_attr_t *))dlsym(RTLD_DEFAULT, "__pthread_get_minstack");
    size_t least = minstack ? minstack(attr) : (size_t)PTHREAD_STACK_MIN + ((size_t)1 << 20);
    return usable + least;
}

#endif
