"""`threadlab bench`: run benchmarks over their sweep and store their
records (docs/commands/bench.md).  The stored run's life cycle is
run.lifecycle; each point is run by run.runner."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from threadlab import vocabulary
from threadlab.cli.options import (EXIT_OK, PROG, ArgumentParser, db_path, number, placement_list,
                                   selected_benchmarks, show_number, split_patterns, suite_list)
from threadlab.errors import ThreadlabError, UserError
from threadlab.native import launcher
from threadlab.native.protocol import BenchmarkInfo, PointOptions, native_options
from threadlab.output.table import make_console, render_results
from threadlab.records.store import validate_run_name
from threadlab.run import environment, lifecycle, runner
from threadlab.run.progress import Progress

DEFAULT_TIMEOUT_S = 120.0
QUICK_TIMEOUT_S = 30.0
# Default time limit of one point per suite (normal, --quick) where it
# differs from the above: a JVM point of the seed's method (31 single shots
# of 100,000 platform threads, plus JVM start-up) takes minutes; a models
# point of the process model forks up to 100,000 processes per sample.
SUITE_TIMEOUTS_S: dict[str, tuple[float, float]] = {"jvm": (1800.0, 300.0), "go": (600.0, 120.0), "models": (600.0, 120.0)}


def suite_timeout(suite: str, quick: bool) -> float:
    normal, short = SUITE_TIMEOUTS_S.get(suite, (DEFAULT_TIMEOUT_S, QUICK_TIMEOUT_S))
    return short if quick else normal


class _NativeValue:
    """The type of an adaptive option: its value, checked against the range
    the native programs state (protocol.native_options)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.__name__ = name  # argparse names the type in some messages

    def __call__(self, text: str) -> Any:
        return native_options()[self.name].parse(text)


class _NativeHelp:
    """The help of an adaptive option, asked of the native programs when
    --help is printed (argparse formats it with `%`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _text(self) -> str:
        try:
            return native_options()[self.name].help_text()
        except ThreadlabError:
            return "an option of the native programs' adaptive loop (its range and defaults: their --options; none " \
                   "is built here)"

    def strip(self) -> str:
        return self._text()

    def __bool__(self) -> bool:
        return True

    def __mod__(self, params: Any) -> str:
        return self._text().replace("%", "%%") % params


def register(commands: Any, common: ArgumentParser) -> None:
    bench = commands.add_parser(
        "bench",
        parents=[common],
        help="run benchmarks and store their records",
        description="Run the selected benchmarks over their parameter and placement sweep. Each data point "
        "runs in its own process; its records are validated and stored as they arrive. A live progress "
        "line goes to stderr; the results table to stdout.",
        epilog="exit status: 0 all points measured or unsupported, 1 a point failed, 2 bad usage, "
        "130 interrupted by Ctrl-C (what was measured is kept).",
    )
    bench.set_defaults(handler=cmd_bench)
    bench.add_argument(
        "--filter", action="append", metavar="GLOB",
        help="benchmarks to run: shell pattern on the name, repeatable or comma-separated; "
        "'pthread.mutex' also selects pthread.mutex.* (default: all)",
    )
    bench.add_argument(
        "--placement", type=placement_list, metavar="LIST",
        help=f"placements of threaded benchmarks, comma-separated from {', '.join(vocabulary.PLACEMENTS)}; one a "
        "benchmark cannot do is recorded as unsupported (default: each benchmark's own sweep)",
    )
    bench.add_argument(
        "--suite", type=suite_list, metavar="LIST",
        help=f"suites to run, comma-separated from {', '.join(vocabulary.SUITES)}, or all: primitives (the POSIX "
        "threads primitives), models (C thread models), jvm (platform and virtual threads, JMH), go (goroutines), "
        "mpi (mixed MPI + threads, through --launcher), omp (OpenMP directives on each runtime), spawn (MPI "
        f"spawned tasks: threads of libthreadlab-spawn against processes) (default {vocabulary.DEFAULT_SUITE})",
    )
    bench.add_argument(
        "--launcher", type=launcher.parse, metavar="CMD",
        help="mpi suite: the command that starts each point's ranks, e.g. 'mpirun -np 4 --hostfile hosts' or "
        "'srun' (default: srun inside a Slurm allocation, else the MPI's own mpirun with one rank per CPU here)",
    )
    bench.add_argument("--quick", action="store_true", help="quick sweep: fewer values, shorter budgets (about a minute)")
    # The adaptive loop's options: their ranges, defaults and help are the C
    # programs' (`--options`), asked when a value is given or --help shown.
    for name in vocabulary.ADAPTIVE_OPTIONS:
        bench.add_argument("--" + name.replace("_", "-"), type=_NativeValue(name), help=_NativeHelp(name))
    bench.add_argument(
        "--iterations", type=number("--iterations", int, 1, 100000), metavar="N",
        help="jvm and go suites: measured iterations per point, 1..100000 (default 30, as in de Souto's JMH study of Java threads; 5 with --quick)",
    )
    bench.add_argument(
        "--forks", type=number("--forks", int, 0, 100), metavar="N",
        help="jvm suite: JMH forks per point, each a fresh JVM running all the iterations; 0 runs in the "
        "harness JVM (default 1)",
    )
    bench.add_argument(
        "--timeout", type=number("--timeout", float, 1, 86400, "seconds"), metavar="S",
        help=f"a point running longer is killed and recorded as failed, 1..86400 s "
        f"(default {show_number(DEFAULT_TIMEOUT_S)} s, {show_number(QUICK_TIMEOUT_S)} s with --quick; jvm suite "
        f"{show_number(SUITE_TIMEOUTS_S['jvm'][0])} s ({show_number(SUITE_TIMEOUTS_S['jvm'][1])} s), go suite "
        f"{show_number(SUITE_TIMEOUTS_S['go'][0])} s ({show_number(SUITE_TIMEOUTS_S['go'][1])} s))",
    )
    bench.add_argument("--name", metavar="NAME", help="a name for the run, usable wherever a RUN is asked (default: none)")
    bench.add_argument(
        "--json", metavar="FILE",
        help="also write every record as JSON Lines to FILE, line by line as measured ('-' = stdout; "
        "the table then goes to stderr)",
    )
    bench.add_argument("--quiet", "-q", action="store_true", help="no progress or warnings on stderr")
    bench.add_argument("--dry-run", action="store_true", help="print the points that would run, and stop")




_FIXED_HINT = "use --iterations N and --warmup N (and --forks N for jvm)"
_ADAPTIVE_HINT = "use --warmup, --min-timings and --max-timings"


def _check_suite_options(args: argparse.Namespace, suites: Sequence[str]) -> None:
    """Every measurement option given must apply to a selected suite."""
    for name in ("rule", "target", "min_timings", "max_timings", "min_timing_ms", "max_seconds", "clock",
                 "iterations", "forks"):
        if getattr(args, name, None) is None:
            continue
        if any(name in vocabulary.suite_options(suite) for suite in suites):
            continue
        flag = "--" + name.replace("_", "-")
        fixed = all(suite in vocabulary.SUITE_OPTIONS for suite in suites)
        hint = (f"the {', '.join(suites)} suite{'s run' if len(suites) > 1 else ' runs'} a fixed number of "
                f"iterations: {_FIXED_HINT}") if fixed else (
                f"it applies to the {' and '.join(s for s, o in vocabulary.SUITE_OPTIONS.items() if name in o)} "
                f"suite; the {', '.join(suites)} suite{'s stop' if len(suites) > 1 else ' stops'} adaptively: "
                f"{_ADAPTIVE_HINT}")
        raise UserError(f"{flag} does not apply to the selected suites ({', '.join(suites)}): {hint}")


def _point_options(args: argparse.Namespace) -> PointOptions:
    options = PointOptions(
        quick=args.quick, rule=args.rule, target=args.target, warmup=args.warmup,
        min_timings=args.min_timings, max_timings=args.max_timings,
        min_timing_ms=args.min_timing_ms, max_seconds=args.max_seconds, clock=args.clock,
        iterations=args.iterations, forks=args.forks,
    )
    if options.min_timings is None and options.max_timings is None:
        return options  # the programs' own defaults agree
    table = native_options()
    low = options.min_timings if options.min_timings is not None else int(table["min_timings"].default_for(args.quick))
    high = options.max_timings if options.max_timings is not None else int(table["max_timings"].default_for(args.quick))
    if high < low:
        which = "--min-timings" if options.min_timings is not None else "the default --min-timings"
        raise UserError(f"--max-timings {high}: expected at least {which} ({low})")
    return options


# ---------------------------------------------------------------- commands


@dataclass
class _Plan:
    """What `bench` will do, settled before anything is written."""

    options: PointOptions
    timeout_s: float  # the longest of timeouts
    name: str | None
    selected: list[BenchmarkInfo]
    programs: dict[str, Path]
    points: list[runner.Point]
    suites: list[str]
    timeouts: dict[str, float]  # per suite
    mpi_program: Path | None = None  # the mpi suite's program, when the suite runs

    def timeout_for(self, point: runner.Point) -> float:
        return self.timeouts.get(point.info.suite, self.timeout_s)

    def timeout_text(self) -> str:
        if len(set(self.timeouts.values())) <= 1:
            return f"timeout {show_number(self.timeout_s)} s per point"
        return "timeouts per point: " + ", ".join(f"{suite} {show_number(s)} s" for suite, s in self.timeouts.items())


def _plan(args: argparse.Namespace) -> _Plan:
    programs, selected = selected_benchmarks(split_patterns(args.filter), args.suite or [vocabulary.DEFAULT_SUITE])
    suites = list(dict.fromkeys(info.suite for info in selected))
    _check_suite_options(args, suites)
    options = _point_options(args)
    timeouts = {suite: args.timeout or suite_timeout(suite, args.quick) for suite in suites}
    name = validate_run_name(args.name) if args.name is not None else None
    by_name = {program.name: program for program in programs}
    mpi_program, options = _launch_plan(args, selected, by_name, options)
    points = runner.expand_sweep(selected, by_name, args.placement, args.quick)
    longest = max(timeouts.values(), default=args.timeout or suite_timeout(vocabulary.DEFAULT_SUITE, args.quick))
    return _Plan(options, longest, name, selected, by_name, points, suites, timeouts, mpi_program)


def _launch_plan(args: argparse.Namespace, selected: Sequence[BenchmarkInfo], programs: dict[str, Path],
                 options: PointOptions) -> tuple[Path | None, PointOptions]:
    """The launched suites' program and launcher (docs/mpi.md)."""
    launched = [info for info in selected if info.suite in vocabulary.LAUNCHED_SUITES]
    if not launched:
        if args.launcher:
            raise UserError(f"--launcher applies to the {', '.join(vocabulary.LAUNCHED_SUITES)} suite, which this run "
                            "does not include (add --suite mpi)")
        return None, options
    program = programs[launched[0].program]
    words = args.launcher or launcher.default(program)
    return program, dataclasses.replace(options, launcher=tuple(words))


def _environment(args: argparse.Namespace, plan: _Plan, hosts: dict[str, Any] | None) -> dict[str, Any]:
    """The run's environment; hosts: the mpi suite's (launcher.probe_hosts)."""
    used = [plan.programs[p] for p in dict.fromkeys(info.program for info in plan.selected)]
    env = environment.collect(used, args.clock)
    if hosts is not None:
        env["mpi"] = hosts
    return env


def cmd_bench(args: argparse.Namespace) -> int:
    plan = _plan(args)
    if args.dry_run:
        for point in plan.points:
            print(shlex.join(point.argv(plan.options)))
        print(f"{len(plan.points)} points of {len(plan.selected)} benchmarks", file=sys.stderr)
        return EXIT_OK
    # A launcher that cannot start the job fails here, before anything is stored.
    hosts = launcher.probe_hosts(plan.options.launcher or (), plan.mpi_program) if plan.mpi_program else None
    spec = lifecycle.RunSpec(
        name=plan.name, command=[PROG, *args.argv],
        options={**plan.options.as_dict(), "timeout_s": plan.timeout_s, "filters": args.filter,
                 "placements": args.placement, "suites": plan.suites, "timeouts_s": plan.timeouts},
        catalog=[info.as_dict() for info in plan.selected], planned=len(plan.points),
        header=f"{len(plan.points)} points of {len(plan.selected)} benchmarks, {plan.timeout_text()}",
        environment=lambda: _environment(args, plan, hosts), records_to=args.json,
    )
    progress = Progress(plan.points, enabled=not args.quiet)
    finished = lifecycle.stored_run(
        db_path(args), spec, progress,
        lambda keep: runner.run_sweep(plan.points, plan.options, plan.timeout_for, keep, progress),
    )
    result = finished.result
    console = make_console(sys.stderr if args.json == "-" else None)
    render_results(console, result.records, spec.catalog, title=f"Results of {finished.label}")
    counts = {s: sum(1 for r in result.records if r["status"] == s) for s in vocabulary.RECORD_STATUSES}
    return lifecycle.epilogue(
        finished, quiet=args.quiet, summary=f"{counts['ok']} ok, {counts['unsupported']} unsupported, "
        f"{counts['failed']} failed", done=f"{result.done} points", kept="the measured points are stored",
        failed=bool(counts["failed"]),
    )
