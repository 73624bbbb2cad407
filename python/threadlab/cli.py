"""The `threadlab` command: bench, list, runs, show, crosscheck, compare,
import, export, report (docs/commands/).

Every user mistake ends in one line, `threadlab: error: ...`, naming the
bad value and what is accepted, with exit status 2 and no traceback.
Exit status 1 means something threadlab depends on failed (a native
program, the store, an output that was closed or could not be written)
or, for `bench`, that a data point failed.

Start-up stays light: numpy, scipy, jsonschema, rich and matplotlib are
imported by the commands that use them, not for `--help` or `--version`.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import math
import os
import shlex
import signal
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from threadlab import __version__, compare, crosscheck, environment, launcher, native, runner, schema, stats, transfer
from threadlab.errors import ThreadlabError, UserError
from threadlab.native import NATIVE_DEFAULTS, PLACEMENTS, BenchmarkInfo, PointOptions
from threadlab.output import OutputClosed, OutputFile, write_output
from threadlab.progress import Progress
from threadlab.sanitize import printable, printable_lines
from threadlab.store import NoStore, Store, default_db_path, user_data_db_path, validate_run_name
from threadlab import rm_cli, spawn_cli
from threadlab.study import cli as study_cli
from threadlab.table import make_console, render_results
from threadlab.units import format_duration

PROG = "threadlab"
DEFAULT_TIMEOUT_S = 120.0
QUICK_TIMEOUT_S = 30.0
# Default time limit of one point per suite (normal, --quick) where it
# differs from the above: a JVM point of the seed's method (31 single shots
# of 100,000 platform threads, plus JVM start-up) takes minutes; a models
# point of the process model forks up to 100,000 processes per sample.
SUITE_TIMEOUTS_S: dict[str, tuple[float, float]] = {"jvm": (1800.0, 300.0), "go": (600.0, 120.0), "models": (600.0, 120.0)}
DEFAULT_RUNS_LIMIT = 20
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


# ------------------------------------------------------------ option types


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports through UserError: one line, exit status 2."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise UserError(f"{message} (see `{self.prog} --help`)")


def _show(value: float) -> str:
    return f"{value:g}"


def number(option: str, kind: type, low: float, high: float, meaning: str = "") -> Callable[[str], Any]:
    """An option's value parser refusing anything outside [low, high]."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or not low <= value <= high:
            noun = "an integer" if kind is int else "a number"
            hint = f" ({meaning})" if meaning else ""
            raise UserError(f"{option} {text}: expected {noun} from {_show(low)} to {_show(high)}{hint}")
        return value

    return parse


def choice(option: str, accepted: Sequence[str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in accepted:
            raise UserError(f"{option} {text}: expected one of {', '.join(accepted)}")
        return text

    return parse


def placement_list(text: str) -> list[str]:
    """--placement unbound,same-cpu: the placements in the order given."""
    names = [name.strip() for name in text.split(",")]
    for name in names:
        if name not in PLACEMENTS:
            shown = name or "(empty)"
            raise UserError(
                f"--placement {text}: unknown placement '{shown}'; accepted: {', '.join(PLACEMENTS)} (comma-separated)"
            )
    return list(dict.fromkeys(names))


def suite_list(text: str) -> list[str]:
    """--suite jvm,go: the suites in the order given; ['all']: every suite
    that has programs here."""
    names = [name.strip() for name in text.split(",")]
    if names == [ALL_SUITES]:
        return names
    for name in names:
        if name not in native.SUITES:
            shown = name or "(empty)"
            raise UserError(
                f"--suite {text}: unknown suite '{shown}'; accepted: {', '.join(native.SUITES)} or all (comma-separated)"
            )
    return list(dict.fromkeys(names))


ALL_SUITES = "all"


def suite_timeout(suite: str, quick: bool) -> float:
    normal, short = SUITE_TIMEOUTS_S.get(suite, (DEFAULT_TIMEOUT_S, QUICK_TIMEOUT_S))
    return short if quick else normal


def split_patterns(values: Sequence[str] | None) -> list[str]:
    """--filter a,b --filter c -> [a, b, c]."""
    patterns = [p.strip() for value in values or [] for p in value.split(",")]
    if any(not p for p in patterns):
        raise UserError("--filter: empty pattern (expected GLOB[,GLOB...], e.g. 'pthread.mutex.*')")
    return patterns


def matches(name: str, pattern: str) -> bool:
    """fnmatch on the name; a pattern also selects the names below it
    ('pthread.mutex' selects 'pthread.mutex.pingpong')."""
    return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + ".*")


def _suggestion(catalog: Sequence[BenchmarkInfo], pattern: str) -> str:
    """' (did you mean '*mutex*'? ...)' when the pattern occurs inside names."""
    wider = f"*{pattern.strip('*')}*"
    count = sum(1 for info in catalog if fnmatch.fnmatchcase(info.benchmark, wider))
    return f" (did you mean '{wider}'? it selects {count})" if count else ""


def select_benchmarks(catalog: Sequence[BenchmarkInfo], patterns: Sequence[str]) -> list[BenchmarkInfo]:
    """The benchmarks the filters select, in catalog order; a filter that
    selects nothing is refused with the list of valid names."""
    if not patterns:
        return list(catalog)
    for pattern in patterns:
        if not any(matches(info.benchmark, pattern) for info in catalog):
            names = "\n".join(f"  {info.benchmark}" for info in catalog)
            raise UserError(f"--filter '{pattern}' matches no benchmark{_suggestion(catalog, pattern)}; valid names:\n{names}")
    return [info for info in catalog if any(matches(info.benchmark, p) for p in patterns)]


# ------------------------------------------------------------------ parser


def _defaults_text(key: str, unit: str = "") -> str:
    normal, quick = NATIVE_DEFAULTS[False][key], NATIVE_DEFAULTS[True][key]
    if normal == quick:
        return f"default {_show(normal)}{unit}"
    return f"default {_show(normal)}{unit}, {_show(quick)}{unit} with --quick"


def build_parser() -> ArgumentParser:
    common = ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help=f"the SQLite store (default: $THREADLAB_DB, else {user_data_db_path()})",
    )
    parser = ArgumentParser(
        prog=PROG,
        parents=[common],
        description="Measure thread-level parallelism on Linux: run the benchmark suites, keep every "
        "record in a SQLite store, and show the results.",
        epilog="Commands are described in docs/commands/. Example: threadlab bench --quick",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    _add_bench(commands, common)
    _add_list(commands, common)
    _add_runs(commands, common)
    _add_show(commands, common)
    _add_crosscheck(commands, common)
    _add_compare(commands, common)
    _add_import(commands, common)
    study_cli.add_parser(commands, common)  # threadlab study apps (docs/commands/study.md)
    rm_cli.add_parsers(commands)  # threadlab rm ..., threadlab omp run (docs/commands/rm.md, omp.md)
    spawn_cli.add_parsers(commands)  # threadlab spawn run (docs/commands/spawn.md)
    _add_export(commands, common)
    _add_report(commands, common)
    return parser


def _add_bench(commands: Any, common: ArgumentParser) -> None:
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
        help=f"placements of threaded benchmarks, comma-separated from {', '.join(PLACEMENTS)}; one a "
        "benchmark cannot do is recorded as unsupported (default: each benchmark's own sweep)",
    )
    bench.add_argument(
        "--suite", type=suite_list, metavar="LIST",
        help=f"suites to run, comma-separated from {', '.join(native.SUITES)}, or all: primitives (the POSIX "
        "threads primitives), models (C thread models), jvm (platform and virtual threads, JMH), go (goroutines), "
        "mpi (mixed MPI + threads, through --launcher), omp (OpenMP directives on each runtime), spawn (MPI "
        f"spawned tasks: threads of libthreadlab-spawn against processes) (default {native.DEFAULT_SUITE})",
    )
    bench.add_argument(
        "--launcher", type=launcher.parse, metavar="CMD",
        help="mpi suite: the command that starts each point's ranks, e.g. 'mpirun -np 4 --hostfile hosts' or "
        "'srun' (default: srun inside a Slurm allocation, else the MPI's own mpirun with one rank per CPU here)",
    )
    bench.add_argument("--quick", action="store_true", help="quick sweep: fewer values, shorter budgets (about a minute)")
    bench.add_argument(
        "--rule", type=choice("--rule", native.RULES), metavar="RULE",
        help="stopping rule: rsd (relative standard deviation, the seed's) or rse (relative standard error, "
        "SKaMPI's) (default rsd)",
    )
    bench.add_argument(
        "--target", type=number("--target", float, 1e-6, 1.0, "the relative spread that ends a point, e.g. 0.05"),
        metavar="F", help=f"stop a point when the rule's spread is at most F, 0 < F <= 1 ({_defaults_text('target')})",
    )
    bench.add_argument(
        "--warmup", type=number("--warmup", int, 0, 1000), metavar="N",
        help=f"timings discarded before sampling, 0..1000 ({_defaults_text('warmup')})",
    )
    bench.add_argument(
        "--min-timings", type=number("--min-timings", int, 2, 100000), metavar="N",
        help=f"at least N timings per point, 2..100000 ({_defaults_text('min_timings')})",
    )
    bench.add_argument(
        "--max-timings", type=number("--max-timings", int, 2, 100000), metavar="N",
        help=f"at most N timings per point, >= --min-timings, <= 100000 ({_defaults_text('max_timings')})",
    )
    bench.add_argument(
        "--min-timing-ms", type=number("--min-timing-ms", float, 0.001, 10000), metavar="X",
        help=f"a calibrated timing lasts at least X ms, 0.001..10000 ({_defaults_text('min_timing_ms', ' ms')})",
    )
    bench.add_argument(
        "--max-seconds", type=number("--max-seconds", float, 0.001, 3600), metavar="X",
        help=f"sampling budget of one point in seconds, 0.001..3600 ({_defaults_text('max_seconds', ' s')})",
    )
    bench.add_argument(
        "--clock", type=choice("--clock", native.CLOCKS), metavar="SOURCE",
        help="clock: auto, tsc or monotonic_raw (default auto: the TSC when invariant)",
    )
    bench.add_argument(
        "--iterations", type=number("--iterations", int, 1, 100000), metavar="N",
        help="jvm and go suites: measured iterations per point, 1..100000 (default 30, the seed's; 5 with --quick)",
    )
    bench.add_argument(
        "--forks", type=number("--forks", int, 0, 100), metavar="N",
        help="jvm suite: JMH forks per point, each a fresh JVM running all the iterations; 0 runs in the "
        "harness JVM (default 1)",
    )
    bench.add_argument(
        "--timeout", type=number("--timeout", float, 1, 86400, "seconds"), metavar="S",
        help=f"a point running longer is killed and recorded as failed, 1..86400 s "
        f"(default {_show(DEFAULT_TIMEOUT_S)} s, {_show(QUICK_TIMEOUT_S)} s with --quick; jvm suite "
        f"{_show(SUITE_TIMEOUTS_S['jvm'][0])} s ({_show(SUITE_TIMEOUTS_S['jvm'][1])} s), go suite "
        f"{_show(SUITE_TIMEOUTS_S['go'][0])} s ({_show(SUITE_TIMEOUTS_S['go'][1])} s))",
    )
    bench.add_argument("--name", metavar="NAME", help="a name for the run, usable wherever a RUN is asked (default: none)")
    bench.add_argument(
        "--json", metavar="FILE",
        help="also write every record as JSON Lines to FILE, line by line as measured ('-' = stdout; "
        "the table then goes to stderr)",
    )
    bench.add_argument("--quiet", "-q", action="store_true", help="no progress or warnings on stderr")
    bench.add_argument("--dry-run", action="store_true", help="print the points that would run, and stop")


def _add_list(commands: Any, common: ArgumentParser) -> None:
    listing = commands.add_parser(
        "list", parents=[common], help="list the benchmarks, their parameters and placements",
        description="List every benchmark of the native programs (build/bin/threadlab-bench-*, or "
        "$THREADLAB_NATIVE_DIR).",
    )
    listing.set_defaults(handler=cmd_list)
    listing.add_argument("--filter", action="append", metavar="GLOB", help="as for bench (default: all)")
    listing.add_argument("--suite", type=suite_list, metavar="LIST",
                         help=f"only these suites, comma-separated from {', '.join(native.SUITES)} (default: all)")
    listing.add_argument("--json", action="store_true", help="one JSON object per benchmark instead of a table")


def _add_runs(commands: Any, common: ArgumentParser) -> None:
    runs = commands.add_parser(
        "runs", parents=[common], help="list the stored runs",
        description="List stored runs, newest first. A run whose process died without finishing is "
        "shown as incomplete.",
    )
    runs.set_defaults(handler=cmd_runs)
    runs.add_argument(
        "--limit", type=number("--limit", int, 0, 10**9), default=DEFAULT_RUNS_LIMIT, metavar="N",
        help=f"show the newest N runs, 0 = all (default {DEFAULT_RUNS_LIMIT})",
    )
    runs.add_argument("--json", action="store_true", help="one JSON object per run instead of a table")
    actions = runs.add_subparsers(dest="runs_action", metavar="ACTION", parser_class=ArgumentParser)
    delete = actions.add_parser(
        "delete", parents=[common], help="delete runs and their records",
        description="Delete runs and all their records, in one transaction. A run whose process is still "
        "measuring is refused unless --force. Export a run first (threadlab export) to keep a copy.",
    )
    delete.set_defaults(handler=cmd_runs_delete)
    delete.add_argument("runs", nargs="+", metavar="RUN", help="run numbers, names, or latest")
    delete.add_argument("--force", action="store_true", help="also delete a run that is still running")
    rename = actions.add_parser(
        "rename", parents=[common], help="name or rename a run",
        description="Give a run a new name, usable wherever a RUN is asked; --clear removes its name.",
    )
    rename.set_defaults(handler=cmd_runs_rename)
    rename.add_argument("run", metavar="RUN", help="a run number, name, or latest")
    rename.add_argument("name", nargs="?", metavar="NAME", help="the new name (1-100 characters, not a number, "
                        "not latest/last, unique)")
    rename.add_argument("--clear", action="store_true", help="remove the run's name instead")


def _add_show(commands: Any, common: ArgumentParser) -> None:
    show = commands.add_parser(
        "show", parents=[common], help="show a stored run: environment, warnings, results table",
        description="Show one run: its environment and warnings, then the results table.",
    )
    show.set_defaults(handler=cmd_show)
    show.add_argument("run", nargs="?", default="latest", metavar="RUN",
                      help="a run number, a run name, or latest/last (default latest)")
    show.add_argument("--json", action="store_true", help="print the run's records as JSON Lines instead")


def _add_crosscheck(commands: Any, common: ArgumentParser) -> None:
    check = commands.add_parser(
        "crosscheck", parents=[common],
        help="check three figures of the suite against naive, independent measurements",
        description="Measure, in one run and in alternating rounds, the same-CPU yield switch, the uncontended "
        "mutex lock+unlock and pthread create+join with the suite and with threadlab-crosscheck, a naive "
        "program that shares no code with the timing core; print each side's median and their ratio.",
    )
    check.set_defaults(handler=cmd_crosscheck)
    check.add_argument("--rounds", type=number("--rounds", int, 1, 100), default=3, metavar="N",
                       help="alternating rounds of both sides, 1..100 (default 3)")
    check.add_argument("--json", action="store_true", help="print the results as one JSON object per figure")
    check.add_argument("--suite", type=choice("--suite", crosscheck.CROSS_SUITES), default="primitives",
                       metavar="SUITE", help="primitives (three figures), mpi (the ping-pong latency) or omp "
                       "(parallel region and barrier) (default primitives)")
    check.add_argument("--launcher", type=launcher.parse, metavar="CMD",
                       help="mpi: the launcher of both sides (default: the build's MPI launcher with 2 ranks)")


def _add_compare(commands: Any, common: ArgumentParser) -> None:
    comp = commands.add_parser(
        "compare", parents=[common], help="compare runs, machines, or variants within a run",
        description="Compare the matched points of two or more runs (each against the first), or, with "
        "--between, variants within one run. Each point: the medians, their ratio B/A with its interval, "
        "Welch's and Mann-Whitney's p-values and a verdict; a geometric-mean row sums up. --by machine "
        "puts machines side by side as columns.",
        epilog="exit status: 0 compared (no regression beyond --fail-above), 1 a regression beyond "
        "--fail-above or the store failed, 2 bad usage. Example: threadlab compare latest "
        "--between placement=same-cpu,different-cpus",
    )
    comp.set_defaults(handler=cmd_compare)
    comp.add_argument("runs", nargs="+", metavar="RUN", help="run numbers, names, or latest; the first is the baseline A")
    comp.add_argument(
        "--between", metavar="DIM=V1,V2", help="compare variants within ONE run: DIM is placement, model, or a "
        "parameter's name; V1 is the baseline (e.g. placement=same-cpu,different-cpus)",
    )
    comp.add_argument("--by", type=choice("--by", ("run", "machine")), metavar="run|machine",
                      help="one column per run or per machine (medians and ratios to the first column) instead of pairs")
    comp.add_argument("--filter", action="append", metavar="GLOB", help="only these benchmarks (as for bench)")
    comp.add_argument("--alpha", type=number("--alpha", float, 0.0001, 0.5, "the significance level"), default=0.05,
                      metavar="A", help="significance level of the tests; intervals are 1-A (default 0.05)")
    comp.add_argument("--test", type=choice("--test", stats.TESTS), default="welch", metavar="TEST",
                      help="the test that decides the verdict: welch (the seeds') or mann-whitney (default welch; "
                      "both p-values are shown)")
    comp.add_argument("--adjust", type=choice("--adjust", stats.ADJUSTMENTS), default="none", metavar="METHOD",
                      help="adjust p-values for many comparisons: none, holm or bh (default none)")
    comp.add_argument(
        "--fail-above", type=number("--fail-above", float, 0, 100000, "a percentage, e.g. 5"), metavar="PCT",
        help="exit 1 when a point is significantly slower in B by more than PCT percent (a regression gate)",
    )
    comp.add_argument("--format", type=choice("--format", compare.FORMATS), default="table", metavar="FORMAT",
                      help="table, json (JSON Lines), csv or md (default table)")
    comp.add_argument("--json", action="store_true", help="same as --format json")


def _add_import(commands: Any, common: ArgumentParser) -> None:
    imp = commands.add_parser(
        "import", parents=[common], help="import a run exported elsewhere (or bare records)",
        description="Import a run written by `threadlab export --format json` (a run header, then its records), "
        "or bare records as `bench --json` writes them (the run's metadata is then synthesized). Every line is "
        "validated first; a bad file is refused with its line number and nothing is written.",
    )
    imp.set_defaults(handler=cmd_import)
    imp.add_argument("file", metavar="FILE", help="JSON Lines file, or - for standard input")
    imp.add_argument("--name", metavar="NAME", help="name the imported run (default: its exported name, if free)")
    imp.add_argument("--host", metavar="HOST", help="the machine's name (for bare records, which do not say)")


def _add_export(commands: Any, common: ArgumentParser) -> None:
    exp = commands.add_parser(
        "export", parents=[common], help="write a run as JSON Lines, CSV or Markdown",
        description="Write one run: json (a threadlab.run/1 header with the environment, then every record; "
        "`threadlab import` reads it), csv (one row of statistics per record) or md (a Markdown report).",
    )
    exp.set_defaults(handler=cmd_export)
    exp.add_argument("run", nargs="?", default="latest", metavar="RUN", help="a run number, name, or latest (default)")
    exp.add_argument("--format", type=choice("--format", transfer.EXPORT_FORMATS), default="json", metavar="FORMAT",
                     help="json, csv or md (default json)")
    exp.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")


def _add_report(commands: Any, common: ArgumentParser) -> None:
    rep = commands.add_parser(
        "report", parents=[common], help="write a self-contained HTML report with figures",
        description="Write DIR/index.html, a self-contained page (inline SVG figures, no network needed): the "
        "machine and its warnings, an overview of every result, comparisons of the runs, each benchmark family "
        "as a table and as bars with 95%% CI, ECDFs, study speedups, the environment; and each figure as a PNG "
        "in DIR/figures/.",
    )
    rep.set_defaults(handler=cmd_report)
    rep.add_argument("runs", nargs="*", metavar="RUN", help="runs to report, the first as the baseline (default latest)")
    rep.add_argument("-o", "--output", metavar="DIR", default="threadlab-report",
                     help="directory to write (default ./threadlab-report); an existing one must be empty or a "
                     "previous report")
    rep.add_argument("--alpha", type=number("--alpha", float, 0.0001, 0.5, "the significance level"), default=0.05,
                     metavar="A", help="significance level of the comparisons (default 0.05)")
    rep.add_argument("--test", type=choice("--test", stats.TESTS), default="welch", metavar="TEST",
                     help="the test that decides the comparisons' verdicts (default welch)")


# ---------------------------------------------------------------- helpers


def _db_path(args: argparse.Namespace) -> Path:
    given = getattr(args, "db", None)
    return Path(given).expanduser() if given else default_db_path()


def _catalog(patterns: Sequence[str], suites: Sequence[str] | None = None) -> tuple[list[Path], list[BenchmarkInfo]]:
    """The programs and the benchmarks of the suites (None or ['all']: every
    suite) that the filters select; a suite named that has no program here
    is an error."""
    programs = native.discover_programs()
    found = native.catalog(programs)
    if suites is not None and list(suites) != [ALL_SUITES]:
        for suite in suites:
            if not any(info.suite == suite for info in found):
                build = {"jvm": "make jvm", "go": "make go",
                         "spawn": "make, with an MPI installed (scripts/install-deps.sh)"}.get(suite, "make")
                raise ThreadlabError(
                    f"--suite {suite}: no benchmark program of that suite in {programs[0].parent} "
                    f"(build it with `{build}`; see docs/{suite if suite in ('jvm', 'go', 'spawn') else 'native-protocol'}.md)"
                )
        found = [info for info in found if info.suite in suites]
    return programs, select_benchmarks(found, patterns)


_FIXED_HINT = "use --iterations N and --warmup N (and --forks N for jvm)"
_ADAPTIVE_HINT = "use --warmup, --min-timings and --max-timings"


def _check_suite_options(args: argparse.Namespace, suites: Sequence[str]) -> None:
    """Every measurement option given must apply to a selected suite."""
    for name in ("rule", "target", "min_timings", "max_timings", "min_timing_ms", "max_seconds", "clock",
                 "iterations", "forks"):
        if getattr(args, name, None) is None:
            continue
        if any(name in native.suite_options(suite) for suite in suites):
            continue
        flag = "--" + name.replace("_", "-")
        fixed = all(suite in native.SUITE_OPTIONS for suite in suites)
        hint = (f"the {', '.join(suites)} suite{'s run' if len(suites) > 1 else ' runs'} a fixed number of "
                f"iterations: {_FIXED_HINT}") if fixed else (
                f"it applies to the {' and '.join(s for s, o in native.SUITE_OPTIONS.items() if name in o)} "
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
    defaults = NATIVE_DEFAULTS[args.quick]
    low = options.min_timings if options.min_timings is not None else int(defaults["min_timings"])
    high = options.max_timings if options.max_timings is not None else int(defaults["max_timings"])
    if high < low:
        which = "--min-timings" if options.min_timings is not None else "the default --min-timings"
        raise UserError(f"--max-timings {high}: expected at least {which} ({low})")
    return options


class JsonLinesOutput:
    """--json FILE: each record on its own line, written whole.  '-' (and a
    FIFO) gets each line as it is measured; a file is written beside itself
    and renamed onto FILE when the run ends (output.OutputFile), so FILE is
    never half a run, and never the store.  A write that fails (a closed
    pipe, a full disk) raises: the run stops and says why."""

    def __init__(self, target: str | None, store: Path) -> None:
        self.out = OutputFile(target, f"--json {target}", store) if target else None

    def write(self, record: dict[str, Any]) -> None:
        if self.out:
            self.out.write(json.dumps(record, separators=(",", ":")) + "\n")
            self.out.flush()

    def close(self, keep: bool = True) -> None:
        """keep: the records written are whole (the run ended, however it
        ended); False after a write failed."""
        if self.out:
            if keep:
                self.out.commit()
            else:
                self.out.abort()


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
            return f"timeout {_show(self.timeout_s)} s per point"
        return "timeouts per point: " + ", ".join(f"{suite} {_show(s)} s" for suite, s in self.timeouts.items())


def _plan(args: argparse.Namespace) -> _Plan:
    programs, selected = _catalog(split_patterns(args.filter), args.suite or [native.DEFAULT_SUITE])
    suites = list(dict.fromkeys(info.suite for info in selected))
    _check_suite_options(args, suites)
    options = _point_options(args)
    timeouts = {suite: args.timeout or suite_timeout(suite, args.quick) for suite in suites}
    name = validate_run_name(args.name) if args.name is not None else None
    by_name = {program.name: program for program in programs}
    mpi_program, options = _launch_plan(args, selected, by_name, options)
    points = runner.expand_sweep(selected, by_name, args.placement, args.quick)
    longest = max(timeouts.values(), default=args.timeout or suite_timeout(native.DEFAULT_SUITE, args.quick))
    return _Plan(options, longest, name, selected, by_name, points, suites, timeouts, mpi_program)


def _launch_plan(args: argparse.Namespace, selected: Sequence[BenchmarkInfo], programs: dict[str, Path],
                 options: PointOptions) -> tuple[Path | None, PointOptions]:
    """The launched suites' program and launcher (docs/mpi.md)."""
    launched = [info for info in selected if info.suite in native.LAUNCHED_SUITES]
    if not launched:
        if args.launcher:
            raise UserError(f"--launcher applies to the {', '.join(native.LAUNCHED_SUITES)} suite, which this run "
                            "does not include (add --suite mpi)")
        return None, options
    program = programs[launched[0].program]
    words = args.launcher or launcher.default(program)
    return program, dataclasses.replace(options, launcher=tuple(words))


def _start_run(args: argparse.Namespace, plan: _Plan, store: Store,
               hosts: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    """The run's row, with its environment (status 'running'); hosts: the
    mpi suite's hosts (launcher.probe_hosts)."""
    used = [plan.programs[p] for p in dict.fromkeys(info.program for info in plan.selected)]
    env = environment.collect(used, args.clock)
    if hosts is not None:
        env["mpi"] = hosts
    run_id = store.create_run(
        name=plan.name,
        command=[PROG, *args.argv],
        options={**plan.options.as_dict(), "timeout_s": plan.timeout_s, "filters": args.filter,
                 "placements": args.placement, "suites": plan.suites, "timeouts_s": plan.timeouts},
        catalog=[info.as_dict() for info in plan.selected],
        environment=env,
        points_planned=len(plan.points),
        record_schema=schema.RECORD_SCHEMA_ID,
        threadlab_version=__version__,
    )
    return run_id, env


def cmd_bench(args: argparse.Namespace) -> int:
    plan = _plan(args)
    if args.dry_run:
        for point in plan.points:
            print(shlex.join(point.argv(plan.options)))
        print(f"{len(plan.points)} points of {len(plan.selected)} benchmarks", file=sys.stderr)
        return EXIT_OK
    db_path = _db_path(args)
    # A launcher that cannot start the job fails here, before anything is stored.
    hosts = launcher.probe_hosts(plan.options.launcher or (), plan.mpi_program) if plan.mpi_program else None
    with Store(db_path) as store:
        store.require_free_name(plan.name)  # before --json creates anything
        output = JsonLinesOutput(args.json, db_path)
        try:
            run_id, env = _start_run(args, plan, store, hosts)
        except BaseException:
            output.close(keep=False)
            raise
        label = f"run {run_id}" + (f" ({plan.name})" if plan.name else "")
        progress = Progress(plan.points, enabled=not args.quiet)
        progress.message(
            f"threadlab: {label}: {len(plan.points)} points of {len(plan.selected)} benchmarks, "
            f"{plan.timeout_text()}; store {db_path}"
        )
        for warning in env["warnings"]:
            progress.message(f"threadlab: warning: {warning}")

        stored: set[int] = set()

        def keep(point: runner.Point, record: dict[str, Any]) -> None:
            store.add_record(run_id, point.index, record)
            stored.add(point.index)
            output.write(record)

        started = time.monotonic()
        status, stop_reason = "failed", "threadlab itself failed"  # unless the sweep returns
        output_ok = True
        try:
            result = runner.run_sweep(plan.points, plan.options, plan.timeout_for, keep, progress)
            status = "interrupted" if result.interrupted_by else "complete"
            stop_reason = f"interrupted by {runner.signal_name(result.interrupted_by)}" if result.interrupted_by else None
        except KeyboardInterrupt:  # a second Ctrl-C
            status, stop_reason = "interrupted", "interrupted by a second Ctrl-C"
            raise
        except ThreadlabError as error:  # the --json output: a closed pipe, a full disk
            output_ok = False
            stop_reason = f"stopped after {len(stored)} of {len(plan.points)} points: {error}"
            error.args = (f"{error}; {label} stopped after {len(stored)} of {len(plan.points)} points, stored as "
                          f"failed with what it measured (threadlab show {run_id})",)
            raise
        finally:
            progress.close()
            try:
                output.close(keep=output_ok)
            finally:
                store.finish_run(run_id, status, environment.finish(env), stop_reason)
    console = make_console(sys.stderr if args.json == "-" else None)
    render_results(console, result.records, [info.as_dict() for info in plan.selected], title=f"Results of {label}")
    return _bench_epilogue(label, status, result, time.monotonic() - started, args.quiet)


def _bench_epilogue(label: str, status: str, result: runner.SweepResult, elapsed: float, quiet: bool) -> int:
    counts = {s: sum(1 for r in result.records if r["status"] == s) for s in ("ok", "unsupported", "failed")}
    summary = f"{counts['ok']} ok, {counts['unsupported']} unsupported, {counts['failed']} failed"
    if status == "interrupted":
        sig = result.interrupted_by or signal.SIGINT
        print(
            f"threadlab: {label} interrupted after {result.points_done} points ({summary}); "
            "the measured points are stored",
            file=sys.stderr,
        )
        return 128 + int(sig)
    if not quiet:
        print(f"threadlab: {label} complete in {format_duration(elapsed)}: {summary}", file=sys.stderr)
    return EXIT_FAILED if counts["failed"] else EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    _, selected = _catalog(split_patterns(args.filter), args.suite)
    if args.json:
        for info in selected:
            print(json.dumps(info.as_dict()))
        return EXIT_OK
    from threadlab.listing import render_catalog

    render_catalog(make_console(), selected)
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    try:
        store = Store(_db_path(args), readonly=True)
    except NoStore as missing:
        print(f"No runs yet (no store at {missing.path}).")
        return EXIT_OK
    with store:
        runs = store.runs(limit=args.limit or None)
    if args.json:
        for run in runs:
            print(json.dumps({
                "id": run.id, "name": run.name, "status": run.display_status, "stored_status": run.status,
                "started_at": run.started_at, "finished_at": run.finished_at, "hostname": run.hostname,
                "machine_id": run.machine_id, "points_planned": run.points_planned, "records": run.counts,
                "command": run.command, "stop_reason": run.stop_reason,
            }))
        return EXIT_OK
    if not runs:
        print(f"No runs yet in {store.path}.")
        return EXIT_OK
    from threadlab.listing import render_runs

    render_runs(make_console(), runs)
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from threadlab.listing import render_run_header

    with Store(_db_path(args), readonly=True) as store:
        run = store.resolve_run(args.run)
        records = store.records(run.id)
    if args.json:
        for record in records:
            print(json.dumps(record, separators=(",", ":")))
        return EXIT_OK
    console = make_console()
    render_run_header(console, run, str(store.path))
    console.print()
    if study_cli.is_study_run(run.options):  # a study's own tables
        study_cli.render_run(console, records, title=f"Study of {run.label}")
        return EXIT_OK
    render_results(console, records, run.catalog, title=f"Results of {run.label}")
    return EXIT_OK


def cmd_crosscheck(args: argparse.Namespace) -> int:
    progress = (lambda text: print(f"{PROG}: {text}", file=sys.stderr)) if not args.json else (lambda text: None)
    if args.launcher and args.suite != "mpi":
        raise UserError("--launcher applies to crosscheck --suite mpi only")
    results = crosscheck.run(args.rounds, progress, args.suite, args.launcher)
    if args.json:
        for result in results:
            print(json.dumps(result.as_dict()))
    else:
        print(crosscheck.format_table(results, args.suite))
    return EXIT_OK


def cmd_runs_delete(args: argparse.Namespace) -> int:
    with Store(_db_path(args), create=False) as store:
        runs = {run.id: run for run in (store.resolve_run(ref) for ref in args.runs)}
        alive = [run for run in runs.values() if run.display_status == "running"]
        if alive and not args.force:
            raise UserError(
                f"{printable(alive[0].label)} is still running (process {alive[0].pid}); stop it first, or pass --force"
            )
        deleted = store.delete_runs(list(runs))
    for run_id, count in deleted.items():
        print(f"deleted {printable(runs[run_id].label)}: {count} record{'s' if count != 1 else ''}")
    return EXIT_OK


def cmd_runs_rename(args: argparse.Namespace) -> int:
    if args.clear == (args.name is not None):
        raise UserError("runs rename RUN NAME, or runs rename RUN --clear (one of the two)")
    with Store(_db_path(args), create=False) as store:
        run = store.resolve_run(args.run)
        name = None if args.clear else validate_run_name(args.name)
        store.rename_run(run.id, name)
    was = f" (was {printable(run.name)})" if run.name else ""
    print(f"run {run.id} is now named {name}{was}" if name else f"run {run.id} has no name now{was}")
    return EXIT_OK


def _select(records: list[dict[str, Any]], patterns: Sequence[str]) -> list[dict[str, Any]]:
    if not patterns:
        return records
    return [r for r in records if any(matches(r["benchmark"], p) for p in patterns)]


def _machine_sides(runs: Sequence[Any], records: dict[int, list[dict[str, Any]]]) -> list[compare.Side]:
    """--by machine: one side per machine; a later run's point replaces an
    earlier run's point of the same machine."""
    from threadlab.points import record_key

    grouped: dict[str, list[Any]] = {}
    for run in runs:
        grouped.setdefault(run.machine_id, []).append(run)
    hostnames = [group[0].hostname for group in grouped.values()]
    sides = []
    for machine, group in grouped.items():
        merged: dict[Any, dict[str, Any]] = {}
        for run in group:
            for record in records[run.id]:
                merged[record_key(record)] = record
        first = group[-1]
        cpu = (first.environment.get("cpu") or {}).get("model") or "CPU unknown"
        header = first.hostname if hostnames.count(first.hostname) == 1 else f"{first.hostname}#{machine[:6]}"
        label = f"{header}: {cpu} — " + ", ".join(run.label for run in group)
        sides.append(compare.Side(label, header, list(merged.values()), machine))
    return sides


def cmd_compare(args: argparse.Namespace) -> int:
    fmt = "json" if args.json else args.format
    patterns = split_patterns(args.filter)
    if args.between and len(args.runs) != 1:
        raise UserError("--between compares variants within ONE run: give exactly one RUN")
    if not args.between and len(args.runs) < 2:
        raise UserError(
            "compare needs two runs (threadlab compare A B), or one run and --between, e.g. "
            f"threadlab compare {args.runs[0]} --between placement=same-cpu,different-cpus"
        )
    if args.by and args.between:
        raise UserError("--by and --between do not go together: --by lays out runs or machines as columns")
    if args.by and args.fail_above is not None:
        raise UserError("--fail-above gates pairwise comparisons: drop --by")
    if args.by and fmt in ("csv",):
        raise UserError("--by prints a table, json or md; csv is for pairwise comparisons")
    with Store(_db_path(args), readonly=True) as store:
        runs = [store.resolve_run(ref) for ref in args.runs]
        seen: set[int] = set()
        for run in runs:
            if run.id in seen:
                raise UserError(f"{printable(run.label)} is given twice")
            seen.add(run.id)
        records = {run.id: _select(store.records(run.id), patterns) for run in runs}
    for run in runs:
        if not records[run.id]:
            what = "the --filter selects none of its records" if patterns else "it has no records"
            raise UserError(f"{printable(run.label)}: nothing to compare ({what})")
    if args.by:
        if args.by == "machine":
            sides = _machine_sides(runs, records)
            if len(sides) < 2:
                raise UserError(f"--by machine: all these runs are from one machine ({printable(runs[0].hostname)}); "
                                "use --by run, or compare without --by")
        else:
            sides = [compare.Side(f"{run.label} on {run.hostname}", f"run {run.id}", records[run.id]) for run in runs]
        matrix = compare.build_matrix(sides, args.alpha, args.test)
        if fmt == "json":
            for row in matrix.rows:
                print(json.dumps({"label": row.label, "placement": row.placement,
                                  "columns": [side.label for side in sides], "cells": row.cells,
                                  "comparisons": [c.as_dict() if c else None for c in row.comparisons]}))
        elif fmt == "md":
            sys.stdout.write(compare.matrix_markdown(matrix))
        else:
            compare.render_matrix(make_console(), matrix, "machine" if args.by == "machine" else "run")
        return EXIT_OK
    pairs: list[compare.PairComparison] = []
    if args.between:
        run = runs[0]
        dimension, variants = compare.split_variants(records[run.id], args.between)
        base_value, base_records = variants[0]
        base = compare.Side(f"{compare.variant_header(dimension, base_value)} in {run.label}",
                            compare.variant_header(dimension, base_value), base_records)
        for value, value_records in variants[1:]:
            other = compare.Side(f"{compare.variant_header(dimension, value)} in {run.label}",
                                 compare.variant_header(dimension, value), value_records)
            pairs.append(compare.compare_sides(base, other, args.alpha, args.test, args.adjust, dimension))
    else:
        base_run = runs[0]
        base = compare.Side(f"{base_run.label} on {base_run.hostname}", f"run {base_run.id}", records[base_run.id])
        for run in runs[1:]:
            other = compare.Side(f"{run.label} on {run.hostname}", f"run {run.id}", records[run.id])
            pairs.append(compare.compare_sides(base, other, args.alpha, args.test, args.adjust))
    if fmt == "json":
        for pair in pairs:
            for line in compare.pair_json_lines(pair):
                print(line)
    elif fmt == "csv":
        sys.stdout.write(compare.pair_csv(pairs))
    elif fmt == "md":
        print("\n".join(compare.pair_markdown(pair) for pair in pairs), end="")
    else:
        console = make_console()
        for index, pair in enumerate(pairs):
            if index:
                console.print()
            compare.render_pair(console, pair)
        console.file.flush()
    return _regression_gate(pairs, args.fail_above)


def _regression_gate(pairs: Sequence[compare.PairComparison], percent: float | None) -> int:
    """--fail-above: exit 1 on a regression, and whenever the comparison
    cannot vouch for B (docs/commands/compare.md, "The regression gate")."""
    if percent is None:
        return EXIT_OK
    gate = compare.regression_gate(pairs, percent)
    for pair, point in gate.regressions:
        where = f" {point.placement}" if point.placement else ""
        print(printable(
            f"{PROG}: regression: {point.label}{where}: B/A = {compare.format_ratio(point.ratio)} "
            f"({compare.change_text(point.slowdown or 1.0)}; the limit is {percent:g}% slower), "
            f"p = {compare.format_p(point.p_adjusted)}; A: {pair.a.label}, B: {pair.b.label}"),
            file=sys.stderr,
        )
    for problem in gate.undecided:
        print(printable(f"{PROG}: the gate cannot pass: {problem}"), file=sys.stderr)
    if gate.regressions or gate.undecided:
        found = len(gate.regressions)
        why = [f"{found} regression{'s' if found != 1 else ''} beyond {percent:g}%"] if found else []
        why += [f"{len(gate.undecided)} reason{'s' if len(gate.undecided) != 1 else ''} it cannot decide"] \
            if gate.undecided else []
        print(f"{PROG}: the regression gate fails: {', '.join(why)}", file=sys.stderr)
        return EXIT_FAILED
    print(f"{PROG}: no point significantly slower by more than {percent:g}% ({gate.decided} points tested)",
          file=sys.stderr)
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    plan = transfer.read_source(args.file, host=args.host)
    with Store(_db_path(args)) as store:
        run = transfer.import_file(store, plan, args.name)
    if plan.synthesized:
        print(
            f"{PROG}: {printable(plan.source)} has no run header (bare records, as `bench --json` writes): run "
            f"metadata synthesized (host {printable(run.hostname)}, environment unknown)",
            file=sys.stderr,
        )
    print(f"imported {len(plan.records)} records from {printable(plan.source)} as {printable(run.label)} "
          f"(machine {printable(run.hostname)})")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    db_path = _db_path(args)
    with Store(db_path, readonly=True) as store:
        run = store.resolve_run(args.run)
        records, points = store.records_with_points(run.id)
    text = transfer.export_text(args.format, run, records, points)
    target = args.output or "-"
    write_output(target, text, "standard output" if target == "-" else f"-o {target}", db_path)
    if target != "-":
        print(f"{PROG}: wrote {printable(run.label)} ({len(records)} records) to {printable(target)}", file=sys.stderr)
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from threadlab import report  # matplotlib: only this command pays for it

    refs = args.runs or ["latest"]
    db_path = _db_path(args)
    with Store(db_path, readonly=True) as store:
        runs = [store.resolve_run(ref) for ref in refs]
        if len({run.id for run in runs}) != len(runs):
            raise UserError("a run is given twice")
        loaded = [(run, store.records(run.id)) for run in runs]
    out_dir = Path(args.output).expanduser()
    result = report.write_report(loaded, out_dir, alpha=args.alpha, test=args.test, store=db_path)
    print(f"Report: {printable(result.index.resolve())} ({len(result.figures)} figures; PNG files in "
          f"{printable((result.index.parent / report.FIGURES_DIR).resolve())})")
    return EXIT_OK


# -------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        arguments = list(sys.argv[1:] if argv is None else argv)
        args = parser.parse_args(arguments)
        args.argv = arguments
        if not getattr(args, "handler", None):
            raise UserError(
                "a command is required: bench, list, runs, show, crosscheck, compare, import, export, report, study, rm "
                "or omp "
                f"(see `{PROG} --help`)"
            )
        status = int(args.handler(args))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return status
    except OutputClosed as closed:
        return _output_closed(str(closed))
    except BrokenPipeError:
        return _output_closed("the output was closed before everything was written (broken pipe); it is incomplete")
    except ThreadlabError as error:  # UserError included
        _error(str(error))
        return error.exit_status
    except sqlite3.Error as error:
        _error(f"store: {error}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _error("interrupted", prefix=f"{PROG}: ")
        return 128 + signal.SIGINT
    except SystemExit as done:  # --help, --version
        return done.code if isinstance(done.code, int) else EXIT_OK


def _error(message: str, prefix: str = f"{PROG}: error: ") -> None:
    """One message on stderr: stored text in it cannot reach the terminal as
    escape sequences; a closed stderr is not an error of its own."""
    try:
        print(prefix + printable_lines(message), file=sys.stderr)
    except (OSError, ValueError):
        pass


def _output_closed(message: str) -> int:
    """A reader that left (`threadlab runs | head`) is an error: what it got
    is incomplete.  stdout then points at /dev/null, so the interpreter's
    final flush is quiet."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    _error(message)
    return EXIT_FAILED
