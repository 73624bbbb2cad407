/*
 * fortran.c - the entries gfortran programs call (omp_lib): arguments by
 * reference, LOGICAL(4) results as int32_t, and _8_ variants for
 * -fdefault-integer-8. They forward to the C routines.
 *
 * Locks: a Fortran omp_lock_kind integer (4 bytes) is the lock word
 * itself; omp_nest_lock_kind is 8 bytes, too small for a nestable lock
 * (16 bytes), so it holds a pointer to one, allocated by init and freed by
 * destroy (libgomp's layout, which binaries depend on).
 */
#define _GNU_SOURCE
#include "gomp.h"
#include "abi.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* An INTEGER(8) argument as an int: clamped, so that a value out of
 * int's range stays out of every routine's valid range (-HUGE(0_8) must
 * not become a valid level by truncation). */
static inline int to_int(int64_t v)
{
    return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
}

#define F_GET_INT(fname, cname)                                                                             \
    TLG_EXPORT int32_t fname(void)                                                                          \
    {                                                                                                       \
        return (int32_t)cname();                                                                            \
    }
#define F_GET_BOOL(fname, cname)                                                                            \
    TLG_EXPORT int32_t fname(void)                                                                          \
    {                                                                                                       \
        return cname() ? 1 : 0;                                                                             \
    }
#define F_SET(fname, cname)                                                                                 \
    TLG_EXPORT void fname(const int32_t *v)                                                                 \
    {                                                                                                       \
        cname((int)*v);                                                                                     \
    }                                                                                                       \
    TLG_EXPORT void fname##8_(const int64_t *v)                                                            \
    {                                                                                                       \
        cname(to_int(*v));                                                                                  \
    }

F_GET_INT(omp_get_num_threads_, omp_get_num_threads)
F_GET_INT(omp_get_max_threads_, omp_get_max_threads)
F_GET_INT(omp_get_thread_num_, omp_get_thread_num)
F_GET_INT(omp_get_num_procs_, omp_get_num_procs)
F_GET_INT(omp_get_thread_limit_, omp_get_thread_limit)
F_GET_INT(omp_get_max_active_levels_, omp_get_max_active_levels)
F_GET_INT(omp_get_supported_active_levels_, omp_get_supported_active_levels)
F_GET_INT(omp_get_level_, omp_get_level)
F_GET_INT(omp_get_active_level_, omp_get_active_level)
F_GET_INT(omp_get_proc_bind_, omp_get_proc_bind)
F_GET_INT(omp_get_num_places_, omp_get_num_places)
F_GET_INT(omp_get_place_num_, omp_get_place_num)
F_GET_INT(omp_get_partition_num_places_, omp_get_partition_num_places)
F_GET_INT(omp_get_default_device_, omp_get_default_device)
F_GET_INT(omp_get_num_devices_, omp_get_num_devices)
F_GET_INT(omp_get_initial_device_, omp_get_initial_device)
F_GET_INT(omp_get_device_num_, omp_get_device_num)
F_GET_INT(omp_get_num_teams_, omp_get_num_teams)
F_GET_INT(omp_get_team_num_, omp_get_team_num)
F_GET_INT(omp_get_max_teams_, omp_get_max_teams)
F_GET_INT(omp_get_teams_thread_limit_, omp_get_teams_thread_limit)
F_GET_INT(omp_get_max_task_priority_, omp_get_max_task_priority)
F_GET_BOOL(omp_get_dynamic_, omp_get_dynamic)
F_GET_BOOL(omp_get_nested_, omp_get_nested)
F_GET_BOOL(omp_in_parallel_, omp_in_parallel)
F_GET_BOOL(omp_in_final_, omp_in_final)
F_GET_BOOL(omp_is_initial_device_, omp_is_initial_device)
F_GET_BOOL(omp_get_cancellation_, omp_get_cancellation)

static void set_dynamic(int v)
{
    omp_set_dynamic(v != 0);
}

static void set_nested(int v)
{
    omp_set_nested(v != 0);
}

F_SET(omp_set_num_threads_, omp_set_num_threads)
F_SET(omp_set_dynamic_, set_dynamic)
F_SET(omp_set_nested_, set_nested)
F_SET(omp_set_max_active_levels_, omp_set_max_active_levels)
F_SET(omp_set_default_device_, omp_set_default_device)
F_SET(omp_set_num_teams_, omp_set_num_teams)
F_SET(omp_set_teams_thread_limit_, omp_set_teams_thread_limit)

TLG_EXPORT double omp_get_wtime_(void)
{
    return omp_get_wtime();
}

TLG_EXPORT double omp_get_wtick_(void)
{
    return omp_get_wtick();
}

TLG_EXPORT void omp_set_schedule_(const int32_t *kind, const int32_t *chunk)
{
    omp_set_schedule((omp_sched_t)*kind, (int)*chunk);
}

TLG_EXPORT void omp_set_schedule_8_(const int32_t *kind, const int64_t *chunk)
{
    omp_set_schedule((omp_sched_t)*kind, to_int(*chunk));
}

TLG_EXPORT void omp_get_schedule_(int32_t *kind, int32_t *chunk)
{
    omp_sched_t k;
    int c;
    omp_get_schedule(&k, &c);
    *kind = (int32_t)k;
    *chunk = c;
}

TLG_EXPORT void omp_get_schedule_8_(int32_t *kind, int64_t *chunk)
{
    omp_sched_t k;
    int c;
    omp_get_schedule(&k, &c);
    *kind = (int32_t)k;
    *chunk = c;
}

TLG_EXPORT int32_t omp_get_ancestor_thread_num_(const int32_t *level)
{
    return omp_get_ancestor_thread_num(*level);
}

TLG_EXPORT int32_t omp_get_ancestor_thread_num_8_(const int64_t *level)
{
    return omp_get_ancestor_thread_num(to_int(*level));
}

TLG_EXPORT int32_t omp_get_team_size_(const int32_t *level)
{
    return omp_get_team_size(*level);
}

TLG_EXPORT int32_t omp_get_team_size_8_(const int64_t *level)
{
    return omp_get_team_size(to_int(*level));
}

TLG_EXPORT int32_t omp_get_place_num_procs_(const int32_t *place)
{
    return omp_get_place_num_procs(*place);
}

TLG_EXPORT int32_t omp_get_place_num_procs_8_(const int64_t *place)
{
    return omp_get_place_num_procs(to_int(*place));
}

TLG_EXPORT void omp_get_place_proc_ids_(const int32_t *place, int32_t *ids)
{
    int id = -1;
    omp_get_place_proc_ids(*place, &id);
    if (omp_get_place_num_procs(*place) > 0)
        ids[0] = id;
}

TLG_EXPORT void omp_get_place_proc_ids_8_(const int64_t *place, int64_t *ids)
{
    int p = to_int(*place), id = -1;
    omp_get_place_proc_ids(p, &id);
    if (omp_get_place_num_procs(p) > 0)
        ids[0] = id;
}

TLG_EXPORT void omp_get_partition_place_nums_(int32_t *nums)
{
    for (int i = 0; i < omp_get_partition_num_places(); i++)
        nums[i] = i;
}

TLG_EXPORT void omp_get_partition_place_nums_8_(int64_t *nums)
{
    for (int i = 0; i < omp_get_partition_num_places(); i++)
        nums[i] = i;
}

TLG_EXPORT void omp_display_env_(const int32_t *verbose)
{
    omp_display_env(*verbose != 0);
}

TLG_EXPORT void omp_display_env_8_(const int64_t *verbose)
{
    omp_display_env(*verbose != 0);
}

TLG_EXPORT int32_t omp_pause_resource_(const int32_t *kind, const int32_t *device_num)
{
    return omp_pause_resource((omp_pause_resource_t)*kind, *device_num);
}

TLG_EXPORT int32_t omp_pause_resource_all_(const int32_t *kind)
{
    return omp_pause_resource_all((omp_pause_resource_t)*kind);
}

TLG_EXPORT void omp_fulfill_event_(intptr_t event)
{
    omp_fulfill_event((omp_event_handle_t)event);
}

/* ---- allocators: handles are integer(c_intptr_t), omp_alloctrait has C's layout ---- */

TLG_EXPORT intptr_t omp_init_allocator_(const intptr_t *memspace, const int32_t *ntraits,
                                        const omp_alloctrait_t *traits)
{
    return (intptr_t)omp_init_allocator((omp_memspace_handle_t)*memspace, (int)*ntraits, traits);
}

TLG_EXPORT intptr_t omp_init_allocator_8_(const intptr_t *memspace, const int64_t *ntraits,
                                          const omp_alloctrait_t *traits)
{
    return (intptr_t)omp_init_allocator((omp_memspace_handle_t)*memspace, to_int(*ntraits), traits);
}

TLG_EXPORT void omp_destroy_allocator_(const intptr_t *allocator)
{
    omp_destroy_allocator((omp_allocator_handle_t)*allocator);
}

TLG_EXPORT void omp_set_default_allocator_(const intptr_t *allocator)
{
    omp_set_default_allocator((omp_allocator_handle_t)*allocator);
}

TLG_EXPORT intptr_t omp_get_default_allocator_(void)
{
    return (intptr_t)omp_get_default_allocator();
}

/* ---- affinity format: CHARACTER arguments come with their length after
 * the others (gfortran's hidden arguments), unterminated and blank-padded ---- */

TLG_EXPORT void omp_set_affinity_format_(const char *format, size_t format_len)
{
    tlg_set_affinity_format(format, format_len);
}

/* The format in buffer, blank-padded (or cut) to its length; returns the
 * format's length. */
TLG_EXPORT int32_t omp_get_affinity_format_(char *buffer, size_t buffer_len)
{
    const char *f = tlg_env_v.affinity_format;
    size_t n = strlen(f);
    size_t k = n < buffer_len ? n : buffer_len;
    memcpy(buffer, f, k);
    memset(buffer + k, ' ', buffer_len - k);
    return (int32_t)n;
}

/* A format argument of length 0 means affinity-format-var; any other is
 * taken whole, trailing blanks included, as libgomp does. */
static char *f_format(const char *format, size_t format_len)
{
    if (!format_len)
        return NULL;
    char *f = tlg_malloc(format_len + 1);
    memcpy(f, format, format_len);
    f[format_len] = 0;
    return f;
}

TLG_EXPORT void omp_display_affinity_(const char *format, size_t format_len)
{
    char *f = f_format(format, format_len);
    tlg_print_affinity(f ? f : tlg_env_v.affinity_format);
    free(f);
}

TLG_EXPORT int32_t omp_capture_affinity_(char *buffer, const char *format, size_t buffer_len, size_t format_len)
{
    char *f = f_format(format, format_len);
    size_t n = tlg_format_affinity(buffer, buffer_len, f ? f : tlg_env_v.affinity_format);
    free(f);
    if (n < buffer_len)
        memset(buffer + n, ' ', buffer_len - n);
    return (int32_t)n;
}

/* ---- locks (OMP_3.0; the OMP_1.0 Fortran locks fail by name) ---------------------- */

#define F30(name) __attribute__((symver(name "@@OMP_3.0")))

TLG_EXPORT F30("omp_init_lock_") void tlg_f_init_lock_30(omp_lock_t *lock)
{
    tlg_init_lock_30(lock);
}

TLG_EXPORT F30("omp_destroy_lock_") void tlg_f_destroy_lock_30(omp_lock_t *lock)
{
    tlg_destroy_lock_30(lock);
}

TLG_EXPORT F30("omp_set_lock_") void tlg_f_set_lock_30(omp_lock_t *lock)
{
    tlg_set_lock_30(lock);
}

TLG_EXPORT F30("omp_unset_lock_") void tlg_f_unset_lock_30(omp_lock_t *lock)
{
    tlg_unset_lock_30(lock);
}

TLG_EXPORT F30("omp_test_lock_") int32_t tlg_f_test_lock_30(omp_lock_t *lock)
{
    return tlg_test_lock_30(lock) ? 1 : 0;
}

TLG_EXPORT F30("omp_init_nest_lock_") void tlg_f_init_nest_lock_30(omp_nest_lock_t **lock)
{
    *lock = tlg_malloc(sizeof(omp_nest_lock_t));
    tlg_init_nest_lock_30(*lock);
}

TLG_EXPORT F30("omp_destroy_nest_lock_") void tlg_f_destroy_nest_lock_30(omp_nest_lock_t **lock)
{
    tlg_destroy_nest_lock_30(*lock);
    free(*lock);
    *lock = NULL;
}

TLG_EXPORT F30("omp_set_nest_lock_") void tlg_f_set_nest_lock_30(omp_nest_lock_t **lock)
{
    tlg_set_nest_lock_30(*lock);
}

TLG_EXPORT F30("omp_unset_nest_lock_") void tlg_f_unset_nest_lock_30(omp_nest_lock_t **lock)
{
    tlg_unset_nest_lock_30(*lock);
}

TLG_EXPORT F30("omp_test_nest_lock_") int32_t tlg_f_test_nest_lock_30(omp_nest_lock_t **lock)
{
    return tlg_test_nest_lock_30(*lock);
}
