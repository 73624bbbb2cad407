"""The engine every study runs on (docs/architecture.md, "Adding a study").

A study is a matrix of cells (scenario x kernel x thread count; kernel x
baseline x degree; ...), each run many times.  The engine gives it:

- jobs: every run of every cell, interleaved in one seeded random order
  (interleaved_jobs), so that drift of the machine favours no cell;
- drive(): the loop that runs the jobs in that order, adds each run's
  outcome to its cell, hands a cell's records on as soon as its last run
  is done, and keeps what was measured when Ctrl-C (SIGTERM) stops it;
- Study: what a stored run of a study is known by (study/registry.py
  lists them): the module making its tables, for `threadlab show`.

The stored run around it (create, progress, keep, finish, epilogue) is
threadlab.run.lifecycle, as for `threadlab bench`; the command line of
a study is a subcommand in threadlab/cli/study.py.
"""

from __future__ import annotations

import importlib
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from threadlab import vocabulary
from threadlab.analysis import stats
from threadlab.errors import UserError
from threadlab.native import process
from threadlab.native.process import StopRequest
from threadlab.records import schema
from threadlab.run.progress import JobProgress
from threadlab.run.runner import Result


@dataclass(frozen=True)
class Job:
    cell: int
    run: int  # 0-based run index within the cell


def interleaved_jobs(cells: Sequence[int], runs: int, seed: int) -> list[Job]:
    """`runs` jobs of every cell, shuffled with a generator seeded by
    `seed`; within a cell the runs are numbered in the order they are done."""
    jobs = [Job(cell, run) for cell in cells for run in range(runs)]
    random.Random(seed).shuffle(jobs)
    order: dict[int, int] = {}
    numbered = []
    for job in jobs:
        numbered.append(Job(job.cell, order.get(job.cell, 0)))
        order[job.cell] = order.get(job.cell, 0) + 1
    return numbered


def parse_list(option: str, text: str) -> list[str]:
    """A study option's comma-separated list: its items stripped, each
    once, in the order given; an empty item is refused."""
    items = [item.strip() for item in text.split(",")]
    if any(not item for item in items):
        raise UserError(f"{option} {text}: expected a comma-separated list with no empty item")
    return list(dict.fromkeys(items))


def new_seed() -> int:
    """A seed for the order of a study's runs, recorded with the run."""
    return int.from_bytes(os.urandom(4), "little")


def allowed_cpus() -> list[int]:
    """The CPUs this process may use, in order."""
    return sorted(os.sched_getaffinity(0))


class Cell(Protocol):
    """What the engine needs of a study's cell."""

    index: int
    emitted: bool
    runs_done: int

    @property
    def label(self) -> str: ...


@dataclass
class Finished:
    """A study program's run, followed to its end (run_program)."""

    lines: list[str]  # its standard output
    wall_s: float
    returncode: int
    timed_out: bool
    said: str | None  # what it said last on standard error, cut to process.LINE_KEEP


def run_program(argv: Sequence[str], timeout_s: float, stop: StopRequest,
                env: Mapping[str, str] | None = None) -> Finished | str | None:
    """One run of a study's program (process.Follow: its own process group,
    within timeout_s), followed to its end.  None when a stop (Ctrl-C) was
    requested meanwhile; a string when it could not start (the reason)."""
    started = time.monotonic()
    try:
        child = process.Follow(list(argv), timeout_s, stop, env=env)
    except OSError as error:
        return f"cannot start {Path(argv[0]).name}: {error.strerror}"
    with child:
        lines = list(child.lines())
    wall = time.monotonic() - started
    if stop.requested:
        return None
    said = child.stderr_summary()
    code = child.returncode
    assert code is not None
    return Finished(lines, wall, code, child.timed_out, said[:process.LINE_KEEP] if said else None)


class Outcome(Protocol):
    """What the engine needs of one run's outcome."""

    kind: str  # "ok", "wrong", "failed", "unsupported"
    reason: str | None


@dataclass
class RecordOutcome:
    """The outcome of a run whose program prints a record (the spawn and
    omp studies): the record ({} when there is none) and the run's time."""

    kind: str  # "ok", "wrong", "failed", "unsupported"
    reason: str | None
    record: dict[str, Any]
    wall_s: float = 0.0


def drive(
    cells: Sequence[Any],
    jobs: Sequence[Job],
    run_one: Callable[[Any, StopRequest], Any],
    record_one: Callable[[Any, Any], None],
    make_records: Callable[[Any], list[dict[str, Any]]],
    on_record: Callable[[Any, dict[str, Any]], None],
    progress: JobProgress,
    unsupported: Callable[[Any], bool] = lambda cell: False,
) -> Result:
    """The loop of a study: runs every job in order with run_one(cell,
    stop) (None: a stop was requested), adds its outcome to the cell with
    record_one, and hands the cell's records (make_records) to on_record
    as soon as its last job is done; unsupported cells are recorded first
    and their jobs skipped.  Ctrl-C/SIGTERM: run_one kills what runs,
    every cell with a finished job is recorded with what it has, and the
    study stops."""
    records: list[dict[str, Any]] = []

    def emit(cell: Any) -> None:
        if cell.emitted:
            return
        cell.emitted = True
        for record in make_records(cell):
            on_record(cell, record)
            records.append(record)

    for cell in cells:
        if unsupported(cell):
            emit(cell)
    remaining = {cell.index: 0 for cell in cells}
    for job in jobs:
        remaining[job.cell] += 1
    stop = StopRequest()
    restore = stop.install()
    done = 0
    try:
        for job in jobs:
            if stop.requested:
                break
            cell = cells[job.cell]
            if unsupported(cell):  # found out by an earlier run
                continue
            outcome = run_one(cell, stop)
            if outcome is None:
                break
            record_one(cell, outcome)
            done += 1
            remaining[job.cell] -= 1
            progress.run_done(cell.label, outcome.kind, outcome.reason)
            if remaining[job.cell] == 0 or unsupported(cell):
                emit(cell)
    finally:
        restore()
        # Interrupted (or a second Ctrl-C): keep every cell that measured something.
        for cell in cells:
            if not cell.emitted and (cell.runs_done or unsupported(cell)):
                emit(cell)
    return Result(records, stop.signal, done)


def cell_record(record: dict[str, Any], samples: Sequence[float], *, clock: str, runs: int, elapsed_s: float,
                checks: Callable[[], list[dict[str, Any]]], failures: Sequence[str], runs_done: int,
                nothing: str) -> dict[str, Any]:
    """A cell's record of one metric, accepted (records.schema): measured
    (one sample per run, a fixed number of runs) when it has samples, else
    failed with the first failure (`nothing` when no run failed but none
    completed).  record: new_record()'s, with the cell's identity."""
    if not samples:
        record.update(status="failed", reason=failures[0] if failures else nothing,
                      checks=checks() if runs_done else [])
    else:
        values = [float(v) for v in samples]
        record.update(clock=clock, iterations=1, samples=values, summary=stats.summarize(values).as_dict(),
                      stop=vocabulary.fixed_stop(runs, elapsed_s), checks=checks())
    return schema.validate_record(record)


def run_checks(measured: int, wrong: Sequence[str], failures: Sequence[str], runs_done: int, *, verified: str,
               wrong_what: str = "runs failed a check", noun: str = "runs",
               verified_unmeasured: bool = False) -> list[dict[str, Any]]:
    """A cell's checks of its runs: `verified` (ok with the text
    `verified` when no measured run was wrong, else how many of the
    `measured` `wrong_what`, with the first reason; an unmeasured cell
    has it only with verified_unmeasured) and, when runs failed, `runs`."""
    checks = []
    if wrong:
        checks.append({"name": "verified", "ok": False, "value": float(measured - len(wrong)),
                       "detail": f"{len(wrong)} of {measured} {wrong_what}; first: {wrong[0]}"})
    elif measured or verified_unmeasured:
        checks.append({"name": "verified", "ok": True, "value": float(measured), "detail": verified})
    if failures:
        checks.append({"name": "runs", "ok": False, "value": float(measured),
                       "detail": f"{len(failures)} of {runs_done} {noun} failed; first: {failures[0]}"})
    return checks


def main_records(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records of a study's main metric (a cell's time, a workload's
    turnaround, a construct's overhead): one per cell, what the epilogue
    counts."""
    main = {r["metric"] for r in records} & {"time", "turnaround", "overhead"}
    return [r for r in records if r["metric"] in main]


# ------------------------------------------------------------ the studies


@dataclass(frozen=True)
class Study:
    """A study as a stored run knows it (study/registry.py): the name its
    options and records carry ("study"), the prefix of its benchmarks, and
    the module of its tables, with render(console, records, title) and the
    function giving its --json lines."""

    name: str
    benchmark_prefix: str
    tables: str  # module name
    rows_function: str

    def _tables(self) -> Any:
        return importlib.import_module(self.tables)  # rich: imported when tables are printed

    def render(self, console: Any, records: Sequence[Mapping[str, Any]], title: str) -> None:
        self._tables().render(console, records, title=title)

    def rows(self, records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return getattr(self._tables(), self.rows_function)(records)

    def owns(self, record: Mapping[str, Any]) -> bool:
        return str(record.get("benchmark", "")).startswith(self.benchmark_prefix)
