/* naive.h - what the naive cross-check programs share, and nothing of the
 * timing core: CLOCK_MONOTONIC and the median of a few repetitions.  They
 * print their figures with libthreadlab-json, the writer of every program
 * (writing JSON is not timing). */
#ifndef THREADLAB_CROSSCHECK_NAIVE_H
#define THREADLAB_CROSSCHECK_NAIVE_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "threadlab/json.h"

#define NAIVE_MAX_REPEATS 64

static inline double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n), n at most NAIVE_MAX_REPEATS; v is left as it is. */
static inline double median(const double *v, int n)
{
    double sorted[NAIVE_MAX_REPEATS];
    memcpy(sorted, v, (size_t)n * sizeof *v);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_double);
    return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

/* "key": [v...] and "key_median": the median, in the object being written. */
static inline void naive_json_list(tl_json *j, const char *key, const double *v, int n)
{
    char median_key[64];
    snprintf(median_key, sizeof median_key, "%s_median", key);
    tl_json_key(j, key);
    tl_json_begin_array(j);
    for (int r = 0; r < n; r++)
        tl_json_number(j, v[r]);
    tl_json_end_array(j);
    tl_json_key(j, median_key);
    tl_json_number(j, median(v, n));
}

#endif
