"""`threadlab spawn run` on the command line (docs/commands/spawn.md): an
MPI program with libthreadlab-spawn (or plain MPI), through the native
launcher threadlab-spawn-mpirun, which holds the one list of what the MPI
needs here (docs/spawn.md); the launcher and its command line are
threadlab.native.spawn's."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from threadlab.cli.options import ArgumentParser, choice, number
from threadlab.errors import UserError
from threadlab.native import process, spawn

DEFAULT_TIMEOUT_S = 600.0
MAX_TIMEOUT_S = 86400.0
USAGE = "threadlab spawn run [options] -- PROGRAM [ARGS ...]"


def parse_max_threads(text: str) -> str:
    """--max-threads: 'auto' or a number of thread tasks (0 = processes only)."""
    value = text.strip()
    if value == "auto" or (value.isdigit() and int(value) <= 1_000_000):
        return str(int(value)) if value.isdigit() else value
    raise UserError(f"--max-threads {text}: expected a number of thread tasks from 0 to 1000000, or auto")


def register(commands: Any, common: ArgumentParser) -> None:
    """`threadlab spawn run`.  It keeps no records (no --db: not `common`)."""
    group = commands.add_parser(
        "spawn", help="run an MPI program whose spawns become threads (libthreadlab-spawn, after Lima and Maillard)",
        description="MPI programs whose MPI_Comm_spawn of themselves starts threads while the process is under "
        "its thread limit, and real processes beyond (libthreadlab-spawn, an LD_PRELOAD library over the MPI).",
        epilog="See docs/spawn.md and docs/commands/spawn.md.",
    )
    group.set_defaults(handler=_no_action)
    actions = group.add_subparsers(dest="spawn_action", metavar="ACTION", parser_class=ArgumentParser)
    run = actions.add_parser(
        "run", help="run an MPI program with libthreadlab-spawn (or plain MPI) under mpirun, with a time limit",
        usage="threadlab spawn run [-h] [--max-threads N|auto] [--limit-counts running|runnable] [--no-library] [--mpi openmpi|mpich] [--linked] "
        "[--timeout S] [--spawn-timeout S] [--singleton] [-n N] -- PROGRAM [ARGS ...]",
        description="Runs PROGRAM under mpirun (or as a singleton) with libthreadlab-spawn preloaded and "
        "Open MPI's settings for this machine (root, oversubscription, TCP on loopback for spawned jobs), "
        "under a time limit; the program keeps its own arguments.",
        epilog="exit status: PROGRAM's (or mpirun's), 124 a time limit was reached, 2 bad usage (PROGRAM not "
        "found, the library not built, ...). Example: threadlab spawn run --max-threads 8 -- ./prog 1000",
    )
    run.set_defaults(handler=cmd_spawn_run)
    run.add_argument("--max-threads", type=parse_max_threads, default="auto", metavar="N|auto",
                     help="thread tasks alive at once per process: a number (0 = every spawn a process) or auto, "
                     "the CPUs this process may use or threadlab-rm's allocation (default auto)")
    run.add_argument("--limit-counts", type=choice("--limit-counts", spawn.LIMIT_COUNTS), default=None,
                     metavar="running|runnable",
                     help="what the limit counts: runnable, the thread tasks not asleep in the library's waits "
                     "(default: a task waiting for its children's messages gives its slot back, and a spawning "
                     "task's own slot goes to its children), or running, the thread tasks alive (the seed's)")
    run.add_argument("--no-library", action="store_true", help="plain MPI: every spawn is a process")
    run.add_argument("--mpi", type=choice("--mpi", spawn.MPIS), default="openmpi", metavar="MPI",
                     help="the MPI the program was built with: openmpi (default) or mpich (which spawns threads "
                     "only here)")
    run.add_argument("--linked", action="store_true",
                     help="the program is linked with the library already: preload nothing")
    run.add_argument("--timeout", type=number("--timeout", float, 1, MAX_TIMEOUT_S, "seconds"),
                     default=DEFAULT_TIMEOUT_S, metavar="S",
                     help=f"the whole run's limit (default {DEFAULT_TIMEOUT_S:g} s); then status 124")
    run.add_argument("--spawn-timeout", type=number("--spawn-timeout", float, 1, MAX_TIMEOUT_S, "seconds"),
                     metavar="S", help="the limit of one process spawn, MPI_Init or MPI_Finalize inside the "
                     "program (default 60 s): the Open MPI + PMIx 4 hang ends the run with the reason")
    run.add_argument("--singleton", action="store_true", help="start PROGRAM without mpirun")
    run.add_argument("-n", dest="np", type=number("-n", int, 1, 4096), default=1, metavar="N",
                     help="processes mpirun starts (default 1)")
    run.add_argument("command", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARGS ...]",
                     help="the program and its arguments, after --")


def _no_action(args: argparse.Namespace) -> int:
    raise UserError("an action is required: run (see `threadlab spawn --help`)")


def program_command(args: argparse.Namespace) -> list[str]:
    """PROGRAM and its arguments, PROGRAM resolved on $PATH and made
    absolute (a spawn of argv[0] is then the same file)."""
    return process.user_program(args.command, USAGE)


def launcher_argv(args: argparse.Namespace, launcher: Path, command: list[str]) -> list[str]:
    """The launcher's command line for these options and the command."""
    if not args.no_library and not args.linked:
        spawn.find_library(args.mpi)  # said before anything runs
    return spawn.launch_argv(launcher, command, max_threads=None if args.no_library else args.max_threads,
                             timeout_s=args.timeout, spawn_timeout_s=args.spawn_timeout, mpi=args.mpi,
                             processes=args.np, linked=args.linked, singleton=args.singleton,
                             limit_counts=args.limit_counts)


def cmd_spawn_run(args: argparse.Namespace) -> int:
    command = program_command(args)  # the user's mistakes first
    process.replace_with(launcher_argv(args, spawn.find_launcher(), command))
