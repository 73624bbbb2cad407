/*
 * threadlab/compiler.h - guards that keep the compiler from deleting or
 * moving the work a benchmark times.
 */
#ifndef THREADLAB_COMPILER_H
#define THREADLAB_COMPILER_H

#include <stdint.h>

/* Makes the compiler believe the value is read: the computation that
 * produced it cannot be removed. */
#define tl_do_not_optimize(value) __asm__ volatile("" : : "g"(value) : "memory")

/* Makes the compiler believe all memory may have changed: loads and stores
 * cannot be hoisted out of, or sunk past, this point. */
#define tl_clobber_memory() __asm__ volatile("" : : : "memory")

/* Forces a value into a register the compiler must assume was modified, so
 * a loop over it cannot be strength-reduced or folded. */
#define tl_launder(var) __asm__ volatile("" : "+r"(var))

#define TL_CACHE_LINE 64
#define TL_ALIGNED_CACHE_LINE __attribute__((aligned(TL_CACHE_LINE)))
#define TL_UNUSED __attribute__((unused))
#define TL_NOINLINE __attribute__((noinline))
#define TL_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

static inline void tl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#else
    tl_clobber_memory();
#endif
}

/* Asks for the line holding p in the exclusive state, so that stores
 * into it later do not wait for another CPU to give it up (memory
 * recycled from another thread). GCC turns __builtin_prefetch's write
 * hint into a read prefetch unless built for a CPU with PREFETCHW, which
 * every x86-64 since 2014 executes and older ones take for a no-op. */
static inline void tl_prefetch_for_write(const void *p)
{
#if defined(__x86_64__)
    __asm__ volatile("prefetchw %0" ::"m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1);
#endif
}

/* The sanitizer this code is built with ("address", "thread"), or NULL:
 * reported by --env, so that no figure of a sanitized build passes for a
 * real one. */
static inline const char *tl_sanitizer_name(void)
{
#if defined(__SANITIZE_THREAD__)
    return "thread";
#elif defined(__SANITIZE_ADDRESS__)
    return "address";
#else
    return (const char *)0;
#endif
}

#endif
