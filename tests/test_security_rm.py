"""Another local user attacks threadlab-rm, its libgomp shim and the OpenMP
benchmark's private manager (issue 15; docs/security.md).

Two throw-away users (tests/localusers.py): an attacker, and a victim whose
default names -- /dev/shm/threadlab-rm-<uid>, /tmp/threadlab-<uid> -- the
attacker squats before the victim runs.  The victim's programs must never
join, adopt, write through or signal what the attacker prepared; each
refusal is one line naming the object, its owner and mode.  The temporary
path of threadlab-bench-omp is attacked as root's, whose file it
overwrote."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import FIXTURES, REAL_NATIVE_DIR
from localusers import User, throwaway_user
from rmtools import DEADLINE_S, PROBE, RM, SHIM, Lines, needs_native, poll

pytestmark = needs_native
BENCH_OMP = REAL_NATIVE_DIR / "threadlab-bench-omp"
STATE_UNMANAGED, STATE_MANAGED = 1, 2  # TL_OMP_STATE_* (threadlab/omp.h)


@pytest.fixture(scope="module")
def attacker_user() -> Iterator[User]:
    yield from throwaway_user("attacker")


@pytest.fixture(scope="module")
def victim_user() -> Iterator[User]:
    yield from throwaway_user("victim")


@pytest.fixture
def attacker(attacker_user: User) -> Iterator[User]:
    attacker_user.clean()
    yield attacker_user
    attacker_user.clean()


@pytest.fixture
def victim(victim_user: User) -> Iterator[User]:
    victim_user.clean()
    yield victim_user
    victim_user.clean()


def victim_directory(victim: User) -> Path:
    """A directory only the victim may enter (removed with its files)."""
    where = Path(tempfile.mkdtemp(prefix="threadlab-victim-", dir="/tmp"))
    os.chown(where, victim.uid, victim.gid)
    return where


def precious_file(victim: User) -> Path:
    """A file of the victim's that the attack tries to overwrite."""
    path = victim_directory(victim) / "precious"
    path.write_text("precious\n")
    os.chown(path, victim.uid, victim.gid)
    path.chmod(0o600)
    return path


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


# ------------------------------------------------------------ the arena


def squat_arena(attacker: User, victim: User, *options: str) -> tuple[subprocess.Popen[str], Path]:
    """The attacker runs a manager of its own on the victim's standard
    arena and makes the object writable by everyone."""
    name = f"/threadlab-rm-{victim.uid}"
    manager = attacker.popen([str(RM), "--foreground", "--quantum-ms", "20", *options],
                             env={"THREADLAB_RM_ARENA": name})
    assert manager.stdout is not None
    line = Lines(manager.stdout).wait_for("the attacker's manager running", lambda text: "running (pid" in text)
    assert str(manager.pid) in line
    arena = Path("/dev/shm" + name)
    done = attacker.script("import os, sys; os.chmod(sys.argv[1], 0o666)", str(arena))
    assert done.returncode == 0, done.stderr
    return manager, arena


def probe_env() -> dict[str, str]:
    """A victim's `threadlab omp run` with the defaults: the shim, and the
    standard arena of its user."""
    return {"LD_PRELOAD": str(SHIM), "OMP_DYNAMIC": "true", "THREADLAB_OMP_PROBE_MS": "50"}


def assert_refused(message: str, arena: Path, attacker: User) -> None:
    assert f"refusing the arena {str(arena)[len('/dev/shm'):]}" in message, message
    assert f"uid {attacker.uid}" in message and "mode 0666" in message and "remove it" in message, message


def test_the_shim_never_joins_a_squatted_arena(attacker: User, victim: User) -> None:
    # The attacker's manager gives whoever joins one CPU: the victim's
    # teams would be the attacker's to size.
    _, arena = squat_arena(attacker, victim, "--cpus", "0")
    done = victim.run([str(PROBE), "--kinds", "parallel", "--rounds", "50"], env=probe_env())
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["shim_state"] == STATE_UNMANAGED, summary  # not managed by the attacker
    notices = [line for line in done.stderr.splitlines() if "threadlab-omp" in line]
    assert len(notices) == 1, done.stderr  # the one notice, then quiet
    assert_refused(notices[0], arena, attacker)
    assert "running unmanaged" in notices[0]


def test_a_squatted_arena_cut_short_cannot_kill_the_victim(attacker: User, victim: User) -> None:
    manager, arena = squat_arena(attacker, victim)
    stop = victim_directory(victim) / "stop"
    program = victim.popen([str(PROBE), "--kinds", "parallel", "--events", "--until", str(stop)], env=probe_env())
    assert program.stdout is not None
    output = Lines(program.stdout)
    output.wait_for("the victim's first region", lambda line: '"event"' in line)  # it has decided to join or not
    # The attacker freezes its own manager (so it cannot repair the arena
    # first) and cuts the object short: a program that mapped it dies of
    # SIGBUS at its next region.
    os.kill(manager.pid, signal.SIGSTOP)
    done = attacker.script("import os, sys; os.truncate(sys.argv[1], 0)", str(arena))
    assert done.returncode == 0, done.stderr
    time.sleep(0.3)  # regions keep running meanwhile (not a timing assertion: the crash is immediate)
    stop.touch()
    code = program.wait(DEADLINE_S)
    assert code == 0, f"the victim died ({code}); stderr: {program.stderr.read() if program.stderr else ''}"
    summary = json.loads(output.rest()[-1])
    assert summary["work_ok"] is True and summary["shim_state"] == STATE_UNMANAGED


def test_rm_start_never_adopts_a_squatted_arena(attacker: User, victim: User) -> None:
    # A dead attacker's manager left its arena, policy static: the victim's
    # manager would adopt the object the attacker may write.
    manager, arena = squat_arena(attacker, victim, "--policy", "static")
    manager.kill()
    manager.wait(DEADLINE_S)
    assert arena.exists()
    done = victim.threadlab("rm", "start")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert_refused(done.stderr.splitlines()[0], arena, attacker)  # then the tail of the manager's log
    poll("no process of the victim's left", lambda: not victim.processes())  # no manager of its runs


def test_rm_stop_never_signals_the_pid_a_squatted_arena_names(attacker: User, victim: User) -> None:
    # The attacker's arena names one of the victim's own processes as its
    # (live) manager.
    manager, arena = squat_arena(attacker, victim)
    manager.kill()
    manager.wait(DEADLINE_S)
    bystander = victim.popen(["sleep", "60"])
    layout = subprocess.run([str(RM), "--layout"], capture_output=True, text=True, check=True, timeout=30).stdout
    done = attacker.script(Path(FIXTURES / "fake_manager.py").read_text(), str(arena), str(bystander.pid), layout)
    assert done.returncode == 0, done.stderr
    done = victim.threadlab("rm", "stop")
    assert bystander.poll() is None, "the victim's unrelated process was signalled"
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    assert_refused(one_line(done.stderr), arena, attacker)
    assert arena.exists()  # the attacker's object is not the victim's to remove either


def test_rm_status_names_the_squatter(attacker: User, victim: User) -> None:
    _, arena = squat_arena(attacker, victim)
    done = victim.threadlab("rm", "status")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert_refused(one_line(done.stderr), arena, attacker)


# -------------------------------------------------------- the directory


def squat_directory(attacker: User, where: Path, target: Path) -> None:
    """The attacker makes `where` first, mode 0777, with rm.pid and rm.log
    symbolic links to the victim's file."""
    done = attacker.script("import os, sys\n"
                           "os.mkdir(sys.argv[1]); os.chmod(sys.argv[1], 0o777)\n"
                           "for name in ('rm.pid', 'rm.log'):\n"
                           "    os.symlink(sys.argv[2], os.path.join(sys.argv[1], name))\n", str(where), str(target))
    assert done.returncode == 0, done.stderr


def test_rm_start_refuses_a_squatted_runtime_directory(attacker: User, victim: User) -> None:
    # The victim's default directory; the command line passes it to the
    # daemon as $THREADLAB_RM_DIR (the path root's /tmp/threadlab-0 takes).
    precious = precious_file(victim)
    where = Path(f"/tmp/threadlab-{victim.uid}")
    squat_directory(attacker, where, precious)
    done = victim.threadlab("rm", "start")
    assert precious.read_text() == "precious\n", "the victim's file was written through the squatter's link"
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    message = one_line(done.stderr)
    assert f"refusing the directory {where}" in message and f"uid {attacker.uid}" in message, message
    assert "mode 0777" in message and "remove it" in message, message
    poll("no process of the victim's left", lambda: not victim.processes())
    # The same through an explicit --dir, and for the raw daemon.
    done = victim.threadlab("rm", "start", "--dir", str(where))
    assert done.returncode == 1 and f"refusing the directory {where}" in done.stderr
    done = victim.run([str(RM)], env={"THREADLAB_RM_DIR": str(where)})
    assert done.returncode == 1 and f"refusing the directory {where}" in done.stderr
    assert precious.read_text() == "precious\n"


# ----------------------------------------- threadlab-bench-omp's private manager


def test_bench_omp_never_uses_a_predictable_temporary_path(attacker_user: User, tmp_path: Path) -> None:
    """root runs the OpenMP benchmark; the attacker has prepared the
    directory it used to make, /tmp/threadlab-bench-omp-<pid>, for the pid
    it is about to get."""
    if not os.access(BENCH_OMP, os.X_OK):
        pytest.skip(f"threadlab-bench-omp is not built in {REAL_NATIVE_DIR}")
    attacker = attacker_user
    attacker.clean()
    precious = tmp_path / "precious"
    precious.write_text("precious\n")
    precious.chmod(0o600)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(private_tmp), "THREADLAB_RM_ARENA": f"/threadlab-rm-sectest-{os.getpid()}"}
    # The shell keeps its pid when it execs the benchmark: the attacker
    # knows it before the benchmark starts.
    command = f'read go; exec "{BENCH_OMP}" --run omp.region.overhead --quick'
    point = subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    squat = Path(f"/tmp/threadlab-bench-omp-{point.pid}")
    try:
        squat_directory(attacker, squat, precious)
        out, err = point.communicate("go\n", timeout=120)
    finally:
        if point.poll() is None:
            point.kill()
            point.communicate()
    try:
        assert precious.read_text() == "precious\n", "root's file was written through the squatter's link"
        assert sorted(p.name for p in squat.iterdir()) == ["rm.log", "rm.pid"]  # never used
    finally:
        attacker.clean()
    assert point.returncode == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert records and all(r["status"] == "ok" for r in records), err
    assert list(private_tmp.iterdir()) == []  # its private manager's directory is gone too
