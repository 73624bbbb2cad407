/*
 * abi.h - the GOMP_* entries of GCC's libgomp ABI that libthreadlab-gomp
 * implements, and its Fortran and versioned lock entries, as GCC calls
 * them (libgomp's libgomp_g.h is not installed). The omp_* C routines
 * come from GCC's <omp.h>. libthreadlab-gomp.map gives each its symbol
 * version; docs/omp-ult.md lists every entry's status.
 */
#ifndef THREADLAB_GOMP_ABI_H
#define THREADLAB_GOMP_ABI_H

#include <omp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef unsigned long long tlg_ull_t;
typedef void (*tlg_abi_fn)(void *);

/* barrier.c */
void GOMP_barrier(void);
bool GOMP_barrier_cancel(void);

/* critical.c */
void GOMP_critical_start(void);
void GOMP_critical_end(void);
void GOMP_critical_name_start(void **);
void GOMP_critical_name_end(void **);
void GOMP_atomic_start(void);
void GOMP_atomic_end(void);

/* loop.c */
bool GOMP_loop_static_start(long, long, long, long, long *, long *);
bool GOMP_loop_dynamic_start(long, long, long, long, long *, long *);
bool GOMP_loop_guided_start(long, long, long, long, long *, long *);
bool GOMP_loop_runtime_start(long, long, long, long *, long *);
bool GOMP_loop_nonmonotonic_dynamic_start(long, long, long, long, long *, long *);
bool GOMP_loop_nonmonotonic_guided_start(long, long, long, long, long *, long *);
bool GOMP_loop_nonmonotonic_runtime_start(long, long, long, long *, long *);
bool GOMP_loop_maybe_nonmonotonic_runtime_start(long, long, long, long *, long *);
bool GOMP_loop_start(long, long, long, long, long, long *, long *, uintptr_t *, void **);
bool GOMP_loop_ordered_static_start(long, long, long, long, long *, long *);
bool GOMP_loop_ordered_dynamic_start(long, long, long, long, long *, long *);
bool GOMP_loop_ordered_guided_start(long, long, long, long, long *, long *);
bool GOMP_loop_ordered_runtime_start(long, long, long, long *, long *);
bool GOMP_loop_ordered_start(long, long, long, long, long, long *, long *, uintptr_t *, void **);
bool GOMP_loop_static_next(long *, long *);
bool GOMP_loop_dynamic_next(long *, long *);
bool GOMP_loop_guided_next(long *, long *);
bool GOMP_loop_runtime_next(long *, long *);
bool GOMP_loop_nonmonotonic_dynamic_next(long *, long *);
bool GOMP_loop_nonmonotonic_guided_next(long *, long *);
bool GOMP_loop_nonmonotonic_runtime_next(long *, long *);
bool GOMP_loop_maybe_nonmonotonic_runtime_next(long *, long *);
bool GOMP_loop_ordered_static_next(long *, long *);
bool GOMP_loop_ordered_dynamic_next(long *, long *);
bool GOMP_loop_ordered_guided_next(long *, long *);
bool GOMP_loop_ordered_runtime_next(long *, long *);
void GOMP_parallel_loop_static_start(tlg_abi_fn, void *, unsigned, long, long, long, long);
void GOMP_parallel_loop_dynamic_start(tlg_abi_fn, void *, unsigned, long, long, long, long);
void GOMP_parallel_loop_guided_start(tlg_abi_fn, void *, unsigned, long, long, long, long);
void GOMP_parallel_loop_runtime_start(tlg_abi_fn, void *, unsigned, long, long, long);
void GOMP_parallel_loop_static(tlg_abi_fn, void *, unsigned, long, long, long, long, unsigned);
void GOMP_parallel_loop_dynamic(tlg_abi_fn, void *, unsigned, long, long, long, long, unsigned);
void GOMP_parallel_loop_guided(tlg_abi_fn, void *, unsigned, long, long, long, long, unsigned);
void GOMP_parallel_loop_runtime(tlg_abi_fn, void *, unsigned, long, long, long, unsigned);
void GOMP_parallel_loop_nonmonotonic_dynamic(tlg_abi_fn, void *, unsigned, long, long, long, long, unsigned);
void GOMP_parallel_loop_nonmonotonic_guided(tlg_abi_fn, void *, unsigned, long, long, long, long, unsigned);
void GOMP_parallel_loop_nonmonotonic_runtime(tlg_abi_fn, void *, unsigned, long, long, long, unsigned);
void GOMP_parallel_loop_maybe_nonmonotonic_runtime(tlg_abi_fn, void *, unsigned, long, long, long, unsigned);
void GOMP_loop_end(void);
void GOMP_loop_end_nowait(void);
bool GOMP_loop_end_cancel(void);

/* loop_ull.c */
bool GOMP_loop_ull_static_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_dynamic_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_guided_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_runtime_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_nonmonotonic_dynamic_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *,
                                              tlg_ull_t *);
bool GOMP_loop_ull_nonmonotonic_guided_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *,
                                             tlg_ull_t *);
bool GOMP_loop_ull_nonmonotonic_runtime_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_maybe_nonmonotonic_runtime_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *,
                                                    tlg_ull_t *);
bool GOMP_loop_ull_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, long, tlg_ull_t, tlg_ull_t *, tlg_ull_t *,
                         uintptr_t *, void **);
bool GOMP_loop_ull_ordered_static_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_ordered_dynamic_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *,
                                         tlg_ull_t *);
bool GOMP_loop_ull_ordered_guided_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_ordered_runtime_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_ordered_start(bool, tlg_ull_t, tlg_ull_t, tlg_ull_t, long, tlg_ull_t, tlg_ull_t *, tlg_ull_t *,
                                 uintptr_t *, void **);
bool GOMP_loop_ull_static_next(tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_dynamic_next(tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_guided_next(tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_runtime_next(tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_nonmonotonic_dynamic_next(tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_nonmonotonic_guided_next(tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_nonmonotonic_runtime_next(tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_maybe_nonmonotonic_runtime_next(tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_ordered_static_next(tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_ordered_dynamic_next(tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_ordered_guided_next(tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_ordered_runtime_next(tlg_ull_t *, tlg_ull_t *);

/* ordered.c */
void GOMP_ordered_start(void);
void GOMP_ordered_end(void);

/* doacross.c */
bool GOMP_loop_doacross_static_start(unsigned, long *, long, long *, long *);
bool GOMP_loop_doacross_dynamic_start(unsigned, long *, long, long *, long *);
bool GOMP_loop_doacross_guided_start(unsigned, long *, long, long *, long *);
bool GOMP_loop_doacross_runtime_start(unsigned, long *, long *, long *);
bool GOMP_loop_doacross_start(unsigned, long *, long, long, long *, long *, uintptr_t *, void **);
bool GOMP_loop_ull_doacross_static_start(unsigned, tlg_ull_t *, tlg_ull_t, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_doacross_dynamic_start(unsigned, tlg_ull_t *, tlg_ull_t, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_doacross_guided_start(unsigned, tlg_ull_t *, tlg_ull_t, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_doacross_runtime_start(unsigned, tlg_ull_t *, tlg_ull_t *, tlg_ull_t *);
bool GOMP_loop_ull_doacross_start(unsigned, tlg_ull_t *, long, tlg_ull_t, tlg_ull_t *, tlg_ull_t *, uintptr_t *,
                                  void **);
void GOMP_doacross_post(long *);
void GOMP_doacross_wait(long, ...);
void GOMP_doacross_ull_post(tlg_ull_t *);
void GOMP_doacross_ull_wait(tlg_ull_t, ...);

/* parallel.c */
void GOMP_parallel_start(tlg_abi_fn, void *, unsigned);
void GOMP_parallel_end(void);
void GOMP_parallel(tlg_abi_fn, void *, unsigned, unsigned);
unsigned GOMP_parallel_reductions(tlg_abi_fn, void *, unsigned, unsigned);
bool GOMP_cancel(int, bool);
bool GOMP_cancellation_point(int);

/* task.c */
void GOMP_task(tlg_abi_fn, void *, void (*)(void *, void *), long, long, bool, unsigned, void **, int, void *);
void GOMP_taskloop(tlg_abi_fn, void *, void (*)(void *, void *), long, long, unsigned, unsigned long, int, long, long,
                   long);
void GOMP_taskloop_ull(tlg_abi_fn, void *, void (*)(void *, void *), long, long, unsigned, unsigned long, int,
                       tlg_ull_t, tlg_ull_t, tlg_ull_t);
void GOMP_taskwait(void);
void GOMP_taskwait_depend(void **);
void GOMP_taskyield(void);
void GOMP_taskgroup_start(void);
void GOMP_taskgroup_end(void);
void GOMP_taskgroup_reduction_register(uintptr_t *);
void GOMP_taskgroup_reduction_unregister(uintptr_t *);
void GOMP_task_reduction_remap(size_t, size_t, void **);
void GOMP_workshare_task_reduction_unregister(bool);

/* sections.c */
unsigned GOMP_sections_start(unsigned);
unsigned GOMP_sections2_start(unsigned, uintptr_t *, void **);
unsigned GOMP_sections_next(void);
void GOMP_parallel_sections_start(tlg_abi_fn, void *, unsigned, unsigned);
void GOMP_parallel_sections(tlg_abi_fn, void *, unsigned, unsigned, unsigned);
void GOMP_sections_end(void);
void GOMP_sections_end_nowait(void);
bool GOMP_sections_end_cancel(void);

/* single.c */
bool GOMP_single_start(void);
void *GOMP_single_copy_start(void);
void GOMP_single_copy_end(void *);
void GOMP_scope_start(uintptr_t *);

/* teams.c */
void GOMP_teams_reg(tlg_abi_fn, void *, unsigned, unsigned, unsigned);

/* target.c */
void GOMP_target_ext(int, tlg_abi_fn, size_t, void **, size_t *, unsigned short *, unsigned, void **, void **);
void GOMP_target(int, tlg_abi_fn, const void *, size_t, void **, size_t *, unsigned char *);
void GOMP_target_data_ext(int, size_t, void **, size_t *, unsigned short *);
void GOMP_target_data(int, const void *, size_t, void **, size_t *, unsigned char *);
void GOMP_target_end_data(void);
void GOMP_target_update_ext(int, size_t, void **, size_t *, unsigned short *, unsigned, void **);
void GOMP_target_update(int, const void *, size_t, void **, size_t *, unsigned char *);
void GOMP_target_enter_exit_data(int, size_t, void **, size_t *, unsigned short *, unsigned, void **);
bool GOMP_teams4(unsigned, unsigned, unsigned, bool);
void GOMP_teams(unsigned, unsigned);

/* alloc.c */
void *GOMP_alloc(size_t, size_t, uintptr_t);
void GOMP_free(void *, uintptr_t);

/* error.c */
void GOMP_error(const char *, size_t);
void GOMP_warning(const char *, size_t);

/* lock.c: each omp_*lock routine in its two symbol versions */
void tlg_init_lock_30(omp_lock_t *);
void tlg_destroy_lock_30(omp_lock_t *);
void tlg_set_lock_30(omp_lock_t *);
void tlg_unset_lock_30(omp_lock_t *);
int tlg_test_lock_30(omp_lock_t *);
void tlg_init_nest_lock_30(omp_nest_lock_t *);
void tlg_destroy_nest_lock_30(omp_nest_lock_t *);
void tlg_set_nest_lock_30(omp_nest_lock_t *);
void tlg_unset_nest_lock_30(omp_nest_lock_t *);
int tlg_test_nest_lock_30(omp_nest_lock_t *);
void tlg_init_lock_25(omp_lock_t *);
void tlg_destroy_lock_25(omp_lock_t *);
void tlg_set_lock_25(omp_lock_t *);
void tlg_unset_lock_25(omp_lock_t *);
int tlg_test_lock_25(omp_lock_t *);
void tlg_init_nest_lock_25(omp_nest_lock_t *);
void tlg_destroy_nest_lock_25(omp_nest_lock_t *);
void tlg_set_nest_lock_25(omp_nest_lock_t *);
void tlg_unset_nest_lock_25(omp_nest_lock_t *);
int tlg_test_nest_lock_25(omp_nest_lock_t *);

/* fortran.c */
int32_t omp_get_num_threads_(void);
int32_t omp_get_max_threads_(void);
int32_t omp_get_thread_num_(void);
int32_t omp_get_num_procs_(void);
int32_t omp_get_thread_limit_(void);
int32_t omp_get_max_active_levels_(void);
int32_t omp_get_supported_active_levels_(void);
int32_t omp_get_level_(void);
int32_t omp_get_active_level_(void);
int32_t omp_get_proc_bind_(void);
int32_t omp_get_num_places_(void);
int32_t omp_get_place_num_(void);
int32_t omp_get_partition_num_places_(void);
int32_t omp_get_default_device_(void);
int32_t omp_get_num_devices_(void);
int32_t omp_get_initial_device_(void);
int32_t omp_get_device_num_(void);
int32_t omp_get_num_teams_(void);
int32_t omp_get_team_num_(void);
int32_t omp_get_max_teams_(void);
int32_t omp_get_teams_thread_limit_(void);
int32_t omp_get_max_task_priority_(void);
int32_t omp_get_dynamic_(void);
int32_t omp_get_nested_(void);
int32_t omp_in_parallel_(void);
int32_t omp_in_final_(void);
int32_t omp_is_initial_device_(void);
int32_t omp_get_cancellation_(void);
void omp_set_num_threads_(const int32_t *);
void omp_set_num_threads_8_(const int64_t *);
void omp_set_dynamic_(const int32_t *);
void omp_set_dynamic_8_(const int64_t *);
void omp_set_nested_(const int32_t *);
void omp_set_nested_8_(const int64_t *);
void omp_set_max_active_levels_(const int32_t *);
void omp_set_max_active_levels_8_(const int64_t *);
void omp_set_default_device_(const int32_t *);
void omp_set_default_device_8_(const int64_t *);
void omp_set_num_teams_(const int32_t *);
void omp_set_num_teams_8_(const int64_t *);
void omp_set_teams_thread_limit_(const int32_t *);
void omp_set_teams_thread_limit_8_(const int64_t *);
double omp_get_wtime_(void);
double omp_get_wtick_(void);
void omp_set_schedule_(const int32_t *, const int32_t *);
void omp_set_schedule_8_(const int32_t *, const int64_t *);
void omp_get_schedule_(int32_t *, int32_t *);
void omp_get_schedule_8_(int32_t *, int64_t *);
int32_t omp_get_ancestor_thread_num_(const int32_t *);
int32_t omp_get_ancestor_thread_num_8_(const int64_t *);
int32_t omp_get_team_size_(const int32_t *);
int32_t omp_get_team_size_8_(const int64_t *);
int32_t omp_get_place_num_procs_(const int32_t *);
int32_t omp_get_place_num_procs_8_(const int64_t *);
void omp_get_place_proc_ids_(const int32_t *, int32_t *);
void omp_get_place_proc_ids_8_(const int64_t *, int64_t *);
void omp_get_partition_place_nums_(int32_t *);
void omp_get_partition_place_nums_8_(int64_t *);
void omp_display_env_(const int32_t *);
void omp_display_env_8_(const int64_t *);
int32_t omp_pause_resource_(const int32_t *, const int32_t *);
int32_t omp_pause_resource_all_(const int32_t *);
void omp_fulfill_event_(intptr_t);
intptr_t omp_init_allocator_(const intptr_t *, const int32_t *, const omp_alloctrait_t *);
intptr_t omp_init_allocator_8_(const intptr_t *, const int64_t *, const omp_alloctrait_t *);
void omp_destroy_allocator_(const intptr_t *);
void omp_set_default_allocator_(const intptr_t *);
intptr_t omp_get_default_allocator_(void);
void omp_set_affinity_format_(const char *, size_t);
int32_t omp_get_affinity_format_(char *, size_t);
void omp_display_affinity_(const char *, size_t);
int32_t omp_capture_affinity_(char *, const char *, size_t, size_t);
void tlg_f_init_lock_30(omp_lock_t *);
void tlg_f_destroy_lock_30(omp_lock_t *);
void tlg_f_set_lock_30(omp_lock_t *);
void tlg_f_unset_lock_30(omp_lock_t *);
int32_t tlg_f_test_lock_30(omp_lock_t *);
void tlg_f_init_nest_lock_30(omp_nest_lock_t **);
void tlg_f_destroy_nest_lock_30(omp_nest_lock_t **);
void tlg_f_set_nest_lock_30(omp_nest_lock_t **);
void tlg_f_unset_nest_lock_30(omp_nest_lock_t **);
int32_t tlg_f_test_nest_lock_30(omp_nest_lock_t **);

/* what the runtime tells programs about itself (docs/omp-ult.md) */
int threadlab_gomp_tls_mode(void);   /* 0 identity, 1 vp */
int threadlab_gomp_managed(void);    /* 1 while threadlab-rm manages the process */
int threadlab_gomp_active_vps(void); /* VPs running now (0 before the first team) */
int threadlab_gomp_vp(void);         /* the VP running the caller, -1 outside */
unsigned long threadlab_gomp_workdesc_regions(void); /* parallel loops run as work descriptors */
unsigned long threadlab_gomp_docked_starts(void);   /* workers that ran a region they waited for (docked) */

#endif
