"""The results table of a run, like Table 1 of the Pthreads suite paper.

Rows are benchmarks (with the parameters that tell rows apart, and the
metric when it is not plain time), columns the placements present, and a
cell the mean with its relative standard deviation, units auto-scaled.
Whatever is not a plain measurement is marked and explained in a
footnote: 'n/a' (unsupported here), 'FAILED', and '!' (a check on what was
measured did not pass).

A second section puts the context-switch cost measured by several methods
side by side, and says so when they disagree.
"""

from __future__ import annotations

import fnmatch
import functools
import math
import os
import sys
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from threadlab.analysis import stats
from threadlab.vocabulary import PLACEMENT_HEADERS, RECORD_PLACEMENTS
from threadlab.output.units import format_relative, format_value, is_time_unit, to_ns

if TYPE_CHECKING:  # rich is imported when a table is printed: `threadlab --help` does not pay for it
    from rich.console import Console
    from rich.text import Text

# The context-switch methods compared side by side, and the yield ping-pong
# that the seed uses for the same purpose.
CONTEXT_SWITCH_PATTERNS: tuple[str, ...] = ("ctxswitch.*", "*.ctxswitch.*", "pthread.yield.pingpong")
# Methods whose slowest and fastest differ more than this disagree.
DISAGREEMENT_RATIO = 2.0
# Without a terminal, tables are laid out this wide (or $COLUMNS), not 80.
_PLAIN_WIDTH = 200


class _TrimmedLines:
    """A text stream that drops trailing blanks: rich pads every line to the
    table's width, which is noise in a log or a diff."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._stream = stream
        self._pending = ""
        self.encoding = getattr(stream, "encoding", "utf-8")

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        for line in lines:
            self._stream.write(line.rstrip() + "\n")
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return False


@functools.lru_cache(maxsize=1)
def _console_class() -> type[Console]:
    """rich's Console, made safe for stored text and closed pipes."""
    from rich.console import Console
    from rich.segment import Segment

    from threadlab.output.files import OutputClosed
    from threadlab.output.sanitize import printable_lines

    class SafeConsole(Console):
        """Every table, listing and message printed through it: the text of
        each segment (run names, hostnames, reasons: data) has its control
        characters written as visible escapes, so stored text cannot send
        escape sequences to the terminal (docs/security.md).  rich's own
        styles and cursor moves are separate segments and pass as they are."""

        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            safe = (segment if segment.control else Segment(printable_lines(segment.text), segment.style)
                    for segment in buffer)
            return super()._render_buffer(safe)

        def on_broken_pipe(self) -> None:
            # rich's default exits with status 1 in silence: say why instead.
            self.quiet = True
            stream = getattr(self.file, "stream", self.file)
            raise OutputClosed("standard error" if stream is sys.stderr else "standard output")

    return SafeConsole


def make_console(file: IO[str] | None = None) -> Console:
    """A console for tables: the terminal's width, or a wide plain layout."""
    console_class = _console_class()
    stream = file if file is not None else sys.stdout
    console = console_class(file=stream, highlight=False, soft_wrap=False)
    if not console.is_terminal:
        width = int(os.environ.get("COLUMNS", "0") or 0) or _PLAIN_WIDTH
        console = console_class(file=_TrimmedLines(stream), highlight=False, soft_wrap=False, width=width)  # type: ignore[arg-type]
    return console


# ------------------------------------------------------------------ model


@dataclass
class Footnotes:
    """Numbered notes; the same text always gets the same number."""

    texts: list[str] = field(default_factory=list)

    def ref(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"


@dataclass
class Row:
    label: str
    quantity: str
    cells: dict[str, str] = field(default_factory=dict)
    styles: dict[str, str] = field(default_factory=dict)  # colour on a terminal


@dataclass
class ResultTable:
    columns: list[str]
    rows: list[Row]
    footnotes: list[str]


def _params_shown(records: Sequence[Mapping[str, Any]], catalog: Mapping[str, Mapping[str, Any]]) -> dict[str, set[str]]:
    """Per benchmark, the params that label its rows: those taking several
    values in this run, or a value other than the benchmark's default."""
    values: dict[str, dict[str, set[str]]] = {}
    for record in records:
        per_param = values.setdefault(record["benchmark"], {})
        for name, value in record["params"].items():
            per_param.setdefault(name, set()).add(value)
    shown: dict[str, set[str]] = {}
    for benchmark, per_param in values.items():
        defaults = {p["name"]: (p.get("values") or [None])[0] for p in catalog.get(benchmark, {}).get("params", [])}
        shown[benchmark] = {
            name
            for name, seen in per_param.items()
            if len(seen) > 1 or (name in defaults and seen != {defaults[name]})
        }
    return shown


def multi_model(records: Iterable[Mapping[str, Any]]) -> set[str]:
    """Benchmarks measured on several models: their labels name the model."""
    models: dict[str, set[str]] = {}
    for record in records:
        models.setdefault(record["benchmark"], set()).add(record["model"])
    return {bench for bench, found in models.items() if len(found) > 1}


def row_label(record: Mapping[str, Any], shown_params: set[str], show_model: bool = False) -> str:
    parts = [record["benchmark"]]
    if show_model:  # the benchmark was measured on several thread models (docs/thread-models.md)
        parts.append(f"[{record['model']}]")
    parts += [f"{name}={value}" for name, value in record["params"].items() if name in shown_params]
    if record["metric"] != "time":
        parts.append(f"({record['metric']})")
    return " ".join(parts)


def cell_text(record: Mapping[str, Any], notes: Footnotes) -> str:
    # Notes carry the reason alone, so one reason shared by many cells (a
    # machine with one CPU) is one note.
    if record["status"] == "unsupported":
        return "n/a " + notes.ref(f"unsupported: {record['reason']}")
    if record["status"] == "failed":
        return "FAILED " + notes.ref(f"failed: {record['reason']}")
    summary = stats.record_summary(record)
    text = format_value(summary.mean, record["unit"]) if summary else "—"
    if summary and summary.rsd is not None:
        text += f" {format_relative(summary.rsd)}"
    failed = [check for check in record["checks"] if not check["ok"]]
    for check in failed:
        value = "" if check["value"] is None else f" (value {check['value']:g})"
        text += " !" + notes.ref(f"{record['benchmark']}: check {check['name']} failed: {check['detail']}{value}")
    return text


def cell_style(record: Mapping[str, Any]) -> str:
    if record["status"] == "failed":
        return "bold red"
    if record["status"] == "unsupported":
        return "dim"
    return "yellow" if any(not check["ok"] for check in record["checks"]) else ""


def build_table(records: Sequence[Mapping[str, Any]], catalog: Sequence[Mapping[str, Any]] = ()) -> ResultTable:
    """The table of a run's records, rows in the order they were measured."""
    by_name = {entry["benchmark"]: entry for entry in catalog}
    shown = _params_shown(records, by_name)
    several = multi_model(records)
    notes = Footnotes()
    rows: dict[str, Row] = {}
    present: set[str] = set()
    for record in records:
        label = row_label(record, shown.get(record["benchmark"], set()), record["benchmark"] in several)
        row = rows.setdefault(label, Row(label=label, quantity=record["quantity"]))
        row.cells[record["placement"]] = cell_text(record, notes)
        row.styles[record["placement"]] = cell_style(record)
        present.add(record["placement"])
    columns = [p for p in RECORD_PLACEMENTS if p in present]
    return ResultTable(columns=columns, rows=list(rows.values()), footnotes=notes.texts)


# ---------------------------------------------------------- context switch


@dataclass
class MethodValue:
    benchmark: str
    placement: str
    quantity: str
    text: str  # mean ±rsd, as in the results table
    median_text: str
    value_ns: float | None  # median in ns (robust on a noisy machine); None when not measured


@dataclass
class ContextSwitchSection:
    methods: list[MethodValue]
    verdict: str | None


def _is_switch_method(benchmark: str) -> bool:
    return any(fnmatch.fnmatchcase(benchmark, pattern) for pattern in CONTEXT_SWITCH_PATTERNS)


def context_switch_section(records: Sequence[Mapping[str, Any]]) -> ContextSwitchSection | None:
    """The cost of a switch by each method, on one CPU (or unplaced for
    methods that take no placement); None when the run measured none."""
    chosen: dict[str, Mapping[str, Any]] = {}
    for record in records:
        if not _is_switch_method(record["benchmark"]) or record["metric"] != "time":
            continue
        if record["placement"] not in ("same-cpu", "none"):
            continue
        current = chosen.get(record["benchmark"])
        # The first measured record of each method wins over failures.
        if current is None or (current["status"] != "ok" and record["status"] == "ok"):
            chosen[record["benchmark"]] = record
    if not chosen:
        return None
    methods = []
    for benchmark, record in chosen.items():
        summary = stats.record_summary(record)
        value_ns = to_ns(summary.median, record["unit"]) if summary and is_time_unit(record["unit"]) else None
        median_text = format_value(summary.median, record["unit"]) if summary else ""
        if summary:
            text = f"{format_value(summary.mean, record['unit'])} {format_relative(summary.rsd)}".strip()
            if any(not check["ok"] for check in record["checks"]):
                text += " !"  # explained in the results table's notes
        else:
            text = "n/a" if record["status"] == "unsupported" else "FAILED"
        methods.append(MethodValue(benchmark, record["placement"], record["quantity"], text, median_text, value_ns))
    return ContextSwitchSection(methods=methods, verdict=_verdict(methods))


def _verdict(methods: Sequence[MethodValue]) -> str | None:
    measured = [m for m in methods if m.value_ns is not None and m.value_ns > 0]
    if len(measured) < 2:
        return None
    fastest = min(measured, key=lambda m: m.value_ns or math.inf)
    slowest = max(measured, key=lambda m: m.value_ns or 0.0)
    ratio = (slowest.value_ns or 0.0) / (fastest.value_ns or 1.0)
    if ratio > DISAGREEMENT_RATIO:
        return (
            f"DISAGREEMENT: the methods' medians differ by a factor of {ratio:.2f} (more than {DISAGREEMENT_RATIO:g}): "
            f"slowest {slowest.benchmark} {slowest.median_text}, fastest {fastest.benchmark} {fastest.median_text}. "
            "The cost of a switch depends on what causes it (system calls, wake-ups, copies add to it), "
            "so no single number is the context-switch cost of this machine."
        )
    return f"The methods' medians agree within a factor of {ratio:.2f} (threshold {DISAGREEMENT_RATIO:g})."


# -------------------------------------------------------------- rendering


# The last column (what one sample is) gives way on a narrow terminal: cut
# with an ellipsis, or left out below this width (`threadlab list` has it).
_MIN_LAST_COLUMN = 16
# Table.padding (0, 1) on both sides of every column, plus the SIMPLE_HEAD edges.
_COLUMN_PADDING = 2


def _print_fitted(console: Console, headers: Sequence[tuple[str, str]], rows: Sequence[Sequence[Text]]) -> None:
    """A table whose columns keep their natural width, except the last,
    which takes what is left of the console's width.  (Left to itself rich
    squeezes the numbers to fit a long last column.)  On a terminal too
    narrow even for the numbers, the lines are longer than the terminal:
    wrapped by it, but nothing is dropped."""
    from rich import box
    from rich.cells import cell_len
    from rich.table import Table

    widths = [
        max([cell_len(header)] + [row[i].cell_len for row in rows]) for i, (header, _) in enumerate(headers)
    ]
    fixed = sum(widths[:-1]) + _COLUMN_PADDING * len(headers) + 2
    room = console.width - fixed
    keep_last = room >= min(_MIN_LAST_COLUMN, widths[-1])
    table = Table(box=box.SIMPLE_HEAD)
    for i, (header, justify) in enumerate(headers[:-1]):
        table.add_column(header, justify=justify, no_wrap=True, min_width=widths[i])  # type: ignore[arg-type]
    if keep_last:
        table.add_column(headers[-1][0], style="dim", no_wrap=True, overflow="ellipsis", max_width=max(room, 1))
    for row in rows:
        table.add_row(*(row if keep_last else row[:-1]))
    width = console.width
    console.width = max(width, fixed)  # print() itself can only narrow
    try:
        console.print(table)
    finally:
        console.width = width


def render_results(
    console: Console,
    records: Sequence[Mapping[str, Any]],
    catalog: Sequence[Mapping[str, Any]] = (),
    title: str = "Results",
) -> None:
    """The results table, its footnotes and the context-switch section."""
    from rich.text import Text

    if not records:
        console.print(f"{title}: no data points were measured.", markup=False)
        return
    model = build_table(records, catalog)
    # The title on a line of its own: as a table title rich would wrap it
    # to the width of a narrow table.
    console.print(Text(f"{title} — mean ±relative standard deviation", style="bold"))
    headers = [("benchmark", "left")] + [(PLACEMENT_HEADERS[c], "right") for c in model.columns]
    headers.append(("one sample is", "left"))
    rows = [
        # Text(): labels and reasons are data, never rich markup.
        [Text(row.label)]
        + [Text(row.cells.get(c, ""), style=row.styles.get(c, "")) for c in model.columns]
        + [Text(row.quantity)]
        for row in model.rows
    ]
    _print_fitted(console, headers, rows)
    if model.footnotes:
        console.print("Notes (n/a: not possible here; FAILED: no measurement; !: a check failed):")
        for number, text in enumerate(model.footnotes, start=1):
            # soft_wrap: a long reason stays one line in a log (a terminal wraps it).
            console.print(f"  [{number}] {text}", markup=False, soft_wrap=True)
    section = context_switch_section(records)
    if section:
        _render_context_switch(console, section)
    console.file.flush()  # before any later line on stderr


def _render_context_switch(console: Console, section: ContextSwitchSection) -> None:
    from rich.text import Text

    console.print(Text("Context switch by method (one CPU)", style="bold"))
    headers = [("method", "left"), ("placement", "left"), ("mean", "right"), ("median", "right"), ("one sample is", "left")]
    rows = [
        [Text(m.benchmark), Text(PLACEMENT_HEADERS[m.placement]), Text(m.text), Text(m.median_text), Text(m.quantity)]
        for m in section.methods
    ]
    _print_fitted(console, headers, rows)
    if section.verdict:
        style = "bold yellow" if section.verdict.startswith("DISAGREEMENT") else ""
        console.print(section.verdict, style=style, markup=False, soft_wrap=True)


def print_table(console: Console, headers: Sequence[tuple[str, str]], rows: Sequence[Sequence[str | Text]],
                summary: Sequence[str | Text] | None = None) -> None:
    """A table of (header, justify) columns, every column at its natural
    width: numbers and verdicts are never cut (on a narrow terminal the
    lines wrap instead).  Cells are Text or plain text (never markup: they
    hold stored text); summary, when given, is a last row set apart."""
    from rich import box
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    def text(cell: str | Text) -> Text:
        return cell if isinstance(cell, Text) else Text(cell)

    body = [[text(cell) for cell in row] for row in rows]
    last = [text(cell) for cell in summary] if summary else None
    every = body + ([last] if last else [])
    widths = [max([cell_len(h)] + [row[i].cell_len for row in every]) for i, (h, _) in enumerate(headers)]
    table = Table(box=box.SIMPLE_HEAD)
    for (header, justify), width in zip(headers, widths):
        # Text(): a header may hold stored text (a variant's value), never markup.
        table.add_column(Text(header), justify=justify, no_wrap=True, min_width=width)  # type: ignore[arg-type]
    for row in body:
        table.add_row(*row)
    if last:
        table.add_section()
        table.add_row(*last)
    saved = console.width
    console.width = max(saved, sum(widths) + 3 * len(widths) + 2)
    try:
        console.print(table)
    finally:
        console.width = saved

