"""`threadlab rm start|stop|status|set` and `threadlab omp run` on the command
line (docs/commands/rm.md, docs/commands/omp.md): the resource manager and
the programs it manages, one command group; the work is done by
threadlab.native.rm."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from threadlab.cli.options import ArgumentParser, number
from threadlab.native import discovery, process, rm
from threadlab.errors import UserError

EXIT_NOT_RUNNING = rm.EXIT_NOT_RUNNING
RM_EXIT_STATUS = (
    "exit status: 0 done, 1 the manager failed (message and log tail on stderr), 2 bad usage, "
    f"{EXIT_NOT_RUNNING} no manager is running."
)
DEFAULT_WATCH_S = 1.0


def register(commands: Any, common: ArgumentParser) -> None:
    """`threadlab rm ...` and `threadlab omp run`.  They take no --db (not
    `common`): they keep no records (`threadlab study multiprog` stores
    the measurements)."""
    where = ArgumentParser(add_help=False)
    where.add_argument("--dir", type=Path, metavar="PATH", default=None,
                       help="the manager's directory (log, pid file, lock; its arena is named after it) "
                       f"(default: ${rm.DIR_ENV}, else $XDG_RUNTIME_DIR/threadlab, else /tmp/threadlab-UID)")
    parents = [where]

    manager = commands.add_parser(
        "rm", help="the resource manager of OpenMP programs: start, stop, status, set (after Barekas et al., A Multiprogramming Aware OpenMP Implementation)",
        description="threadlab-rm shares the CPUs among concurrently running OpenMP programs: every quantum it "
        "divides the CPUs among the programs registered in its shared-memory arena, and each program, run with "
        "`threadlab omp run`, sizes every parallel region to its share.",
        epilog="See docs/rm.md (how it works) and docs/commands/rm.md. " + RM_EXIT_STATUS,
    )
    manager.set_defaults(handler=_no_action)
    actions = manager.add_subparsers(dest="rm_action", metavar="ACTION", parser_class=ArgumentParser)

    start = actions.add_parser(
        "start", parents=parents, help="start the manager (detached)",
        description="Start threadlab-rm in the background and return once it manages its arena. Its log "
        "(rm.log) and pid file (rm.pid) are in its directory.",
        epilog="exit status: 0 started, 1 it could not start (one runs already, the arena belongs to another "
        "version: see --reset, ...; its reason and log tail are shown), 2 bad usage.",
    )
    start.set_defaults(handler=cmd_start)
    _add_policy_and_quantum(start, "start", rm.DEFAULT_QUANTUM_MS)
    start.add_argument("--cpus", type=rm.parse_cpu_list, metavar="LIST",
                       help="the CPUs to manage, e.g. 0-3,6 (default: every CPU this process may use)")
    start.add_argument("--slots", type=number("--slots", int, rm.SLOTS_MIN, rm.SLOTS_MAX), metavar="N",
                       help=f"arena slots: how many programs it manages at once, {rm.SLOTS_MIN}..{rm.SLOTS_MAX} "
                       "(default 64); more programs run unmanaged, with a warning")
    start.add_argument("--other-load", choices=rm.OTHER_LOAD, default=None,
                       help="count (the default): CPUs that work it does not manage keeps busy (programs it "
                       "refused or that run without the shim, anything else runnable) are no program's, measured "
                       "every quantum; ignore: divide every CPU among its programs")
    start.add_argument("--log-max-kb", type=number("--log-max-kb", int, rm.LOG_MAX_KB_MIN, rm.LOG_MAX_KB_MAX),
                       metavar="N", default=None,
                       help=f"rotate rm.log to rm.log.1 once it reaches N KiB, {rm.LOG_MAX_KB_MIN}..{rm.LOG_MAX_KB_MAX} "
                       "(default 256): the two never hold more than twice that")
    start.add_argument("--reset", action="store_true",
                       help="replace an arena left by another threadlab version (its programs run unmanaged)")
    start.add_argument("--foreground", action="store_true",
                       help="run in this terminal, logging here too, until Ctrl-C (for debugging)")

    stop = actions.add_parser(
        "stop", parents=parents, help="stop the manager",
        description="Stop the manager (SIGTERM) and wait for it to exit. Its programs notice at their next "
        "parallel region and run on unmanaged.",
        epilog=f"exit status: 0 stopped, 1 it is still running after the timeout, 2 bad usage, "
        f"{EXIT_NOT_RUNNING} no manager was running (the arena a killed one left is removed).",
    )
    stop.set_defaults(handler=cmd_stop)
    stop.add_argument("--timeout", type=number("--timeout", float, 0.1, 3600, "seconds"), metavar="S", default=5.0,
                      help="how long to wait for it to exit, 0.1..3600 s (default 5)")

    show = actions.add_parser(
        "status", parents=parents, help="the arena, live: the manager and a table of its programs",
        description="Show the manager (policy, quantum, heartbeat), its counters and one row per registered "
        "program: slot, pid, program, requested parallelism, team allocated, CPUs owned and which, the "
        "allocation's epoch, regions run and how long ago the last one started.",
        epilog=f"exit status: 0 a manager runs, 1 the arena cannot be read (another version), 2 bad usage, "
        f"{EXIT_NOT_RUNNING} no manager is running (--watch: 0 after Ctrl-C).",
    )
    show.set_defaults(handler=cmd_status)
    show.add_argument("--json", action="store_true", help="print the daemon's JSON object instead of the table")
    show.add_argument("--watch", nargs="?", const=DEFAULT_WATCH_S, default=None, metavar="S",
                      type=number("--watch", float, 0.05, 3600, "seconds"),
                      help=f"refresh every S seconds (default {DEFAULT_WATCH_S:g}) until Ctrl-C")

    change = actions.add_parser(
        "set", parents=parents, help="change the policy and/or the quantum of the running manager",
        description="Change the running manager's policy and/or quantum; it applies the change at once and the "
        "next allocations follow it.",
        epilog=f"exit status: 0 applied, 1 the manager refused or did not answer, 2 bad usage, "
        f"{EXIT_NOT_RUNNING} no manager is running.",
    )
    change.set_defaults(handler=cmd_set)
    _add_policy_and_quantum(change, "set", None)

    omp = commands.add_parser(
        "omp", help="run an OpenMP program under the resource manager (omp run)",
        description="OpenMP programs under threadlab-rm, through libthreadlab-omp (an LD_PRELOAD shim over "
        "GCC's libgomp) or on libthreadlab-gomp (GCC's libgomp ABI on user-level threads).",
        epilog="See docs/omp.md and docs/commands/omp.md.",
    )
    omp.set_defaults(handler=_no_omp_action)
    omp_actions = omp.add_subparsers(dest="omp_action", metavar="ACTION", parser_class=ArgumentParser)
    run = omp_actions.add_parser(
        "run", parents=parents, help="run an unmodified OpenMP program managed by threadlab-rm",
        usage="threadlab omp run [-h] [--dir PATH] [--runtime shim|ult] [--pin] [--quiet] -- PROGRAM [ARGS ...]",
        description="Run PROGRAM (built with gcc, g++ or gfortran -fopenmp) under the manager. --runtime shim "
        "(the default): the shim preloaded over libgomp, OMP_DYNAMIC=true and a short spin before idle threads "
        "sleep: a top-level parallel region gets min(its request, the manager's allocation) threads, its threads "
        "confined to the CPUs the manager gives; a region with a num_threads clause keeps that team unless "
        "OMP_DYNAMIC=true was set (OMP_DYNAMIC=false: every region keeps its request). "
        "--runtime ult: libthreadlab-gomp in place of libgomp: OpenMP threads are user-level threads whose "
        "virtual processors follow the allocation inside regions too. With no manager running the program runs "
        "unmanaged (the shim: one notice on stderr) and joins a manager that starts later.",
        epilog="exit status: PROGRAM's own (threadlab execs it), 2 bad usage (PROGRAM not found, ...). "
        "Example: threadlab omp run -- ./cg 1000",
    )
    run.set_defaults(handler=cmd_omp_run)
    run.add_argument("--runtime", type=rm.check_omp_runtime, default=rm.DEFAULT_OMP_RUNTIME, metavar="R",
                     help="the OpenMP runtime: " + "; ".join(f"{name}: {meaning}" for name, meaning
                                                               in rm.OMP_RUNTIMES.items())
                     + f" (default {rm.DEFAULT_OMP_RUNTIME})")
    run.add_argument("--pin", action="store_true",
                     help="pin team threads to the CPUs the manager allocates (re-pinned when they change; shim only)")
    run.add_argument("--quiet", action="store_true", help="no notices from the runtime on stderr")
    run.add_argument("command", nargs=argparse.REMAINDER, metavar="PROGRAM [ARGS ...]",
                     help="the program and its arguments, after --")


def _policy(text: str) -> str:
    return rm.check_policy(text, "--policy")


def _add_policy_and_quantum(parser: argparse.ArgumentParser, when: str, quantum_default: int | None) -> None:
    """--policy and --quantum-ms, as `start` and `set` take them."""
    shown = f" (default {rm.DAEMON_DEFAULT_POLICY})" if when == "start" else ""
    parser.add_argument("--policy", type=_policy, metavar="P",
                        help=f"the scheduling policy: {rm.policy_choices()}{shown}")
    shown = f" (default {quantum_default}; Barekas et al. used 120)" if quantum_default else ""
    parser.add_argument("--quantum-ms", type=number("--quantum-ms", int, rm.QUANTUM_MS_MIN, rm.QUANTUM_MS_MAX),
                        metavar="N", default=quantum_default,
                        help=f"the scheduling quantum in ms, {rm.QUANTUM_MS_MIN}..{rm.QUANTUM_MS_MAX}{shown}")


def _no_action(args: argparse.Namespace) -> int:
    raise UserError("an action is required: start, stop, status or set (see `threadlab rm --help`)")


def _no_omp_action(args: argparse.Namespace) -> int:
    raise UserError("an action is required: run (see `threadlab omp --help`)")


def _refuse_unusable(directory: Path) -> None:
    """A directory no manager may use (another user's, open to others, a
    link) is refused, saying why (exit 1), not reported as one where no
    manager is running."""
    try:
        os.close(rm.open_directory(directory))
    except FileNotFoundError:
        pass


def _not_running(directory: Path) -> int:
    _refuse_unusable(directory)
    print(f"threadlab: no resource manager is running (directory {directory}, arena {rm.arena_name(directory)})",
          file=sys.stderr)
    return EXIT_NOT_RUNNING


# ------------------------------------------------------------- rm start


def cmd_start(args: argparse.Namespace) -> int:
    directory = rm.resolve_dir(args.dir)
    if args.foreground:
        return _foreground(args, directory)
    manager = rm.Manager.start(directory=directory, policy=args.policy, quantum_ms=args.quantum_ms,
                               cpus=args.cpus, slots=args.slots, reset=args.reset, other_load=args.other_load,
                               log_max_kb=args.log_max_kb)
    state = manager.status()
    m = state.get("manager", {})
    print(f"threadlab-rm started (pid {manager.pid}): policy {m.get('policy')}, quantum {m.get('quantum_ms')} ms, "
          f"{state.get('ncpus')} CPUs ({state.get('cpus')}), {state.get('nslots')} slots, arena {manager.arena}; "
          f"log {rm.log_path(directory)}")
    return 0


def _foreground(args: argparse.Namespace, directory: Path) -> int:
    """Execs the daemon in the foreground: its own Ctrl-C handling and
    messages (it logs to the terminal with --verbose)."""
    program = discovery.find_one(rm.RM_PROGRAM)
    argv = [str(program), "--foreground", "--verbose",
            *rm.daemon_args(policy=args.policy, quantum_ms=args.quantum_ms, cpus=args.cpus, slots=args.slots,
                            reset=args.reset, other_load=args.other_load, log_max_kb=args.log_max_kb)]
    os.close(rm.open_directory(directory, create=True))
    process.replace_with(argv, rm.daemon_env(directory))


# -------------------------------------------------------------- rm stop


def cmd_stop(args: argparse.Namespace) -> int:
    """The daemon picks the process to stop (its pid file, checked), never
    the arena's header: anyone able to write an arena could name any pid."""
    directory = rm.resolve_dir(args.dir)
    pid, line = rm.stop_manager(directory, timeout=args.timeout)
    if pid is not None:
        print(f"threadlab-rm stopped (pid {pid})")
        return 0
    if "removed the arena" in line:  # killed: what it left is gone
        print(f"threadlab: {line}", file=sys.stderr)
        return EXIT_NOT_RUNNING
    return _not_running(directory)


# --------------------------------------------------------------- rm set


def cmd_set(args: argparse.Namespace) -> int:
    if args.policy is None and args.quantum_ms is None:
        raise UserError("nothing to set: give --policy P and/or --quantum-ms N (see `threadlab rm set --help`)")
    directory = rm.resolve_dir(args.dir)
    manager = rm.Manager.running(directory)
    if manager is None:
        return _not_running(directory)
    manager.set(policy=args.policy, quantum_ms=args.quantum_ms)
    m = manager.status().get("manager", {})
    print(f"threadlab-rm (pid {manager.pid}): policy {m.get('policy')}, quantum {m.get('quantum_ms')} ms")
    return 0


# ------------------------------------------------------------ rm status


def cmd_status(args: argparse.Namespace) -> int:
    directory = rm.resolve_dir(args.dir)
    if args.watch is not None:
        return _watch(directory, args.watch, args.json)
    state = rm.status(directory)
    if args.json:
        if not state.get("running"):
            _refuse_unusable(directory)
        print(json.dumps(state))
        return 0 if state.get("running") else EXIT_NOT_RUNNING
    if not state.get("running") and state.get("reason") == "no arena":
        return _not_running(directory)
    from threadlab.output.table import make_console

    make_console().print(render_status(state))
    return 0 if state.get("running") else EXIT_NOT_RUNNING


def _watch(directory: Path, interval: float, as_json: bool) -> int:
    """Refreshes until Ctrl-C; a manager that stops or starts meanwhile is
    shown as such (watching goes on).  On a terminal the view is redrawn in
    place; into a pipe or file each snapshot follows the last."""
    from rich.live import Live

    from threadlab.output.table import make_console

    console = make_console()
    try:
        if as_json or not console.is_terminal:
            while True:
                if as_json:
                    print(json.dumps(rm.status(directory)), flush=True)
                else:
                    console.print(render_status(rm.status(directory)))
                    console.print()
                    console.file.flush()
                time.sleep(interval)
        with Live(render_status(rm.status(directory)), console=console, auto_refresh=False) as live:
            while True:
                time.sleep(interval)
                live.update(render_status(rm.status(directory)), refresh=True)
    except KeyboardInterrupt:
        return 0


def _age(ms: Any) -> str:
    if not isinstance(ms, (int, float)):
        return "-"
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.0f} s"


def render_status(state: dict[str, Any]) -> Any:
    """The arena as a rich renderable: a header and one row per program."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    lines: list[Any] = []
    if state.get("reason") == "no arena":
        lines.append(Text(f"no resource manager is running (directory {state.get('directory')}, "
                          f"arena {state.get('arena')})"))
        return Group(*lines)
    m = state.get("manager", {})
    c = state.get("counters", {})
    apps = state.get("apps", [])
    lines.append(Text(f"arena {state.get('arena')} (layout {state.get('layout_version')}): {state.get('ncpus')} "
                      f"CPUs ({state.get('cpus')}), {len(apps)} of {state.get('nslots')} slots used"))
    if state.get("running"):
        stale = "" if m.get("fresh") else " (STALE: it does not beat)"
        lines.append(Text(f"manager pid {m.get('pid')}: policy {m.get('policy')}, quantum {m.get('quantum_ms')} ms, "
                          f"generation {m.get('generation')}, {m.get('quanta')} quanta, "
                          f"heartbeat {_age(m.get('heartbeat_age_ms'))} ago{stale}"))
    else:
        lines.append(Text(f"manager: NOT RUNNING (last pid {m.get('pid')}, state {m.get('state')}); "
                          "its programs run unmanaged"))
    if state.get("running") and m.get("other_load") == "count":
        lines.append(Text(f"other work: {float(m.get('other_cpus') or 0):.2f} CPUs busy, CPUs withheld: "
                          f"{m.get('withheld') or 'none'} (measured every quantum)"))
    elif state.get("running") and m.get("other_load") == "ignore":
        lines.append(Text("other work: ignored (--other-load ignore)"))
    lines.append(Text(f"counters: {c.get('arrivals', 0)} arrivals, {c.get('reallocations', 0)} reallocations, "
                      f"{c.get('reclaimed', 0)} slots reclaimed from dead programs, "
                      f"{c.get('full', 0)} refused (arena full)"))
    if not apps:
        lines.append(Text("no program registered"))
        return Group(*lines)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for header, justify in (("slot", "right"), ("pid", "right"), ("program", "left"), ("requested", "right"),
                            ("allocated", "right"), ("owns", "right"), ("CPUs", "left"), ("epoch", "right"),
                            ("regions", "right"), ("heartbeat", "right"), ("", "left")):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for app in apps:
        notes = [note for note, on in (("pinned", app.get("pinned")), ("DEAD", not app.get("alive"))) if on]
        # Every cell is Text, never markup: a program's name is whatever the
        # program calls itself, and "[link=...]" in it must stay text.
        cells = (app.get("slot"), app.get("pid"), app.get("comm"), app.get("requested"), app.get("team"),
                 app.get("owned"), app.get("cpus") or "-", app.get("epoch"), app.get("regions"),
                 _age(app.get("last_region_age_ms")), ", ".join(notes))
        table.add_row(*(Text(str(cell)) for cell in cells))
    lines.append(table)
    return Group(*lines)


# --------------------------------------------------------------- omp run


def cmd_omp_run(args: argparse.Namespace) -> int:
    rm.omp_run(args.command, directory=args.dir, pin=args.pin, quiet=args.quiet, runtime=args.runtime)  # threadlab is the program now
