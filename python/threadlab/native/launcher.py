"""The launcher of the mpi suite: the user's mpirun or srun, and the hosts it
reaches (docs/mpi.md).

Every point of the mpi suite is one launch: the launcher's words, then the
point's command line.  Before a run stores anything, the launcher starts
`threadlab-bench-mpi --hosts`, whose rank 0 prints the environment of
every host of the job: a launcher that cannot start the job fails there,
with its own message, and the run records each host, not only the one
running threadlab.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any, Sequence

from threadlab import vocabulary
from threadlab.native import process
from threadlab.errors import ThreadlabError, UserError

# Beside the MPI program: the launcher of the MPI library it was built with
# (native/bench/mpi/CMakeLists.txt).
MANIFEST = "threadlab-mpi.json"
HOSTS_OPTION = "--hosts"
HOSTS_TIMEOUT_S = 120.0
_VERSION_TIMEOUT_S = 10.0


def parse(text: str) -> list[str]:
    """--launcher 'mpirun -np 4 --hostfile hosts': its words, the first a
    program that exists."""
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise UserError(f"--launcher {text!r}: {error}") from None
    if not words:
        raise UserError("--launcher '': expected a command, e.g. 'mpirun -np 4 --hostfile hosts' or 'srun'")
    if shutil.which(words[0]) is None:
        raise UserError(f"--launcher {text!r}: {words[0]!r} is not a program on PATH")
    return words


def _flavour(executable: str) -> str:
    """'openmpi', 'mpich' or 'unknown', from the launcher's --version."""
    try:
        done = process.run([executable, "--version"], timeout_s=_VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = done.stdout + done.stderr
    if "Open MPI" in text or "OpenRTE" in text or "open-mpi" in text:
        return "openmpi"
    if "HYDRA" in text or "mpich" in text.lower():
        return "mpich"
    return "unknown"


def default(program: Path, ranks: int | None = None) -> list[str]:
    """Inside a Slurm allocation, srun (every task of the allocation, the
    program placing its own threads); otherwise the launcher of the MPI the
    program was built with, one rank per CPU this process may use, ranks
    not bound (the program binds them for its placements).  ranks: that
    many instead."""
    if os.environ.get("SLURM_JOB_ID"):
        return ["srun", "--cpu-bind=none"] + ([f"--ntasks={ranks}"] if ranks else [])
    executable = None
    try:
        executable = json.loads((program.parent / MANIFEST).read_text(encoding="utf-8")).get("mpiexec")
    except (OSError, ValueError, AttributeError):
        pass
    if not executable or not os.access(executable, os.X_OK):
        executable = shutil.which("mpirun") or shutil.which("mpiexec")
    if not executable:
        raise ThreadlabError("no MPI launcher: mpirun is not on PATH (install openmpi-bin: "
                             "scripts/install-deps.sh), or give one with --launcher")
    count = str(ranks or len(os.sched_getaffinity(0)))
    flavour = _flavour(executable)
    if flavour == "openmpi":
        words = [executable, "-np", count, "--bind-to", "none"]
        # Open MPI refuses root unless told; a local run as root (a
        # container) is the common case of that.
        return words + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    if flavour == "mpich":
        return [executable, "-n", count, "-bind-to", "none"]
    return [executable, "-np", count]


def probe_hosts(launcher: Sequence[str], program: Path, timeout_s: float = HOSTS_TIMEOUT_S) -> dict[str, Any]:
    """The environment of every host of a launch (the program's --hosts
    object), or a ThreadlabError saying why the launcher could not give it."""
    command = [*launcher, str(program), HOSTS_OPTION]
    shown = shlex.join(launcher)
    try:
        done = process.run(command, timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        raise ThreadlabError(f"launcher {shown!r} did not start {program.name} within {timeout_s:g} s") from None
    except OSError as error:
        raise ThreadlabError(f"launcher {shown!r} cannot be started: {error.strerror}") from None
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        said = [line.strip() for line in done.stderr.splitlines() if line.strip() and not line.startswith("---")]
        detail = f": {' '.join(said[:2])}" if said else ""  # launchers spread one message over lines
        raise ThreadlabError(f"launcher {shown!r} failed (exit status {done.returncode}){detail}")
    if len(lines) > 1:
        raise ThreadlabError(
            f"launcher {shown!r} started {len(lines)} separate MPI jobs of one rank each: its MPI is not the "
            f"one {program.name} was built with (see docs/mpi.md)")
    try:
        hosts = json.loads(lines[0])
    except json.JSONDecodeError as error:
        raise ThreadlabError(f"{program.name} {HOSTS_OPTION}: not JSON ({error.msg})") from None
    if not isinstance(hosts, dict) or not isinstance(hosts.get("hosts"), list) or not isinstance(hosts.get("world"), int):
        raise ThreadlabError(f"{program.name} {HOSTS_OPTION}: expected an object with 'world' and 'hosts'")
    return {"launcher": list(launcher), **hosts}


def describe(env: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, text) lines of the MPI hosts of a run, for `show` and the
    report; none for a run without the mpi suite."""
    mpi = env.get("mpi")
    if not isinstance(mpi, dict):
        return []
    hosts = [h for h in mpi.get("hosts", []) if isinstance(h, dict)]
    lines = [("MPI", f"{mpi.get('world', '?')} ranks on {len(hosts)} host(s), {mpi.get('library', '?')}, "
                     f"thread multiple {'yes' if mpi.get('thread_multiple') else 'no'}; launcher "
                     f"{shlex.join(mpi.get('launcher') or [])}")]
    for host in hosts:
        ranks = host.get("ranks") or []
        memory = host.get("memory_bytes")
        size = f", {memory / 2**30:.1f} GiB" if isinstance(memory, (int, float)) and memory > 0 else ""
        lines.append((f"host {host.get('host', '?')}",
                       f"ranks {vocabulary.format_ranges(ranks) or '?'}; {host.get('cpu_model') or 'unknown CPU'}, "
                       f"{host.get('online_cpus', '?')} CPUs{size}; {host.get('kernel', '?')}, glibc "
                       f"{host.get('libc', '?')}{', hypervisor' if host.get('hypervisor') else ''}; load "
                       f"{host.get('loadavg', '?')}"))
    return lines
