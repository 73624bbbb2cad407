/* seq.c - CilkSort's sequential parts: leaf sorts and merges, the median
 * split, the task tree counted on an input, inputs and verification. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cilksort.h"

static void insertion_sort(tlcs_elem *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        tlcs_elem x = a[i];
        size_t j = i;
        for (; j > 0 && a[j - 1] > x; j--)
            a[j] = a[j - 1];
        a[j] = x;
    }
}

static void swap(tlcs_elem *a, size_t i, size_t j)
{
    tlcs_elem t = a[i];
    a[i] = a[j];
    a[j] = t;
}

void tlcs_quicksort(tlcs_elem *a, size_t n)
{
    /* The smaller side recursively, the larger in the loop: O(log n) stack. */
    while (n > 16) {
        size_t mid = n / 2, last = n - 1;
        if (a[mid] < a[0])
            swap(a, mid, 0);
        if (a[last] < a[0])
            swap(a, last, 0);
        if (a[last] < a[mid])
            swap(a, last, mid);
        tlcs_elem pivot = a[mid];
        size_t i = 0, j = last;
        for (;;) {
            while (a[i] < pivot)
                i++;
            while (a[j] > pivot)
                j--;
            if (i >= j)
                break;
            swap(a, i, j);
            i++;
            j--;
        }
        size_t left = j + 1;
        if (left < n - left) {
            tlcs_quicksort(a, left);
            a += left;
            n -= left;
        } else {
            tlcs_quicksort(a + left, n - left);
            n = left;
        }
    }
    insertion_sort(a, n);
}

void tlcs_merge(const tlcs_elem *a, size_t na, const tlcs_elem *b, size_t nb, tlcs_elem *out)
{
    size_t i = 0, j = 0, k = 0;
    while (i < na && j < nb)
        out[k++] = b[j] < a[i] ? b[j++] : a[i++];
    while (i < na)
        out[k++] = a[i++];
    while (j < nb)
        out[k++] = b[j++];
}

size_t tlcs_below(const tlcs_elem *b, size_t nb, tlcs_elem x)
{
    size_t lo = 0, hi = nb;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int tlcs_merge_is_leaf(size_t na, size_t nb)
{
    return (na < nb ? na : nb) <= TLCS_GRAIN;
}

void tlcs_longer_first(const tlcs_elem **a, size_t *na, const tlcs_elem **b, size_t *nb)
{
    if (*na >= *nb)
        return;
    const tlcs_elem *t = *a;
    *a = *b;
    *b = t;
    size_t tn = *na;
    *na = *nb;
    *nb = tn;
}

void tlcs_merge_split(const tlcs_elem *a, size_t na, const tlcs_elem *b, size_t nb, size_t *ma, size_t *mb)
{
    *ma = na / 2;
    *mb = tlcs_below(b, nb, a[*ma]);
}

/* ------------------------------------------------------------ the tree */

static void count_merge(const tlcs_elem *a, size_t na, const tlcs_elem *b, size_t nb, tlcs_elem *out,
                        unsigned level, tlcs_tree *t);

static void note_task(tlcs_tree *t, unsigned level)
{
    t->tasks++;
    if (level > t->depth)
        t->depth = level;
}

/* a[n] is sorted on return, as the task would; tmp holds n elements. */
static void count_sort(tlcs_elem *a, tlcs_elem *tmp, size_t n, unsigned level, tlcs_tree *t)
{
    t->sort_tasks++;
    note_task(t, level);
    if (n <= TLCS_GRAIN) {
        t->leaves++;
        tlcs_quicksort(a, n);
        return;
    }
    size_t q = n / 4, off[5] = {0, q, 2 * q, 3 * q, n};
    t->spawn_calls += 3; /* 4 sorts, 2 merges, 1 merge */
    for (int i = 0; i < 4; i++)
        count_sort(a + off[i], tmp + off[i], off[i + 1] - off[i], level + 1, t);
    count_merge(a, off[1], a + off[1], off[2] - off[1], tmp, level + 1, t);
    count_merge(a + off[2], off[3] - off[2], a + off[3], off[4] - off[3], tmp + off[2], level + 1, t);
    count_merge(tmp, off[2], tmp + off[2], off[4] - off[2], a, level + 1, t);
}

static void count_merge(const tlcs_elem *a, size_t na, const tlcs_elem *b, size_t nb, tlcs_elem *out,
                        unsigned level, tlcs_tree *t)
{
    t->merge_tasks++;
    note_task(t, level);
    if (tlcs_merge_is_leaf(na, nb)) {
        t->leaves++;
        tlcs_merge(a, na, b, nb, out);
        return;
    }
    size_t ma, mb;
    tlcs_longer_first(&a, &na, &b, &nb);
    tlcs_merge_split(a, na, b, nb, &ma, &mb);
    t->spawn_calls++;
    count_merge(a, ma, b, mb, out, level + 1, t);
    count_merge(a + ma, na - ma, b + mb, nb - mb, out + ma + mb, level + 1, t);
}

void tlcs_count_tree(const tlcs_elem *input, size_t n, tlcs_tree *out)
{
    memset(out, 0, sizeof *out);
    tlcs_elem *a = malloc((n ? n : 1) * sizeof *a), *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!a || !tmp) {
        free(a);
        free(tmp);
        return;
    }
    memcpy(a, input, n * sizeof *a);
    out->spawn_calls = 1; /* the start's */
    count_sort(a, tmp, n, 1, out);
    free(a);
    free(tmp);
}

/* -------------------------------------------------------------- inputs */

/* splitmix64: a seeded generator with no state outside the call. */
static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

void tlcs_generate(tlcs_elem *a, size_t n, int kind, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        switch (kind) {
        case TLCS_SORTED: a[i] = (tlcs_elem)i; break;
        case TLCS_REVERSED: a[i] = (tlcs_elem)(n - 1 - i); break;
        default: a[i] = (tlcs_elem)(next_random(&s) >> 33); break;
        }
    }
}

long tlcs_read_file(const char *path, tlcs_elem *a, size_t n, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    size_t got = 0;
    long v;
    while (got < n && fscanf(f, "%ld", &v) == 1) {
        if (v < INT32_MIN || v > INT32_MAX) {
            snprintf(err, errlen, "%s: value %ld (element %zu) is not a 32-bit integer", path, v, got + 1);
            fclose(f);
            return -1;
        }
        a[got++] = (tlcs_elem)v;
    }
    if (got < n && !feof(f)) {
        snprintf(err, errlen, "%s: element %zu is not an integer", path, got + 1);
        fclose(f);
        return -1;
    }
    fclose(f);
    return (long)got;
}

/* ---------------------------------------------------------- verification */

int tlcs_is_sorted(const tlcs_elem *a, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (a[i - 1] > a[i])
            return 0;
    return 1;
}

static int compare(const void *x, const void *y)
{
    tlcs_elem a = *(const tlcs_elem *)x, b = *(const tlcs_elem *)y;
    return (a > b) - (a < b);
}

int tlcs_is_permutation(const tlcs_elem *in, const tlcs_elem *out, size_t n)
{
    tlcs_elem *copy = malloc((n ? n : 1) * sizeof *copy);
    if (!copy)
        return 0;
    memcpy(copy, in, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, compare);
    tlcs_elem *sorted_out = malloc((n ? n : 1) * sizeof *sorted_out);
    if (!sorted_out) {
        free(copy);
        return 0;
    }
    memcpy(sorted_out, out, n * sizeof *sorted_out);
    qsort(sorted_out, n, sizeof *sorted_out, compare);
    int same = memcmp(copy, sorted_out, n * sizeof *copy) == 0;
    free(copy);
    free(sorted_out);
    return same;
}
