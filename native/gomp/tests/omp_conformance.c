/*
 * omp_conformance.c - an ordinary OpenMP program (gcc -fopenmp, linked
 * with libgomp) that checks the constructs real programs use, with results
 * that are right only if the runtime is: run as is (libgomp) and with
 * libthreadlab-gomp preloaded, by ctest (docs/omp-ult.md, "Tests").
 *
 *   omp_conformance [NAME...]     all checks, or the named ones
 *   omp_conformance -PREFIX...    all checks but those whose names start so
 *
 * One line per check: "ok NAME" or "FAIL NAME: what"; exit status 0 when
 * all passed. The program is race-free (ThreadSanitizer builds run it).
 * It reads OMP_NUM_THREADS, OMP_SCHEDULE, OMP_DYNAMIC, OMP_THREAD_LIMIT,
 * OMP_MAX_ACTIVE_LEVELS and OMP_WAIT_POLICY itself and checks that the
 * runtime's ICVs agree (and OMP_TARGET_OFFLOAD: target_devices). Checks of threadprivate data across nested teams
 * run only where each OpenMP thread has TLS of its own (libgomp, and
 * libthreadlab-gomp in its identity mode). The cancellation checks need
 * OMP_CANCELLATION=true (read at start-up); without it they say "skip
 * NAME".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
static const char *current;
/* set by a check that cannot run here: "skip NAME: why" */
static const char *skip_why;

#define SKIP(why)                                                                                           \
    do {                                                                                                    \
        skip_why = (why);                                                                                   \
        return;                                                                                             \
    } while (0)

#define FAIL(...)                                                                                           \
    do {                                                                                                    \
        failures++;                                                                                         \
        printf("FAIL %s: ", current);                                                                       \
        printf(__VA_ARGS__);                                                                                \
        printf(" (line %d)\n", __LINE__);                                                                   \
        fflush(stdout);                                                                                     \
    } while (0)
/* Under AddressSanitizer and ThreadSanitizer (make test runs this program
 * five times in each) the longest loops are shorter: what they check is
 * the same, and the plain build runs them whole. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

#define EXPECT(cond, ...)                                                                                   \
    do {                                                                                                    \
        if (!(cond))                                                                                        \
            FAIL(__VA_ARGS__);                                                                              \
    } while (0)

/* An environment variable's number, or dflt when unset or not a number
 * (the runtime then ignores it too). */
static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    return *end || n <= 0 || n > INT_MAX ? dflt : (int)n;
}

/* 1 when each OpenMP thread has thread-local storage of its own. */
static int own_tls(void)
{
    int (*mode)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "threadlab_gomp_tls_mode");
    return !mode || mode() == 0;
}

/* ---- parallel ----------------------------------------------------------------- */

static void check_parallel(void)
{
    int seen[8] = {0}, team = 0, inpar = 0, level = 0;
#pragma omp parallel num_threads(5)
    {
        int id = omp_get_thread_num();
        __atomic_fetch_add(&seen[id], 1, __ATOMIC_RELAXED);
        if (id == 0) {
            team = omp_get_num_threads();
            inpar = omp_in_parallel();
            level = omp_get_level();
        }
    }
    EXPECT(team == 5, "team of %d, asked 5", team);
    EXPECT(inpar == 1 && level == 1, "in_parallel %d level %d", inpar, level);
    for (int i = 0; i < 5; i++)
        EXPECT(seen[i] == 1, "thread %d ran %d times", i, seen[i]);
    EXPECT(!omp_in_parallel() && omp_get_level() == 0 && omp_get_num_threads() == 1, "outside a region");

    int one = 0;
#pragma omp parallel if (0)
    one = omp_get_num_threads() + 10 * omp_in_parallel() + 100 * omp_get_level();
    EXPECT(one == 101, "if(0): team %d, in_parallel %d, level %d", one % 10, one / 10 % 10, one / 100);

    /* many short regions */
    long sum = 0;
    for (int r = 0; r < 500; r++) {
#pragma omp parallel num_threads(3) reduction(+ : sum)
        sum += omp_get_thread_num() + 1;
    }
    EXPECT(sum == 500L * 6, "500 regions summed %ld", sum);

    /* a team larger than the machine */
    int big = 0, ids = 0;
#pragma omp parallel num_threads(16) reduction(+ : ids)
    {
        ids += omp_get_thread_num();
#pragma omp barrier
#pragma omp single
        big = omp_get_num_threads();
    }
    EXPECT(big == 16 && ids == 120, "team of 16: %d threads, ids sum %d", big, ids);
}

static void check_nested(void)
{
    int saved = omp_get_max_active_levels();
    omp_set_max_active_levels(3);
    int count = 0, bad = 0;
#pragma omp parallel num_threads(3) reduction(+ : bad)
    {
        int outer = omp_get_thread_num();
#pragma omp parallel num_threads(2) reduction(+ : bad)
        {
            if (omp_get_num_threads() != 2 || omp_get_level() != 2 || omp_get_active_level() != 2)
                bad++;
            if (omp_get_ancestor_thread_num(1) != outer || omp_get_team_size(1) != 3 ||
                omp_get_team_size(2) != 2 || omp_get_ancestor_thread_num(0) != 0 ||
                omp_get_ancestor_thread_num(2) != omp_get_thread_num() || omp_get_ancestor_thread_num(3) != -1)
                bad++;
#pragma omp parallel num_threads(2) reduction(+ : bad)
            {
                if (omp_get_level() != 3 || omp_get_num_threads() != 2)
                    bad++;
#pragma omp atomic
                count++;
            }
        }
    }
    EXPECT(bad == 0, "%d wrong inquiries in nested teams", bad);
    EXPECT(count == 12, "12 innermost threads, counted %d", count);

    /* many nested regions */
    count = 0;
#pragma omp parallel num_threads(2)
    for (int r = 0; r < 100; r++) {
#pragma omp parallel num_threads(3)
        {
#pragma omp atomic
            count++;
        }
    }
    EXPECT(count == 600, "600 nested threads, counted %d", count);

    /* beyond max-active-levels the inner teams have one thread */
    omp_set_max_active_levels(1);
    int inner = 0, act = 0;
#pragma omp parallel num_threads(2)
#pragma omp parallel num_threads(2)
    if (omp_get_thread_num() == 0) {
        __atomic_store_n(&inner, omp_get_num_threads(), __ATOMIC_RELAXED);
        __atomic_store_n(&act, omp_get_active_level() * 10 + omp_get_level(), __ATOMIC_RELAXED);
    }
    EXPECT(inner == 1 && act == 12, "inactive inner team: %d threads, active/level %d", inner, act);
    omp_set_max_active_levels(saved);
}

/* ---- worksharing loops ---------------------------------------------------------- */

#define N_ITER 1000
static int hits[N_ITER];

static int check_hits(int n, const char *what)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (hits[i] != 1)
            bad++;
    if (bad)
        FAIL("%s: %d iterations not run exactly once", what, bad);
    memset(hits, 0, sizeof hits);
    return bad;
}

#define LOOP(sched, n)                                                                                      \
    do {                                                                                                    \
        _Pragma("omp parallel num_threads(3)") {                                                            \
            _Pragma(sched) for (int i = 0; i < (n); i++) __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);   \
        }                                                                                                   \
        check_hits(n, sched);                                                                               \
    } while (0)

/* Sets run-sched-var back to what omp_get_schedule said: auto keeps the
 * chunk set before it (libgomp's rule), so the chunk goes first. */
static void restore_schedule(omp_sched_t kind, int chunk)
{
    omp_set_schedule(omp_sched_dynamic, chunk);
    omp_set_schedule(kind, chunk);
}

static void check_loops(void)
{
    static const int sizes[] = {0, 1, 2, 3, 7, 64, N_ITER};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n = sizes[k];
        LOOP("omp for schedule(static)", n);
        LOOP("omp for schedule(static, 3)", n);
        LOOP("omp for schedule(dynamic)", n);
        LOOP("omp for schedule(dynamic, 7)", n);
        LOOP("omp for schedule(guided)", n);
        LOOP("omp for schedule(guided, 5)", n);
        LOOP("omp for schedule(monotonic: dynamic, 2)", n);
        LOOP("omp for schedule(nonmonotonic: guided)", n);
        LOOP("omp for schedule(runtime)", n);
        LOOP("omp for schedule(monotonic: runtime)", n);
        LOOP("omp for schedule(nonmonotonic: runtime)", n);
        LOOP("omp for schedule(auto)", n);
    }
    /* every runtime schedule kind */
    omp_sched_t saved_kind;
    int saved_chunk;
    omp_get_schedule(&saved_kind, &saved_chunk);
    const omp_sched_t kinds[] = {omp_sched_static, omp_sched_dynamic, omp_sched_guided, omp_sched_auto,
                                 omp_sched_static | omp_sched_monotonic};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int chunk = 0; chunk <= 4; chunk += 4) {
            omp_set_schedule(kinds[k], chunk);
            LOOP("omp for schedule(runtime)", N_ITER);
            omp_sched_t got;
            int gchunk;
            omp_get_schedule(&got, &gchunk);
            EXPECT(got == kinds[k], "omp_get_schedule kind %d, set %d", (int)got, (int)kinds[k]);
        }
    /* auto ignores its chunk: the one set before stays, as on libgomp */
    omp_set_schedule(omp_sched_dynamic, 6);
    omp_set_schedule(omp_sched_auto, 2);
    {
        omp_sched_t got;
        int gchunk;
        omp_get_schedule(&got, &gchunk);
        EXPECT(got == omp_sched_auto && gchunk == 6, "dynamic,6 then auto,2: omp_get_schedule %d,%d, libgomp's 4,6",
               (int)got, gchunk);
    }
    /* static with a chunk through the runtime: chunk k goes to thread k mod n */
    omp_set_schedule(omp_sched_static, 4);
    int owner[N_ITER];
#pragma omp parallel num_threads(3)
    {
#pragma omp for schedule(runtime)
        for (int i = 0; i < N_ITER; i++)
            owner[i] = omp_get_thread_num();
    }
    int bad = 0;
    for (int i = 0; i < N_ITER; i++)
        if (owner[i] != (i / 4) % 3)
            bad++;
    EXPECT(bad == 0, "static,4 runtime schedule: %d iterations on the wrong thread", bad);
    /* two nowait runtime-static loops of the same shape map alike */
    int second[N_ITER];
    omp_set_schedule(omp_sched_static, 0);
#pragma omp parallel num_threads(3)
    {
#pragma omp for schedule(runtime) nowait
        for (int i = 0; i < N_ITER; i++)
            owner[i] = omp_get_thread_num();
#pragma omp for schedule(runtime) nowait
        for (int i = 0; i < N_ITER; i++)
            second[i] = omp_get_thread_num();
    }
    bad = 0;
    for (int i = 0; i < N_ITER; i++)
        if (owner[i] != second[i])
            bad++;
    EXPECT(bad == 0, "two static loops: %d iterations on different threads", bad);
    restore_schedule(saved_kind, saved_chunk);

    /* steps, directions, combined constructs */
    long s = 0;
#pragma omp parallel for schedule(dynamic, 3) reduction(+ : s)
    for (long i = 1000; i > -1000; i -= 7)
        s += i;
    long want = 0;
    for (long i = 1000; i > -1000; i -= 7)
        want += i;
    EXPECT(s == want, "downward step 7: %ld, want %ld", s, want);
    s = 0;
#pragma omp parallel for schedule(guided, 2) reduction(+ : s)
    for (int i = 3; i < 2000; i += 5)
        s += i;
    want = 0;
    for (int i = 3; i < 2000; i += 5)
        want += i;
    EXPECT(s == want, "step 5: %ld, want %ld", s, want);
#pragma omp parallel for schedule(runtime)
    for (int i = 0; i < N_ITER; i++)
        __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);
    check_hits(N_ITER, "parallel for schedule(runtime)");
#pragma omp parallel for collapse(2) schedule(dynamic, 3)
    for (int i = 0; i < 20; i++)
        for (int j = 0; j < 50; j++)
            __atomic_fetch_add(&hits[i * 50 + j], 1, __ATOMIC_RELAXED);
    check_hits(N_ITER, "collapse(2)");

    /* unsigned long long iteration spaces */
    unsigned long long us = 0;
#pragma omp parallel for schedule(dynamic, 5) reduction(+ : us)
    for (unsigned long long u = 0; u < 100000000000ULL; u += 100000000ULL)
        us += 1;
    EXPECT(us == 1000, "ull dynamic: %llu chunks of 1e8 in 1e11", us);
    us = 0;
#pragma omp parallel for schedule(guided) reduction(+ : us)
    for (unsigned long long u = ULLONG_MAX - 3000; u > ULLONG_MAX - 6000; u -= 3)
        us += 1;
    EXPECT(us == 1000, "ull guided downward: %llu", us);
    us = 0;
#pragma omp parallel for schedule(runtime) reduction(+ : us)
    for (unsigned long long u = 5; u < 5005; u++)
        us += u;
    EXPECT(us == 12522500, "ull runtime: %llu", us);
    us = 0;
#pragma omp parallel for schedule(static, 7) reduction(+ : us) collapse(2)
    for (unsigned long long u = 0; u < 40; u++)
        for (unsigned long long v = 0; v < 25; v++)
            us += u * 25 + v;
    EXPECT(us == 499500, "ull collapse static: %llu", us);

    /* cancel is a no-op without OMP_CANCELLATION */
    int ran = 0;
#pragma omp parallel
    {
#pragma omp for reduction(+ : ran)
        for (int i = 0; i < 100; i++) {
            ran++;
#pragma omp cancel for if (i == 3)
        }
    }
    if (!omp_get_cancellation())
        EXPECT(ran == 100, "cancel without cancellation ran %d of 100", ran);
}

static void check_ordered(void)
{
    int seq[N_ITER], pos = 0;
#pragma omp parallel num_threads(3)
    {
#pragma omp for ordered schedule(dynamic, 3)
        for (int i = 0; i < N_ITER; i++) {
#pragma omp ordered
            seq[pos++] = i;
        }
#pragma omp single
        {
            for (int i = 0; i < N_ITER; i++)
                if (seq[i] != i) {
                    FAIL("ordered dynamic: position %d holds %d", i, seq[i]);
                    break;
                }
            pos = 0;
        }
#pragma omp for ordered schedule(static, 2)
        for (int i = 0; i < 300; i++) {
#pragma omp ordered
            seq[pos++] = i;
        }
#pragma omp single
        {
            for (int i = 0; i < 300; i++)
                if (seq[i] != i) {
                    FAIL("ordered static: position %d holds %d", i, seq[i]);
                    break;
                }
            pos = 0;
        }
#pragma omp for ordered schedule(guided)
        for (int i = 0; i < 500; i++) {
            if (i % 3 == 0) {
#pragma omp ordered
                seq[pos++] = i;
            }
        }
#pragma omp for ordered schedule(runtime)
        for (int i = 0; i < 10; i++) {
#pragma omp ordered
            seq[pos++] = 1000 + i;
        }
    }
    int k = 0, bad = 0;
    for (int i = 0; i < 500; i += 3)
        if (seq[k++] != i)
            bad++;
    for (int i = 0; i < 10; i++)
        if (seq[k++] != 1000 + i)
            bad++;
    EXPECT(bad == 0 && k == pos, "ordered guided/runtime: %d out of order", bad);
    unsigned long long useq[64];
    int up = 0;
#pragma omp parallel for ordered schedule(dynamic)
    for (unsigned long long u = 10; u < 74; u++) {
#pragma omp ordered
        useq[up++] = u;
    }
    bad = 0;
    for (int i = 0; i < 64; i++)
        if (useq[i] != 10u + (unsigned)i)
            bad++;
    EXPECT(bad == 0, "ordered ull: %d out of order", bad);
}

/* Doacross loops (ordered(n) with depend(sink/source)): a wavefront whose
 * every cell needs the one above it (often another thread's) and the one
 * to its left, under every schedule and with an unsigned long long loop;
 * the early rows are slowed down, so that a runtime whose waits do not
 * wait reads cells not written yet. */
#define DA_ROWS 40
#define DA_COLS 24
static long da_grid[DA_ROWS][DA_COLS];

static long da_cell(long up, long left, long i, long j)
{
    return (up * 31 + left * 17 + i * 7 + j) % 1000003;
}

static void da_slow(long i)
{
    if (i < DA_ROWS / 2)
        for (volatile int k = 0; k < 20000; k++)
            ;
}

static int da_check(const char *what)
{
    long want[DA_ROWS][DA_COLS];
    for (long i = 0; i < DA_ROWS; i++)
        for (long j = 0; j < DA_COLS; j++)
            want[i][j] = da_cell(i ? want[i - 1][j] : 1, j ? want[i][j - 1] : 1, i, j);
    for (long i = 0; i < DA_ROWS; i++)
        for (long j = 0; j < DA_COLS; j++)
            if (da_grid[i][j] != want[i][j]) {
                FAIL("doacross %s: cell (%ld, %ld) holds %ld, %ld expected", what, i, j, da_grid[i][j],
                     want[i][j]);
                return 0;
            }
    return 1;
}

static void *doacross_chain(void *p)
{
    long *chain = p;
#pragma omp parallel for ordered(1) schedule(dynamic)
    for (int i = 0; i < 200; i++) {
#pragma omp ordered depend(sink : i - 1)
        chain[i] = i ? chain[i - 1] + i : 0;
#pragma omp ordered depend(source)
    }
    return NULL;
}

static void check_doacross(void)
{
    static const struct {
        omp_sched_t kind;
        int chunk;
        const char *name;
    } scheds[] = {{omp_sched_static, 0, "static"},
                  {omp_sched_static, 3, "static,3"},
                  {omp_sched_dynamic, 2, "dynamic,2"},
                  {omp_sched_guided, 1, "guided"}};
    omp_sched_t saved_kind;
    int saved_chunk;
    omp_get_schedule(&saved_kind, &saved_chunk);
    for (size_t k = 0; k < sizeof scheds / sizeof scheds[0]; k++) {
        memset(da_grid, 0, sizeof da_grid);
        omp_set_schedule(scheds[k].kind, scheds[k].chunk);
#pragma omp parallel for ordered(2) schedule(runtime)
        for (long i = 0; i < DA_ROWS; i++)
            for (long j = 0; j < DA_COLS; j++) {
                da_slow(i);
#pragma omp ordered depend(sink : i - 1, j) depend(sink : i, j - 1)
                da_grid[i][j] = da_cell(i ? da_grid[i - 1][j] : 1, j ? da_grid[i][j - 1] : 1, i, j);
#pragma omp ordered depend(source)
            }
        da_check(scheds[k].name);
    }
    restore_schedule(saved_kind, saved_chunk);

    /* bounds past LONG_MAX, known only when it runs: GCC counts the loop in
     * unsigned long long (the GOMP_loop_ull_doacross and GOMP_doacross_ull
     * entries); the rows start at 1, since a sink at i - 1 for i = 0 wraps
     * and libgomp itself then waits for ever */
    memset(da_grid, 0, sizeof da_grid);
    unsigned long long base = (unsigned long long)env_int("THREADLAB_NO_SUCH_VARIABLE", 1) << 63;
    unsigned long long lo = base + 1, hi = base + DA_ROWS;
#pragma omp parallel for ordered(2) schedule(static, 1)
    for (unsigned long long i = lo; i <= hi; i++)
        for (unsigned long long j = 1; j <= DA_COLS; j++) {
            long r = (long)(i - lo), c = (long)j - 1;
            da_slow(r);
#pragma omp ordered depend(sink : i - 1, j) depend(sink : i, j - 1)
            da_grid[r][c] = da_cell(r ? da_grid[r - 1][c] : 1, c ? da_grid[r][c - 1] : 1, r, c);
#pragma omp ordered depend(source)
        }
    da_check("unsigned long long, static,1");

    /* ordered(1): a chain through the whole loop, each iteration after the
     * one before */
    long chain[200] = {0};
#pragma omp parallel for ordered(1) schedule(dynamic)
    for (int i = 0; i < 200; i++) {
        da_slow(i);
#pragma omp ordered depend(sink : i - 1)
        chain[i] = i ? chain[i - 1] + i : 0;
#pragma omp ordered depend(source)
    }
    EXPECT(chain[199] == 199L * 200 / 2, "doacross chain: %ld, %ld expected", chain[199], 199L * 200 / 2);

    /* the same chain on a kernel thread of its own: its team is freed
     * when it exits, with what the team's last constructs held (their
     * doacross state leaked: LeakSanitizer, in the ASan build's runs) */
    long chain2[200] = {0};
    pthread_t t;
    int made = pthread_create(&t, NULL, doacross_chain, chain2) == 0;
    if (made)
        pthread_join(t, NULL);
    EXPECT(made && chain2[199] == 199L * 200 / 2, "doacross chain on a kernel thread: %ld", chain2[199]);
}

static void check_sections(void)
{
    int a = 0, b = 0, c = 0, d = 0, last = -1;
#pragma omp parallel num_threads(3)
    {
#pragma omp sections lastprivate(last)
        {
#pragma omp section
            {
                a++;
                last = 1;
            }
#pragma omp section
            {
                b++;
                last = 2;
            }
#pragma omp section
            {
                c++;
                last = 3;
            }
#pragma omp section
            {
                d++;
                last = 4;
            }
        }
    }
    EXPECT(a == 1 && b == 1 && c == 1 && d == 1, "sections ran %d %d %d %d times", a, b, c, d);
    EXPECT(last == 4, "lastprivate of sections: %d", last);
    int x = 0, y = 0;
#pragma omp parallel sections num_threads(4)
    {
#pragma omp section
        x = omp_get_num_threads();
#pragma omp section
        y = 2;
    }
    EXPECT(x >= 1 && y == 2, "parallel sections: %d %d", x, y);
    /* many nowait sections constructs in a row: work shares recycle */
    int cnt[40] = {0};
#pragma omp parallel num_threads(3)
    for (int r = 0; r < 40; r++) {
#pragma omp sections nowait
        {
#pragma omp section
            __atomic_fetch_add(&cnt[r], 1, __ATOMIC_RELAXED);
#pragma omp section
            __atomic_fetch_add(&cnt[r], 10, __ATOMIC_RELAXED);
        }
    }
    int bad = 0;
    for (int r = 0; r < 40; r++)
        if (cnt[r] != 11)
            bad++;
    EXPECT(bad == 0, "%d of 40 nowait sections constructs wrong", bad);
}

static void check_single_master(void)
{
    int count[100] = {0}, master_ok = 1, masked = -1;
#pragma omp parallel num_threads(4)
    {
        for (int r = 0; r < 100; r++) {
#pragma omp single nowait
            __atomic_fetch_add(&count[r], 1, __ATOMIC_RELAXED);
        }
#pragma omp master
        if (omp_get_thread_num() != 0)
            master_ok = 0;
#pragma omp masked filter(1)
        masked = omp_get_thread_num();
        int v = -1;
#pragma omp single copyprivate(v)
        v = 42 + omp_get_num_threads();
        if (v != 46)
            __atomic_store_n(&master_ok, 0, __ATOMIC_RELAXED);
        double arr[3] = {0, 0, 0};
#pragma omp single copyprivate(arr)
        {
            arr[0] = 1.5;
            arr[2] = 2.5;
        }
        if (arr[0] != 1.5 || arr[2] != 2.5)
            __atomic_store_n(&master_ok, 0, __ATOMIC_RELAXED);
    }
    int bad = 0;
    for (int r = 0; r < 100; r++)
        if (count[r] != 1)
            bad++;
    EXPECT(bad == 0, "%d of 100 nowait singles not run exactly once", bad);
    EXPECT(master_ok, "master ran on another thread, or copyprivate lost its value");
    EXPECT(masked == 1, "masked filter(1) ran on %d", masked);
}

static void check_sync(void)
{
    long plain = 0, named1 = 0, named2 = 0;
    long double ld = 0;
    __int128 wide = 0;
#pragma omp parallel num_threads(4)
    for (int i = 0; i < 2000; i++) {
#pragma omp critical
        plain++;
#pragma omp critical(alpha)
        named1 += 2;
#pragma omp critical(beta)
        named2 += 3;
#pragma omp atomic
        ld += 0.5L;
#pragma omp atomic
        wide += 1;
    }
    EXPECT(plain == 8000 && named1 == 16000 && named2 == 24000, "critical sums %ld %ld %ld", plain, named1,
           named2);
    EXPECT(ld == 4000.0L, "atomic long double: %Lg", ld);
    EXPECT(wide == 8000, "atomic __int128: %lld", (long long)wide);

    /* barrier: every thread sees what all wrote before it */
    int slot[8] = {0}, bad = 0;
#pragma omp parallel num_threads(6) reduction(+ : bad)
    for (int phase = 1; phase <= 50; phase++) {
        __atomic_store_n(&slot[omp_get_thread_num()], phase, __ATOMIC_RELAXED);
#pragma omp barrier
        for (int t = 0; t < 6; t++)
            if (__atomic_load_n(&slot[t], __ATOMIC_RELAXED) != phase)
                bad++;
#pragma omp barrier
    }
    EXPECT(bad == 0, "barrier: %d stale slots", bad);
}

/* ---- reductions ------------------------------------------------------------------- */

#pragma omp declare reduction(maxabs:long : omp_out = (labs(omp_in) > labs(omp_out) ? omp_in : omp_out)) \
    initializer(omp_priv = 0)

static void check_reductions(void)
{
    long sum = 0, prod = 1, mx = LONG_MIN, mn = LONG_MAX, band = -1, bor = 0, bxor = 0, ma = 0;
    int land = 1, lor = 0;
    double dsum = 0;
    int arr[10] = {0};
#pragma omp parallel for reduction(+ : sum, dsum) reduction(* : prod) reduction(max : mx) reduction(min : mn) \
    reduction(& : band) reduction(| : bor) reduction(^ : bxor) reduction(&& : land) reduction(|| : lor)          \
    reduction(maxabs : ma) reduction(+ : arr[:10])
    for (int i = 1; i <= 20; i++) {
        sum += i;
        dsum += i * 0.5;
        prod *= (i % 3 == 0) ? 2 : 1;
        mx = i * 7 % 23 > mx ? i * 7 % 23 : mx;
        mn = i * 7 % 23 < mn ? i * 7 % 23 : mn;
        band &= ~(1L << i);
        bor |= 1L << i;
        bxor ^= i;
        land = land && i < 100;
        lor = lor || i == 13;
        ma = labs(10 - i) > labs(ma) ? 10 - i : ma;
        arr[i % 10] += i;
    }
    EXPECT(sum == 210 && dsum == 105.0 && prod == 64, "sum %ld dsum %g prod %ld", sum, dsum, prod);
    EXPECT(mx == 22 && mn == 1, "max %ld min %ld", mx, mn);
    EXPECT(band == ~0x1ffffeL && bor == 0x1ffffeL && bxor == 20, "bitwise %lx %lx %ld", band, bor, bxor);
    EXPECT(land == 1 && lor == 1 && ma == -10, "logical %d %d, user-defined %ld", land, lor, ma);
    int bad = 0;
    for (int k = 0; k < 10; k++)
        if (arr[k] != (k == 0 ? 30 : 2 * k + 10))
            bad++;
    EXPECT(bad == 0, "array reduction: %d wrong", bad);
}

static void check_task_reductions(void)
{
    long s = 0;
#pragma omp parallel reduction(task, + : s) num_threads(3)
    {
#pragma omp for
        for (int i = 0; i < 30; i++) {
#pragma omp task in_reduction(+ : s)
            s += i;
        }
        s += 1000;
    }
    EXPECT(s == 435 + 3000, "parallel reduction(task): %ld", s);

    long t = 0;
#pragma omp parallel num_threads(3)
#pragma omp single
    {
#pragma omp taskgroup task_reduction(+ : t)
        {
            for (int i = 0; i < 100; i++) {
#pragma omp task in_reduction(+ : t)
                {
                    t += i;
#pragma omp task in_reduction(+ : t)
                    t += 1;
                }
            }
        }
    }
    EXPECT(t == 4950 + 100, "taskgroup task_reduction: %ld", t);

    long w = 0, sc = 0;
#pragma omp parallel num_threads(3)
    {
#pragma omp for reduction(task, + : w)
        for (int i = 0; i < 50; i++) {
#pragma omp task in_reduction(+ : w)
            w += i;
        }
#pragma omp sections reduction(task, + : w)
        {
#pragma omp section
            {
#pragma omp task in_reduction(+ : w)
                w += 7;
            }
#pragma omp section
            w += 3;
        }
#pragma omp scope reduction(+ : sc)
        sc += 1;
    }
    EXPECT(w == 1225 + 10, "for/sections reduction(task): %ld", w);
    EXPECT(sc == 3, "scope reduction: %ld", sc);

    long tl = 0;
#pragma omp parallel num_threads(3)
#pragma omp single
#pragma omp taskloop reduction(+ : tl) grainsize(4)
    for (int i = 0; i < 100; i++)
        tl += i;
    EXPECT(tl == 4950, "taskloop reduction: %ld", tl);
}

/* ---- locks ------------------------------------------------------------------------------ */

static void check_locks(void)
{
    omp_lock_t lock;
    omp_nest_lock_t nest;
    omp_init_lock(&lock);
    omp_init_nest_lock(&nest);
    /* one counter per lock: each is protected by its lock alone */
    long by_lock = 0, by_nest = 0, by_test = 0;
    int nest_ok = 1;
#pragma omp parallel num_threads(4)
    for (int i = 0; i < 1000; i++) {
        omp_set_lock(&lock);
        by_lock++;
        omp_unset_lock(&lock);
        omp_set_nest_lock(&nest);
        if (omp_test_nest_lock(&nest) != 2)
            nest_ok = 0;
        omp_set_nest_lock(&nest);
        by_nest++;
        omp_unset_nest_lock(&nest);
        omp_unset_nest_lock(&nest);
        omp_unset_nest_lock(&nest);
        while (!omp_test_lock(&lock))
            ;
        by_test++;
        omp_unset_lock(&lock);
    }
    EXPECT(by_lock + by_test == 8000 && by_nest == 4000, "lock-protected counters %ld %ld %ld", by_lock, by_nest,
           by_test);
    EXPECT(nest_ok, "omp_test_nest_lock did not return the nesting count");
    /* held by one thread: the others fail to take it */
    int taken = -1;
    omp_set_lock(&lock);
#pragma omp parallel num_threads(2)
    if (omp_get_thread_num() == 1)
        taken = omp_test_lock(&lock);
    omp_unset_lock(&lock);
    EXPECT(taken == 0, "omp_test_lock took a held lock");
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nest);
}

/* ---- tasks -------------------------------------------------------------------------------- */

/* tasks if n > cut, undeferred below */
static long fib(int n, int cut)
{
    if (n < 2)
        return n;
    long a, b;
#pragma omp task shared(a) if (n > cut)
    a = fib(n - 1, cut);
#pragma omp task shared(b) if (n > cut)
    b = fib(n - 2, cut);
#pragma omp taskwait
    return a + b;
}

static long fib_final(int n)
{
    if (n < 2)
        return n;
    long a, b;
#pragma omp task shared(a) final(n < 15) mergeable
    a = fib_final(n - 1);
#pragma omp task shared(b) final(n < 15)
    b = fib_final(n - 2);
#pragma omp taskwait
    return a + b;
}

static void spawn(int depth, int *count)
{
    __atomic_fetch_add(count, 1, __ATOMIC_RELAXED);
    if (depth == 0)
        return;
    for (int i = 0; i < 3; i++) {
#pragma omp task
        spawn(depth - 1, count);
    }
}

/* A task that captures nothing: GCC passes it no data (NULL, 0 bytes). */
static int no_data_tasks;
static void count_no_data_task(void)
{
    __atomic_fetch_add(&no_data_tasks, 1, __ATOMIC_RELAXED);
}

static void check_tasks(void)
{
    no_data_tasks = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    for (int i = 0; i < 8; i++) {
#pragma omp task
        count_no_data_task();
    }
    EXPECT(no_data_tasks == 8, "tasks without data: %d of 8 ran", no_data_tasks);

    long f = 0, ff = 0;
#pragma omp parallel num_threads(3)
#pragma omp single
    {
        f = fib(24, 12);
        ff = fib_final(22);
    }
    EXPECT(f == 46368 && ff == 17711, "fib(24) = %ld, fib(22) = %ld", f, ff);

    /* a taskgroup waits for grandchildren; taskwait only for children */
    int count = 0, seen_in_group = -1;
#pragma omp parallel num_threads(4)
#pragma omp single
    {
#pragma omp taskgroup
        spawn(5, &count);
        seen_in_group = __atomic_load_n(&count, __ATOMIC_RELAXED);
    }
    EXPECT(seen_in_group == 364, "taskgroup ended with %d of 364 tasks done", seen_in_group);

    /* tasks created by every thread, completed by the barrier */
    int done[400] = {0};
#pragma omp parallel num_threads(4)
    {
        for (int i = 0; i < 100; i++) {
            int k = omp_get_thread_num() * 100 + i;
#pragma omp task firstprivate(k)
            __atomic_fetch_add(&done[k], 1, __ATOMIC_RELAXED);
        }
#pragma omp barrier
        int bad = 0;
        for (int k = 0; k < 400; k++)
            if (__atomic_load_n(&done[k], __ATOMIC_RELAXED) != 1)
                bad++;
        if (bad)
            FAIL("after a barrier %d of 400 tasks not done once", bad);
    }
    /* tasks created after the other thread has reached the region's end
     * (on threadlab it may have left, no task existing yet): two tasks
     * that each wait for the other to start need two threads (a bounded
     * wait; one CPU may run only one of them at a time: skipped) */
    if (omp_get_num_procs() >= 2) {
        _Atomic int started = 0, met = 0;
#pragma omp parallel num_threads(2) shared(started, met)
#pragma omp master
        {
            struct timespec pause = {0, 20 * 1000 * 1000};
            nanosleep(&pause, NULL);
            for (int i = 0; i < 2; i++) {
#pragma omp task shared(started, met)
                {
                    atomic_fetch_add(&started, 1);
                    double t0 = omp_get_wtime();
                    while (atomic_load(&started) < 2 && omp_get_wtime() - t0 < 10.0)
                        ;
                    if (atomic_load(&started) == 2)
                        atomic_fetch_add(&met, 1);
                }
            }
        }
        EXPECT(met == 2, "tasks created late: %d of 2 ran beside the other", (int)met);
    }

    /* undeferred and final */
    int order[3], pos = 0, infinal = -1;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp task if (0)
        order[pos++] = 1;
        order[pos++] = 2;
#pragma omp task final(1)
        {
            infinal = omp_in_final();
#pragma omp task
            order[pos++] = 3;
        }
#pragma omp taskwait
    }
    EXPECT(order[0] == 1 && order[1] == 2 && order[2] == 3 && infinal == 1, "if(0)/final: %d %d %d, in_final %d",
           order[0], order[1], order[2], infinal);

    /* taskyield and tasks with big firstprivate data */
    struct big {
        double v[100];
    } b;
    for (int i = 0; i < 100; i++)
        b.v[i] = i;
    double tot = 0;
#pragma omp parallel num_threads(3)
#pragma omp single
    for (int i = 0; i < 20; i++) {
#pragma omp task firstprivate(b) shared(tot)
        {
            double s = 0;
            for (int j = 0; j < 100; j++)
                s += b.v[j];
#pragma omp taskyield
#pragma omp atomic
            tot += s;
        }
    }
    EXPECT(tot == 20 * 4950.0, "firstprivate struct in tasks: %g", tot);
}

static void check_dependences(void)
{
    int x = 0, y = 0, log[64], pos = 0;
#pragma omp parallel num_threads(4)
#pragma omp single
    {
        for (int r = 0; r < 8; r++) {
#pragma omp task depend(out : x)
            {
                x = r * 10;
                __atomic_store_n(&log[__atomic_fetch_add(&pos, 1, __ATOMIC_RELAXED)], 1, __ATOMIC_RELAXED);
            }
#pragma omp task depend(in : x) depend(out : y)
            {
                y = x + 1;
                __atomic_store_n(&log[__atomic_fetch_add(&pos, 1, __ATOMIC_RELAXED)], 2, __ATOMIC_RELAXED);
            }
#pragma omp task depend(inout : y) depend(in : x)
            {
                y = y * 2;
                __atomic_store_n(&log[__atomic_fetch_add(&pos, 1, __ATOMIC_RELAXED)], 3, __ATOMIC_RELAXED);
            }
#pragma omp taskwait depend(in : y)
            if (y != (r * 10 + 1) * 2)
                FAIL("round %d: y = %d", r, y);
        }
    }
    int bad = 0;
    for (int i = 0; i < 24; i++)
        if (log[i] != i % 3 + 1)
            bad++;
    EXPECT(bad == 0, "dependent tasks ran out of order (%d)", bad);

    /* readers run concurrently between writers; mutexinoutset excludes */
    int a = 0, readers = 0, maxr = 0, mutex_in = 0, clash = 0;
#pragma omp parallel num_threads(4)
#pragma omp single
    {
#pragma omp task depend(out : a)
        a = 5;
        for (int i = 0; i < 6; i++) {
#pragma omp task depend(in : a)
            {
                int r = __atomic_add_fetch(&readers, 1, __ATOMIC_RELAXED);
                int m = __atomic_load_n(&maxr, __ATOMIC_RELAXED);
                while (r > m && !__atomic_compare_exchange_n(&maxr, &m, r, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                    ;
                if (a != 5)
                    __atomic_store_n(&clash, 1, __ATOMIC_RELAXED);
                __atomic_sub_fetch(&readers, 1, __ATOMIC_RELAXED);
            }
        }
#pragma omp task depend(inout : a)
        a = 6;
        for (int i = 0; i < 6; i++) {
#pragma omp task depend(mutexinoutset : a)
            {
                if (__atomic_add_fetch(&mutex_in, 1, __ATOMIC_RELAXED) != 1)
                    __atomic_store_n(&clash, 1, __ATOMIC_RELAXED);
                __atomic_sub_fetch(&mutex_in, 1, __ATOMIC_RELAXED);
            }
        }
    }
    EXPECT(a == 6 && !clash, "in/inout/mutexinoutset: a %d, clash %d", a, clash);

    /* depobj (GCC 12 has no omp_all_memory yet) */
    int p = 0, q = 0, steps[4], sp = 0;
    omp_depend_t obj;
#pragma omp depobj(obj) depend(inout : p)
#pragma omp parallel num_threads(3)
#pragma omp single
    {
#pragma omp task depend(depobj : obj)
        {
            p = 1;
            steps[sp++] = 1;
        }
#pragma omp task depend(out : q)
        {
            q = 1;
            __atomic_store_n(&steps[3], 9, __ATOMIC_RELAXED);
        }
#pragma omp task depend(inout : p, q)
        steps[sp++] = p + q + 1;
#pragma omp task depend(in : p)
        steps[sp++] = p + 10;
    }
#pragma omp depobj(obj) destroy
    EXPECT(steps[0] == 1 && steps[1] == 3 && steps[2] == 11, "depobj: %d %d %d", steps[0],
           steps[1], steps[2]);
}

/* ---- tasks run at once past the cutoff ---------------------------------------------------
 * A team of one runs no queued task until it waits, so past the runtime's
 * cutoff of queued tasks (libgomp: 64 per thread; libthreadlab-gomp: 64,
 * or 4 while no thread of the team looks for a task, as in a team of
 * one) new tasks run at once, on the creator's stack; a chain that creates its next link from
 * each link goes as deep as the runtime lets it. */

static int runtime_is_threadlab(void)
{
    return dlsym(RTLD_DEFAULT, "threadlab_gomp_tls_mode") != NULL;
}

struct chain {
    int count;       /* links run */
    int lock_bad;    /* the owner of a nest lock changed in the chain's first link */
    omp_nest_lock_t lock;
};

/* Each link creates the next; the first link to take the nest lock takes
 * it again after its descendants were created (some queued: the runtime
 * bounds how many run nested at once), which must nest: it is the same
 * task, wherever its state moved meanwhile. */
static void chain_link(int left, struct chain *c)
{
    __atomic_fetch_add(&c->count, 1, __ATOMIC_RELAXED);
    int mine = omp_test_nest_lock(&c->lock);
    if (left > 0) {
#pragma omp task
        chain_link(left - 1, c);
    }
    if (mine) {
        if (omp_test_nest_lock(&c->lock) != 2)
            __atomic_fetch_add(&c->lock_bad, 1, __ATOMIC_RELAXED);
        omp_unset_nest_lock(&c->lock);
        omp_unset_nest_lock(&c->lock);
    }
}

static void check_tasks_inline(void)
{
    int filler = 0, x = 0, order[200], pos = 0;
    /* dependences are honoured by tasks that run at once: 50 deferred
     * links, 100 independent tasks (past the cutoff), 150 more links */
#pragma omp parallel num_threads(1)
    {
        for (int i = 0; i < 300; i++) {
            if (i >= 50 && i < 150) {
#pragma omp task shared(filler)
                filler++;
            } else {
#pragma omp task depend(inout : x) shared(order, pos)
                order[pos++] = i < 50 ? i : i - 100;
            }
        }
    }
    (void)x; /* only a dependence's address */
    int bad = 0;
    for (int i = 0; i < 200; i++)
        if (order[i] != i)
            bad++;
    EXPECT(filler == 100 && pos == 200 && bad == 0, "past the cutoff: %d of 100 tasks, %d of 200 links, %d out of order",
           filler, pos, bad);

    /* a taskgroup waits for every link of a chain too deep for one stack
     * (on threadlab: 100,000 links, each frame a few hundred bytes, more
     * than a thread's 8 MiB if every link ran nested), and a task's nest
     * lock stays its own */
    int depth = runtime_is_threadlab() ? (SANITIZED ? 30000 : 100000) : 2000;
    struct chain c = {0, 0, {{0}}};
    omp_init_nest_lock(&c.lock);
    int seen = -1;
#pragma omp parallel num_threads(1)
    {
        for (int i = 0; i < 100; i++) {
#pragma omp task
            __atomic_fetch_add(&filler, 1, __ATOMIC_RELAXED);
        }
#pragma omp taskgroup
        {
#pragma omp task
            chain_link(depth, &c);
        }
        seen = __atomic_load_n(&c.count, __ATOMIC_RELAXED);
    }
    omp_destroy_nest_lock(&c.lock);
    EXPECT(seen == depth + 1 && c.lock_bad == 0, "taskgroup ended with %d of %d links run; nest lock lost %d times",
           seen, depth + 1, c.lock_bad);

    /* some tasks queued, some run at once, their children either way */
    long f = 0;
    int fn = SANITIZED ? 20 : 25;
#pragma omp parallel num_threads(4)
#pragma omp single
    f = fib(fn, 0);
    EXPECT(f == (SANITIZED ? 6765 : 75025), "fib(%d) with every task: %ld", fn, f);

    /* firstprivate arrays copied by the runtime's copy function (cpyfn),
     * into a task run at once */
    int n = 5 + (filler > 0), sum = 0;
    int vla[n];
    for (int i = 0; i < n; i++)
        vla[i] = i + 1;
#pragma omp parallel num_threads(1)
    {
        for (int i = 0; i < 100; i++) {
#pragma omp task
            __atomic_fetch_add(&filler, 1, __ATOMIC_RELAXED);
        }
        for (int r = 0; r < 10; r++) {
#pragma omp task firstprivate(vla) shared(sum)
            {
                int s = 0;
                for (int i = 0; i < n; i++)
                    s += vla[i];
                sum += s;
            }
            vla[0] += 100; /* each task copied the array when it was created */
        }
    }
    EXPECT(sum == 10 * 21 + 100 * 45, "firstprivate VLA in tasks run at once: %d", sum);

    /* copied arguments of every size (VLAs: GCC copies them with cpyfn):
     * under a line, on the runner's stack, past the runtime's stack bound
     * (allocated), in tasks run at once (if(0)) and deferred ones that
     * others run and free */
    static const int lens[] = {6, 200, 6000};
    for (int l = 0; l < 3; l++) {
        int len = lens[l] + (filler < 0);
        long got_now = 0, got_later = 0, want = 0;
        for (int r = 0; r < 40; r++)
            want += (long)len * (len + 1) / 2 + (long)r * len;
#pragma omp parallel num_threads(2)
#pragma omp single
        for (int r = 0; r < 40; r++) {
            int arr[len];
            for (int i = 0; i < len; i++)
                arr[i] = i + 1 + r;
#pragma omp task firstprivate(arr) shared(got_now) if (0)
            {
                long s = 0;
                for (int i = 0; i < len; i++)
                    s += arr[i];
                __atomic_fetch_add(&got_now, s, __ATOMIC_RELAXED);
            }
#pragma omp task firstprivate(arr) shared(got_later)
            {
                long s = 0;
                for (int i = 0; i < len; i++)
                    s += arr[i];
                __atomic_fetch_add(&got_later, s, __ATOMIC_RELAXED);
            }
            arr[0] = -1000000; /* each task copied the array when it was created */
        }
        EXPECT(got_now == want && got_later == want, "VLA of %d ints copied into tasks: %ld run at once, %ld deferred, of %ld",
               len, got_now, got_later, want);
    }

    /* tasks created in a combined parallel loop (constant bounds: run as
     * a work descriptor on threadlab, whose parts end without waiting for
     * the master) */
    int in_loop = 0;
#pragma omp parallel for schedule(dynamic) num_threads(2)
    for (int i = 0; i < 16; i++) {
#pragma omp task shared(in_loop)
        __atomic_fetch_add(&in_loop, 1, __ATOMIC_RELAXED);
    }
    EXPECT(in_loop == 16, "tasks in a combined parallel loop: %d of 16", in_loop);
}

/* The handle of a detach clause as the task's own body sees it: GCC
 * passes it in the task's data, which the runtime fills in (GCC's
 * task-detach tests crashed on a runtime that only set the clause's
 * variable). Deferred, with a copy function (a VLA), undeferred, outside
 * any region, and fulfilled by a kernel thread that is no OpenMP thread. */
static omp_event_handle_t detach_handoff;
static int detach_ready, detach_done;

static void *detach_fulfiller(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&detach_ready, __ATOMIC_ACQUIRE))
        sched_yield();
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL); /* the task's thread is waiting by now, most likely */
    __atomic_store_n(&detach_done, 1, __ATOMIC_RELAXED);
    omp_fulfill_event(detach_handoff);
    return NULL;
}

static void check_detach_events(void)
{
    int x = 0, n = 7, vla_ok = 0, undeferred = 0, alone = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        omp_event_handle_t ev1, ev2, ev3;
#pragma omp task detach(ev1) shared(x)
        {
            x++;
            omp_fulfill_event(ev1);
        }
        int a[n];
        for (int i = 0; i < n; i++)
            a[i] = i + 1;
#pragma omp task firstprivate(a) detach(ev2) shared(vla_ok)
        {
            vla_ok = a[3] == 4 && a[6] == 7;
            omp_fulfill_event(ev2);
        }
#pragma omp task if (0) detach(ev3) shared(undeferred)
        {
            undeferred = 1;
            omp_fulfill_event(ev3);
        }
    }
    EXPECT(x == 1 && vla_ok && undeferred, "detached tasks fulfilling their own events: x %d, VLA %d, undeferred %d",
           x, vla_ok, undeferred);

    omp_event_handle_t ev4;
#pragma omp task detach(ev4) shared(alone)
    {
        alone = 1;
        omp_fulfill_event(ev4);
    }
    EXPECT(alone == 1, "a detached task outside any region did not run");

    pthread_t th;
    if (pthread_create(&th, NULL, detach_fulfiller, NULL) != 0) {
        FAIL("pthread_create");
        return;
    }
    omp_event_handle_t ev5;
    int seen = -1;
#pragma omp task detach(ev5)
    {
        detach_handoff = ev5;
        __atomic_store_n(&detach_ready, 1, __ATOMIC_RELEASE);
    }
    /* the undeferred task completes only when the other thread fulfilled it */
    seen = __atomic_load_n(&detach_done, __ATOMIC_RELAXED);
    pthread_join(th, NULL);
    EXPECT(seen == 1, "an undeferred detached task outside any region completed before its event");
}

/* Events fulfilled in a signal handler (as the OpenMP Examples'
 * task_detach.2 does for an asynchronous write's completion signal): the
 * handler runs on the program's main kernel thread, which is a VP under
 * threadlab-gomp, interrupting whatever it runs (the scheduler, a waiting
 * master); an undeferred task its master waits for, and a deferred one
 * the region's end and a dependent task wait for. */
static omp_event_handle_t signal_event;
static int signal_armed, signal_fulfilled;
static pthread_t signal_target;

static void on_fulfil_signal(int sig)
{
    (void)sig;
    __atomic_store_n(&signal_fulfilled, 1, __ATOMIC_RELAXED);
    omp_fulfill_event(signal_event);
}

static void *signal_sender(void *arg)
{
    int rounds = *(int *)arg;
    for (int r = 1; r <= rounds; r++) {
        while (__atomic_load_n(&signal_armed, __ATOMIC_ACQUIRE) != r)
            sched_yield();
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL); /* its waiter is waiting by now, most likely */
        pthread_kill(signal_target, SIGUSR2);
    }
    return NULL;
}

static void check_detach_signal(void)
{
#if defined(__SANITIZE_THREAD__)
    SKIP("ThreadSanitizer delivers a signal when its thread enters one of its interceptors, and a VP "
         "asleep in its futex never does");
#endif
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fulfil_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR2, &sa, &old) != 0) {
        FAIL("sigaction");
        return;
    }
    signal_target = pthread_self();
    int rounds = 6, undeferred_ok = 0, deferred_ok = 0, after_ok = 0;
    pthread_t th;
    if (pthread_create(&th, NULL, signal_sender, &rounds) != 0) {
        FAIL("pthread_create");
        sigaction(SIGUSR2, &old, NULL);
        return;
    }
    for (int r = 1; r <= rounds; r += 2) {
        __atomic_store_n(&signal_fulfilled, 0, __ATOMIC_RELAXED);
#pragma omp parallel num_threads(2)
#pragma omp masked
        {
            omp_event_handle_t ev;
#pragma omp task detach(ev) if (0)
            {
                signal_event = ev;
                __atomic_store_n(&signal_armed, r, __ATOMIC_RELEASE);
            }
            undeferred_ok += __atomic_load_n(&signal_fulfilled, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&signal_fulfilled, 0, __ATOMIC_RELAXED);
        int x = 0;
#pragma omp parallel num_threads(2) shared(x)
#pragma omp masked
        {
            omp_event_handle_t ev;
#pragma omp task detach(ev) depend(out : x)
            {
                x = 1;
                signal_event = ev;
                __atomic_store_n(&signal_armed, r + 1, __ATOMIC_RELEASE);
            }
#pragma omp task depend(in : x)
            after_ok += x && __atomic_load_n(&signal_fulfilled, __ATOMIC_RELAXED);
        }
        deferred_ok += __atomic_load_n(&signal_fulfilled, __ATOMIC_RELAXED);
    }
    pthread_join(th, NULL);
    sigaction(SIGUSR2, &old, NULL);
    EXPECT(undeferred_ok == rounds / 2, "undeferred tasks completed after their signal's fulfilment: %d of %d",
           undeferred_ok, rounds / 2);
    EXPECT(deferred_ok == rounds / 2 && after_ok == rounds / 2,
           "deferred tasks whose event a signal fulfilled: %d of %d regions ended after it, %d of %d "
           "dependent tasks ran after it",
           deferred_ok, rounds / 2, after_ok, rounds / 2);
}

static void check_detach_taskloop(void)
{
    int flag = 0, after = 0;
#pragma omp parallel num_threads(3)
#pragma omp single
    {
        omp_event_handle_t ev;
        int x = 0;
#pragma omp task detach(ev) depend(out : x)
        x = 1;
#pragma omp task depend(in : x)
        after = __atomic_load_n(&flag, __ATOMIC_RELAXED);
#pragma omp task
        {
            __atomic_store_n(&flag, 1, __ATOMIC_RELAXED);
            omp_fulfill_event(ev);
        }
    }
    EXPECT(after == 1, "a detached task completed before its event");

    int cnt[300] = {0};
#pragma omp parallel num_threads(3)
#pragma omp single
    {
#pragma omp taskloop grainsize(7)
        for (int i = 0; i < 100; i++)
            __atomic_fetch_add(&cnt[i], 1, __ATOMIC_RELAXED);
#pragma omp taskloop num_tasks(9) nogroup
        for (int i = 100; i < 200; i++)
            __atomic_fetch_add(&cnt[i], 1, __ATOMIC_RELAXED);
#pragma omp taskwait
#pragma omp taskloop grainsize(strict : 8)
        for (unsigned long long u = 200; u < 300; u++)
            __atomic_fetch_add(&cnt[u], 1, __ATOMIC_RELAXED);
    }
    int bad = 0;
    for (int i = 0; i < 300; i++)
        if (cnt[i] != 1)
            bad++;
    EXPECT(bad == 0, "taskloop: %d of 300 iterations not run once", bad);
}

/* ---- threadprivate ---------------------------------------------------------------------- */

static int tp;
static double tpd[4];
#pragma omp threadprivate(tp, tpd)

static void check_threadprivate(void)
{
    int bad = 0;
    tp = -1;
#pragma omp parallel num_threads(4) reduction(+ : bad)
    {
        tp = omp_get_thread_num() * 10 + 1;
        tpd[3] = tp;
#pragma omp barrier
        if (tp != omp_get_thread_num() * 10 + 1 || tpd[3] != tp)
            bad++;
    }
    EXPECT(bad == 0, "threadprivate changed within a region (%d)", bad);
    EXPECT(tp == 1, "the initial thread's threadprivate: %d", tp);
    /* persists between regions of the same size (dyn-var false) */
    if (!omp_get_dynamic()) {
#pragma omp parallel num_threads(4) reduction(+ : bad)
        if (tp != omp_get_thread_num() * 10 + 1)
            bad++;
        EXPECT(bad == 0, "threadprivate did not persist (%d threads wrong)", bad);
    }
    tp = 77;
#pragma omp parallel num_threads(4) copyin(tp) reduction(+ : bad)
    if (tp != 77)
        bad++;
    EXPECT(bad == 0, "copyin (%d wrong)", bad);
#pragma omp parallel num_threads(4) reduction(+ : bad)
    {
#pragma omp single copyprivate(tp)
        tp = 5;
        if (tp != 5)
            bad++;
    }
    EXPECT(bad == 0, "copyprivate of threadprivate (%d wrong)", bad);
    if (own_tls()) {
        int saved = omp_get_max_active_levels();
        omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2) reduction(+ : bad)
        {
            int outer = omp_get_thread_num();
            tp = 100 + outer;
#pragma omp parallel num_threads(3) reduction(+ : bad)
            {
                if (omp_get_thread_num() == 0 && tp != 100 + outer)
                    bad++; /* the master keeps its own */
                tp = 1000 * outer + omp_get_thread_num();
#pragma omp barrier
                if (tp != 1000 * outer + omp_get_thread_num())
                    bad++;
            }
            if (tp != 1000 * outer)
                bad++;
        }
        omp_set_max_active_levels(saved);
        EXPECT(bad == 0, "threadprivate in nested teams (%d wrong)", bad);
    }
    /* a combined parallel loop (libthreadlab-gomp may run it as a work
     * descriptor, on VP contexts wearing each thread's TLS) sees each
     * thread's copy */
    bad = 0;
#pragma omp parallel num_threads(2)
    tp = 500 + omp_get_thread_num();
    unsigned long (*wd)(void) = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "threadlab_gomp_workdesc_regions");
    unsigned long wd_before = wd ? wd() : 0;
    if (!omp_get_dynamic()) {
        /* no clause that needs code after the loop: GCC emits the combined
         * GOMP_parallel_loop_* entry for it */
        int wrong[200];
#pragma omp parallel for schedule(dynamic) num_threads(2)
        for (int i = 0; i < 200; i++)
            wrong[i] = tp != 500 + omp_get_thread_num();
        for (int i = 0; i < 200; i++)
            bad += wrong[i];
        EXPECT(bad == 0, "threadprivate in a combined parallel loop (%d wrong)", bad);
    }
    if (wd && getenv("CONFORMANCE_EXPECT_WORKDESC"))
        EXPECT(wd() > wd_before, "the parallel loop did not run as a work descriptor");
    /* errno is per thread too */
    bad = 0;
#pragma omp parallel num_threads(4) reduction(+ : bad)
    {
        errno = 100 + omp_get_thread_num();
#pragma omp barrier
        if (errno != 100 + omp_get_thread_num())
            bad++;
    }
    if (own_tls())
        EXPECT(bad == 0, "errno shared between threads (%d)", bad);
}

/* ---- ICVs, environment, misc --------------------------------------------------------------- */

static void check_icvs(void)
{
    int want_threads = env_int("OMP_NUM_THREADS", omp_get_num_procs());
    EXPECT(omp_get_max_threads() == want_threads, "omp_get_max_threads %d, OMP_NUM_THREADS says %d",
           omp_get_max_threads(), want_threads);
    const char *dyn = getenv("OMP_DYNAMIC");
    if (dyn)
        EXPECT(omp_get_dynamic() == (strcmp(dyn, "true") == 0), "omp_get_dynamic %d with OMP_DYNAMIC=%s",
               omp_get_dynamic(), dyn);
    const char *sched = getenv("OMP_SCHEDULE");
    omp_sched_t kind;
    int chunk;
    omp_get_schedule(&kind, &chunk);
    if (sched && !strcmp(sched, "guided,7"))
        EXPECT((kind & ~omp_sched_monotonic) == omp_sched_guided && chunk == 7, "OMP_SCHEDULE=%s read as %d,%d",
               sched, (int)kind, chunk);
    if (sched && !strcmp(sched, "auto"))
        EXPECT((kind & ~omp_sched_monotonic) == omp_sched_auto && chunk == 1,
               "OMP_SCHEDULE=auto read as %d,%d (libgomp: 4,1)", (int)kind, chunk);
    if (!sched)
        EXPECT(kind == omp_sched_dynamic && chunk == 1, "default runtime schedule %d,%d", (int)kind, chunk);
    /* a chunk of 0, as libgomp takes it: the kind's default */
    if (sched && !strcmp(sched, "static,0"))
        EXPECT((kind & ~omp_sched_monotonic) == omp_sched_static && chunk == 0, "OMP_SCHEDULE=%s read as %d,%d",
               sched, (int)kind, chunk);
    if (sched && !strcmp(sched, "dynamic,0"))
        EXPECT((kind & ~omp_sched_monotonic) == omp_sched_dynamic && chunk == 1, "OMP_SCHEDULE=%s read as %d,%d",
               sched, (int)kind, chunk);
    /* places without OMP_PROC_BIND bind (true), one place per CPU here;
     * with OMP_PROC_BIND=false there are none */
    const char *places = getenv("OMP_PLACES"), *bind = getenv("OMP_PROC_BIND");
    if (places && !strcmp(places, "cores") && !bind)
        EXPECT(omp_get_proc_bind() == omp_proc_bind_true && omp_get_num_places() >= 1,
               "OMP_PLACES=cores alone: bind %d, %d places", (int)omp_get_proc_bind(), omp_get_num_places());
    if (places && bind && !strcmp(bind, "false"))
        EXPECT(omp_get_proc_bind() == omp_proc_bind_false && omp_get_num_places() == 0,
               "OMP_PLACES with OMP_PROC_BIND=false: bind %d, %d places", (int)omp_get_proc_bind(),
               omp_get_num_places());
    EXPECT(omp_get_thread_limit() == env_int("OMP_THREAD_LIMIT", INT_MAX), "thread limit %d",
           omp_get_thread_limit());
    EXPECT(omp_get_max_active_levels() == env_int("OMP_MAX_ACTIVE_LEVELS", 1), "max active levels %d",
           omp_get_max_active_levels());
    EXPECT(omp_get_num_procs() >= 1 && omp_get_wtick() > 0, "procs %d, wtick %g", omp_get_num_procs(),
           omp_get_wtick());
    /* the process's CPUs, whatever libgomp's constructor did to the
     * initial thread's mask (it binds it with OMP_PROC_BIND) */
    if (getenv("CONFORMANCE_EXPECT_PROCS"))
        EXPECT(omp_get_num_procs() == env_int("CONFORMANCE_EXPECT_PROCS", 0), "omp_get_num_procs %d, the process has %d",
               omp_get_num_procs(), env_int("CONFORMANCE_EXPECT_PROCS", 0));
    double t0 = omp_get_wtime(), t1 = omp_get_wtime();
    EXPECT(t1 >= t0, "omp_get_wtime went back");

    /* nthreads-var is per data environment */
    int inner = 0, outer_after = 0;
    int saved = omp_get_max_threads();
#pragma omp parallel num_threads(2)
    {
        omp_set_num_threads(3);
        if (omp_get_thread_num() == 0)
            inner = omp_get_max_threads();
    }
    outer_after = omp_get_max_threads();
    EXPECT(inner == 3 && outer_after == saved, "omp_set_num_threads leaked: inside %d, outside %d", inner,
           outer_after);
    omp_set_num_threads(3);
    int team = 0;
#pragma omp parallel
    if (omp_get_thread_num() == 0)
        team = omp_get_num_threads();
    EXPECT(team == 3 || (omp_get_dynamic() && team >= 1), "omp_set_num_threads(3) gave a team of %d", team);
    omp_set_num_threads(saved);

    /* thread limit */
    int limit = omp_get_thread_limit();
    if (limit < 16) {
        int got = 0;
#pragma omp parallel num_threads(16)
        if (omp_get_thread_num() == 0)
            got = omp_get_num_threads();
        EXPECT(got <= limit, "a team of %d over OMP_THREAD_LIMIT=%d", got, limit);
    }

    /* host teams */
    int seen[3] = {0}, nteams = 0, inner_team = 0;
#pragma omp teams num_teams(3)
    {
        __atomic_fetch_add(&seen[omp_get_team_num()], 1, __ATOMIC_RELAXED);
        if (omp_get_team_num() == 0)
            nteams = omp_get_num_teams();
#pragma omp parallel num_threads(2)
        if (omp_get_team_num() == 2 && omp_get_thread_num() == 1)
            inner_team = 1;
    }
    EXPECT(nteams == 3 && seen[0] == 1 && seen[1] == 1 && seen[2] == 1 && (inner_team || omp_get_dynamic()),
           "teams: %d teams, seen %d %d %d", nteams, seen[0], seen[1], seen[2]);

    /* allocators and the error directive */
    const omp_alloctrait_t traits[] = {{omp_atk_alignment, 256}, {omp_atk_pool_size, 4096},
                                       {omp_atk_fallback, omp_atv_null_fb}};
    omp_allocator_handle_t al = omp_init_allocator(omp_default_mem_space, 3, traits);
    void *p = omp_alloc(1000, al), *q = omp_alloc(4000, al);
    EXPECT(p && ((uintptr_t)p & 255) == 0 && q == NULL, "allocator: aligned %p, over the pool %p", p, q);
    omp_free(p, al);
    omp_destroy_allocator(al);
    int *arr = omp_calloc(100, sizeof(int), omp_default_mem_alloc);
    EXPECT(arr && arr[99] == 0, "omp_calloc");
    omp_free(arr, omp_default_mem_alloc);
#pragma omp error at(execution) severity(warning) message("omp_conformance: the error directive (a warning)")
}

static void check_lastprivate_scan(void)
{
    int last = -1;
#pragma omp parallel for lastprivate(conditional : last) schedule(dynamic, 3)
    for (int i = 0; i < 500; i++)
        if (i % 7 == 0)
            last = i;
    EXPECT(last == 497, "lastprivate(conditional): %d", last);
    int a[64], b[64], x = 0;
    for (int i = 0; i < 64; i++)
        a[i] = i;
#pragma omp parallel for reduction(inscan, + : x)
    for (int i = 0; i < 64; i++) {
        x += a[i];
#pragma omp scan inclusive(x)
        b[i] = x;
    }
    int bad = 0;
    for (int i = 0; i < 64; i++)
        if (b[i] != i * (i + 1) / 2)
            bad++;
    EXPECT(bad == 0 && x == 2016, "inclusive scan: %d wrong, total %d", bad, x);
}

/* ---- cancellation (OMP_CANCELLATION=true) ------------------------------------------------- */

static int never; /* 0, which the compiler cannot know: cancel constructs that never fire */

#define DO_PRAGMA(x) _Pragma(#x)
/* A thread waits at cancellation points of construct KIND until one says
 * it was cancelled (GCC's code then leaves the construct), or until the
 * check's deadline, which only a runtime that does not cancel reaches:
 * then it counts itself in *late. */
#define AWAIT_CANCEL(kind, late)                                                                            \
    do {                                                                                                    \
        while (omp_get_wtime() < deadline) {                                                                \
            DO_PRAGMA(omp cancellation point kind)                                                          \
        }                                                                                                   \
        __atomic_fetch_add(late, 1, __ATOMIC_RELAXED);                                                      \
    } while (0)
#define CANCEL_DEADLINE 10.0

/* cancel parallel: the threads waiting in a cancellable barrier leave it
 * (none passes it), the others leave at their cancellation points, the
 * region's tasks not started are discarded; threads that have not seen
 * the cancel go on, through more nowait loops than libthreadlab-gomp's
 * ring of work shares holds (a construct's work share waits for the
 * threads of the one 16 before, which the canceller never reaches); the
 * team's next region (the same size: the runtime's cached team) is
 * whole, its barriers counting every thread again. */
static void check_cancel_parallel(void)
{
    if (!omp_get_cancellation())
        SKIP("omp_get_cancellation() is false (run with OMP_CANCELLATION=true)");
    double deadline = omp_get_wtime() + CANCEL_DEADLINE;
    int n = 0, waiting = 0, passed = 0;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0) {
            n = omp_get_num_threads();
            /* the others wait in the barrier 50 ms later, most likely
             * (if not, they find the region cancelled as they come) */
            while (__atomic_load_n(&waiting, __ATOMIC_RELAXED) < n - 1 && omp_get_wtime() < deadline)
                ;
            for (double t = omp_get_wtime(); omp_get_wtime() < t + 0.05;)
                ;
#pragma omp cancel parallel
        }
        __atomic_fetch_add(&waiting, 1, __ATOMIC_RELAXED);
#pragma omp barrier
        __atomic_fetch_add(&passed, 1, __ATOMIC_RELAXED);
    }
    EXPECT(passed == 0 && waiting == n - 1, "cancel parallel: %d of %d threads passed the barrier, %d reached it",
           passed, n, waiting);

    int arrived = 0, early = 0, whole = 0, m = 0;
#pragma omp parallel reduction(+ : early, whole)
    {
        for (int phase = 1; phase <= 3; phase++) {
            __atomic_fetch_add(&arrived, 1, __ATOMIC_RELAXED);
#pragma omp barrier
            early += __atomic_load_n(&arrived, __ATOMIC_RELAXED) < phase * omp_get_num_threads();
#pragma omp barrier
        }
#pragma omp cancel parallel if (never)
        whole++;
        if (omp_get_thread_num() == 0)
            m = omp_get_num_threads();
    }
    EXPECT(m == n && early == 0 && whole == n,
           "the region after a cancelled one: %d threads (%d before), %d left a barrier early, %d of them ended it",
           m, n, early, whole);

    int tasks_ran = 0, after_cancel = 0, late = 0;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0) {
            /* queued: the others wait at cancellation points, no task
             * scheduling point, so none starts before the cancel. Three:
             * a creator may run new tasks at once (a task scheduling
             * point) while nobody looks for one, once it has a few
             * queued (libthreadlab-gomp: 4; libgomp: 64 per thread) */
            for (int i = 0; i < 3; i++) {
#pragma omp task
                __atomic_fetch_add(&tasks_ran, 1, __ATOMIC_RELAXED);
            }
#pragma omp cancel parallel
            __atomic_fetch_add(&after_cancel, 1, __ATOMIC_RELAXED);
        } else {
            AWAIT_CANCEL(parallel, &late);
        }
    }
    EXPECT(tasks_ran == 0 && after_cancel == 0 && late == 0,
           "cancel parallel: %d of 3 queued tasks ran, the canceller went on %d times, %d threads never saw it",
           tasks_ran, after_cancel, late);

    int cancelling = 0, iterations = 0;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0) {
            __atomic_store_n(&cancelling, 1, __ATOMIC_RELEASE);
#pragma omp cancel parallel
        }
        while (!__atomic_load_n(&cancelling, __ATOMIC_ACQUIRE))
            ;
        for (int j = 0; j < 40; j++) {
#pragma omp for schedule(dynamic) nowait
            for (int i = 0; i < 4; i++)
                __atomic_fetch_add(&iterations, 1, __ATOMIC_RELAXED);
        }
    }
    EXPECT(iterations == (n > 1 ? 160 : 0), "after a cancel parallel, 40 nowait loops ran %d of %d iterations",
           iterations, n > 1 ? 160 : 0);
}

/* cancel for (static, inline in GCC's code; dynamic, from the runtime)
 * and cancel sections: the first iteration (section) cancels, each other
 * thread's first waits for that at its cancellation points, so no thread
 * starts a second one; the construct's end does not leave the region (a
 * cancel parallel that never fires makes it the cancellable end), and the
 * next loop runs whole, its cancellation points answering false. */
static void check_cancel_for_sections(void)
{
    if (!omp_get_cancellation())
        SKIP("omp_get_cancellation() is false (run with OMP_CANCELLATION=true)");
    double deadline = omp_get_wtime() + CANCEL_DEADLINE;
    int n = 0, st = 0, dy = 0, se = 0, st_late = 0, dy_late = 0, se_late = 0, on = 0, after = 0, next = 0;
#pragma omp parallel
    {
#pragma omp single
        n = omp_get_num_threads();
#pragma omp for schedule(static)
        for (int i = 0; i < 1000; i++) {
            __atomic_fetch_add(&st, 1, __ATOMIC_RELAXED);
#pragma omp cancel for if (i == 0)
            AWAIT_CANCEL(for, &st_late);
        }
#pragma omp for schedule(dynamic, 1)
        for (int i = 0; i < 1000; i++) {
            __atomic_fetch_add(&dy, 1, __ATOMIC_RELAXED);
#pragma omp cancel for if (i == 0)
            AWAIT_CANCEL(for, &dy_late);
        }
#pragma omp sections
        {
#pragma omp section
            {
                __atomic_fetch_add(&se, 1, __ATOMIC_RELAXED);
#pragma omp cancel sections
                __atomic_fetch_add(&on, 1, __ATOMIC_RELAXED);
            }
#pragma omp section
            {
                __atomic_fetch_add(&se, 1, __ATOMIC_RELAXED);
                AWAIT_CANCEL(sections, &se_late);
            }
#pragma omp section
            {
                __atomic_fetch_add(&se, 1, __ATOMIC_RELAXED);
                AWAIT_CANCEL(sections, &se_late);
            }
#pragma omp section
            {
                __atomic_fetch_add(&se, 1, __ATOMIC_RELAXED);
                AWAIT_CANCEL(sections, &se_late);
            }
        }
        __atomic_fetch_add(&after, 1, __ATOMIC_RELAXED);
#pragma omp for schedule(dynamic, 7)
        for (int i = 0; i < 1000; i++) {
            /* GCC drops the cancellation points of a loop with no cancel */
#pragma omp cancel for if (never)
#pragma omp cancellation point for
            __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
        }
#pragma omp cancel parallel if (never)
    }
    EXPECT(st >= 1 && st <= n && dy >= 1 && dy <= n && st_late == 0 && dy_late == 0,
           "cancel for: %d (static) and %d (dynamic) iterations started by %d threads, %d and %d never saw the cancel",
           st, dy, n, st_late, dy_late);
    EXPECT(se >= 1 && se <= n && on == 0 && se_late == 0,
           "cancel sections: %d of 4 sections started by %d threads, the canceller went on %d times, %d never saw it",
           se, n, on, se_late);
    EXPECT(after == n && next == 1000, "after them: %d of %d threads went on, the next loop ran %d of 1000", after, n,
           next);
}

/* cancel taskgroup: the first of its tasks to start cancels, any other
 * started meanwhile waits for that at its cancellation points (so at
 * most one per thread starts), the rest are discarded, and its thread
 * creates no more; a task whose firstprivate copies were made (cpyfn) runs
 * anyway (its body owns them, as libgomp has it); the next taskgroup and
 * the region are not cancelled. */
static void check_cancel_taskgroup(void)
{
    if (!omp_get_cancellation())
        SKIP("omp_get_cancellation() is false (run with OMP_CANCELLATION=true)");
    double deadline = omp_get_wtime() + CANCEL_DEADLINE;
    int n = 0, started = 0, on = 0, late = 0, created_late = 0, copied = 0, next = 0, region = 0;
    int len = 3 + never;
#pragma omp parallel reduction(+ : region)
    {
#pragma omp single
        {
            n = omp_get_num_threads();
#pragma omp taskgroup
            {
                int vla[len];
                for (int i = 0; i < len; i++)
                    vla[i] = i;
#pragma omp task firstprivate(vla)
                __atomic_fetch_add(&copied, vla[2] == 2, __ATOMIC_RELAXED);
                for (int i = 0; i < 16; i++) {
#pragma omp task
                    {
                        if (__atomic_fetch_add(&started, 1, __ATOMIC_RELAXED) == 0) {
#pragma omp cancel taskgroup
                            __atomic_fetch_add(&on, 1, __ATOMIC_RELAXED);
                        }
                        AWAIT_CANCEL(taskgroup, &late);
                    }
                }
                /* every child has started (so one cancelled) or was discarded */
#pragma omp taskwait
#pragma omp task
                __atomic_fetch_add(&created_late, 1, __ATOMIC_RELAXED);
            }
#pragma omp taskgroup
            for (int i = 0; i < 8; i++) {
#pragma omp task
                __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
            }
        }
        region++;
    }
    EXPECT(started >= 1 && started <= n && on == 0 && late == 0,
           "cancel taskgroup: %d of 16 tasks started on %d threads, the canceller went on %d times, %d never saw it",
           started, n, on, late);
    EXPECT(created_late == 0 && copied == 1 && next == 8 && region == n,
           "cancel taskgroup: a task created after it ran %d times, the copying one %d, the next taskgroup's %d of 8, "
           "the region went on in %d of %d threads",
           created_late, copied, next, region, n);
}

/* Back-to-back short regions, some with a late first task: a thread of
 * a team may still be leaving one region (on another VP, wearing its TLS
 * identity) when its successor of the next region, wearing the same
 * identity, starts; a late task recalls workers that left the region's
 * end. Sums, tasks and team sizes checked over 2000 regions (the switch
 * to a thread whose identity is still worn elsewhere has its own test,
 * ult.identity). */
static void check_regions(void)
{
    long sum = 0, ran = 0;
    int small = 0, regions = SANITIZED ? 500 : 2000;
    for (int r = 0; r < regions; r++) {
        int n = 0;
#pragma omp parallel reduction(+ : sum)
        {
            sum += omp_get_thread_num() + 1;
            if (omp_get_thread_num() == 0) {
                n = omp_get_num_threads();
                if (r % 10 == 0) {
                    for (volatile int i = 0; i < 3000; i++)
                        ;
#pragma omp task
                    __atomic_fetch_add(&ran, 1, __ATOMIC_RELAXED);
                }
            }
        }
        small += n < omp_get_max_threads() && !omp_get_dynamic();
    }
    long n = omp_get_max_threads();
    EXPECT(sum == regions * n * (n + 1) / 2 && ran == regions / 10 && small == 0,
           "%d regions: sum %ld (%ld expected), %ld of %d late tasks ran, %d smaller teams", regions, sum,
           regions * n * (n + 1) / 2, ran, regions / 10, small);
}

/* ---- consecutive regions of one team ------------------------------------------------
 *
 * libthreadlab-gomp's workers wait a while for their team's next region
 * (docking, team.c) and start it from there; the master makes them go
 * when it needs their TLS identities for something else (a combined loop
 * run as a work descriptor, a worker recalled for tasks, omp_pause_resource,
 * a smaller or larger team). Regions of every kind in turn, each checked:
 * threadprivate persistence between same-sized plain regions, each thread's
 * copy inside combined loops, late tasks, and a forked child's regions. */

static int dock_tp;
#pragma omp threadprivate(dock_tp)

static void check_dock(void)
{
    int n = omp_get_max_threads();
    unsigned long (*docked)(void) = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "threadlab_gomp_docked_starts");
    unsigned long before = docked ? docked() : 0;
    /* regions whose workers reach the end first (the master works 100 us
     * more): they wait there (docked) while the master still runs */
    for (int r = 0; r < 50; r++) {
#pragma omp parallel num_threads(n)
        if (omp_get_thread_num() == 0) {
            struct timespec t0, t;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            do
                clock_gettime(CLOCK_MONOTONIC, &t);
            while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 100000);
        }
    }
    unsigned long first = docked ? docked() - before : 0;
    int lost = 0, wrong = 0, persist = 0, child = 0;
    long tasks = 0, want_tasks = 0, sum = 0, want_sum = 0;
    for (int r = 0; r < 600; r++) {
        int kind = r % 6;
        if (kind <= 2) {
            /* plain regions of n: each thread finds its copy as it left it */
#pragma omp parallel num_threads(n) reduction(+ : lost)
            {
                int id = omp_get_thread_num();
                if (persist && omp_get_num_threads() == n && dock_tp != (r - 1) * 100 + id)
                    lost++;
                dock_tp = r * 100 + id;
            }
            persist = !omp_get_dynamic();
        } else if (kind == 3) {
            /* a combined loop (a work descriptor when the team fits the VPs) */
            int bad[64];
#pragma omp parallel for schedule(dynamic) num_threads(n)
            for (int i = 0; i < 64; i++)
                bad[i] = persist && omp_get_num_threads() == n && dock_tp != (r - 1) * 100 + omp_get_thread_num();
            for (int i = 0; i < 64; i++)
                wrong += bad[i];
            persist = 0;
        } else if (kind == 4) {
            /* a smaller team, then a larger one: every thread once */
            int sizes[2] = {n > 2 ? n - 1 : n, n + 1};
            for (int j = 0; j < 2; j++) {
                int got = 0;
#pragma omp parallel num_threads(sizes[j]) reduction(+ : sum)
                {
                    sum += omp_get_thread_num() + 1;
                    if (omp_get_thread_num() == 0)
                        got = omp_get_num_threads();
                }
                want_sum += (long)got * (got + 1) / 2;
            }
            persist = 0;
        } else {
            /* tasks the master creates after its worker reached the end */
#pragma omp parallel num_threads(n)
            {
                if (omp_get_thread_num() == 0) {
                    for (volatile int i = 0; i < 20000; i++)
                        ;
                    for (int t = 0; t < 4; t++) {
#pragma omp task
                        __atomic_fetch_add(&tasks, 1, __ATOMIC_RELAXED);
                    }
                }
            }
            want_tasks += 4;
            persist = 0;
            if (r % 100 == 5)
                omp_pause_resource_all(omp_pause_soft);
        }
        if (r == 301 && docked) {
            /* a child of a program whose workers wait: its own regions
             * (libthreadlab-gomp only: libgomp 12's child of a program with
             * a thread pool waits for ever in its first region) */
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0) {
                long s = 0;
                for (int i = 0; i < 50; i++) {
#pragma omp parallel num_threads(n) reduction(+ : s)
                    s += 1;
                }
                _exit(s >= 50 ? 0 : 1);
            }
            int status = 0;
            child = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        }
    }
    EXPECT(lost == 0 && wrong == 0, "threadprivate: %d copies lost between regions, %d wrong in combined loops",
           lost, wrong);
    EXPECT(tasks == want_tasks, "%ld of %ld late tasks ran", tasks, want_tasks);
    EXPECT(sum == want_sum, "teams of other sizes: sum of thread numbers %ld, %ld expected", sum, want_sum);
    EXPECT(child || !docked, "a forked child's regions");
    const char *expect = getenv("CONFORMANCE_EXPECT_DOCKED");
    if (docked && expect)
        EXPECT(atoi(expect) ? first > 0 : docked() == before,
               "regions started by waiting workers: %lu of the 50 whose workers reached the end first, %lu in all "
               "(%s)",
               first, docked() - before, atoi(expect) ? "some expected" : "none expected");
}

/* ---- target constructs: the host as the device -------------------------------------- *
 *
 * This machine has no offload device (or the runtime knows none): a
 * target region runs on the host (libgomp's host fallback). Mapped
 * variables are the host's own, a firstprivate aggregate is the region's
 * copy, and the body is the initial thread of a contention group of its
 * own: level 0, one thread, the ICVs of a new initial thread. */

static void check_target(void)
{
    int a[100], initial = -1, level = -1, nthreads = -1, num = -1, max_threads = -1, in_parallel = -1;
    int fp_seen = 0;
    long sum = 0;
    struct {
        int v[8];
    } fp = {{1, 2, 3, 4, 5, 6, 7, 8}};
    for (int i = 0; i < 100; i++)
        a[i] = i;
    /* the encountering task's nthreads-var is not the region's */
    int saved = omp_get_max_threads();
    omp_set_num_threads(saved + 2);
#pragma omp target map(tofrom : a, sum) map(from : initial, level, nthreads, num, max_threads, in_parallel, fp_seen) \
    firstprivate(fp)
    {
        for (int i = 0; i < 100; i++) {
            a[i] *= 2;
            sum += a[i];
        }
        initial = omp_is_initial_device();
        level = omp_get_level();
        nthreads = omp_get_num_threads();
        num = omp_get_thread_num();
        max_threads = omp_get_max_threads();
        in_parallel = omp_in_parallel();
        fp.v[0] = 100;
        fp_seen = fp.v[0] + fp.v[7];
    }
    omp_set_num_threads(saved);
    int bad = 0;
    for (int i = 0; i < 100; i++)
        bad += a[i] != 2 * i;
    EXPECT(bad == 0 && sum == 9900, "map(tofrom): %d elements wrong, sum %ld", bad, sum);
    EXPECT(initial == 1 && level == 0 && nthreads == 1 && num == 0 && in_parallel == 0,
           "in the region: initial device %d, level %d, %d threads, thread %d, in parallel %d", initial, level,
           nthreads, num, in_parallel);
    int want = env_int("OMP_NUM_THREADS", omp_get_num_procs());
    EXPECT(max_threads == want, "nthreads-var in the region %d (a new initial thread's: %d)", max_threads, want);
    EXPECT(fp_seen == 108 && fp.v[0] == 1, "firstprivate: the region saw %d (108), the host's copy is %d (1)",
           fp_seen, fp.v[0]);
}

/* target teams distribute parallel for with a reduction; the teams run
 * with their number and the thread limit */
static void check_target_teams(void)
{
    long sum = 0;
    int nteams = 0, limit = 0, seen[3] = {0, 0, 0}, bad = 0, count = 0;
#pragma omp target teams distribute parallel for num_teams(3) thread_limit(2) reduction(+ : sum) \
    map(tofrom : nteams, limit, seen, bad)
    for (int i = 0; i < 3000; i++) {
        sum += i;
        int t = omp_get_team_num();
        if (t < 0 || t >= 3 || omp_get_num_threads() > 2)
            __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
        else
            __atomic_store_n(&seen[t], 1, __ATOMIC_RELAXED);
        if (i == 0) {
            nteams = omp_get_num_teams();
            limit = omp_get_thread_limit();
        }
    }
    EXPECT(sum == 3000L * 2999 / 2 && bad == 0, "reduction %ld (%ld), a team number or size wrong: %d", sum,
           3000L * 2999 / 2, bad);
    EXPECT(nteams == 3 && limit == 2 && seen[0] && seen[1] && seen[2], "%d teams, thread limit %d, seen %d %d %d",
           nteams, limit, seen[0], seen[1], seen[2]);
#pragma omp target teams num_teams(4) map(tofrom : count)
    __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED);
    EXPECT(count == 4, "target teams num_teams(4): %d teams ran", count);
}

/* A target region encountered by each thread of a team, its body
 * starting a team of its own: a top-level team of the region's
 * contention group. The encountering thread stays itself (its TLS: its
 * pthread_self), and the new team's thread is another OpenMP thread than
 * either thread of the encountering team, which are all running. */
static void check_target_in_parallel(void)
{
    int res[2][6], after_bad = 0, tls_bad = 0;
    pthread_t outer[2], master[2], worker[2];
    memset(res, 0xff, sizeof res);
#pragma omp parallel num_threads(2) reduction(+ : after_bad)
    {
        int t = omp_get_thread_num();
        int level = -1, n = -1, num = -1, inner_level = -1, inner_n = -1, inner_active = -1;
        pthread_t me = pthread_self(), m = me, w = me;
        outer[t] = me;
#pragma omp target map(from : level, n, num, inner_level, inner_n, inner_active, m, w)
        {
            level = omp_get_level();
            n = omp_get_num_threads();
            num = omp_get_thread_num();
            m = pthread_self();
#pragma omp parallel num_threads(2)
            if (omp_get_thread_num() == 1) {
                inner_level = omp_get_level();
                inner_n = omp_get_num_threads();
                inner_active = omp_get_active_level();
                w = pthread_self();
            }
        }
        after_bad += omp_get_level() != 1 || omp_get_thread_num() != t || omp_get_num_threads() != 2;
        int *r = res[t];
        r[0] = level, r[1] = n, r[2] = num, r[3] = inner_level, r[4] = inner_n, r[5] = inner_active;
        master[t] = m;
        worker[t] = w;
#pragma omp barrier
    }
    EXPECT(after_bad == 0, "%d threads had the wrong level or number after their target region", after_bad);
    for (int t = 0; t < 2; t++) {
        int *r = res[t];
        EXPECT(r[0] == 0 && r[1] == 1 && r[2] == 0, "thread %d's region: level %d, %d threads, thread %d", t, r[0],
               r[1], r[2]);
        EXPECT(r[3] == 1 && r[5] == 1 && r[4] == 2, "thread %d's region's team: level %d, active level %d, %d threads",
               t, r[3], r[5], r[4]);
        tls_bad += !pthread_equal(master[t], outer[t]) || pthread_equal(worker[t], outer[0]) ||
                   pthread_equal(worker[t], outer[1]);
    }
    if (own_tls())
        EXPECT(tls_bad == 0, "the regions' teams' threads: %d wore another thread's TLS", tls_bad);
    /* the same from the iterations of a combined parallel loop, which
     * libthreadlab-gomp may run as a work descriptor (t2): its parts run
     * on the VPs' own contexts (each iteration works a little first, so
     * that both parts take some) */
    int sizes[16] = {0};
#pragma omp parallel for schedule(dynamic) num_threads(2)
    for (int i = 0; i < 16; i++) {
        int n = 0;
        for (volatile int k = 0; k < 20000; k++)
            ;
#pragma omp target map(from : n)
        {
#pragma omp parallel num_threads(2)
            if (omp_get_thread_num() == 1)
                n = omp_get_num_threads();
        }
        sizes[i] = n;
    }
    int wrong = 0;
    for (int i = 0; i < 16; i++)
        wrong += sizes[i] != 2;
    EXPECT(wrong == 0, "target regions in a combined parallel loop: %d teams of their bodies not of 2", wrong);
}

/* target nowait and depend, ordered against host tasks */
static void check_target_nowait(void)
{
    int x = 0, y = 0, w = 0, q = 0, r = 0, z = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp task depend(out : x) shared(x)
        {
            for (volatile int i = 0; i < 100000; i++)
                ;
            x = 1;
        }
#pragma omp target nowait depend(inout : x) map(tofrom : x)
        x = x * 10 + 2;
#pragma omp task depend(in : x) shared(x, y)
        y = x + 1;
#pragma omp target nowait map(tofrom : w)
        w = 7;
#pragma omp task depend(out : q) shared(q)
        {
            for (volatile int i = 0; i < 100000; i++)
                ;
            q = 5;
        }
        /* without nowait: the encountering task waits for q's writer */
#pragma omp target depend(in : q) map(to : q) map(from : r)
        r = q;
#pragma omp taskwait
    }
    EXPECT(x == 12 && y == 13 && w == 7 && r == 5, "x %d (12), y %d (13), w %d (7), r %d (5)", x, y, w, r);
#pragma omp target nowait map(tofrom : z)
    z = 3;
#pragma omp taskwait
    EXPECT(z == 3, "target nowait outside any region: %d", z);
}

/* target data, update, enter and exit data: the data is the host's */
static void check_target_data(void)
{
    int v[64], d = 0, bad = 0;
    for (int i = 0; i < 64; i++)
        v[i] = i;
#pragma omp target data map(tofrom : v)
    {
#pragma omp target
        for (int i = 0; i < 64; i++)
            v[i] += 1;
#pragma omp target update from(v)
        for (int i = 0; i < 64; i++)
            bad += v[i] != i + 1;
        for (int i = 0; i < 64; i++)
            v[i] += 1;
#pragma omp target update to(v)
#pragma omp target
        for (int i = 0; i < 64; i++)
            v[i] *= 2;
    }
    for (int i = 0; i < 64; i++)
        bad += v[i] != 2 * (i + 2);
    EXPECT(bad == 0, "target data and update: %d elements wrong", bad);
#pragma omp target enter data map(to : v)
#pragma omp target
    for (int i = 0; i < 64; i++)
        v[i] -= 4;
#pragma omp target exit data map(from : v)
    for (int i = 0; i < 64; i++)
        bad += v[i] != 2 * i;
    EXPECT(bad == 0, "enter and exit data: %d elements wrong", bad);
    /* with depend and without nowait, each waits for the host task that
     * writes v before it returns */
    int seen_update = 0, seen_enter = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp task depend(out : v) shared(v)
        {
            for (volatile int i = 0; i < 100000; i++)
                ;
            v[5] = -5;
        }
#pragma omp target update to(v) depend(in : v)
        seen_update = v[5];
#pragma omp task depend(out : v) shared(v)
        {
            for (volatile int i = 0; i < 100000; i++)
                ;
            v[6] = -6;
        }
#pragma omp target enter data map(to : d) depend(inout : v)
        seen_enter = v[6];
#pragma omp target exit data map(from : d) depend(inout : v) nowait
#pragma omp target update from(v) depend(in : v) nowait
#pragma omp taskwait
    }
    EXPECT(seen_update == -5 && seen_enter == -6 && d == 0, "depend: update saw %d (-5), enter data %d (-6)",
           seen_update, seen_enter);
}

/* the device memory routines on the initial device */
static void check_target_memory(void)
{
    int host = omp_get_initial_device();
    int src[20], dst[20], m[4][5], r[3][4], local = 0;
    for (int i = 0; i < 20; i++)
        src[i] = i, dst[i] = -1;
    int *p = omp_target_alloc(20 * sizeof(int), host);
    EXPECT(p != NULL, "omp_target_alloc on the initial device");
    if (!p)
        return;
    EXPECT(omp_target_is_present(p, host) && omp_target_is_present(&local, host) && omp_target_is_present(NULL, host),
           "omp_target_is_present on the initial device");
    EXPECT(omp_target_memcpy(p, src, sizeof src, 0, 0, host, host) == 0, "omp_target_memcpy");
    EXPECT(omp_target_memcpy(dst, p, 10 * sizeof(int), 4 * sizeof(int), 8 * sizeof(int), host, host) == 0,
           "omp_target_memcpy with offsets");
    int bad = 0;
    for (int i = 0; i < 20; i++)
        bad += dst[i] != (i >= 4 && i < 14 ? i + 4 : -1);
    EXPECT(bad == 0, "omp_target_memcpy: %d elements wrong", bad);
    omp_target_free(p, host);
    omp_target_free(NULL, host);
    /* a 2 x 3 block of a 4 x 5 matrix at (1, 1) into a 3 x 4 one at (0, 1) */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            m[i][j] = 10 * i + j;
    memset(r, 0, sizeof r);
    size_t volume[2] = {2, 3}, dst_off[2] = {0, 1}, src_off[2] = {1, 1}, dst_dims[2] = {3, 4}, src_dims[2] = {4, 5};
    EXPECT(omp_target_memcpy_rect(r, m, sizeof(int), 2, volume, dst_off, src_off, dst_dims, src_dims, host, host) == 0,
           "omp_target_memcpy_rect");
    bad = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            bad += r[i][j] != (i < 2 && j >= 1 ? 10 * (i + 1) + j : 0);
    EXPECT(bad == 0, "omp_target_memcpy_rect: %d elements wrong", bad);
    EXPECT(omp_target_memcpy_rect(NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, host, host) >= 3,
           "omp_target_memcpy_rect's dimensions: %d",
           omp_target_memcpy_rect(NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, host, host));
    /* what libgomp answers: the host's memory cannot be associated, and
     * a negative device number is none */
    EXPECT(omp_target_associate_ptr(src, dst, sizeof src, 0, host) != 0 &&
               omp_target_disassociate_ptr(src, host) != 0,
           "omp_target_associate_ptr on the initial device succeeded");
    EXPECT(omp_target_alloc(16, -5) == NULL && omp_target_memcpy(dst, src, 4, 0, 0, -5, host) == EINVAL &&
               !omp_target_is_present(src, -5),
           "device -5 accepted");
}

/* Device numbers: the host's, the fallback of if(false) and the default
 * device run on the host, also under OMP_TARGET_OFFLOAD=mandatory; a
 * number no device has runs on the host too, but is an error under
 * mandatory (the test gomp.target.mandatory). */
static void check_target_devices(void)
{
    int host = omp_get_initial_device(), ran = 0, in_target = -1;
    const char *offload = getenv("OMP_TARGET_OFFLOAD");
#pragma omp target device(host) map(tofrom : ran)
    ran++;
#pragma omp target if (ran < 0) map(tofrom : ran, in_target)
    {
        ran++;
        in_target = omp_get_device_num() == host && omp_is_initial_device();
    }
    int saved = omp_get_default_device();
    omp_set_default_device(host);
#pragma omp target map(tofrom : ran)
    ran++;
    omp_set_default_device(-3);
    EXPECT(omp_get_default_device() == 0, "omp_set_default_device(-3) gave %d (0)", omp_get_default_device());
    omp_set_default_device(saved);
    EXPECT(ran == 3 && in_target == 1, "%d of 3 regions ran; the device number in one %d", ran, in_target);
    int none = omp_get_num_devices() + 5;
    if (offload && !strcmp(offload, "mandatory")) {
        printf("a target region on device %d under OMP_TARGET_OFFLOAD=mandatory (an error)\n", none);
        fflush(stdout);
#pragma omp target device(none) map(tofrom : ran)
        ran++;
        FAIL("a target region on device %d (none) ran under OMP_TARGET_OFFLOAD=mandatory", none);
        return;
    }
#pragma omp target device(none) map(tofrom : ran)
    ran++;
    EXPECT(ran == 4, "a target region on device %d (none) did not run on the host", none);
}

/* Top-level regions of several kernel threads of the program at once:
 * each kernel thread's teams are its own (libgomp gives each a pool of
 * threads), so their threads' threadprivate data persists from one of its
 * regions to the next, whatever the other kernel threads run meanwhile.
 * On a runtime that gave both teams' thread 1 the same TLS, they hung.
 * (libthreadlab-gomp's vp mode, where OpenMP threads see their VP's TLS,
 * runs them without checking threadprivate data.) */
static int roots_tp;
#pragma omp threadprivate(roots_tp)
static int roots_bad, roots_lost;

static void *roots_main(void *arg)
{
    int base = (int)(intptr_t)arg, persist = own_tls() && !omp_get_dynamic();
    for (int r = 0; r < 500; r++) {
#pragma omp parallel num_threads(2)
        {
            int id = omp_get_thread_num();
            if (r > 0 && persist && omp_get_num_threads() == 2 && roots_tp != base + (r - 1) * 2 + id)
                __atomic_fetch_add(&roots_lost, 1, __ATOMIC_RELAXED);
            roots_tp = base + r * 2 + id;
            for (volatile int k = 0; k < 200; k++)
                ;
#pragma omp barrier
            if (own_tls() && roots_tp != base + r * 2 + id)
                __atomic_fetch_add(&roots_bad, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static void check_roots(void)
{
    pthread_t t[3];
    int made = 0;
    for (int i = 0; i < 3; i++)
        made += pthread_create(&t[i], NULL, roots_main, (void *)(intptr_t)((i + 1) * 100000)) == 0;
    EXPECT(made == 3, "pthread_create");
    for (int i = 0; i < made; i++)
        pthread_join(t[i], NULL);
    EXPECT(roots_bad == 0 && roots_lost == 0,
           "3 kernel threads' regions at once: %d threadprivate values changed within a region, %d lost between "
           "regions",
           roots_bad, roots_lost);
}

static const struct {
    const char *name;
    void (*fn)(void);
} checks[] = {
    {"parallel", check_parallel},
    {"nested", check_nested},
    {"loops", check_loops},
    {"ordered", check_ordered},
    {"doacross", check_doacross},
    {"sections", check_sections},
    {"single_master", check_single_master},
    {"sync", check_sync},
    {"reductions", check_reductions},
    {"task_reductions", check_task_reductions},
    {"locks", check_locks},
    {"tasks", check_tasks},
    {"dependences", check_dependences},
    {"tasks_inline", check_tasks_inline},
    {"detach_events", check_detach_events},
    {"detach_signal", check_detach_signal},
    {"detach_taskloop", check_detach_taskloop},
    {"threadprivate", check_threadprivate},
    {"icvs", check_icvs},
    {"lastprivate_scan", check_lastprivate_scan},
    {"regions", check_regions},
    {"roots", check_roots},
    {"dock", check_dock},
    {"target", check_target},
    {"target_teams", check_target_teams},
    {"target_in_parallel", check_target_in_parallel},
    {"target_nowait", check_target_nowait},
    {"target_data", check_target_data},
    {"target_memory", check_target_memory},
    {"target_devices", check_target_devices},
    {"cancel_parallel", check_cancel_parallel},
    {"cancel_for_sections", check_cancel_for_sections},
    {"cancel_taskgroup", check_cancel_taskgroup},
};

int main(int argc, char **argv)
{
    int ran = 0;
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        int wanted = argc < 2 || argv[1][0] == '-';
        for (int a = 1; a < argc; a++)
            if (argv[a][0] == '-' ? !strncmp(argv[a] + 1, checks[i].name, strlen(argv[a] + 1))
                                  : !strcmp(argv[a], checks[i].name))
                wanted = argv[a][0] != '-';
        if (!wanted)
            continue;
        current = checks[i].name;
        int before = failures;
        skip_why = NULL;
        checks[i].fn();
        if (skip_why)
            printf("skip %s: %s\n", checks[i].name, skip_why);
        else if (failures == before)
            printf("ok %s\n", checks[i].name);
        fflush(stdout);
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "omp_conformance: no check named so\n");
        return 2;
    }
    printf("%s: %d checks, %d failures\n", failures ? "FAILED" : "PASSED", ran, failures);
    return failures ? 1 : 0;
}
