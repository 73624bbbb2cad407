"""Child processes against a killed or stopped threadlab (docs/security.md,
"Child processes"): every child dies with the CLI, has a time limit of
its own, and a stopped child is killed by its point's timeout."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from conftest import stored_records, threadlab_process
from hostile import REPO

RunCli = Callable[..., tuple[int, str, str]]


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _wait_for(condition: Callable[[], object], timeout_s: float, what: str) -> object:
    """Polls until condition() is true; a bound against hanging, not a timing assertion."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} within {timeout_s} s")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _point_child(cli: subprocess.Popen[str]) -> int:
    """The benchmark program of the point the CLI is measuring."""
    def found() -> int | None:
        for pid in _children(cli.pid):
            try:
                # The program itself, after exec (before it, the child is a copy of the CLI).
                if "threadlab-bench-fake\0--run\0fake.hang" in Path(f"/proc/{pid}/cmdline").read_text():
                    return pid
            except OSError:
                pass
        return None

    return int(_wait_for(found, 60, "the point's program did not start"))  # type: ignore[arg-type]


@pytest.mark.parametrize("stop_first", [False, True], ids=["running", "stopped"])
def test_a_killed_cli_takes_its_child_with_it(db_path: Path, fake_native: Path, stop_first: bool) -> None:
    cli = threadlab_process("bench", "--filter", "fake.hang", "--timeout", "600")
    child = None
    try:
        child = _point_child(cli)
        if stop_first:
            os.kill(child, signal.SIGSTOP)
        cli.kill()  # SIGKILL: no handler of threadlab's runs
        cli.wait(timeout=60)
        _wait_for(lambda: not _alive(child), 30, f"the point's program {child} outlived the killed CLI")
    finally:
        cli.kill()
        cli.wait(timeout=60)
        if child is not None and _alive(child):  # the test failed: leave nothing behind
            os.kill(child, signal.SIGKILL)
    assert cli.stdout and cli.stderr
    cli.stdout.close()
    cli.stderr.close()


def test_a_stopped_child_is_killed_by_the_timeout_and_recorded_with_the_reason(
    db_path: Path, fake_native: Path
) -> None:
    cli = threadlab_process("bench", "--filter", "fake.hang", "--timeout", "2")
    try:
        child = _point_child(cli)
        os.kill(child, signal.SIGSTOP)
        out, err = cli.communicate(timeout=120)
    finally:
        cli.kill()
    assert cli.returncode == 1, err
    assert not _alive(child)
    [record] = stored_records(db_path)
    assert record["status"] == "failed"
    assert record["reason"].startswith("timed out after 2 s (the program was stopped by a signal")


def test_a_child_has_a_time_limit_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's own timer ends it when nobody else does."""
    from threadlab.native import process

    monkeypatch.setattr(process, "GRACE_S", 0.0)
    monkeypatch.setattr(process, "GRACE_FRACTION", 0.0)
    child = process.start([sys.executable, "-c", "import time; time.sleep(60)"], timeout_s=0.5)
    try:
        assert child.wait(timeout=30) == -signal.SIGALRM
    finally:
        process.kill_group(child)


def test_a_child_has_a_cpu_limit_and_its_own_session() -> None:
    from threadlab.native import process

    script = ("import os, resource; print(resource.getrlimit(resource.RLIMIT_CPU)[0], os.getsid(0) == os.getpid(), "
              "os.getpgrp() == os.getpid())")
    done = process.run([sys.executable, "-c", script], timeout_s=60)
    soft, own_session, own_group = done.stdout.split()
    assert own_session == own_group == "True"
    cpus = len(os.sched_getaffinity(0))
    assert int(soft) == int(process.own_limit(60) * cpus) + 1
    assert resource.getrlimit(resource.RLIMIT_CPU)[0] == resource.RLIM_INFINITY  # threadlab's own is untouched


def test_a_child_that_starts_a_daemon_passes_on_no_cpu_limit() -> None:
    """detaches=True (the resource manager's start): the daemon it forks
    would inherit a CPU limit and die of it days later; the wall-clock
    timer stays (a fork does not inherit it)."""
    from threadlab.native import process

    script = "import resource, signal; print(resource.getrlimit(resource.RLIMIT_CPU)[0], signal.getitimer(signal.ITIMER_REAL)[0] > 0)"
    soft, timer = process.run([sys.executable, "-c", script], timeout_s=60, detaches=True).stdout.split()
    assert int(soft) == resource.getrlimit(resource.RLIMIT_CPU)[0] and timer == "True"
    soft, timer = process.run([sys.executable, "-c", script], timeout_s=60).stdout.split()
    assert int(soft) != resource.getrlimit(resource.RLIMIT_CPU)[0] and timer == "True"


def test_a_child_dies_when_its_parent_dies_without_a_word() -> None:
    """The parent-death signal, for a child started by another program
    through process.start (as the JVM launcher starts its JVM)."""
    script = ("import sys, time; sys.path.insert(0, sys.argv[1]); from threadlab.native import process; "
              "child = process.start(['sleep', '300'], timeout_s=None); print(child.pid, flush=True); time.sleep(300)")
    parent = subprocess.Popen([sys.executable, "-c", script, str(REPO / "python")], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.kill()
        parent.wait(timeout=60)
        _wait_for(lambda: not _alive(child), 30, "the child outlived its parent")
    finally:
        parent.kill()
        parent.wait(timeout=60)
        if parent.stdout:
            parent.stdout.close()


# Where a child process may be started other than through threadlab.process.
_OTHER_STARTS = {
    "python/threadlab/native/process.py": "the one place",
}


def test_every_child_process_is_started_through_one_function() -> None:
    pattern = re.compile(r"subprocess\.(Popen|run|call|check_call|check_output)\(|os\.(fork|spawn\w*|posix_spawn\w*)\(")
    offenders = []
    for path in sorted((REPO / "python" / "threadlab").rglob("*.py")):
        relative = str(path.relative_to(REPO))
        if relative in _OTHER_STARTS:
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if pattern.search(line):
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert offenders == [], "start children with threadlab.process.start/run:\n" + "\n".join(offenders)
