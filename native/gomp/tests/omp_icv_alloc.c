/*
 * omp_icv_alloc.c - an ordinary OpenMP program (gcc -fopenmp) that checks
 * the memory allocators, the ICVs of allocators, host teams and task
 * priorities, the affinity format, omp_pause_resource, and the Fortran entries of these
 * families (called from C with gfortran's conventions: arguments by
 * reference, a CHARACTER's length as a hidden argument after the others).
 * Run by ctest on libgomp (the checks are right) and on libthreadlab-gomp
 * (docs/omp-ult.md, "Tests"), with this environment:
 *
 *   OMP_ALLOCATOR=omp_cgroup_mem_alloc OMP_NUM_TEAMS=5 OMP_TEAMS_THREAD_LIMIT=3
 *   OMP_AFFINITY_FORMAT=tnum=%n OMP_MAX_TASK_PRIORITY=5 OMP_DISPLAY_AFFINITY=true
 *
 *   omp_icv_alloc [NAME...]       all checks, or the named ones
 *
 * One line per check, "ok NAME" or "FAIL NAME: what"; exit status 0 when
 * all passed. Race-free (ThreadSanitizer builds run it).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The Fortran entries (libgomp's ABI; no header declares them). */
intptr_t omp_init_allocator_(const intptr_t *memspace, const int32_t *ntraits, const omp_alloctrait_t *traits);
intptr_t omp_init_allocator_8_(const intptr_t *memspace, const int64_t *ntraits, const omp_alloctrait_t *traits);
void omp_destroy_allocator_(const intptr_t *allocator);
void omp_set_default_allocator_(const intptr_t *allocator);
intptr_t omp_get_default_allocator_(void);
void omp_set_affinity_format_(const char *format, size_t format_len);
int32_t omp_get_affinity_format_(char *buffer, size_t buffer_len);
int32_t omp_capture_affinity_(char *buffer, const char *format, size_t buffer_len, size_t format_len);
int32_t omp_get_ancestor_thread_num_8_(const int64_t *level);
int32_t omp_get_team_size_8_(const int64_t *level);

static int failed;
static const char *check_name;

static void expect(int ok, int line, const char *fmt, ...)
{
    if (ok)
        return;
    failed++;
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL %s: ", check_name);
    vprintf(fmt, ap);
    printf(" (line %d)\n", line);
    va_end(ap);
    fflush(stdout);
}
#define CHECK(cond, ...) expect((cond) != 0, __LINE__, __VA_ARGS__)

/* This environment variable must be value (ctest sets it). */
static int env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    int ok = v && !strcmp(v, value);
    CHECK(ok, "run with %s=%s", name, value);
    return ok;
}

/* 1 on libthreadlab-gomp. */
static int on_threadlab(void)
{
    return dlsym(RTLD_DEFAULT, "threadlab_gomp_tls_mode") != NULL;
}

/* ---- allocators ----------------------------------------------------------------- */

/* Zero bytes are no block: NULL from every allocation routine, even from
 * an allocator whose pool (1 byte) would abort on any real request. */
static void check_alloc_zero(void)
{
    CHECK(omp_alloc(0, omp_null_allocator) == NULL, "omp_alloc(0) is not NULL");
    CHECK(omp_aligned_alloc(64, 0, omp_default_mem_alloc) == NULL, "omp_aligned_alloc(64, 0) is not NULL");
    CHECK(omp_calloc(0, 8, omp_null_allocator) == NULL && omp_calloc(8, 0, omp_null_allocator) == NULL,
          "omp_calloc of 0 bytes is not NULL");
    CHECK(omp_aligned_calloc(32, 4, 0, omp_null_allocator) == NULL, "omp_aligned_calloc of 0 bytes is not NULL");
    CHECK(omp_realloc(NULL, 0, omp_null_allocator, omp_null_allocator) == NULL, "omp_realloc(NULL, 0) is not NULL");
    const omp_alloctrait_t tiny[] = {{omp_atk_pool_size, 1}, {omp_atk_fallback, omp_atv_abort_fb}};
    omp_allocator_handle_t a = omp_init_allocator(omp_default_mem_space, 2, tiny);
    CHECK(a != omp_null_allocator, "a pool of 1 byte was refused");
    if (a == omp_null_allocator)
        return;
    CHECK(omp_alloc(0, a) == NULL && omp_aligned_alloc(128, 0, a) == NULL && omp_calloc(0, 0, a) == NULL &&
              omp_aligned_calloc(16, 0, 64, a) == NULL,
          "0 bytes from a 1-byte pool are not NULL");
    omp_destroy_allocator(a);
}

static int all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/* A block resized within its pool counts only its growth against it. */
static void check_alloc_pool_realloc(void)
{
    const omp_alloctrait_t traits[] = {{omp_atk_pool_size, 4096}, {omp_atk_fallback, omp_atv_null_fb}};
    omp_allocator_handle_t a = omp_init_allocator(omp_default_mem_space, 2, traits);
    CHECK(a != omp_null_allocator, "a pool of 4096 bytes was refused");
    if (a == omp_null_allocator)
        return;
    unsigned char *p = omp_alloc(3000, a);
    CHECK(p != NULL, "3000 bytes of a pool of 4096: NULL");
    if (!p)
        return;
    memset(p, 0x5a, 3000);
    unsigned char *p2 = omp_realloc(p, 4000, a, a);
    CHECK(p2 != NULL, "3000 bytes resized to 4000 in a pool of 4096: NULL");
    if (!p2) {
        omp_free(p, a);
        omp_destroy_allocator(a);
        return;
    }
    CHECK(all_bytes(p2, 3000, 0x5a), "the resized block lost its contents");
    void *over = omp_alloc(200, a);
    CHECK(over == NULL, "200 more bytes in a pool holding 4000 of 4096 (null_fb): not NULL");
    omp_free(over, a);
    unsigned char *p3 = omp_realloc(p2, 1000, a, omp_null_allocator);
    CHECK(p3 != NULL && all_bytes(p3, 1000, 0x5a), "4000 bytes shrunk to 1000: NULL or contents lost");
    void *q = omp_alloc(2500, a);
    CHECK(q != NULL, "2500 bytes beside 1000 in a pool of 4096: NULL (the shrink was not given back)");
    omp_free(q, a);
    omp_free(p3 ? (void *)p3 : (void *)p2, omp_null_allocator);
    omp_destroy_allocator(a);
}

/* A pool counts what its blocks take, headers too (LLVM's runtime tests
 * omp_alloc_null_fb and omp_alloc_hbw: a pool of 2 MiB with a null
 * fallback gives one of two threads 1 MiB, and the other NULL; a runtime
 * that counted only the bytes asked for gave both), and a freed block gives
 * all of it back. */
static void check_alloc_pool_charge(void)
{
    const omp_alloctrait_t traits[] = {{omp_atk_pool_size, 2 << 20}, {omp_atk_fallback, omp_atv_null_fb}};
    omp_allocator_handle_t a = omp_init_allocator(omp_default_mem_space, 2, traits);
    CHECK(a != omp_null_allocator, "a pool of 2 MiB was refused");
    if (a == omp_null_allocator)
        return;
    void *p[2] = {NULL, NULL};
#pragma omp parallel num_threads(2)
    {
        int i = omp_get_thread_num();
        p[i] = omp_alloc(1 << 20, a);
    }
    CHECK((p[0] == NULL) != (p[1] == NULL), "two blocks of 1 MiB from a pool of 2 MiB (null_fb): %s, %s",
          p[0] ? "a block" : "NULL", p[1] ? "a block" : "NULL");
    omp_free(p[0], a);
    omp_free(p[1], a);
    void *again = omp_alloc(1 << 20, a);
    CHECK(again != NULL, "1 MiB from a pool of 2 MiB after its blocks were freed: NULL");
    omp_free(again, a);
    omp_destroy_allocator(a);
}

/* Traits with a key or value OpenMP does not define make no allocator. */
static void check_alloc_traits(void)
{
    static const struct {
        omp_alloctrait_t t;
        int valid;
        const char *what;
    } cases[] = {
        {{omp_atk_fallback, 999}, 0, "fallback 999"},
        {{omp_atk_sync_hint, omp_atv_all}, 0, "sync_hint all"},
        {{(omp_alloctrait_key_t)999, 1}, 0, "key 999"},
        {{omp_atk_alignment, 24}, 0, "alignment 24"},
        {{omp_atk_access, omp_atv_contended}, 0, "access contended"},
        {{omp_atk_partition, omp_atv_null_fb}, 0, "partition null_fb"},
        {{omp_atk_sync_hint, omp_atv_contended}, 1, "sync_hint contended"},
        {{omp_atk_access, omp_atv_all}, 1, "access all"},
        {{omp_atk_partition, omp_atv_nearest}, 1, "partition nearest"},
        {{omp_atk_pinned, omp_atv_false}, 1, "pinned false"},
        {{omp_atk_alignment, 256}, 1, "alignment 256"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        omp_allocator_handle_t a = omp_init_allocator(omp_default_mem_space, 1, &cases[i].t);
        CHECK((a != omp_null_allocator) == cases[i].valid, "trait %s: %s", cases[i].what,
              cases[i].valid ? "refused" : "accepted");
        if (a != omp_null_allocator && cases[i].t.key == omp_atk_alignment) {
            void *p = omp_alloc(10, a);
            CHECK(p && (uintptr_t)p % 256 == 0, "alignment 256: block at %p", p);
            omp_free(p, a);
        }
        omp_destroy_allocator(a);
    }
}

/* def-allocator-var: from OMP_ALLOCATOR, an ICV of each data
 * environment (a thread's setting is its own; a team starts with its
 * master's). */
static void check_alloc_default(void)
{
    if (!env_is("OMP_ALLOCATOR", "omp_cgroup_mem_alloc"))
        return;
    CHECK(omp_get_default_allocator() == omp_cgroup_mem_alloc, "default allocator %ld, OMP_ALLOCATOR says %d",
          (long)omp_get_default_allocator(), (int)omp_cgroup_mem_alloc);
    omp_allocator_handle_t seen[2] = {omp_null_allocator, omp_null_allocator};
    int team = 0;
#pragma omp parallel num_threads(2)
    {
        int id = omp_get_thread_num();
        if (id == 1)
            omp_set_default_allocator(omp_large_cap_mem_alloc);
#pragma omp barrier
        seen[id] = omp_get_default_allocator();
        if (id == 0)
            team = omp_get_num_threads();
    }
    if (team == 2)
        CHECK(seen[0] == omp_cgroup_mem_alloc && seen[1] == omp_large_cap_mem_alloc,
              "thread 1 set its default allocator: thread 0 sees %ld, thread 1 %ld", (long)seen[0], (long)seen[1]);
    CHECK(omp_get_default_allocator() == omp_cgroup_mem_alloc, "a worker's setting changed the initial thread's");
    omp_set_default_allocator(omp_high_bw_mem_alloc);
#pragma omp parallel num_threads(2)
    seen[omp_get_thread_num()] = omp_get_default_allocator();
    CHECK(seen[0] == omp_high_bw_mem_alloc && (team != 2 || seen[1] == omp_high_bw_mem_alloc),
          "a team does not start with its master's default allocator: %ld, %ld", (long)seen[0], (long)seen[1]);
    /* and through the Fortran entries */
    intptr_t h = (intptr_t)omp_pteam_mem_alloc;
    omp_set_default_allocator_(&h);
    CHECK(omp_get_default_allocator_() == (intptr_t)omp_pteam_mem_alloc, "omp_get_default_allocator_: %ld",
          (long)omp_get_default_allocator_());
    omp_set_default_allocator(omp_cgroup_mem_alloc);
}

static void check_alloc_fortran(void)
{
    const omp_alloctrait_t traits[] = {
        {omp_atk_alignment, 128}, {omp_atk_pool_size, 1024}, {omp_atk_fallback, omp_atv_null_fb}};
    intptr_t space = omp_default_mem_space;
    int32_t n4 = 3;
    int64_t n8 = 3;
    intptr_t a = omp_init_allocator_(&space, &n4, traits);
    intptr_t b = omp_init_allocator_8_(&space, &n8, traits);
    CHECK(a && b, "omp_init_allocator_ / _8_: null allocator");
    void *p = a ? omp_alloc(100, (omp_allocator_handle_t)a) : NULL;
    CHECK(p && (uintptr_t)p % 128 == 0, "a block of omp_init_allocator_'s allocator at %p (alignment 128)", p);
    omp_free(p, omp_null_allocator);
    CHECK(!(b && omp_alloc(2000, (omp_allocator_handle_t)b)), "2000 bytes of a 1024-byte pool (_8_'s traits)");
    omp_destroy_allocator_(&a);
    omp_destroy_allocator_(&b);
}

/* ---- teams ICVs ------------------------------------------------------------------- */

static void check_teams_icvs(void)
{
    if (!env_is("OMP_NUM_TEAMS", "5") || !env_is("OMP_TEAMS_THREAD_LIMIT", "3"))
        return;
    CHECK(omp_get_max_teams() == 5, "omp_get_max_teams() %d, OMP_NUM_TEAMS=5", omp_get_max_teams());
    CHECK(omp_get_teams_thread_limit() == 3, "omp_get_teams_thread_limit() %d, OMP_TEAMS_THREAD_LIMIT=3",
          omp_get_teams_thread_limit());
    int nteams = 0, limit = 0, inside = 0;
#pragma omp teams
    {
#pragma omp parallel if (0)
        if (omp_get_team_num() == 0) {
            nteams = omp_get_num_teams();
            limit = omp_get_thread_limit();
            inside = 1;
        }
    }
    CHECK(inside && nteams == 5, "teams without num_teams: %d teams, nteams-var is 5", nteams);
    CHECK(limit == 3, "teams without thread_limit: thread-limit-var %d inside, teams-thread-limit-var is 3", limit);
    omp_set_num_teams(2);
    omp_set_teams_thread_limit(2);
#pragma omp teams
    {
#pragma omp parallel if (0)
        if (omp_get_team_num() == 0) {
            nteams = omp_get_num_teams();
            limit = omp_get_thread_limit();
        }
    }
    CHECK(nteams == 2 && limit == 2, "after omp_set_num_teams(2), omp_set_teams_thread_limit(2): %d teams, limit %d",
          nteams, limit);
#pragma omp teams num_teams(4) thread_limit(7)
    {
#pragma omp parallel if (0)
        if (omp_get_team_num() == 0) {
            nteams = omp_get_num_teams();
            limit = omp_get_thread_limit();
        }
    }
    CHECK(nteams == 4 && limit == 7, "num_teams(4) thread_limit(7): %d teams, limit %d", nteams, limit);
    omp_set_num_teams(5);
    omp_set_teams_thread_limit(3);
}

/* ---- task priorities ---------------------------------------------------------------- */

/* One thread runs the tasks queued before its taskwait: highest priority
 * first, a priority above max-task-priority-var counting as that. */
static void check_task_priority(void)
{
    if (!env_is("OMP_MAX_TASK_PRIORITY", "5"))
        return;
    CHECK(omp_get_max_task_priority() == 5, "omp_get_max_task_priority() %d", omp_get_max_task_priority());
    static const int prio[10] = {3, 0, 7, 1, 9, 4, 2, 6, 5, 8};
    int order[10], ran = 0, early = -1;
#pragma omp parallel num_threads(1)
#pragma omp single
    {
        for (int i = 0; i < 10; i++) {
#pragma omp task priority(prio[i]) firstprivate(i) shared(order, ran)
            order[ran++] = prio[i];
        }
        early = ran;
#pragma omp taskwait
    }
    /* libgomp may run a task at once (the test then says nothing);
     * libthreadlab-gomp queues these 10 */
    CHECK(early == 0 || !on_threadlab(), "%d tasks ran before their creator's taskwait", early);
    if (early != 0 || ran != 10)
        return;
    int ok = 1;
    for (int k = 0; k < 10; k++)
        ok &= k < 5 ? order[k] >= 5 : order[k] == 9 - k;
    CHECK(ok, "order of priorities %d %d %d %d %d %d %d %d %d %d (5 and more first, then 4 3 2 1 0)", order[0],
          order[1], order[2], order[3], order[4], order[5], order[6], order[7], order[8], order[9]);
}

/* ---- the scheduling constraint, far from the waiting task ---------------------------- */

/* A task waiting at its taskgroup's end runs only its own descendants.
 * Priorities make the order known on one thread: a chain of 40 links
 * (priority 5) grows beside X (priority 4) and stops with a link of
 * priority 3, 46 tasks deep; X's taskgroup then grows a chain of 40
 * links of priority 1 under X, 6 deep. So at X's wait the queued task of
 * highest priority is the far cousin, which X must leave, and each task
 * X may run is 1 to 40 levels below it. A wrong "descends" runs the
 * cousin there, or leaves the descendants queued and the wait hangs. */
enum { ANCESTRY_LINKS = 40, ANCESTRY_DEPTH = 5 };
static int x_waiting, cousins_ran, cousins_in_wait, descendants_ran;

static void cousin_link(int left)
{
    cousins_ran++;
    cousins_in_wait += x_waiting;
    if (left > 0) {
#pragma omp task priority(left > 1 ? 5 : 3)
        cousin_link(left - 1);
    }
}

static void descendant_link(int left)
{
    descendants_ran++;
    if (left > 0) {
#pragma omp task priority(1)
        descendant_link(left - 1);
    }
}

static void ancestry_level(int level)
{
    if (level < ANCESTRY_DEPTH) {
#pragma omp task
        ancestry_level(level + 1);
        return;
    }
#pragma omp task priority(4)
    {
#pragma omp taskgroup
        {
#pragma omp task priority(1)
            descendant_link(ANCESTRY_LINKS - 1);
            x_waiting = 1;
        }
        x_waiting = 0;
    }
#pragma omp task priority(5)
    cousin_link(ANCESTRY_LINKS);
}

static void check_task_ancestry(void)
{
    if (!env_is("OMP_MAX_TASK_PRIORITY", "5"))
        return;
#pragma omp parallel num_threads(1)
#pragma omp single
    ancestry_level(1);
    CHECK(descendants_ran == ANCESTRY_LINKS && cousins_ran == ANCESTRY_LINKS + 1,
          "%d of %d descendants and %d of %d cousins ran", descendants_ran, ANCESTRY_LINKS, cousins_ran,
          ANCESTRY_LINKS + 1);
    /* libgomp's taskgroup end takes the team queue's first task instead
     * of the group's when it has a higher priority (GCC 12, task.c), so
     * there the cousin runs in X's wait; libthreadlab-gomp keeps the rule */
    CHECK(cousins_in_wait == 0 || !on_threadlab(), "%d cousins ran in their cousin's taskgroup wait",
          cousins_in_wait);
}

/* ---- affinity format ----------------------------------------------------------------- */

static void check_affinity_format(void)
{
    if (!env_is("OMP_AFFINITY_FORMAT", "tnum=%n"))
        return;
    char buf[256];
    CHECK(omp_get_affinity_format(NULL, 0) == 7, "omp_get_affinity_format length %zu, OMP_AFFINITY_FORMAT has 7",
          omp_get_affinity_format(NULL, 0));
    CHECK(omp_get_affinity_format(buf, 4) == 7 && !strcmp(buf, "tnu"), "omp_get_affinity_format(buf, 4): '%s'",
          buf);
    CHECK(omp_capture_affinity(buf, sizeof buf, NULL) == 6 && !strcmp(buf, "tnum=0"),
          "the format of OMP_AFFINITY_FORMAT: '%s'", buf);
    /* widths: left-justified by default, '.' right, "0." zero-padded after the sign */
    const char *fmt = "%.3n|%0.4a|%3N|%{nesting_level}|%%|%5{team_num}|%0.3{num_teams}";
    const char *want = "  0|-001|1  |0|%|0    |001";
    size_t n = omp_capture_affinity(buf, sizeof buf, fmt);
    CHECK(n == strlen(want) && !strcmp(buf, want), "'%s' gave '%s' (%zu), not '%s'", fmt, buf, n, want);
    n = omp_capture_affinity(buf, 5, fmt);
    CHECK(n == strlen(want) && !strcmp(buf, "  0|"), "into 5 bytes: '%s', length %zu", buf, n);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    omp_capture_affinity(buf, sizeof buf, "%{host}");
    CHECK(!strcmp(buf, host), "%%{host}: '%s', not '%s'", buf, host);
    omp_capture_affinity(buf, sizeof buf, "%P");
    CHECK(!strcmp(buf, pid), "%%P: '%s', not '%s'", buf, pid);
    omp_capture_affinity(buf, sizeof buf, "%i");
    CHECK(!strncmp(buf, "0x", 2) && strlen(buf) > 2, "%%i: '%s', not a thread handle", buf);
    int bad = 0, team = 0;
#pragma omp parallel num_threads(2) reduction(+ : bad)
    {
        char mine[64], expected[64];
        omp_capture_affinity(mine, sizeof mine, "%{thread_num}/%{num_threads}/%L/%{ancestor_tnum}");
        snprintf(expected, sizeof expected, "%d/%d/1/0", omp_get_thread_num(), omp_get_num_threads());
        bad += strcmp(mine, expected) != 0;
        if (omp_get_thread_num() == 0)
            team = omp_get_num_threads();
    }
    CHECK(!bad, "%d threads of %d captured the wrong fields", bad, team);

    /* the Fortran entries: unterminated strings of a given length */
    omp_set_affinity_format_("ab%nXYZ", 4);
    char fbuf[10];
    int32_t len = omp_get_affinity_format_(fbuf, sizeof fbuf);
    CHECK(len == 4 && !memcmp(fbuf, "ab%n      ", 10), "omp_get_affinity_format_: %d, '%.10s'", (int)len, fbuf);
    len = omp_get_affinity_format_(fbuf, 2);
    CHECK(len == 4 && !memcmp(fbuf, "ab", 2), "omp_get_affinity_format_ into 2: %d, '%.2s'", (int)len, fbuf);
    char cbuf[8];
    len = omp_capture_affinity_(cbuf, "%n|%N!!!", sizeof cbuf, 5);
    CHECK(len == 3 && !memcmp(cbuf, "0|1     ", 8), "omp_capture_affinity_: %d, '%.8s'", (int)len, cbuf);
    len = omp_capture_affinity_(cbuf, "", sizeof cbuf, 0);
    CHECK(len == 3 && !memcmp(cbuf, "ab0     ", 8), "omp_capture_affinity_ with no format: %d, '%.8s'", (int)len,
          cbuf);
    omp_set_affinity_format("tnum=%n");
}

/* OMP_DISPLAY_AFFINITY: a thread shows its affinity at a region's start
 * when it has not shown it, or what the format shows changed (here the
 * team size), or it was out of the previous region. */
static void check_display_affinity(void)
{
    if (!env_is("OMP_DISPLAY_AFFINITY", "true"))
        return;
#pragma omp parallel num_threads(2)
    ;
    omp_set_affinity_format("aff %n/%N/%L");
    fflush(stderr);
    FILE *out = tmpfile();
    int saved = dup(2);
    CHECK(out && saved >= 0 && dup2(fileno(out), 2) == 2, "cannot capture stderr");
    if (!out || saved < 0) {
        omp_set_affinity_format("tnum=%n");
        return;
    }
    static const int sizes[4] = {3, 3, 2, 3};
    int got[4];
    for (int r = 0; r < 4; r++) {
        fprintf(stderr, "region %d\n", r);
#pragma omp parallel num_threads(sizes[r])
        if (omp_get_thread_num() == 0)
            got[r] = omp_get_num_threads();
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    omp_set_affinity_format("tnum=%n");
    if (got[0] != 3 || got[2] != 2 || got[3] != 3) {
        fclose(out);
        return; /* teams of other sizes: nothing to compare */
    }
    /* per region: a bit per thread number shown, and anything else */
    int shown[4] = {0}, region = -1, other = 0;
    char line[256];
    rewind(out);
    while (fgets(line, sizeof line, out)) {
        int r, id, n, level;
        if (sscanf(line, "region %d", &r) == 1 && r >= 0 && r < 4)
            region = r;
        else if (region >= 0 && sscanf(line, "aff %d/%d/%d", &id, &n, &level) == 3 && n == sizes[region] &&
                 level == 1 && id >= 0 && id < n && !(shown[region] & (1 << id)))
            shown[region] |= 1 << id;
        else
            other++;
    }
    fclose(out);
    CHECK(shown[0] == 7 && shown[1] == 0 && shown[2] == 3 && shown[3] == 7 && !other,
          "threads shown per region (bits) %x %x %x %x, want 7 0 3 7; %d other lines", shown[0], shown[1], shown[2],
          shown[3], other);
}

/* ---- INTEGER(8) arguments of the Fortran entries ------------------------------------- */

/* -HUGE(0_8) and HUGE(0_8) are no level: truncated to int, -HUGE would
 * be level 1. */
static void check_fortran_int8(void)
{
    int bad = 0;
#pragma omp parallel num_threads(2) reduction(+ : bad)
    {
        const int64_t lo = -INT64_MAX, hi = INT64_MAX, one = 1;
        bad += omp_get_ancestor_thread_num_8_(&lo) != -1;
        bad += omp_get_ancestor_thread_num_8_(&hi) != -1;
        bad += omp_get_team_size_8_(&lo) != -1;
        bad += omp_get_team_size_8_(&hi) != -1;
        bad += omp_get_team_size_8_(&one) != omp_get_num_threads();
    }
    CHECK(!bad, "%d answers of omp_get_ancestor_thread_num_8_/omp_get_team_size_8_ to +-HUGE were not -1", bad);
}

/* ---- omp_pause_resource ---------------------------------------------------------------- */

static int tp_value = 1;
#pragma omp threadprivate(tp_value)

/* 1 when each OpenMP thread has TLS of its own (libgomp; libthreadlab-gomp
 * in identity mode, not in the sanitizer builds' vp mode). */
static int own_tls(void)
{
    int (*mode)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "threadlab_gomp_tls_mode");
    return !mode || mode() == 0;
}

/* A pause gives the threads back: outside any region it succeeds and the
 * next team's workers start with fresh threadprivate data (libgomp ends
 * its threads; GCC's own testsuite checks it); inside a region it fails. */
static void check_pause(void)
{
    int inside = 0, team = 0, kept = 1, fresh = 1;
#pragma omp parallel num_threads(2)
    {
        tp_value = 100 + omp_get_thread_num();
        if (omp_get_thread_num() == 0) {
            inside = omp_pause_resource(omp_pause_soft, omp_get_initial_device());
            team = omp_get_num_threads();
        }
    }
    CHECK(inside == -1, "omp_pause_resource inside a region: %d, not -1", inside);
    CHECK(omp_pause_resource(omp_pause_soft, omp_get_initial_device() + 1000) == -1,
          "omp_pause_resource of device %d: not -1", omp_get_initial_device() + 1000);
#pragma omp parallel num_threads(2) reduction(&& : kept)
    kept = tp_value == 100 + omp_get_thread_num();
    if (team == 2 && own_tls())
        CHECK(kept, "threadprivate data did not persist between two regions");
    CHECK(omp_pause_resource(omp_pause_soft, omp_get_initial_device()) == 0, "omp_pause_resource (soft) failed");
#pragma omp parallel num_threads(2) reduction(&& : fresh)
    {
        fresh = omp_get_thread_num() == 0 ? tp_value == 100 : tp_value == 1;
        tp_value = 200;
    }
    if (team == 2 && own_tls())
        CHECK(fresh, "after omp_pause_resource a worker still has its threadprivate data");
    CHECK(omp_pause_resource_all(omp_pause_hard) == 0, "omp_pause_resource_all (hard) failed");
#pragma omp parallel num_threads(2) reduction(&& : fresh)
    fresh = omp_get_thread_num() == 0 ? tp_value == 200 : tp_value == 1;
    if (team == 2 && own_tls())
        CHECK(fresh, "after omp_pause_resource_all a worker still has its threadprivate data");
    tp_value = 1;
}

static const struct {
    const char *name;
    void (*fn)(void);
} checks[] = {
    {"alloc_zero", check_alloc_zero},
    {"alloc_pool_realloc", check_alloc_pool_realloc},
    {"alloc_pool_charge", check_alloc_pool_charge},
    {"alloc_traits", check_alloc_traits},
    {"alloc_default", check_alloc_default},
    {"alloc_fortran", check_alloc_fortran},
    {"teams_icvs", check_teams_icvs},
    {"task_priority", check_task_priority},
    {"task_ancestry", check_task_ancestry},
    {"affinity_format", check_affinity_format},
    {"display_affinity", check_display_affinity},
    {"fortran_int8", check_fortran_int8},
    {"pause", check_pause},
};

int main(int argc, char **argv)
{
    int ran = 0;
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        int wanted = argc < 2;
        for (int a = 1; a < argc && !wanted; a++)
            wanted = !strcmp(argv[a], checks[i].name);
        if (!wanted)
            continue;
        check_name = checks[i].name;
        int before = failed;
        checks[i].fn();
        if (failed == before)
            printf("ok %s\n", check_name);
        fflush(stdout);
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "omp_icv_alloc: no check named so (names: see the source's checks[])\n");
        return 2;
    }
    printf("%s: %d checks, %d failures\n", failed ? "FAILED" : "PASSED", ran, failed);
    return failed ? 1 : 0;
}
