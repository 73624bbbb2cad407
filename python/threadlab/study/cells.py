"""The cells of the studies' tables (study/tables.py, tables_multiprog.py):
a mean with its interval, a ratio of means with Fieller's, what a cell
without a measurement says, the marks of failed checks, and a titled
table with its notes.  Read from the records' stored summaries and
samples; rich is imported when a table is printed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from threadlab.analysis import stats
from threadlab.output.table import Footnotes, print_table
from threadlab.output.units import format_number, is_time_unit, scale_time, to_ns

if TYPE_CHECKING:
    from rich.console import Console


def marks(records: Sequence[Mapping[str, Any] | None], notes: Footnotes) -> str:
    """'!' and a note for each failed check of the records behind a cell."""
    text = ""
    for record in records:
        for check in (record or {}).get("checks", []):
            if not check["ok"]:
                text += " !" + notes.ref(f"{record['benchmark']} {record['model']}: check {check['name']} failed: "
                                         f"{check['detail']}")
    return text


def missing_text(record: Mapping[str, Any] | None, notes: Footnotes) -> str | None:
    """The text of a cell that has no measurement, else None."""
    if record is None:
        return ""
    if record["status"] == "unsupported":
        return "n/a " + notes.ref(f"unsupported: {record['reason']}")
    if record["status"] == "failed":
        return "FAILED " + notes.ref(f"failed: {record['reason']}")
    return None


def _interval_text(mean: float, interval: stats.Interval | None, unit: str) -> str:
    """'101 ms [100, 102]': the interval in the mean's scale."""
    if is_time_unit(unit):
        scaled, shown = scale_time(to_ns(mean, unit))
        factor = scaled / mean if mean else 1.0
    else:
        scaled, shown, factor = mean, unit, 1.0
    text = f"{format_number(scaled)} {shown}"
    if interval is not None:
        text += f" [{format_number(interval.low * factor)}, {format_number(interval.high * factor)}]"
    return text


def speedup_cell(base: Mapping[str, Any] | None, other: Mapping[str, Any] | None, notes: Footnotes,
                 per: float = 1.0) -> str:
    """mean(base) / mean(other) / per, with its Fieller interval."""
    for record in (base, other):
        missing = missing_text(record, notes)
        if missing is not None:
            return missing
    assert base is not None and other is not None
    ratio, interval = stats.ratio_of_means(base["samples"], other["samples"])
    if ratio is None:
        return "—"
    text = f"{ratio / per:.3f}"
    if interval is not None:
        text += f" [{interval.low / per:.3f}, {interval.high / per:.3f}]"
    return text + marks([base, other], notes)


def mean_cell(record: Mapping[str, Any] | None, notes: Footnotes) -> str:
    """The record's mean with its 95% interval (stats.mean_interval: a time's on the
    log scale), in its unit."""
    missing = missing_text(record, notes)
    if missing is not None:
        return missing
    assert record is not None
    summary = stats.record_summary(record)
    assert summary is not None
    return (_interval_text(summary.mean, stats.mean_interval(record["samples"], record["unit"]), record["unit"])
            + marks([record], notes))


def median_cell(record: Mapping[str, Any] | None, notes: Footnotes) -> str:
    """The median of the record's samples with its 95% interval
    (stats.median_ci, order statistics; none for one sample), in its unit."""
    missing = missing_text(record, notes)
    if missing is not None:
        return missing
    assert record is not None
    samples = record["samples"]
    interval = stats.median_ci(samples) if len(samples) > 1 else None
    return _interval_text(stats.describe(samples).median, interval, record["unit"]) + marks([record], notes)


def study_heading(console: Console, title: str, measured: bool) -> bool:
    """A study's heading: its title, or that nothing was measured (then
    False: no tables follow). Plain text: a run's name may hold brackets."""
    from rich.text import Text

    if not measured:
        console.print(f"{title}: no data points were measured.", markup=False)
        return False
    console.print(Text(title, style="bold"))
    console.print()
    return True


def print_titled(console: Console, title: str, headers: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]],
                 notes: Sequence[str] = ()) -> None:
    """A study's table: its title, the table (output.table.print_table), its
    numbered notes."""
    from rich.text import Text

    console.print(Text(title, style="bold"))
    print_table(console, headers, rows)
    for number, text in enumerate(notes, start=1):
        console.print(f"  [{number}] {text}", markup=False, soft_wrap=True)
    if notes:
        console.print()
