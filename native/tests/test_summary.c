/* test_summary.c - the summary statistics against hand-computed values. */
#include "check.h"
#include "threadlab/summary.h"

int main(void)
{
    /* 2,4,4,4,5,5,7,9: mean 5, sample sd sqrt(32/7), median 4.5. */
    const double v[] = {2, 4, 4, 4, 5, 5, 7, 9};
    tl_summary s = tl_summarize(v, 8);
    CHECK(s.n == 8);
    CHECK_NEAR(s.mean, 5.0, 1e-12);
    CHECK_NEAR(s.sd, sqrt(32.0 / 7.0), 1e-12);
    CHECK_NEAR(s.rsd, sqrt(32.0 / 7.0) / 5.0, 1e-12);
    CHECK_NEAR(s.se, sqrt(32.0 / 7.0) / sqrt(8.0), 1e-12);
    CHECK_NEAR(s.rse, s.se / 5.0, 1e-12);
    CHECK_NEAR(s.median, 4.5, 1e-12);
    CHECK(s.min == 2 && s.max == 9);
    CHECK_NEAR(tl_summary_spread(&s, 0), s.rsd, 0);
    CHECK_NEAR(tl_summary_spread(&s, 1), s.rse, 0);

    /* Odd count, unsorted input: the median is the middle order statistic. */
    const double odd[] = {9, 1, 5};
    CHECK_NEAR(tl_median(odd, 3), 5.0, 0);
    CHECK(odd[0] == 9); /* the input is not reordered */

    /* A large constant offset must not destroy the variance (Welford). */
    const double big[] = {1e12 + 1, 1e12 + 2, 1e12 + 3};
    tl_summary b = tl_summarize(big, 3);
    CHECK_NEAR(b.sd, 1.0, 1e-6);

    /* One sample has no spread; none has nothing. */
    tl_summary one = tl_summarize(v, 1);
    CHECK(one.n == 1 && one.mean == 2 && isnan(one.sd));
    tl_summary none = tl_summarize(v, 0);
    CHECK(none.n == 0 && isnan(none.mean));
    return check_report("test_summary");
}
