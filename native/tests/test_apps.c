/* test_apps.c - the application study's work split and kernels (ctest
 * apps.split_and_kernels): the split covers every item exactly once for any
 * worker count, and each kernel's verification accepts its result over any
 * split and refuses a corrupted one or a lost item. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "threadlab/apps.h"

static void test_split_covers_every_item_once(void)
{
    static const uint64_t sizes[] = {0, 1, 2, 3, 7, 10, 64, 97, 1000, 1001, 65537};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        uint64_t n = sizes[s];
        for (unsigned workers = 1; workers <= 70; workers++) {
            unsigned char *seen = calloc(n + 1, 1);
            uint64_t expect_begin = 0, smallest = UINT64_MAX, largest = 0;
            for (unsigned t = 0; t < workers; t++) {
                tl_app_range r = tl_app_split(n, t, workers);
                CHECK(r.begin == expect_begin); /* contiguous, in worker order */
                CHECK(r.begin <= r.end && r.end <= n);
                for (uint64_t i = r.begin; i < r.end; i++)
                    seen[i]++;
                uint64_t len = r.end - r.begin;
                smallest = len < smallest ? len : smallest;
                largest = len > largest ? len : largest;
                expect_begin = r.end;
            }
            CHECK(expect_begin == n);
            CHECK(largest - smallest <= 1); /* balanced */
            int once = 1;
            for (uint64_t i = 0; i < n; i++)
                once &= seen[i] == 1;
            CHECK(once);
            free(seen);
        }
    }
    /* Huge sizes: no overflow, the last range ends at n. */
    uint64_t n = UINT64_MAX - 5;
    tl_app_range last = tl_app_split(n, 6, 7);
    CHECK(last.end == n);
    CHECK(tl_app_split(n, 0, 7).end - tl_app_split(n, 0, 7).begin == n / 7 + (n % 7 > 0));
    /* Degenerate calls. */
    tl_app_range none = tl_app_split(10, 0, 0);
    CHECK(none.begin == 0 && none.end == 0);
    none = tl_app_split(10, 5, 5);
    CHECK(none.begin == none.end);
}

/* Runs a kernel over `workers` ranges sequentially, like the platforms do
 * in parallel; drop_item removes one item from worker `workers - 1`. */
static tl_app_verdict run_kernel(const tl_app_kernel *k, uint64_t items, unsigned workers, int inject, int drop_item)
{
    static volatile unsigned long imul = 7, iadd = 3;
    static volatile double fmul = 3.0, fadd = 1.5;
    tl_app_operands ops = {.imul = imul, .iadd = iadd, .fmul = fmul, .fadd = fadd, .items = items};
    tl_app_partial *parts = calloc(workers, sizeof *parts);
    for (unsigned t = 0; t < workers; t++) {
        tl_app_range r = tl_app_split(items, t, workers);
        if (drop_item && t == workers - 1 && r.end > r.begin)
            r.end--;
        k->work(&ops, r.begin, r.end, &parts[t]);
    }
    tl_app_verdict v;
    memset(&v, 0, sizeof v);
    k->verdict(&ops, parts, workers, inject, &v);
    free(parts);
    return v;
}

static void test_kernels_verify(void)
{
    for (const tl_app_kernel *const *k = tl_app_kernels; *k; k++) {
        CHECK(tl_app_find_kernel((*k)->name) == *k);
        CHECK((*k)->default_size % (*k)->ops_per_item == 0);
        CHECK((*k)->quick_size % (*k)->ops_per_item == 0);
        CHECK((*k)->paper_size % (*k)->ops_per_item == 0);
        /* Sizes that straddle the 2^20 blocks of MIPS/MFLOPS, and worker
         * counts that do not divide them. */
        static const uint64_t sizes[] = {1, 5, 1000, 1048575, 1048577, 3000017};
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            for (unsigned workers = 1; workers <= 9; workers += 2) {
                tl_app_verdict v = run_kernel(*k, sizes[s], workers, 0, 0);
                if (!v.verified)
                    fprintf(stderr, "%s items=%llu workers=%u: result %.17g expected %.17g error %g bound %g\n",
                            (*k)->name, (unsigned long long)sizes[s], workers, v.result, v.expected, v.error,
                            v.bound);
                CHECK(v.verified);
                CHECK(!run_kernel(*k, sizes[s], workers, 1, 0).verified); /* --inject-error is caught */
            }
        }
    }
    CHECK(tl_app_find_kernel("nope") == NULL);
}

static void test_lost_item_is_caught(void)
{
    /* The exact checksums of MIPS and MFLOPS catch a single lost item. */
    CHECK(!run_kernel(&tl_app_kernel_mips, 3000017, 4, 0, 1).verified);
    CHECK(!run_kernel(&tl_app_kernel_mflops, 3000017, 4, 0, 1).verified);
    /* pi: losing the first term (1.0) of a range is far outside the bound. */
    CHECK(!run_kernel(&tl_app_kernel_pi, 1, 1, 0, 1).verified);
    CHECK(!run_kernel(&tl_app_kernel_trapezoid, 1000, 1, 0, 1).verified);
}

static void test_known_values(void)
{
    /* MIPS over 3 items: w = 1 + 2 + 3. */
    tl_app_verdict v = run_kernel(&tl_app_kernel_mips, 3, 2, 0, 0);
    CHECK(v.integer && v.iresult == 6 && v.iexpected == 6);
    /* MFLOPS over 3 items: (1 + 0.5) + (2 + 0.5) + (3 + 0.5), exactly. */
    v = run_kernel(&tl_app_kernel_mflops, 3, 2, 0, 0);
    CHECK(v.result == 7.5 && v.expected == 7.5 && v.bound == 0.0);
    /* pi with 2 terms: 4 (1 - 1/3). */
    v = run_kernel(&tl_app_kernel_pi, 2, 2, 0, 0);
    CHECK_NEAR(v.result, 8.0 / 3.0, 1e-15);
    /* One trapezoid: (f(1) + f(2)) / 2 = (5 + 17) / 2; exact 121/12 + 11/12. */
    v = run_kernel(&tl_app_kernel_trapezoid, 1, 1, 0, 0);
    CHECK_NEAR(v.result, 11.0, 1e-14);
    CHECK_NEAR(v.result - v.expected, 11.0 / 12.0, 1e-14);
}

int main(void)
{
    test_split_covers_every_item_once();
    test_kernels_verify();
    test_lost_item_is_caught();
    test_known_values();
    return check_report("apps");
}
