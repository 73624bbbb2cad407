"""`threadlab study spawn`: seed 001's evaluation (docs/spawn.md, "The study").

CilkSort of N integers (threadlab-spawn-cilksort, one MPMD program) over a
matrix of cells: input (random from seeds 1, 2, 3; sorted; reversed) x the
thread limit of libthreadlab-spawn (1, 2, 4, 20, 80, 100) or process-only
(plain MPI, no library).  Every run is its own `mpirun`, through the native
launcher threadlab-spawn-mpirun, under a time limit (a hung process spawn
ends the run with its reason: the Open MPI 4.1 + PMIx 4 hang); the runs of
all cells go in one seeded random order.  Each run's record
(spawn.cilksort) checks that the result is sorted, a permutation of the
input, and made by exactly the algorithm's tasks; the study keeps one
record per cell whose samples are the runs' sort times (metric `time`),
plus the time per task and the thread and process task counts.

A process-only cell of a large N needs tens of thousands of process spawns
(0.1-0.3 s each here): before running such a cell the study measures one
process-only run at the quick size and estimates the cell from the task
count (`threadlab-spawn-cilksort count`); a cell estimated beyond twice
the time limit is reported as failed with that estimate and the time per
task measured, instead of being run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from threadlab.errors import UserError
from threadlab.native import discovery, process, spawn
from threadlab.native.process import StopRequest
from threadlab.records import schema
from threadlab.records.record import new_record
from threadlab.run.progress import JobProgress
from threadlab.run.runner import Result
from threadlab.study.engine import (Job, cell_record, drive, interleaved_jobs, new_seed, parse_list, run_checks,
                                    run_program)
from threadlab.study.engine import RecordOutcome as Outcome

STUDY = "spawn"
PROGRAM = "threadlab-spawn-cilksort"
RUN_BENCHMARK = "spawn.cilksort"  # the program's, in its --list
BENCHMARK_PREFIX = "study.spawn."
BENCHMARK = BENCHMARK_PREFIX + "cilksort"
MODEL = "mpi-spawn"

PROCESS_ONLY = "process-only"
# The seed's thread limits, and no library at all (its "sem libSpawn").
LIMITS: tuple[str, ...] = (PROCESS_ONLY, "1", "2", "4", "20", "80", "100")
INPUTS: tuple[str, ...] = ("random", "sorted", "reversed")
DEFAULT_SEEDS: tuple[int, ...] = (1, 2, 3)  # the seed's three random inputs
DEFAULT_N = 3_000_000  # the seed's
QUICK_N = 5_000  # 10 tasks in 5 spawn calls
MAX_N = 500_000_000
DEFAULT_RUNS = 5  # the seed took 20: --runs 20
QUICK_RUNS = 2
DEFAULT_TIMEOUT_S = 600.0
QUICK_TIMEOUT_S = 20.0  # a quick run takes 2 s at most here: a hang costs 20 s, not 60
DEFAULT_SPAWN_TIMEOUT_S = 30.0
QUICK_SPAWN_TIMEOUT_S = 10.0
# The library's default count: the thread tasks not asleep in its waits, a
# spawning task's slot going to its children; --limit-counts running is the
# seed's, the tasks alive (docs/spawn.md, "The decision").
DEFAULT_LIMIT_COUNTS = "runnable"
# A cell estimated past this multiple of the time limit is not run.
HOPELESS = 2.0
_COUNT_TIMEOUT_S = 300.0

TIME_QUANTITY = "time of one CilkSort, from the first spawn to the sorted result, one sample per run"
PER_TASK_QUANTITY = "sort time / tasks spawned, one sample per run"


# ------------------------------------------------------------------ levels


def parse_limits(text: str) -> list[str]:
    """--limits 1,4,process-only: thread limits (positive numbers) and
    process-only."""
    limits = []
    for item in parse_list("--limits", text):
        if item == PROCESS_ONLY:
            limits.append(item)
        elif item.isdigit() and 1 <= int(item) <= 1_000_000:
            limits.append(str(int(item)))
        else:
            raise UserError(f"--limits {text}: '{item}' is neither a thread limit from 1 to 1000000 nor {PROCESS_ONLY}")
    return limits


def parse_inputs(text: str) -> list[str]:
    inputs = parse_list("--inputs", text)
    for item in inputs:
        if item not in INPUTS:
            raise UserError(f"--inputs {text}: unknown input '{item}'; accepted: {', '.join(INPUTS)}")
    return inputs


def parse_seeds(text: str) -> list[int]:
    seeds = []
    for item in parse_list("--seeds", text):
        if not item.isdigit() or int(item) >= 2**63:
            raise UserError(f"--seeds {text}: '{item}' is not a seed (a non-negative integer)")
        seeds.append(int(item))
    return seeds


def parse_size(text: str) -> int:
    cleaned = text.replace("_", "").replace(",", "")
    try:
        value = float(cleaned) if any(c in cleaned for c in "eE.") else int(cleaned)
    except ValueError:
        raise UserError(f"--size {text}: expected a number of integers, e.g. 100000 or 3e6") from None
    if not float(value).is_integer() or not 1 <= value <= MAX_N:
        raise UserError(f"--size {text}: expected a whole number of integers from 1 to {MAX_N:,}")
    return int(value)


# ------------------------------------------------------------------- plan


@dataclass
class Cell:
    """input (with its seed) x limit: its runs."""

    index: int
    input: str
    seed: int  # the random input's seed (0 for sorted and reversed)
    limit: str
    times: list[float] = field(default_factory=list)
    per_task_ms: list[float] = field(default_factory=list)
    thread_tasks: list[int] = field(default_factory=list)
    process_tasks: list[int] = field(default_factory=list)
    tasks: int | None = None
    spawn_calls: int | None = None
    wrong: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    runs_done: int = 0
    hopeless: str | None = None  # why the cell is not run (an estimate past the limit)
    last: dict[str, Any] = field(default_factory=dict)
    emitted: bool = False

    @property
    def input_label(self) -> str:
        return f"random-{self.seed}" if self.input == "random" else self.input

    @property
    def label(self) -> str:
        return f"{self.input_label} {self.limit if self.limit == PROCESS_ONLY else 'limit ' + self.limit}"


@dataclass
class Plan:
    n: int
    inputs: list[str]
    seeds: list[int]
    limits: list[str]
    runs: int
    seed: int
    timeout_s: float
    spawn_timeout_s: float
    quick: bool
    limit_counts: str  # what the library's limit counts (spawn.LIMIT_COUNTS), at every run
    program: Path
    launcher: Path
    cells: list[Cell]
    jobs: list[Job]
    pilot_ms_per_task: float | None = None
    pilot_note: str | None = None

    def options(self) -> dict[str, Any]:
        return {
            "study": STUDY, "n": self.n, "inputs": self.inputs, "seeds": self.seeds, "limits": self.limits,
            "runs": self.runs, "seed": self.seed, "timeout_s": self.timeout_s,
            "spawn_timeout_s": self.spawn_timeout_s, "quick": self.quick, "limit_counts": self.limit_counts,
        }

    def catalog(self) -> list[dict[str, Any]]:
        """One entry, shaped like a benchmark program's --list."""
        labels = list(dict.fromkeys(cell.input_label for cell in self.cells))
        return [{
            "benchmark": BENCHMARK, "model": MODEL,
            "summary": f"CilkSort of {self.n:,} integers: {len(labels)} inputs x thread limits {','.join(self.limits)}",
            "quantity": TIME_QUANTITY, "unit": "s", "threads": 0, "placements": [], "default_placements": [],
            "params": [
                {"name": "input", "help": "random-SEED, sorted or reversed", "values": labels, "quick_values": labels},
                {"name": "max_threads", "help": "libthreadlab-spawn's thread limit, or process-only (plain MPI)",
                 "values": self.limits, "quick_values": self.limits},
                {"name": "n", "help": "integers sorted", "values": [str(self.n)], "quick_values": [str(self.n)]},
            ],
            "program": PROGRAM, "study": STUDY,
        }]


def find_programs() -> tuple[Path, Path]:
    """threadlab-spawn-cilksort and threadlab-spawn-mpirun of the build."""
    launcher = spawn.find_launcher()
    return spawn.find(PROGRAM), launcher


def make_plan(
    *,
    program: Path,
    launcher: Path,
    n: int | None = None,
    inputs: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    limits: Sequence[str] | None = None,
    runs: int | None = None,
    seed: int | None = None,
    timeout_s: float | None = None,
    spawn_timeout_s: float | None = None,
    quick: bool = False,
    limit_counts: str = DEFAULT_LIMIT_COUNTS,
) -> Plan:
    """Every cell and every run, in a seeded random order, settled before
    anything runs."""
    n = n or (QUICK_N if quick else DEFAULT_N)
    inputs = list(inputs or INPUTS)
    seeds = list(seeds or (DEFAULT_SEEDS[:1] if quick else DEFAULT_SEEDS))
    limits = list(limits or LIMITS)
    runs = runs or (QUICK_RUNS if quick else DEFAULT_RUNS)
    if seed is None:
        seed = new_seed()
    cells: list[Cell] = []
    for name in inputs:
        for input_seed in (seeds if name == "random" else [0]):
            for limit in limits:
                cells.append(Cell(len(cells), name, input_seed, limit))
    jobs = interleaved_jobs([cell.index for cell in cells], runs, seed)
    return Plan(n=n, inputs=inputs, seeds=seeds, limits=limits, runs=runs, seed=seed,
                timeout_s=timeout_s or (QUICK_TIMEOUT_S if quick else DEFAULT_TIMEOUT_S),
                spawn_timeout_s=spawn_timeout_s or (QUICK_SPAWN_TIMEOUT_S if quick else DEFAULT_SPAWN_TIMEOUT_S),
                quick=quick, limit_counts=limit_counts, program=program, launcher=launcher, cells=cells, jobs=jobs)


# --------------------------------------------------------------- one run


def run_argv(plan: Plan, cell: Cell, n: int | None = None) -> list[str]:
    """The launcher's command line of one run of the cell."""
    command = [str(plan.program), "--run", RUN_BENCHMARK, "--param", f"n={n or plan.n}", "--param",
               f"input={cell.input}", "--param", f"seed={cell.seed}", "--param", f"max_threads={cell.limit}"]
    return spawn.launch_argv(plan.launcher, command, max_threads=None if cell.limit == PROCESS_ONLY else cell.limit,
                             timeout_s=plan.timeout_s, spawn_timeout_s=plan.spawn_timeout_s,
                             limit_counts=plan.limit_counts)


def _record(lines: Sequence[str]) -> dict[str, Any] | None:
    """The run's record: the last line that is one (the tasks of a
    process-only run may print lines of their own)."""
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                record = schema.parse_record_line(line)
            except schema.RecordError:
                continue
            if record["benchmark"] == RUN_BENCHMARK:
                return record
    return None


def run_once(plan: Plan, cell: Cell, stop: StopRequest, n: int | None = None) -> Outcome | None:
    """One CilkSort of the cell (process.Follow: its own process group,
    within the launcher's time limit and a margin of ours).  None when a
    stop (Ctrl-C) was requested meanwhile."""
    ran = run_program(run_argv(plan, cell, n), plan.timeout_s + 15, stop)
    if ran is None or isinstance(ran, str):
        return None if ran is None else Outcome("failed", ran, {}, 0.0)
    record = _record(ran.lines)
    # The library's own error line when it has one (a hung spawn says what
    # hung), else the last line of stderr.
    said, wall, code = ran.said, ran.wall_s, ran.returncode
    if ran.timed_out or code == 124:
        return Outcome("failed", said if said and "did not return within" in said
                       else f"timed out after {plan.timeout_s:g} s", record or {}, wall)
    if record is None:
        return Outcome("failed", process.exit_text(code) + (f": {said}" if said else "") + " (no record)", {}, wall)
    if record["status"] != "ok":
        return Outcome("failed", str(record.get("reason") or said or "failed"), record, wall)
    bad = [c for c in record["checks"] if not c["ok"]]
    if bad:
        return Outcome("wrong", f"check {bad[0]['name']}: {bad[0].get('detail')}", record, wall)
    return Outcome("ok", None, record, wall)


def record_outcome(cell: Cell, outcome: Outcome) -> None:
    """Adds one run's outcome to its cell."""
    cell.runs_done += 1
    if outcome.kind == "failed":
        cell.failures.append(outcome.reason or "failed")
        return
    record = outcome.record
    extra = record.get("extra", {})
    seconds = float(record["samples"][0])
    cell.times.append(seconds)
    tasks = extra.get("tasks")
    if isinstance(tasks, (int, float)) and tasks > 0:
        cell.per_task_ms.append(1e3 * seconds / float(tasks))
        cell.tasks = int(tasks)
    for attribute, key in (("thread_tasks", "thread_tasks"), ("process_tasks", "process_tasks")):
        value = extra.get(key)
        if isinstance(value, (int, float)):
            getattr(cell, attribute).append(int(value))
    if isinstance(extra.get("spawn_calls"), (int, float)):
        cell.spawn_calls = int(extra["spawn_calls"])
    if outcome.kind == "wrong":
        cell.wrong.append(outcome.reason or "a check failed")
    cell.last = record


# ---------------------------------------------------- hopeless cells


def count_tree(program: Path, n: int, input_name: str, seed: int) -> dict[str, Any]:
    """The task tree of a run, counted by the program without MPI."""
    return discovery.query_json(program, "count", str(n), input_name, str(seed), timeout_s=_COUNT_TIMEOUT_S)[0]


def estimate_hopeless(plan: Plan, stop: StopRequest, progress: JobProgress | None = None) -> None:
    """Marks the process-only cells that cannot finish in the time limit:
    one process-only run at the quick size measures the time per task, the
    program counts each cell's tasks, and a cell estimated past HOPELESS x
    the limit is not run.  Only when N is above the quick size."""
    process_cells = [cell for cell in plan.cells if cell.limit == PROCESS_ONLY]
    if not process_cells or plan.n <= QUICK_N:
        return
    pilot = Cell(-1, "random", 1, PROCESS_ONLY)
    if progress:
        progress.message(f"threadlab: measuring the time per process task (one process-only run of {QUICK_N:,} "
                         "integers) to estimate the process-only cells")
    outcome = run_once(plan, pilot, stop, n=QUICK_N)
    if outcome is None or outcome.kind != "ok":
        plan.pilot_note = ("the time per process task could not be measured"
                           + (f" ({outcome.reason})" if outcome else "") + ": the process-only cells are run")
        return
    extra = outcome.record.get("extra", {})
    tasks = float(extra.get("tasks") or 0)
    if tasks <= 0:
        return
    per_task_s = float(outcome.record["samples"][0]) / tasks
    plan.pilot_ms_per_task = 1e3 * per_task_s
    for cell in process_cells:
        tree = count_tree(plan.program, plan.n, cell.input, cell.seed)
        estimate = per_task_s * float(tree["tasks"])
        cell.tasks, cell.spawn_calls = int(tree["tasks"]), int(tree["spawn_calls"])
        if estimate > HOPELESS * plan.timeout_s:
            cell.hopeless = (f"cannot finish within the time limit here: {tree['tasks']:,} tasks x "
                             f"{plan.pilot_ms_per_task:.1f} ms per task (measured: a process-only run of {QUICK_N:,} "
                             f"integers) = about {_duration(estimate)}, past {_duration(plan.timeout_s)}")


def _duration(seconds: float) -> str:
    from threadlab.output.units import format_duration

    return format_duration(seconds)


def run_study(plan: Plan, on_record: Callable[[Cell, dict[str, Any]], None], progress: JobProgress) -> Result:
    """The estimate of hopeless cells, then every run in the plan's order;
    a cell's record goes to on_record (the store) once its last run is
    done.  Ctrl-C/SIGTERM: the run in progress is killed, every cell with a
    finished run is recorded, and the study stops."""
    estimate_hopeless(plan, StopRequest(), progress)
    return drive(plan.cells, plan.jobs, lambda cell, stop: run_once(plan, cell, stop), record_outcome,
                 lambda cell: cell_records(cell, plan), on_record, progress,
                 unsupported=lambda cell: bool(cell.hopeless))


# ---------------------------------------------------------------- records


def _checks(cell: Cell) -> list[dict[str, Any]]:
    return run_checks(len(cell.times), cell.wrong, cell.failures, cell.runs_done,
                      verified="every run's result was sorted, a permutation of its input, and made by exactly the "
                               "algorithm's tasks")


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _extra(cell: Cell, plan: Plan) -> dict[str, Any]:
    last = cell.last.get("extra", {}) if cell.last else {}
    return {
        "study": STUDY, "input": cell.input_label, "limit": cell.limit, "n": plan.n,
        "tasks": cell.tasks, "spawn_calls": cell.spawn_calls,
        "thread_tasks_mean": _mean(cell.thread_tasks), "process_tasks_mean": _mean(cell.process_tasks),
        "time_per_task_ms_mean": _mean(cell.per_task_ms),
        "pilot_ms_per_task": plan.pilot_ms_per_task if cell.limit == PROCESS_ONLY else None,
        "runs_planned": plan.runs, "runs_done": cell.runs_done, "runs_failed": len(cell.failures),
        "limit_counts": None if cell.limit == PROCESS_ONLY else plan.limit_counts,
        "seed": plan.seed, "program": PROGRAM, "mpi": last.get("mpi"), "library": last.get("library"),
    }


def _params(cell: Cell, plan: Plan) -> dict[str, str]:
    return {"input": cell.input_label, "max_threads": cell.limit, "n": str(plan.n)}


def cell_records(cell: Cell, plan: Plan) -> list[dict[str, Any]]:
    """The cell's records: `time` (one sample per run) and `time_per_task`."""
    records = []
    for metric, unit, quantity, samples in (("time", "s", TIME_QUANTITY, cell.times),
                                            ("time_per_task", "ms", PER_TASK_QUANTITY, cell.per_task_ms)):
        record = new_record(BENCHMARK, MODEL, metric=metric, params=_params(cell, plan), placement="none", cpus=[],
                            unit=unit, quantity=quantity, extra=_extra(cell, plan))
        records.append(cell_record(record, samples, clock="monotonic", runs=plan.runs, elapsed_s=sum(cell.times),
                                   checks=lambda: _checks(cell), failures=[cell.hopeless] if cell.hopeless
                                   else cell.failures, runs_done=cell.runs_done, nothing="no run completed"))
    return records


def is_study_record(record: Mapping[str, Any]) -> bool:
    return record.get("benchmark") == BENCHMARK


def dry_run_lines(plan: Plan) -> Iterable[str]:
    """--dry-run: one command per cell."""
    import shlex

    for cell in plan.cells:
        yield f"# {cell.label}: {plan.runs} runs\n{shlex.join(run_argv(plan, cell))}"
