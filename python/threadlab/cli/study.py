"""`threadlab study apps|multiprog|spawn|omp` on the command line
(docs/commands/study.md): each study's options, its plan, and its run as
a stored run (run.lifecycle) driven by the study engine (study.engine).
Adding a study: a subparser and a cmd_ here (docs/architecture.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from threadlab import vocabulary
from threadlab.cli.options import EXIT_OK, PROG, ArgumentParser, choice, db_path, number
from threadlab.errors import ThreadlabError, UserError
from threadlab.native import discovery, protocol
from threadlab.native import spawn as native_spawn
from threadlab.records.store import validate_run_name
from threadlab.run import environment, lifecycle
from threadlab.run.progress import JobProgress
from threadlab.study import apps, engine, multiprog
from threadlab.study import omp as omp_study
from threadlab.study import spawn as spawn_study
from threadlab.study.registry import STUDIES


def register(commands: Any, common: ArgumentParser) -> None:
    """`threadlab study` and its studies."""
    study = commands.add_parser(
        "study", parents=[common], help="run a study: a matrix of scenarios, many runs each (apps, multiprog, spawn, omp)",
        description="Run a study: an experiment over a matrix of scenarios, stored as a run.",
        epilog="Studies: apps (after de Sá et al., A Comparative Study of Multithreaded Applications Performance in "
        "Different Scenarios: four multithreaded kernels over thread platforms, architectures, "
        "priorities and affinities); multiprog (after Barekas et al., A Multiprogramming "
        "Aware OpenMP Implementation: several OpenMP programs at once, under the resource "
        "manager and under libgomp's own settings); spawn (after Lima and Maillard, granularity control with "
        "threads in dynamic MPI programs: CilkSort over MPI_Comm_spawn, tasks as threads up to a limit against "
        "processes); omp (the omp suite's overheads, each runtime side by side over many runs: issue 14's "
        "ratios to libgomp). See docs/commands/study.md.",
    )
    study.set_defaults(handler=_no_study)
    studies = study.add_subparsers(dest="study", metavar="STUDY", parser_class=ArgumentParser)
    a = studies.add_parser(
        "apps", parents=[common], help="four multithreaded kernels over a matrix of scenarios (after de Sá et al.)",
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
    a.add_argument("--runs", type=number("--runs", int, 1, 100000), metavar="N",
                   help=f"runs per scenario and thread count, 1..100000 (default {apps.DEFAULT_RUNS}, as in de Sá et al.'s study; "
                   f"{apps.QUICK_RUNS} with --quick)")
    a.add_argument("--factors", type=_design, metavar="SPEC",
                   help="the design: blocks separated by ',', the factors of a block (platform, arch, priority, "
                   "affinity) crossed with '*', the others at their baseline (first level); 'all' crosses "
                   f"everything, 'none' is the baseline alone (default {apps.DEFAULT_DESIGN})")
    for factor, levels, default in (
        ("platform", apps.PLATFORMS, ",".join(apps.PLATFORMS)),
        ("arch", apps.ARCHS, ",".join(apps.ARCHS)),
        ("priority", apps.PRIORITIES + ("nice:N", "fifo:P", "rr:P"), ",".join(apps.PRIORITIES)),
        ("affinity", apps.AFFINITIES, ",".join(apps.AFFINITIES)),
    ):
        a.add_argument(f"--{factor}", type=_levels(factor), metavar="LIST",
                       help=f"levels of the {factor} factor, the first being its baseline, from "
                       f"{', '.join(levels)} (default {default})")
    a.add_argument("--quick", action="store_true",
                   help=f"small sizes and {apps.QUICK_RUNS} runs (under a minute on two CPUs)")
    a.add_argument("--paper", action="store_true", help="the sizes of de Sá et al.'s paper (1e10 MIPS operations, 1e8 MFLOPS "
                   "operations, 1e9 pi terms, 1e8 trapezoids): long")
    a.add_argument("--size", type=apps.parse_sizes, metavar="K=N,...",
                   help="problem sizes of some kernels, e.g. mips=4e8,pi=1e8 (MIPS and MFLOPS: a multiple of 4)")
    _add_run_options(
        a, order="run", timeout=f"a run taking longer is killed and counted as failed (default "
        f"{apps.DEFAULT_TIMEOUT_S:g} s, {apps.QUICK_TIMEOUT_S:g} s with --quick, {apps.PAPER_TIMEOUT_S:g} s with --paper)",
        json_what="the speedups", dry_run="print the scenarios and one command per cell, and stop")
    _add_multiprog(studies, common)
    _add_spawn(studies, common)
    _add_omp(studies, common)


def _add_omp(studies: Any, common: ArgumentParser) -> None:
    o = studies.add_parser(
        "omp", parents=[common], help="the omp suite's overheads, the runtimes side by side over many runs",
        description="Each OpenMP construct of the omp suite (EPCC-style overheads, docs/omp-suite.md) on each "
        "runtime built here (libgomp, libomp, the manager's shim over libgomp, threadlab-gomp on user-level "
        "threads), each cell run many times as a point of the suite's own program (its adaptive timing loop and "
        "its checks), all runs of all cells in one seeded random order, so that the machine's drift falls on "
        "every runtime alike. Prints each construct's median overhead per runtime (the median of the runs' "
        "medians, 95% interval) and each runtime's median over libgomp's with its 95% interval; stores the run "
        "(show, compare --between model=gomp,ult and report work on it).",
        epilog="exit status: 0 every run verified, 1 a run failed or a check failed (a run during which the "
        "machine changed state is marked, not failed), 2 bad usage, 130 interrupted by Ctrl-C (the finished "
        "cells are kept). See docs/omp-suite.md.",
    )
    o.set_defaults(handler=cmd_omp)
    o.add_argument("--constructs", type=omp_study.parse_constructs, metavar="LIST",
                   help=f"constructs of omp.sync and omp.task, comma-separated (default "
                   f"{','.join(omp_study.DEFAULT_CONSTRUCTS)}: issue 14's targets)")
    o.add_argument("--runtimes", type=omp_study.parse_runtimes, metavar="LIST",
                   help=f"runtimes, comma-separated from those built: {', '.join(omp_study.RUNTIME_ORDER)} "
                   "(default: every one built)")
    o.add_argument("--threads", type=number("--threads", int, 1, 4096), metavar="N",
                   help=f"team size (default {omp_study.DEFAULT_THREADS}); one of the suite's thread counts")
    o.add_argument("--placement", type=choice("--placement", vocabulary.PLACEMENTS), metavar="P",
                   help=f"where the team runs, one of {', '.join(vocabulary.PLACEMENTS)} (default "
                   f"{omp_study.DEFAULT_PLACEMENT})")
    o.add_argument("--runs", type=number("--runs", int, 1, 1000), metavar="N",
                   help=f"runs per cell, 1..1000 (default {omp_study.DEFAULT_RUNS}; {omp_study.QUICK_RUNS} with "
                   "--quick)")
    o.add_argument("--quick", action="store_true",
                   help=f"{omp_study.QUICK_RUNS} runs per cell, each point with the suite's short budgets (--quick)")
    _add_run_options(
        o, order="run", timeout=f"a run taking longer is killed and counted as failed (default "
        f"{omp_study.DEFAULT_TIMEOUT_S:g} s, {omp_study.QUICK_TIMEOUT_S:g} s with --quick)",
        json_what="the cells", dry_run="print one command per cell, and stop")


def _add_spawn(studies: Any, common: ArgumentParser) -> None:
    s = studies.add_parser(
        "spawn", parents=[common], help="CilkSort over MPI_Comm_spawn: thread tasks against processes (seed 001)",
        description="CilkSort of N integers (threadlab-spawn-cilksort: one MPMD program, 4 sort and 3 merge tasks "
        "per level, sequential at 2048) under libthreadlab-spawn at the seed's thread limits and with plain MPI "
        "(process-only), on random (3 seeds), sorted and reversed inputs; every run its own mpirun under a time "
        "limit, all runs in a seeded random order, every sort verified (sorted, a permutation of the input, exactly "
        "the algorithm's tasks). Prints the seed's Figure 2 as tables (mean time and 95% interval per input and "
        "limit), the gain over process-only, the time per task and the tasks spawned as threads and processes; "
        "stores the run.",
        epilog="exit status: 0 every run verified, 1 a run failed or a check failed (a cell that cannot finish "
        "here is reported as failed with its estimate), 2 bad usage, 130 interrupted by Ctrl-C (the finished cells "
        "are kept). See docs/spawn.md.",
    )
    s.set_defaults(handler=cmd_spawn)
    s.add_argument("--size", type=spawn_study.parse_size, metavar="N",
                   help=f"integers to sort (default {spawn_study.DEFAULT_N:,}, the seed's; {spawn_study.QUICK_N:,} "
                   "with --quick)")
    s.add_argument("--inputs", type=spawn_study.parse_inputs, metavar="LIST",
                   help=f"inputs, comma-separated from {', '.join(spawn_study.INPUTS)} (default: all)")
    s.add_argument("--seeds", type=spawn_study.parse_seeds, metavar="LIST",
                   help="seeds of the random inputs (default 1,2,3, the seed's three; 1 with --quick)")
    s.add_argument("--limits", type=spawn_study.parse_limits, metavar="LIST",
                   help=f"thread limits and process-only, comma-separated (default {','.join(spawn_study.LIMITS)})")
    s.add_argument("--runs", type=number("--runs", int, 1, 1000), metavar="N",
                   help=f"runs per cell, 1..1000 (default {spawn_study.DEFAULT_RUNS}; the seed took 20; "
                   f"{spawn_study.QUICK_RUNS} with --quick)")
    s.add_argument("--limit-counts", type=choice("--limit-counts", native_spawn.LIMIT_COUNTS),
                   default=spawn_study.DEFAULT_LIMIT_COUNTS, metavar="running|runnable",
                   help="what the library's thread limit counts at every run: runnable, the thread tasks not "
                   "asleep in the library's waits, a spawning task's slot going to its children (default), or "
                   "running, the thread tasks alive (the seed's)")
    s.add_argument("--spawn-timeout", type=number("--spawn-timeout", float, 1, 86400, "seconds"), metavar="S",
                   help="the limit of one process spawn inside a run (default "
                   f"{spawn_study.DEFAULT_SPAWN_TIMEOUT_S:g} s, {spawn_study.QUICK_SPAWN_TIMEOUT_S:g} s with --quick): "
                   "a hung spawn ends its run, which is counted as failed with the reason")
    s.add_argument("--quick", action="store_true",
                   help=f"{spawn_study.QUICK_N:,} integers, random (seed 1), sorted and reversed, "
                   f"{spawn_study.QUICK_RUNS} runs (under two minutes on two CPUs)")
    _add_run_options(
        s, order="run", timeout=f"a run taking longer is killed and counted as failed (default "
        f"{spawn_study.DEFAULT_TIMEOUT_S:g} s, {spawn_study.QUICK_TIMEOUT_S:g} s with --quick)",
        json_what="the cells", dry_run="print one command per cell, and stop")


def _add_multiprog(studies: Any, common: ArgumentParser) -> None:
    m = studies.add_parser(
        "multiprog", parents=[common], help="OpenMP programs sharing the CPUs: the manager against libgomp (after Barekas et al.)",
        description="Workloads of k instances of one NAS-like OpenMP kernel (threadlab-npb: ep, cg, mg, sp), "
        "started at once (or --stagger'ed), each asking for every CPU, under seven baselines: rm (threadlab-rm, a "
        "private manager per experiment, and the libgomp shim), ult (the same manager, the kernels on "
        "libthreadlab-gomp: OpenMP on user-level threads), gomp (plain libgomp defaults), llvmomp (plain LLVM "
        "libomp defaults: the kernels linked against libomp, built where libomp-dev is installed), passive "
        "(OMP_WAIT_POLICY=passive), dynamic (OMP_DYNAMIC=true), static (each instance bound to its share of the "
        "CPUs, OMP_NUM_THREADS = its size); plus dedicated runs of one instance on 1..N CPUs (rm and gomp), "
        "and scenarios where the manager should win: kernels mixed and arriving staggered, a late arrival, and "
        "faults (the manager stopped, a program SIGKILLed mid-run). "
        "Measures each instance's turnaround (start to exit), context switches and team sizes, and each "
        "workload's maximum turnaround and makespan; every instance must verify its result. All experiments run "
        "in a seeded random order. Prints Barekas et al.'s Table 1 (dedicated) and Table 2 (mean turnaround per "
        "baseline and degree, 95% CI across runs), the ratios to gomp and the slowdowns; stores the run "
        "(show, compare and report work on it; report draws the log-scale turnaround figure).",
        epilog="exit status: 0 every instance verified, 1 an experiment failed or an instance did not verify, "
        "2 bad usage, 130 interrupted by Ctrl-C (the finished cells are kept). See docs/study-multiprog.md.",
    )
    m.set_defaults(handler=cmd_multiprog)
    m.add_argument("--apps", type=multiprog.parse_apps, metavar="LIST",
                   help=f"kernels, comma-separated from {', '.join(multiprog.APPS)} (default: all)")
    m.add_argument("--degree", type=multiprog.parse_degrees, metavar="LIST",
                   help=f"multiprogramming degrees (instances at once), 1..{multiprog.MAX_DEGREE}, e.g. 1,2,4,8 or "
                   f"1-4 (default {','.join(map(str, multiprog.DEFAULT_DEGREES))}, as in Barekas et al.; "
                   f"{','.join(map(str, multiprog.QUICK_DEGREES))} with --quick)")
    m.add_argument("--baselines", type=multiprog.parse_baselines, metavar="LIST",
                   help=f"baselines, comma-separated from {', '.join(multiprog.BASELINES)} (default: all; "
                   "llvmomp only where threadlab-npb-llvmomp was built)")
    m.add_argument("--runs", type=number("--runs", int, 1, 1000), metavar="N",
                   help=f"experiments per cell, 1..1000 (default {multiprog.DEFAULT_RUNS}, as in Barekas et al.; "
                   f"{multiprog.QUICK_RUNS} with --quick)")
    m.add_argument("--stagger", type=number("--stagger", float, 0, multiprog.MAX_STAGGER_S, "seconds"),
                   metavar="SECONDS", help="start instance i at i x SECONDS instead of all at once (default 0)")
    m.add_argument("--size", type=multiprog.parse_size, metavar="S",
                   help=f"kernel size, one of {', '.join(multiprog.SIZES)} (default {multiprog.DEFAULT_SIZE}, like NAS "
                   f"class W; {multiprog.QUICK_SIZE} with --quick)")
    m.add_argument("--no-dedicated", action="store_true", help="skip the dedicated runs (Table 1)")
    m.add_argument("--scenarios", type=multiprog.parse_scenarios, metavar="LIST",
                   help=f"scenarios, comma-separated from {', '.join(multiprog.SCENARIOS)}, or none (default: all; "
                   "docs/study-multiprog.md says what each runs)")
    m.add_argument("--policy", type=_rm_policy, metavar="P",
                   help=f"the manager's policy under rm: {', '.join(rm_policies())} (default "
                   f"{multiprog.DEFAULT_POLICY}, Barekas et al.'s time-sharing dynamic space sharing)")
    m.add_argument("--other-load", choices=rm_other_load(), default="count",
                   help="under rm, count (default) the CPUs other work keeps busy and withhold them, as the "
                   "manager does by default, or ignore them (docs/rm.md \"Other work\")")
    m.add_argument("--quantum-ms", type=number("--quantum-ms", int, 1, 60000, "milliseconds"), metavar="MS",
                   help=f"the manager's quantum (default {multiprog.DEFAULT_QUANTUM_MS}; Barekas et al. used 120)")
    m.add_argument("--quick", action="store_true",
                   help=f"size {multiprog.QUICK_SIZE}, degrees {','.join(map(str, multiprog.QUICK_DEGREES))}, "
                   f"{multiprog.QUICK_RUNS} runs (well under a minute on two CPUs)")
    _add_run_options(
        m, order="experiment", timeout=f"an experiment taking longer is killed and counted as failed (default "
        f"{multiprog.DEFAULT_TIMEOUT_S:g} s, {multiprog.QUICK_TIMEOUT_S:g} s with --quick)",
        json_what="the multiprogrammed cells", dry_run="print each cell's instances and environment, and stop")


def _add_run_options(parser: argparse.ArgumentParser, *, order: str, timeout: str, json_what: str,
                     dry_run: str) -> None:
    """The options every study has: --seed, --timeout, --name, --json,
    --quiet, --dry-run."""
    parser.add_argument("--seed", type=number("--seed", int, 0, 2**32 - 1), metavar="N",
                        help=f"seed of the {order} order (default: random, recorded with the run)")
    parser.add_argument("--timeout", type=number("--timeout", float, 1, 86400, "seconds"), metavar="S",
                        help=timeout)
    parser.add_argument("--name", metavar="NAME", help="a name for the run, usable wherever a RUN is asked")
    parser.add_argument("--json", action="store_true",
                        help=f"print {json_what} as JSON Lines on stdout instead of the tables")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress or warnings on stderr")
    parser.add_argument("--dry-run", action="store_true", help=dry_run)


def rm_policies() -> tuple[str, ...]:
    from threadlab.native import rm

    return rm.POLICIES


def rm_other_load() -> tuple[str, ...]:
    from threadlab.native import rm

    return rm.OTHER_LOAD


def _rm_policy(text: str) -> str:
    from threadlab.native import rm

    return rm.check_policy(text, "--policy")


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


def _environment_programs(plan: apps.Plan | omp_study.Plan) -> list[Path]:
    """The programs whose --env describes the run: the primitives suite's
    first (it knows the topology and the clock), then every program the
    study's cells run (apps, omp)."""
    used = list(dict.fromkeys(cell.program for cell in plan.cells if cell.program and not cell.unsupported))
    return _bench_program() + used  # type: ignore[operator]


def _bench_program() -> list[Path]:
    """The primitives suite's program, when built: its --env knows the
    topology, the clock and the compiler."""
    try:
        return [discovery.find_one(protocol.REFERENCE_PROGRAM)]
    except ThreadlabError:
        return []


def _stored_study(args: argparse.Namespace, study: str, *, name: str | None, options: dict[str, Any],
                  catalog: Any, programs: list[Path], planned: int, total: int, header: str, noun: str,
                  run: Callable[[lifecycle.Keep, JobProgress], Any],
                  note: Callable[[], str | None] = lambda: None) -> int:
    """The study as a stored run (run.lifecycle), then the study's note on
    how it ran (note(), unless --quiet), its tables (or its --json lines)
    and its epilogue: the command's exit status."""
    spec = lifecycle.RunSpec(name=name, command=[PROG, *args.argv], options=options, catalog=catalog,
                             planned=planned, header=header, environment=lambda: environment.collect(programs, None),
                             unit="cells")
    progress = JobProgress(total, enabled=not args.quiet, noun=noun)
    finished = lifecycle.stored_run(db_path(args), spec, progress, lambda keep: run(keep, progress))
    records = finished.result.records
    said = note()
    if said and not args.quiet:
        print(f"threadlab: {said}", file=sys.stderr)
    kind = STUDIES[study]
    if args.json:
        for row in kind.rows(records):
            print(json.dumps(row))
    else:
        from threadlab.output.table import make_console

        kind.render(make_console(), records, title=f"Study {study}, {finished.label}")
    times = engine.main_records(records)
    counts = {s: sum(1 for r in times if r["status"] == s) for s in ("ok", "unsupported", "failed")}
    flagged = sum(1 for r in times if any(not c["ok"] for c in r["checks"]))
    summary = (f"{counts['ok']} cells measured, {counts['unsupported']} unsupported here, {counts['failed']} failed"
               + (f", {flagged} flagged by a check" if flagged else ""))
    wrong = any(not c["ok"] for r in times for c in r["checks"] if c["name"] in ("verified", "runs"))
    return lifecycle.epilogue(finished, quiet=args.quiet, summary=summary,
                              done=f"{finished.result.done} of {total} {noun}", kept="the measured cells are stored",
                              failed=bool(counts["failed"]) or wrong)


def cmd_apps(args: argparse.Namespace) -> int:
    name = validate_run_name(args.name) if args.name is not None else None
    plan = _plan(args)
    unsupported = sum(1 for cell in plan.cells if cell.unsupported)
    if args.dry_run:
        return _dry_run(apps.dry_run_lines(plan), f"{len(plan.scenarios)} scenarios, {len(plan.cells)} cells "
                        f"({unsupported} unsupported here), {len(plan.jobs)} runs (seed {plan.seed})")
    header = (f"study apps: {len(plan.scenarios)} scenarios x {len(plan.kernels)} kernels x {len(plan.threads)} "
              f"thread counts = {len(plan.cells)} cells ({unsupported} unsupported here), {plan.runs} runs each: "
              f"{len(plan.jobs)} runs in a random order (seed {plan.seed})")
    return _stored_study(
        args, apps.STUDY, name=name, options=plan.options(), catalog=plan.catalog(),
        programs=_environment_programs(plan), planned=len(plan.cells), total=len(plan.jobs), header=header,
        noun="runs", run=lambda keep, progress: apps.run_study(plan, keep, progress),
    )


def cmd_multiprog(args: argparse.Namespace) -> int:
    name = validate_run_name(args.name) if args.name is not None else None
    plan = multiprog.make_plan(
        program=multiprog.find_program(), apps=args.apps, baselines=args.baselines, degrees=args.degree,
        runs=args.runs, size=args.size, stagger_s=args.stagger or 0.0, seed=args.seed,
        dedicated=not args.no_dedicated, scenarios=args.scenarios, policy=args.policy or multiprog.DEFAULT_POLICY,
        other_load=args.other_load,
        quantum_ms=args.quantum_ms or multiprog.DEFAULT_QUANTUM_MS, timeout_s=args.timeout, quick=args.quick,
    )
    managed = [b for b in plan.baselines if b in multiprog.MANAGED_BASELINES]
    if managed:  # the manager, the launcher and each runtime must exist before anything runs
        from threadlab.native import rm

        discovery.find_one(rm.RM_PROGRAM)
        discovery.find_one(rm.LAUNCHER)
        for baseline in managed:
            discovery.find_one(rm.OMP_RUNTIME_LIBRARIES[multiprog.MANAGED_BASELINES[baseline]])
    if args.dry_run:
        return _dry_run(multiprog.dry_run_lines(plan),
                        f"{len(plan.cells)} cells, {len(plan.jobs)} experiments (seed {plan.seed})")
    header = (f"study multiprog: {len(plan.apps)} kernels x {len(plan.baselines)} baselines x degrees "
              f"{','.join(map(str, plan.degrees))}" + (" + dedicated runs" if plan.dedicated else "")
              + (f" + scenarios {','.join(plan.scenarios)}" if plan.scenarios else "")
              + f" = {len(plan.cells)} cells, {plan.runs} experiments each: {len(plan.jobs)} experiments in a "
              f"random order (seed {plan.seed}), size {plan.size}, CPUs {','.join(map(str, plan.cpus))}")
    return _stored_study(
        args, multiprog.STUDY, name=name, options=plan.options(), catalog=plan.catalog(), programs=_bench_program(),
        planned=len(plan.cells), total=len(plan.jobs), header=header, noun="experiments",
        run=lambda keep, progress: multiprog.run_study(plan, keep, progress),
    )


def _dry_run(lines: Iterable[str], summary: str) -> int:
    """--dry-run: the plan's lines on stdout, its size on stderr."""
    for line in lines:
        print(line)
    print(summary, file=sys.stderr)
    return EXIT_OK


def cmd_spawn(args: argparse.Namespace) -> int:
    name = validate_run_name(args.name) if args.name is not None else None
    program, launcher = spawn_study.find_programs()
    plan = spawn_study.make_plan(
        program=program, launcher=launcher, n=args.size, inputs=args.inputs, seeds=args.seeds, limits=args.limits,
        runs=args.runs, seed=args.seed, timeout_s=args.timeout, spawn_timeout_s=args.spawn_timeout, quick=args.quick,
        limit_counts=args.limit_counts,
    )
    if args.dry_run:
        return _dry_run(spawn_study.dry_run_lines(plan),
                        f"{len(plan.cells)} cells, {len(plan.jobs)} runs (seed {plan.seed})")
    header = (f"study spawn: CilkSort of {plan.n:,} integers, {len(plan.cells)} cells (inputs x limits "
              f"{','.join(plan.limits)}, counting {plan.limit_counts} thread tasks), {plan.runs} runs each: {len(plan.jobs)} runs in a random order "
              f"(seed {plan.seed})")
    # The CilkSort program's --env names the MPI, its version and thread level.
    return _stored_study(
        args, spawn_study.STUDY, name=name, options=plan.options(), catalog=plan.catalog(),
        programs=_bench_program() + [plan.program], planned=len(plan.cells), total=len(plan.jobs), header=header,
        noun="runs", run=lambda keep, progress: spawn_study.run_study(plan, keep, progress),
        note=lambda: plan.pilot_note,
    )


def cmd_omp(args: argparse.Namespace) -> int:
    name = validate_run_name(args.name) if args.name is not None else None
    catalog, programs = omp_study.find_suite()
    plan = omp_study.make_plan(
        catalog=catalog, programs=programs, constructs=args.constructs, runtimes=args.runtimes, threads=args.threads,
        placement=args.placement, runs=args.runs, seed=args.seed, timeout_s=args.timeout, quick=args.quick,
    )
    if args.dry_run:
        return _dry_run(omp_study.dry_run_lines(plan),
                        f"{len(plan.cells)} cells, {len(plan.jobs)} runs (seed {plan.seed})")
    header = (f"study omp: {len(plan.constructs)} constructs x {len(plan.runtimes)} runtimes "
              f"({','.join(plan.runtimes)}) = {len(plan.cells)} cells, {plan.threads} threads {plan.placement}, "
              f"{plan.runs} runs each: {len(plan.jobs)} runs in a random order (seed {plan.seed})")
    return _stored_study(
        args, omp_study.STUDY, name=name, options=plan.options(), catalog=plan.catalog(),
        programs=_environment_programs(plan), planned=len(plan.cells), total=len(plan.jobs), header=header,
        noun="runs", run=lambda keep, progress: omp_study.run_study(plan, keep, progress),
    )
