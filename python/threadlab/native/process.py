"""Every child process of threadlab starts here, and is followed, timed
out and stopped here: benchmark points, the studies' program runs and
instances, crosscheck's naive programs, the native programs' questions
(--list, --env, --options), the environment probes, the resource
manager's control and the JVM launcher's JVM (docs/security.md, "Child
processes").

- start(): one child, as described below; run(): start it, wait for its
  output within a time limit;
- Follow: a child whose stdout is read line by line as it comes, within a
  time limit, stopped by a StopRequest (Ctrl-C);
- Watched: a child reaped by a thread blocked in wait4, with its resource
  usage, for children that must not be polled (their CPUs belong to them);
- replace_with(): no child at all: threadlab becomes the program (`omp
  run`, `spawn run`, `rm start --foreground`), whose PROGRAM a user gave
  is found by user_program().

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
  and records why; they matter when threadlab is stopped or gone.  A child
  that starts a daemon (threadlab-rm) gets no CPU limit (detaches=True):
  the daemon would inherit it across its fork, and outlive it.
"""

from __future__ import annotations

import ctypes
import os
import re
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, NoReturn, Sequence

from threadlab.errors import ThreadlabError, UserError

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


def _child_setup(parent: int, limit_s: float | None, cpus: int, cpu_limited: bool = True) -> Callable[[], None]:
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
        if limit_s is not None and cpu_limited:
            _, hard = resource.getrlimit(resource.RLIMIT_CPU)
            if hard == resource.RLIM_INFINITY or hard > cpu_limit + _CPU_KILL_AFTER_S:
                resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + _CPU_KILL_AFTER_S))

    return setup


def start(argv: Sequence[str | Path], *, timeout_s: float | None, own_group: bool = True, detaches: bool = False,
          **popen: Any) -> subprocess.Popen[Any]:
    """subprocess.Popen of a child as described above.  timeout_s: the time
    threadlab gives it (the child's own limits follow from it); None for
    none (a child whose parent has the limit).  own_group: its own session
    and process group (False: the caller's, for a child of a child).
    detaches: the child starts a daemon that must outlive it (no CPU limit,
    which the daemon would inherit; the wall-clock timer and the
    parent-death signal do not pass a fork)."""
    if "preexec_fn" in popen or "start_new_session" in popen:
        raise ValueError("process.start sets the session and the child's set-up itself")
    limit = None if timeout_s is None else own_limit(timeout_s)
    setup = _child_setup(os.getpid(), limit, _cpu_count(), cpu_limited=not detaches)
    return subprocess.Popen([str(part) for part in argv], start_new_session=own_group, preexec_fn=setup, **popen)


def run(argv: Sequence[str | Path], *, timeout_s: float, text: bool = True, detaches: bool = False,
        **popen: Any) -> subprocess.CompletedProcess[Any]:
    """subprocess.run(argv, capture_output=True, check=False) of a child
    started by start(); on timeout its whole group is killed and
    subprocess.TimeoutExpired raised, as subprocess.run does."""
    stdin = popen.pop("stdin", subprocess.DEVNULL)
    child = start(argv, timeout_s=timeout_s, detaches=detaches, stdin=stdin, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE, text=text, **popen)
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


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# A program's message kept in a reason: its first characters.
LINE_KEEP = 400


def last_line(text: str) -> str | None:
    """The last non-blank line of a program's output, cut to LINE_KEEP."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:LINE_KEEP] if lines else None


def exit_text(returncode: int) -> str:
    """How a child ended, in words: 'killed by SIGKILL', 'exited with status 3'."""
    if returncode < 0:
        return f"killed by {signal_name(-returncode)}"
    return f"exited with status {returncode}"


# ---------------------------------------------------------------- Ctrl-C


class StopRequest:
    """Set by SIGINT/SIGTERM: kills the child being followed at once and
    tells the loop (a sweep, a study) to stop after keeping what it has.  A
    second Ctrl-C raises KeyboardInterrupt, for the impatient."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.child: subprocess.Popen[Any] | None = None

    @property
    def requested(self) -> bool:
        return self.signal is not None

    def handle(self, signum: int, _frame: object) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signal = signum
        kill_group(self.child)

    def install(self) -> Callable[[], None]:
        """Installs the handlers; returns a function restoring the old ones."""
        old = {sig: signal.signal(sig, self.handle) for sig in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for sig, handler in old.items():
                signal.signal(sig, handler)

        return restore


# ------------------------------------------------- a child's output, followed

# After the program exits, its forked helpers may hold stdout open; wait
# this long for EOF before killing the group.
_EXIT_GRACE_S = 2.0
# How often the read loop wakes up to check the deadline and Ctrl-C.
_POLL_S = 0.25
# stderr kept for failure reasons: the first and the last bytes.
_STDERR_KEEP_BYTES = 8192
# A line of stderr that says what went wrong better than the last line does
# (a sanitizer report ends with stack frames and a summary).
_HEADLINE = re.compile(r"Sanitizer:|runtime error:|error:|Assertion .* failed|panic", re.IGNORECASE)


class Follow:
    """A child started by start() whose stdout is read line by line as it
    comes (lines()), within timeout_s, killed at once by a StopRequest.
    Once lines() is exhausted: returncode, timed_out, was_stopped (it was
    stopped by a signal, e.g. SIGSTOP, when its time ran out), and
    stderr_summary().  OSError when it cannot be started."""

    def __init__(self, argv: Sequence[str | Path], timeout_s: float, stop: StopRequest, **popen: Any) -> None:
        self.timeout_s = timeout_s
        self.stop = stop
        self.returncode: int | None = None
        self.timed_out = self.was_stopped = False
        self._stdout = bytearray()
        self._stderr_head = bytearray()
        self._stderr_tail = bytearray()
        self.child = start(argv, timeout_s=timeout_s, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, **popen)
        stop.child = self.child

    def _add_stderr(self, data: bytes) -> None:
        room = _STDERR_KEEP_BYTES - len(self._stderr_head)
        if room > 0:
            self._stderr_head += data[:room]
        self._stderr_tail += data
        del self._stderr_tail[:-_STDERR_KEEP_BYTES]

    def stderr_summary(self) -> str | None:
        """The first line of stderr naming an error, else its last line."""
        for line in self._stderr_head.decode("utf-8", "replace").splitlines():
            if _HEADLINE.search(line):
                return line.strip()
        lines = [line.strip() for line in self._stderr_tail.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1] if lines else None

    def _complete_lines(self) -> Iterator[str]:
        while (end := self._stdout.find(b"\n")) >= 0:
            line = self._stdout[:end].decode("utf-8", "replace").strip()
            del self._stdout[: end + 1]
            if line:
                yield line

    def lines(self) -> Iterator[str]:
        """stdout's non-blank lines, each as soon as it is complete (a last
        line without its newline too: the program died writing it).
        Nothing more once a stop is requested."""
        child = self.child
        started = time.monotonic()
        deadline = started + self.timeout_s
        exited_at: float | None = None
        selector = selectors.DefaultSelector()
        assert child.stdout and child.stderr
        selector.register(child.stdout, selectors.EVENT_READ, "stdout")
        selector.register(child.stderr, selectors.EVENT_READ, "stderr")
        try:
            while selector.get_map():
                now = time.monotonic()
                if self.stop.requested:
                    return
                if child.poll() is not None:
                    # The program is done; helpers it forked may still hold the
                    # pipes.  Give them a moment, then kill the group below.  The
                    # child is judged by the program's own exit, not as a hang.
                    exited_at = exited_at or now
                    if now - exited_at >= _EXIT_GRACE_S:
                        break
                elif now >= deadline:
                    self.timed_out = True
                    self.was_stopped = stopped(child.pid)
                    break
                wait = _POLL_S if exited_at else min(_POLL_S, deadline - now)
                for key, _ in selector.select(wait):
                    data = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                    if not data:
                        selector.unregister(key.fileobj)
                    elif key.data == "stderr":
                        self._add_stderr(data)
                    else:
                        self._stdout += data
                        yield from self._complete_lines()
        finally:
            selector.close()
        if not self.timed_out and not self.stop.requested and child.poll() is None:
            # The output ended before the program: a program may close its
            # streams on the way out (GNU timeout does, a launcher wrapped in it
            # then), and killing it in between would pass for a crash.
            try:
                child.wait(timeout=max(0.0, min(_EXIT_GRACE_S, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                pass
        kill_group(child)
        self.returncode = child.wait()
        if self.stop.requested or self.timed_out:
            return
        if self._stdout.strip():
            self._stdout += b"\n"
            yield from self._complete_lines()

    def close(self) -> None:
        """Kills what is left of the child's group and releases its pipes."""
        kill_group(self.child)
        self.child.wait()
        for pipe in (self.child.stdout, self.child.stderr):
            if pipe:
                pipe.close()
        self.stop.child = None

    def __enter__(self) -> Follow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------- a child, reaped


class Watched:
    """A child started by start() and reaped by a thread blocked in wait4:
    no polling, for children whose CPUs belong to them (the multiprogramming
    study's instances).  affinity: the CPUs it starts on (the CPU mask of
    the thread that starts it, set around the start: no preexec_fn while
    threads run).  Once `thread` has ended: ended (monotonic time), status
    (negative: killed by that signal) and rusage."""

    def __init__(self, argv: Sequence[str | Path], *, timeout_s: float, affinity: Sequence[int] | None = None,
                 **popen: Any) -> None:
        saved = os.sched_getaffinity(0) if affinity is not None else None
        try:
            if affinity is not None:
                os.sched_setaffinity(0, affinity)
            self.started = time.monotonic()
            self.popen = start(argv, timeout_s=timeout_s, **popen)
        finally:
            if saved is not None:
                os.sched_setaffinity(0, saved)
        self.ended: float | None = None
        self.status = 0
        self.rusage: Any = None
        self.thread = threading.Thread(target=self._reap, daemon=True)
        self.thread.start()

    def _reap(self) -> None:
        _, status, rusage = os.wait4(self.popen.pid, 0)
        self.ended = time.monotonic()
        self.status = os.waitstatus_to_exitcode(status)
        self.rusage = rusage
        self.popen.returncode = self.status  # reaped here: Popen must not wait again

    def kill(self) -> None:
        if self.ended is None:
            kill_group(self.popen)


# ------------------------------------------------- threadlab becomes a program


def user_program(command: Sequence[str], usage: str) -> list[str]:
    """A user's PROGRAM [ARGS ...] (after the `--` that may lead it):
    PROGRAM found on $PATH and made absolute, so that a program which
    starts its own argv[0] again (an MPI spawn) finds the same file.
    UserError naming PROGRAM when it is not there or not executable, and
    `usage` when there is none."""
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UserError(f"a program is required: {usage}")
    program = command[0]
    found = shutil.which(program)
    if found is None:
        what = "not executable" if os.path.exists(program) else "not found"
        where = "" if os.sep in program else " on $PATH"
        raise UserError(f"PROGRAM {program}: {what}{where}")
    return [os.path.abspath(found), *command[1:]]


def replace_with(argv: Sequence[str], env: Mapping[str, str] | None = None) -> NoReturn:
    """Execs argv in place of threadlab (the program then owns the terminal,
    its signals and its exit status), with env or threadlab's environment;
    what threadlab printed is flushed first.  ThreadlabError when the exec
    fails."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if env is None:
            os.execv(argv[0], list(argv))
        os.execve(argv[0], list(argv), dict(env))
    except OSError as error:
        raise ThreadlabError(f"cannot run {argv[0]}: {error.strerror}") from None
