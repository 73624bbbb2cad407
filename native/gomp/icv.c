/*
 * icv.c - the omp_* routines that read and set ICVs, processors, places,
 * devices (the host only), time, the affinity format and the teams ICVs.
 *
 * ICVs of the data environment live in the current task (the initial
 * thread's implicit task outside any parallel region), so that setting
 * one in a thread or a task affects that thread's or task's regions only,
 * as OpenMP says.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

TLG_EXPORT void omp_set_num_threads(int n)
{
    tlg_icv_cur()->nthreads = n > 0 ? (unsigned)n : 1;
}

TLG_EXPORT int omp_get_max_threads(void)
{
    return (int)tlg_icv_cur()->nthreads;
}

TLG_EXPORT void omp_set_dynamic(int dynamic)
{
    tlg_icv *icv = tlg_icv_cur();
    icv->dyn = dynamic != 0;
    icv->dyn_set = 1;
}

TLG_EXPORT int omp_get_dynamic(void)
{
    return tlg_dyn(tlg_icv_cur());
}

TLG_EXPORT void omp_set_nested(int nested)
{
    tlg_icv *icv = tlg_icv_cur();
    if (nested)
        icv->max_active_levels = icv->max_active_levels > 1 ? icv->max_active_levels : 255;
    else
        icv->max_active_levels = 1;
}

TLG_EXPORT int omp_get_nested(void)
{
    return tlg_icv_cur()->max_active_levels > 1;
}

TLG_EXPORT void omp_set_schedule(omp_sched_t kind, int chunk)
{
    tlg_icv *icv = tlg_icv_cur();
    unsigned k = (unsigned)kind & ~(unsigned)omp_sched_monotonic;
    if (k < TLG_SCHED_STATIC || k > TLG_SCHED_AUTO)
        return; /* an unknown kind: ignored (OpenMP: implementation defined) */
    if (chunk <= 0)
        chunk = k == TLG_SCHED_STATIC ? 0 : 1;
    if (k == TLG_SCHED_AUTO)
        chunk = 0;
    icv->run_sched = (unsigned)kind;
    icv->run_chunk = chunk;
}

TLG_EXPORT void omp_get_schedule(omp_sched_t *kind, int *chunk)
{
    tlg_icv *icv = tlg_icv_cur();
    *kind = (omp_sched_t)icv->run_sched;
    *chunk = (int)icv->run_chunk;
}

TLG_EXPORT int omp_get_thread_limit(void)
{
    return (int)tlg_icv_cur()->thread_limit;
}

TLG_EXPORT void omp_set_max_active_levels(int levels)
{
    if (levels >= 0)
        tlg_icv_cur()->max_active_levels = levels > 255 ? 255 : (unsigned)levels;
}

TLG_EXPORT int omp_get_max_active_levels(void)
{
    return (int)tlg_icv_cur()->max_active_levels;
}

TLG_EXPORT int omp_get_supported_active_levels(void)
{
    return 255;
}

TLG_EXPORT int omp_get_cancellation(void)
{
    return tlg_env_v.cancellation;
}

TLG_EXPORT omp_proc_bind_t omp_get_proc_bind(void)
{
    return (omp_proc_bind_t)tlg_icv_cur()->bind;
}

/* The process's CPUs, as libgomp answers: not the calling thread's mask,
 * which is one CPU on a bound VP. */
TLG_EXPORT int omp_get_num_procs(void)
{
    return (int)tlg_env_v.ncpus;
}

TLG_EXPORT int omp_pause_resource(omp_pause_resource_t kind, int device_num)
{
    (void)kind;
    /* the host only; nothing is held that a pause would give back */
    return device_num == omp_get_initial_device() ? 0 : -1;
}

TLG_EXPORT int omp_pause_resource_all(omp_pause_resource_t kind)
{
    (void)kind;
    return 0;
}

/* ---- time ---------------------------------------------------------------------- */

TLG_EXPORT double omp_get_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

TLG_EXPORT double omp_get_wtick(void)
{
    struct timespec ts;
    clock_getres(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- devices: the host is the only one ----------------------------------------- */

TLG_EXPORT void omp_set_default_device(int device)
{
    tlg_icv_cur()->default_device = device;
}

TLG_EXPORT int omp_get_default_device(void)
{
    return tlg_icv_cur()->default_device;
}

TLG_EXPORT int omp_get_num_devices(void)
{
    return 0;
}

TLG_EXPORT int omp_get_initial_device(void)
{
    return omp_get_num_devices();
}

TLG_EXPORT int omp_get_device_num(void)
{
    return omp_get_initial_device();
}

TLG_EXPORT int omp_is_initial_device(void)
{
    return 1;
}

/* ---- host teams ----------------------------------------------------------------- */

static int nteams_var, teams_thread_limit_var;

TLG_EXPORT int omp_get_num_teams(void)
{
    tlg_thread *thr = tlg_self();
    return thr->num_teams ? (int)thr->num_teams : 1;
}

TLG_EXPORT int omp_get_team_num(void)
{
    return (int)tlg_self()->team_num;
}

TLG_EXPORT void omp_set_num_teams(int n)
{
    if (n > 0)
        nteams_var = n;
}

TLG_EXPORT int omp_get_max_teams(void)
{
    return nteams_var;
}

TLG_EXPORT void omp_set_teams_thread_limit(int n)
{
    if (n >= 0)
        teams_thread_limit_var = n;
}

TLG_EXPORT int omp_get_teams_thread_limit(void)
{
    return teams_thread_limit_var;
}

/* ---- places: one per allowed CPU once threads are bound -------------------------- */

TLG_EXPORT int omp_get_num_places(void)
{
    return (int)tlg_env_v.nplaces;
}

TLG_EXPORT int omp_get_place_num_procs(int place)
{
    return place >= 0 && (unsigned)place < tlg_env_v.nplaces ? 1 : 0;
}

TLG_EXPORT void omp_get_place_proc_ids(int place, int *ids)
{
    if (place >= 0 && (unsigned)place < tlg_env_v.nplaces)
        ids[0] = tlg_env_v.place_cpu[place];
}

/* The place of the VP that runs the caller now (VP i is pinned to the
 * i-th allowed CPU when threads are bound). */
TLG_EXPORT int omp_get_place_num(void)
{
    if (!tlg_env_v.nplaces)
        return -1;
    int vp = tl_ult_vp_id();
    return vp < 0 ? -1 : (int)((unsigned)vp % tlg_env_v.nplaces);
}

TLG_EXPORT int omp_get_partition_num_places(void)
{
    return (int)tlg_env_v.nplaces;
}

TLG_EXPORT void omp_get_partition_place_nums(int *nums)
{
    for (unsigned i = 0; i < tlg_env_v.nplaces; i++)
        nums[i] = (int)i;
}

/* ---- affinity format ------------------------------------------------------------- */

static char affinity_format[256] = "level %L thread %i affinity %A";

TLG_EXPORT void omp_set_affinity_format(const char *format)
{
    snprintf(affinity_format, sizeof affinity_format, "%s", format);
}

TLG_EXPORT size_t omp_get_affinity_format(char *buffer, size_t size)
{
    size_t n = strlen(affinity_format);
    if (buffer && size)
        snprintf(buffer, size, "%s", affinity_format);
    return n;
}

/* The format's fields: %L level, %n or %i thread number, %N team size,
 * %a ancestor thread number, %P process id, %A the VP's CPU (the place
 * where the thread runs now), %H host name, %% a percent sign. */
TLG_EXPORT size_t omp_capture_affinity(char *buffer, size_t size, const char *format)
{
    if (!format || !*format)
        format = affinity_format;
    char out[1024];
    size_t k = 0;
    for (const char *p = format; *p && k + 64 < sizeof out; p++) {
        if (*p != '%' || !p[1]) {
            out[k++] = *p;
            continue;
        }
        p++;
        int n = 0;
        switch (*p) {
        case 'L':
            n = snprintf(out + k, sizeof out - k, "%d", omp_get_level());
            break;
        case 'n':
        case 'i':
            n = snprintf(out + k, sizeof out - k, "%d", omp_get_thread_num());
            break;
        case 'N':
            n = snprintf(out + k, sizeof out - k, "%d", omp_get_num_threads());
            break;
        case 'a':
            n = snprintf(out + k, sizeof out - k, "%d", omp_get_ancestor_thread_num(omp_get_level() - 1));
            break;
        case 'P':
            n = snprintf(out + k, sizeof out - k, "%d", (int)getpid());
            break;
        case 'A':
            n = snprintf(out + k, sizeof out - k, "%d", sched_getcpu());
            break;
        case 'H': {
            char host[64] = "?";
            gethostname(host, sizeof host);
            n = snprintf(out + k, sizeof out - k, "%s", host);
            break;
        }
        default:
            out[k++] = '%';
            n = 0;
            if (*p != '%')
                out[k++] = *p;
            break;
        }
        k += n > 0 ? (size_t)n : 0;
    }
    out[k] = 0;
    if (buffer && size)
        snprintf(buffer, size, "%s", out);
    return k;
}

TLG_EXPORT void omp_display_affinity(const char *format)
{
    char buf[1024];
    omp_capture_affinity(buf, sizeof buf, format);
    fprintf(stderr, "%s\n", buf);
}

TLG_EXPORT void omp_display_env(int verbose)
{
    tlg_display_env(verbose);
}
