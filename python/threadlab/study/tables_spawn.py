"""The tables of `threadlab study spawn`, computed from a run's records (so
`threadlab show` prints them too), like the seed's Figure 2:

- time of a CilkSort per input (rows) and thread limit (columns),
  process-only (plain MPI) first: mean [95% Student t interval];
- against process-only: mean time / process-only's [95% Fieller interval]
  and the gain (1 - ratio), the seed's "up to 85%";
- time per task, and the tasks spawned as threads and as processes.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from rich.console import Console

from threadlab.analysis import stats
from threadlab.output.table import Footnotes
from threadlab.study.cells import mean_cell, print_titled as _print, speedup_cell, study_heading
from threadlab.study.spawn import LIMITS, PROCESS_ONLY, is_study_record


def _order(values: Sequence[str], canonical: Sequence[str]) -> list[str]:
    known = [v for v in canonical if v in values]
    return known + sorted((v for v in values if v not in canonical), key=lambda v: (len(v), v))


def collect(records: Sequence[Mapping[str, Any]]) -> tuple[dict[tuple[str, str, str], Mapping[str, Any]], list[str],
                                                           list[str]]:
    """(metric, input, limit) -> record; the inputs and limits in order."""
    cells: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for record in records:
        if is_study_record(record):
            params = record["params"]
            cells[(record["metric"], params["input"], params["max_threads"])] = record
    inputs = list(dict.fromkeys(key[1] for key in cells))
    limits = _order(list(dict.fromkeys(key[2] for key in cells)), LIMITS)
    return cells, inputs, limits


def _gain(limit: Mapping[str, Any] | None, base: Mapping[str, Any] | None) -> str:
    for record in (limit, base):
        if record is None or record.get("status") != "ok" or not record.get("samples"):
            return "—"
    assert limit is not None and base is not None
    ratio, interval = stats.ratio_of_means(limit["samples"], base["samples"])
    if ratio is None:
        return "—"
    text = f"{100 * (1 - ratio):.0f}%"
    if interval is not None:
        text += f" [{100 * (1 - interval.high):.0f}%, {100 * (1 - interval.low):.0f}%]"
    return text


def _tasks(record: Mapping[str, Any] | None) -> str:
    if record is None:
        return "—"
    extra = record.get("extra", {})
    threads, processes = extra.get("thread_tasks_mean"), extra.get("process_tasks_mean")
    if threads is None and processes is None:
        return "—"
    return f"{threads or 0:,.0f} / {processes or 0:,.0f}"


def render(console: Console, records: Sequence[Mapping[str, Any]], title: str = "Study spawn") -> None:
    cells, inputs, limits = collect(records)
    if not study_heading(console, title, bool(cells)):
        return
    sample = next(iter(cells.values()))
    n = sample["params"].get("n", "?")
    tasks = sample.get("extra", {}).get("tasks")
    headers = [("input", "left")] + [(limit if limit == PROCESS_ONLY else f"limit {limit}", "right") for limit in limits]
    notes = Footnotes()
    rows = [[name] + [mean_cell(cells.get(("time", name, limit)), notes) for limit in limits] for name in inputs]
    _print(console, f"CilkSort of {int(n):,} integers (the seed's Figure 2): time from the first spawn to the sorted "
           "result, mean [95% interval]; process-only = plain MPI, every task a process" if str(n).isdigit() else
           "CilkSort: time, mean [95% interval]", headers, rows, notes.texts)
    console.print()
    if PROCESS_ONLY in limits and len(limits) > 1:
        others = [limit for limit in limits if limit != PROCESS_ONLY]
        notes = Footnotes()
        rows = [[name] + [speedup_cell(cells.get(("time", name, limit)), cells.get(("time", name, PROCESS_ONLY)),
                                       notes) for limit in others] for name in inputs]
        _print(console, "Against process-only: mean time / process-only's [95% Fieller interval] (below 1: faster)",
               [("input", "left")] + [(f"limit {limit}", "right") for limit in others], rows, notes.texts)
        console.print()
        rows = [[name] + [_gain(cells.get(("time", name, limit)), cells.get(("time", name, PROCESS_ONLY)))
                          for limit in others] for name in inputs]
        _print(console, "Gain over process-only: 1 - the ratio above [95% interval] (the seed: up to 85%)",
               [("input", "left")] + [(f"limit {limit}", "right") for limit in others], rows)
        console.print()
    notes = Footnotes()
    rows = [[name] + [mean_cell(cells.get(("time_per_task", name, limit)), notes) for limit in limits]
            for name in inputs]
    _print(console, "Time per task: the sort time / the tasks spawned"
           + (f" ({tasks:,} for random input)" if isinstance(tasks, int) else "") + ", mean [95% interval]",
           headers, rows, notes.texts)
    console.print()
    rows = [[name] + [_tasks(cells.get(("time", name, limit))) for limit in limits] for name in inputs]
    _print(console, "Tasks spawned as threads / as processes (mean of the runs)", headers, rows)
    console.print()
    console.file.flush()


def summary_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The cells as data (--json and the tests): input, limit, status, mean
    time and its interval, time per task, tasks by kind, gain."""
    cells, inputs, limits = collect(records)
    rows = []
    for name in inputs:
        for limit in limits:
            record = cells.get(("time", name, limit))
            if record is None:
                continue
            row: dict[str, Any] = {"input": name, "max_threads": limit, "status": record["status"],
                                   "reason": record.get("reason")}
            samples = record.get("samples") or []
            if samples:
                interval = stats.mean_ci(samples)
                row.update(mean_s=sum(samples) / len(samples), runs=len(samples),
                           ci_low_s=interval.low if interval else None, ci_high_s=interval.high if interval else None)
            per_task = cells.get(("time_per_task", name, limit))
            if per_task and per_task.get("samples"):
                row["time_per_task_ms"] = sum(per_task["samples"]) / len(per_task["samples"])
            extra = record.get("extra", {})
            row["thread_tasks"] = extra.get("thread_tasks_mean")
            row["process_tasks"] = extra.get("process_tasks_mean")
            base = cells.get(("time", name, PROCESS_ONLY))
            if limit != PROCESS_ONLY and base and base.get("samples") and samples:
                ratio, _ = stats.ratio_of_means(samples, base["samples"])
                row["ratio_to_process_only"] = ratio
            rows.append(row)
    return rows
