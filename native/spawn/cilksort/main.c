/* main.c - threadlab-spawn-cilksort: CilkSort as one MPMD program, the
 * role in argv (the seed's cilksort-start, -sort and -merge as one binary,
 * so that libthreadlab-spawn can run its children as threads).
 *
 *   threadlab-spawn-cilksort --list | --env | --run spawn.cilksort [--param ...]
 *       the start: one CilkSort, one record (docs/native-protocol.md)
 *   threadlab-spawn-cilksort sort | merge
 *       a task, started by MPI_Comm_spawn only
 *   threadlab-spawn-cilksort count N random|sorted|reversed [SEED]
 *       the task tree a run would make, counted without MPI (one JSON
 *       line): what `threadlab study spawn` estimates a cell from
 *
 * No global state: with the library the tasks are threads of one process. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cilksort_mpi.h"
#include "mpi_env.h"
#include "threadlab/bench.h"
#include "threadlab/json.h"

extern const tl_bench tlcs_benches[];

static int count_main(int argc, char **argv)
{
    const char *usage = "usage: threadlab-spawn-cilksort count N random|sorted|reversed [SEED]";
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "%s\n", usage);
        return 2;
    }
    char *end;
    errno = 0;
    long n = strtol(argv[2], &end, 10);
    if (errno || *end || n < 1 || n > 2147483647L) {
        fprintf(stderr, "threadlab-spawn-cilksort: count %s: expected N from 1 to 2147483647\n", argv[2]);
        return 2;
    }
    int kind = !strcmp(argv[3], "random") ? TLCS_RANDOM : !strcmp(argv[3], "sorted") ? TLCS_SORTED
               : !strcmp(argv[3], "reversed") ? TLCS_REVERSED : -1;
    if (kind < 0) {
        fprintf(stderr, "threadlab-spawn-cilksort: count: input %s: expected random, sorted or reversed\n", argv[3]);
        return 2;
    }
    unsigned long long seed = argc == 5 ? strtoull(argv[4], &end, 10) : 1;
    if (argc == 5 && (*end || !*argv[4])) {
        fprintf(stderr, "threadlab-spawn-cilksort: count: seed %s: expected a non-negative integer\n", argv[4]);
        return 2;
    }
    tlcs_elem *a = malloc((size_t)n * sizeof *a);
    if (!a) {
        fprintf(stderr, "threadlab-spawn-cilksort: count: out of memory for %ld integers\n", n);
        return 1;
    }
    tlcs_generate(a, (size_t)n, kind, seed);
    tlcs_tree t;
    tlcs_count_tree(a, (size_t)n, &t);
    free(a);
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "n"); tl_json_int(&j, n);
    tl_json_key(&j, "tasks"); tl_json_int(&j, (long long)t.tasks);
    tl_json_key(&j, "sort_tasks"); tl_json_int(&j, (long long)t.sort_tasks);
    tl_json_key(&j, "merge_tasks"); tl_json_int(&j, (long long)t.merge_tasks);
    tl_json_key(&j, "sequential_tasks"); tl_json_int(&j, (long long)t.leaves);
    tl_json_key(&j, "spawn_calls"); tl_json_int(&j, (long long)t.spawn_calls);
    tl_json_key(&j, "depth"); tl_json_int(&j, t.depth);
    tl_json_end_object(&j);
    tl_json_emit(&j);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "sort") || !strcmp(argv[1], "merge"))) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        MPI_Comm parent;
        MPI_Comm_get_parent(&parent);
        int rc = 2;
        if (parent == MPI_COMM_NULL)
            fprintf(stderr, "threadlab-spawn-cilksort: '%s' is a task, started by MPI_Comm_spawn only; "
                            "run --run spawn.cilksort\n", argv[1]);
        else
            rc = tlcs_child_main(argv[0], argv[1], parent);
        MPI_Finalize();
        return rc;
    }
    if (argc >= 2 && !strcmp(argv[1], "count"))
        return count_main(argc, argv);
    tl_spawn_program_env(argc, argv);
    return tl_main(argc, argv, tlcs_benches);
}
