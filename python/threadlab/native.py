"""The native benchmark programs: where they are, what they offer, how a
data point is asked of them (docs/native-protocol.md).

Each program (build/bin/threadlab-bench-*) answers:
  --list   one JSON object per benchmark (name, params, placements, ...)
  --env    one JSON object describing its build, clock and topology
  --run    records of one data point, JSON Lines on stdout
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from threadlab import process
from threadlab.errors import ThreadlabError

PROGRAM_PREFIX = "threadlab-bench-"
NATIVE_DIR_ENV = "THREADLAB_NATIVE_DIR"
PLACEMENTS: tuple[str, ...] = ("unbound", "same-cpu", "different-cpus")
CLOCKS: tuple[str, ...] = ("auto", "tsc", "monotonic_raw")
RULES: tuple[str, ...] = ("rsd", "rse")
# The native programs' defaults (default_options() in native/core/main.c,
# reported by `--env` as "defaults"), for --help and to refuse a
# --max-timings below the --min-timings in effect before a run starts.
# tests/test_native_defaults.py fails when the two disagree.
NATIVE_DEFAULTS: dict[bool, dict[str, float]] = {
    False: {"target": 0.05, "warmup": 2, "min_timings": 10, "max_timings": 200, "min_timing_ms": 1.0, "max_seconds": 2.0},
    True: {"target": 0.05, "warmup": 1, "min_timings": 3, "max_timings": 10, "min_timing_ms": 0.2, "max_seconds": 0.15},
}
# --list and --env do no measuring; a program that takes longer is broken.
_QUERY_TIMEOUT_S = 60.0

# Suites: which programs a `bench` runs (`--suite`).  A program says the suite
# of each benchmark in its --list ("suite"; absent = primitives).  The
# primitives and models suites are the C programs with adaptive repetition;
# the jvm and go suites run a fixed number of iterations (JMH's method, the
# seed's: warm-up, then N measured) and take other measurement options.
# The spawn suite (threadlab-bench-spawn, docs/spawn.md) is adaptive: the
# cost of a spawned task and of a message, thread tasks against processes.
DEFAULT_SUITE = "primitives"
SUITES: tuple[str, ...] = ("primitives", "models", "jvm", "go", "mpi", "omp", "spawn")
# Suites whose every point is started by a launcher (mpirun, srun: the
# PointOptions' launcher words before the program; docs/mpi.md).
LAUNCHED_SUITES: tuple[str, ...] = ("mpi",)
ADAPTIVE_OPTIONS: tuple[str, ...] = (
    "rule", "target", "warmup", "min_timings", "max_timings", "min_timing_ms", "max_seconds", "clock",
)
# The options each suite's programs accept (PointOptions fields); a suite
# not named here takes ADAPTIVE_OPTIONS.
SUITE_OPTIONS: dict[str, tuple[str, ...]] = {
    "jvm": ("warmup", "iterations", "forks"),
    "go": ("warmup", "iterations"),
}


def suite_options(suite: str) -> tuple[str, ...]:
    return SUITE_OPTIONS.get(suite, ADAPTIVE_OPTIONS)


def repository_root() -> Path:
    """The source tree this package lives in (python/threadlab/native.py)."""
    return Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ParamInfo:
    name: str
    help: str
    values: tuple[str, ...]
    quick_values: tuple[str, ...]

    @property
    def default(self) -> str:
        """The value the program uses when none is given (its first)."""
        return self.values[0] if self.values else ""


@dataclass(frozen=True)
class BenchmarkInfo:
    """One benchmark as a program lists it."""

    benchmark: str
    model: str
    summary: str
    quantity: str
    unit: str
    threads: int
    placements: tuple[str, ...]
    default_placements: tuple[str, ...]
    params: tuple[ParamInfo, ...]
    program: str = field(default="")  # the program's file name
    suite: str = field(default=DEFAULT_SUITE)  # the suite that runs it (--suite)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], program: str | None = None) -> BenchmarkInfo:
        """From a --list line (or the catalog stored with a run)."""
        params = tuple(
            ParamInfo(
                name=str(p["name"]),
                help=str(p.get("help", "")),
                values=tuple(map(str, p.get("values", []))),
                quick_values=tuple(map(str, p.get("quick_values", []))),
            )
            for p in data.get("params", [])
        )
        return cls(
            benchmark=str(data["benchmark"]),
            model=str(data["model"]),
            summary=str(data.get("summary", "")),
            quantity=str(data.get("quantity", "")),
            unit=str(data.get("unit", "ns")),
            threads=int(data.get("threads", 0)),
            placements=tuple(data.get("placements", [])),
            default_placements=tuple(data.get("default_placements", [])),
            params=params,
            program=program if program is not None else str(data.get("program", "")),
            suite=str(data.get("suite") or DEFAULT_SUITE),
        )

    def param(self, name: str) -> ParamInfo | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass(frozen=True)
class PointOptions:
    """Measurement options passed to every point; None = the program's
    default (which differs with --quick), so the record states the value
    actually used."""

    quick: bool = False
    rule: str | None = None
    target: float | None = None
    warmup: int | None = None
    min_timings: int | None = None
    max_timings: int | None = None
    min_timing_ms: float | None = None
    max_seconds: float | None = None
    clock: str | None = None
    # Fixed-iteration suites (jvm, go): measured iterations, JMH forks.
    iterations: int | None = None
    forks: int | None = None
    # The launcher of the LAUNCHED_SUITES' points: its words.
    launcher: tuple[str, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def argv(self, suite: str = DEFAULT_SUITE) -> list[str]:
        """The options for a program of this suite: those it accepts
        (suite_options) that are set."""
        args: list[str] = ["--quick"] if self.quick else []
        for name in suite_options(suite):
            value = getattr(self, name)
            if value is not None:
                args += ["--" + name.replace("_", "-"), str(value)]
        return args


def native_dirs() -> list[Path]:
    """Where programs are looked for: $THREADLAB_NATIVE_DIR alone when set,
    else the source tree's build/bin, then $PATH."""
    override = os.environ.get(NATIVE_DIR_ENV)
    if override:
        return [Path(override)]
    dirs = [repository_root() / "build" / "bin"]
    dirs += [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    return dirs


def discover_programs() -> list[Path]:
    """Every threadlab-bench-* executable of the first directory holding any."""
    searched = native_dirs()
    for directory in searched:
        if not directory.is_dir():
            continue
        found = sorted(
            path
            for path in directory.glob(PROGRAM_PREFIX + "*")
            if path.is_file() and os.access(path, os.X_OK)
        )
        if found:
            return found
    where = ", ".join(str(d) for d in searched[:3]) + (" and $PATH" if len(searched) > 3 else "")
    hint = f"set {NATIVE_DIR_ENV}" if os.environ.get(NATIVE_DIR_ENV) else f"build them with `make` or set {NATIVE_DIR_ENV}"
    raise ThreadlabError(f"no native benchmark programs ({PROGRAM_PREFIX}*) in {where}; {hint}")


def _query(program: Path, *args: str) -> list[str]:
    """Non-empty stdout lines of a --list/--env query."""
    command = f"{program.name} {' '.join(args)}"
    try:
        done = process.run([program, *args], timeout_s=_QUERY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ThreadlabError(f"{command} did not answer within {_QUERY_TIMEOUT_S:.0f} s") from None
    except OSError as error:
        raise ThreadlabError(f"cannot start {program}: {error.strerror}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise ThreadlabError(f"{command} failed with exit status {done.returncode}: {last}")
    return [line for line in done.stdout.splitlines() if line.strip()]


def _parse_object(program: Path, option: str, number: int, line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise ThreadlabError(f"{program.name} {option}, line {number}: not JSON ({error.msg})") from None
    if not isinstance(value, dict):
        raise ThreadlabError(f"{program.name} {option}, line {number}: expected a JSON object")
    return value


def list_benchmarks(program: Path) -> list[BenchmarkInfo]:
    """The benchmarks one program offers, in its order."""
    benchmarks = []
    for number, line in enumerate(_query(program, "--list"), start=1):
        data = _parse_object(program, "--list", number, line)
        try:
            benchmarks.append(BenchmarkInfo.from_dict(data, program=program.name))
        except (KeyError, TypeError, ValueError) as error:
            raise ThreadlabError(f"{program.name} --list, line {number}: bad entry ({error!r})") from None
    return benchmarks


def catalog(programs: Iterable[Path]) -> list[BenchmarkInfo]:
    """Every benchmark of every program.  Programs of several thread models
    share benchmark names (docs/thread-models.md), so a benchmark is a
    (name, model) pair: one offered twice is an error."""
    seen: dict[tuple[str, str], str] = {}
    result: list[BenchmarkInfo] = []
    for program in programs:
        for info in list_benchmarks(program):
            key = (info.benchmark, info.model)
            if key in seen:
                raise ThreadlabError(
                    f"benchmark {info.benchmark} (model {info.model}) is offered by both {seen[key]} and {program.name}"
                )
            seen[key] = program.name
            result.append(info)
    return result


def program_env(program: Path, clock: str | None = None) -> dict[str, Any]:
    """The program's --env object: build, clock and topology."""
    args = ["--env"] + (["--clock", clock] if clock else [])
    lines = _query(program, *args)
    if len(lines) != 1:
        raise ThreadlabError(f"{program.name} --env printed {len(lines)} lines, expected one JSON object")
    return _parse_object(program, "--env", 1, lines[0])


def point_argv(
    program: Path, benchmark: str, placement: str | None, params: dict[str, str], options: PointOptions,
    suite: str = DEFAULT_SUITE,
) -> list[str]:
    """The command line of one data point (after its launcher's words in a
    launched suite)."""
    launcher = list(options.launcher or ()) if suite in LAUNCHED_SUITES else []
    argv = [*launcher, str(program), "--run", benchmark]
    if placement is not None:
        argv += ["--placement", placement]
    for name, value in params.items():
        argv += ["--param", f"{name}={value}"]
    return argv + options.argv(suite)

