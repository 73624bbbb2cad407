/* clock.c - clock selection, TSC calibration, resolution and overhead. */
#define _GNU_SOURCE
#include "threadlab/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if TL_HAVE_TSC
#include <cpuid.h>
#endif

tl_clock_source tl_clock_active_source = TL_CLOCK_MONOTONIC_RAW;
static tl_clock_info clock_info = {TL_CLOCK_MONOTONIC_RAW, 1.0, 0.0, 0, 0.0, 0.0};

const char *tl_clock_source_name(tl_clock_source source)
{
    switch (source) {
    case TL_CLOCK_AUTO: return "auto";
    case TL_CLOCK_MONOTONIC_RAW: return "monotonic_raw";
    case TL_CLOCK_TSC: return "tsc";
    }
    return "unknown";
}

static int tsc_is_invariant(void)
{
#if TL_HAVE_TSC
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) || eax < 0x80000007u)
        return 0;
    __get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx);
    return (edx >> 8) & 1u;
#else
    return 0;
#endif
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#if TL_HAVE_TSC
/* Ticks per nanosecond from several 10 ms windows against monotonic_raw;
 * the median window discards one disturbed by preemption. */
static double calibrate_tsc_hz(void)
{
    enum { WINDOWS = 5 }; /* of 10 ms each */
    double hz[WINDOWS];
    for (int w = 0; w < WINDOWS; w++) {
        unsigned aux;
        uint64_t n0 = tl_now_raw(), t0 = __rdtscp(&aux);
        uint64_t n1;
        do {
            n1 = tl_now_raw();
        } while (n1 - n0 < 10000000ull);
        uint64_t t1 = __rdtscp(&aux);
        hz[w] = (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
    }
    qsort(hz, WINDOWS, sizeof hz[0], compare_double);
    return hz[WINDOWS / 2];
}
#endif

double tl_ticks_to_ns(uint64_t ticks)
{
    return (double)ticks * clock_info.ns_per_tick;
}

/* Resolution: the smallest non-zero difference between consecutive reads.
 * Overhead: median over batches of the mean cost of one read. */
static void measure_resolution_and_overhead(void)
{
    uint64_t smallest = UINT64_MAX;
    for (int i = 0; i < 20000; i++) {
        uint64_t a = tl_now(), b = tl_now();
        while (b == a)
            b = tl_now();
        if (b - a < smallest)
            smallest = b - a;
    }
    enum { BATCHES = 15, READS = 2000 };
    double per_read[BATCHES];
    for (int k = 0; k < BATCHES; k++) {
        uint64_t start = tl_now(), sink = 0;
        for (int i = 0; i < READS; i++)
            sink += tl_now();
        uint64_t end = tl_now();
        __asm__ volatile("" : : "g"(sink) : "memory");
        per_read[k] = tl_ticks_to_ns(end - start) / READS;
    }
    qsort(per_read, BATCHES, sizeof per_read[0], compare_double);
    clock_info.resolution_ns = tl_ticks_to_ns(smallest);
    clock_info.read_overhead_ns = per_read[BATCHES / 2];
}

int tl_clock_init(tl_clock_source want, char *err, unsigned errlen)
{
    clock_info.tsc_invariant = tsc_is_invariant();
    tl_clock_source use = want;
    if (want == TL_CLOCK_AUTO)
        use = clock_info.tsc_invariant ? TL_CLOCK_TSC : TL_CLOCK_MONOTONIC_RAW;
    if (use == TL_CLOCK_TSC && !clock_info.tsc_invariant) {
        snprintf(err, errlen,
                 "clock 'tsc' requested but this CPU does not report an invariant TSC "
                 "(CPUID 0x80000007 EDX bit 8); use --clock monotonic_raw or auto");
        return -1;
    }
#if TL_HAVE_TSC
    if (use == TL_CLOCK_TSC) {
        clock_info.tsc_hz = calibrate_tsc_hz();
        clock_info.ns_per_tick = 1e9 / clock_info.tsc_hz;
    } else {
        clock_info.ns_per_tick = 1.0;
    }
#endif
    clock_info.source = use;
    tl_clock_active_source = use;
    measure_resolution_and_overhead();
    return 0;
}

const tl_clock_info *tl_clock_get(void)
{
    return &clock_info;
}
