"""`threadlab study multiprog`: seed 004's evaluation (docs/study-multiprog.md).

Workloads of k instances of one NAS-like OpenMP kernel (threadlab-npb),
started at once (or staggered), each asking for every CPU, and scenarios
where the manager should win (SCENARIOS: kernels mixed, arriving
staggered and finishing at different times; the late arrival of a long
region; faults: the manager stopped, a program SIGKILLed mid-run), under
seven baselines:

    rm        threadlab-rm, a private manager per experiment, and the libgomp
              shim through its launcher (threadlab.rm: Manager.start_private,
              omp_launch)
    ult       the same manager, the kernels on libthreadlab-gomp (libgomp's
              ABI on user-level threads, following the allocation inside
              regions) through the same launcher (omp_launch runtime "ult")
    gomp      plain libgomp defaults
    llvmomp   plain LLVM libomp defaults: the same kernels linked against
              libomp (threadlab-npb-llvmomp, built where libomp-dev is)
    passive   OMP_WAIT_POLICY=passive
    dynamic   OMP_DYNAMIC=true
    static    a static split of the CPUs: each instance bound to its share
              (sched_setaffinity before exec) with OMP_NUM_THREADS = its size

plus the dedicated runs (one instance on 1..N CPUs, gomp and rm) of the
seed's Table 1.  An experiment is one workload run once; its instances'
turnaround (start to exit, wait4), context switches (wait4's rusage),
verification and team sizes (the kernel's JSON line) are measured.  The
experiments of every cell (kernel x baseline x degree, kernel x baseline x
CPUs, or scenario x baseline) run in one seeded random order.  Each cell becomes threadlab.record/1
records whose samples are one value per experiment (tables_multiprog.py
computes the seed's Tables 1 and 2 from them).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from threadlab import vocabulary
from threadlab.errors import ThreadlabError, UserError
from threadlab.native import discovery, process, rm
from threadlab.native.process import StopRequest
from threadlab.records import schema
from threadlab.records.record import new_record
from threadlab.run.progress import JobProgress
from threadlab.run.runner import Result
from threadlab.study.engine import (Job, allowed_cpus, cell_record, drive, interleaved_jobs, new_seed, parse_list,
                                    run_checks)

STUDY = "multiprog"
PROGRAM = "threadlab-npb"
# The kernels linked against LLVM's libomp (native/npb), beside PROGRAM.
LLVMOMP_PROGRAM = "threadlab-npb-llvmomp"
BENCHMARK_PREFIX = "study.multiprog."

APPS: tuple[str, ...] = ("ep", "cg", "mg", "sp")
BASELINES: tuple[str, ...] = ("rm", "ult", "gomp", "llvmomp", "passive", "dynamic", "static")
# The baselines under a private threadlab-rm, and the runtime their
# instances run on (threadlab.native.rm.OMP_RUNTIMES).
MANAGED_BASELINES: dict[str, str] = {"rm": "shim", "ult": "ult"}
# The baselines that also run dedicated (Table 1: threadlab's system
# against plain libgomp, as the seed's Nanos against PGI).
DEDICATED_BASELINES: tuple[str, ...] = ("rm", "gomp")
# The runtime library each baseline's instances must report (the file
# providing GOMP_parallel: threadlab-npb's "runtime"), for those where
# falling back to another would measure the wrong runtime.
BASELINE_RUNTIMES: dict[str, str] = {"ult": rm.ULT_LIBRARY, "llvmomp": "libomp.so"}
SIZES: tuple[str, ...] = ("small", "S", "W", "A")
DEFAULT_SIZE, QUICK_SIZE = "W", "small"
DEFAULT_DEGREES: tuple[int, ...] = (1, 2, 4, 8)  # the seed's
QUICK_DEGREES: tuple[int, ...] = (1, 2)
MAX_DEGREE = 64
DEFAULT_RUNS = 5  # the seed's
QUICK_RUNS = 2
MAX_STAGGER_S = 600.0
DEFAULT_TIMEOUT_S = 600.0
QUICK_TIMEOUT_S = 60.0
DEFAULT_POLICY = "timeshare"  # the seed's time-sharing dynamic space sharing
DEFAULT_QUANTUM_MS = 100

# Scenarios: what a program does when (each asks for every CPU).  Offsets
# and fault times are in units of the size's SCENARIO_UNIT_S, so that the
# programs overlap at every size; the late arrival is 30 ms, as observed.
SCENARIOS: tuple[str, ...] = ("mixed", "staggered", "late", "stop", "kill")
SCENARIO_UNIT_S: dict[str, float] = {"small": 0.01, "S": 0.05, "W": 0.1, "A": 0.5}
LATE_S = 0.03
# The late arrival's CG is short beside its EP: one size smaller.
SHORTER: dict[str, str] = {"small": "small", "S": "small", "W": "S", "A": "W"}
# The baselines that beat rm's competitors: the target compares rm with the
# best of these (docs/study-multiprog.md).
COMPETITORS: tuple[str, ...] = ("passive", "dynamic", "static")

# Environment a baseline must not inherit from the user's shell.
_SCRUBBED = re.compile(r"^(OMP_|GOMP_|KMP_|THREADLAB_OMP_|THREADLAB_GOMP_|THREADLAB_RM_)")


# ------------------------------------------------------------------ input


def _names(option: str, text: str, accepted: Sequence[str], what: str) -> list[str]:
    """A comma-separated choice from `accepted`, in the canonical order."""
    names = parse_list(option, text)
    for name in names:
        if name not in accepted:
            raise UserError(f"{option} {text}: unknown {what} '{name}'; expected from {', '.join(accepted)}")
    return [a for a in accepted if a in names]


def parse_apps(text: str) -> list[str]:
    """--apps cg,ep: the kernels."""
    return _names("--apps", text, APPS, "kernel")


def parse_baselines(text: str) -> list[str]:
    """--baselines rm,gomp: the baselines."""
    return _names("--baselines", text, BASELINES, "baseline")


def parse_degrees(text: str) -> list[int]:
    """--degree 1,2,4,8 or 1-4: multiprogramming degrees, 1..MAX_DEGREE."""
    try:
        return vocabulary.parse_ranges(parse_list("--degree", text), 1, MAX_DEGREE)
    except ValueError as bad:
        raise UserError(f"--degree {text}: '{bad}' is out of range; expected degrees (instances at once) "
                        f"from 1 to {MAX_DEGREE}, as a list and/or ranges (e.g. 1,2,4,8 or 1-4)") from None


def parse_scenarios(text: str) -> list[str]:
    """--scenarios mixed,late or none: the scenarios."""
    if text.strip() == "none":
        return []
    return _names("--scenarios", text, SCENARIOS, "scenario")


def parse_size(text: str) -> str:
    if text not in SIZES:
        raise UserError(f"--size {text}: expected one of {', '.join(SIZES)} (small: CI; W: like NAS class W)")
    return text


def static_split(cpus: Sequence[int], k: int) -> list[list[int]]:
    """The static baseline's CPUs for k instances: with k <= N CPUs,
    consecutive disjoint shares whose sizes differ by at most one (the first
    N mod k instances get the larger); with k > N, instance i gets the single
    CPU i mod N.  Every instance gets at least one CPU; the shares cover
    every CPU."""
    cpus = list(cpus)
    if not cpus:
        raise ValueError("static_split: no CPUs")
    if k < 1:
        raise ValueError(f"static_split: {k} instances")
    n = len(cpus)
    if k > n:
        return [[cpus[i % n]] for i in range(k)]
    base, extra = divmod(n, k)
    shares, start = [], 0
    for i in range(k):
        size = base + (1 if i < extra else 0)
        shares.append(cpus[start:start + size])
        start += size
    return shares


# -------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Entry:
    """One program of a scenario: its kernel, when it starts (s after the
    first) and its size (None: the study's)."""

    kernel: str
    at_s: float
    size: str | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    entries: tuple[Entry, ...]
    fault: str | None = None  # None, "stop" (the manager stops), "kill" (entry 0 is SIGKILLed)
    fault_at_s: float = 0.0
    baselines: tuple[str, ...] | None = None  # None: every baseline selected

    @property
    def workload(self) -> str:
        """"ep@0s,cg@0.1s,mg@0.2s": the programs (with their size when it is
        not the study's) and their start offsets."""
        return ",".join(f"{e.kernel}{f'({e.size})' if e.size else ''}@{e.at_s:g}s" for e in self.entries)

    @property
    def fault_text(self) -> str | None:
        if self.fault == "stop":
            return f"manager stopped at {self.fault_at_s:g}s"
        if self.fault == "kill":
            return f"{self.entries[0].kernel}#0 SIGKILLed at {self.fault_at_s:g}s"
        return None

    def measured(self, index: int) -> bool:
        """Whether entry `index`'s turnaround counts (not the one killed)."""
        return not (self.fault == "kill" and index == 0)


def scenario(name: str, size: str) -> Scenario:
    """The scenario `name` at `size` (offsets scaled by SCENARIO_UNIT_S)."""
    u = SCENARIO_UNIT_S.get(size, SCENARIO_UNIT_S[DEFAULT_SIZE])
    if name == "mixed":
        return Scenario(name, "EP, CG and MG arriving one unit apart and finishing at different times: a static "
                        "split strands the CPUs of whoever finishes first, passive waiting oversubscribes",
                        (Entry("ep", 0.0), Entry("cg", u), Entry("mg", 2 * u)))
    if name == "staggered":
        return Scenario(name, "SP, CG, EP and MG arriving one unit apart: more programs than CPUs, long and "
                        "barrier-heavy regions together",
                        (Entry("sp", 0.0), Entry("cg", u), Entry("ep", 2 * u), Entry("mg", 3 * u)))
    if name == "late":
        shorter = SHORTER.get(size, size)
        return Scenario(name, f"a short CG (size {shorter}), then EP {LATE_S * 1e3:g} ms later: EP's only region "
                        "must get the CPUs back when CG exits",
                        (Entry("cg", 0.0, shorter if shorter != size else None), Entry("ep", LATE_S)))
    if name == "stop":
        return Scenario(name, "SP and CG at once, the manager stopped one unit in (rm); the same workload under "
                        "passive libgomp is the reference", (Entry("sp", 0.0), Entry("cg", 0.0)), fault="stop",
                        fault_at_s=u, baselines=("rm", "ult", "passive"))
    if name == "kill":
        return Scenario(name, "two EPs at once, the first SIGKILLed one unit in: the survivor should get every CPU "
                        "(its turnaround is measured)", (Entry("ep", 0.0), Entry("ep", 0.0)), fault="kill",
                        fault_at_s=u)
    raise ValueError(f"unknown scenario {name!r}")


# ------------------------------------------------------------------- plan


@dataclass
class Instance:
    """One instance of one experiment, as measured."""

    turnaround_s: float
    exit_status: int  # negative: killed by that signal
    verified: bool
    data: dict[str, Any]
    voluntary: int
    involuntary: int
    stderr: str | None = None
    cpu_s: float | None = None  # user + system time of all its threads (wait4's rusage)


@dataclass
class Cell:
    """kernel x baseline x degree (dedicated: x CPUs): its experiments."""

    index: int
    app: str
    baseline: str
    degree: int
    cpus: int  # CPUs of the experiment: all of them, or the dedicated count
    dedicated: bool
    mean_turnaround: list[float] = field(default_factory=list)
    max_turnaround: list[float] = field(default_factory=list)
    makespan: list[float] = field(default_factory=list)
    voluntary: list[float] = field(default_factory=list)
    involuntary: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # mean CPU time per instance, one per experiment
    instance_turnarounds: list[float] = field(default_factory=list)
    teams: dict[int, int] = field(default_factory=dict)
    regions: list[int] = field(default_factory=list)
    kernel_times: list[float] = field(default_factory=list)
    managed: list[bool | None] = field(default_factory=list)
    runtimes: list[str] = field(default_factory=list)  # per instance: the file providing GOMP_parallel
    shim_states: list[int | None] = field(default_factory=list)
    scenario: Scenario | None = None
    entry_turnarounds: dict[int, list[float]] = field(default_factory=dict)  # entry -> one per experiment
    entry_cpu: dict[int, list[float]] = field(default_factory=dict)  # entry -> one per experiment
    faults_applied: int = 0
    wrong: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    runs_done: int = 0
    last: dict[str, Any] = field(default_factory=dict)
    emitted: bool = False

    @property
    def label(self) -> str:
        if self.dedicated:
            return f"{self.app} {self.baseline} dedicated cpus={self.cpus}"
        if self.scenario:
            return f"{self.scenario.name} {self.baseline}"
        return f"{self.app} {self.baseline} degree={self.degree}"


@dataclass
class Plan:
    apps: list[str]
    baselines: list[str]
    degrees: list[int]
    runs: int
    size: str
    stagger_s: float
    seed: int
    cpus: list[int]
    dedicated: bool
    scenarios: list[str]
    policy: str
    other_load: str
    quantum_ms: int
    timeout_s: float
    quick: bool
    program: Path
    cells: list[Cell]
    jobs: list[Job]
    llvmomp_program: Path | None = None  # the llvmomp baseline's kernels

    def program_of(self, baseline: str) -> Path:
        """The kernels' program an instance of `baseline` runs."""
        if baseline == "llvmomp":
            assert self.llvmomp_program is not None
            return self.llvmomp_program
        return self.program

    def options(self) -> dict[str, Any]:
        return {
            "study": STUDY, "apps": self.apps, "baselines": self.baselines, "degrees": self.degrees,
            "runs": self.runs, "size": self.size, "stagger_s": self.stagger_s, "seed": self.seed,
            "cpus": self.cpus, "dedicated": self.dedicated, "scenarios": self.scenarios, "policy": self.policy,
            "other_load": self.other_load, "quantum_ms": self.quantum_ms,
            "timeout_s": self.timeout_s, "quick": self.quick,
        }

    def catalog(self) -> list[dict[str, Any]]:
        """One entry per kernel, shaped like a benchmark program's --list."""
        entries = []
        for app in self.apps:
            params = [
                {"name": "degree", "help": "instances started at once, each asking for every CPU",
                 "values": [str(d) for d in self.degrees], "quick_values": [str(d) for d in self.degrees]},
                {"name": "size", "help": "threadlab-npb size (small, S, W, A)", "values": [self.size],
                 "quick_values": [self.size]},
            ]
            if self.dedicated:
                counts = [str(c) for c in range(1, len(self.cpus) + 1)]
                params.append({"name": "threads", "help": "CPUs of a dedicated run (one instance)",
                               "values": counts, "quick_values": counts})
            entries.append({
                "benchmark": BENCHMARK_PREFIX + app, "model": ",".join(self.baselines),
                "summary": f"threadlab-npb {app}: {len(self.baselines)} baselines x degrees {self.degrees}",
                "quantity": TURNAROUND_QUANTITY, "unit": "s", "threads": len(self.cpus),
                "placements": ["unbound"], "default_placements": ["unbound"], "params": params,
                "program": PROGRAM, "study": STUDY,
            })
        for name in self.scenarios:
            sc = scenario(name, self.size)
            entries.append({
                "benchmark": BENCHMARK_PREFIX + name, "model": ",".join(self.scenario_baselines(sc)),
                "summary": sc.summary, "quantity": TURNAROUND_QUANTITY, "unit": "s", "threads": len(self.cpus),
                "placements": ["unbound"], "default_placements": ["unbound"],
                "params": [{"name": "workload", "help": "programs and start offsets", "values": [sc.workload],
                            "quick_values": [sc.workload]}],
                "program": PROGRAM, "study": STUDY,
            })
        return entries

    def scenario_baselines(self, sc: Scenario) -> list[str]:
        return [b for b in self.baselines if sc.baselines is None or b in sc.baselines]


def find_program() -> Path:
    """threadlab-npb of the build (a ThreadlabError saying how to build it)."""
    return discovery.find_one(PROGRAM)


def llvmomp_program(program: Path) -> Path | None:
    """threadlab-npb-llvmomp beside `program`, when it was built (CMake
    builds it where it finds LLVM's libomp)."""
    path = program.with_name(LLVMOMP_PROGRAM)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def make_plan(
    *,
    program: Path,
    apps: Sequence[str] | None = None,
    baselines: Sequence[str] | None = None,
    degrees: Sequence[int] | None = None,
    runs: int | None = None,
    size: str | None = None,
    stagger_s: float = 0.0,
    seed: int | None = None,
    cpus: Sequence[int] | None = None,
    dedicated: bool = True,
    scenarios: Sequence[str] | None = None,
    policy: str = DEFAULT_POLICY,
    other_load: str = "count",
    quantum_ms: int = DEFAULT_QUANTUM_MS,
    timeout_s: float | None = None,
    quick: bool = False,
) -> Plan:
    """Every cell and every experiment, in a seeded random order, settled
    before anything runs.  scenarios None: every scenario; baselines None:
    every baseline, llvmomp only when its program was built beside
    `program` (asked for by name without it: ThreadlabError saying how to
    build it)."""
    apps = list(apps or APPS)
    llvmomp = llvmomp_program(program)
    if baselines is None:
        baselines = [b for b in BASELINES if b != "llvmomp" or llvmomp is not None]
    baselines = list(baselines)
    if "llvmomp" in baselines and llvmomp is None:
        raise ThreadlabError(f"--baselines llvmomp: {program.with_name(LLVMOMP_PROGRAM)} is not built: it needs LLVM's "
                             "libomp (Debian's libomp-dev, which scripts/install-deps.sh installs) when the build "
                             "is configured; install it and run `make` again")
    degrees = sorted(set(degrees or (QUICK_DEGREES if quick else DEFAULT_DEGREES)))
    for degree in degrees:
        if not 1 <= degree <= MAX_DEGREE:
            raise UserError(f"--degree {degree}: expected degrees from 1 to {MAX_DEGREE}")
    runs = runs or (QUICK_RUNS if quick else DEFAULT_RUNS)
    size = parse_size(size or (QUICK_SIZE if quick else DEFAULT_SIZE))
    if not 0 <= stagger_s <= MAX_STAGGER_S:
        raise UserError(f"--stagger {stagger_s:g}: expected seconds from 0 to {MAX_STAGGER_S:g}")
    cpus = list(cpus) if cpus is not None else allowed_cpus()
    policy = rm.check_policy(policy, "--policy")
    if other_load not in rm.OTHER_LOAD:
        raise UserError(f"--other-load {other_load}: expected {' or '.join(rm.OTHER_LOAD)}")
    quantum_ms = rm.check_quantum(quantum_ms)
    if seed is None:
        seed = new_seed()
    cells: list[Cell] = []
    for app in apps:
        if dedicated:
            for baseline in (b for b in DEDICATED_BASELINES if b in baselines):
                for count in range(1, len(cpus) + 1):
                    cells.append(Cell(len(cells), app, baseline, 1, count, True))
        for baseline in baselines:
            for degree in degrees:
                cells.append(Cell(len(cells), app, baseline, degree, len(cpus), False))
    scenarios = [name for name in SCENARIOS if name in (SCENARIOS if scenarios is None else scenarios)]
    for name in scenarios:
        sc = scenario(name, size)
        for baseline in baselines:
            if sc.baselines is None or baseline in sc.baselines:
                cells.append(Cell(len(cells), name, baseline, len(sc.entries), len(cpus), False, scenario=sc))
    numbered = interleaved_jobs([cell.index for cell in cells], runs, seed)
    return Plan(apps=apps, baselines=baselines, degrees=degrees, runs=runs, size=size, stagger_s=stagger_s,
                seed=seed, cpus=cpus, dedicated=dedicated, scenarios=scenarios, policy=policy, other_load=other_load,
                quantum_ms=quantum_ms,
                timeout_s=timeout_s or (QUICK_TIMEOUT_S if quick else DEFAULT_TIMEOUT_S), quick=quick,
                program=program, cells=cells, jobs=numbered,
                llvmomp_program=llvmomp if "llvmomp" in baselines else None)


# ---------------------------------------------------------- environments


def clean_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without OpenMP settings, threadlab's OpenMP runtimes
    (the shim, libthreadlab-gomp) or a manager's location: what 'plain
    libgomp defaults' starts from."""
    return rm.preload_environment(None, {k: v for k, v in (os.environ if base is None else base).items()
                                         if not _SCRUBBED.match(k)})


@dataclass(frozen=True)
class Launch:
    """How one instance starts: its argv, environment, CPU mask (None:
    inherited), and when (s after the experiment's first start)."""

    argv: list[str]
    env: dict[str, str]
    affinity: list[int] | None
    at_s: float = 0.0


def launches(cell: Cell, plan: Plan, manager_dir: Path | None) -> list[Launch]:
    """The instances of one experiment of the cell.  Every instance asks
    for every CPU of the experiment (OMP_NUM_THREADS), except under static,
    where each asks for its share.  Under rm and ult each goes through the
    launcher (rm.omp_launch: the shim, or libthreadlab-gomp), as `threadlab
    omp run [--runtime ult]` would start it."""
    base = clean_environment()
    own = list(plan.cpus[: cell.cpus]) if cell.dedicated else list(plan.cpus)
    if cell.scenario:
        programs = [(e.kernel, e.at_s, e.size or plan.size) for e in cell.scenario.entries]
    else:
        programs = [(cell.app, i * plan.stagger_s, plan.size) for i in range(cell.degree)]
    ask = {"OMP_NUM_THREADS": str(len(own))}
    affinity = own if cell.dedicated else None
    starts = []
    shares = static_split(own, len(programs)) if cell.baseline == "static" else [None] * len(programs)
    extra = {"passive": {"OMP_WAIT_POLICY": "passive"}, "dynamic": {"OMP_DYNAMIC": "true"}}.get(cell.baseline, {})
    for (kernel, at_s, size), share in zip(programs, shares):
        argv = [str(plan.program_of(cell.baseline)), "--run", BENCHMARK_PREFIX + kernel, "--param", f"size={size}"]
        if cell.baseline in MANAGED_BASELINES:
            assert manager_dir is not None
            argv, env = rm.omp_launch(argv, base, directory=manager_dir, quiet=True,
                                      runtime=MANAGED_BASELINES[cell.baseline])
            starts.append(Launch(argv, {**env, **ask}, affinity, at_s))
        elif share is not None:
            starts.append(Launch(argv, {**base, "OMP_NUM_THREADS": str(len(share))}, share, at_s))
        else:
            starts.append(Launch(argv, {**base, **ask, **extra}, affinity, at_s))
    return starts


# ---------------------------------------------------------------- running


@dataclass
class Experiment:
    """One workload run once: what the progress and the cell need."""

    kind: str  # "ok", "wrong", "failed"
    reason: str | None
    instances: list[Instance]
    makespan_s: float
    measured: list[bool] = field(default_factory=list)  # per instance: its turnaround counts (not killed)
    fault_applied: bool = False


class _Child:
    """One running instance (process.Watched: reaped by a thread blocked in
    wait4, no polling: the CPUs belong to the workload), its output in
    files."""

    def __init__(self, launch: Launch, out_dir: Path, number: int, timeout_s: float) -> None:
        self.stdout_path = out_dir / f"{number}.out"
        self.stderr_path = out_dir / f"{number}.err"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.watched = process.Watched(launch.argv, timeout_s=timeout_s, affinity=launch.affinity,
                                           stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=launch.env)
        self.started = self.watched.started
        self.thread = self.watched.thread

    @property
    def ended(self) -> float | None:
        return self.watched.ended

    def kill(self) -> None:
        self.watched.kill()

    def sigkill(self) -> bool:
        """The fault: SIGKILL to the program alone (no goodbye to the
        manager); False when it had exited already."""
        if self.ended is not None:
            return False
        try:
            os.kill(self.watched.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        return True

    def instance(self) -> Instance:
        assert self.watched.ended is not None
        data = instance_data(self.stdout_path.read_text(errors="replace"))
        status, rusage = self.watched.status, self.watched.rusage
        return Instance(
            turnaround_s=self.watched.ended - self.started, exit_status=status,
            verified=status == 0 and data.get("verified") is True, data=data,
            voluntary=int(rusage.ru_nvcsw), involuntary=int(rusage.ru_nivcsw),
            stderr=process.last_line(self.stderr_path.read_text(errors="replace")),
            cpu_s=float(rusage.ru_utime + rusage.ru_stime),
        )


def instance_data(stdout: str) -> dict[str, Any]:
    """What an instance's record says (threadlab-npb --run, the native
    protocol), as the cell keeps it: the kernel, its time, its
    verification, the team sizes its regions got ({size: count}), whether
    the shim managed it; {} when its last line is no valid record."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        record = schema.parse_record_line(lines[-1]) if lines else None
    except schema.RecordError:
        record = None
    if record is None:
        return {}
    extra = record["extra"]
    check = next((c for c in record["checks"] if c["name"] == "verified"), {"ok": False, "detail": "no verification"})
    teams = {}
    for part in str(extra.get("teams") or "").split(","):
        size, _, count = part.partition(":")
        if size.isdigit() and count.isdigit():
            teams[int(size)] = int(count)
    regions, state = extra.get("regions"), extra.get("shim_state")
    return {
        **extra,
        "kernel": record["benchmark"].removeprefix(BENCHMARK_PREFIX),
        "verified": check["ok"],
        "error": check.get("value"),
        "detail": check["detail"],
        "time_s": record["samples"][0] if record["samples"] else None,
        "teams": teams,
        "regions": int(regions) if isinstance(regions, (int, float)) else None,
        "shim_state": int(state) if isinstance(state, (int, float)) else None,
        "managed": {"yes": True, "no": False}.get(str(extra.get("managed"))),
    }


def _instance_problem(instance: Instance) -> tuple[str, str] | None:
    """('wrong' or 'failed', why) for an instance that did not verify."""
    if instance.exit_status < 0:
        return "failed", process.exit_text(instance.exit_status) + (f": {instance.stderr}" if instance.stderr else "")
    if not instance.data:
        return "failed", (f"exited with status {instance.exit_status}, no JSON line"
                          + (f": {instance.stderr}" if instance.stderr else ""))
    if not instance.verified:
        d = instance.data
        return "wrong", (f"{d.get('kernel')} did not verify: {d.get('quantity')} = {d.get('value')}, reference "
                         f"{d.get('reference')} ({d.get('detail')})")
    return None


def run_experiment(plan: Plan, cell: Cell, stop: StopRequest) -> Experiment | None:
    """Runs the cell's workload once: a private manager first for rm and ult; the
    instances started together (or at their offsets); the scenario's fault
    at its time; every instance waited for, or killed at the timeout.  None
    when a stop was requested meanwhile."""
    work = Path(tempfile.mkdtemp(prefix="threadlab-multiprog-"))
    children: list[_Child] = []
    manager: rm.Manager | None = None
    sc = cell.scenario
    try:
        if cell.baseline in MANAGED_BASELINES:
            own = plan.cpus[: cell.cpus]
            # Owned by this process: a study killed even by SIGKILL takes
            # its manager, arena and directory with it.
            manager = rm.Manager.start_private(policy=plan.policy, quantum_ms=plan.quantum_ms, cpus=own,
                                               other_load=plan.other_load)
        starts = launches(cell, plan, manager.directory if manager else None)
        deadline = time.monotonic() + plan.timeout_s
        first = time.monotonic()
        fault_at = first + sc.fault_at_s if sc and sc.fault else None
        applied = False

        def registered() -> bool:
            """Every program started and registered with the manager (a stop
            before that would find programs that never met it)."""
            assert manager is not None
            if len(children) < len(starts):
                return False
            try:
                return len(manager.status().get("apps", [])) >= sum(c.ended is None for c in children)
            except ThreadlabError:
                return True

        def fault_due() -> bool:
            """Applies the fault once its time has come: SIGKILL to the first
            program, or the manager stopped once every program is managed.
            True when it was applied now."""
            nonlocal fault_at, applied
            if fault_at is None or time.monotonic() < fault_at:
                return False
            if sc and sc.fault == "kill" and children:
                applied = children[0].sigkill()
            elif sc and sc.fault == "stop" and manager is not None:
                if not registered():
                    fault_at = time.monotonic() + 0.02  # look again soon
                    return False
                applied = any(c.ended is None for c in children)
                manager.stop()
            fault_at = None
            return applied

        for number, launch in enumerate(starts):
            wake = first + launch.at_s
            while not stop.requested and time.monotonic() < wake:
                fault_due()
                time.sleep(min(0.01, max(0.0, wake - time.monotonic())))
            if stop.requested:
                break
            children.append(_Child(launch, work, number, plan.timeout_s))
        timed_out = False
        for child in children:
            while child.thread.is_alive() and not stop.requested:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                fault_due()
                child.thread.join(min(0.01 if fault_at is not None else 0.1, left))
            if timed_out or stop.requested:
                break
        if stop.requested:
            return None
        if timed_out:
            return Experiment("failed", f"timed out after {plan.timeout_s:g} s", [], 0.0)
        instances = [child.instance() for child in children]
        measured = [sc.measured(i) if sc else True for i in range(len(instances))]
        makespan = max(c.ended for c in children if c.ended is not None) - min(c.started for c in children)
        problems = [p for i, p in enumerate(map(_instance_problem, instances))
                    if p and not (sc and sc.fault == "kill" and i == 0 and instances[0].exit_status == -9)]
        if problems:
            kind = "failed" if any(p[0] == "failed" for p in problems) else "wrong"
            first_problem = next(p for p in problems if p[0] == kind)
            reason = f"{len(problems)} of {len(instances)} instances: {first_problem[1]}"
            return Experiment(kind, reason, instances if kind == "wrong" else [], makespan, measured, applied)
        return Experiment("ok", None, instances, makespan, measured, applied)
    except ThreadlabError as error:  # the manager did not start
        return Experiment("failed", str(error).splitlines()[0], [], 0.0)
    except OSError as error:  # an instance could not be started
        return Experiment("failed", f"cannot start {plan.program_of(cell.baseline).name}: {error.strerror or error}",
                          [], 0.0)
    finally:
        for child in children:
            child.kill()
        for child in children:
            child.thread.join(5.0)
        if manager is not None:
            manager.close()
        shutil.rmtree(work, ignore_errors=True)


def record_experiment(cell: Cell, experiment: Experiment) -> None:
    """Adds one experiment's measures to its cell."""
    cell.runs_done += 1
    if experiment.kind == "failed":
        cell.failures.append(experiment.reason or "failed")
        return
    if experiment.kind == "wrong":
        cell.wrong.append(experiment.reason or "wrong result")
    measured = experiment.measured or [True] * len(experiment.instances)
    instances = [i for i, counts in zip(experiment.instances, measured) if counts]
    if not instances:
        cell.failures.append("no instance was measured")
        return
    cell.faults_applied += experiment.fault_applied
    turnarounds = [i.turnaround_s for i in instances]
    cell.instance_turnarounds += turnarounds
    cell.mean_turnaround.append(sum(turnarounds) / len(turnarounds))
    cell.max_turnaround.append(max(turnarounds))
    cell.makespan.append(experiment.makespan_s)
    cell.voluntary.append(sum(i.voluntary for i in instances) / len(instances))
    cell.involuntary.append(sum(i.involuntary for i in instances) / len(instances))
    cpu = [i.cpu_s for i in instances if i.cpu_s is not None]
    if len(cpu) == len(instances):
        cell.cpu.append(sum(cpu) / len(cpu))
    for index, (instance, counts) in enumerate(zip(experiment.instances, measured)):
        if counts:
            cell.entry_turnarounds.setdefault(index, []).append(instance.turnaround_s)
            if instance.cpu_s is not None:
                cell.entry_cpu.setdefault(index, []).append(instance.cpu_s)
    for instance in instances:
        for size, count in (instance.data.get("teams") or {}).items():
            if str(size).isdigit() and isinstance(count, int):
                cell.teams[int(size)] = cell.teams.get(int(size), 0) + count
        if isinstance(instance.data.get("regions"), int):
            cell.regions.append(instance.data["regions"])
        if isinstance(instance.data.get("time_s"), (int, float)):
            cell.kernel_times.append(float(instance.data["time_s"]))
        cell.managed.append(instance.data.get("managed"))
        cell.runtimes.append(str(instance.data.get("runtime") or ""))
        state = instance.data.get("shim_state")
        cell.shim_states.append(state if isinstance(state, int) else None)
        cell.last = instance.data


def run_study(plan: Plan, on_record: Callable[[Cell, dict[str, Any]], None], progress: JobProgress) -> Result:
    """Runs every experiment in the plan's order; a cell's records go to
    on_record (the store) as soon as its last experiment is done.
    Ctrl-C/SIGTERM: the experiment in progress is killed (and its manager
    stopped), every cell with a finished experiment is recorded, and the
    study stops."""
    return drive(plan.cells, plan.jobs, lambda cell, stop: run_experiment(plan, cell, stop), record_experiment,
                 lambda cell: cell_records(cell, plan), on_record, progress)


# ---------------------------------------------------------------- records


# threadlab-npb's "shim_state" (threadlab/omp.h TL_OMP_STATE_*).
SHIM_MANAGED, SHIM_COOPERATIVE = 2, 3

TURNAROUND_QUANTITY = ("mean turnaround of the workload's instances (start to exit of each process), "
                       "one sample per experiment")
DEDICATED_QUANTITY = "turnaround of the one instance (start to exit of the process) on a dedicated set of CPUs"
# metric -> (unit, quantity, cell attribute)
METRICS: dict[str, tuple[str, str, str]] = {
    "turnaround": ("s", TURNAROUND_QUANTITY, "mean_turnaround"),
    "turnaround_max": ("s", "longest turnaround of the workload's instances, one sample per experiment",
                       "max_turnaround"),
    "makespan": ("s", "first start to last exit of the workload, one sample per experiment", "makespan"),
    "csw_voluntary": ("switches", "voluntary context switches per instance (wait4 rusage, all its threads), "
                      "mean of the workload, one sample per experiment", "voluntary"),
    "csw_involuntary": ("switches", "involuntary context switches (preemptions) per instance (wait4 rusage, all "
                        "its threads), mean of the workload, one sample per experiment", "involuntary"),
    "cpu": ("s", "CPU time (user + system, wait4 rusage, all its threads) per instance, mean of the workload, one "
            "sample per experiment", "cpu"),
}
DEDICATED_METRICS: dict[str, tuple[str, str, str]] = {
    "time": ("s", DEDICATED_QUANTITY, "mean_turnaround"),
    "csw_voluntary": METRICS["csw_voluntary"][:2] + ("voluntary",),
    "csw_involuntary": METRICS["csw_involuntary"][:2] + ("involuntary",),
    "cpu": METRICS["cpu"],
}


def _same_library(name: str, library: str) -> bool:
    """Whether file `name` is `library` (libomp.so: libomp.so.5 too)."""
    return name == library or name.startswith(library + ".")


def _checks(cell: Cell) -> list[dict[str, Any]]:
    measured = len(cell.mean_turnaround)
    checks = run_checks(measured, cell.wrong, cell.failures, cell.runs_done,
                        wrong_what="experiments had an instance that did not verify", noun="experiments",
                        verified=f"every instance of every experiment verified its result ({cell.last.get('quantity')} "
                                 f"within {cell.last.get('tolerance')} of the reference)", verified_unmeasured=True)
    library = BASELINE_RUNTIMES.get(cell.baseline)
    if library and cell.runtimes:
        # A kernel that fell back to libgomp (libthreadlab-gomp not loaded,
        # or loaded behind libgomp; libomp not the one linked) would
        # measure the wrong runtime.
        other = [r for r in cell.runtimes if not _same_library(Path(r).name, library)]
        checks.append({"name": "runtime", "ok": not other, "value": float(len(cell.runtimes) - len(other)),
                       "detail": f"every instance ran on {library} (the library providing GOMP_parallel)"
                       if not other else f"{len(other)} of {len(cell.runtimes)} instances ran on another runtime; "
                                         f"first: {other[0] or 'unknown'}"})
    if cell.baseline == "rm" and cell.scenario and cell.scenario.fault == "stop":
        # The manager stopped mid-run: each instance ends cooperative (or
        # still managed, if it ended before the stop).
        lost = sum(1 for st in cell.shim_states if st not in (SHIM_MANAGED, SHIM_COOPERATIVE))
        checks.append({"name": "cooperative", "ok": lost == 0, "value": float(len(cell.shim_states) - lost),
                       "detail": f"every instance ended managed or cooperative (the manager stopped in "
                                 f"{cell.faults_applied} of {cell.runs_done} experiments while they ran)" if not lost
                       else f"{lost} of {len(cell.shim_states)} instances ended neither managed nor cooperative"})
    elif cell.baseline in MANAGED_BASELINES and cell.managed and not (cell.scenario and cell.scenario.fault == "stop"):
        unmanaged = sum(1 for m in cell.managed if m is not True)
        who = "the shim" if cell.baseline == "rm" else rm.ULT_LIBRARY
        checks.append({"name": "managed", "ok": unmanaged == 0, "value": float(len(cell.managed) - unmanaged),
                       "detail": f"every instance ran under the manager ({who} said managed)" if not unmanaged
                       else f"{unmanaged} of {len(cell.managed)} instances ran unmanaged (no manager found, or "
                            "the arena was full)"})
    return checks


def _extra(cell: Cell, plan: Plan) -> dict[str, Any]:
    regions = sum(cell.teams.values())
    extra: dict[str, Any] = {
        "study": STUDY, "kernel": cell.app, "baseline": cell.baseline, "degree": cell.degree,
        "cpus_used": cell.cpus, "dedicated": "yes" if cell.dedicated else "no",
        "runs_planned": plan.runs, "runs_done": cell.runs_done, "runs_failed": len(cell.failures),
        "seed": plan.seed, "program": LLVMOMP_PROGRAM if cell.baseline == "llvmomp" else PROGRAM,
        "policy": plan.policy if cell.baseline in MANAGED_BASELINES else None,
        "quantum_ms": plan.quantum_ms if cell.baseline in MANAGED_BASELINES else None,
        "other_load": plan.other_load if cell.baseline in MANAGED_BASELINES else None,
        "runtime": ",".join(sorted({Path(r).name for r in cell.runtimes if r})) or None,
        "team_min": min(cell.teams) if cell.teams else None, "team_max": max(cell.teams) if cell.teams else None,
        "team_mean": (sum(t * n for t, n in cell.teams.items()) / regions) if regions else None,
        "teams": ",".join(f"{t}:{n}" for t, n in sorted(cell.teams.items())) or None,
        "regions_per_instance": (sum(cell.regions) / len(cell.regions)) if cell.regions else None,
        "kernel_time_mean_s": (sum(cell.kernel_times) / len(cell.kernel_times)) if cell.kernel_times else None,
        "instances_turnaround": ",".join(f"{t:.6g}" for t in cell.instance_turnarounds) or None,
    }
    if cell.baseline == "static":
        shares = static_split(plan.cpus[: cell.cpus], cell.degree)
        extra["static_split"] = " ".join(",".join(map(str, share)) for share in shares)
    if cell.scenario:
        sc = cell.scenario
        extra.update({
            "scenario": sc.name, "workload": sc.workload, "fault": sc.fault_text,
            "faults_applied": cell.faults_applied if sc.fault else None,
            "unit_s": SCENARIO_UNIT_S.get(plan.size),
            "entries_turnaround_mean_s": ",".join(
                f"{sc.entries[i].kernel}#{i}:{sum(v) / len(v):.6g}" for i, v in sorted(cell.entry_turnarounds.items())
                if v) or None,
        })
    return extra


def _params(cell: Cell, plan: Plan) -> dict[str, str]:
    if cell.dedicated:
        return {"mode": "dedicated", "threads": str(cell.cpus), "size": plan.size}
    if cell.scenario:
        params = {"scenario": cell.scenario.name, "workload": cell.scenario.workload, "size": plan.size}
        if cell.scenario.fault_text:
            params["fault"] = cell.scenario.fault_text
        return params
    params = {"degree": str(cell.degree), "size": plan.size}
    if plan.stagger_s:
        params["stagger_s"] = f"{plan.stagger_s:g}"
    return params


def cell_records(cell: Cell, plan: Plan) -> list[dict[str, Any]]:
    """The cell's records, one per metric; samples: one per experiment, in
    the order run."""
    records = []
    specs = DEDICATED_METRICS if cell.dedicated else METRICS
    series = [(metric, unit, quantity, getattr(cell, attribute))
              for metric, (unit, quantity, attribute) in specs.items()]
    if cell.scenario:  # each program's own turnaround (the late arrival's table needs EP's and CG's) and CPU time
        for index, entry in enumerate(cell.scenario.entries):
            if cell.scenario.measured(index):
                series.append((f"turnaround.{index}.{entry.kernel}", "s",
                               f"turnaround of program {index} ({entry.kernel}, started at {entry.at_s:g} s), "
                               "one sample per experiment", cell.entry_turnarounds.get(index, [])))
                if index in cell.entry_cpu:
                    series.append((f"cpu.{index}.{entry.kernel}", "s",
                                   f"CPU time (user + system, wait4 rusage) of program {index} ({entry.kernel}, "
                                   f"started at {entry.at_s:g} s), one sample per experiment", cell.entry_cpu[index]))
    for metric, unit, quantity, values in series:
        record = new_record(
            BENCHMARK_PREFIX + cell.app, cell.baseline, metric=metric, params=_params(cell, plan),
            placement="unbound", cpus=[], unit=unit, quantity=quantity, extra=_extra(cell, plan),
        )
        records.append(cell_record(record, values, clock="monotonic", runs=plan.runs,
                                   elapsed_s=sum(cell.makespan), checks=lambda: _checks(cell),
                                   failures=cell.failures, runs_done=cell.runs_done,
                                   nothing="no experiment completed"))
    return records


def is_study_record(record: Mapping[str, Any]) -> bool:
    return str(record.get("benchmark", "")).startswith(BENCHMARK_PREFIX)


def dry_run_lines(plan: Plan) -> Iterable[str]:
    """--dry-run: one line per cell, with the environment of its instances."""
    import shlex

    for cell in plan.cells:
        private = Path(tempfile.gettempdir()) / (rm.private_prefix() + "XXXXXX")  # made per experiment
        starts = launches(cell, plan, private if cell.baseline in MANAGED_BASELINES else None)
        shown = []
        for launch in starts[:2] if not cell.scenario else starts:
            keys = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_DYNAMIC", "GOMP_SPINCOUNT", rm.DIR_ENV)
            env = " ".join(f"{k}={launch.env[k]}" for k in keys if k in launch.env)
            cpus = f"taskset -c {rm.cpu_list(launch.affinity)} " if launch.affinity is not None else ""
            at = f"at {launch.at_s:g} s: " if launch.at_s else ""
            shown.append(f"{at}{env} {cpus}{shlex.join(launch.argv)}")
        more = f"  (+{len(starts) - 2} more)" if len(starts) > len(shown) else ""
        manager = (f"# threadlab-rm --policy {plan.policy} --quantum-ms {plan.quantum_ms} --other-load {plan.other_load} "
                   f"--cpus {rm.cpu_list(plan.cpus[: cell.cpus])} --owner {os.getpid()}\n"
                   if cell.baseline in MANAGED_BASELINES else "")
        fault = f", {cell.scenario.fault_text}" if cell.scenario and cell.scenario.fault_text else ""
        yield f"{manager}# {cell.label}: {len(starts)} instance(s){fault}\n" + "\n".join(shown) + more
