"""`threadlab report`: a self-contained HTML page of one or more runs.

Layout (docs/commands/report.md): the machine and its warnings first, then
a compact overview of every result, comparisons when several runs are
given, every benchmark family as a table and as bars of the mean with 95%
CI error bars, ECDFs of the distributions, speedup tables and charts of
studies, and the full environment.  Figures are inline SVG in the page and
PNG files in DIR/figures/.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from threadlab import __version__
from threadlab.analysis import compare
from threadlab.run import environment
from threadlab.analysis import stats
from threadlab.errors import UserError
from threadlab.output.files import Directory, StoreGuard, follow_trusted_link, write_error
from threadlab.output.listing import local_time, run_duration
from threadlab.analysis.points import (
    DescribedPoint,
    canonical_params,
    describe_points,
    failed_checks,
    placement_rank,
    placement_text,
    samples_in,
    varying_params,
)
from threadlab.report import figures as fig
from threadlab.report import html
from threadlab.report.html import Cell
from threadlab.records.store import RunInfo
from threadlab.output.table import Footnotes
from threadlab.report.cells import check_mark, median_text, missing_cell
from threadlab.report.omp import omp_section
from threadlab.report.spawn import spawn_section
from threadlab.vocabulary import RECORD_PLACEMENTS
from threadlab.output.units import format_duration, format_value, is_time_unit

MARKER = ".threadlab-report"
FIGURES_DIR = "figures"
# A family (benchmarks sharing a name prefix) with more benchmarks than this
# is split by the first two name components.
FAMILY_LIMIT = 6
SMALL_FAMILY = 3
# ... or more records than this (a study): split further.
FAMILY_RECORDS = 48
ROWS_PER_FIGURE = 24
# Benchmarks whose distributions are drawn as ECDFs: hand-offs and switches,
# whose timings spread with scheduling.
ECDF_PATTERNS = ("*pingpong*", "ctxswitch.*", "*.yield*", "threads.*", "*timeslice*", "*.cancel.*")
ECDF_MIN_SAMPLES = 3
ECDF_MAX_LINES = 8
# Records of studies: benchmark names starting with this, with a numeric
# `threads` param; speedup over threads=1 (docs/report.md).
STUDY_PREFIX = "study."
STUDY_SERIES_IGNORES = ("threads", "size")
STUDY_LINES_PER_FIGURE = 8
STUDY_BARS_PER_FIGURE = 24
SMALL = stats.SMALL_SAMPLE


@dataclass
class ReportResult:
    index: Path
    figures: list[fig.RenderedFigure] = field(default_factory=list)


# --------------------------------------------------------------- directory


@dataclass
class ReportDirectory:
    """DIR and DIR/figures, opened once: every file of the report is made
    inside them without following a link (output.Directory)."""

    root: Directory
    figures: Directory

    def close(self) -> None:
        self.figures.close()
        self.root.close()


def prepare_directory(out_dir: Path, store: Path | None = None) -> ReportDirectory:
    """DIR is created, or reused when a previous report wrote it (its old
    figures are removed); a non-empty directory of something else is
    refused, and so is one of another user or writable by every user.  A
    link named DIR is followed only when it is the user's or root's; links
    inside DIR are never followed (docs/security.md, "Output files")."""
    what = f"-o {out_dir}"
    path = follow_trusted_link(out_dir, what)
    try:
        if not path.exists():
            path.mkdir(parents=True)
        elif not path.is_dir():
            raise UserError(f"{what}: exists and is not a directory")
    except OSError as error:
        raise write_error(what, error) from None
    root = Directory(path, what)
    try:
        info = os.fstat(root.fd)
        if info.st_uid != os.geteuid():
            raise UserError(f"{what}: the directory belongs to another user (uid {info.st_uid}); threadlab writes a "
                            "report only into a directory of its own user")
        if info.st_mode & stat.S_IWOTH:
            raise UserError(f"{what}: every user may write into the directory (mode {stat.S_IMODE(info.st_mode):04o}); "
                            "give a directory only you can write")
        marker = root.lstat(MARKER)
        if os.listdir(root.fd) and not (marker is not None and stat.S_ISREG(marker.st_mode)):
            raise UserError(
                f"{what}: the directory exists and holds other files; give a new or empty directory "
                "(threadlab only overwrites a directory it wrote a report into)"
            )
        guard = StoreGuard(store)
        for name in ("index.html", MARKER):
            guard.check(path / name, what)
        old = root.lstat(FIGURES_DIR)
        if old is not None and stat.S_ISDIR(old.st_mode):
            shutil.rmtree(FIGURES_DIR, dir_fd=root.fd)
        elif old is not None:  # a link or a file where the figures go: removed, never followed
            os.unlink(FIGURES_DIR, dir_fd=root.fd)
        os.mkdir(FIGURES_DIR, 0o777, dir_fd=root.fd)
        figures = root.subdirectory(FIGURES_DIR)
        root.write(MARKER, "written by threadlab report\n")
    except OSError as error:
        root.close()
        raise write_error(what, error) from None
    except BaseException:
        root.close()
        raise
    return ReportDirectory(root, figures)


# ---------------------------------------------------------------- grouping


def families(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Benchmarks grouped by name prefix, in first-seen order."""
    names = list(dict.fromkeys(r["benchmark"] for r in records))
    by_first: dict[str, list[str]] = {}
    for name in names:
        by_first.setdefault(name.split(".")[0], []).append(name)
    family_of: dict[str, str] = {}
    count = {name: sum(1 for r in records if r["benchmark"] == name) for name in names}
    for prefix, members in by_first.items():
        big = len(members) > FAMILY_LIMIT or sum(count[m] for m in members) > FAMILY_RECORDS
        for name in members:
            family_of[name] = ".".join(name.split(".")[:2]) if big else prefix
    # Still too big (study.apps.*): one family per benchmark.
    for family in set(family_of.values()):
        members = [name for name in names if family_of[name] == family]
        if len(members) > 1 and sum(count[m] for m in members) > FAMILY_RECORDS:
            for name in members:
                family_of[name] = name
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        groups.setdefault(family_of[record["benchmark"]], []).append(record)
    # A split-off family of one or two points joins its prefix's "other" group:
    # a figure of a single bar says little.
    merged: dict[str, list[Mapping[str, Any]]] = {}
    for family, members in groups.items():
        prefix = family.split(".")[0]
        small = family != prefix and len(members) < SMALL_FAMILY
        merged.setdefault(f"{prefix} (other)" if small else family, []).extend(members)
    return merged


def _unit_group(unit: str) -> str:
    return "time" if is_time_unit(unit) else unit


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-") or "x"


# ------------------------------------------------------------ cells, rows


def _value_cell(record: Mapping[str, Any] | None, notes: Footnotes) -> Cell:
    missing = missing_cell(record, notes)
    if missing is not None:
        return missing
    assert record is not None
    summary = stats.record_summary(record)
    d = stats.record_description(record)
    text = format_value(summary.median if summary else None, record["unit"])
    tip = f"{record['quantity']}; median"
    if d is not None:
        tip += f" {median_text(d, record['unit'])} (95% CI), n = {d.n}"
    mark = check_mark(record, notes)
    return Cell(text + mark, "num flag" if mark else "num", tip)


def overview_single(records: Sequence[Mapping[str, Any]]) -> str:
    """Rows: benchmarks (with the params that vary); columns: placements; cells: medians."""
    points = describe_points(records)
    present = [p for p in RECORD_PLACEMENTS if any(r["placement"] == p for r in records)]
    rows: dict[str, dict[str, Mapping[str, Any]]] = {}
    quantity: dict[str, str] = {}
    for point in points:
        rows.setdefault(point.label, {})[point.record["placement"]] = point.record
        quantity.setdefault(point.label, point.record["quantity"])
    notes = Footnotes()
    table_rows = [
        [Cell(label)] + [_value_cell(cells.get(p), notes) for p in present] + [Cell(quantity[label], "wrap na")]
        for label, cells in rows.items()
    ]
    headers = ["benchmark"] + [Cell(placement_text(p), "num") for p in present] + ["one sample is"]
    return (
        '<p class="lede">Median of the raw timings of each point (hover a value for its 95% interval and n). '
        "n/a: not possible on this machine; FAILED: no measurement; !: a check on what was measured failed.</p>"
        + html.data_table(headers, table_rows, table_id="overview-table")
        + html.notes_list(notes.texts)
    )


def overview_matrix(sides: Sequence[compare.Side], alpha: float, test: str) -> str:
    matrix = compare.build_matrix(sides, alpha, test)
    headers = ["benchmark", "placement"] + [Cell(side.header, "num", side.label) for side in sides]
    rows = [[Cell(row.label), Cell(placement_text(row.placement))] + [Cell(c, "num") for c in row.cells]
            for row in matrix.rows]
    return (
        '<p class="lede">Medians, one column per run; ×: ratio to the first column, *: a significant difference '
        f"(Welch p &lt; {alpha:g} and the {1 - alpha:.0%} interval of the ratio of medians excludes 1).</p>"
        + html.data_table(headers, rows, table_id="overview-table")
        + html.notes_list(matrix.notes)
    )


def detail_table(points: Sequence[DescribedPoint]) -> str:
    notes = Footnotes()
    rows = []
    for point in points:
        record, d, unit = point.record, point.description, point.unit
        row_notes = list(failed_checks(record))
        missing = missing_cell(record, notes)
        if missing is not None:
            rows.append([Cell(point.label), Cell(placement_text(record["placement"])), missing] + [Cell("")] * 7)
            continue
        if d is None:
            formula = (record.get("derived") or {}).get("formula", "")
            rows.append([Cell(point.label), Cell(placement_text(record["placement"])),
                         Cell(format_value(point.value, unit), "num"), Cell("derived", "na"), Cell(""), Cell(""),
                         Cell(""), Cell(""), Cell(""), Cell(formula, "wrap na")])
            continue
        median = median_text(d, unit)
        if d.median_ci.short:
            row_notes.append(f"the median's interval covers only {d.median_ci.coverage:.0%} with n = {d.n}")
        mean = format_value(d.mean, unit)
        if d.mean_ci:
            mean += f" ± {format_value((d.mean_ci.high - d.mean_ci.low) / 2, unit)}"
        if d.n < SMALL:
            row_notes.append(f"n = {d.n} < {SMALL}")
        stop = (record.get("stop") or {}).get("reason", "")
        outliers = f"{d.outliers_low} low, {d.outliers_high} high" if d.outliers else "0"
        rows.append([
            Cell(point.label), Cell(placement_text(record["placement"])), Cell(median, "num"), Cell(mean, "num"),
            Cell(format_value(d.iqm, unit), "num"), Cell(format_value(d.mad, unit), "num"), Cell(str(d.n), "num"),
            Cell(outliers, "num"), Cell(stop), Cell("; ".join(row_notes), "wrap flag" if row_notes else "wrap"),
        ])
    headers = ["benchmark", "placement", Cell("median [95% CI]", "num"), Cell("mean ± 95% CI", "num"),
               Cell("IQM", "num"), Cell("MAD", "num"), Cell("n", "num"), Cell("outliers", "num"), "stopped by", "notes"]
    return html.data_table(headers, rows) + html.notes_list(notes.texts)


# ------------------------------------------------------------------ figures


class FigureMaker:
    def __init__(self, out_dir: Directory) -> None:
        self.out_dir = out_dir
        self.made: list[fig.RenderedFigure] = []
        self._names: set[str] = set()

    def name(self, stem: str) -> str:
        base, index = _slug(stem), 1
        candidate = base
        while candidate in self._names:
            index += 1
            candidate = f"{base}-{index}"
        self._names.add(candidate)
        return candidate

    def html(self, rendered: fig.RenderedFigure) -> str:
        self.made.append(rendered)
        return html.figure(rendered, f"{FIGURES_DIR}/{rendered.png.name}")


def family_figures(maker: FigureMaker, run: RunInfo, family: str, points: Sequence[DescribedPoint]) -> list[str]:
    parts = []
    by_unit: dict[str, list[DescribedPoint]] = {}
    for point in points:
        by_unit.setdefault(_unit_group(point.unit), []).append(point)
    for unit_group, members in by_unit.items():
        unit = members[0].unit
        # Time values in one unit: convert where producers differ (ns, ms).
        rows = list(dict.fromkeys(p.label for p in members))
        for start in range(0, len(rows), ROWS_PER_FIGURE):
            chunk_rows = set(rows[start : start + ROWS_PER_FIGURE])
            chunk = [p for p in members if p.label in chunk_rows]
            chunk.sort(key=lambda p: (rows.index(p.label), placement_rank(p.record["placement"])))
            bars = fig.bars_from_points(chunk, lambda r: placement_text(r["placement"]), lambda p: p.label)
            for bar, point in zip(bars, chunk):
                factor = (samples_in({**point.record, "samples": [1.0]}, unit) or [1.0])[0]
                bar.value = None if bar.value is None else bar.value * factor
                bar.low = None if bar.low is None else bar.low * factor
                bar.high = None if bar.high is None else bar.high * factor
            suffix = f" ({start // ROWS_PER_FIGURE + 1})" if len(rows) > ROWS_PER_FIGURE else ""
            unit_note = "" if unit_group == "time" else f" — {unit}"
            title = f"{family}{unit_note}{suffix}: mean per point, 95% CI"
            rendered = fig.bar_figure(maker.name(f"run{run.id}-{family}-{unit_group}{suffix}"), title, bars, unit,
                                      maker.out_dir)
            rendered.caption = (f"{run.label}: bars are the mean of the raw timings, error bars its 95% Student t "
                                "interval; hatched bars are derived values.")
            parts.append(maker.html(rendered))
    return parts


def ecdf_sections(maker: FigureMaker, run: RunInfo, records: Sequence[Mapping[str, Any]]) -> list[str]:
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for record in records:
        if record["status"] != "ok" or len(record.get("samples") or []) < ECDF_MIN_SAMPLES:
            continue
        if not any(fnmatch.fnmatchcase(record["benchmark"], p) for p in ECDF_PATTERNS):
            continue
        groups.setdefault((record["benchmark"], record["metric"]), []).append(record)
    shown = varying_params(records)
    parts = []
    for (benchmark, metric), members in groups.items():
        members = sorted(members, key=lambda r: placement_rank(r["placement"]))[:ECDF_MAX_LINES]
        unit = members[0]["unit"]
        models = len({r["model"] for r in members}) > 1
        lines = []
        placements_only = len({canonical_params(r["params"]) for r in members}) == 1 and not models
        for index, record in enumerate(members):
            label = placement_text(record["placement"])
            extra = [f"{k}={v}" for k, v in sorted(record["params"].items()) if k in shown.get(benchmark, set())]
            if models:
                extra.insert(0, record["model"])
            if extra:
                label = f"{label}, {' '.join(extra)}"
            colour = fig.PLACEMENT_COLOURS.get(record["placement"]) if placements_only else fig.PALETTE[index % 8]
            samples = samples_in(record, unit)
            if samples:
                lines.append(fig.EcdfLine(label, colour or fig.PALETTE[index % 8], samples))
        if not lines:
            continue
        title = f"{benchmark}" + (f" ({metric})" if metric != "time" else "") + ": distribution of the timings"
        rendered = fig.ecdf_figure(maker.name(f"run{run.id}-ecdf-{benchmark}-{metric}"), title, lines, unit, maker.out_dir)
        rendered.caption = (f"{run.label}: empirical CDF, the fraction of timings at or below each value; a line "
                            "further left is faster, a flatter line spreads more.")
        parts.append(maker.html(rendered))
    return parts


# ------------------------------------------------------------------ studies


@dataclass
class SpeedupRow:
    group: str
    placement: str
    threads: int
    mean: str
    speedup: float | None
    low: float | None
    high: float | None
    n: str


def _speedup_of(base: Sequence[float], other: Sequence[float], rate: bool) -> tuple[float | None, Any]:
    """Speedup T(1)/T(n) (rates: R(n)/R(1)) and its interval: the ratio of
    means with Fieller's interval, as `threadlab study`'s own tables."""
    numerator, denominator = (other, base) if rate else (base, other)
    return stats.ratio_of_means(numerator, denominator)


def study_speedups(records: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[str, list[SpeedupRow]]]]:
    """benchmark -> [(series label, rows by threads)] for study records: a
    name under study., metric `time`, a numeric `threads` param, and a
    threads=1 point of the same series (model, placement, params other than
    threads and size) to divide by."""
    groups: dict[tuple[str, str, str, str], dict[int, Mapping[str, Any]]] = {}
    for record in records:
        threads = str(record["params"].get("threads", ""))
        if not record["benchmark"].startswith(STUDY_PREFIX) or not threads.isdigit() or record["status"] != "ok":
            continue
        if record["metric"] != "time" or not record.get("samples"):
            continue
        others = {k: v for k, v in record["params"].items() if k not in STUDY_SERIES_IGNORES}
        key = (record["benchmark"], record["model"], record["placement"], canonical_params(others))
        groups.setdefault(key, {})[int(threads)] = record
    result: dict[str, list[tuple[str, list[SpeedupRow]]]] = {}
    for (benchmark, model, placement, others_text), by_threads in groups.items():
        base = by_threads.get(1)
        if base is None:
            continue
        others = json.loads(others_text)
        label = " ".join([model] + [f"{k}={v}" for k, v in sorted(others.items())] + [f"[{placement_text(placement)}]"])
        unit = base["unit"]
        rate = compare.orientation(unit) == "rate"
        rows = []
        for threads in sorted(by_threads):
            record = by_threads[threads]
            samples = samples_in(record, unit) or []
            ratio, interval = _speedup_of(base["samples"], samples, rate)
            rows.append(SpeedupRow(label, placement, threads, format_value(sum(samples) / len(samples), unit),
                                   ratio, interval.low if interval else None, interval.high if interval else None,
                                   str(len(samples))))
        result.setdefault(benchmark, []).append((label, rows))
    return result


def study_section(maker: FigureMaker, run: RunInfo, records: Sequence[Mapping[str, Any]]) -> str:
    speedups = study_speedups(records)
    if not speedups:
        return ""
    parts = [f"<h3>{html.e(run.label)}</h3>"]
    for benchmark, series in speedups.items():
        rows = []
        for label, series_rows in series:
            for row in series_rows:
                interval = f" [{row.low:.2f}, {row.high:.2f}]" if row.low is not None and row.high is not None else ""
                speedup = "—" if row.speedup is None else f"{row.speedup:.2f}{interval}"
                efficiency = "—" if row.speedup is None else f"{row.speedup / row.threads:.0%}"
                rows.append([Cell(label), Cell(str(row.threads), "num"), Cell(row.mean, "num"), Cell(row.n, "num"),
                             Cell(speedup, "num"), Cell(efficiency, "num")])
        parts.append(f"<h3>{html.e(benchmark)}</h3>")
        parts.append(html.data_table(
            ["series", Cell("threads", "num"), Cell("mean time", "num"), Cell("runs", "num"),
             Cell("speedup [95% CI]", "num"), Cell("efficiency", "num")], rows))
        lines = [fig.SpeedupLine(label, [r.threads for r in rs], [r.speedup or 0.0 for r in rs],
                                 [r.low for r in rs], [r.high for r in rs]) for label, rs in series]
        two_counts = all(len(line.threads) == 2 for line in lines)
        chunk = STUDY_BARS_PER_FIGURE if two_counts else STUDY_LINES_PER_FIGURE
        for start in range(0, len(lines), chunk):
            part = lines[start : start + chunk]
            suffix = f" ({start // chunk + 1})" if len(lines) > chunk else ""
            name = maker.name(f"run{run.id}-speedup-{benchmark}{suffix}")
            title = f"{benchmark}: speedup{suffix}"
            if two_counts:
                rendered = fig.speedup_bars(name, title, part, maker.out_dir)
            else:
                rendered = fig.speedup_figure(name, title, part, maker.out_dir)
            rendered.caption = (f"{run.label}: speedup = mean time at 1 thread / mean time at n threads, with its "
                                "95% Fieller interval (as `threadlab study`); dashed: ideal (speedup = threads).")
            parts.append(maker.html(rendered))
    return "".join(parts)


def multiprog_section(maker: FigureMaker, run: RunInfo, records: Sequence[Mapping[str, Any]]) -> str:
    """`threadlab study multiprog`: per kernel, the mean turnaround against
    the degree for every baseline on a log scale (the seed's Fig. 3)."""
    from threadlab.study import tables_multiprog

    data = tables_multiprog.collect(records)
    if not data.degrees and not data.scenarios:
        return ""
    parts = [f"<h3>{html.e(run.label)}: multiprogrammed workloads</h3>"]
    for app in data.apps:
        lines = []
        for baseline in data.baselines:
            points = [(k, data.get("turnaround", app, baseline, k)) for k in data.degrees]
            points = [(k, r) for k, r in points if r is not None and r["status"] == "ok" and r["samples"]]
            if not points:
                continue
            means = [sum(r["samples"]) / len(r["samples"]) for _, r in points]
            intervals = [stats.mean_interval(r["samples"], r["unit"]) for _, r in points]
            lines.append(fig.TurnaroundLine(baseline, [k for k, _ in points], means,
                                            [i.low if i else None for i in intervals],
                                            [i.high if i else None for i in intervals]))
        if not lines:
            continue
        alone = data.alone(app)
        linear = sum(alone["samples"]) / len(alone["samples"]) if alone else None
        rendered = fig.turnaround_figure(maker.name(f"run{run.id}-multiprog-{app}"),
                                         f"{app}: mean turnaround per degree", lines, linear, maker.out_dir)
        rendered.caption = (f"{run.label}: mean turnaround of the instances of k simultaneous instances, each "
                            "asking for every CPU, per baseline, with the 95% interval across experiments (log "
                            "scale: never below zero); log time axis (as Barekas et al.'s Fig. 3); dashed: k × the "
                            "dedicated time.")
        parts.append(maker.html(rendered))
    bars = []
    for name in data.scenarios:
        for index, baseline in enumerate(data.baselines):
            record = data.scenario("turnaround", name, baseline)
            if record is None:
                continue
            colour = fig.PALETTE[index % len(fig.PALETTE)]
            if record["status"] != "ok" or not record["samples"]:
                bars.append(fig.Bar(name, baseline, colour, None, None, None, "FAILED"))
                continue
            interval = stats.mean_interval(record["samples"], record["unit"])
            bars.append(fig.Bar(name, baseline, colour, sum(record["samples"]) / len(record["samples"]),
                                interval.low if interval else None, interval.high if interval else None))
    if bars:
        rendered = fig.bar_figure(maker.name(f"run{run.id}-multiprog-scenarios"),
                                  "scenarios: mean turnaround per baseline", bars, "s", maker.out_dir)
        rendered.caption = (f"{run.label}: the scenarios where the manager should win (mixed kernels arriving "
                            "staggered, the late arrival, the manager stopped and a program SIGKILLed mid-run): mean "
                            "turnaround of the programs per baseline, with the 95% interval (log scale) across "
                            "experiments; docs/study-multiprog.md says what each runs.")
        parts.append(maker.html(rendered))
    return "".join(parts)


# ------------------------------------------------------------- first screen


def machine_facts(run: RunInfo) -> list[tuple[str, str]]:
    described = dict(environment.describe(run.environment))
    env = run.environment
    facts = []
    for key in ("CPU", "kernel", "virtualization", "clock", "load average", "compiler", "C library", "runner"):
        if key in described and described[key].strip():
            facts.append((key, described[key]))
    memory = (env.get("memory") or {}).get("total_bytes")
    if isinstance(memory, (int, float)) and memory > 0:
        facts.append(("memory", f"{memory / 2**30:.1f} GiB"))
    governors = (env.get("cpu") or {}).get("governors")
    facts.append(("frequency governor", ", ".join(f"{g} ({n} CPUs)" for g, n in governors.items()) if governors
                  else "not exposed (typical of a virtual machine)"))
    if env.get("note"):
        facts.append(("note", str(env["note"])))
    return facts


def run_line(run: RunInfo) -> str:
    duration = run_duration(run)
    counts = ", ".join(f"{run.counts.get(s, 0)} {w}" for s, w in (("ok", "ok"), ("unsupported", "n/a"),
                                                                     ("failed", "failed")))
    taken = f", {format_duration(duration)}" if duration is not None else ""
    return f"{run.label}: {run.display_status}{taken}; {counts} of {run.points_planned} planned points"


def report_warnings(runs: Sequence[tuple[RunInfo, list[dict[str, Any]]]]) -> list[str]:
    """The runs' environment warnings, then what the data itself says."""
    found: list[str] = []
    several = len(runs) > 1
    for run, records in runs:
        prefix = f"{run.label}: " if several else ""
        for warning in run.environment.get("warnings") or []:
            found.append(prefix + warning)
        status = run.display_status
        if status not in ("complete", "running"):
            found.append(f"{prefix}the run is {status}: only the points it finished are shown")
        failed = sum(1 for r in records if r["status"] == "failed")
        if failed:
            found.append(f"{prefix}{failed} point{'s' if failed != 1 else ''} failed (no measurement)")
        checks = sum(1 for r in records if failed_checks(r))
        if checks:
            found.append(f"{prefix}{checks} point{'s' if checks != 1 else ''} with a failed check (marked !): "
                         "they may not measure what they claim")
        small = sum(1 for r in records if r["status"] == "ok" and 0 < len(r.get("samples") or []) < SMALL)
        if small:
            found.append(f"{prefix}{small} point{'s' if small != 1 else ''} with fewer than {SMALL} timings: "
                         "wide intervals, weak comparisons (a --quick run?)")
        if run.origin and not run.origin.get("header", True):
            found.append(f"{prefix}imported from bare records: the environment was not recorded")
    return list(dict.fromkeys(found))


# -------------------------------------------------------------------- page


def build_page(runs: Sequence[tuple[RunInfo, list[dict[str, Any]]]], out_dir: ReportDirectory, alpha: float = 0.05,
               test: str = "welch") -> ReportResult:
    maker = FigureMaker(out_dir.figures)
    first = runs[0][0]
    body: list[str] = []
    nav = [("overview", "Overview")]
    # -- first screen: the machine(s), the warnings, the overview
    machines: dict[str, list[RunInfo]] = {}
    for run, _ in runs:
        machines.setdefault(run.machine_id, []).append(run)
    cards = []
    for machine_runs in machines.values():
        run = machine_runs[-1]
        title = f"Machine: {run.hostname}"
        facts = machine_facts(run)
        facts[:0] = [("run", run_line(r)) for r in machine_runs]
        cards.append(html.card(title, html.facts(facts), "machine"))
    warnings = report_warnings(runs)
    if warnings:
        cards.append(html.card(f"Warnings ({len(warnings)})", html.bullet_list(warnings), "warnings"))
    else:
        cards.append(html.card("Warnings", '<p class="ok-box">None: no virtual machine, frequency scaling, load, '
                               "failed point or failed check was detected.</p>", "warnings-none"))
    body.append('<div class="cards">' + "".join(cards) + "</div>")
    body.append('<h2 id="overview">Results overview</h2>')
    if len(runs) == 1:
        body.append(overview_single(runs[0][1]))
    else:
        sides = [compare.Side(run.label + f" on {run.hostname}", f"run {run.id}", records) for run, records in runs]
        body.append(overview_matrix(sides, alpha, test))
    # -- the omp suite: every construct by runtime
    omp_parts = [omp_section(run, records, len(runs) > 1) for run, records in runs]
    if any(omp_parts):
        nav.append(("omp-runtimes", "OpenMP"))
        body.append('<h2 id="omp-runtimes">OpenMP constructs by runtime</h2>')
        body.append('<p class="lede">The omp suite (docs/omp-suite.md): per construct, the EPCC overhead (the '
                    "construct around a calibrated delay minus the delay alone) under each runtime, its median with "
                    "the distribution-free 95% interval; runtime / gomp: the ratio of the medians to libgomp's with "
                    "its 95% Price-Bonett interval (above 1: costlier than libgomp).</p>")
        body += omp_parts
    # -- comparisons
    if len(runs) > 1:
        nav.append(("comparisons", "Comparisons"))
        body.append('<h2 id="comparisons">Comparisons</h2>')
        base_run, base_records = runs[0]
        for run, records in runs[1:]:
            pair = compare.compare_sides(
                compare.Side(f"{base_run.label} on {base_run.hostname}", f"run {base_run.id}", base_records),
                compare.Side(f"{run.label} on {run.hostname}", f"run {run.id}", records),
                alpha=alpha, test=test,
            )
            body.append(comparison_html(pair))
    # -- per run: families, distributions, studies
    nav += [("results", "Results"), ("distributions", "Distributions")]
    results_parts, ecdf_parts, study_parts = [], [], []
    for run, records in runs:
        heading = f"<h3>{html.e(run.label)}</h3>" if len(runs) > 1 else ""
        results_parts.append(heading)
        points = describe_points(records)
        by_record = {id(p.record): p for p in points}
        for family, members in families(records).items():
            family_points = [by_record[id(r)] for r in members]
            results_parts.append(f'<h3 id="family-{html.e(_slug(f"{run.id}-{family}"))}">{html.e(family)}</h3>')
            results_parts.append(detail_table(family_points))
            results_parts += family_figures(maker, run, family, family_points)
        ecdfs = ecdf_sections(maker, run, records)
        if ecdfs:
            ecdf_parts.append(heading)
            ecdf_parts += ecdfs
        study = study_section(maker, run, records) + multiprog_section(maker, run, records) + spawn_section(
            maker, run, records)
        if study:
            study_parts.append(study)
    body.append('<h2 id="results">Results by benchmark family</h2>')
    body.append('<p class="lede">Every point: the median with its distribution-free 95% interval, the mean with its '
                "Student t 95% interval, the interquartile mean (IQM), the median absolute deviation (MAD), the "
                "number of timings, outliers by modified z-score above 3.5 (counted, never removed) and the rule "
                "that stopped the sampling.</p>")
    body += results_parts
    body.append('<h2 id="distributions">Distributions</h2>')
    body += ecdf_parts or ['<p class="lede">No hand-off or switch benchmark with enough timings for a distribution.</p>']
    if study_parts:
        nav.append(("studies", "Studies"))
        body.append('<h2 id="studies">Studies: speedup and turnaround</h2>')
        body += study_parts
    # -- environment
    nav.append(("environment", "Environment"))
    body.append('<h2 id="environment">Environment</h2>')
    for run, records in runs:
        facts = [("status", run.display_status), ("started", f"{local_time(run.started_at)} (local time)"),
                 ("command", " ".join(run.command)), ("records", str(len(records)))]
        if run.stop_reason:
            facts.insert(1, ("stopped", run.stop_reason))
        if run.origin:
            facts.append(("imported", f"from {run.origin.get('file')} at {run.origin.get('imported_at')}"))
        facts += environment.describe(run.environment)
        body.append(f"<h3>{html.e(run.label)}</h3>" + html.facts(facts))
        body.append("<details><summary>the full environment as recorded (JSON)</summary>"
                    f'<pre class="env">{html.e(json.dumps(run.environment, indent=2, sort_keys=True))}</pre></details>')
    generated = datetime.now(timezone.utc).astimezone().strftime("%Y-%m-%d %H:%M")
    body.append(f"<footer>Generated by threadlab {html.e(__version__)} on {html.e(generated)}. Statistics: "
                "docs/statistics.md; this page: docs/commands/report.md. Figures as PNG in figures/.</footer>")
    labels = ", ".join(run.label for run, _ in runs)
    subtitle = f"{labels} · {first.display_status} · {local_time(first.started_at)} · {first.hostname}"
    page = html.page("threadlab report", subtitle, nav, "\n".join(body), f"threadlab {__version__}")
    out_dir.root.write("index.html", page)
    return ReportResult(out_dir.root.path / "index.html", maker.made)


def comparison_html(pair: compare.PairComparison) -> str:
    notes = Footnotes()
    rows = compare.comparison_rows(pair, notes)
    heads = compare.headers(pair)
    cells = []
    for row, point in zip(rows, pair.points):
        verdict_cls = "slower" if point.worse else ("faster" if point.direction else "")
        cells.append([Cell(c, "num" if j == "right" else "") for c, (_, j) in zip(row[:-1], heads[:-1])]
                     + [Cell(row[-1], verdict_cls)])
    summary = compare.summary_row(pair, len(heads))
    cells.append([Cell(c) for c in summary[:-1]] + [Cell(summary[-1], "wrap")])
    title, method = compare.title(pair).split("\n", 1)
    return (f"<h3>{html.e(title)}</h3><p class=\"lede\">{html.e(method)}</p>"
            + html.data_table([Cell(h, "num" if j == "right" else "") for h, j in heads], cells, summary_rows=1)
            + html.notes_list(notes.texts))


def write_report(runs: Sequence[tuple[RunInfo, list[dict[str, Any]]]], out_dir: Path, alpha: float = 0.05,
                 test: str = "welch", store: Path | None = None) -> ReportResult:
    """DIR/index.html and DIR/figures/*.png, each file written whole (a full
    disk or a Ctrl-C leaves no half file); never over the store."""
    if not runs:
        raise UserError("report: no run to report")
    directory = prepare_directory(out_dir, store)
    try:
        return build_page(runs, directory, alpha, test)
    finally:
        directory.close()
