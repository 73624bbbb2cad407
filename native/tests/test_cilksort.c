/* test_cilksort.c - CilkSort's sequential parts (native/spawn/cilksort):
 * the leaf quicksort and merge, the median split, inputs, the checks, and
 * the task tree, including the seed's own figure: 3 million random
 * integers make 13,313 MPI_Comm_spawn calls (27,990 tasks). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cilksort.h"

static void test_quicksort(void)
{
    size_t sizes[] = {0, 1, 2, 15, 16, 17, 100, 2048, 10007};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        tlcs_elem *a = malloc((n + 1) * sizeof *a), *orig = malloc((n + 1) * sizeof *orig);
        for (int kind = 0; kind < 4; kind++) {
            if (kind < 3)
                tlcs_generate(a, n, kind, 42 + s);
            else
                for (size_t i = 0; i < n; i++)
                    a[i] = (tlcs_elem)(i % 7); /* many equal values */
            memcpy(orig, a, n * sizeof *a);
            tlcs_quicksort(a, n);
            CHECK(tlcs_is_sorted(a, n));
            CHECK(tlcs_is_permutation(orig, a, n));
        }
        free(a);
        free(orig);
    }
}

static void test_merge_and_split(void)
{
    enum { NA = 3000, NB = 2500 };
    tlcs_elem a[NA], b[NB], out[NA + NB];
    tlcs_generate(a, NA, TLCS_RANDOM, 7);
    tlcs_generate(b, NB, TLCS_RANDOM, 8);
    tlcs_quicksort(a, NA);
    tlcs_quicksort(b, NB);
    tlcs_merge(a, NA, b, NB, out);
    CHECK(tlcs_is_sorted(out, NA + NB));
    CHECK(tlcs_below(b, NB, b[0]) == 0);
    CHECK(tlcs_below(b, NB, INT32_MAX) == NB || b[NB - 1] == INT32_MAX);
    size_t ma, mb;
    /* b longer: put first, and the split is of b (then a). */
    const tlcs_elem *x = a, *y = b;
    size_t nx = 100, ny = NB;
    tlcs_longer_first(&x, &nx, &y, &ny);
    CHECK(x == b && nx == NB && y == a && ny == 100);
    tlcs_merge_split(x, nx, y, ny, &ma, &mb);
    CHECK(ma == NB / 2);
    CHECK(mb == tlcs_below(a, 100, b[ma]));
    x = a, y = b, nx = NA, ny = NB;
    tlcs_longer_first(&x, &nx, &y, &ny);
    CHECK(x == a && nx == NA);
    tlcs_merge_split(a, NA, b, NB, &ma, &mb);
    CHECK(ma == NA / 2);
    /* Everything left of the split is at most everything right of it. */
    tlcs_elem left_max = a[ma - 1];
    if (mb && b[mb - 1] > left_max)
        left_max = b[mb - 1];
    tlcs_elem right_min = a[ma];
    if (mb < NB && b[mb] < right_min)
        right_min = b[mb];
    CHECK(left_max <= right_min);
    /* The shorter array decides a leaf (Cilk-5's rule). */
    CHECK(tlcs_merge_is_leaf(1000000, TLCS_GRAIN));
    CHECK(!tlcs_merge_is_leaf(TLCS_GRAIN + 1, TLCS_GRAIN + 1));
}

static void test_checks_detect(void)
{
    tlcs_elem in[5] = {3, 1, 2, 5, 4}, good[5] = {1, 2, 3, 4, 5}, bad[5] = {1, 2, 3, 4, 4};
    CHECK(!tlcs_is_sorted(in, 5));
    CHECK(tlcs_is_sorted(good, 5));
    CHECK(tlcs_is_permutation(in, good, 5));
    CHECK(!tlcs_is_permutation(in, bad, 5));
}

static void test_tree(void)
{
    tlcs_elem *a = malloc(3000000 * sizeof *a);
    tlcs_tree t;
    tlcs_generate(a, TLCS_GRAIN, TLCS_RANDOM, 1);
    tlcs_count_tree(a, TLCS_GRAIN, &t);
    CHECK(t.tasks == 1 && t.leaves == 1 && t.spawn_calls == 1 && t.depth == 1);
    /* One level: 4 sorts of ~512 and 3 merges, all sequential. */
    tlcs_generate(a, 2049, TLCS_RANDOM, 1);
    tlcs_count_tree(a, 2049, &t);
    CHECK(t.tasks == 8 && t.sort_tasks == 5 && t.merge_tasks == 3);
    CHECK(t.leaves == 7 && t.spawn_calls == 4 && t.depth == 2);
    /* The seed's input: 3 million random integers. Its "13,313 tasks" are
     * the MPI_Comm_spawn calls; the tasks those calls start are 27,990
     * (a call starts 4 sorts or 2 merges or 1). */
    for (uint64_t seed = 1; seed <= 3; seed++) {
        tlcs_generate(a, 3000000, TLCS_RANDOM, seed);
        tlcs_count_tree(a, 3000000, &t);
        CHECK(t.spawn_calls == 13313);
        CHECK(t.tasks == 27990);
        CHECK(t.sort_tasks == 5461);
    }
    /* Sorted and reversed: the seed reports 7,154 for both. */
    tlcs_tree r;
    tlcs_generate(a, 3000000, TLCS_SORTED, 0);
    tlcs_count_tree(a, 3000000, &t);
    tlcs_generate(a, 3000000, TLCS_REVERSED, 0);
    tlcs_count_tree(a, 3000000, &r);
    CHECK(t.spawn_calls == 7145 && r.spawn_calls == 7145);
    CHECK(t.tasks == 15654 && r.tasks == 15654);
    free(a);
}

int main(void)
{
    test_quicksort();
    test_merge_and_split();
    test_checks_detect();
    test_tree();
    return check_report("test_cilksort");
}
