/*
 * gomp_abi.h - the libgomp entry points the shim defines, and the
 * worksharing entries the probe and the overhead benchmark call directly,
 * as GCC's libgomp_g.h declares them (that header is not installed).
 * Checked against libgomp.so.1's exported symbols by tests/test_omp.py.
 */
#ifndef THREADLAB_GOMP_ABI_H
#define THREADLAB_GOMP_ABI_H

#include <stdbool.h>
#include <stdint.h>

typedef void (*tl_fn)(void *);

/* GOMP 4.0 and later: the team's region in one call. */
void GOMP_parallel(tl_fn, void *, unsigned, unsigned);
unsigned GOMP_parallel_reductions(tl_fn, void *, unsigned, unsigned);
void GOMP_parallel_sections(tl_fn, void *, unsigned, unsigned, unsigned);
void GOMP_parallel_loop_static(tl_fn, void *, unsigned, long, long, long, long, unsigned);
void GOMP_parallel_loop_dynamic(tl_fn, void *, unsigned, long, long, long, long, unsigned);
void GOMP_parallel_loop_guided(tl_fn, void *, unsigned, long, long, long, long, unsigned);
void GOMP_parallel_loop_nonmonotonic_dynamic(tl_fn, void *, unsigned, long, long, long, long, unsigned);
void GOMP_parallel_loop_nonmonotonic_guided(tl_fn, void *, unsigned, long, long, long, long, unsigned);
void GOMP_parallel_loop_runtime(tl_fn, void *, unsigned, long, long, long, unsigned);
void GOMP_parallel_loop_nonmonotonic_runtime(tl_fn, void *, unsigned, long, long, long, unsigned);
void GOMP_parallel_loop_maybe_nonmonotonic_runtime(tl_fn, void *, unsigned, long, long, long, unsigned);

/* GOMP 1.0: _start, the master runs fn itself, then _end. */
void GOMP_parallel_start(tl_fn, void *, unsigned);
void GOMP_parallel_end(void);
void GOMP_parallel_loop_static_start(tl_fn, void *, unsigned, long, long, long, long);
void GOMP_parallel_loop_dynamic_start(tl_fn, void *, unsigned, long, long, long, long);
void GOMP_parallel_loop_guided_start(tl_fn, void *, unsigned, long, long, long, long);
void GOMP_parallel_loop_runtime_start(tl_fn, void *, unsigned, long, long, long);
void GOMP_parallel_sections_start(tl_fn, void *, unsigned, unsigned);

/* Worksharing inside a team's function (not interposed). */
bool GOMP_loop_runtime_next(long *, long *);
bool GOMP_loop_nonmonotonic_dynamic_next(long *, long *);
void GOMP_loop_end_nowait(void);
unsigned GOMP_sections_next(void);
void GOMP_sections_end_nowait(void);

/* The gfortran entries the shim answers (C ones come from <omp.h>). */
int32_t omp_get_max_threads_(void);
int32_t omp_get_dynamic_(void);
void omp_set_dynamic_(const int32_t *);
void omp_set_dynamic_8_(const int64_t *);

#endif
