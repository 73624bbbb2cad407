"""Every child process of threadlab starts here: benchmark points, the
studies' program runs, crosscheck's naive program, the native programs'
--list/--env queries, the environment probes and the JVM launcher's JVM
(docs/security.md, "Child processes").

A child started by start():

- leads its own session and process group, so a timeout or a Ctrl-C kills
  it with every helper it forked (kill_group), and a Ctrl-C typed at the
  terminal reaches threadlab alone.  A child of a child (the JVM the JVM
  launcher starts) stays in its parent's group instead (own_group=False):
  the point's group, killed whole with everything the JVM forks;
- dies with threadlab: the kernel sends it SIGKILL when the thread that
  started it ends (PR_SET_PDEATHSIG, set between fork and exec).  That is
  a thread, not the process: children are started from the main thread,
  which lives as long as threadlab.  SIGKILL also ends a stopped child;
- carries a time limit of its own, armed before exec and kept across it:
  an interval timer (SIGALRM, wall-clock) and RLIMIT_CPU (SIGXCPU, then
  SIGKILL: CPU time of all its threads, the timeout times the CPUs it may
  use; inherited by what it forks, and the limit of programs that ignore
  SIGALRM and SIGXCPU, as Go programs do).  Both fall due `grace` after
  threadlab's own timeout would have, so threadlab normally kills first
  and records why; they matter when threadlab is stopped or gone.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
from pathlib import Path
from typing import Any, Callable, Sequence

# Linux's prctl option (include/uapi/linux/prctl.h).
PR_SET_PDEATHSIG = 1
# The child's own limits fall due this long after threadlab's timeout
# (seconds, at least; or this fraction of the timeout when larger).
GRACE_S = 10.0
GRACE_FRACTION = 0.1
# RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL this many CPU seconds later.
_CPU_KILL_AFTER_S = 5

_prctl: Any = None


def _load_prctl() -> Any:
    """libc's prctl, looked up in the parent: the child between fork and
    exec only calls it."""
    global _prctl
    if _prctl is None:
        function = ctypes.CDLL(None, use_errno=True).prctl
        function.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        function.restype = ctypes.c_int
        _prctl = function
    return _prctl


def own_limit(timeout_s: float) -> float:
    """The child's own wall-clock limit for a threadlab timeout."""
    return timeout_s + max(GRACE_S, GRACE_FRACTION * timeout_s)


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except OSError:
        return max(1, os.cpu_count() or 1)


def _child_setup(parent: int, limit_s: float | None, cpus: int) -> Callable[[], None]:
    """What the child does between fork and exec: system calls on values
    prepared here, no import and no lock that another thread could hold."""
    prctl = _load_prctl()
    kill = int(signal.SIGKILL)
    cpu_limit = 0 if limit_s is None else int(limit_s * cpus) + 1

    def setup() -> None:
        prctl(PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent:  # threadlab died before the line above
            os.kill(os.getpid(), kill)
        if limit_s is not None:
            signal.setitimer(signal.ITIMER_REAL, limit_s)
            _, hard = resource.getrlimit(resource.RLIMIT_CPU)
            if hard == resource.RLIM_INFINITY or hard > cpu_limit + _CPU_KILL_AFTER_S:
                resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + _CPU_KILL_AFTER_S))

    return setup


def start(argv: Sequence[str | Path], *, timeout_s: float | None, own_group: bool = True,
          **popen: Any) -> subprocess.Popen[Any]:
    """subprocess.Popen of a child as described above.  timeout_s: the time
    threadlab gives it (the child's own limits follow from it); None for
    none (a child whose parent has the limit).  own_group: its own session
    and process group (False: the caller's, for a child of a child)."""
    if "preexec_fn" in popen or "start_new_session" in popen:
        raise ValueError("process.start sets the session and the child's set-up itself")
    limit = None if timeout_s is None else own_limit(timeout_s)
    setup = _child_setup(os.getpid(), limit, _cpu_count())
    return subprocess.Popen([str(part) for part in argv], start_new_session=own_group, preexec_fn=setup, **popen)


def run(argv: Sequence[str | Path], *, timeout_s: float, text: bool = True, **popen: Any) -> subprocess.CompletedProcess[Any]:
    """subprocess.run(argv, capture_output=True, check=False) of a child
    started by start(); on timeout its whole group is killed and
    subprocess.TimeoutExpired raised, as subprocess.run does."""
    stdin = popen.pop("stdin", subprocess.DEVNULL)
    child = start(argv, timeout_s=timeout_s, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  text=text, **popen)
    try:
        out, err = child.communicate(timeout=timeout_s)
    except BaseException:  # the timeout, or Ctrl-C: the group goes, then the pipes are drained
        kill_group(child)
        child.communicate()
        raise
    finally:
        kill_group(child)  # helpers it forked
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def kill_group(child: subprocess.Popen[Any] | None) -> None:
    """SIGKILL to the child's whole process group (it leads its own).  Also
    after the child has exited: helpers it forked stay in the group, and the
    kernel does not reuse a group id while any member lives.  SIGKILL ends
    a stopped process too (SIGTERM would wait for a SIGCONT)."""
    if child is None:
        return
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stopped(pid: int) -> bool:
    """Whether a live process is stopped (SIGSTOP, SIGTSTP, a debugger)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = text[text.rfind(")") + 2:][:1]
    return state in ("T", "t")
