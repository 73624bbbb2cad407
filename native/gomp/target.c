/*
 * target.c - target constructs and device memory, on a machine whose only
 * device is the host: what libgomp 12 does when it finds no offload device
 * (its "host fallback").
 *
 * A target region runs fn(hostaddrs) at once on the encountering thread,
 * as the initial thread of a contention group of its own: the thread's
 * state is set aside for a new one (level 0, no team, the ICVs of a new
 * initial thread: the environment's, with thread_limit from the
 * construct), then restored. Mapped variables are the host's own; only
 * firstprivate ones are copied, since the body may write its copy. A
 * parallel region in the body starts a top-level team of that group,
 * whose threads take TLS identities from the pool (team.c: the top-level
 * identities may be worn by the team that encountered the target).
 *
 * nowait and depend: the region waits for the earlier sibling tasks it
 * depends on, then runs at once, as an undeferred task would (OpenMP
 * allows a target task to be undeferred). The data constructs (target
 * data, enter/exit data, update) map nothing; they only wait for their
 * dependences. teams in a target region (GOMP_teams4) runs its teams one
 * after the other on the host, as host teams do (teams.c).
 *
 * Device numbers: the host is omp_get_initial_device() (0, the count of
 * devices), and every other number (GOMP_DEVICE_ICV resolved through
 * default-device-var, GOMP_DEVICE_HOST_FALLBACK, a number no device has)
 * falls back to it, unless OMP_TARGET_OFFLOAD=mandatory: then a number
 * that is neither the host's nor the explicit fallback is an error, as in
 * libgomp. The device memory routines serve the host (malloc, memcpy) and
 * refuse every other number.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <errno.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* GCC's gomp-constants.h */
#define DEVICE_ICV (-1)
#define DEVICE_HOST_FALLBACK (-2)
#define MAP_FIRSTPRIVATE 0x0c
#define ARG_DEVICE_MASK 0x7f
#define ARG_DEVICE_ALL 0
#define ARG_SUBSEQUENT_PARAM (1 << 7)
#define ARG_ID_MASK (0xff << 8)
#define ARG_THREAD_LIMIT (2 << 8)
#define ARG_VALUE_SHIFT 16

/* A device number that is not the host's: no device has it. libgomp
 * looks it up, and under OMP_TARGET_OFFLOAD=mandatory that is the
 * error below. */
static void no_such_device(int device)
{
    if (tlg_env_v.target_offload == TLG_OFFLOAD_MANDATORY)
        tlg_fatal("OMP_TARGET_OFFLOAD is set to MANDATORY, but device %d not found (the host, device %d, "
                  "is the only one)",
                  device, TLG_INITIAL_DEVICE);
}

/* A construct's device: whichever, the construct runs on the host. */
static void construct_device(int device)
{
    if (device == DEVICE_ICV)
        device = tlg_icv_cur()->default_device;
    if (device != TLG_INITIAL_DEVICE && device != DEVICE_HOST_FALLBACK)
        no_such_device(device);
}

/* A memory routine's device number: 1 for the host; 0 for any other
 * (a negative one is refused before any look-up, as in libgomp). */
static int host_device(int device)
{
    if (device == TLG_INITIAL_DEVICE)
        return 1;
    if (device > 0)
        no_such_device(device);
    return 0;
}

/* thread_limit among the target's arguments (GOMP_TARGET_ARG_*): 0 when
 * absent, -1 when only the device can tell. */
static long arg_thread_limit(void **args)
{
    while (args && *args) {
        intptr_t id = (intptr_t)*args++, val;
        if (id & ARG_SUBSEQUENT_PARAM)
            val = (intptr_t)*args++;
        else
            val = id >> ARG_VALUE_SHIFT;
        if ((id & ARG_DEVICE_MASK) == ARG_DEVICE_ALL && (id & ARG_ID_MASK) == ARG_THREAD_LIMIT)
            return (long)val;
    }
    return 0;
}

/* thread-limit-var from a clause's value (0: unchanged); a value beyond
 * int, or one only a device could know (-1), means no limit (INT_MAX). */
static void set_thread_limit(tlg_icv *icv, long limit)
{
    if (limit)
        icv->thread_limit = limit < 0 || limit > INT_MAX ? INT_MAX : (unsigned)limit;
}

/* The body as the initial thread of a new contention group. */
static void fallback(tlg_fn fn, void **hostaddrs, void **args)
{
    tlg_thread *encountering = tlg_self();
    tlg_icv icv = tlg_env_v.icv;
    set_thread_limit(&icv, arg_thread_limit(args));
    tlg_cg group;
    atomic_init(&group.busy, 1);
    group.top = encountering->level == 0 && (!encountering->cg || encountering->cg->top);
    tlg_thread *initial = tlg_thread_new(&icv, &group);
    tlg_set_current(initial);
    fn(hostaddrs);
    tlg_set_current(encountering);
    tlg_thread_free(initial);
}

/* Firstprivate variables are passed by address: the body gets copies
 * (hostaddrs[i] then points to its copy), made as the construct is
 * encountered. Returns the bytes the copies need, alignment slack
 * included (0: none); with buf, makes them there. */
static size_t firstprivate(size_t mapnum, void **hostaddrs, const size_t *sizes, const unsigned short *kinds, char *buf)
{
    /* the kind's high byte is the variable's alignment (log2) */
    size_t align = 1, size = 0;
    for (size_t i = 0; i < mapnum; i++)
        if ((kinds[i] & 0xff) == MAP_FIRSTPRIVATE && (size_t)1 << (kinds[i] >> 8) > align)
            align = (size_t)1 << (kinds[i] >> 8);
    char *base = (char *)(((uintptr_t)buf + align - 1) & ~(uintptr_t)(align - 1));
    for (size_t i = 0; i < mapnum; i++) {
        if ((kinds[i] & 0xff) != MAP_FIRSTPRIVATE)
            continue;
        size_t a = (size_t)1 << (kinds[i] >> 8);
        size = (size + a - 1) & ~(a - 1);
        if (buf && hostaddrs[i]) {
            memcpy(base + size, hostaddrs[i], sizes[i]);
            hostaddrs[i] = base + size;
        }
        size += sizes[i];
    }
    return size ? size + align - 1 : 0;
}

TLG_EXPORT void GOMP_target_ext(int device, tlg_fn fn, size_t mapnum, void **hostaddrs, size_t *sizes,
                                unsigned short *kinds, unsigned flags, void **depend, void **args)
{
    (void)flags; /* nowait: it runs at once all the same (see the top) */
    construct_device(device);
    size_t need = firstprivate(mapnum, hostaddrs, sizes, kinds, NULL);
    char small[512];
    char *copies = need <= sizeof small ? small : tlg_malloc(need);
    if (need)
        firstprivate(mapnum, hostaddrs, sizes, kinds, copies);
    if (depend)
        tlg_wait_deps(depend);
    fallback(fn, hostaddrs, args);
    if (copies != small)
        free(copies);
}

/* GOMP 4.0's form: no firstprivate kinds, no arguments. */
TLG_EXPORT void GOMP_target(int device, tlg_fn fn, const void *unused, size_t mapnum, void **hostaddrs,
                            size_t *sizes, unsigned char *kinds)
{
    (void)unused, (void)mapnum, (void)sizes, (void)kinds;
    construct_device(device);
    fallback(fn, hostaddrs, NULL);
}

/* ---- data constructs: nothing to map ------------------------------------------- */

/* With depend, a data construct waits for its predecessors, as the
 * undeferred target task it stands for would (libgomp's fallback waits
 * too, or defers a task that does nothing). */
static void data_construct(int device, void **depend)
{
    construct_device(device);
    if (depend)
        tlg_wait_deps(depend);
}

TLG_EXPORT void GOMP_target_data_ext(int device, size_t mapnum, void **hostaddrs, size_t *sizes,
                                     unsigned short *kinds)
{
    (void)mapnum, (void)hostaddrs, (void)sizes, (void)kinds;
    data_construct(device, NULL);
}

TLG_EXPORT void GOMP_target_data(int device, const void *unused, size_t mapnum, void **hostaddrs, size_t *sizes,
                                 unsigned char *kinds)
{
    (void)unused, (void)mapnum, (void)hostaddrs, (void)sizes, (void)kinds;
    data_construct(device, NULL);
}

TLG_EXPORT void GOMP_target_end_data(void)
{
}

TLG_EXPORT void GOMP_target_update(int device, const void *unused, size_t mapnum, void **hostaddrs, size_t *sizes,
                                   unsigned char *kinds)
{
    (void)unused, (void)mapnum, (void)hostaddrs, (void)sizes, (void)kinds;
    data_construct(device, NULL);
}

TLG_EXPORT void GOMP_target_update_ext(int device, size_t mapnum, void **hostaddrs, size_t *sizes,
                                       unsigned short *kinds, unsigned flags, void **depend)
{
    (void)mapnum, (void)hostaddrs, (void)sizes, (void)kinds, (void)flags;
    data_construct(device, depend);
}

TLG_EXPORT void GOMP_target_enter_exit_data(int device, size_t mapnum, void **hostaddrs, size_t *sizes,
                                            unsigned short *kinds, unsigned flags, void **depend)
{
    (void)mapnum, (void)hostaddrs, (void)sizes, (void)kinds, (void)flags;
    data_construct(device, depend);
}

/* ---- teams in a target region ---------------------------------------------------- */

/* GCC loops on it: first for the first team (true), then after each team,
 * true while another is to run. Without num_teams, one team (libgomp's
 * host choice here, not nteams-var). */
TLG_EXPORT bool GOMP_teams4(unsigned num_teams_low, unsigned num_teams_high, unsigned thread_limit, bool first)
{
    (void)num_teams_high;
    tlg_thread *thr = tlg_self();
    if (first) {
        set_thread_limit(&thr->task->icv, (long)thread_limit);
        thr->num_teams = num_teams_low ? num_teams_low : 1;
        thr->team_num = 0;
        return true;
    }
    if (thr->team_num + 1 >= thr->num_teams)
        return false;
    thr->team_num++;
    return true;
}

/* GOMP 4.0's form: the teams are one team. */
TLG_EXPORT void GOMP_teams(unsigned num_teams, unsigned thread_limit)
{
    (void)num_teams;
    set_thread_limit(tlg_icv_cur(), (long)thread_limit);
}

/* ---- device memory: the host's ------------------------------------------------- */

TLG_EXPORT void *omp_target_alloc(size_t size, int device_num)
{
    return host_device(device_num) ? malloc(size) : NULL;
}

TLG_EXPORT void omp_target_free(void *device_ptr, int device_num)
{
    if (device_ptr && host_device(device_num))
        free(device_ptr);
}

/* Everything is present on the host; NULL anywhere (as libgomp answers). */
TLG_EXPORT int omp_target_is_present(const void *ptr, int device_num)
{
    return !ptr || host_device(device_num);
}

TLG_EXPORT int omp_target_memcpy(void *dst, const void *src, size_t length, size_t dst_offset, size_t src_offset,
                                 int dst_device_num, int src_device_num)
{
    if (!host_device(dst_device_num) || !host_device(src_device_num))
        return EINVAL;
    memcpy((char *)dst + dst_offset, (const char *)src + src_offset, length);
    return 0;
}

/* One dimension of the rectangle after another: volume[0] slices of the
 * rest, each slice the product of the dimensions below (in bytes). */
static int copy_rect(char *dst, const char *src, size_t element_size, int num_dims, const size_t *volume,
                     const size_t *dst_offsets, const size_t *src_offsets, const size_t *dst_dimensions,
                     const size_t *src_dimensions)
{
    size_t dst_slice = element_size, src_slice = element_size, dst_off, src_off;
    for (int i = 1; i < num_dims; i++)
        if (__builtin_mul_overflow(dst_slice, dst_dimensions[i], &dst_slice) ||
            __builtin_mul_overflow(src_slice, src_dimensions[i], &src_slice))
            return EINVAL;
    if (__builtin_mul_overflow(dst_slice, dst_offsets[0], &dst_off) ||
        __builtin_mul_overflow(src_slice, src_offsets[0], &src_off))
        return EINVAL;
    if (num_dims == 1) {
        size_t length;
        if (__builtin_mul_overflow(element_size, volume[0], &length))
            return EINVAL;
        memcpy(dst + dst_off, src + src_off, length);
        return 0;
    }
    for (size_t j = 0; j < volume[0]; j++, dst_off += dst_slice, src_off += src_slice) {
        int err = copy_rect(dst + dst_off, src + src_off, element_size, num_dims - 1, volume + 1, dst_offsets + 1,
                            src_offsets + 1, dst_dimensions + 1, src_dimensions + 1);
        if (err)
            return err;
    }
    return 0;
}

/* NULL for both dst and src asks how many dimensions may be copied: any
 * number (INT_MAX, as libgomp answers). */
TLG_EXPORT int omp_target_memcpy_rect(void *dst, const void *src, size_t element_size, int num_dims,
                                      const size_t *volume, const size_t *dst_offsets, const size_t *src_offsets,
                                      const size_t *dst_dimensions, const size_t *src_dimensions, int dst_device_num,
                                      int src_device_num)
{
    if (!dst && !src)
        return INT_MAX;
    if (!host_device(dst_device_num) || !host_device(src_device_num) || num_dims < 1)
        return EINVAL;
    return copy_rect(dst, src, element_size, num_dims, volume, dst_offsets, src_offsets, dst_dimensions,
                     src_dimensions);
}

/* The host's memory is not a device's to associate (libgomp refuses
 * it too: EINVAL), and no other device exists. */
TLG_EXPORT int omp_target_associate_ptr(const void *host_ptr, const void *device_ptr, size_t size,
                                        size_t device_offset, int device_num)
{
    (void)host_ptr, (void)device_ptr, (void)size, (void)device_offset;
    host_device(device_num);
    return EINVAL;
}

TLG_EXPORT int omp_target_disassociate_ptr(const void *ptr, int device_num)
{
    (void)ptr;
    host_device(device_num);
    return EINVAL;
}
