"""The tables of `threadlab study omp`, computed from a run's records (so
`threadlab show` prints them too):

- each construct's overhead on each runtime: the median over the runs of
  each run's median [95% interval of that median];
- each other runtime against libgomp: median(runtime) / median(libgomp)
  [95% Price-Bonett interval], the direction of `threadlab compare` and
  the report (below 1: that runtime is cheaper; 0.20 is 5x cheaper), the
  measure of issue 14's targets (5x for nested regions and tasks, no
  worse for regions and barriers).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from rich.console import Console

from threadlab.analysis import stats
from threadlab.analysis.compare import format_ratio
from threadlab.output.table import Footnotes
from threadlab.study.cells import median_cell, missing_text, print_titled as _print, study_heading
from threadlab.study.omp import BASELINE, CONSTRUCT_ORDER, RUNTIME_ORDER, is_study_record

RUNTIME_NAMES = {"gomp": "libgomp", "llvmomp": "libomp", "shim": "shim", "ult": "threadlab-gomp (ult)"}


def collect(records: Sequence[Mapping[str, Any]]) -> tuple[dict[tuple[str, str], Mapping[str, Any]], list[str],
                                                           list[str]]:
    """(construct, runtime) -> record; the constructs and runtimes in order."""
    cells: dict[tuple[str, str], Mapping[str, Any]] = {}
    for record in records:
        if is_study_record(record):
            cells[(record["params"]["construct"], record["model"])] = record
    seen = list(dict.fromkeys(key[0] for key in cells))  # cells come as their last runs end
    constructs = [c for c in CONSTRUCT_ORDER if c in seen] + [c for c in seen if c not in CONSTRUCT_ORDER]
    found = list(dict.fromkeys(key[1] for key in cells))
    runtimes = [r for r in RUNTIME_ORDER if r in found] + [r for r in found if r not in RUNTIME_ORDER]
    return cells, constructs, runtimes


def _measured(record: Mapping[str, Any] | None) -> bool:
    return bool(record and record.get("status") == "ok" and record.get("samples"))


def ratio(base: Mapping[str, Any] | None, other: Mapping[str, Any] | None) -> tuple[float | None,
                                                                                    stats.Interval | None]:
    """median(other) / median(base) with its 95% Price-Bonett interval."""
    if not (_measured(base) and _measured(other)):
        return None, None
    assert base is not None and other is not None
    return stats.ratio_of_medians(base["samples"], other["samples"])


def ratio_cell(base: Mapping[str, Any] | None, other: Mapping[str, Any] | None, notes: Footnotes) -> str:
    for record in (base, other):
        if not _measured(record):
            return missing_text(record, notes) or ""
    value, interval = ratio(base, other)
    if value is None:
        return "—" + notes.ref("a median is 0 or below (an overhead within the noise of the delay subtracted)")
    text = format_ratio(value)
    if interval is not None:
        text += f" [{format_ratio(interval.low)}, {format_ratio(interval.high)}]"
    return text


def render(console: Console, records: Sequence[Mapping[str, Any]], title: str = "Study omp") -> None:
    cells, constructs, runtimes = collect(records)
    if not study_heading(console, title, bool(cells)):
        return
    sample = next(iter(cells.values()))
    threads = sample["params"].get("threads", "?")
    runs = sample.get("extra", {}).get("runs_planned", "?")
    notes = Footnotes()
    headers = [("construct", "left")] + [(RUNTIME_NAMES.get(r, r), "right") for r in runtimes]
    rows = [[c] + [median_cell(cells.get((c, r)), notes) for r in runtimes] for c in constructs]
    _print(console, f"Overheads, {threads} threads, {sample['placement']}: the median of {runs} runs' medians "
           "[95% interval of the median]", headers, rows, notes.texts)
    console.print()
    others = [r for r in runtimes if r != BASELINE]
    if BASELINE in runtimes and others:
        notes = Footnotes()
        rows = [[c] + [ratio_cell(cells.get((c, BASELINE)), cells.get((c, r)), notes) for r in others]
                for c in constructs]
        _print(console, f"Each runtime / {RUNTIME_NAMES[BASELINE]}: the ratio of the medians [95% Price-Bonett "
               "interval] (below 1: that runtime is cheaper; 0.20: 5x cheaper)",
               [("construct", "left")] + [(f"{RUNTIME_NAMES.get(r, r)} / {RUNTIME_NAMES[BASELINE]}", "right")
                                          for r in others], rows, notes.texts)
        console.print()
    console.file.flush()


def summary_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The cells as data (--json and the tests): construct, runtime,
    status, the median of the runs' medians, its runs, and its median
    over libgomp's with the interval."""
    cells, constructs, runtimes = collect(records)
    rows = []
    for construct in constructs:
        for runtime in runtimes:
            record = cells.get((construct, runtime))
            if record is None:
                continue
            row: dict[str, Any] = {"construct": construct, "runtime": runtime, "status": record["status"],
                                   "reason": record.get("reason"), "unit": record["unit"]}
            if _measured(record):
                row.update(median=stats.describe(record["samples"]).median, runs=len(record["samples"]),
                           state_changed=record.get("extra", {}).get("runs_state_changed"))
            if runtime != BASELINE:
                value, interval = ratio(cells.get((construct, BASELINE)), record)
                row.update(ratio_to_baseline=value, ratio_low=interval.low if interval else None,
                           ratio_high=interval.high if interval else None)
            rows.append(row)
    return rows
