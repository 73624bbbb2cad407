"""Private managers -- a benchmark point's, a study's -- die with their owner
and leave nothing behind (issue 15, item 8; docs/rm.md "Private managers"):
a point killed at its time limit or by Ctrl-C, a study killed with SIGKILL,
take their manager, its arena and its directory along; what a manager
killed itself left is found and removed, with a message, by the next one."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from conftest import REAL_NATIVE_DIR, REPO
from rmtools import DEADLINE_S, native_env, needs_native, poll  # noqa: F401 - fixtures
from threadlab.native import rm

pytestmark = needs_native
BENCH_OMP = REAL_NATIVE_DIR / "threadlab-bench-omp"
NPB = REAL_NATIVE_DIR / "threadlab-npb"


def marked_managers(marker: str) -> dict[int, dict[str, str]]:
    """The live threadlab-rm processes whose environment holds marker, with
    their environment."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != rm.RM_PROGRAM:
                continue
            if (entry / "stat").read_text().rpartition(")")[2].split()[0] == "Z":
                continue
            items = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in items:
            found[int(entry.name)] = dict(i.decode(errors="replace").partition("=")[::2] for i in items if b"=" in i)
    return found


def the_manager(marker: str) -> dict[int, dict[str, str]] | None:
    """The one running manager marked so, once it is alone and is one: the
    daemon's first process (waiting for its word) and the intermediate one
    carry the marker for a moment, and so does a threadlab-rm the front end
    only asks a question (its --env), without a manager's directory and
    arena in its environment."""
    found = marked_managers(marker)
    managers = {pid: environ for pid, environ in found.items() if rm.ARENA_ENV in environ and rm.DIR_ENV in environ}
    return managers if len(found) == 1 and len(managers) == 1 else None


class Leftovers:
    """What a test's managers may leave when the code under test fails:
    removed afterwards, whatever happened (by pid, by name)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.paths: list[Path] = []

    def note(self, environ: dict[str, str]) -> None:
        self.paths += [Path("/dev/shm" + environ[rm.ARENA_ENV]), Path(environ[rm.DIR_ENV])]

    def clean(self) -> None:
        for pid in marked_managers(self.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for path in self.paths:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


@pytest.fixture
def private_tmp(tmp_path: Path) -> Iterator[tuple[Path, Leftovers]]:
    """A TMPDIR of the test's own: the private managers' directories go
    there, and it marks the processes the test started."""
    where = tmp_path / "tmp"
    where.mkdir()
    leftovers = Leftovers(f"TMPDIR={where}")
    try:
        yield where, leftovers
    finally:
        leftovers.clean()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_benchmark_point_takes_its_private_manager_along(
        sig: signal.Signals, private_tmp: tuple[Path, Leftovers]) -> None:
    if not os.access(BENCH_OMP, os.X_OK):
        pytest.skip(f"threadlab-bench-omp is not built in {REAL_NATIVE_DIR}")
    where, leftovers = private_tmp
    # No manager runs on this arena: the point starts a private one.  Its
    # timings are made to last long; the point is killed well before.
    env = {**os.environ, "TMPDIR": str(where), rm.ARENA_ENV: f"/threadlab-rm-none-{os.getpid()}"}
    point = subprocess.Popen([str(BENCH_OMP), "--run", "omp.region.overhead", "--quick", "--min-timings", "1000",
                              "--max-timings", "1000", "--min-timing-ms", "10"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        managers = poll("the point's private manager running, alone", lambda: the_manager(leftovers.marker))
        environ = next(iter(managers.values()))
        leftovers.note(environ)
        os.killpg(point.pid, sig)  # as the runner does at a time limit (its point's process group)
        point.communicate(timeout=DEADLINE_S)
        poll("the private manager gone with its owner", lambda: not marked_managers(leftovers.marker))
        assert not Path("/dev/shm" + environ[rm.ARENA_ENV]).exists()
        assert not Path(environ[rm.DIR_ENV]).exists()
        assert list(where.iterdir()) == []
    finally:
        if point.poll() is None:
            point.kill()
            point.communicate()


@pytest.mark.skipif(not os.access(NPB, os.X_OK), reason=f"threadlab-npb is not built in {REAL_NATIVE_DIR}")
def test_a_sigkilled_study_takes_its_private_manager_along(private_tmp: tuple[Path, Leftovers],
                                                            tmp_path: Path) -> None:
    where, leftovers = private_tmp
    study = subprocess.Popen(
        [sys.executable, "-m", "threadlab", "--db", str(tmp_path / "store.db"), "study", "multiprog", "--quick",
         "--runs", "1", "--apps", "cg", "--baselines", "rm", "--degree", "1,2,3,4,5,6", "--no-dedicated", "--seed",
         "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "python"), "THREADLAB_NATIVE_DIR": str(REAL_NATIVE_DIR),
             "TMPDIR": str(where)})
    try:
        managers = poll("the study's private manager running, alone", lambda: the_manager(leftovers.marker),
                        timeout=60)
        environ = next(iter(managers.values()))
        leftovers.note(environ)
        study.kill()  # SIGKILL: nothing of the study runs after it
        study.communicate(timeout=DEADLINE_S)
        poll("the private manager gone with its owner", lambda: not marked_managers(leftovers.marker))
        # its arena and directory gone with it: polled, since a process
        # whose /proc entry cannot be read at one instant (starting, or
        # leaving) is not counted above (seen once in CI: the directory
        # there a moment after the managers looked gone). One left for
        # good still fails here.
        for environ in managers.values():
            poll("the private manager's arena and directory removed",
                 lambda: not Path("/dev/shm" + environ[rm.ARENA_ENV]).exists()
                 and not Path(environ[rm.DIR_ENV]).exists())
    finally:
        if study.poll() is None:
            study.kill()
            study.communicate()
        # The study's kernels are another matter (they are killed here).
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and f"TMPDIR={where}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                    os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                continue


def test_the_next_private_manager_removes_what_killed_ones_left(
        native_env: None, private_tmp: tuple[Path, Leftovers], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    where, leftovers = private_tmp
    monkeypatch.setenv("TMPDIR", str(where))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads $TMPDIR again
    owner = subprocess.Popen(["sleep", "60"])
    try:
        directory = Path(tempfile.mkdtemp(prefix=rm.private_prefix(owner.pid)))
        dead = rm.Manager.start(directory=directory, owner=owner.pid, quantum_ms=20)
        leftovers.note({rm.ARENA_ENV: dead.arena, rm.DIR_ENV: str(directory)})
        assert dead.arena == "/" + directory.name
        dead.kill()  # killed itself: it removes nothing
        poll("the killed manager gone", lambda: not dead.alive())
    finally:
        owner.kill()
        owner.wait()
    arena = Path("/dev/shm" + dead.arena)
    assert arena.exists() and (directory / "rm.log").exists()  # what it left

    fresh = rm.Manager.start_private(quantum_ms=20)
    try:
        err = capsys.readouterr().err
        assert (f"threadlab: removed {directory}, the directory of a private manager whose owner (pid {owner.pid}) "
                "is gone") in err
        assert (f"threadlab: removed the arena {dead.arena} of a private manager whose owner (pid {owner.pid}) "
                "is gone") in err
        assert not arena.exists() and not directory.exists()
        assert fresh.directory.parent == where and fresh.directory.name.startswith(rm.private_prefix())
        assert fresh.arena == "/" + fresh.directory.name
        assert fresh.status()["running"] is True
        assert rm.sweep() == []  # nothing else to remove: the live one stays
    finally:
        fresh.close()
    assert not fresh.directory.exists() and not Path("/dev/shm" + fresh.arena).exists()
    assert list(where.iterdir()) == []


def test_stop_removes_what_a_killed_private_manager_left(native_env: None, private_tmp: tuple[Path, Leftovers],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    where, _ = private_tmp
    monkeypatch.setenv("TMPDIR", str(where))
    monkeypatch.setattr(tempfile, "tempdir", None)
    manager = rm.Manager.start_private(quantum_ms=20)
    manager.kill()
    poll("the killed manager gone", lambda: not manager.alive())
    manager.close()  # its owner is alive: no sweep would; stop does
    assert not Path("/dev/shm" + manager.arena).exists()
    assert list(where.iterdir()) == []
