/*
 * cilksort.h - CilkSort as seed 001 ran it over MPI (docs/spawn.md,
 * "CilkSort"): the pieces that need no MPI (sequential sorts, the median
 * split, the task tree, inputs, verification) and the MPI protocol's
 * roles.
 *
 * The algorithm (Cilk-5's cilksort, as the seed's Code 3):
 *   sort(in[n]):  n <= TLCS_GRAIN: quicksort.  Else spawn 4 sort tasks on
 *                 the quarters; then 2 merge tasks (A+B, C+D); then 1 merge
 *                 task (AB+CD).
 *   merge(A, B):  with A the longer: |B| <= TLCS_GRAIN: a sequential merge
 *                 (Cilk-5's rule: the shorter array decides).  Else
 *                 ma = |A|/2 and mb = the number of elements of B below
 *                 A[ma]; spawn 2 merge tasks on (A[..ma], B[..mb]) and
 *                 (A[ma..], B[mb..]); their results, one after the other,
 *                 are the merge.
 * Every task receives its count(s), then its elements, and sends its
 * result back to its parent (the seed's two synchronizations).
 */
#ifndef THREADLAB_CILKSORT_H
#define THREADLAB_CILKSORT_H

#include <stddef.h>
#include <stdint.h>

#define TLCS_GRAIN 2048 /* the seed's: sequential at or below 2048 elements */

typedef int tlcs_elem;

/* ------------------------------------------------------- sequential parts */

/* Quicksort (median of three, insertion sort below 16): the seed's leaf
 * sort. */
void tlcs_quicksort(tlcs_elem *a, size_t n);
/* 1 when a merge task of arrays of na and nb elements merges itself. */
int tlcs_merge_is_leaf(size_t na, size_t nb);
/* out[na+nb] = merge of sorted a[na] and b[nb]. */
void tlcs_merge(const tlcs_elem *a, size_t na, const tlcs_elem *b, size_t nb, tlcs_elem *out);
/* The number of elements of sorted b[nb] below x. */
size_t tlcs_below(const tlcs_elem *b, size_t nb, tlcs_elem x);
/* Puts the longer of two arrays first (a merge splits the longer). */
void tlcs_longer_first(const tlcs_elem **a, size_t *na, const tlcs_elem **b, size_t *nb);
/* The split of a merge task whose first array is the longer: *ma and *mb
 * as above. */
void tlcs_merge_split(const tlcs_elem *a, size_t na, const tlcs_elem *b, size_t nb, size_t *ma, size_t *mb);

/* ----------------------------------------------------------- the task tree */

/* The tasks a run spawns, counted on the input without running it (the
 * tree of merges depends on the values). */
typedef struct {
    uint64_t tasks;        /* every spawned task, the start's first sort included */
    uint64_t sort_tasks;
    uint64_t merge_tasks;
    uint64_t leaves;       /* tasks that sort or merge sequentially */
    uint64_t spawn_calls;  /* MPI_Comm_spawn calls (4 sorts are one call) */
    unsigned depth;        /* levels of tasks below the start */
} tlcs_tree;

void tlcs_count_tree(const tlcs_elem *input, size_t n, tlcs_tree *out);

/* ------------------------------------------------------ inputs and checks */

enum { TLCS_RANDOM = 0, TLCS_SORTED, TLCS_REVERSED };

/* n elements: random (from seed), sorted or reversed (distinct values). */
void tlcs_generate(tlcs_elem *a, size_t n, int kind, uint64_t seed);
/* Reads up to n integers (text, whitespace-separated) from path; returns
 * how many, or -1 with a message in err. */
long tlcs_read_file(const char *path, tlcs_elem *a, size_t n, char *err, size_t errlen);

/* 1 when out[n] is sorted; 1 when out is a permutation of in (sorts a
 * copy of in with qsort and compares). */
int tlcs_is_sorted(const tlcs_elem *a, size_t n);
int tlcs_is_permutation(const tlcs_elem *in, const tlcs_elem *out, size_t n);

#endif
