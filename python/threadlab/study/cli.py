"""`threadlab study apps` on the command line (docs/commands/study.md).

threadlab.cli registers the parser (add_parser) and `show` renders a study
run with render_run; this module imports threadlab.cli only inside its
functions, when that module is complete.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from threadlab import __version__, environment, native, schema
from threadlab.errors import ThreadlabError, UserError
from threadlab.study import apps, tables
from threadlab.units import format_duration

STUDIES = ("apps",)


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    """`threadlab study` and its studies."""
    from threadlab import cli

    study = commands.add_parser(
        "study", parents=[common], help="run a study: a matrix of scenarios, many runs each (apps)",
        description="Run a study: an experiment over a matrix of scenarios, stored as a run.",
        epilog="Studies: apps (seed 000: four multithreaded kernels over thread platforms, architectures, "
        "priorities and affinities). See docs/commands/study.md.",
    )
    study.set_defaults(handler=_no_study)
    studies = study.add_subparsers(dest="study", metavar="STUDY", parser_class=cli.ArgumentParser)
    a = studies.add_parser(
        "apps", parents=[common], help="four multithreaded kernels over a matrix of scenarios (seed 000)",
        description="MIPS, MFLOPS, Leibniz pi and the trapezoid integral, each run as its own process many times "
        "per scenario (thread platform x architecture x priority x affinity) and thread count, all runs in a "
        "seeded random order. Prints speedup tables with 95% confidence intervals, times and rates, and the "
        "effect of priority with significance tests; stores the run (compare and report work on it).",
        epilog="exit status: 0 every run verified (or unsupported here), 1 a run failed or returned a wrong "
        "result, 2 bad usage, 130 interrupted by Ctrl-C (what was measured is kept).",
    )
    a.set_defaults(handler=cmd_apps)
    a.add_argument("--kernels", type=apps.parse_kernels, metavar="LIST",
                   help=f"kernels, comma-separated from {', '.join(apps.KERNELS)} (default: all)")
    a.add_argument("--threads", type=apps.parse_threads, metavar="LIST",
                   help="thread counts, e.g. 1,2,4 or 1-8; more than the CPUs shows oversubscription "
                   "(default: 1 to the number of CPUs this process may use)")
    a.add_argument("--runs", type=cli.number("--runs", int, 1, 100000), metavar="N",
                   help=f"runs per scenario and thread count, 1..100000 (default {apps.DEFAULT_RUNS}, the seed's; "
                   f"{apps.QUICK_RUNS} with --quick)")
    a.add_argument("--factors", type=_design, metavar="SPEC",
                   help="the design: blocks separated by ',', the factors of a block (platform, arch, priority, "
                   "affinity) crossed with '*', the others at their baseline (first level); 'all' crosses "
                   f"everything, 'none' is the baseline alone (default {apps.DEFAULT_DESIGN})")
    for factor, levels, default in (
        ("platform", apps.PLATFORMS, ",".join(apps.DEFAULT_PLATFORMS) + " (and ult once built)"),
        ("arch", apps.ARCHS, ",".join(apps.ARCHS)),
        ("priority", apps.PRIORITIES + ("nice:N", "fifo:P", "rr:P"), ",".join(apps.PRIORITIES)),
        ("affinity", apps.AFFINITIES, ",".join(apps.AFFINITIES)),
    ):
        a.add_argument(f"--{factor}", type=_levels(factor), metavar="LIST",
                       help=f"levels of the {factor} factor, the first being its baseline, from "
                       f"{', '.join(levels)} (default {default})")
    a.add_argument("--quick", action="store_true",
                   help=f"small sizes and {apps.QUICK_RUNS} runs (under a minute on two CPUs)")
    a.add_argument("--paper", action="store_true", help="the seed's sizes (1e10 MIPS operations, 1e8 MFLOPS "
                   "operations, 1e9 pi terms, 1e8 trapezoids): long")
    a.add_argument("--size", type=apps.parse_sizes, metavar="K=N,...",
                   help="problem sizes of some kernels, e.g. mips=4e8,pi=1e8 (MIPS and MFLOPS: a multiple of 4)")
    a.add_argument("--seed", type=cli.number("--seed", int, 0, 2**32 - 1), metavar="N",
                   help="seed of the run order (default: random, recorded with the run)")
    a.add_argument("--timeout", type=cli.number("--timeout", float, 1, 86400, "seconds"), metavar="S",
                   help=f"a run taking longer is killed and counted as failed (default {apps.DEFAULT_TIMEOUT_S:g} s, "
                   f"{apps.QUICK_TIMEOUT_S:g} s with --quick, {apps.PAPER_TIMEOUT_S:g} s with --paper)")
    a.add_argument("--name", metavar="NAME", help="a name for the run, usable wherever a RUN is asked")
    a.add_argument("--json", action="store_true",
                   help="print the speedups as JSON Lines on stdout instead of the tables")
    a.add_argument("--quiet", "-q", action="store_true", help="no progress or warnings on stderr")
    a.add_argument("--dry-run", action="store_true", help="print the scenarios and one command per cell, and stop")


def _design(text: str) -> str:
    apps.parse_design(text)  # refuses a bad spec while parsing the command line
    return text


def _levels(factor: str) -> Any:
    def parse(text: str) -> list[str]:
        return apps.parse_levels(factor, text)

    return parse


def _no_study(args: argparse.Namespace) -> int:
    raise UserError(f"a study is required: {', '.join(STUDIES)} (see `threadlab study --help`)")


def _plan(args: argparse.Namespace) -> apps.Plan:
    programs = apps.discover_programs()
    kernels = apps.kernel_catalog(programs)
    levels = {factor: getattr(args, factor) for factor in apps.FACTORS if getattr(args, factor)}
    return apps.make_plan(
        programs=programs, kernels=kernels, kernel_names=args.kernels or apps.KERNELS, threads=args.threads,
        runs=args.runs, design=args.factors or apps.DEFAULT_DESIGN, levels=levels, sizes=args.size,
        quick=args.quick, paper=args.paper, seed=args.seed, timeout_s=args.timeout,
    )


def _environment_programs(plan: apps.Plan) -> list[Path]:
    """The programs whose --env describes the run: the primitives suite's
    first (it knows the topology and the clock), then every application
    program the study runs."""
    used = list(dict.fromkeys(cell.program for cell in plan.cells if cell.program and not cell.unsupported))
    try:
        bench = [p for p in native.discover_programs() if p.name == "threadlab-bench-posix"]
    except ThreadlabError:
        bench = []
    return bench + used  # type: ignore[operator]


def cmd_apps(args: argparse.Namespace) -> int:
    from threadlab import cli
    from threadlab.store import Store, validate_run_name

    name = validate_run_name(args.name) if args.name is not None else None
    plan = _plan(args)
    unsupported = sum(1 for cell in plan.cells if cell.unsupported)
    if args.dry_run:
        for line in apps.dry_run_lines(plan):
            print(line)
        print(f"{len(plan.scenarios)} scenarios, {len(plan.cells)} cells ({unsupported} unsupported here), "
              f"{len(plan.jobs)} runs (seed {plan.seed})", file=sys.stderr)
        return cli.EXIT_OK
    db_path = cli._db_path(args)
    with Store(db_path) as store:
        store.require_free_name(name)
        env = environment.collect(_environment_programs(plan), None)
        run_id = store.create_run(
            name=name, command=[cli.PROG, *args.argv], options=plan.options(), catalog=plan.catalog(),
            environment=env, points_planned=len(plan.cells), record_schema=schema.RECORD_SCHEMA_ID,
            threadlab_version=__version__,
        )
        label = f"run {run_id}" + (f" ({name})" if name else "")
        progress = apps.StudyProgress(len(plan.jobs), enabled=not args.quiet)
        progress.message(
            f"threadlab: {label}: study apps: {len(plan.scenarios)} scenarios x {len(plan.kernels)} kernels x "
            f"{len(plan.threads)} thread counts = {len(plan.cells)} cells ({unsupported} unsupported here), "
            f"{plan.runs} runs each: {len(plan.jobs)} runs in a random order (seed {plan.seed}); store {db_path}"
        )
        for warning in env["warnings"]:
            progress.message(f"threadlab: warning: {warning}")

        def keep(cell: apps.Cell, record: dict[str, Any]) -> None:
            store.add_record(run_id, cell.index, record)

        started = time.monotonic()
        status = "failed"
        try:
            result = apps.run_study(plan, keep, progress)
            status = "interrupted" if result.interrupted_by else "complete"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            progress.close()
            store.finish_run(run_id, status, environment.finish(env))
    elapsed = time.monotonic() - started
    if args.json:
        for row in tables.speedups(result.records):
            print(json.dumps(row))
    else:
        console = cli.make_console()
        tables.render(console, result.records, title=f"Study apps, {label}")
    return _epilogue(label, status, result, elapsed, args.quiet, plan)


def _epilogue(label: str, status: str, result: apps.StudyResult, elapsed: float, quiet: bool, plan: apps.Plan) -> int:
    times = [r for r in result.records if r["metric"] == "time"]
    counts = {s: sum(1 for r in times if r["status"] == s) for s in ("ok", "unsupported", "failed")}
    flagged = sum(1 for r in times if any(not c["ok"] for c in r["checks"]))
    summary = (f"{counts['ok']} cells measured, {counts['unsupported']} unsupported here, {counts['failed']} failed"
               + (f", {flagged} flagged by a check" if flagged else ""))
    if status == "interrupted":
        print(f"threadlab: {label} interrupted after {result.runs_done} of {len(plan.jobs)} runs ({summary}); "
              "the measured cells are stored", file=sys.stderr)
        return 128 + int(result.interrupted_by or 2)
    if not quiet:
        print(f"threadlab: {label} complete in {format_duration(elapsed)}: {summary}", file=sys.stderr)
    wrong = any(not c["ok"] for r in times for c in r["checks"] if c["name"] in ("verified", "runs"))
    return 1 if counts["failed"] or wrong else 0


def is_study_run(options: Any) -> bool:
    return isinstance(options, dict) and options.get("study") == apps.STUDY


def render_run(console: Any, records: Sequence[dict[str, Any]], title: str) -> None:
    """The study's tables, for `threadlab show`."""
    tables.render(console, records, title=title)
