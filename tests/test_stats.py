"""The statistics module against known values: scipy on fixed samples, and
published R results (Welch's and Wilcoxon's tests on R's `sleep` data)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as sp

from threadlab.analysis import stats

# R: t.test(extra ~ group, data = sleep) and wilcox.test(extra ~ group, data = sleep)
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
RNG_SEED = 20240611


def _samples(n: int, seed: int = 1, skew: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.lognormal(3.0, 0.4, n) if skew else rng.normal(100.0, 10.0, n)


# ------------------------------------------------------------ one sample


@pytest.mark.parametrize("n", [2, 3, 7, 30, 200])
def test_mean_interval_is_scipys_student_t_interval(n: int) -> None:
    x = _samples(n, seed=n)
    ours = stats.mean_ci(x, 0.95)
    theirs = sp.ttest_1samp(x, 0.0).confidence_interval(0.95)
    assert ours is not None
    assert ours.low == pytest.approx(theirs.low, rel=1e-12)
    assert ours.high == pytest.approx(theirs.high, rel=1e-12)
    assert ours.coverage == 0.95 and not ours.short


def test_mean_interval_needs_two_values() -> None:
    assert stats.mean_ci([5.0]) is None


def test_positive_mean_interval_is_the_modified_cox_interval() -> None:
    x = [1.2, 1.5, 0.9, 1.1, 2.0]
    logs = np.log(x)
    m, v, n = logs.mean(), logs.var(ddof=1), len(x)
    half = sp.t.ppf(0.975, n - 1) * math.sqrt(v / n + v * v / (2 * (n - 1)))
    interval = stats.positive_mean_ci(x)
    assert interval is not None and interval.method == "log-cox"
    assert interval.low == pytest.approx(math.exp(m + v / 2 - half))
    assert interval.high == pytest.approx(math.exp(m + v / 2 + half))
    assert interval.low < np.mean(x) < interval.high


def test_a_times_interval_never_goes_below_zero() -> None:
    # Two quick runs far apart: the t interval reaches below zero, the
    # log-scale one is wide but positive (tables_multiprog, study tables).
    runs = [0.0015, 0.0188]
    t = stats.mean_ci(runs)
    assert t is not None and t.low < 0
    for interval in (stats.positive_mean_ci(runs), stats.mean_interval(runs, "s")):
        assert interval is not None and 0 < interval.low < min(runs) and interval.high > max(runs)
    assert stats.mean_interval([-1.0, 2.0], "s") == stats.mean_ci([-1.0, 2.0])  # not all positive: Student t
    assert stats.mean_interval([3.0, 5.0], "switches") == stats.mean_ci([3.0, 5.0])  # not a time
    assert stats.positive_mean_ci([1.0]) is None and stats.positive_mean_ci([1.0, 0.0]) is None
    assert stats.positive_mean_ci([1e-3, 1e3]) is None  # its upper bound, e^909, is no float (was an OverflowError)
    same = stats.positive_mean_ci([2.0, 2.0, 2.0])
    assert same is not None and same.low == pytest.approx(2.0) and same.high == pytest.approx(2.0)


def test_positive_mean_interval_coverage() -> None:
    # docs/statistics.md: about 95% for lognormal times already at n = 5.
    rng = np.random.default_rng(7)
    truth = math.exp(0.5**2 / 2)
    covered = sum(stats.positive_mean_ci(rng.lognormal(0.0, 0.5, 5)).contains(truth) for _ in range(600))
    assert 0.92 <= covered / 600 <= 0.98


@pytest.mark.parametrize("n", [6, 7, 10, 11, 20, 33, 100, 257])
def test_median_interval_is_the_order_statistic_interval_of_scipys_quantile_test(n: int) -> None:
    x = _samples(n, seed=n)
    ours = stats.median_ci(x, 0.95)
    theirs = sp.quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(0.95)
    assert (ours.low, ours.high) == (theirs.low, theirs.high)
    assert ours.coverage >= 0.95 and not ours.short


def test_median_interval_known_ranks_and_coverage() -> None:
    x = list(range(1, 21))  # n = 20: [x(6), x(15)], coverage 0.9586
    interval = stats.median_ci(x, 0.95)
    assert (interval.low, interval.high) == (6, 15)
    assert interval.coverage == pytest.approx(1 - 2 * sp.binom.cdf(5, 20, 0.5))
    assert interval.coverage == pytest.approx(0.9586105, abs=1e-6)


@pytest.mark.parametrize("n,coverage", [(1, 0.0), (2, 0.5), (5, 0.9375)])
def test_median_interval_of_a_tiny_sample_is_min_max_and_says_it_is_short(n: int, coverage: float) -> None:
    x = [3.0, 1.0, 4.0, 1.5, 9.0][:n]
    interval = stats.median_ci(x, 0.95)
    assert (interval.low, interval.high) == (min(x), max(x))
    assert interval.coverage == pytest.approx(coverage)
    assert interval.short


def test_robust_statistics_match_scipy() -> None:
    x = _samples(41, seed=7)
    assert stats.interquartile_mean(x) == pytest.approx(sp.trim_mean(x, 0.25), rel=1e-12)
    assert stats.mad(x) == pytest.approx(sp.median_abs_deviation(x), rel=1e-12)
    d = stats.describe(x)
    assert d.mad_sd == pytest.approx(sp.median_abs_deviation(x, scale="normal"), rel=1e-9)
    assert d.median == pytest.approx(np.median(x)) and d.n == 41
    assert d.sd == pytest.approx(np.std(x, ddof=1))


def test_interquartile_mean_cuts_a_quarter_from_each_end() -> None:
    assert stats.interquartile_mean([1, 2, 3, 4, 5, 6, 7, 100]) == pytest.approx(4.5)  # mean of 3..6


def test_outliers_are_counted_by_modified_z_score() -> None:
    x = [10.0, 10.1, 9.9, 10.05, 9.95, 10.02, 30.0, 1.0]
    # median 10.01, MAD 0.06: z(30) = 0.6745 * 19.99 / 0.06 >> 3.5
    z = stats.modified_z_scores(x)
    assert z[6] == pytest.approx(0.6745 * (30.0 - np.median(x)) / stats.mad(x))
    assert stats.outliers(x) == (1, 1)
    d = stats.describe(x)
    assert (d.outliers_low, d.outliers_high, d.outliers, d.n) == (1, 1, 2, 8)  # counted, not removed


def test_outliers_when_most_values_are_equal() -> None:
    x = [5.0] * 8 + [5.1, 50.0]  # MAD = 0: the mean absolute deviation takes over
    assert stats.mad(x) == 0
    assert stats.outliers(x) == (0, 1)
    assert stats.outliers([2.0] * 6) == (0, 0)


def test_ecdf_matches_scipy() -> None:
    x = [3.0, 1.0, 2.0, 2.0, 5.0, 1.0, 4.0]
    values, fractions = stats.ecdf(x)
    reference = sp.ecdf(x).cdf
    assert list(values) == list(reference.quantiles)
    assert list(fractions) == pytest.approx(list(reference.probabilities))
    assert fractions[-1] == 1.0


def test_describe_refuses_empty_and_non_finite_samples() -> None:
    with pytest.raises(ValueError):
        stats.describe([])
    with pytest.raises(ValueError):
        stats.describe([1.0, math.nan])


# ------------------------------------------------------------ two samples


def test_welch_test_reproduces_r_on_the_sleep_data() -> None:
    result = stats.welch_test(SLEEP_1, SLEEP_2)
    assert result is not None
    assert result.statistic == pytest.approx(-1.8608, abs=5e-5)
    assert result.df == pytest.approx(17.776, abs=5e-4)
    assert result.p == pytest.approx(0.07939, abs=5e-6)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_welch_test_matches_scipy(seed: int) -> None:
    a, b = _samples(12, seed), _samples(30, seed + 100) * 1.1
    ours = stats.welch_test(a, b)
    theirs = sp.ttest_ind(a, b, equal_var=False)
    assert ours is not None
    assert (ours.statistic, ours.p, ours.df) == pytest.approx((theirs.statistic, theirs.pvalue, theirs.df), rel=1e-9)


def test_welch_test_without_spread() -> None:
    assert stats.welch_test([2.0, 2.0], [2.0, 2.0, 2.0]).p == 1.0  # type: ignore[union-attr]
    assert stats.welch_test([2.0, 2.0], [3.0, 3.0]).p == 0.0  # type: ignore[union-attr]
    assert stats.welch_test([2.0], [3.0, 4.0]) is None


def test_mann_whitney_reproduces_r_on_the_sleep_data() -> None:
    result = stats.mann_whitney_test(SLEEP_1, SLEEP_2)  # ties: normal approximation, continuity correction
    assert result is not None
    assert result.statistic == 25.5
    assert result.p == pytest.approx(0.06933, abs=5e-6)


def test_mann_whitney_exact_for_small_samples_without_ties() -> None:
    a, b = [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]
    result = stats.mann_whitney_test(a, b)
    assert result is not None and result.statistic == 0
    assert result.p == pytest.approx(2 / math.comb(6, 3)) == stats.mann_whitney_min_p(3, 3)
    assert stats.mann_whitney_test([1.0, 1.0], [1.0, 1.0]).p == 1.0  # type: ignore[union-attr]


def test_median_standard_error_follows_bonett_and_price() -> None:
    x = list(range(1, 17))  # n = 16: c = round(8.5 - 4) = 5 (rounded half up), x(5) = 5, x(12) = 12
    tail = sp.binom.cdf(4, 16, 0.5)
    expected = (12 - 5) / (2 * sp.norm.isf(tail))
    assert stats.median_se(x) == pytest.approx(expected)
    assert stats.median_se([1.0]) is None


def test_ratio_of_medians_and_its_interval() -> None:
    a, b = _samples(25, 1), _samples(25, 2) * 1.5
    ratio, interval = stats.ratio_of_medians(a, b)
    assert ratio == pytest.approx(np.median(b) / np.median(a))
    assert interval is not None and interval.method == "price-bonett"
    se = math.hypot(stats.median_se(np.log(a)), stats.median_se(np.log(b)))  # type: ignore[arg-type]
    assert math.log(interval.high / ratio) == pytest.approx(1.959964 * se, rel=1e-6)
    assert interval.low < ratio < interval.high


def test_ratio_of_medians_undefined_for_non_positive_medians() -> None:
    assert stats.ratio_of_medians([-1.0, -2.0, -3.0], [1.0, 2.0, 3.0]) == (None, None)
    ratio, interval = stats.ratio_of_medians([-0.5, 1.0, 2.0, 3.0, 2.5], [1.0, 2.0, 3.0, 2.0, 2.2])
    assert ratio is not None and interval is not None  # the delta method handles values <= 0


def test_a_median_next_to_0_gives_a_ratio_without_an_interval() -> None:
    """Overheads around 0 (a construct cheaper than the noise of its
    reference loop) with a positive median of 1e-300: the interval's upper
    bound is beyond any float.  `threadlab report` died on such a run with
    an OverflowError."""
    a, b = [-5.0, 1e-300, 5.0], [1.0, 2.0, 3.0]
    ratio, interval = stats.ratio_of_medians(a, b)
    assert ratio == pytest.approx(2e300) and interval is None
    result = stats.compare_samples(a, b)
    assert result.ratio_ci is None and result.direction == 0
    assert stats.ratio_of_medians([-5.0, 1e-310, 5.0], [1.0, 2.0, 3.0]) == (None, None)  # the ratio itself: inf


def test_ratio_interval_covers_the_true_ratio_about_95_percent_of_the_time() -> None:
    """A simulation with a fixed seed: skewed (lognormal) timings, n = 20 per
    side, the true ratio of medians 1.3.  This seed gives 0.950."""
    rng = np.random.default_rng(RNG_SEED)
    hits, repetitions = 0, 600
    for _ in range(repetitions):
        a = rng.lognormal(0.0, 0.5, 20)
        b = rng.lognormal(math.log(1.3), 0.5, 20)
        _, interval = stats.ratio_of_medians(a, b)
        hits += interval is not None and interval.contains(1.3)
    assert 0.92 <= hits / repetitions <= 0.98


# ------------------------------------------------------------ verdict


def test_verdict_without_a_real_difference_is_no_difference() -> None:
    a, b = _samples(30, 11), _samples(30, 12)
    result = stats.compare_samples(a, b)
    assert (result.direction, result.significant) == (0, False)
    assert result.ratio_ci is not None and result.ratio_ci.contains(1.0)
    assert result.warnings == ()


def test_verdict_with_a_real_difference() -> None:
    a = _samples(30, 21, skew=False)
    slower = stats.compare_samples(a, _samples(30, 22, skew=False) * 1.2)
    assert (slower.direction, slower.significant) == (1, True)
    assert slower.ratio_ci is not None and slower.ratio_ci.low > 1
    faster = stats.compare_samples(a, _samples(30, 23, skew=False) * 0.8, test="mann-whitney")
    assert faster.direction == -1 and faster.p == faster.mann_whitney.p  # type: ignore[union-attr]


def test_null_simulation_gives_few_false_verdicts() -> None:
    """Same distribution on both sides: the verdict rule (test AND interval)
    must name a difference in at most about alpha of the cases."""
    rng = np.random.default_rng(RNG_SEED)
    false = sum(
        stats.compare_samples(rng.lognormal(0, 0.4, 15), rng.lognormal(0, 0.4, 15)).direction != 0
        for _ in range(300)
    )
    assert false / 300 <= 0.06


def test_a_significant_test_alone_is_not_a_verdict() -> None:
    """The means differ (B's slowest 15 timings are 4x slower) but the medians
    do not: Welch is significant, the ratio's interval includes 1: no verdict."""
    a = [100.0 + 0.1 * i for i in range(40)]
    b = list(a)
    b[-15:] = [v + 300.0 for v in b[-15:]]
    result = stats.compare_samples(a, b)
    assert result.welch is not None and result.welch.p < 0.001
    assert result.ratio == 1.0 and result.ratio_ci is not None and result.ratio_ci.contains(1.0)
    assert (result.significant, result.direction) == (True, 0)
    assert any("includes 1: no verdict" in w for w in result.warnings)


def test_small_samples_carry_a_warning() -> None:
    result = stats.compare_samples([1.0, 1.1, 1.2], [2.0, 2.1, 2.2], test="mann-whitney")
    assert any(f"fewer than {stats.SMALL_SAMPLE} timings" in w for w in result.warnings)
    assert any("cannot reach p < 0.05" in w for w in result.warnings)
    assert result.direction == 0  # Mann-Whitney's smallest p with 3 and 3 is 0.1


def test_compare_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError):
        stats.compare_samples([1.0, 2.0], [1.0, 2.0], test="z")
    with pytest.raises(ValueError):
        stats.compare_samples([1.0, 2.0], [1.0, 2.0], alpha=1.5)


# ------------------------------------------------------------ many comparisons


def test_geometric_mean() -> None:
    assert stats.geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert stats.geometric_mean([2.0, None, -1.0]) == pytest.approx(2.0)  # type: ignore[list-item]
    assert stats.geometric_mean([]) is None


def test_p_value_adjustments() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    assert stats.adjust_pvalues(p, "none") == p
    assert stats.adjust_pvalues(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.adjust_pvalues(p, "bh") == pytest.approx(list(sp.false_discovery_control(p)))
