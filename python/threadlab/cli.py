"""The `threadlab` command: bench, list, runs, show (docs/commands/).

Every user mistake ends in one line, `threadlab: error: ...`, naming the
bad value and what is accepted, with exit status 2 and no traceback.
Exit status 1 means something threadlab depends on failed (a native
program, the store) or, for `bench`, that a data point failed.
"""

from __future__ import annotations

import argparse
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
from typing import IO, Any, Callable, Sequence

from threadlab import __version__, crosscheck, environment, native, runner, schema
from threadlab.errors import ThreadlabError, UserError
from threadlab.listing import render_catalog, render_run_header, render_runs
from threadlab.native import NATIVE_DEFAULTS, PLACEMENTS, BenchmarkInfo, PointOptions
from threadlab.progress import Progress
from threadlab.store import NoStore, Store, default_db_path, user_data_db_path, validate_run_name
from threadlab.table import make_console, render_results
from threadlab.units import format_duration

PROG = "threadlab"
DEFAULT_TIMEOUT_S = 120.0
QUICK_TIMEOUT_S = 30.0
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
        "--timeout", type=number("--timeout", float, 1, 86400, "seconds"), metavar="S",
        help=f"a point running longer is killed and recorded as failed, 1..86400 s "
        f"(default {_show(DEFAULT_TIMEOUT_S)} s, {_show(QUICK_TIMEOUT_S)} s with --quick)",
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


# ---------------------------------------------------------------- helpers


def _db_path(args: argparse.Namespace) -> Path:
    given = getattr(args, "db", None)
    return Path(given).expanduser() if given else default_db_path()


def _catalog(patterns: Sequence[str]) -> tuple[list[Path], list[BenchmarkInfo]]:
    programs = native.discover_programs()
    return programs, select_benchmarks(native.catalog(programs), patterns)


def _point_options(args: argparse.Namespace) -> PointOptions:
    options = PointOptions(
        quick=args.quick, rule=args.rule, target=args.target, warmup=args.warmup,
        min_timings=args.min_timings, max_timings=args.max_timings,
        min_timing_ms=args.min_timing_ms, max_seconds=args.max_seconds, clock=args.clock,
    )
    defaults = NATIVE_DEFAULTS[args.quick]
    low = options.min_timings if options.min_timings is not None else int(defaults["min_timings"])
    high = options.max_timings if options.max_timings is not None else int(defaults["max_timings"])
    if high < low:
        which = "--min-timings" if options.min_timings is not None else "the default --min-timings"
        raise UserError(f"--max-timings {high}: expected at least {which} ({low})")
    return options


class JsonLinesOutput:
    """--json FILE: each record on its own line, written whole and flushed,
    so the file is valid JSON Lines whenever it is read."""

    def __init__(self, target: str | None) -> None:
        self.stream: IO[str] | None = None
        self._owned = False
        if target == "-":
            self.stream = sys.stdout
        elif target:
            try:
                self.stream = open(target, "w", encoding="utf-8")
            except OSError as error:
                raise UserError(f"--json {target}: cannot write: {error.strerror}") from None
            self._owned = True

    def write(self, record: dict[str, Any]) -> None:
        if self.stream:
            self.stream.write(json.dumps(record, separators=(",", ":")) + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.stream and self._owned:
            self.stream.close()


# ---------------------------------------------------------------- commands


@dataclass
class _Plan:
    """What `bench` will do, settled before anything is written."""

    options: PointOptions
    timeout_s: float
    name: str | None
    selected: list[BenchmarkInfo]
    programs: dict[str, Path]
    points: list[runner.Point]


def _plan(args: argparse.Namespace) -> _Plan:
    options = _point_options(args)
    timeout_s = args.timeout or (QUICK_TIMEOUT_S if args.quick else DEFAULT_TIMEOUT_S)
    name = validate_run_name(args.name) if args.name is not None else None
    programs, selected = _catalog(split_patterns(args.filter))
    by_name = {program.name: program for program in programs}
    points = runner.expand_sweep(selected, by_name, args.placement, args.quick)
    return _Plan(options, timeout_s, name, selected, by_name, points)


def _start_run(args: argparse.Namespace, plan: _Plan, store: Store) -> tuple[int, dict[str, Any]]:
    """The run's row, with its environment (status 'running')."""
    used = [plan.programs[p] for p in dict.fromkeys(info.program for info in plan.selected)]
    env = environment.collect(used, args.clock)
    run_id = store.create_run(
        name=plan.name,
        command=[PROG, *args.argv],
        options={**plan.options.as_dict(), "timeout_s": plan.timeout_s, "filters": args.filter,
                 "placements": args.placement},
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
    with Store(db_path) as store:
        store.require_free_name(plan.name)  # before --json truncates a file
        output = JsonLinesOutput(args.json)
        run_id, env = _start_run(args, plan, store)
        label = f"run {run_id}" + (f" ({plan.name})" if plan.name else "")
        progress = Progress(plan.points, enabled=not args.quiet)
        progress.message(
            f"threadlab: {label}: {len(plan.points)} points of {len(plan.selected)} benchmarks, "
            f"timeout {_show(plan.timeout_s)} s per point; store {db_path}"
        )
        for warning in env["warnings"]:
            progress.message(f"threadlab: warning: {warning}")

        def keep(point: runner.Point, record: dict[str, Any]) -> None:
            store.add_record(run_id, point.index, record)
            output.write(record)

        started = time.monotonic()
        status = "failed"  # unless the sweep returns
        try:
            result = runner.run_sweep(plan.points, plan.options, plan.timeout_s, keep, progress)
            status = "interrupted" if result.interrupted_by else "complete"
        except KeyboardInterrupt:  # a second Ctrl-C
            status = "interrupted"
            raise
        finally:
            progress.close()
            output.close()
            store.finish_run(run_id, status, environment.finish(env))
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
    _, selected = _catalog(split_patterns(args.filter))
    if args.json:
        for info in selected:
            print(json.dumps(info.as_dict()))
        return EXIT_OK
    render_catalog(make_console(), selected)
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    try:
        store = Store(_db_path(args), create=False)
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
                "command": run.command,
            }))
        return EXIT_OK
    if not runs:
        print(f"No runs yet in {store.path}.")
        return EXIT_OK
    render_runs(make_console(), runs)
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    with Store(_db_path(args), create=False) as store:
        run = store.resolve_run(args.run)
        records = store.records(run.id)
    if args.json:
        for record in records:
            print(json.dumps(record, separators=(",", ":")))
        return EXIT_OK
    console = make_console()
    render_run_header(console, run, str(store.path))
    console.print()
    render_results(console, records, run.catalog, title=f"Results of {run.label}")
    return EXIT_OK


def cmd_crosscheck(args: argparse.Namespace) -> int:
    progress = (lambda text: print(f"{PROG}: {text}", file=sys.stderr)) if not args.json else (lambda text: None)
    results = crosscheck.run(args.rounds, progress)
    if args.json:
        for result in results:
            print(json.dumps(result.as_dict()))
    else:
        print(crosscheck.format_table(results))
    return EXIT_OK


# -------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        arguments = list(sys.argv[1:] if argv is None else argv)
        args = parser.parse_args(arguments)
        args.argv = arguments
        if not getattr(args, "handler", None):
            raise UserError(f"a command is required: bench, list, runs, show or crosscheck (see `{PROG} --help`)")
        return int(args.handler(args))
    except ThreadlabError as error:  # UserError included
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.exit_status
    except sqlite3.Error as error:
        print(f"{PROG}: error: store: {error}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except BrokenPipeError:
        # `threadlab runs | head`: the reader left; not an error of ours.
        # Point stdout at /dev/null so the interpreter's final flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except SystemExit as done:  # --help, --version
        return done.code if isinstance(done.code, int) else EXIT_OK
