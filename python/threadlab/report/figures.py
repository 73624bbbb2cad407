"""The report's figures, drawn with matplotlib (Agg, no display needed).

Each figure is rendered twice: as SVG text to embed in the page, and as a
PNG file beside it.  Figures are built on matplotlib.figure.Figure directly
(no pyplot state), with text kept as SVG <text> and a per-figure hash salt,
so several SVGs in one page never share element ids and the output is
deterministic (no date in the metadata).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg", force=True)

from matplotlib import rc_context  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from threadlab.analysis import stats  # noqa: E402
from threadlab.output.files import Directory  # noqa: E402
from threadlab.analysis.points import DescribedPoint, placement_text  # noqa: E402
from threadlab.output.units import is_time_unit, scale_time, to_ns  # noqa: E402

# Okabe-Ito: distinguishable with every common colour-vision deficiency.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
PLACEMENT_COLOURS = {"none": "#777777", "unbound": "#0072B2", "same-cpu": "#E69F00", "different-cpus": "#009E73"}
# Bars on a log axis when the largest positive value exceeds the smallest by this.
LOG_SCALE_RATIO = 100.0
ECDF_LOG_RATIO = 20.0
PNG_DPI = 110
_SVG_HEADER = re.compile(r"^.*?(?=<svg)", re.S)


@dataclass
class RenderedFigure:
    name: str  # file stem, unique in the report
    title: str
    svg: str  # the <svg> element, ready to inline
    png: Path
    caption: str = ""


def _render(figure: Figure, name: str, title: str, out_dir: Directory) -> RenderedFigure:
    """The figure as inline SVG, and as a PNG file written whole into the
    report's figures directory (output.Directory: never through a link)."""
    png = out_dir.path / f"{name}.png"
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": f"threadlab-{name}"}):
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
        image = io.BytesIO()
        figure.savefig(image, format="png", dpi=PNG_DPI, metadata={"Software": None}, bbox_inches="tight")
    out_dir.write(png.name, image.getvalue())
    svg = _SVG_HEADER.sub("", buffer.getvalue(), count=1)
    # Scale with the page, never beyond the drawn size: keep the viewBox, let
    # CSS size the element (matplotlib writes the size in points).
    size = re.search(r'<svg[^>]*? width="([\d.]+)pt"', svg)
    natural = f"max-width: {float(size.group(1)) * 96 / 72:.0f}px" if size else ""
    svg = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r'<svg\1', svg, count=1)
    label = escape(title, quote=True)
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{label}" class="plot" style="{natural}" ', 1)
    return RenderedFigure(name, title, svg, png)


def _style(ax: Any) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=8)


# ------------------------------------------------------------------- bars


@dataclass
class Bar:
    row: str
    series: str
    colour: str
    value: float | None  # mean; None: nothing to draw (n/a, failed)
    low: float | None
    high: float | None
    note: str = ""  # "n/a", "FAILED", "derived"


def _display_scale(values: Sequence[float], unit: str) -> tuple[float, str]:
    """(divisor, unit label) to show the values in readable numbers."""
    if not is_time_unit(unit):
        return 1.0, unit
    positive = sorted(abs(to_ns(v, unit)) for v in values if v)
    if not positive:
        return to_ns(1.0, unit) / 1.0, "ns"
    _, shown = scale_time(positive[len(positive) // 2])
    factor = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}[shown]
    return factor / to_ns(1.0, unit), shown


def bars_from_points(points: Sequence[DescribedPoint], series_of: Any, row_of: Any) -> list[Bar]:
    """Bars of the points; colours by placement when the series are
    placements, else one palette colour per series."""
    names = list(dict.fromkeys(series_of(point.record) for point in points))
    by_placement = all(
        series_of(p.record) == placement_text(str(p.record["placement"])) for p in points
    )
    bars = []
    for point in points:
        record = point.record
        series = series_of(record)
        if by_placement:
            colour = PLACEMENT_COLOURS.get(record["placement"], "#777777")
        else:
            colour = PALETTE[names.index(series) % len(PALETTE)]
        if point.status != "ok":
            bars.append(Bar(row_of(point), series, colour, None, None, None,
                            "n/a" if point.status == "unsupported" else "FAILED"))
            continue
        d = point.description
        if d is None:
            bars.append(Bar(row_of(point), series, colour, point.value, None, None, "derived"))
            continue
        low, high = (d.mean_ci.low, d.mean_ci.high) if d.mean_ci else (None, None)
        bars.append(Bar(row_of(point), series, colour, d.mean, low, high))
    return bars


def bar_figure(name: str, title: str, bars: Sequence[Bar], unit: str, out_dir: Directory) -> RenderedFigure:
    """Horizontal bars of the mean with 95% CI error bars: one group per
    row, one bar per series (placement), log axis across decades."""
    rows = list(dict.fromkeys(bar.row for bar in bars))
    series = list(dict.fromkeys(bar.series for bar in bars))
    values = [v for bar in bars for v in (bar.value, bar.low, bar.high) if v is not None]
    divisor, shown_unit = _display_scale([b.value for b in bars if b.value is not None], unit)
    positive = [v for v in values if v > 0]
    log = bool(positive) and len(positive) == len(values) and max(positive) / min(positive) > LOG_SCALE_RATIO
    in_row = {row: [s for s in series if any(b.row == row and b.series == s for b in bars)] for row in rows}
    widest = max((len(present) for present in in_row.values()), default=1) or 1
    height = 0.8 + 0.17 * len(bars) + 0.14 * len(rows)
    figure = Figure(figsize=(9.0, min(max(height, 1.8), 40.0)))
    ax = figure.add_subplot()
    _style(ax)
    thickness = 0.8 / widest
    for r_index, row in enumerate(rows):
        present = in_row[row]
        for s_index, name_s in enumerate(present):
            bar = next(b for b in bars if b.row == row and b.series == name_s)
            y = r_index + (s_index - (len(present) - 1) / 2) * thickness
            if bar.value is None or (log and bar.value <= 0):
                ax.text(0.005, y, f" {bar.note or 'not positive: not on a log axis'}", va="center", fontsize=7,
                        color="#a33", transform=ax.get_yaxis_transform())
                continue
            error = None
            if bar.low is not None and bar.high is not None:
                low, high = bar.low / divisor, bar.high / divisor
                if log:
                    low = max(low, bar.value / divisor * 1e-3)
                error = [[bar.value / divisor - low], [high - bar.value / divisor]]
            ax.barh(y, bar.value / divisor, height=thickness * 0.92, color=bar.colour, xerr=error,
                    error_kw={"elinewidth": 0.9, "capsize": 2, "ecolor": "#222222"},
                    hatch="//" if bar.note == "derived" else None, edgecolor="white", linewidth=0.3,
                    label=name_s)
    ax.set_yticks(range(len(rows)), labels=rows, fontsize=8)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(f"mean ({shown_unit}), error bars: 95% CI of the mean" + (", log scale" if log else ""), fontsize=8)
    ax.set_title(title, fontsize=10, loc="left")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    if len(unique) > 1:
        ax.legend(unique.values(), unique.keys(), fontsize=7, frameon=False, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0))
    return _render(figure, name, title, out_dir)


# ------------------------------------------------------------------- ECDF


@dataclass
class EcdfLine:
    label: str
    colour: str
    samples: list[float]


def ecdf_figure(name: str, title: str, lines: Sequence[EcdfLine], unit: str, out_dir: Directory) -> RenderedFigure:
    """One step line per series: the fraction of timings at or below x."""
    everything = [v for line in lines for v in line.samples]
    divisor, shown_unit = _display_scale(everything, unit)
    figure = Figure(figsize=(7.0, 3.4))
    ax = figure.add_subplot()
    _style(ax)
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    for line in lines:
        xs, ps = stats.ecdf(line.samples)
        xs = xs / divisor
        ax.step([xs[0]] + list(xs), [0.0] + list(ps), where="post", color=line.colour, linewidth=1.4,
                label=f"{line.label} (n={len(line.samples)})")
        ax.plot(xs, ps, "o", color=line.colour, markersize=2.5)
    positive = [v for v in everything if v > 0]
    if positive and len(positive) == len(everything) and max(positive) / min(positive) > ECDF_LOG_RATIO:
        ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"time per action ({shown_unit})" if is_time_unit(unit) else unit, fontsize=8)
    ax.set_ylabel("fraction of timings ≤ x", fontsize=8)
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    return _render(figure, name, title, out_dir)


# ---------------------------------------------------------------- speedup


@dataclass
class SpeedupLine:
    label: str
    threads: list[int]
    speedup: list[float]
    low: list[float | None]
    high: list[float | None]


def speedup_bars(name: str, title: str, lines: Sequence[SpeedupLine], out_dir: Directory) -> RenderedFigure:
    """Series measured at 1 and one other thread count: one horizontal bar
    per series, the speedup at that count with its interval."""
    figure = Figure(figsize=(8.0, 0.9 + 0.28 * len(lines)))
    ax = figure.add_subplot()
    _style(ax)
    for index, line in enumerate(lines):
        speedup, low, high = line.speedup[-1], line.low[-1], line.high[-1]
        error = None
        if low is not None and high is not None:
            error = [[speedup - low], [high - speedup]]
        ax.barh(index, speedup, height=0.7, color=PALETTE[0], xerr=error,
                error_kw={"elinewidth": 0.9, "capsize": 2, "ecolor": "#222222"})
    counts = sorted({line.threads[-1] for line in lines})
    for count in counts:
        ax.axvline(count, color="#999999", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(lines)), labels=[f"{line.label} ({line.threads[-1]} threads)" for line in lines],
                  fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("speedup over 1 thread, 95% CI (dashed: ideal)", fontsize=8)
    ax.set_title(title, fontsize=10, loc="left")
    return _render(figure, name, title, out_dir)


def speedup_figure(name: str, title: str, lines: Sequence[SpeedupLine], out_dir: Directory) -> RenderedFigure:
    figure = Figure(figsize=(6.5, 3.6))
    ax = figure.add_subplot()
    _style(ax)
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    most = max((max(line.threads) for line in lines if line.threads), default=1)
    ax.plot([1, most], [1, most], "--", color="#999999", linewidth=1, label="ideal (speedup = threads)")
    for index, line in enumerate(lines):
        colour = PALETTE[index % len(PALETTE)]
        lower = [s - (lo if lo is not None else s) for s, lo in zip(line.speedup, line.low)]
        upper = [(hi if hi is not None else s) - s for s, hi in zip(line.speedup, line.high)]
        ax.errorbar(line.threads, line.speedup, yerr=[lower, upper], color=colour, marker="o", markersize=4,
                    capsize=3, linewidth=1.4, label=line.label)
    ax.set_xlabel("threads", fontsize=8)
    ax.set_ylabel("speedup over 1 thread (95% CI)", fontsize=8)
    ax.set_xticks(sorted({t for line in lines for t in line.threads}))
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    return _render(figure, name, title, out_dir)



# ------------------------------------------------------------- turnaround


@dataclass
class TurnaroundLine:
    label: str
    degrees: list[int]
    seconds: list[float]
    low: list[float | None]
    high: list[float | None]


def turnaround_figure(name: str, title: str, lines: Sequence[TurnaroundLine], linear: float | None,
                      out_dir: Directory) -> RenderedFigure:
    """Mean turnaround against the multiprogramming degree, one line per
    baseline with its 95% interval, on a log time axis (the seed's Fig. 3);
    dashed: k x the dedicated time (turnaround linear in the degree)."""
    figure = Figure(figsize=(6.5, 3.8))
    ax = figure.add_subplot()
    _style(ax)
    ax.grid(axis="y", color="#dddddd", linewidth=0.6, which="both")
    degrees = sorted({k for line in lines for k in line.degrees})
    if linear and degrees:
        ax.plot(degrees, [linear * k for k in degrees], "--", color="#999999", linewidth=1,
                label="linear: k × dedicated time")
    for index, line in enumerate(lines):
        colour = PALETTE[index % len(PALETTE)]
        # A t interval of few runs can reach below zero: the bar runs off the axis.
        lower = [s - lo if lo is not None else 0.0 for s, lo in zip(line.seconds, line.low)]
        upper = [(hi - s) if hi is not None else 0.0 for s, hi in zip(line.seconds, line.high)]
        ax.errorbar(line.degrees, line.seconds, yerr=[lower, upper], color=colour, marker="o", markersize=4,
                    capsize=3, linewidth=1.4, label=line.label)
    ax.set_yscale("log", nonpositive="clip")
    means = [v for line in lines for v in line.seconds if v > 0]
    if means:
        tops = [h for line in lines for h in line.high if h is not None and h > 0] + means
        ax.set_ylim(min(means) / 3, max(tops) * 1.5)
    ax.set_xscale("log", base=2)
    ax.set_xticks(degrees, labels=[str(k) for k in degrees])
    ax.set_xlabel("multiprogramming degree k (instances at once)", fontsize=8)
    ax.set_ylabel("mean turnaround (s, log scale, 95% CI)", fontsize=8)
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    return _render(figure, name, title, out_dir)
