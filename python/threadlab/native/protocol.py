"""The native protocol from Python (docs/native-protocol.md): what a
program offers, what a data point is asked of it, which options it takes.

Every program the front end runs answers:
  --list     one JSON object per benchmark (name, params, placements, ...)
  --env      one JSON object describing its build, clock and topology
  --options  one JSON object per option of its adaptive loop: name, kind,
             range, default and --quick default (the C timing core's table,
             native/core/options.c: stated there once, read here)
  --run      records of one data point, JSON Lines on stdout
Programs are found, and questions asked, by threadlab.native.discovery.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from threadlab import vocabulary
from threadlab.errors import ThreadlabError, UserError
from threadlab.native import discovery

# The primitives suite's program: its --env knows the topology, the clock
# and the compiler of the build, its --options the adaptive loop's.
REFERENCE_PROGRAM = "threadlab-bench-posix"


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
    suite: str = field(default=vocabulary.DEFAULT_SUITE)  # the suite that runs it (--suite)

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
            suite=str(data.get("suite") or vocabulary.DEFAULT_SUITE),
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
    # The launcher of the launched suites' points (vocabulary.LAUNCHED_SUITES): its words.
    launcher: tuple[str, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def argv(self, suite: str = vocabulary.DEFAULT_SUITE) -> list[str]:
        """The options for a program of this suite: those it accepts
        (suite_options) that are set."""
        args: list[str] = ["--quick"] if self.quick else []
        for name in vocabulary.suite_options(suite):
            value = getattr(self, name)
            if value is not None:
                args += ["--" + name.replace("_", "-"), str(value)]
        return args


def list_benchmarks(program: Path) -> list[BenchmarkInfo]:
    """The benchmarks one program offers, in its order."""
    benchmarks = []
    for number, data in enumerate(discovery.query_json(program, "--list"), start=1):
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
    listed = list(programs)
    # Asked side by side: each answer is a process start (the JVM suite's
    # launchers start a Python producer each), and one after the other they
    # took most of `threadlab list`'s time.  map gives the answers in the
    # programs' order: the first error in that order is the one raised.
    with ThreadPoolExecutor(max_workers=min(8, len(listed) or 1)) as pool:
        answers = list(pool.map(list_benchmarks, listed))
    for program, answer in zip(listed, answers):
        for info in answer:
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
    objects = discovery.query_json(program, *args)
    if len(objects) != 1:
        raise ThreadlabError(f"{program.name} --env printed {len(objects)} lines, expected one JSON object")
    return objects[0]


def point_argv(
    program: Path, benchmark: str, placement: str | None, params: dict[str, str], options: PointOptions,
    suite: str = vocabulary.DEFAULT_SUITE,
) -> list[str]:
    """The command line of one data point (after its launcher's words in a
    launched suite)."""
    launcher = list(options.launcher or ()) if suite in vocabulary.LAUNCHED_SUITES else []
    argv = [*launcher, str(program), "--run", benchmark]
    if placement is not None:
        argv += ["--placement", placement]
    for name, value in params.items():
        argv += ["--param", f"{name}={value}"]
    return argv + options.argv(suite)


# ------------------------------------------------- the measurement options


def _show(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class NativeOption:
    """One option of the adaptive loop, as the C programs state it
    (`--options`, native/core/options.c): its kind, range and defaults."""

    name: str  # PointOptions' field: "min_timings"
    option: str  # "--min-timings"
    kind: str  # "choice", "integer" or "number"
    choices: tuple[str, ...]
    low: float | None
    high: float | None
    default: Any
    quick_default: Any
    unit: str  # of the defaults in help: " ms", " s" or ""
    help: str
    meaning: str  # what a value is, for the error on a bad one

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NativeOption:
        return cls(
            name=str(data["name"]), option=str(data["option"]), kind=str(data["kind"]),
            choices=tuple(map(str, data.get("choices") or ())), low=data.get("min"), high=data.get("max"),
            default=data["default"], quick_default=data["quick_default"], unit=str(data.get("unit") or ""),
            help=str(data.get("help") or ""), meaning=str(data.get("meaning") or ""),
        )

    def parse(self, text: str) -> Any:
        """The value of the option given as text; UserError naming what is
        accepted."""
        if self.kind == "choice":
            if text not in self.choices:
                raise UserError(f"{self.option} {text}: expected one of {', '.join(self.choices)}")
            return text
        kind = int if self.kind == "integer" else float
        try:
            value = kind(text)
        except ValueError:
            value = None
        assert self.low is not None and self.high is not None
        if value is None or not math.isfinite(value) or not self.low <= value <= self.high:
            noun = "an integer" if kind is int else "a number"
            hint = f" ({self.meaning})" if self.meaning else ""
            raise UserError(f"{self.option} {text}: expected {noun} from {_show(self.low)} to {_show(self.high)}{hint}")
        return value

    def default_for(self, quick: bool) -> Any:
        return self.quick_default if quick else self.default

    def help_text(self) -> str:
        """The option's help: what it does, its range and its defaults."""
        if self.kind == "choice":
            return f"{self.help} (default {self.default})"
        normal, quick = _show(self.default), _show(self.quick_default)
        defaults = f"default {normal}{self.unit}" + ("" if normal == quick else f", {quick}{self.unit} with --quick")
        return f"{self.help}, {_show(self.low or 0)}..{_show(self.high or 0)} ({defaults})"


def native_options() -> dict[str, NativeOption]:
    """The adaptive loop's options, as the build's C programs state them:
    asked of the primitives suite's program when it is built, else of the
    first benchmark program that answers `--options`."""
    programs = discovery.benchmark_programs()
    ordered = sorted(programs, key=lambda p: p.name != REFERENCE_PROGRAM)
    failure: ThreadlabError | None = None
    for program in ordered:
        try:
            return _options_of(program)
        except ThreadlabError as error:  # a peer's launcher (jvm, go) has no --options
            failure = failure or error
    raise ThreadlabError(f"no benchmark program here states the measurement options (--options): {failure}")


@lru_cache(maxsize=8)
def _options_of(program: Path) -> dict[str, NativeOption]:
    return {option.name: option for option in map(NativeOption.from_dict, discovery.query_json(program, "--options"))}

