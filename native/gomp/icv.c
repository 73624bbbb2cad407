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
    tlg_thread *thr = tlg_self();
    unsigned n = thr->task->icv.nthreads;
    if (thr->active_level == 0)
        thr->promised = n;
    return (int)n;
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
    icv->run_sched = (unsigned)kind;
    /* auto ignores its chunk and keeps the one set before, as libgomp
     * does (its loops run static; omp_get_schedule reports the chunk) */
    if (k != TLG_SCHED_AUTO)
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

/* Soft and hard alike: the OpenMP threads' identities go (the ULTs
 * already end with their regions; the VPs stay, as they would for the
 * next region anyway). */
TLG_EXPORT int omp_pause_resource(omp_pause_resource_t kind, int device_num)
{
    (void)kind;
    return device_num == TLG_INITIAL_DEVICE ? tlg_pause() : -1;
}

TLG_EXPORT int omp_pause_resource_all(omp_pause_resource_t kind)
{
    (void)kind;
    return tlg_pause();
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

/* a negative number is 0, as in libgomp */
TLG_EXPORT void omp_set_default_device(int device)
{
    tlg_icv_cur()->default_device = device >= 0 ? device : 0;
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
    return TLG_INITIAL_DEVICE;
}

TLG_EXPORT int omp_get_device_num(void)
{
    return omp_get_initial_device();
}

/* also inside a target region: it runs on the host (target.c) */
TLG_EXPORT int omp_is_initial_device(void)
{
    return 1;
}

/* ---- host teams ----------------------------------------------------------------- */

/* nteams-var and teams-thread-limit-var are device ICVs (one per
 * process here), as in libgomp */
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
        tlg_env_v.nteams = n;
}

TLG_EXPORT int omp_get_max_teams(void)
{
    return tlg_env_v.nteams;
}

TLG_EXPORT void omp_set_teams_thread_limit(int n)
{
    if (n >= 0)
        tlg_env_v.teams_thread_limit = n;
}

TLG_EXPORT int omp_get_teams_thread_limit(void)
{
    return tlg_env_v.teams_thread_limit;
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

/* ---- affinity format (OpenMP 5.1, 6.14) ------------------------------------------- */

void tlg_set_affinity_format(const char *format, size_t len)
{
    char *f = tlg_malloc(len + 1);
    memcpy(f, format, len);
    f[len] = 0;
    free(tlg_env_v.affinity_format);
    tlg_env_v.affinity_format = f;
}

TLG_EXPORT void omp_set_affinity_format(const char *format)
{
    tlg_set_affinity_format(format, strlen(format));
}

TLG_EXPORT size_t omp_get_affinity_format(char *buffer, size_t size)
{
    const char *f = tlg_env_v.affinity_format;
    size_t n = strlen(f);
    if (buffer && size) {
        size_t k = n < size ? n : size - 1;
        memcpy(buffer, f, k);
        buffer[k] = 0;
    }
    return n;
}

/* The expansion so far: bytes past size are counted, not stored. */
typedef struct {
    char *buf;
    size_t size, len;
} tlg_out;

static void out_put(tlg_out *o, const char *s, size_t n)
{
    if (o->len < o->size)
        memcpy(o->buf + o->len, s, n < o->size - o->len ? n : o->size - o->len);
    o->len += n;
}

static void out_fill(tlg_out *o, char c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out_put(o, &c, 1);
}

/* A field of width w (0: none): left-justified with blanks by default,
 * right-justified with '.', zero-padded after any sign or 0x with "0.". */
static void out_field(tlg_out *o, const char *s, size_t w, int right, int zero)
{
    size_t n = strlen(s);
    size_t pad = w > n ? w - n : 0;
    if (zero && pad) {
        size_t pre = s[0] == '-' ? 1 : s[0] == '0' && s[1] == 'x' ? 2 : 0;
        out_put(o, s, pre);
        out_fill(o, '0', pad);
        out_put(o, s + pre, n - pre);
    } else if (right) {
        out_fill(o, ' ', pad);
        out_put(o, s, n);
    } else {
        out_put(o, s, n);
        out_fill(o, ' ', pad);
    }
}

/* The CPUs the calling thread may run on: its place's when threads are
 * bound, else the process's, as a list of ranges ("0-3,6"). */
static void thread_cpus(char *s, size_t size)
{
    cpu_set_t one;
    const cpu_set_t *set = &tlg_env_v.cpus;
    int place = omp_get_place_num();
    if (place >= 0) {
        CPU_ZERO(&one);
        CPU_SET(tlg_env_v.place_cpu[place], &one);
        set = &one;
    }
    size_t k = 0;
    s[0] = 0;
    for (int c = 0; c < CPU_SETSIZE && k + 24 < size; c++) {
        if (!CPU_ISSET(c, set))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
            e++;
        int n = e > c ? snprintf(s + k, size - k, "%s%d-%d", k ? "," : "", c, e)
                      : snprintf(s + k, size - k, "%s%d", k ? "," : "", c);
        k += n > 0 ? (size_t)n : 0;
        c = e;
    }
}

/* The field types, by their long and short names. */
static const struct {
    const char *name;
    char c;
} affinity_fields[] = {{"team_num", 't'},      {"num_teams", 'T'},        {"nesting_level", 'L'},
                       {"thread_num", 'n'},    {"num_threads", 'N'},      {"ancestor_tnum", 'a'},
                       {"host", 'H'},          {"process_id", 'P'},       {"native_thread_id", 'i'},
                       {"thread_affinity", 'A'}};

/* A malformed format is a fatal error naming it, as in libgomp: the
 * program asked for output it cannot have. */
size_t tlg_format_affinity(char *buffer, size_t size, const char *format)
{
    tlg_out o = {buffer, size, 0};
    for (const char *p = format; *p;) {
        const char *pc = strchr(p, '%');
        if (!pc) {
            out_put(&o, p, strlen(p));
            break;
        }
        out_put(&o, p, (size_t)(pc - p));
        p = pc + 1;
        if (*p == '%') {
            out_put(&o, "%", 1);
            p++;
            continue;
        }
        int zero = 0, right = 0;
        size_t width = 0;
        if (*p == '0') {
            zero = 1;
            if (*++p != '.')
                tlg_fatal("affinity format '%s': a leading 0 must be followed by '.' (accepted: %%[0.|.][width]type)",
                          format);
        }
        if (*p == '.') {
            right = 1;
            p++;
        }
        if (*p >= '1' && *p <= '9') {
            char *end;
            width = strtoul(p, &end, 10);
            p = end;
        } else if (zero || right) {
            tlg_fatal("affinity format '%s': '0.' or '.' needs a width", format);
        }
        char c = *p;
        if (c == '{') {
            c = 0;
            const char *close = strchr(p, '}');
            for (size_t i = 0; close && i < sizeof affinity_fields / sizeof affinity_fields[0]; i++)
                if (strlen(affinity_fields[i].name) == (size_t)(close - p - 1) &&
                    !strncmp(p + 1, affinity_fields[i].name, (size_t)(close - p - 1)))
                    c = affinity_fields[i].c;
            if (!c)
                tlg_fatal("affinity format '%s': unknown field %.*s (accepted: {team_num}, {num_teams}, "
                          "{nesting_level}, {thread_num}, {num_threads}, {ancestor_tnum}, {host}, "
                          "{process_id}, {native_thread_id}, {thread_affinity})",
                          format, close ? (int)(close - p + 1) : (int)strlen(p), p);
            p = close;
        }
        char v[512];
        int num = 0, is_num = 1;
        switch (c) {
        case 't':
            num = omp_get_team_num();
            break;
        case 'T':
            num = omp_get_num_teams();
            break;
        case 'L':
            num = omp_get_level();
            break;
        case 'n':
            num = omp_get_thread_num();
            break;
        case 'N':
            num = omp_get_num_threads();
            break;
        case 'a':
            num = omp_get_ancestor_thread_num(omp_get_level() - 1);
            break;
        case 'P':
            num = (int)getpid();
            break;
        case 'H':
            is_num = 0;
            if (gethostname(v, sizeof v) != 0)
                snprintf(v, sizeof v, "node");
            v[sizeof v - 1] = 0;
            break;
        case 'i':
            is_num = 0;
            snprintf(v, sizeof v, "0x%lx", (unsigned long)pthread_self());
            break;
        case 'A':
            is_num = 0;
            thread_cpus(v, sizeof v);
            break;
        default:
            tlg_fatal("affinity format '%s': unknown field type '%c' (accepted: t T L n N a H P i A, or a "
                      "long name in braces)",
                      format, c ? c : ' ');
        }
        if (is_num)
            snprintf(v, sizeof v, "%d", num);
        out_field(&o, v, width, right, zero);
        p++;
    }
    return o.len;
}

TLG_EXPORT size_t omp_capture_affinity(char *buffer, size_t size, const char *format)
{
    size_t n = tlg_format_affinity(buffer, size, format && *format ? format : tlg_env_v.affinity_format);
    if (buffer && size)
        buffer[n < size ? n : size - 1] = 0;
    return n;
}

/* One write, so that lines of threads printing at once do not mix. */
void tlg_print_affinity(const char *format)
{
    char small[512];
    size_t n = tlg_format_affinity(small, sizeof small - 1, format);
    char *b = small;
    if (n >= sizeof small - 1) {
        b = tlg_malloc(n + 1);
        tlg_format_affinity(b, n, format);
    }
    b[n] = '\n';
    fwrite(b, 1, n + 1, stderr);
    if (b != small)
        free(b);
}

TLG_EXPORT void omp_display_affinity(const char *format)
{
    tlg_print_affinity(format && *format ? format : tlg_env_v.affinity_format);
}

TLG_EXPORT void omp_display_env(int verbose)
{
    tlg_display_env(verbose);
}
