"""The report's table of the omp suite (docs/omp-suite.md): every OpenMP
construct by runtime, the EPCC overhead's median with its 95% interval,
and each runtime's ratio to libgomp with its Price-Bonett interval (as
`threadlab compare`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from threadlab import vocabulary
from threadlab.analysis import stats
from threadlab.analysis.compare import format_ratio
from threadlab.analysis.points import canonical_params, placement_rank, placement_text, samples_in
from threadlab.output.table import Footnotes
from threadlab.records.store import RunInfo
from threadlab.report import html
from threadlab.report.cells import check_mark, median_text, missing_cell
from threadlab.report.html import Cell

# The suite's records: its benchmarks' names start with one of these (the
# suite's own, and `threadlab study omp`'s cells: one sample per run, the
# run's median), the EPCC overhead is their metric (omp.region.overhead,
# of model openmp, has other metrics and no runtime column).
BENCHMARK_PREFIXES = ("omp.", "study.omp.")
METRIC = "overhead"
BASELINE = vocabulary.OMP_BASELINE
# Runtimes in this order, any other after them as the records have them.
RUNTIME_ORDER = vocabulary.OMP_RUNTIMES
# The params that become columns when they vary, in this order (others after,
# by name); `construct` is the row's name.
PARAM_ORDER = ("threads", "schedule", "chunk")
# omp.schedule measures the `for` construct under a schedule clause.
CONSTRUCT_OF = {"omp.schedule": "for"}


@dataclass
class ConstructTable:
    """Rows (a construct and the params and placement that vary) by
    runtimes; cells[row][runtime] is the record."""

    runtimes: list[str]
    params: list[str]  # the params shown as columns
    placements: bool  # whether the placement is a column
    rows: list[tuple[str, dict[str, str], str]] = field(default_factory=list)  # construct, params, placement
    cells: list[dict[str, Mapping[str, Any]]] = field(default_factory=list)


def construct_of(record: Mapping[str, Any]) -> str:
    return str(record["params"].get("construct") or CONSTRUCT_OF.get(record["benchmark"], record["benchmark"]))


def construct_table(records: Sequence[Mapping[str, Any]]) -> ConstructTable | None:
    """The omp suite's records as constructs by runtime; None when there are none."""
    mine = [r for r in records if r["benchmark"].startswith(BENCHMARK_PREFIXES) and r["metric"] == METRIC]
    if not mine:
        return None
    seen = list(dict.fromkeys(r["model"] for r in mine))
    runtimes = [m for m in RUNTIME_ORDER if m in seen] + [m for m in seen if m not in RUNTIME_ORDER]
    values: dict[str, set[str]] = {}
    for record in mine:
        for name, value in record["params"].items():
            if name != "construct":
                values.setdefault(name, set()).add(str(value))
    varying = {name for name, found in values.items() if len(found) > 1}
    params = [p for p in PARAM_ORDER if p in varying] + sorted(varying - set(PARAM_ORDER))
    placements = len({r["placement"] for r in mine}) > 1
    table = ConstructTable(runtimes, params, placements)
    index: dict[tuple[str, str, str], int] = {}
    for record in mine:
        others = {k: str(v) for k, v in record["params"].items() if k != "construct"}
        key = (record["benchmark"], canonical_params(record["params"]), record["placement"])
        if key not in index:
            index[key] = len(table.rows)
            table.rows.append((construct_of(record), {p: others.get(p, "") for p in params}, record["placement"]))
            table.cells.append({})
        # A point measured twice in one run: its first record, as the overview.
        table.cells[index[key]].setdefault(record["model"], record)
    order = sorted(range(len(table.rows)), key=lambda i: (placement_rank(table.rows[i][2]), i))
    table.rows = [table.rows[i] for i in order]
    table.cells = [table.cells[i] for i in order]
    return table


def value_cell(record: Mapping[str, Any] | None, notes: Footnotes) -> Cell:
    missing = missing_cell(record, notes)
    if missing is not None:
        return missing
    assert record is not None
    d = stats.record_description(record)
    if d is None:
        return Cell("—", "num na")
    mark = check_mark(record, notes)
    return Cell(median_text(d, record["unit"]) + mark, "num flag" if mark else "num", f"n = {d.n}")


def ratio_cell(base: Mapping[str, Any] | None, other: Mapping[str, Any] | None, notes: Footnotes) -> Cell:
    """median(other) / median(libgomp) with its 95% interval."""
    if base is None or other is None or base["status"] != "ok" or other["status"] != "ok":
        return Cell("")
    a, b = samples_in(base, base["unit"]), samples_in(other, base["unit"])
    if not a or not b:
        return Cell("")
    ratio, interval = stats.ratio_of_medians(a, b)
    if ratio is None:
        return Cell("— " + notes.ref("no ratio where a median overhead is 0 or below (a construct that costs less "
                                     "than the noise)"), "num na")
    text = format_ratio(ratio)
    if interval is not None:
        text += f" [{format_ratio(interval.low)}, {format_ratio(interval.high)}]"
    return Cell(text, "num")


def table_html(table: ConstructTable, table_id: str = "") -> str:
    notes = Footnotes()
    ratios = BASELINE in table.runtimes
    headers: list[Cell | str] = ["construct"] + [Cell(p, "num") for p in table.params]
    if table.placements:
        headers.append("placement")
    for runtime in table.runtimes:
        headers.append(Cell(runtime, "num"))
        if ratios and runtime != BASELINE:
            headers.append(Cell(f"{runtime} / {BASELINE}", "num"))
    rows = []
    for (construct, params, placement), cells in zip(table.rows, table.cells):
        row = [Cell(construct)] + [Cell(params[p], "num") for p in table.params]
        if table.placements:
            row.append(Cell(placement_text(placement)))
        for runtime in table.runtimes:
            row.append(value_cell(cells.get(runtime), notes))
            if ratios and runtime != BASELINE:
                row.append(ratio_cell(cells.get(BASELINE), cells.get(runtime), notes))
        rows.append(row)
    return html.data_table(headers, rows, table_id=table_id) + html.notes_list(notes.texts)


def omp_section(run: RunInfo, records: Sequence[Mapping[str, Any]], several: bool) -> str:
    """The table of one run, or "" when the run has no record of the suite."""
    table = construct_table(records)
    if table is None:
        return ""
    heading = f"<h3>{html.e(run.label)}</h3>" if several else ""
    return heading + table_html(table, f"omp-runtimes-run{run.id}")
