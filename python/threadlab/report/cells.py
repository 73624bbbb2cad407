"""The cells the report's tables share: a record that has no measurement
(n/a, FAILED, with its numbered note), a median with its distribution-free
95% interval, the mark of a failed check."""

from __future__ import annotations

from typing import Any, Mapping

from threadlab.analysis import stats
from threadlab.analysis.points import failed_checks
from threadlab.output.table import Footnotes
from threadlab.output.units import format_value
from threadlab.report.html import Cell


def missing_cell(record: Mapping[str, Any] | None, notes: Footnotes) -> Cell | None:
    """The cell of a record without a measurement (none, unsupported,
    failed), else None."""
    if record is None:
        return Cell("")
    if record["status"] == "ok":
        return None
    ref = notes.ref(f"{record['status']}: {record['reason']}")
    if record["status"] == "unsupported":
        return Cell(f"n/a {ref}", "num na")
    return Cell(f"FAILED {ref}", "num failed")


def median_text(d: stats.Description, unit: str) -> str:
    """'1.2 µs [1.1 µs, 1.3 µs]': the median and its 95% interval."""
    return f"{format_value(d.median, unit)} [{format_value(d.median_ci.low, unit)}, {format_value(d.median_ci.high, unit)}]"


def check_mark(record: Mapping[str, Any], notes: Footnotes) -> str:
    """' ! [n]' when a check of the record failed, else ''."""
    checks = failed_checks(record)
    return " ! " + notes.ref(f"{record['benchmark']}: " + "; ".join(checks)) if checks else ""
