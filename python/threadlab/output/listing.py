"""Terminal views other than the results table: the benchmark catalog
(`list`), the run history (`runs`), and a run's header and environment
(`show`, `bench`)."""

from __future__ import annotations

from datetime import datetime
from typing import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from threadlab.run import environment
from threadlab.native.protocol import BenchmarkInfo
from threadlab.records.store import RunInfo
from threadlab.output.units import format_duration
from threadlab.vocabulary import RECORD_STATUSES


def local_time(iso: str | None) -> str:
    """A stored UTC timestamp in the reader's local time."""
    if not iso:
        return "—"
    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def run_duration(run: RunInfo) -> float | None:
    if not run.finished_at:
        return None
    return (datetime.fromisoformat(run.finished_at) - datetime.fromisoformat(run.started_at)).total_seconds()


def render_catalog(console: Console, benchmarks: Sequence[BenchmarkInfo]) -> None:
    table = Table(title="Benchmarks", box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column("benchmark", no_wrap=True)
    table.add_column("model")
    table.add_column("placements (default sweep)")
    table.add_column("parameters (quick sweep)")
    table.add_column("measures")
    for info in benchmarks:
        if info.threads == 0:
            placements = "— (not placed)"
        else:
            placements = ", ".join(
                p + ("" if p in (info.default_placements or info.placements) else " (on request)")
                for p in info.placements
            )
        params = "; ".join(
            f"{p.name} = {', '.join(p.values)}" + (f" ({', '.join(p.quick_values)})" if p.quick_values else "")
            for p in info.params
        )
        table.add_row(
            Text(info.benchmark),
            Text(info.model),
            Text(placements),
            Text(params or "—"),
            Text(f"{info.summary} (one sample: {info.quantity}, in {info.unit})"),
        )
    console.print(table)


def _counts_text(run: RunInfo) -> tuple[str, str, str]:
    return tuple(str(run.counts.get(status, 0)) for status in RECORD_STATUSES)  # type: ignore[return-value]


def render_runs(console: Console, runs: Sequence[RunInfo]) -> None:
    table = Table(title="Runs (newest first)", box=box.SIMPLE_HEAD, title_justify="left")
    for header, justify in (
        ("run", "right"),
        ("name", "left"),
        ("started", "left"),
        ("duration", "right"),
        ("status", "left"),
        ("ok", "right"),
        ("n/a", "right"),
        ("failed", "right"),
        ("points", "right"),
        ("machine", "left"),
    ):
        table.add_column(header, justify=justify, no_wrap=header != "name")  # type: ignore[arg-type]
    for run in runs:
        status = run.display_status
        table.add_row(
            str(run.id),
            Text(run.name or ""),
            local_time(run.started_at),
            format_duration(run_duration(run)) if run.finished_at else "—",
            Text(status, style="" if status in ("complete", "running") else "yellow"),
            *_counts_text(run),
            str(run.points_planned),
            Text(run.hostname),
        )
    console.print(table)


def render_run_header(console: Console, run: RunInfo, store_path: str) -> None:
    """Who, when, where and how of a run, with its environment and warnings."""
    status = run.display_status
    console.print(Text(f"{run.label}: {status}", style="bold"))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    duration = run_duration(run)
    grid.add_row("started", Text(f"{local_time(run.started_at)} on {run.hostname} (machine {run.machine_id})"))
    grid.add_row("duration", format_duration(duration) if duration is not None else "not finished")
    grid.add_row("command", Text(" ".join(run.command)))
    counts = ", ".join(f"{run.counts.get(s, 0)} {s}" for s in RECORD_STATUSES)
    grid.add_row("records", f"{sum(run.counts.values())} ({counts}) from {run.points_planned} planned points")
    if status == "incomplete":
        grid.add_row("note", "the run's process is gone (killed or crashed); the points it finished are kept")
    if run.stop_reason:
        grid.add_row("stopped", Text(run.stop_reason))
    for label, text in environment.describe(run.environment):
        grid.add_row(label, Text(text))
    grid.add_row("store", Text(store_path))
    console.print(grid)
    render_warnings(console, run.environment.get("warnings", []))


def render_warnings(console: Console, warnings: Sequence[str]) -> None:
    for warning in warnings:
        console.print(Text(f"warning: {warning}", style="yellow"))
