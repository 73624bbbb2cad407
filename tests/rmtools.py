"""What tests/test_rm.py and tests/test_omp.py share: the real native build
(skipping when it lacks the manager, the shim or the probe), a private
manager per test, managed programs that are always killed, and reading a
program's output live.  Nothing here sleeps longer than a poll interval:
every wait is a poll with a generous deadline, never a timing assertion."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from conftest import REAL_NATIVE_DIR, REPO
from threadlab.native import rm

RM = REAL_NATIVE_DIR / rm.RM_PROGRAM
PROBE = REAL_NATIVE_DIR / "threadlab-omp-probe"
SHIM = REAL_NATIVE_DIR.parent / "lib" / rm.SHIM_LIBRARY
NCPUS = len(os.sched_getaffinity(0))
# Generous: CI machines have 2 noisy CPUs and these programs spin on both.
DEADLINE_S = 20.0
QUANTUM_MS = 20


def _missing() -> str:
    lacking = [p.name for p in (RM, PROBE) if not os.access(p, os.X_OK)] + ([SHIM.name] if not SHIM.is_file() else [])
    return ", ".join(lacking)


SKIP_REASON = f"the native build lacks {_missing()} ({REAL_NATIVE_DIR}; run `make`)"
needs_native = pytest.mark.skipif(bool(_missing()), reason=SKIP_REASON)


def poll(what: str, condition: Callable[[], Any], timeout: float = DEADLINE_S, interval: float = 0.02) -> Any:
    """condition()'s first truthy value; fails naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(interval)


class Lines:
    """A stream read by a thread, so that a test can wait for a line."""

    def __init__(self, stream: Any) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, what: str, match: Callable[[str], bool], timeout: float = DEADLINE_S) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
                ended = False
            else:
                ended = line is None
            if line is not None:
                self.seen.append(line)
                if match(line):
                    return line
                continue
            raise AssertionError(f"{what}: {'the stream ended' if ended else f'not within {timeout:g} s'}; "
                                 f"lines seen: {self.seen[-20:]}")

    def rest(self, timeout: float = DEADLINE_S) -> list[str]:
        """Every remaining line, once the stream ends."""
        self._thread.join(timeout)
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.seen.append(line)
        return self.seen


class Program:
    """A program started by a test; stdout and stderr read live."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                        stdin=subprocess.DEVNULL)
        self.pid = self.process.pid
        self.stdout = Lines(self.process.stdout)
        self.stderr = Lines(self.process.stderr)

    def finish(self, timeout: float = DEADLINE_S) -> tuple[int, list[str], list[str]]:
        code = self.process.wait(timeout)
        return code, self.stdout.rest(), self.stderr.rest()

    def summary(self, timeout: float = DEADLINE_S) -> tuple[int, dict[str, Any], list[str]]:
        """The probe's exit status, its final JSON summary, its stderr."""
        code, out, err = self.finish(timeout)
        final = [line for line in out if line.startswith('{"probe"')]
        assert final, f"no probe summary; stdout {out[-5:]}, stderr {err[-5:]}"
        return code, json.loads(final[-1]), err

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(DEADLINE_S)


class Lab:
    """One test's private manager directory and the programs it started;
    close() kills every program and the manager, even after a failure."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.programs: list[Program] = []
        self.managers: list[rm.Manager] = []
        self.hogs: list[subprocess.Popen[bytes]] = []

    def start_manager(self, **options: Any) -> rm.Manager:
        options.setdefault("quantum_ms", QUANTUM_MS)
        # Equipartition deals CPUs in arrival order and never rotates them,
        # so the tests can predict every allocation; other work (the
        # machine's load, which the tests do not control) is ignored unless
        # a test counts it.
        options.setdefault("policy", "equipartition")
        options.setdefault("other_load", "ignore")
        manager = rm.Manager.start(directory=self.directory, **options)
        self.managers.append(manager)
        return manager

    def omp_run(self, *args: str, env: dict[str, str] | None = None, options: tuple[str, ...] = ()) -> Program:
        """`threadlab omp run [options] -- args` as its own process (it execs:
        the pid is the program's)."""
        base = dict(os.environ if env is None else env)
        base["PYTHONPATH"] = str(REPO / "python")
        base.setdefault("THREADLAB_OMP_PROBE_MS", "50")  # re-attach quickly when a manager comes (back)
        argv = [sys.executable, "-m", "threadlab", "omp", "run", "--dir", str(self.directory), *options, "--", *args]
        program = Program(argv, base)
        self.programs.append(program)
        return program

    def probe(self, *args: str, **kwargs: Any) -> Program:
        return self.omp_run(str(PROBE), *args, **kwargs)

    def hog(self, cpu: int | None = None) -> subprocess.Popen[bytes]:
        """A process that computes until the test ends: work no manager
        manages (on one CPU when given)."""
        argv = ["sh", "-c", "while :; do :; done"]
        if cpu is not None:
            argv = ["taskset", "-c", str(cpu), *argv]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        self.hogs.append(process)
        return process

    def app(self, state: dict[str, Any], pid: int) -> dict[str, Any] | None:
        return next((a for a in state.get("apps", []) if a["pid"] == pid), None)

    def registered(self, manager: rm.Manager, program: Program) -> dict[str, Any]:
        """Polls until the program holds a slot (and has been answered)."""
        return poll(f"pid {program.pid} registered with the manager",
                    lambda: self.app(manager.status(), program.pid))

    def close(self) -> None:
        for process in self.hogs:
            process.kill()
            process.wait(DEADLINE_S)
        for program in self.programs:
            program.kill()
        for manager in self.managers:
            try:
                manager.stop(timeout=5)
            except Exception:  # noqa: BLE001 - cleanup must go on
                manager.kill()


def thread_cpus(pid: int) -> dict[int, set[int]]:
    """The CPUs each thread of a process may run on (/proc/PID/task/*/status);
    threads that exit while being read are left out."""
    found: dict[int, set[int]] = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Cpus_allowed_list:"):
                found[int(tid)] = set(rm.parse_cpu_list(line.split(":", 1)[1].strip()))
    return found


@pytest.fixture
def native_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real build, which conftest's autouse fixture hides."""
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(REAL_NATIVE_DIR))
    for name in ("LD_PRELOAD", "OMP_DYNAMIC", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS",
                 "THREADLAB_OMP_PIN", "THREADLAB_OMP_QUIET", "THREADLAB_OMP_DYNAMIC_ORIG", "THREADLAB_GOMP_QUIET",
                 rm.ARENA_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def lab(tmp_path: Path, native_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    if _missing():
        pytest.skip(SKIP_REASON)
    directory = tmp_path / "rm"
    monkeypatch.setenv(rm.DIR_ENV, str(directory))
    laboratory = Lab(directory)
    try:
        yield laboratory
    finally:
        laboratory.close()
