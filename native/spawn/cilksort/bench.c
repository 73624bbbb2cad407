/* bench.c - spawn.cilksort: the start of one CilkSort (the seed's
 * cilksort-start), as a native benchmark (docs/native-protocol.md): it
 * makes the input, spawns the first sort task, sends it the count and
 * the elements, receives the sorted result, and emits one record with the
 * time of that whole tree of spawned tasks, how many tasks were threads
 * and how many processes, and the checks: sorted, a permutation of the
 * input, and exactly the tasks the algorithm makes on that input.
 *
 * The thread limit is the launcher's (threadlab-spawn-mpirun sets
 * THREADLAB_SPAWN_MAX_THREADS); the max_threads parameter names the one
 * the point is for, and a run under another is refused, so a record
 * always says what it measured. */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cilksort_mpi.h"
#include "threadlab/bench.h"

#pragma weak tl_spawn_get_stats
#pragma weak tl_spawn_version

static const char *const n_values[] = {"3000000", NULL};
static const char *const n_quick[] = {"100000", NULL};
static const char *const input_values[] = {"random", "sorted", "reversed", NULL};
static const char *const seed_values[] = {"1", "2", "3", NULL};
static const char *const seed_quick[] = {"1", NULL};
static const char *const max_values[] = {"process-only", "1", "2", "4", "20", "80", "100", NULL};

static const char *check_input(const char *v)
{
    return strncmp(v, "file:", 5) == 0 && v[5] ? NULL : "random, sorted, reversed or file:PATH";
}

static const char *check_max(const char *v)
{
    if (!strcmp(v, "process-only") || !strcmp(v, "auto"))
        return NULL;
    return tl_check_positive_int(v) ? "process-only, auto or a positive number of threads" : NULL;
}

static const char *check_seed(const char *v)
{
    char *end;
    unsigned long long s = strtoull(v, &end, 10);
    (void)s;
    return *v && !*end ? NULL : "a non-negative integer";
}

static const tl_param_def params[] = {
    {.name = "n", .help = "integers to sort (the seed's 3 million)", .values = n_values, .quick_values = n_quick,
     .check = tl_check_positive_int},
    {.name = "input", .help = "random (from seed), sorted, reversed, or file:PATH (whitespace-separated integers)",
     .values = input_values, .check = check_input},
    {.name = "seed", .help = "seed of a random input (the seed paper's 3 random inputs: 1, 2, 3)",
     .values = seed_values, .quick_values = seed_quick, .check = check_seed},
    {.name = "max_threads",
     .help = "the thread limit the run is under: process-only (plain MPI) or the launcher's "
             "THREADLAB_SPAWN_MAX_THREADS",
     .values = max_values, .check = check_max},
    {0},
};

/* The library's state, or NULL when the program runs on plain MPI. */
static int library_limit(long *limit, int *counts)
{
    if (!tl_spawn_get_stats)
        return 0;
    tl_spawn_stats s;
    tl_spawn_get_stats(&s);
    *limit = s.limit;
    if (counts)
        *counts = s.limit_counts;
    return 1;
}

static int check_mode(tl_ctx *ctx, const char *max)
{
    long limit = 0;
    int lib = library_limit(&limit, NULL);
    if (!strcmp(max, "process-only")) {
        if (lib && limit != 0) {
            tl_fail(ctx, "max_threads=process-only, but libthreadlab-spawn runs with a limit of %ld threads "
                         "(run it without the library, or with THREADLAB_SPAWN_MAX_THREADS=0)", limit);
            return -1;
        }
        return 0;
    }
    if (!lib) {
        tl_fail(ctx, "max_threads=%s, but libthreadlab-spawn is not loaded (run it through threadlab-spawn-mpirun "
                     "--max-threads %s)", max, max);
        return -1;
    }
    if (strcmp(max, "auto") != 0 && limit != atol(max)) {
        tl_fail(ctx, "max_threads=%s, but libthreadlab-spawn runs with a limit of %ld threads", max, limit);
        return -1;
    }
    return 0;
}

static int make_input(tl_ctx *ctx, tlcs_elem *a, size_t n)
{
    const char *input = tl_param(ctx, "input");
    if (!strncmp(input, "file:", 5)) {
        char err[512];
        long got = tlcs_read_file(input + 5, a, n, err, sizeof err);
        if (got < 0) {
            tl_fail(ctx, "%s", err);
            return -1;
        }
        if ((size_t)got < n) {
            tl_fail(ctx, "%s holds %ld integers, fewer than n=%zu", input + 5, got, n);
            return -1;
        }
        return 0;
    }
    int kind = !strcmp(input, "sorted") ? TLCS_SORTED : !strcmp(input, "reversed") ? TLCS_REVERSED : TLCS_RANDOM;
    tlcs_generate(a, n, kind, strtoull(tl_param(ctx, "seed"), NULL, 10));
    return 0;
}

static void mpi_name(char *out, size_t len)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int l = 0;
    MPI_Get_library_version(lib, &l);
    lib[strcspn(lib, "\n,")] = '\0';
    snprintf(out, len, "%s", lib);
}

static int run_cilksort(tl_ctx *ctx)
{
    size_t n = (size_t)tl_param_long(ctx, "n", 1, INT_MAX);
    const char *max = tl_param(ctx, "max_threads");
    int provided = 0;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    int rc = -1;
    tlcs_elem *input = malloc(n * sizeof *input), *result = malloc(n * sizeof *result);
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (!input || !result) {
        tl_fail(ctx, "out of memory for %zu integers", n);
        goto out;
    }
    if (len <= 0) {
        tl_fail(ctx, "cannot read /proc/self/exe: the program must spawn itself");
        goto out;
    }
    self[len] = '\0';
    if (check_mode(ctx, max) != 0 || make_input(ctx, input, n) != 0)
        goto out;
    tlcs_tree expected;
    tlcs_count_tree(input, n, &expected);

    tlcs_tally tally = {{0}};
    double t0 = MPI_Wtime();
    MPI_Comm kid = tlcs_spawn(self, "sort", 1, &tally);
    long long count = (long long)n;
    MPI_Send(&count, 1, MPI_LONG_LONG, 0, TLCS_TAG_COUNT, kid);
    MPI_Send(input, (int)n, MPI_INT, 0, TLCS_TAG_DATA, kid);
    MPI_Recv(result, (int)n, MPI_INT, 0, TLCS_TAG_RESULT, kid, MPI_STATUS_IGNORE);
    double t1 = MPI_Wtime();
    tlcs_tally sub;
    MPI_Recv(sub.v, TLCS_TALLY_FIELDS, MPI_LONG_LONG, 0, TLCS_TAG_TALLY, kid, MPI_STATUS_IGNORE);
    tlcs_tally_add(&tally, &sub);
    MPI_Comm_disconnect(&kid);

    double seconds = t1 - t0;
    tl_add_sample(ctx, seconds);
    long long tasks = tally.v[TLCS_THREADS] + tally.v[TLCS_PROCESSES];
    int sorted = tlcs_is_sorted(result, n);
    tl_check(ctx, "sorted", sorted, NAN, sorted ? "the result is in order" : "the result is NOT in order");
    int perm = tlcs_is_permutation(input, result, n);
    tl_check(ctx, "permutation", perm, NAN,
             perm ? "the result holds the input's integers" : "the result is NOT a permutation of the input");
    int tree = tasks == (long long)expected.tasks && tally.v[TLCS_CALLS] == (long long)expected.spawn_calls &&
               tally.v[TLCS_LEAVES] == (long long)expected.leaves;
    tl_check(ctx, "tasks", tree, (double)tasks,
             "%lld tasks in %lld spawn calls, %lld sequential (the algorithm makes %llu in %llu, %llu on this input)",
             tasks, tally.v[TLCS_CALLS], tally.v[TLCS_LEAVES], (unsigned long long)expected.tasks,
             (unsigned long long)expected.spawn_calls, (unsigned long long)expected.leaves);
    int plain = !strcmp(max, "process-only");
    int kinds_ok = plain ? tally.v[TLCS_THREADS] == 0 : tally.v[TLCS_THREADS] > 0;
    tl_check(ctx, "threads", kinds_ok, (double)tally.v[TLCS_THREADS],
             "%lld tasks were threads, %lld processes (%s)", tally.v[TLCS_THREADS], tally.v[TLCS_PROCESSES],
             plain ? "process-only: no thread expected" : "the first spawns fit the limit: threads expected");

    tl_extra_num(ctx, "tasks", (double)tasks);
    tl_extra_num(ctx, "thread_tasks", (double)tally.v[TLCS_THREADS]);
    tl_extra_num(ctx, "process_tasks", (double)tally.v[TLCS_PROCESSES]);
    tl_extra_num(ctx, "spawn_calls", (double)tally.v[TLCS_CALLS]);
    tl_extra_num(ctx, "sequential_tasks", (double)tally.v[TLCS_LEAVES]);
    tl_extra_num(ctx, "depth", expected.depth);
    tl_extra_num(ctx, "time_per_task_ms", tasks ? 1e3 * seconds / (double)tasks : NAN);
    long limit = 0;
    int counts = TL_SPAWN_COUNTS_RUNNING;
    if (library_limit(&limit, &counts)) {
        tl_extra_num(ctx, "limit", (double)limit);
        tl_extra_str(ctx, "limit_counts", counts == TL_SPAWN_COUNTS_RUNNABLE ? "runnable" : "running");
    }
    char name[MPI_MAX_LIBRARY_VERSION_STRING];
    mpi_name(name, sizeof name);
    tl_extra_str(ctx, "mpi", name);
    tl_extra_num(ctx, "thread_level", provided);
    tl_extra_str(ctx, "library", tl_spawn_version ? tl_spawn_version() : "none (plain MPI)");
    rc = 0;
out:
    free(input);
    free(result);
    MPI_Finalize();
    return rc;
}

const tl_bench tlcs_benches[] = {
    {.name = "spawn.cilksort",
     .model = "mpi-spawn",
     .suite = "spawn",
     .summary = "CilkSort over MPI_Comm_spawn (seed 001): 4 sort and 3 merge tasks per level, sequential at 2048",
     .quantity = "time of one CilkSort, from the first spawn to the sorted result",
     .unit = "s",
     .params = params,
     .run = run_cilksort},
    {0},
};
