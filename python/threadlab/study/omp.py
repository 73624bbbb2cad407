"""`threadlab study omp`: the omp suite's overheads, the runtimes side by
side over many runs (docs/omp-suite.md, "The study"; issue 14's targets).

`threadlab bench --suite omp` measures each point once.  On a machine
whose state drifts (this project's 2-vCPU VM switches between a fast and
a slow cache hand-off for minutes at a time) one run of a point says
little of a ratio between runtimes.  The study runs each construct on
each runtime (cells: construct x runtime) many times, all runs of all
cells in one seeded random order (study.engine), each run a point of the
suite's own program (threadlab-bench-omp-RUNTIME, its adaptive timing
loop and its checks: the work done, the team, the runtime that served
it).  A cell keeps one sample per run, that run's median overhead; the
tables give each runtime's median over the runs and the ratio of
medians of the baseline (libgomp) to each runtime with its 95%
Price-Bonett interval.  The stored run is a run like any other: `threadlab
compare RUN --between model=gomp,ult` compares its cells too.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from threadlab import vocabulary
from threadlab.errors import ThreadlabError, UserError
from threadlab.native import discovery, protocol
from threadlab.native.process import StopRequest, exit_text
from threadlab.native.protocol import BenchmarkInfo
from threadlab.records import schema
from threadlab.records.record import new_record
from threadlab.run.progress import JobProgress
from threadlab.run.runner import Result
from threadlab.study.engine import (Job, cell_record, drive, interleaved_jobs, new_seed, parse_list, run_checks,
                                    run_program)
from threadlab.study.engine import RecordOutcome as Outcome

STUDY = "omp"
SUITE = "omp"
BENCHMARK_PREFIX = "study.omp."
BENCHMARK = BENCHMARK_PREFIX + "overhead"
METRIC = "overhead"
# The suite's benchmarks whose points are one construct each.
CONSTRUCT_BENCHMARKS = ("omp.sync", "omp.task")
# Issue 14's targets: regions and barriers no worse than libgomp's, nested
# regions and task creation 5x cheaper.
DEFAULT_CONSTRUCTS = ("parallel", "barrier", "nested", "parallel_task", "master_task", "taskwait")
# The suite's order (omp.sync's, then omp.task's): the tables' rows.
CONSTRUCT_ORDER = ("parallel", "for", "parallel_for", "parallel_for_dynamic", "barrier", "single", "critical", "lock",
                   "atomic", "reduction", "nested", "parallel_task", "master_task", "taskwait")
BASELINE = vocabulary.OMP_BASELINE  # libgomp: the ratios' denominator
RUNTIME_ORDER = vocabulary.OMP_RUNTIMES
DEFAULT_THREADS = 2
DEFAULT_PLACEMENT = "different-cpus"
DEFAULT_RUNS = 8
QUICK_RUNS = 2
DEFAULT_TIMEOUT_S = 120.0
QUICK_TIMEOUT_S = 30.0
# Checks a point fails for the machine's conditions during it, not for a
# wrong measurement of what ran: its state changed (the VM's cache hand-off
# went from fast to slow), or a loaded machine had a team of user-level
# threads share a VP while it was sampled (docs/omp-suite.md). The run is
# kept and counted; its cell is marked, the study does not fail for it.
STATE_CHECK = "machine_state"
CONDITION_CHECKS = {
    STATE_CHECK: "the machine changed state during the run",
    "team_apart": "two threads of the team shared a CPU while sampled (a loaded machine)",
}

QUANTITY = "a run's median overhead per construct or per task of each thread (the delay subtracted), one sample per run"


# ------------------------------------------------------------------ levels


def parse_constructs(text: str) -> list[str]:
    """--constructs: names checked against the programs' (make_plan)."""
    return parse_list("--constructs", text)


def parse_runtimes(text: str) -> list[str]:
    """--runtimes: names checked against the programs built (make_plan)."""
    return parse_list("--runtimes", text)


# ------------------------------------------------------------------- plan


@dataclass
class Cell:
    """construct x runtime: its runs."""

    index: int
    construct: str
    runtime: str
    benchmark: str  # the suite's benchmark that measures the construct
    program: Path
    samples: list[float] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    # CONDITION_CHECKS' name -> the details of the runs that failed it
    conditions: dict[str, list[str]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    unsupported: str | None = None
    runs_done: int = 0
    wall_s: float = 0.0  # the runs' time, their programs' start included
    last: dict[str, Any] = field(default_factory=dict)
    emitted: bool = False

    @property
    def label(self) -> str:
        return f"{self.construct} {self.runtime}"


@dataclass
class Plan:
    constructs: list[str]
    runtimes: list[str]
    threads: int
    placement: str
    runs: int
    seed: int
    timeout_s: float
    quick: bool
    cells: list[Cell]
    jobs: list[Job]

    def options(self) -> dict[str, Any]:
        return {"study": STUDY, "constructs": self.constructs, "runtimes": self.runtimes, "threads": self.threads,
                "placement": self.placement, "runs": self.runs, "seed": self.seed, "timeout_s": self.timeout_s,
                "quick": self.quick}

    def catalog(self) -> list[dict[str, Any]]:
        """One entry per runtime, shaped like a benchmark program's --list."""
        return [{
            "benchmark": BENCHMARK, "model": runtime,
            "summary": f"the omp suite's overheads of {','.join(self.constructs)}, {self.runs} runs each",
            "quantity": QUANTITY, "unit": "ns", "threads": self.threads, "placements": [self.placement],
            "default_placements": [self.placement],
            "params": [
                {"name": "construct", "help": "the OpenMP construct (omp.sync and omp.task)",
                 "values": self.constructs, "quick_values": self.constructs},
                {"name": "threads", "help": "team size", "values": [str(self.threads)],
                 "quick_values": [str(self.threads)]},
            ],
            "program": f"threadlab-bench-omp-{runtime}", "study": STUDY,
        } for runtime in self.runtimes]


def find_suite() -> tuple[list[BenchmarkInfo], dict[str, Path]]:
    """The omp suite's construct benchmarks, one per runtime program built,
    and the programs by name."""
    programs = discovery.benchmark_programs()
    catalog = [info for info in protocol.catalog(programs)
               if info.suite == SUITE and info.benchmark in CONSTRUCT_BENCHMARKS]
    return catalog, {program.name: program for program in programs}


def make_plan(
    *,
    catalog: Sequence[BenchmarkInfo],
    programs: Mapping[str, Path],
    constructs: Sequence[str] | None = None,
    runtimes: Sequence[str] | None = None,
    threads: int | None = None,
    placement: str | None = None,
    runs: int | None = None,
    seed: int | None = None,
    timeout_s: float | None = None,
    quick: bool = False,
) -> Plan:
    """Every cell and every run, in a seeded random order, settled before
    anything runs.  catalog, programs: find_suite()'s."""
    if not catalog:
        raise ThreadlabError("no program of the omp suite here (threadlab-bench-omp-*: build them with `make`; "
                             "see docs/omp-suite.md)")
    built = [r for r in RUNTIME_ORDER if any(info.model == r for info in catalog)]
    built += sorted({info.model for info in catalog} - set(built))
    runtimes = list(runtimes or built)
    for runtime in runtimes:
        if runtime not in built:
            raise UserError(f"--runtimes: '{runtime}' has no program here; accepted: {', '.join(built)}")
    by_construct: dict[str, dict[str, BenchmarkInfo]] = {}
    for info in catalog:
        construct_param = info.param("construct")
        for construct in construct_param.values if construct_param else ():
            by_construct.setdefault(construct, {})[info.model] = info
    # the defaults that a program here offers; a construct asked for, any one
    constructs = list(constructs or [c for c in DEFAULT_CONSTRUCTS if c in by_construct])
    for construct in constructs:
        if construct not in by_construct:
            raise UserError(f"--constructs: unknown construct '{construct}'; accepted: {', '.join(by_construct)}")
    placement = placement or DEFAULT_PLACEMENT
    if placement not in vocabulary.PLACEMENTS:
        raise UserError(f"--placement {placement}: expected one of {', '.join(vocabulary.PLACEMENTS)}")
    threads = threads or DEFAULT_THREADS
    counts = sorted({v for info in catalog for v in getattr(info.param("threads"), "values", ())}, key=lambda v: int(v) if v.isdigit() else 1 << 30)
    if counts and str(threads) not in counts:
        raise UserError(f"--threads {threads}: not a team size of the suite; accepted: {', '.join(counts)}")
    runs = runs or (QUICK_RUNS if quick else DEFAULT_RUNS)
    if seed is None:
        seed = new_seed()
    cells: list[Cell] = []
    for construct in constructs:
        for runtime in runtimes:
            info = by_construct[construct].get(runtime)
            cell = Cell(len(cells), construct, runtime, info.benchmark if info else "",
                        programs[info.program] if info else Path())
            if info is None:
                cell.unsupported = f"{runtime}'s program has no construct {construct}"
            cells.append(cell)
    jobs = interleaved_jobs([cell.index for cell in cells], runs, seed)
    return Plan(constructs=constructs, runtimes=runtimes, threads=threads, placement=placement, runs=runs, seed=seed,
                timeout_s=timeout_s or (QUICK_TIMEOUT_S if quick else DEFAULT_TIMEOUT_S), quick=quick, cells=cells,
                jobs=jobs)


# --------------------------------------------------------------- one run


def run_argv(plan: Plan, cell: Cell) -> list[str]:
    """The suite program's command line of one run of the cell."""
    argv = [str(cell.program), "--run", cell.benchmark, "--placement", plan.placement,
            "--param", f"construct={cell.construct}", "--param", f"threads={plan.threads}"]
    return argv + (["--quick"] if plan.quick else [])


def _record(lines: Sequence[str], cell: Cell) -> dict[str, Any] | None:
    """The run's record of the construct's overhead."""
    for line in lines:
        if not line.startswith("{"):
            continue
        try:
            record = schema.parse_record_line(line)
        except schema.RecordError:
            continue
        if record["benchmark"] == cell.benchmark and record["metric"] == METRIC:
            return record
    return None


def run_once(plan: Plan, cell: Cell, stop: StopRequest) -> Outcome | None:
    """One point of the suite for the cell.  None when a stop (Ctrl-C) was
    requested meanwhile."""
    ran = run_program(run_argv(plan, cell), plan.timeout_s, stop)
    if ran is None or isinstance(ran, str):
        return None if ran is None else Outcome("failed", ran, {})
    wall = ran.wall_s
    if ran.timed_out:
        return Outcome("failed", f"timed out after {plan.timeout_s:g} s", {}, wall)
    record = _record(ran.lines, cell)
    if record is None:
        said = f": {ran.said}" if ran.said else ""
        return Outcome("failed", exit_text(ran.returncode) + said + " (no record)", {}, wall)
    if record["status"] == "unsupported":
        return Outcome("unsupported", str(record.get("reason") or "unsupported"), record, wall)
    if record["status"] != "ok":
        return Outcome("failed", str(record.get("reason") or "failed"), record, wall)
    bad = [c for c in record["checks"] if not c["ok"] and c["name"] not in CONDITION_CHECKS]
    if bad:
        return Outcome("wrong", f"check {bad[0]['name']}: {bad[0].get('detail')}", record, wall)
    return Outcome("ok", None, record, wall)


def record_outcome(cell: Cell, outcome: Outcome) -> None:
    """Adds one run's outcome to its cell."""
    cell.runs_done += 1
    cell.wall_s += outcome.wall_s
    if outcome.kind == "unsupported":
        cell.unsupported = outcome.reason
        return
    if outcome.kind == "failed":
        cell.failures.append(outcome.reason or "failed")
        return
    record = outcome.record
    cell.samples.append(float(record["summary"]["median"]))
    if outcome.kind == "wrong":
        cell.wrong.append(outcome.reason or "a check failed")
    for check in record["checks"]:
        if not check["ok"] and check["name"] in CONDITION_CHECKS:
            cell.conditions.setdefault(check["name"], []).append(str(check.get("detail")))
    cell.last = record


def run_study(plan: Plan, on_record: Callable[[Cell, dict[str, Any]], None], progress: JobProgress) -> Result:
    """Every run in the plan's order; a cell's record goes to on_record
    (the store) once its last run is done.  Ctrl-C/SIGTERM: the run in
    progress is killed, every cell with a finished run is recorded, and
    the study stops."""
    return drive(plan.cells, plan.jobs, lambda cell, stop: run_once(plan, cell, stop), record_outcome,
                 lambda cell: [cell_record_of(cell, plan)], on_record, progress,
                 unsupported=lambda cell: bool(cell.unsupported))


# ---------------------------------------------------------------- records


def _checks(cell: Cell) -> list[dict[str, Any]]:
    measured = len(cell.samples)
    checks = run_checks(measured, cell.wrong, cell.failures, cell.runs_done,
                        verified="every run passed its point's checks (the work done, the team, where it ran, the "
                                 "runtime that served it)")
    for name, what in CONDITION_CHECKS.items():
        runs = cell.conditions.get(name, [])
        if runs:
            checks.append({"name": name, "ok": False, "value": float(len(runs)),
                           "detail": f"{len(runs)} of {measured} runs: {what}; first: {runs[0]}"})
        elif name == STATE_CHECK and measured:
            checks.append({"name": name, "ok": True, "value": 0.0,
                           "detail": "the machine kept its state through every run"})
    return checks


def cell_record_of(cell: Cell, plan: Plan) -> dict[str, Any]:
    """The cell's record: one sample per run, that run's median."""
    last = cell.last
    extra = {"study": STUDY, "construct": cell.construct, "runtime": cell.runtime, "suite_benchmark": cell.benchmark,
             "runs_planned": plan.runs, "runs_done": cell.runs_done, "runs_failed": len(cell.failures),
             "runs_state_changed": len(cell.conditions.get(STATE_CHECK, [])), "seed": plan.seed,
             "runtime_library": (last.get("extra") or {}).get("runtime_library") if last else None}
    record = new_record(BENCHMARK, cell.runtime, metric=METRIC,
                        params={"construct": cell.construct, "threads": str(plan.threads)},
                        placement=plan.placement, cpus=list(last.get("cpus", [])) if last else [],
                        unit=str(last.get("unit", "ns")) if last else "ns", quantity=QUANTITY, extra=extra)
    if cell.unsupported:
        record.update(status="unsupported", reason=cell.unsupported)
        return schema.validate_record(record)
    return cell_record(record, cell.samples, clock=str(last.get("clock", "monotonic")) if last else "monotonic",
                       runs=plan.runs, elapsed_s=cell.wall_s, checks=lambda: _checks(cell), failures=cell.failures,
                       runs_done=cell.runs_done, nothing="no run completed")


def is_study_record(record: Mapping[str, Any]) -> bool:
    return record.get("benchmark") == BENCHMARK


def dry_run_lines(plan: Plan) -> Iterable[str]:
    """--dry-run: one command per cell."""
    for cell in plan.cells:
        if cell.unsupported:
            yield f"# {cell.label}: unsupported: {cell.unsupported}"
        else:
            yield f"# {cell.label}: {plan.runs} runs\n{shlex.join(run_argv(plan, cell))}"
