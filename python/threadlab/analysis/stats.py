"""Statistics of raw timings: the one module every command computes with.

A record's summary is computed once, by summarize(), when the record is
accepted (records.schema.validate_record: the producer's, checked against
it, is replaced by it), so every producer (C, JVM, Go) is summarised the
same way; the store keeps it and every reader reads it (record_summary).

- summarize(): the summary of raw samples.
- record_summary(): a stored record's summary, read.
- describe(): the full description of one sample: mean with its Student t
  interval, median with its distribution-free (order-statistic) interval,
  interquartile mean, MAD, outliers by modified z-score (counted, never
  removed), and ecdf().
- compare_samples(): two samples: Welch's t-test, Mann-Whitney U, the ratio
  of medians with its Price-Bonett interval, and the verdict rule.
- geometric_mean(), adjust_pvalues(): for many comparisons at once.

docs/statistics.md explains each method, its thresholds and why it was
chosen.
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    import numpy as np

from threadlab.output.units import is_time_unit


@dataclass(frozen=True)
class Summary:
    """The summary of one data point, in the record's unit.

    sd, rsd, se and rse are None for a single value (a derived record or
    n = 1), where a spread does not exist.
    """

    n: int
    mean: float
    sd: float | None
    rsd: float | None
    se: float | None
    rse: float | None
    median: float
    min: float
    max: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _relative(spread: float | None, mean: float) -> float | None:
    if spread is None or mean == 0:
        return None
    return spread / abs(mean)


def summarize(samples: Sequence[float]) -> Summary:
    """Summary of raw samples (sample standard deviation, ddof = 1)."""
    import numpy as np

    values = np.asarray(samples, dtype=np.float64)
    if values.size == 0:
        raise ValueError("cannot summarise zero samples")
    n = int(values.size)
    mean = float(values.mean())
    sd = float(values.std(ddof=1)) if n > 1 else None
    se = sd / math.sqrt(n) if sd is not None else None
    return Summary(
        n=n,
        mean=mean,
        sd=sd,
        rsd=_relative(sd, mean),
        se=se,
        rse=_relative(se, mean),
        median=float(np.median(values)),
        min=float(values.min()),
        max=float(values.max()),
    )


def record_summary(record: Mapping[str, Any]) -> Summary | None:
    """The summary a record carries (the front end's, made when the record
    was accepted; a derived record's producer's), read, not recomputed;
    None when nothing was measured."""
    given = record.get("summary")
    if record.get("status") != "ok" or not given:
        return None
    return Summary(
        n=int(given["n"]),
        mean=float(given["mean"]),
        sd=given.get("sd"),
        rsd=given.get("rsd"),
        se=given.get("se"),
        rse=given.get("rse"),
        median=float(given["median"]),
        min=float(given["min"]),
        max=float(given["max"]),
    )


# ------------------------------------------------------------ description
#
# Every method below is explained, with its reason and its thresholds, in
# docs/statistics.md.  numpy and scipy are imported where they are used:
# `threadlab --help` and the commands that only list runs do not pay for them.

CONFIDENCE = 0.95
# Below this many timings on a side, a comparison carries a warning: the
# tests have almost no power and the intervals are very wide.
SMALL_SAMPLE = 5
# |modified z-score| above this is an outlier (Iglewicz and Hoaglin, 1993).
OUTLIER_THRESHOLD = 3.5
_MAD_Z = 0.6745  # Phi^-1(0.75): MAD / 0.6745 estimates sd for normal data
_MEANAD_Z = 1.253314  # sqrt(pi/2): mean absolute deviation * 1.2533 estimates sd
MAD_TO_SD = 1.482602218505602  # 1 / Phi^-1(0.75)
TESTS = ("welch", "mann-whitney")
_TEST_NAMES = {"welch": "Welch's t-test", "mann-whitney": "the Mann-Whitney U test"}
ADJUSTMENTS = ("none", "holm", "bh")


def _scipy() -> Any:
    from scipy import stats as scipy_stats

    return scipy_stats


def _array(samples: Sequence[float]) -> np.ndarray:
    import numpy as np

    values = np.asarray(samples, dtype=np.float64)
    if values.size == 0:
        raise ValueError("no samples")
    if not np.all(np.isfinite(values)):
        raise ValueError("samples must be finite numbers")
    return values


@dataclass(frozen=True)
class Interval:
    """A confidence interval.  `coverage` is the level the interval really
    has: equal to `confidence` for a t interval; for an order-statistic
    interval the smallest binomial level at or above it, or below it when
    the sample is too small to reach it (then `short` is true)."""

    low: float
    high: float
    confidence: float
    coverage: float
    method: str

    @property
    def short(self) -> bool:
        return self.coverage < self.confidence - 1e-9

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "short": self.short}


def mean_ci(samples: Sequence[float], confidence: float = CONFIDENCE) -> Interval | None:
    """Student t interval of the mean: mean ± t(1-α/2, n-1)·sd/√n; None for n < 2."""
    values = _array(samples)
    n = values.size
    if n < 2:
        return None
    mean = float(values.mean())
    se = float(values.std(ddof=1)) / math.sqrt(n)
    t = float(_scipy().t.ppf(0.5 + confidence / 2, n - 1))
    return Interval(mean - t * se, mean + t * se, confidence, confidence, "student-t")


def _log_scale_interval(centre: float, half: float, confidence: float, method: str) -> Interval | None:
    """exp(centre ± half); None when the upper bound is beyond the largest
    float (the samples then bound nothing: an OverflowError before)."""
    if centre + half >= math.log(sys.float_info.max):
        return None
    return Interval(math.exp(centre - half), math.exp(centre + half), confidence, confidence, method)


def positive_mean_ci(samples: Sequence[float], confidence: float = CONFIDENCE) -> Interval | None:
    """Interval of the mean of positive values on the log scale: the modified
    Cox interval of a lognormal mean (Armstrong 1992; Olsson 2005),
    exp(ȳ + s²/2 ± t(1-α/2, n-1)·√(s²/n + s⁴/(2(n-1)))), where ȳ and s² are
    the mean and variance (n - 1) of the logs.  Always inside (0, ∞), so a
    time's interval never reaches below zero, however few and spread the
    runs (a Student t interval of two runs does).  None for n < 2, a
    value <= 0, or an upper bound beyond the largest float (two runs six
    orders of magnitude apart)."""
    import numpy as np

    values = _array(samples)
    n = values.size
    if n < 2 or np.any(values <= 0):
        return None
    logs = np.log(values)
    centre = float(logs.mean())
    variance = float(logs.var(ddof=1))
    t = float(_scipy().t.ppf(0.5 + confidence / 2, n - 1))
    half = t * math.sqrt(variance / n + variance * variance / (2 * (n - 1)))
    return _log_scale_interval(centre + variance / 2, half, confidence, "log-cox")


def mean_interval(samples: Sequence[float], unit: str, confidence: float = CONFIDENCE) -> Interval | None:
    """The interval shown beside a mean in the studies' tables and figures:
    for times (a time unit, every value positive) on the log scale
    (positive_mean_ci), else Student t (mean_ci)."""
    if is_time_unit(unit) and min(samples) > 0:
        return positive_mean_ci(samples, confidence)
    return mean_ci(samples, confidence)


def median_ci(samples: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Distribution-free interval of the median: [x(j), x(n-j+1)] of the
    sorted sample, with the largest j whose binomial coverage
    1 - 2·P(Bin(n, 1/2) <= j-1) is at least `confidence`.  Below n = 6 no j
    reaches 95%: the interval is then [min, max] with its (lower) coverage."""
    import numpy as np

    values = np.sort(_array(samples))
    n = values.size
    j, coverage = 1, 1.0 - 2.0 * 0.5**n
    if n >= 2:
        js = np.arange(1, n // 2 + 1)
        coverages = 1.0 - 2.0 * _scipy().binom.cdf(js - 1, n, 0.5)
        enough = np.nonzero(coverages >= confidence - 1e-12)[0]
        if enough.size:
            j, coverage = int(js[enough[-1]]), float(coverages[enough[-1]])
    return Interval(float(values[j - 1]), float(values[n - j]), confidence, max(coverage, 0.0), "order-statistics")


def interquartile_mean(samples: Sequence[float]) -> float:
    """Mean of the middle half: floor(n/4) values cut from each end."""
    import numpy as np

    values = np.sort(_array(samples))
    cut = values.size // 4
    return float(values[cut : values.size - cut].mean())


def mad(samples: Sequence[float]) -> float:
    """Median absolute deviation from the median (unscaled)."""
    import numpy as np

    values = _array(samples)
    return float(np.median(np.abs(values - np.median(values))))


def modified_z_scores(samples: Sequence[float]) -> np.ndarray:
    """0.6745·(x - median)/MAD (Iglewicz-Hoaglin).  When MAD is 0 (more than
    half the values equal), (x - median)/(1.2533·mean absolute deviation);
    all zeros when every value is the same."""
    import numpy as np

    values = _array(samples)
    median = np.median(values)
    deviations = values - median
    spread = float(np.median(np.abs(deviations)))
    if spread > 0:
        return _MAD_Z * deviations / spread
    mean_spread = float(np.mean(np.abs(deviations)))
    if mean_spread > 0:
        return deviations / (_MEANAD_Z * mean_spread)
    return np.zeros_like(values)


def outliers(samples: Sequence[float], threshold: float = OUTLIER_THRESHOLD) -> tuple[int, int]:
    """(low, high): how many values have a modified z-score below -threshold
    and above +threshold.  Counted and shown, never removed."""
    import numpy as np

    z = modified_z_scores(samples)
    return int(np.sum(z < -threshold)), int(np.sum(z > threshold))


def ecdf(samples: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF: the distinct values, ascending, and the fraction
    of samples at or below each."""
    import numpy as np

    values, counts = np.unique(_array(samples), return_counts=True)
    return values, np.cumsum(counts) / counts.sum()


@dataclass(frozen=True)
class Description:
    """Everything the front end says about one sample."""

    n: int
    mean: float
    sd: float | None
    mean_ci: Interval | None
    median: float
    median_ci: Interval
    iqm: float
    mad: float
    mad_sd: float  # MAD x 1.4826: a robust estimate of the standard deviation
    outliers_low: int
    outliers_high: int
    min: float
    max: float

    @property
    def outliers(self) -> int:
        return self.outliers_low + self.outliers_high

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["mean_ci"] = self.mean_ci.as_dict() if self.mean_ci else None
        data["median_ci"] = self.median_ci.as_dict()
        return data


def describe(samples: Sequence[float], confidence: float = CONFIDENCE) -> Description:
    import numpy as np

    values = _array(samples)
    low, high = outliers(values)
    spread = mad(values)
    return Description(
        n=int(values.size),
        mean=float(values.mean()),
        sd=float(values.std(ddof=1)) if values.size > 1 else None,
        mean_ci=mean_ci(values, confidence),
        median=float(np.median(values)),
        median_ci=median_ci(values, confidence),
        iqm=interquartile_mean(values),
        mad=spread,
        mad_sd=spread * MAD_TO_SD,
        outliers_low=low,
        outliers_high=high,
        min=float(values.min()),
        max=float(values.max()),
    )


def record_description(record: Mapping[str, Any], confidence: float = CONFIDENCE) -> Description | None:
    """describe() of a record's raw samples; None when it has none (not
    measured, or derived from other records)."""
    samples = record.get("samples") or []
    return describe(samples, confidence) if samples else None


# ------------------------------------------------------------ two samples


@dataclass(frozen=True)
class TestResult:
    name: str
    statistic: float
    p: float
    df: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def welch_test(a: Sequence[float], b: Sequence[float]) -> TestResult | None:
    """Welch's unequal-variance t-test, two-sided; t is mean(a) - mean(b)
    over its standard error, df by Welch-Satterthwaite.  None when a side
    has fewer than 2 values.  Two samples without any spread: p = 1 when
    their means are equal, else 0."""
    x, y = _array(a), _array(b)
    if x.size < 2 or y.size < 2:
        return None
    va, vb = float(x.var(ddof=1)) / x.size, float(y.var(ddof=1)) / y.size
    difference = float(x.mean() - y.mean())
    if va + vb == 0:
        same = difference == 0
        return TestResult("welch", 0.0 if same else math.copysign(math.inf, difference), 1.0 if same else 0.0,
                          float(x.size + y.size - 2))
    t = difference / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1))
    p = float(2.0 * _scipy().t.sf(abs(t), df))
    return TestResult("welch", t, min(p, 1.0), df)


def mann_whitney_test(a: Sequence[float], b: Sequence[float]) -> TestResult | None:
    """Mann-Whitney U (Wilcoxon rank-sum), two-sided; U counts the pairs in
    which a's value is the larger (ties count half).  scipy's 'auto'
    method: the exact distribution when both sides have at most 8 values
    and no ties, else the normal approximation with tie correction and
    continuity correction."""
    import numpy as np

    x, y = _array(a), _array(b)
    if np.all(np.concatenate([x, y]) == x[0]):
        return TestResult("mann-whitney", x.size * y.size / 2.0, 1.0)
    result = _scipy().mannwhitneyu(x, y, alternative="two-sided", method="auto")
    return TestResult("mann-whitney", float(result.statistic), float(min(result.pvalue, 1.0)))


def mann_whitney_min_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p-value the exact test can give: 2/C(n_a+n_b, n_a)."""
    return min(1.0, 2.0 / math.comb(n_a + n_b, n_a))


def median_se(samples: Sequence[float]) -> float | None:
    """Standard error of the sample median by Bonett and Price (2002): the
    order statistics x(c) and x(n-c+1), c = round((n+1)/2 - √n) (at least
    1), bound an exact binomial interval of level 1 - 2·P(Bin(n, 1/2) <= c-1);
    its width over 2·z of that level is the standard error.  None for n < 2."""
    import numpy as np

    values = np.sort(_array(samples))
    n = values.size
    if n < 2:
        return None
    c = max(1, int(math.floor((n + 1) / 2 - math.sqrt(n) + 0.5)))
    tail = float(_scipy().binom.cdf(c - 1, n, 0.5))
    z = float(_scipy().norm.isf(tail))
    return float(values[n - c] - values[c - 1]) / (2.0 * z)


def ratio_of_medians(
    a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float | None, Interval | None]:
    """median(b) / median(a) and its Price-Bonett interval:
    exp(ln(mb/ma) ± z·√(se_a² + se_b²)), the standard errors of the log
    medians from median_se() of the log samples.  When a side holds values
    <= 0 (possible after a reference loop is subtracted) but both medians
    are positive, the log standard errors come from the raw ones by the
    delta method (se/median).  The ratio is None when a median is <= 0
    (or the other's over it is beyond the largest float);
    the interval None when a side has fewer than 2 values, or when its
    upper bound is beyond the largest float (a median so near 0 that the
    samples say nothing of the ratio: an overhead left after subtracting
    a reference loop, with the samples around 0)."""
    import numpy as np

    x, y = _array(a), _array(b)
    ma, mb = float(np.median(x)), float(np.median(y))
    if ma <= 0 or mb <= 0:
        return None, None
    ratio = mb / ma
    if not math.isfinite(ratio):
        return None, None
    if x.size < 2 or y.size < 2:
        return ratio, None
    if np.all(x > 0) and np.all(y > 0):
        se_a, se_b = median_se(np.log(x)), median_se(np.log(y))
    else:
        se_a, se_b = (median_se(x) or 0.0) / ma, (median_se(y) or 0.0) / mb
    half = float(_scipy().norm.ppf(0.5 + confidence / 2)) * math.hypot(se_a or 0.0, se_b or 0.0)
    return ratio, _log_scale_interval(math.log(ratio), half, confidence, "price-bonett")


@dataclass(frozen=True)
class SampleComparison:
    """B against A.  direction: -1 B is significantly lower, +1 higher,
    0 no significant difference (see compare_samples for the rule)."""

    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    median_a: float
    median_b: float
    ratio: float | None
    ratio_ci: Interval | None
    welch: TestResult | None
    mann_whitney: TestResult | None
    test: str
    alpha: float
    p: float | None
    significant: bool
    direction: int
    warnings: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio_ci"] = self.ratio_ci.as_dict() if self.ratio_ci else None
        data["welch"] = self.welch.as_dict() if self.welch else None
        data["mann_whitney"] = self.mann_whitney.as_dict() if self.mann_whitney else None
        data["warnings"] = list(self.warnings)
        return data


def compare_samples(a: Sequence[float], b: Sequence[float], alpha: float = 0.05, test: str = "welch") -> SampleComparison:
    """Two samples, B against A.  Both tests are always computed; `test`
    picks the one that decides.  The verdict rule: B differs from A only
    when that test's p < alpha AND the (1 - alpha) interval of the ratio of
    medians excludes 1; the direction is then the ratio's side of 1.
    Samples smaller than SMALL_SAMPLE carry a warning."""
    import numpy as np

    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")
    if not 0 < alpha < 1:
        raise ValueError("alpha must be between 0 and 1")
    x, y = _array(a), _array(b)
    warnings: list[str] = []
    if min(x.size, y.size) < SMALL_SAMPLE:
        warnings.append(
            f"fewer than {SMALL_SAMPLE} timings on a side: the tests have little power and the interval is "
            "wide; treat the verdict as a hint"
        )
    welch = welch_test(x, y)
    mwu = mann_whitney_test(x, y)
    ratio, interval = ratio_of_medians(x, y, 1 - alpha)
    decider = welch if test == "welch" else mwu
    p = decider.p if decider else None
    if test == "mann-whitney" and mann_whitney_min_p(x.size, y.size) >= alpha:
        warnings.append(f"with so few timings the Mann-Whitney test cannot reach p < {alpha:g}")
    significant = p is not None and p < alpha
    excludes_one = interval is not None and not interval.contains(1.0)
    direction = 0
    if significant and excludes_one and ratio is not None:
        direction = 1 if ratio > 1 else -1
    elif significant and interval is not None and not excludes_one:
        warnings.append(
            f"{_TEST_NAMES[test]} is significant (p = {p:.3g}) but the {1 - alpha:.0%} interval of the ratio "
            "of medians includes 1: no verdict (the samples may differ in spread or shape more than in "
            "their medians)"
        )
    elif significant and interval is None:
        warnings.append("no interval for the ratio of medians (a median is not positive, or too near 0 for one): "
                        "no verdict")
    return SampleComparison(
        n_a=int(x.size), n_b=int(y.size),
        mean_a=float(x.mean()), mean_b=float(y.mean()),
        median_a=float(np.median(x)), median_b=float(np.median(y)),
        ratio=ratio, ratio_ci=interval, welch=welch, mann_whitney=mwu, test=test, alpha=alpha, p=p,
        significant=significant, direction=direction, warnings=tuple(warnings),
    )


def geometric_mean(values: Sequence[float]) -> float | None:
    """exp(mean(ln v)) of positive values; None when there are none."""
    positive = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not positive:
        return None
    return math.exp(sum(math.log(v) for v in positive) / len(positive))


def adjust_pvalues(pvalues: Sequence[float], method: str = "none") -> list[float]:
    """p-values adjusted for many comparisons: 'holm' (Holm-Bonferroni,
    controls the chance of any false verdict), 'bh' (Benjamini-Hochberg,
    controls the expected share of false verdicts), 'none'."""
    if method not in ADJUSTMENTS:
        raise ValueError(f"unknown adjustment {method!r}; expected one of {', '.join(ADJUSTMENTS)}")
    m = len(pvalues)
    if method == "none" or m == 0:
        return list(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    if method == "holm":
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (m - rank) * pvalues[i]))
            adjusted[i] = running
    else:
        running = 1.0
        for rank in range(m - 1, -1, -1):
            i = order[rank]
            running = min(running, pvalues[i] * m / (rank + 1))
            adjusted[i] = min(1.0, running)
    return adjusted


# ------------------------------------------------------- ratio of means
# The speedups of `threadlab study apps` (docs/study.md): mean time at 1
# thread over mean time at T threads, two independent samples.


def ratio_of_means(
    numerator: Sequence[float], denominator: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float | None, Interval | None]:
    """mean(numerator) / mean(denominator) and its Fieller interval.

    Fieller's theorem for two independent sample means x̄ and ȳ with
    variances of the mean vx = sx²/nx and vy = sy²/ny: the interval is the
    set of ρ with (x̄ - ρȳ)² <= t²·(vx + ρ²·vy), i.e. between the roots of
    (ȳ² - t²vy)ρ² - 2x̄ȳρ + (x̄² - t²vx) = 0.  t is Student's quantile with
    the Welch-Satterthwaite degrees of freedom of x̄ - ρ̂ȳ at the estimate
    ρ̂ = x̄/ȳ.  The ratio is None when mean(denominator) is 0; the interval
    None when a side has fewer than 2 values, or when ȳ is not
    significantly different from 0 (ȳ² <= t²vy: the set is unbounded).
    When every value of both sides is positive (times, rates), the ratio
    cannot be negative: a lower root below 0 (x̄ not significantly above 0,
    as with 2 noisy runs) becomes 0.  Intersecting the confidence set with
    the parameter space keeps its coverage and never shows a negative
    ratio of positive quantities."""
    x, y = _array(numerator), _array(denominator)
    mx, my = float(x.mean()), float(y.mean())
    if my == 0:
        return None, None
    ratio = mx / my
    if x.size < 2 or y.size < 2:
        return ratio, None
    vx = float(x.var(ddof=1)) / x.size
    vy = float(y.var(ddof=1)) / y.size
    spread = vx**2 / (x.size - 1) + ratio**4 * vy**2 / (y.size - 1)
    df = (vx + ratio**2 * vy) ** 2 / spread if spread > 0 else math.inf
    quantile = 0.5 + confidence / 2
    t = float(_scipy().norm.ppf(quantile) if math.isinf(df) else _scipy().t.ppf(quantile, df))
    a = my * my - t * t * vy
    if a <= 0:
        return ratio, None
    b = mx * my
    c = mx * mx - t * t * vx
    root = math.sqrt(max(b * b - a * c, 0.0))
    low = (b - root) / a
    if low < 0 and bool((x > 0).all() and (y > 0).all()):
        low = 0.0
    return ratio, Interval(low, (b + root) / a, confidence, confidence, "fieller")
