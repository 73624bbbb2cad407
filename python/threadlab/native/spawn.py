"""libthreadlab-spawn from Python: its launcher threadlab-spawn-mpirun,
which holds the one list of what the MPI needs here (docs/spawn.md), the
libraries it preloads, and the launcher's command line, for `threadlab
spawn run` (cli/spawn.py) and `threadlab study spawn` (study/spawn.py).

The launcher and the libraries are built only where an MPI is installed;
a missing one is a UserError saying so (`threadlab spawn run` documents
status 2 for it)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from threadlab.errors import ThreadlabError, UserError
from threadlab.native import discovery

LAUNCHER = "threadlab-spawn-mpirun"
LIBRARIES = {"openmpi": "libthreadlab-spawn.so", "mpich": "libthreadlab-spawn-mpich.so"}
MPIS = tuple(LIBRARIES)
_NEEDS_MPI = "it is built only where an MPI is installed: scripts/install-deps.sh installs Open MPI"


def find(name: str) -> Path:
    """A program or library of the spawn build (UserError saying how to get it)."""
    try:
        return discovery.find_one(name)
    except ThreadlabError as error:
        raise UserError(f"{error} ({_NEEDS_MPI})") from None


# THREADLAB_SPAWN_LIMIT_COUNTS (docs/spawn.md, "The decision"): the thread
# tasks alive (the seed's definition) or those not asleep in the library's
# waits, a spawning task's own slot going to its children (the default).
LIMIT_COUNTS: tuple[str, ...] = ("running", "runnable")


def find_launcher() -> Path:
    return find(LAUNCHER)


def find_library(mpi: str) -> Path:
    """The library over `mpi` (one of MPIS)."""
    return find(LIBRARIES[mpi])


def launch_argv(launcher: Path, command: Sequence[str], *, max_threads: str | None, timeout_s: float,
                spawn_timeout_s: float | None = None, mpi: str | None = None, processes: int | None = None,
                linked: bool = False, singleton: bool = False, limit_counts: str | None = None) -> list[str]:
    """The launcher's command line running `command` (a program and its
    arguments) under a whole-run limit of timeout_s: with the library at a
    thread limit of max_threads (a number or 'auto'), or plain MPI (None:
    every spawn a process).  spawn_timeout_s: the limit of one process
    spawn; mpi, processes (mpirun -n): the launcher's defaults when None;
    linked: the program has the library linked in (nothing preloaded);
    singleton: no mpirun; limit_counts: what the thread limit counts, one
    of LIMIT_COUNTS (the library's default, runnable, when None)."""
    argv = [str(launcher)]
    if mpi is not None:
        argv += ["--mpi", mpi]
    argv += ["--timeout", f"{timeout_s:g}"]
    if processes is not None:
        argv += ["-n", str(processes)]
    argv += ["--no-library"] if max_threads is None else ["--max-threads", max_threads]
    if max_threads is not None and limit_counts is not None:
        argv += ["--limit-counts", limit_counts]
    if linked:
        argv.append("--linked")
    if spawn_timeout_s is not None:
        argv += ["--spawn-timeout", f"{spawn_timeout_s:g}"]
    if singleton:
        argv.append("--singleton")
    return argv + ["--", *command]
