"""`threadlab compare`: data points side by side, with honest statistics.

Three shapes (docs/commands/compare.md):

- pairs: run A against run B (and C, ... each against A), or within one run
  variant V1 against V2 (... each against V1) of a dimension: placement,
  model, or a param.  Each matched point gets the ratio of medians B/A with
  its interval, Welch's and Mann-Whitney's p-values and a verdict
  (stats.compare_samples); a geometric-mean row sums the pair up.
- a matrix: one column per run or per machine (seed 002's Table 1 layout),
  medians with the ratio to the first column.
- the regression gate: points that got worse by more than a percentage,
  with significance; and whatever keeps the comparison from vouching for
  B (no shared point, B's failed points, points that could not be tested).

Points match on their identity (points.record_key).  What cannot be
compared (unsupported, failed, on one side only, units that do not
convert) is shown as such, never dropped silently.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from threadlab.analysis import stats
from threadlab.errors import UserError
from threadlab.analysis.points import (
    RECORD_DIMENSIONS,
    canonical_params,
    dimension_value,
    failed_checks,
    multi_model,
    placement_text,
    point_label,
    record_key,
    samples_in,
    varying_params,
)
from threadlab.output.sanitize import CsvWriter, markdown
from threadlab.output.table import Footnotes, print_table
from threadlab.output.units import format_number, format_value, is_time_unit

if TYPE_CHECKING:  # rich is imported when a table is printed
    from rich.console import Console

FORMATS = ("table", "json", "csv", "md")
_SIZE_UNITS = {"bytes", "byte", "B", "KiB", "MiB", "GiB", "kB", "MB", "GB"}


# ------------------------------------------------------------- direction


def orientation(unit: str) -> str:
    """How to read a change in this unit: 'time' (lower is faster), 'rate'
    (per second: higher is faster), 'size' (lower is smaller), 'value'
    (no better side known)."""
    if is_time_unit(unit):
        return "time"
    if unit.endswith("/s") or unit in ("Hz", "ops_per_s"):
        return "rate"
    if unit in _SIZE_UNITS:
        return "size"
    return "value"


_WORDS = {"time": ("faster", "slower"), "rate": ("slower", "faster"), "size": ("smaller", "larger"),
          "value": ("lower", "higher")}
NO_DIFFERENCE = "no significant difference"


def verdict_word(direction: int, unit: str) -> str:
    """-1 (B lower) / +1 (B higher) / 0 in the words of the unit."""
    if direction == 0:
        return NO_DIFFERENCE
    lower, higher = _WORDS[orientation(unit)]
    return lower if direction < 0 else higher


def slowdown(ratio: float | None, unit: str) -> float | None:
    """How much worse B is than A as a factor of time: the ratio for times
    and sizes, its inverse for rates; None when the unit has no better side."""
    if ratio is None or ratio <= 0:
        return None
    kind = orientation(unit)
    if kind in ("time", "size"):
        return ratio
    if kind == "rate":
        return 1.0 / ratio
    return None


# ------------------------------------------------------------------ model


@dataclass
class Side:
    """One side of a comparison: a run, a machine, or a variant in a run."""

    label: str  # long: "run 3 (baseline) on vm"
    header: str  # a column header: "run 3", "same CPU"
    records: list[dict[str, Any]]
    machine: str | None = None


@dataclass
class PointComparison:
    key: tuple[str, ...]
    label: str
    placement: str | None  # None when placement is the dimension compared
    unit: str
    a: Mapping[str, Any] | None
    b: Mapping[str, Any] | None
    result: stats.SampleComparison | None = None
    ratio: float | None = None
    verdict: str = ""
    direction: int = 0
    p_adjusted: float | None = None  # the deciding test's p (adjusted with --adjust); None when not tested
    notes: list[str] = field(default_factory=list)

    @property
    def compared(self) -> bool:
        return self.result is not None

    @property
    def slowdown(self) -> float | None:
        return slowdown(self.ratio, self.unit)

    @property
    def worse(self) -> bool:
        """Significantly worse in B (slower, larger, lower rate)."""
        if self.direction == 0:
            return False
        kind = orientation(self.unit)
        return (kind in ("time", "size") and self.direction > 0) or (kind == "rate" and self.direction < 0)

    def as_dict(self, a: Side, b: Side) -> dict[str, Any]:
        return {
            "kind": "point",
            "a": a.label,
            "b": b.label,
            "benchmark": (self.a or self.b or {}).get("benchmark"),
            "model": (self.a or self.b or {}).get("model"),
            "metric": (self.a or self.b or {}).get("metric"),
            "params": (self.a or self.b or {}).get("params"),
            "placement": self.placement,
            "label": self.label,
            "unit": self.unit,
            "ratio": self.ratio,
            "verdict": self.verdict,
            "direction": self.direction,
            "p_adjusted": self.p_adjusted,
            "statistics": self.result.as_dict() if self.result else None,
            "notes": self.notes,
        }


@dataclass
class PairTotals:
    """The last row of a pair: the geometric mean of the time ratios and the
    count of each verdict (not stats.Summary, the summary of a sample)."""

    geometric_mean: float | None  # of the time ratios (slowdowns) of the compared points
    points: int  # how many entered the geometric mean
    counts: dict[str, int]

    def text(self) -> str:
        parts = [f"{n} {word}" for word, n in self.counts.items() if n]
        return ", ".join(parts) or "nothing compared"


@dataclass
class PairComparison:
    a: Side
    b: Side
    points: list[PointComparison]
    alpha: float
    test: str
    adjust: str
    dimension: str | None = None

    @property
    def totals(self) -> PairTotals:
        slowdowns = [p.slowdown for p in self.points if p.compared and p.slowdown is not None]
        counts: dict[str, int] = {}
        for point in self.points:
            word = point.verdict if point.compared or point.verdict == "not tested" else "not compared"
            counts[word] = counts.get(word, 0) + 1
        order = [w for pair in _WORDS.values() for w in pair] + [NO_DIFFERENCE, "not tested", "not compared"]
        ordered = dict(sorted(counts.items(), key=lambda item: order.index(item[0]) if item[0] in order else 99))
        return PairTotals(stats.geometric_mean(slowdowns), len(slowdowns), ordered)

    def regressions(self, percent: float) -> list[PointComparison]:
        """Points significantly worse in B by more than `percent`."""
        limit = 1.0 + percent / 100.0
        return [p for p in self.points if p.worse and p.slowdown is not None and p.slowdown > limit]


@dataclass
class Gate:
    """The regression gate's findings over every pair."""

    regressions: list[tuple[PairComparison, PointComparison]]
    undecided: list[str]  # why the gate cannot vouch for B, one sentence each
    decided: int  # shared points tested on both sides


def _derived(point: PointComparison) -> bool:
    """A derived value (one number per side): never tested, never required."""
    return point.verdict == "not tested"


def _tested(point: PointComparison) -> bool:
    return point.result is not None and point.result.p is not None


def _example(points: Sequence[PointComparison], why: Any) -> str:
    first = points[0]
    where = f" {first.placement}" if first.placement else ""
    more = f" (and {len(points) - 1} more)" if len(points) > 1 else ""
    return f"{first.label}{where}: {why(first)}{more}"


def regression_gate(pairs: Sequence[PairComparison], percent: float) -> Gate:
    """--fail-above PCT.  A regression: a point significantly worse in B by
    more than PCT.  The gate also fails, saying why, when a pair cannot
    vouch for B: A and B share no point; a point of B failed; a shared
    point that A measured could not be tested in B (B did not measure it,
    its units differ, or a side has fewer than 2 timings); or no shared
    point was tested at all.  Points only in A or only in B (not failed)
    and derived values do not decide (docs/commands/compare.md)."""
    regressions = [(pair, point) for pair in pairs for point in pair.regressions(percent)]
    undecided: list[str] = []
    decided = 0
    for pair in pairs:
        names = f"A ({pair.a.label}) and B ({pair.b.label})"
        shared = [p for p in pair.points if p.a is not None and p.b is not None]
        failed = [p for p in pair.points if p.b is not None and p.b["status"] == "failed"]
        if failed:
            undecided.append(f"{len(failed)} point{'s' if len(failed) != 1 else ''} of B ({pair.b.label}) failed: "
                             + _example(failed, lambda p: p.b["reason"]))
        if not shared:
            undecided.append(f"{names} share no point: nothing was compared")
            continue
        tested = [p for p in shared if _tested(p)]
        decided += len(tested)
        untested = [p for p in shared if not _tested(p) and not _derived(p) and p.a["status"] == "ok"
                    and p.b["status"] != "failed"]
        if untested:
            undecided.append(
                f"too few points measured to decide: {len(untested)} of the {len(shared)} points {names} share "
                "were measured in A but could not be tested in B: "
                + _example(untested, lambda p: "; ".join(p.notes) or p.verdict))
        elif not tested and not failed:
            undecided.append(f"too few points measured to decide: none of the {len(shared)} points {names} "
                             "share was measured on both sides")
    return Gate(regressions, undecided, decided)


def _first_by_key(records: Sequence[Mapping[str, Any]], without: str | None) -> dict[tuple[str, ...], Mapping[str, Any]]:
    """Key -> record; a measured record wins over an unmeasured one of the same point."""
    chosen: dict[tuple[str, ...], Mapping[str, Any]] = {}
    for record in records:
        key = record_key(record, without)
        current = chosen.get(key)
        if current is None or (current["status"] != "ok" and record["status"] == "ok"):
            chosen[key] = record
    return chosen


def _unmeasured(record: Mapping[str, Any], side: str) -> str | None:
    if record["status"] != "ok":
        return f"{side} {record['status']}: {record['reason']}"
    return None


# A virtual machine's host may move its CPUs between two runs: the
# omp suite records the one-way hand-off of a cache line between the
# team's first two CPUs at each point (extra.line_handoff_ns,
# docs/omp-suite.md), which moved 4x on this project's 2-CPU machine and
# every cross-CPU overhead with it. Two points whose readings differ by
# this factor or more ran on unlike machines.
HANDOFF_EXTRA = "line_handoff_ns"
HANDOFF_UNLIKE = 2.0


def handoff_note(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """A note when the two records' cross-CPU hand-offs differ by HANDOFF_UNLIKE or more."""
    readings = [record.get("extra", {}).get(HANDOFF_EXTRA) for record in (a, b)]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in readings):
        return None
    ha, hb = readings
    if max(ha, hb) / min(ha, hb) < HANDOFF_UNLIKE:
        return None
    return (f"unlike machines: a cache line crossed between the CPUs in {ha:.0f} ns in A, {hb:.0f} ns in B "
            "(a virtual machine's host moved its CPUs; docs/omp-suite.md)")


def compare_points(
    a: Mapping[str, Any] | None,
    b: Mapping[str, Any] | None,
    key: tuple[str, ...],
    label: str,
    placement: str | None,
    alpha: float,
    test: str,
) -> PointComparison:
    """One matched (or unmatched) point."""
    unit = str((a or b or {}).get("unit", ""))
    point = PointComparison(key, label, placement, unit, a, b)
    if a is None or b is None:
        point.verdict = "only in A" if b is None else "only in B"
        return point
    for record, side in ((a, "A"), (b, "B")):
        reason = _unmeasured(record, side)
        if reason:
            point.verdict = "not compared"
            point.notes.append(reason)
    if point.notes:
        return point
    b_samples = samples_in(b, a["unit"])
    if b_samples is None:
        point.verdict = "not compared"
        point.notes.append(f"units differ and do not convert: {a['unit']} and {b['unit']}")
        return point
    for record, side in ((a, "A"), (b, "B")):
        point.notes += [f"{side}: {text}" for text in failed_checks(record)]
    unlike = handoff_note(a, b)
    if unlike:
        point.notes.append(unlike)
    a_samples = samples_in(a, a["unit"]) or []
    if not a_samples or not b_samples:
        # Derived records (LogP's L): one value each, nothing to test.
        a_value, b_value = stats.record_summary(a), stats.record_summary(b)
        if a_value and b_value and a_value.median > 0 and b_value.median > 0:
            factor = (samples_in({**b, "samples": [b_value.median]}, a["unit"]) or [b_value.median])[0]
            point.ratio = factor / a_value.median
        point.verdict = "not tested"
        point.notes.append("derived value: a single number per side, no test possible")
        return point
    result = stats.compare_samples(a_samples, b_samples, alpha=alpha, test=test)
    point.result = result
    point.ratio = result.ratio
    point.direction = result.direction
    point.p_adjusted = result.p
    point.verdict = verdict_word(result.direction, unit)
    point.notes += list(result.warnings)
    if result.ratio is None:
        point.notes.append("a median is not positive: no ratio")
    return point


def _adjust(points: list[PointComparison], method: str, alpha: float) -> None:
    """Replaces each tested point's p by its adjusted p and re-derives the
    verdict (the interval condition is unchanged)."""
    tested = [p for p in points if p.result is not None and p.result.p is not None]
    if method == "none" or not tested:
        return
    adjusted = stats.adjust_pvalues([p.result.p for p in tested], method)  # type: ignore[union-attr,misc]
    for point, p_value in zip(tested, adjusted):
        point.p_adjusted = p_value
        if point.direction != 0 and p_value >= alpha:
            point.direction = 0
            point.notes.append(f"significant alone (p = {format_p(point.result.p)}) but not after the "  # type: ignore[union-attr]
                               f"{method} adjustment for {len(tested)} comparisons (p = {format_p(p_value)})")
            point.verdict = verdict_word(0, point.unit)
            point.result = replace(point.result, direction=0)  # type: ignore[arg-type]


def compare_sides(
    a: Side, b: Side, alpha: float = 0.05, test: str = "welch", adjust: str = "none", dimension: str | None = None
) -> PairComparison:
    """Every point of A and B, matched on identity (less `dimension` when
    the sides are variants within one run); in A's order, B's extra points last."""
    a_map, b_map = _first_by_key(a.records, dimension), _first_by_key(b.records, dimension)
    everything = list(a_map.values()) + list(b_map.values())
    shown = varying_params(everything)
    several = multi_model(everything) if dimension != "model" else set()
    skip = dimension if dimension not in RECORD_DIMENSIONS else None
    points = []
    for key in list(a_map) + [k for k in b_map if k not in a_map]:
        ra, rb = a_map.get(key), b_map.get(key)
        sample = ra or rb
        assert sample is not None
        label = point_label(sample, shown.get(sample["benchmark"], set()), models=sample["benchmark"] in several,
                            skip=skip)
        placement = None if dimension == "placement" else str(sample["placement"])
        points.append(compare_points(ra, rb, key, label, placement, alpha, test))
    _adjust(points, adjust, alpha)
    return PairComparison(a, b, points, alpha, test, adjust, dimension)


# ---------------------------------------------------------------- variants


def split_variants(records: Sequence[dict[str, Any]], spec: str) -> tuple[str, list[tuple[str, list[dict[str, Any]]]]]:
    """--between DIM=V1,V2[,...]: (dimension, [(value, records)]) in the
    order given; refuses a dimension or value the run does not have."""
    dimension, sep, values_text = spec.partition("=")
    dimension = dimension.strip()
    values = [v.strip() for v in values_text.split(",") if v.strip()]
    if not sep or not dimension or len(values) < 2:
        raise UserError(
            f"--between {spec}: expected DIMENSION=V1,V2[,...] with at least two values, e.g. "
            "placement=same-cpu,different-cpus (DIMENSION: placement, model, or a parameter's name)"
        )
    if len(set(values)) != len(values):
        raise UserError(f"--between {spec}: a value is given twice")
    present: dict[str, set[str]] = {}
    for record in records:
        for name in list(RECORD_DIMENSIONS) + list(record["params"]):
            value = dimension_value(record, name)
            if value is not None:
                present.setdefault(name, set()).add(value)
    if dimension not in present:
        raise UserError(
            f"--between {spec}: the run has no dimension '{dimension}'; it has "
            + ", ".join(f"{name} ({', '.join(sorted(vals))})" for name, vals in sorted(present.items()) if len(vals) > 1)
        )
    for value in values:
        if value not in present[dimension]:
            raise UserError(
                f"--between {spec}: no record has {dimension}={value}; values in the run: "
                + ", ".join(sorted(present[dimension]))
            )
    return dimension, [(value, [r for r in records if dimension_value(r, dimension) == value]) for value in values]


def variant_header(dimension: str, value: str) -> str:
    return placement_text(value) if dimension == "placement" else f"{dimension}={value}"


# ------------------------------------------------------------------ matrix


@dataclass
class MatrixRow:
    label: str
    placement: str
    cells: list[str]
    records: list[Mapping[str, Any] | None]
    comparisons: list[stats.SampleComparison | None]


@dataclass
class Matrix:
    columns: list[Side]
    rows: list[MatrixRow]
    notes: list[str]


def build_matrix(columns: Sequence[Side], alpha: float = 0.05, test: str = "welch") -> Matrix:
    """One row per point present anywhere, one column per side; a cell is
    the median, and beside it (after the first column) the ratio to the
    first column, starred when the verdict rule finds a difference."""
    maps = [_first_by_key(side.records, None) for side in columns]
    keys: list[tuple[str, ...]] = []
    for mapping in maps:
        keys += [k for k in mapping if k not in keys]
    everything = [r for mapping in maps for r in mapping.values()]
    shown = varying_params(everything)
    several = multi_model(everything)
    notes = Footnotes()
    rows = []
    for key in keys:
        records = [mapping.get(key) for mapping in maps]
        sample = next(r for r in records if r is not None)
        label = point_label(sample, shown.get(sample["benchmark"], set()), models=sample["benchmark"] in several)
        cells: list[str] = []
        comparisons: list[stats.SampleComparison | None] = []
        base = records[0]
        for i, record in enumerate(records):
            comparisons.append(None)
            if record is None:
                cells.append("")
                continue
            if record["status"] != "ok":
                word = "n/a" if record["status"] == "unsupported" else "FAILED"
                reason = f"{record['status']}: {record['reason']}"
                cells.append(f"{word} {notes.ref(reason)}")
                continue
            summary = stats.record_summary(record)
            text = format_value(summary.median if summary else None, record["unit"])
            if failed_checks(record):
                text += " !" + notes.ref(f"{record['benchmark']}: " + "; ".join(failed_checks(record)))
            if i > 0 and base is not None and base["status"] == "ok":
                point = compare_points(base, record, key, label, sample["placement"], alpha, test)
                comparisons[-1] = point.result
                if point.ratio is not None:
                    text += f" ×{point.ratio:.2f}" + ("*" if point.direction else " ")
            cells.append(text)
        rows.append(MatrixRow(label, str(sample["placement"]), cells, records, comparisons))
    # A benchmark's rows together (a later run may add points), in first-seen order.
    first: dict[str, int] = {}
    for index, key in enumerate(keys):
        first.setdefault(key[0], index)
    order = {id(row): (first[key[0]], index) for index, (row, key) in enumerate(zip(rows, keys))}
    rows.sort(key=lambda row: order[id(row)])
    return Matrix(list(columns), rows, notes.texts)


# --------------------------------------------------------------- rendering


def format_p(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return "—"
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def format_ratio(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio:.3f}" if ratio < 10 else format_number(ratio)


def ratio_text(point: PointComparison) -> str:
    if point.ratio is None:
        return "—"
    interval = point.result.ratio_ci if point.result else None
    text = format_ratio(point.ratio)
    if interval is not None:
        text += f" [{format_ratio(interval.low)}, {format_ratio(interval.high)}]"
    return text


def _value(record: Mapping[str, Any] | None) -> str:
    if record is None:
        return ""
    if record["status"] != "ok":
        return "n/a" if record["status"] == "unsupported" else "FAILED"
    summary = stats.record_summary(record)
    return format_value(summary.median if summary else None, record["unit"])


def _n(point: PointComparison) -> str:
    if point.result is None:
        return ""
    return f"{point.result.n_a}/{point.result.n_b}"


def comparison_rows(pair: PairComparison, notes: Footnotes) -> list[list[str]]:
    """The cells of a pair's table, one list per point, then the summary row."""
    rows = []
    for point in pair.points:
        verdict = point.verdict
        for note in point.notes:
            verdict += " " + notes.ref(note)
        cells = [point.label]
        if pair.dimension != "placement":
            cells.append(placement_text(point.placement or ""))
        p_welch = point.result.welch.p if point.result and point.result.welch else None
        p_mwu = point.result.mann_whitney.p if point.result and point.result.mann_whitney else None
        cells += [_value(point.a), _value(point.b), _n(point), ratio_text(point), format_p(p_welch), format_p(p_mwu)]
        if pair.adjust != "none":
            cells.append(format_p(point.p_adjusted if point.result else None))
        cells.append(verdict)
        rows.append(cells)
    return rows


def headers(pair: PairComparison) -> list[tuple[str, str]]:
    level = f"{1 - pair.alpha:.0%}"
    result = [("benchmark", "left")]
    if pair.dimension != "placement":
        result.append(("placement", "left"))
    result += [
        (f"A: {pair.a.header}", "right"),
        (f"B: {pair.b.header}", "right"),
        ("n A/B", "right"),
        (f"B/A [{level} CI]", "right"),
        ("Welch p", "right"),
        ("MWU p", "right"),
    ]
    if pair.adjust != "none":
        result.append((f"{pair.adjust} p", "right"))
    result.append(("verdict", "left"))
    return result


def summary_row(pair: PairComparison, width: int) -> list[str]:
    summary = pair.totals
    gm = summary.geometric_mean
    cells = [""] * width
    cells[0] = f"geometric mean ({summary.points} point{'s' if summary.points != 1 else ''})"
    ratio_index = next(i for i, (h, _) in enumerate(headers(pair)) if h.startswith("B/A"))
    cells[ratio_index] = "—" if gm is None else format_ratio(gm)
    cells[-1] = summary.text()
    return cells


def title(pair: PairComparison) -> str:
    test = "Welch's t-test" if pair.test == "welch" else "Mann-Whitney U"
    return (
        f"Comparison — A: {pair.a.label}; B: {pair.b.label}\n"
        f"medians; B/A is the ratio of medians with its {1 - pair.alpha:.0%} Price-Bonett interval; "
        f"verdict by {test} at α = {pair.alpha:g} and the interval excluding 1"
        + (f"; p-values adjusted by {pair.adjust}" if pair.adjust != "none" else "")
    )


def _summary_legend(pair: PairComparison) -> str | None:
    summary = pair.totals
    if summary.geometric_mean is None:
        return None
    gm = summary.geometric_mean
    return (
        f"Geometric mean of B/A over {summary.points} timed point{'s' if summary.points != 1 else ''}: "
        f"{format_ratio(gm)} ({change_text(gm)} on geometric average; every point weighs the same)."
    )


def change_text(factor: float, slower: str = "slower", faster: str = "faster") -> str:
    """A time factor in words: '4.2% slower', '12.3× the time of A'."""
    if factor >= 1.5:
        return f"B takes {format_number(factor)}× the time of A"
    if factor <= 1 / 1.5:
        return f"B is {format_number(1 / factor)}× as fast as A"
    return f"B is {abs(factor - 1) * 100:.1f}% {slower if factor > 1 else faster}"


def render_pair(console: Console, pair: PairComparison) -> None:
    from rich.text import Text

    console.print(Text(title(pair), style="bold"))
    notes = Footnotes()
    rows = comparison_rows(pair, notes)
    heads = headers(pair)
    styled = []
    for cells, point in zip(rows, pair.points):
        style = "red" if point.worse else "green" if point.direction != 0 else ""
        styled.append([Text(c) for c in cells[:-1]] + [Text(cells[-1], style=style)])
    print_table(console, heads, styled, [Text(c, style="bold") for c in summary_row(pair, len(heads))])
    legend = _summary_legend(pair)
    if legend:
        console.print(legend, markup=False, soft_wrap=True)
    if notes.texts:
        console.print("Notes:")
        for number, text in enumerate(notes.texts, start=1):
            console.print(f"  [{number}] {text}", markup=False, soft_wrap=True)


def render_matrix(console: Console, matrix: Matrix, what: str) -> None:
    from rich.text import Text

    console.print(Text(f"Medians by {what} — ×: ratio to the first column; *: a significant difference "
                       "(Welch p < α and the ratio's interval excludes 1)", style="bold"))
    for i, side in enumerate(matrix.columns, start=1):
        console.print(f"  column {i}: {side.label}", markup=False, soft_wrap=True)
    heads = [("benchmark", "left"), ("placement", "left")] + [(side.header, "right") for side in matrix.columns]
    rows = [[Text(row.label), Text(placement_text(row.placement))] + [Text(c) for c in row.cells] for row in matrix.rows]
    print_table(console, heads, rows)
    if matrix.notes:
        console.print("Notes (n/a: not possible there; FAILED: no measurement; !: a check failed):")
        for number, text in enumerate(matrix.notes, start=1):
            console.print(f"  [{number}] {text}", markup=False, soft_wrap=True)


def pair_markdown(pair: PairComparison) -> str:
    """Markdown of a pair; every text from the store escaped (sanitize.markdown)."""
    notes = Footnotes()
    rows = comparison_rows(pair, notes)
    heads = [markdown(h) for h, _ in headers(pair)]
    heading, method = title(pair).splitlines()
    lines = [f"**{markdown(heading)}**", "", markdown(method), ""]
    lines.append("| " + " | ".join(heads) + " |")
    lines.append("|" + "|".join("---:" if j == "right" else "---" for _, j in headers(pair)) + "|")
    for cells in rows + [summary_row(pair, len(heads))]:
        lines.append("| " + " | ".join(markdown(c) for c in cells) + " |")
    if notes.texts:
        lines.append("")
        lines += [f"{i}. {markdown(text)}" for i, text in enumerate(notes.texts, start=1)]
    return "\n".join(lines) + "\n"


def matrix_markdown(matrix: Matrix) -> str:
    """Markdown of a matrix (compare --by ... --format md), escaped as pair_markdown."""
    lines = ["| benchmark | placement | " + " | ".join(markdown(side.header) for side in matrix.columns) + " |",
             "|---|---|" + "---:|" * len(matrix.columns)]
    for row in matrix.rows:
        lines.append(f"| {markdown(row.label)} | {markdown(row.placement)} | "
                     + " | ".join(markdown(cell) for cell in row.cells) + " |")
    return "\n".join(lines) + "\n"


def pair_csv(pairs: Sequence[PairComparison]) -> str:
    """CSV of pairs: numbers as numbers, text neutralised against formulas (sanitize.CsvWriter)."""
    out = io.StringIO()
    writer = CsvWriter(out)
    writer.writerow(["a", "b", "benchmark", "model", "metric", "params", "placement", "unit", "median_a", "median_b",
                     "n_a", "n_b", "ratio", "ratio_ci_low", "ratio_ci_high", "welch_p", "mann_whitney_p",
                     "p_adjusted", "verdict", "notes"])
    for pair in pairs:
        for point in pair.points:
            r = point.result
            sample = point.a or point.b or {}
            interval = r.ratio_ci if r else None
            writer.writerow([
                pair.a.label, pair.b.label, sample.get("benchmark"), sample.get("model"), sample.get("metric"),
                canonical_params(sample.get("params", {})), point.placement or "", point.unit,
                r.median_a if r else "", r.median_b if r else "", r.n_a if r else "", r.n_b if r else "",
                "" if point.ratio is None else point.ratio,
                interval.low if interval else "", interval.high if interval else "",
                r.welch.p if r and r.welch else "", r.mann_whitney.p if r and r.mann_whitney else "",
                "" if point.p_adjusted is None else point.p_adjusted, point.verdict, " | ".join(point.notes),
            ])
    return out.getvalue()


def pair_json_lines(pair: PairComparison) -> list[str]:
    lines = [json.dumps(point.as_dict(pair.a, pair.b)) for point in pair.points]
    summary = pair.totals
    lines.append(json.dumps({
        "kind": "summary", "a": pair.a.label, "b": pair.b.label, "alpha": pair.alpha, "test": pair.test,
        "adjust": pair.adjust, "dimension": pair.dimension, "geometric_mean": summary.geometric_mean,
        "geometric_mean_points": summary.points, "counts": summary.counts,
    }))
    return lines
