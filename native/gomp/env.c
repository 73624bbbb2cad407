/*
 * env.c - the environment variables of OpenMP (and of this runtime), read
 * once into the initial ICVs (tlg_env_v), and omp_display_env.
 *
 * A malformed value is reported on one line naming the variable, the value
 * and what is accepted, and ignored (the default stays), as libgomp does.
 *
 *   OMP_NUM_THREADS       n[,n...]: nthreads-var per nesting level
 *   OMP_SCHEDULE          [monotonic:|nonmonotonic:]static|dynamic|guided|auto[,chunk] (0: the default)
 *   OMP_DYNAMIC           true|false
 *   OMP_NESTED            true|false (deprecated: sets max-active-levels)
 *   OMP_MAX_ACTIVE_LEVELS n
 *   OMP_THREAD_LIMIT      n
 *   OMP_STACKSIZE         n[B|K|M|G] (K when no unit): OpenMP threads' stacks
 *   OMP_WAIT_POLICY       active|passive
 *   OMP_PROC_BIND         true|false|primary|master|close|spread[,...]
 *   OMP_PLACES            threads|cores|sockets|ll_caches|numa_domains[(n)]|{a list}: one place per
 *                         allowed CPU whatever the value; without OMP_PROC_BIND it binds (true)
 *   OMP_CANCELLATION      true|false
 *   OMP_MAX_TASK_PRIORITY n
 *   OMP_DEFAULT_DEVICE    n
 *   OMP_TARGET_OFFLOAD    default|mandatory|disabled (target.c: the host is the only device)
 *   OMP_DISPLAY_ENV       true|false|verbose
 *   OMP_ALLOCATOR         a predefined allocator: omp_default_mem_alloc ... omp_thread_mem_alloc
 *   OMP_NUM_TEAMS         n: nteams-var (host teams without num_teams)
 *   OMP_TEAMS_THREAD_LIMIT n: teams-thread-limit-var
 *   OMP_AFFINITY_FORMAT   the format of omp_display_affinity (icv.c)
 *   OMP_DISPLAY_AFFINITY  true|false: threads show their affinity at region starts (team.c)
 *   THREADLAB_GOMP_TLS    identity|vp   (docs/omp-ult.md, "Thread-local storage")
 *   THREADLAB_GOMP_SPIN_US n: how long a waiter spins before it parks
 *                         (default 3, 100 with OMP_WAIT_POLICY=active, 0 passive)
 *   THREADLAB_GOMP_QUIET  1: no notices
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

tlg_env tlg_env_v;

static void bad(const char *name, const char *value, const char *accepted)
{
    fprintf(stderr, "threadlab-gomp[%d]: %s=%s is not valid (accepted: %s); ignored\n", (int)getpid(), name,
            value, accepted);
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static const char *skip_space(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

/* A decimal unsigned number in [lo, hi]; *end after it (spaces skipped). */
static int parse_num(const char *s, unsigned long lo, unsigned long hi, unsigned long *out, const char **end)
{
    s = skip_space(s);
    if (!isdigit((unsigned char)*s))
        return 0;
    errno = 0;
    char *e;
    unsigned long v = strtoul(s, &e, 10);
    if (errno || v < lo || v > hi)
        return 0;
    *out = v;
    *end = skip_space(e);
    return 1;
}

/* The variable's value as the index of one of n words (case and
 * surrounding blanks ignored); -1 when unset or another value (reported,
 * naming the accepted ones). */
static int parse_word(const char *name, const char *const *words, int n, const char *accepted)
{
    const char *v = env(name);
    if (!v)
        return -1;
    const char *s = skip_space(v);
    size_t len = strlen(s);
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    for (int i = 0; i < n; i++)
        if (strlen(words[i]) == len && !strncasecmp(s, words[i], len))
            return i;
    bad(name, v, accepted);
    return -1;
}

static int parse_bool(const char *name, int *out)
{
    static const char *const words[] = {"false", "true"};
    int i = parse_word(name, words, 2, "true, false");
    if (i < 0)
        return 0;
    *out = i;
    return 1;
}

/* OMP_TARGET_OFFLOAD: with the host the only device, mandatory makes a
 * construct naming any other device an error (target.c), disabled is the
 * default's behaviour. */
static void parse_target_offload(void)
{
    static const char *const words[] = {"default", "mandatory", "disabled"};
    int i = parse_word("OMP_TARGET_OFFLOAD", words, 3, "default, mandatory, disabled");
    if (i >= 0)
        tlg_env_v.target_offload = i; /* TLG_OFFLOAD_* in this order */
}

static int parse_uint(const char *name, unsigned long lo, unsigned long hi, unsigned long *out, const char *accepted)
{
    const char *v = env(name);
    if (!v)
        return 0;
    const char *end;
    if (!parse_num(v, lo, hi, out, &end) || *end) {
        bad(name, v, accepted);
        return 0;
    }
    return 1;
}

/* Appends v to a growing list (doubling its capacity). */
static unsigned *list_add(unsigned *l, unsigned *n, unsigned *cap, unsigned v)
{
    if (*n == *cap) {
        *cap *= 2;
        unsigned *g = realloc(l, *cap * sizeof *l);
        if (!g)
            tlg_fatal("out of memory");
        l = g;
    }
    l[(*n)++] = v;
    return l;
}

/* n[,n...] into a fresh list. */
static int parse_list(const char *name, unsigned **list, unsigned *len)
{
    const char *v = env(name);
    if (!v)
        return 0;
    unsigned cap = 8, n = 0;
    unsigned *l = tlg_malloc(cap * sizeof *l);
    const char *s = v;
    for (;;) {
        unsigned long x;
        const char *end;
        if (!parse_num(s, 1, INT_MAX, &x, &end)) {
            bad(name, v, "positive integers separated by commas");
            free(l);
            return 0;
        }
        l = list_add(l, &n, &cap, (unsigned)x);
        if (!*end)
            break;
        if (*end != ',') {
            bad(name, v, "positive integers separated by commas");
            free(l);
            return 0;
        }
        s = end + 1;
    }
    *list = l;
    *len = n;
    return 1;
}

static void parse_schedule(tlg_icv *icv)
{
    const char *v = env("OMP_SCHEDULE");
    if (!v)
        return;
    static const char accepted[] =
        "[monotonic:|nonmonotonic:]static|dynamic|guided|auto[,chunk of 0 or more]";
    const char *s = skip_space(v);
    unsigned mono = 0;
    if (!strncasecmp(s, "monotonic", 9) && skip_space(s + 9)[0] == ':') {
        mono = TLG_SCHED_MONOTONIC;
        s = skip_space(skip_space(s + 9) + 1);
    } else if (!strncasecmp(s, "nonmonotonic", 12) && skip_space(s + 12)[0] == ':') {
        s = skip_space(skip_space(s + 12) + 1);
    }
    static const struct {
        const char *name;
        unsigned kind;
    } kinds[] = {{"static", TLG_SCHED_STATIC},
                 {"dynamic", TLG_SCHED_DYNAMIC},
                 {"guided", TLG_SCHED_GUIDED},
                 {"auto", TLG_SCHED_AUTO}};
    unsigned kind = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t n = strlen(kinds[i].name);
        if (!strncasecmp(s, kinds[i].name, n) && !isalpha((unsigned char)s[n])) {
            kind = kinds[i].kind;
            s = skip_space(s + n);
            break;
        }
    }
    if (!kind) {
        bad("OMP_SCHEDULE", v, accepted);
        return;
    }
    long chunk = 0;
    if (*s == ',') {
        unsigned long c;
        const char *end;
        /* 0 as libgomp takes it: the kind's default chunk (below) */
        if (!parse_num(s + 1, 0, LONG_MAX, &c, &end) || *end) {
            bad("OMP_SCHEDULE", v, accepted);
            return;
        }
        chunk = (long)c;
    } else if (*s) {
        bad("OMP_SCHEDULE", v, accepted);
        return;
    }
    /* as libgomp: without a chunk, 1 but for static (auto too: its
     * loops ignore it, omp_get_schedule reports it; LLVM's test
     * omp_for_schedule_runtime expects auto,1) */
    if (chunk == 0 && kind != TLG_SCHED_STATIC)
        chunk = 1;
    icv->run_sched = kind | mono;
    icv->run_chunk = chunk;
}

size_t tlg_stack_size(void)
{
    size_t s = tlg_env_v.stacksize ? tlg_env_v.stacksize : TLG_DEFAULT_STACK;
    size_t least = (size_t)PTHREAD_STACK_MIN;
    return s < least ? least : s;
}

static void parse_stacksize(void)
{
    const char *v = env("OMP_STACKSIZE");
    if (!v)
        v = env("GOMP_STACKSIZE");
    if (!v)
        return;
    static const char accepted[] = "a positive size with an optional unit B, K, M or G (K when none)";
    const char *s = skip_space(v);
    if (!isdigit((unsigned char)*s)) {
        bad("OMP_STACKSIZE", v, accepted);
        return;
    }
    errno = 0;
    char *e;
    unsigned long long n = strtoull(s, &e, 10);
    e = (char *)skip_space(e);
    unsigned shift = 10;
    switch (toupper((unsigned char)*e)) {
    case 'B':
        shift = 0;
        e++;
        break;
    case 'K':
        shift = 10;
        e++;
        break;
    case 'M':
        shift = 20;
        e++;
        break;
    case 'G':
        shift = 30;
        e++;
        break;
    default:
        break;
    }
    e = (char *)skip_space(e);
    if (errno || *e || n == 0 || n > (1ull << 30) >> shift) {
        bad("OMP_STACKSIZE", v, accepted);
        return;
    }
    size_t bytes = (size_t)(n << shift);
    tlg_env_v.stacksize = bytes < 16384 ? 16384 : bytes;
}

static const char *const allocator_names[] = {
    "omp_default_mem_alloc", "omp_large_cap_mem_alloc", "omp_const_mem_alloc", "omp_high_bw_mem_alloc",
    "omp_low_lat_mem_alloc", "omp_cgroup_mem_alloc",    "omp_pteam_mem_alloc", "omp_thread_mem_alloc"};

/* The predefined allocators are numbered from omp_default_mem_alloc (1)
 * in the order of allocator_names. */
static void parse_allocator(tlg_icv *icv)
{
    const char *v = env("OMP_ALLOCATOR");
    if (!v)
        return;
    const char *s = skip_space(v);
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    for (size_t i = 0; i < sizeof allocator_names / sizeof allocator_names[0]; i++)
        if (strlen(allocator_names[i]) == n && !strncasecmp(s, allocator_names[i], n)) {
            icv->def_allocator = (uintptr_t)omp_default_mem_alloc + i;
            return;
        }
    bad("OMP_ALLOCATOR", v, "a predefined allocator, omp_default_mem_alloc ... omp_thread_mem_alloc");
}

static const char *allocator_name(uintptr_t a)
{
    size_t i = a - (uintptr_t)omp_default_mem_alloc;
    return i < sizeof allocator_names / sizeof allocator_names[0] ? allocator_names[i] : "(an allocator of omp_init_allocator)";
}

static int bind_kind(const char *s, size_t n)
{
    static const struct {
        const char *name;
        int kind;
    } kinds[] = {{"false", omp_proc_bind_false}, {"true", omp_proc_bind_true},
                 {"master", omp_proc_bind_master}, {"primary", omp_proc_bind_master},
                 {"close", omp_proc_bind_close},   {"spread", omp_proc_bind_spread}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strlen(kinds[i].name) == n && !strncasecmp(s, kinds[i].name, n))
            return kinds[i].kind;
    return -1;
}

static void parse_proc_bind(tlg_icv *icv)
{
    const char *v = env("OMP_PROC_BIND");
    if (!v)
        return;
    static const char accepted[] = "true, false, or a list of primary, master, close, spread";
    unsigned cap = 4, n = 0;
    unsigned *l = tlg_malloc(cap * sizeof *l);
    const char *s = v;
    for (;;) {
        s = skip_space(s);
        size_t len = 0;
        while (isalpha((unsigned char)s[len]))
            len++;
        int k = bind_kind(s, len);
        if (k < 0 || (n > 0 && (k == omp_proc_bind_false || k == omp_proc_bind_true))) {
            bad("OMP_PROC_BIND", v, accepted);
            free(l);
            return;
        }
        l = list_add(l, &n, &cap, (unsigned)k);
        s = skip_space(s + len);
        if (!*s)
            break;
        if (*s != ',' || k == omp_proc_bind_false || k == omp_proc_bind_true) {
            bad("OMP_PROC_BIND", v, accepted);
            free(l);
            return;
        }
        s++;
    }
    icv->bind = l[0];
    tlg_env_v.bind_list = l;
    tlg_env_v.bind_len = n;
}

/* libgomp's places, added to set: libgomp builds them from the mask it
 * started with.  Read through its own entries (dlsym on its handle finds
 * libgomp's definitions, not this runtime's), when it is loaded. */
static void add_libgomp_places(cpu_set_t *set)
{
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!gomp)
        return;
    int (*num_places)(void) = (int (*)(void))dlsym(gomp, "omp_get_num_places");
    int (*place_num_procs)(int) = (int (*)(int))dlsym(gomp, "omp_get_place_num_procs");
    void (*place_proc_ids)(int, int *) = (void (*)(int, int *))dlsym(gomp, "omp_get_place_proc_ids");
    if (num_places && place_num_procs && place_proc_ids && num_places != omp_get_num_places) {
        int ids[CPU_SETSIZE];
        for (int p = 0, n = num_places(); p < n; p++) {
            int k = place_num_procs(p);
            if (k <= 0 || k > CPU_SETSIZE)
                continue;
            place_proc_ids(p, ids);
            for (int i = 0; i < k; i++)
                if (ids[i] >= 0 && ids[i] < CPU_SETSIZE)
                    CPU_SET(ids[i], set);
        }
    }
    dlclose(gomp);
}

/* The process's CPUs: the calling thread's mask, and, when this runtime is
 * preloaded over libgomp, libgomp's places.  libgomp's constructor runs
 * before this one and, when OMP_PROC_BIND or OMP_PLACES ask for binding,
 * binds the initial thread to its first place: its mask alone would then
 * make one CPU of a process that has more. */
static void process_cpus(void)
{
    tlg_env *e = &tlg_env_v;
    CPU_ZERO(&e->cpus);
    if (sched_getaffinity(0, sizeof e->cpus, &e->cpus) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < n && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, &e->cpus);
    }
    add_libgomp_places(&e->cpus);
    e->ncpus = CPU_COUNT(&e->cpus) > 0 ? (unsigned)CPU_COUNT(&e->cpus) : 1;
}

/* OMP_PLACES: valid (an abstract name, with an optional count, or an
 * explicit list) or not (a message, and ignored).  This runtime makes one
 * place per allowed CPU whatever the value (find_places). */
static int places_asked(void)
{
    const char *v = env("OMP_PLACES");
    if (!v)
        return 0;
    static const char *const names[] = {"threads", "cores", "sockets", "ll_caches", "numa_domains"};
    const char *s = skip_space(v);
    if (*s == '{')
        return 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (strncasecmp(s, names[i], n))
            continue;
        const char *t = skip_space(s + n);
        if (*t == '(') {
            const char *d = skip_space(t + 1);
            if (!isdigit((unsigned char)*d))
                break;
            while (isdigit((unsigned char)*d))
                d++;
            d = skip_space(d);
            if (*d != ')')
                break;
            t = skip_space(d + 1);
        }
        if (!*t)
            return 1;
        break;
    }
    bad("OMP_PLACES", v, "threads, cores, sockets, ll_caches or numa_domains, each with an optional (count), "
                         "or a list of places in braces");
    return 0;
}

static void find_places(void)
{
    int n = 0;
    int *cpus = tlg_malloc(sizeof(int) * tlg_env_v.ncpus);
    for (int c = 0; c < CPU_SETSIZE && n < (int)tlg_env_v.ncpus; c++)
        if (CPU_ISSET(c, &tlg_env_v.cpus))
            cpus[n++] = c;
    tlg_env_v.place_cpu = cpus;
    /* places exist once threads are bound (places asked for bind them,
     * unless OMP_PROC_BIND is false: tlg_env_init) */
    tlg_env_v.nplaces = tlg_env_v.icv.bind != omp_proc_bind_false ? (unsigned)n : 0;
}

void tlg_env_init(void)
{
    tlg_env *e = &tlg_env_v;
    process_cpus();
    tlg_icv *icv = &e->icv;
    icv->nthreads = e->ncpus;
    icv->thread_limit = INT_MAX;
    icv->run_sched = TLG_SCHED_DYNAMIC;
    icv->run_chunk = 1;
    icv->max_active_levels = 1;
    icv->bind = omp_proc_bind_false;
    icv->dyn = 0;
    icv->default_device = 0;
    icv->def_allocator = (uintptr_t)omp_default_mem_alloc;
    e->affinity_format = tlg_malloc(sizeof TLG_AFFINITY_FORMAT);
    memcpy(e->affinity_format, TLG_AFFINITY_FORMAT, sizeof TLG_AFFINITY_FORMAT);
    e->wait_policy = -1;
    /* a waiter spins briefly before it parks (the idle VP then spins, and
     * steals, instead): a partner on another VP usually comes within a
     * few microseconds, and the spin saves the park and the wake-up
     * through the VP's inbox (omp.sync barrier with the team's threads on
     * two VPs: about 100 ns against 220 parking at once); passive: none */
    e->spin_ns = TLG_DEFAULT_SPIN_NS;
    e->quiet = env("THREADLAB_GOMP_QUIET") && strcmp(env("THREADLAB_GOMP_QUIET"), "0") != 0;

    if (parse_list("OMP_NUM_THREADS", &e->nthreads_list, &e->nthreads_len))
        icv->nthreads = e->nthreads_list[0];
    parse_schedule(icv);
    int b;
    if (parse_bool("OMP_DYNAMIC", &b)) {
        icv->dyn = b;
        e->dyn_explicit = 1;
    }
    unsigned long u;
    if (parse_uint("OMP_THREAD_LIMIT", 1, INT_MAX, &u, "a positive integer"))
        icv->thread_limit = (unsigned)u;
    parse_proc_bind(icv);
    /* as libgomp: places without a policy bind (bind-var true); with
     * OMP_PROC_BIND=false there are none */
    if (places_asked() && !env("OMP_PROC_BIND"))
        icv->bind = omp_proc_bind_true;
    if (parse_uint("OMP_MAX_ACTIVE_LEVELS", 0, INT_MAX, &u, "a non-negative integer")) {
        icv->max_active_levels = u > 255 ? 255 : (unsigned)u;
    } else if (parse_bool("OMP_NESTED", &b)) {
        icv->max_active_levels = b ? 255 : 1;
    } else if (e->nthreads_len > 1 || e->bind_len > 1) {
        icv->max_active_levels = 255;
    }
    parse_stacksize();
    const char *w = env("OMP_WAIT_POLICY");
    if (w) {
        if (!strcasecmp(skip_space(w), "active"))
            e->wait_policy = 1;
        else if (!strcasecmp(skip_space(w), "passive"))
            e->wait_policy = 0;
        else
            bad("OMP_WAIT_POLICY", w, "active, passive");
    }
    if (e->wait_policy == 1)
        e->spin_ns = 100000;
    else if (e->wait_policy == 0)
        e->spin_ns = 0;
    if (parse_uint("THREADLAB_GOMP_SPIN_US", 0, 10000000, &u, "microseconds, a non-negative integer"))
        e->spin_ns = (uint64_t)u * 1000u;
    e->dock_ns = e->spin_ns ? UINT64_MAX : 0; /* passive: workers never wait for the next region */
    if (parse_uint("THREADLAB_GOMP_DOCK_US", 0, 10000000, &u, "microseconds, a non-negative integer"))
        e->dock_ns = (uint64_t)u * 1000u;
    if (parse_bool("OMP_CANCELLATION", &b))
        e->cancellation = b;
    if (parse_uint("OMP_MAX_TASK_PRIORITY", 0, INT_MAX, &u, "a non-negative integer"))
        e->max_task_priority = (int)u;
    if (parse_uint("OMP_NUM_TEAMS", 1, INT_MAX, &u, "a positive integer"))
        e->nteams = (int)u;
    if (parse_uint("OMP_TEAMS_THREAD_LIMIT", 1, INT_MAX, &u, "a positive integer"))
        e->teams_thread_limit = (int)u;
    parse_allocator(icv);
    if (parse_bool("OMP_DISPLAY_AFFINITY", &b))
        e->display_affinity = b;
    const char *af = getenv("OMP_AFFINITY_FORMAT");
    if (af)
        tlg_set_affinity_format(af, strlen(af));
    if (parse_uint("OMP_DEFAULT_DEVICE", 0, INT_MAX, &u, "a non-negative integer"))
        icv->default_device = (int)u;
    parse_target_offload();
    const char *t = env("THREADLAB_GOMP_TLS");
    e->tls_mode = tl_ult_identity_supported() ? TLG_TLS_IDENTITY : TLG_TLS_VP;
    if (t) {
        if (!strcasecmp(t, "vp"))
            e->tls_mode = TLG_TLS_VP;
        else if (!strcasecmp(t, "identity") && tl_ult_identity_supported())
            e->tls_mode = TLG_TLS_IDENTITY;
        else
            bad("THREADLAB_GOMP_TLS", t,
                tl_ult_identity_supported() ? "identity, vp" : "vp (identities need x86-64 and no sanitizer)");
    }
    e->task_fast = e->tls_mode == TLG_TLS_IDENTITY && !e->cancellation;
    find_places();
    const char *d = env("OMP_DISPLAY_ENV");
    if (d) {
        if (!strcasecmp(skip_space(d), "verbose"))
            e->display_env = 2;
        else if (parse_bool("OMP_DISPLAY_ENV", &b))
            e->display_env = b;
    }
    if (e->display_env)
        tlg_display_env(e->display_env == 2);
}

static const char *sched_name(unsigned kind)
{
    switch (kind & ~TLG_SCHED_MONOTONIC) {
    case TLG_SCHED_STATIC:
        return "STATIC";
    case TLG_SCHED_DYNAMIC:
        return "DYNAMIC";
    case TLG_SCHED_GUIDED:
        return "GUIDED";
    default:
        return "AUTO";
    }
}

static const char *bind_name(unsigned b)
{
    static const char *names[] = {"FALSE", "TRUE", "PRIMARY", "CLOSE", "SPREAD"};
    return b < 5 ? names[b] : "?";
}

void tlg_display_env(int verbose)
{
    const tlg_env *e = &tlg_env_v;
    const tlg_icv *icv = &e->icv;
    /* libgomp 12's lines and formats, so that the two can be compared
     * line by line: nested as max-active-levels > 1, a chunk only when it
     * is not the kind's default, the places as a list, the stack size and
     * the thread limit as the environment set them (0 and UINT_MAX unset) */
    fprintf(stderr, "\nOPENMP DISPLAY ENVIRONMENT BEGIN\n  _OPENMP = '201511'\n  OMP_DYNAMIC = '%s'\n",
            icv->dyn ? "TRUE" : "FALSE");
    fprintf(stderr, "  OMP_NESTED = '%s'\n", icv->max_active_levels > 1 ? "TRUE" : "FALSE");
    fprintf(stderr, "  OMP_NUM_THREADS = '");
    if (e->nthreads_len)
        for (unsigned i = 0; i < e->nthreads_len; i++)
            fprintf(stderr, "%s%u", i ? "," : "", e->nthreads_list[i]);
    else
        fprintf(stderr, "%u", icv->nthreads);
    unsigned kind = icv->run_sched & ~TLG_SCHED_MONOTONIC;
    fprintf(stderr, "'\n  OMP_SCHEDULE = '%s%s",
            (icv->run_sched & TLG_SCHED_MONOTONIC) && kind != TLG_SCHED_STATIC ? "MONOTONIC:" : "",
            sched_name(icv->run_sched));
    if (icv->run_chunk != (kind == TLG_SCHED_STATIC ? 0 : 1))
        fprintf(stderr, ",%ld", icv->run_chunk);
    fprintf(stderr, "'\n");
    fprintf(stderr, "  OMP_PROC_BIND = '");
    if (e->bind_len)
        for (unsigned i = 0; i < e->bind_len; i++)
            fprintf(stderr, "%s%s", i ? "," : "", bind_name(e->bind_list[i]));
    else
        fprintf(stderr, "%s", bind_name(icv->bind));
    fprintf(stderr, "'\n  OMP_PLACES = '");
    for (unsigned i = 0; i < e->nplaces; i++)
        fprintf(stderr, "%s{%d}", i ? "," : "", e->place_cpu[i]);
    fprintf(stderr, "'\n  OMP_STACKSIZE = '%zu'\n", e->stacksize);
    fprintf(stderr, "  OMP_WAIT_POLICY = '%s'\n", e->wait_policy == 1 ? "ACTIVE" : "PASSIVE");
    fprintf(stderr, "  OMP_THREAD_LIMIT = '%u'\n  OMP_MAX_ACTIVE_LEVELS = '%u'\n",
            icv->thread_limit == INT_MAX ? UINT_MAX : icv->thread_limit, icv->max_active_levels);
    fprintf(stderr, "  OMP_NUM_TEAMS = '%d'\n  OMP_TEAMS_THREAD_LIMIT = '%d'\n", e->nteams, e->teams_thread_limit);
    fprintf(stderr, "  OMP_CANCELLATION = '%s'\n  OMP_DEFAULT_DEVICE = '%d'\n  OMP_MAX_TASK_PRIORITY = '%d'\n",
            e->cancellation ? "TRUE" : "FALSE", icv->default_device, e->max_task_priority);
    fprintf(stderr, "  OMP_DISPLAY_AFFINITY = '%s'\n  OMP_AFFINITY_FORMAT = '%s'\n  OMP_ALLOCATOR = '%s'\n",
            e->display_affinity ? "TRUE" : "FALSE", e->affinity_format, allocator_name(icv->def_allocator));
    static const char *const offload[] = {"DEFAULT", "MANDATORY", "DISABLED"};
    fprintf(stderr, "  OMP_TARGET_OFFLOAD = '%s'\n", offload[e->target_offload]);
    if (verbose)
        fprintf(stderr, "  THREADLAB_GOMP_TLS = '%s'\n  THREADLAB_GOMP_SPIN_US = '%llu'\n",
                e->tls_mode == TLG_TLS_IDENTITY ? "identity" : "vp", (unsigned long long)(e->spin_ns / 1000));
    fprintf(stderr, "OPENMP DISPLAY ENVIRONMENT END\n");
}
