/*
 * threadlab/clock.h - the one clock every native benchmark reads.
 *
 * Two sources: CLOCK_MONOTONIC_RAW (always available, immune to NTP slewing)
 * and the x86 time-stamp counter where the CPU declares it invariant
 * (constant and non-stop), calibrated against CLOCK_MONOTONIC_RAW.
 * tl_now() returns ticks of the selected source; convert differences with
 * tl_ticks_to_ns().  Resolution and read overhead are measured at start-up
 * and reported with every run, because a timing is only meaningful when it
 * is long against both.
 */
#ifndef THREADLAB_CLOCK_H
#define THREADLAB_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define TL_HAVE_TSC 1
#else
#define TL_HAVE_TSC 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TL_CLOCK_AUTO = 0,      /* TSC when invariant, else monotonic_raw */
    TL_CLOCK_MONOTONIC_RAW, /* clock_gettime(CLOCK_MONOTONIC_RAW) */
    TL_CLOCK_TSC            /* rdtsc, refused when not invariant */
} tl_clock_source;

typedef struct {
    tl_clock_source source;   /* the source in use (never AUTO after init) */
    double ns_per_tick;       /* 1.0 for monotonic_raw */
    double tsc_hz;            /* calibrated TSC frequency, 0 when not measured */
    int tsc_invariant;        /* CPUID 0x80000007 EDX bit 8 */
    double resolution_ns;     /* smallest non-zero step seen between reads */
    double read_overhead_ns;  /* cost of one tl_now() call, median of batches */
} tl_clock_info;

/* Selects and calibrates the clock.  Returns 0, or -1 with a message in
 * err (e.g. TSC requested on a CPU without an invariant TSC). */
int tl_clock_init(tl_clock_source want, char *err, unsigned errlen);

const tl_clock_info *tl_clock_get(void);
const char *tl_clock_source_name(tl_clock_source source);

/* Internal state read by the inline tl_now(); not for direct use. */
extern tl_clock_source tl_clock_active_source;

static inline uint64_t tl_now_raw(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t tl_now(void)
{
#if TL_HAVE_TSC
    if (tl_clock_active_source == TL_CLOCK_TSC) {
        unsigned aux;
        /* rdtscp waits for earlier instructions to retire, so the work
         * being timed is not reordered past the read. */
        return __rdtscp(&aux);
    }
#endif
    return tl_now_raw();
}

/* Converts a difference of two tl_now() readings to nanoseconds. */
double tl_ticks_to_ns(uint64_t ticks);

#ifdef __cplusplus
}
#endif
#endif
