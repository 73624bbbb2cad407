"""threadlab-rm through threadlab.rm and `threadlab rm ...`, for real: a
private manager per test (its own directory and arena), its status, live
changes, slot reclamation after SIGKILL, a full arena (whose refused
program counts as other work), other work withheld from the division, a
log that stays bounded, and the command line's errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from conftest import FIXTURES, REPO, threadlab_run
from rmtools import NCPUS, RM, Lab, lab, native_env, needs_native, poll  # noqa: F401 - fixtures
from threadlab.native import discovery, rm
from threadlab.errors import ThreadlabError, UserError

CliRunner = Callable[..., tuple[int, str, str]]


def test_status_of_a_fresh_manager(lab: Lab, run_cli: CliRunner) -> None:
    manager = lab.start_manager(policy="equipartition", quantum_ms=30)
    assert manager.alive()
    state = manager.status()
    assert state["running"] is True
    assert state["arena"] == rm.arena_name(lab.directory) == manager.arena
    assert state["manager"]["pid"] == manager.pid
    assert state["manager"]["policy"] == "equipartition"
    assert state["manager"]["quantum_ms"] == 30
    assert state["ncpus"] == NCPUS
    assert state["nslots"] == 64
    assert state["apps"] == []
    assert (lab.directory / "rm.pid").read_text().strip() == str(manager.pid)
    assert rm.Manager.running(lab.directory) is not None

    code, out, err = run_cli("rm", "status", "--json")  # $THREADLAB_RM_DIR is the lab's
    assert code == 0, err
    assert json.loads(out)["manager"]["pid"] == manager.pid
    code, out, _ = run_cli("rm", "status")
    assert code == 0
    assert f"manager pid {manager.pid}: policy equipartition, quantum 30 ms" in out
    assert "no program registered" in out


def test_the_api_and_the_command_line_share_the_daemons_default_policy(lab: Lab, run_cli: CliRunner) -> None:
    manager = rm.Manager.start(directory=lab.directory)
    lab.managers.append(manager)  # stopped by the fixture if an assertion fails
    assert manager.status()["manager"]["policy"] == "timeshare"
    manager.stop()
    code, out, err = run_cli("rm", "start")
    assert code == 0, err
    assert "policy timeshare" in out
    assert run_cli("rm", "stop")[0] == 0


def test_stop_frees_the_arena(lab: Lab, run_cli: CliRunner) -> None:
    manager = lab.start_manager()
    code, out, err = run_cli("rm", "stop", "--dir", str(lab.directory))
    assert code == 0, err
    assert f"stopped (pid {manager.pid})" in out
    assert not manager.alive()
    assert not Path("/dev/shm" + manager.arena).exists()
    assert rm.Manager.running(lab.directory) is None
    code, out, err = run_cli("rm", "status", "--json")
    assert code == rm.EXIT_NOT_RUNNING
    assert json.loads(out)["running"] is False


def test_stop_after_a_kill_removes_the_arena_left(lab: Lab, run_cli: CliRunner) -> None:
    manager = lab.start_manager()
    manager.kill()
    poll("the killed manager gone", lambda: not manager.alive())
    code, out, err = run_cli("rm", "status")
    assert code == rm.EXIT_NOT_RUNNING
    assert f"NOT RUNNING (last pid {manager.pid}" in out
    code, _, err = run_cli("rm", "stop")
    assert code == rm.EXIT_NOT_RUNNING
    assert "was not running" in err and "removed the arena" in err
    assert not Path("/dev/shm" + manager.arena).exists()
    code, _, err = run_cli("rm", "status")
    assert code == rm.EXIT_NOT_RUNNING and "no resource manager is running" in err


def test_stop_signals_only_the_manager_its_pid_file_names(lab: Lab, run_cli: CliRunner) -> None:
    # Anything that may write the arena may name any process as its
    # manager: `stop` must not take the header's word for it.
    manager = lab.start_manager()
    manager.kill()
    poll("the killed manager gone", lambda: not manager.alive())
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        layout = subprocess.run([str(RM), "--layout"], capture_output=True, text=True, check=True, timeout=30).stdout
        subprocess.run([sys.executable, str(FIXTURES / "fake_manager.py"), "/dev/shm" + manager.arena,
                        str(bystander.pid), layout], check=True, timeout=30)
        assert rm.status(lab.directory)["manager"]["pid"] == bystander.pid  # what the header now says
        code, _, err = run_cli("rm", "stop")
        assert code == 1, err
        assert f"names a live manager (pid {bystander.pid}), but it is not the manager of {lab.directory}" in err
        assert "not signalling it" in err and "Traceback" not in err
        assert bystander.poll() is None  # alive
    finally:
        bystander.kill()
        bystander.wait()
        Path("/dev/shm" + manager.arena).unlink(missing_ok=True)


def test_a_restarted_manager_runs_its_own_defaults_not_the_dead_ones(lab: Lab, run_cli: CliRunner) -> None:
    manager = lab.start_manager(policy="static", quantum_ms=40)
    manager.kill()
    poll("the killed manager gone", lambda: not manager.alive())
    code, out, err = run_cli("rm", "start")  # no --policy: the daemon's default
    assert code == 0, err
    assert "policy timeshare" in out
    state = rm.status(lab.directory)
    assert state["manager"]["generation"] == 2  # it adopted the dead one's arena
    lab.managers.append(rm.Manager(lab.directory, state["manager"]["pid"]))
    lab.close()
    # The raw daemon, with no option at all: the quantum's default too.
    manager = lab.start_manager(policy="static", quantum_ms=40)
    manager.kill()
    poll("the killed manager gone", lambda: not manager.alive())
    done = subprocess.run([str(RM)], env=rm.daemon_env(lab.directory), capture_output=True, text=True, timeout=30,
                          check=False)
    assert done.returncode == 0, done.stderr
    state = rm.status(lab.directory)
    lab.managers.append(rm.Manager(lab.directory, state["manager"]["pid"]))
    assert (state["manager"]["policy"], state["manager"]["quantum_ms"]) == ("timeshare", rm.DEFAULT_QUANTUM_MS)
    assert state["manager"]["generation"] == 2


def test_set_changes_policy_and_quantum_live(lab: Lab, run_cli: CliRunner) -> None:
    manager = lab.start_manager(policy="equipartition", quantum_ms=50)
    manager.set(policy="static")
    assert manager.status()["manager"]["policy"] == "static"
    code, out, err = run_cli("rm", "set", "--policy", "ts", "--quantum-ms", "35")
    assert code == 0, err
    assert "policy timeshare, quantum 35 ms" in out
    m = manager.status()["manager"]
    assert (m["policy"], m["quantum_ms"], m["pid"]) == ("timeshare", 35, manager.pid)
    quanta = m["quanta"]
    poll("the manager keeps ticking after the change", lambda: manager.status()["manager"]["quanta"] > quanta)


def test_start_options_reach_the_daemon(lab: Lab, run_cli: CliRunner) -> None:
    code, out, err = run_cli("rm", "start", "--policy", "static", "--quantum-ms", "40", "--cpus", "0", "--slots", "3")
    assert code == 0, err
    pid = int(out.split("(pid ")[1].split(")")[0])
    lab.managers.append(rm.Manager(lab.directory, pid))
    state = rm.status()
    assert (state["manager"]["policy"], state["manager"]["quantum_ms"]) == ("static", 40)
    assert (state["cpus"], state["ncpus"], state["nslots"]) == ("0", 1, 3)


def test_a_second_start_is_refused_with_the_reason(lab: Lab, run_cli: CliRunner) -> None:
    manager = lab.start_manager()
    with pytest.raises(ThreadlabError, match="already running"):
        rm.Manager.start(directory=lab.directory)
    code, _, err = run_cli("rm", "start")
    assert code == 1
    assert f"already running (pid {manager.pid}" in err
    assert "rm.log" in err  # the log tail comes with the reason
    assert manager.alive()


def test_slot_is_reclaimed_after_sigkill(lab: Lab) -> None:
    manager = lab.start_manager()
    program = lab.probe("--kinds", "parallel", "--work-us", "50", "--seconds", "60")
    lab.registered(manager, program)
    # The slot shows once the program takes it; its team is the manager's
    # allocation, 0 until the manager has decided one: a look in between
    # read 0 (a clean clone's make test).
    app = poll(f"pid {program.pid} given a team", lambda: (a := lab.app(manager.status(), program.pid)) and
               a["team"] >= 1 and a)
    assert app["alive"] is True
    os.kill(program.pid, signal.SIGKILL)
    program.finish()
    state = poll("the dead program's slot freed",
                 lambda: (s := manager.status())["apps"] == [] and s["counters"]["reclaimed"] >= 1 and s)
    assert state["counters"]["arrivals"] == 1


@pytest.mark.skipif(NCPUS < 2, reason="CPUs can only be handed over from 2 CPUs up")
def test_a_killed_programs_cpus_go_to_the_others_before_the_next_quantum(lab: Lab) -> None:
    # A program killed with SIGKILL says no goodbye; its CPUs must not stay
    # idle until the next quantum (here a minute away): the manager looks
    # for dead programs between quanta, and the survivor owns every CPU
    # while the quantum count has not moved.
    manager = lab.start_manager(quantum_ms=60000)
    first = lab.probe("--kinds", "parallel", "--work-us", "50", "--seconds", "60")
    lab.registered(manager, first)
    second = lab.probe("--kinds", "parallel", "--work-us", "50", "--seconds", "60")
    lab.registered(manager, second)
    before = poll("the CPUs divided", lambda: (s := manager.status()) and len(s["apps"]) == 2
                  and all(a["owned"] < NCPUS for a in s["apps"]) and s)
    os.kill(first.pid, signal.SIGKILL)
    first.finish()
    state = poll("the survivor given every CPU",
                 lambda: (s := manager.status()) and [a["pid"] for a in s["apps"]] == [second.pid]
                 and s["apps"][0]["owned"] == NCPUS and s)
    assert state["counters"]["reclaimed"] >= 1
    assert state["manager"]["quanta"] == before["manager"]["quanta"]


def test_full_arena_runs_the_next_program_unmanaged(lab: Lab) -> None:
    manager = lab.start_manager(slots=1)
    first = lab.probe("--kinds", "parallel", "--work-us", "50", "--seconds", "60")
    lab.registered(manager, first)
    second = lab.probe("--kinds", "parallel", "--rounds", "200")
    code, summary, err = second.summary()
    assert code == 0
    assert summary["work_ok"] is True and summary["regions"] == 200
    assert summary["shim_state"] == 3  # not managed, never blocked, but cooperative
    notices = [line for line in err if line.startswith("threadlab-omp[")]
    assert len(notices) == 1, err
    assert "arena is full (all 1 slot taken; threadlab rm start --slots N makes more)" in notices[0]
    assert "applications)" not in notices[0]
    state = manager.status()
    assert state["counters"]["full"] >= 1
    assert [a["pid"] for a in state["apps"]] == [first.pid]


@pytest.mark.skipif(NCPUS < 2, reason="CPUs can only be shared from 2 CPUs up")
def test_a_refused_program_is_other_work_and_cooperates(lab: Lab, tmp_path: Path) -> None:
    # The arena is full: the refused program runs without the manager, so
    # the manager counts it as other work and shrinks the one it manages,
    # and the refused one sizes its teams by the CPUs left idle: they share
    # the machine instead of running a full team each.
    manager = lab.start_manager(slots=1, other_load="count")
    managed = lab.probe("--kinds", "parallel", "--work-us", "300", "--until", str(tmp_path / "stop"))
    lab.registered(manager, managed)
    refused = lab.probe("--kinds", "parallel", "--work-us", "300", "--events", "--until", str(tmp_path / "stop"))
    refused.stdout.wait_for("the refused program runs a team smaller than the CPUs",
                            lambda l: l.startswith('{"event"') and json.loads(l)["team"] < NCPUS)
    state = poll("the managed program shrunk for the refused one's work",
                 lambda: (s := manager.status()) and s["manager"]["withheld"] and s)
    app = lab.app(state, managed.pid)
    assert app is not None and app["owned"] < NCPUS
    assert not _cpus(app["cpus"]) & _cpus(state["manager"]["withheld"])
    (tmp_path / "stop").touch()
    assert managed.summary()[0] == 0 and refused.summary()[0] == 0


def _cpus(text: str | None) -> set[int]:
    return set(rm.parse_cpu_list(text)) if text else set()


@pytest.mark.skipif(NCPUS < 2, reason="a CPU can only be withheld from 2 CPUs up")
def test_other_work_is_withheld_from_the_programs(lab: Lab) -> None:
    manager = lab.start_manager(other_load="count")
    assert manager.status()["manager"]["other_load"] == "count"
    program = lab.probe("--kinds", "parallel", "--work-us", "200", "--seconds", "60")
    lab.registered(manager, program)
    busy = max(os.sched_getaffinity(0))
    # Seed 004's independent application, keeping one CPU busy: two
    # processes, so that they hold most of it even beside the program's
    # thread there until the manager withholds it.
    lab.hog(busy)
    lab.hog(busy)
    state = poll("the busy CPU withheld",
                 lambda: (s := manager.status()) and busy in _cpus(s["manager"]["withheld"]) and s)
    # Withheld once it reached 0.5 CPU, and kept while the hogs hold it
    # (docs/rm.md "Other work").
    assert state["manager"]["other_cpus"] > 0.25
    app = poll("the program's allocation without it",
               lambda: (a := lab.app(manager.status(), program.pid)) and busy not in _cpus(a["cpus"]) and a)
    assert app["owned"] <= NCPUS - 1 and app["team"] <= NCPUS - 1
    assert lab.app(manager.status(), program.pid)["alive"] is True


@pytest.mark.skipif(NCPUS < 2, reason="a CPU can only be withheld from 2 CPUs up")
def test_other_work_on_every_cpu_is_not_withheld(lab: Lab) -> None:
    # Other work on every CPU (a build, another user's test suite): a CPU
    # withheld does not isolate it, the programs would share the rest with
    # it all the same, with smaller teams; so the manager gives every CPU
    # back once it sees that and withholds none for a cooldown of 10
    # measurements, 1 s (docs/rm.md "Other work").  Before, it withheld
    # one for as long as the work went on.
    manager = lab.start_manager(other_load="count")
    program = lab.probe("--kinds", "parallel", "--work-us", "200", "--seconds", "60")
    lab.registered(manager, program)
    # The cooldown starts when the manager gives the CPUs back, which its
    # log says; a state read from status alone could be that of a cooldown
    # the machine's own load started earlier, near its end (CI met it).
    log = lab.directory / "rm.log"

    def given_back() -> int:
        return log.read_text().count("withholding none")

    before = given_back()
    for cpu in sorted(os.sched_getaffinity(0)):
        lab.hog(cpu)
    poll("the CPU withheld for the other work given back", lambda: given_back() > before)
    seen = manager.status()
    assert seen["manager"]["other_cpus"] >= 0.5 and seen["manager"]["withheld"] == "", seen["manager"]
    quanta = seen["manager"]["quanta"]
    while (state := manager.status())["manager"]["quanta"] < quanta + 8:  # 160 ms, within the cooldown
        assert state["manager"]["withheld"] == "", state["manager"]
        time.sleep(0.02)
    assert lab.app(manager.status(), program.pid)["alive"] is True


def test_other_work_ignored_withholds_nothing(lab: Lab) -> None:
    manager = lab.start_manager(other_load="ignore")
    lab.hog()
    quanta = manager.status()["manager"]["quanta"]
    state = poll("a few quanta", lambda: (s := manager.status())["manager"]["quanta"] >= quanta + 5 and s)
    assert state["manager"]["other_load"] == "ignore" and state["manager"]["withheld"] == ""


def test_the_log_is_rotated_and_bounded(lab: Lab) -> None:
    # Every CPU rotation logged (--verbose) at a 1 ms quantum with more
    # programs than CPUs: far more than 4 KiB within a second.
    env = rm.daemon_env(lab.directory)
    os.makedirs(lab.directory, mode=0o700, exist_ok=True)
    done = subprocess.run([str(RM), "--policy", "timeshare", "--quantum-ms", "1", "--other-load", "ignore",
                           "--log-max-kb", "4", "--verbose"], env=env, capture_output=True, text=True, timeout=30,
                          check=False)
    assert done.returncode == 0, done.stderr
    manager = rm.Manager.running(lab.directory)
    assert manager is not None
    lab.managers.append(manager)
    programs = [lab.probe("--kinds", "parallel", "--work-us", "100", "--seconds", "60") for _ in range(NCPUS + 1)]
    log, old = lab.directory / "rm.log", lab.directory / "rm.log.1"

    def rotated_twice() -> bool:
        try:
            first = log.read_text().splitlines()[0]
        except (OSError, IndexError):
            return False
        return "rm.log reached 4 KiB: the lines before are in rm.log.1 (rotation" in first and \
            int(first.split("(rotation ")[1].split(";")[0]) >= 2
    poll("rm.log rotated twice", rotated_twice)
    for program in programs:
        program.kill()
    manager.stop()
    line = 512  # the longest line a rotation may let through
    assert log.stat().st_size <= 4096 + line and old.stat().st_size <= 4096 + line
    assert not manager.alive()


def test_status_table_lists_programs(lab: Lab, run_cli: CliRunner) -> None:
    manager = lab.start_manager()
    program = lab.probe("--kinds", "parallel", "--work-us", "50", "--seconds", "60")
    lab.registered(manager, program)
    code, out, err = run_cli("rm", "status")
    assert code == 0, err
    for header in ("slot", "pid", "requested", "allocated", "CPUs", "epoch", "heartbeat"):
        assert header in out
    row = next(line for line in out.splitlines() if f" {program.pid} " in f" {line} ")
    assert "threadlab-omp-p" in row


def test_status_watch_refreshes_until_interrupted(lab: Lab) -> None:
    manager = lab.start_manager()
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    # Ctrl-C's default action in the watcher, whatever this process has: a
    # test run started in the background by a shell without job control
    # ignores SIGINT, and an ignored SIGINT is inherited (the watcher then
    # ran on and filled the pipe nobody read).
    watcher = subprocess.Popen([sys.executable, "-m", "threadlab", "rm", "status", "--watch", "0.05", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert watcher.stdout is not None
        quanta = [json.loads(watcher.stdout.readline())["manager"]["quanta"] for _ in range(3)]
        assert quanta == sorted(quanta) and quanta[-1] > quanta[0]  # live, not one snapshot repeated
        watcher.send_signal(signal.SIGINT)
        try:
            assert watcher.wait(20) == 0
        except subprocess.TimeoutExpired:
            where = Path(f"/proc/{watcher.pid}/wchan").read_text(errors="replace")
            watcher.kill()
            _, err = watcher.communicate()
            raise AssertionError(f"no exit 20 s after SIGINT: waiting in {where!r}, stderr {err[-2000:]!r}") from None
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
    assert manager.alive()


def test_a_foreign_arena_is_refused_until_reset(lab: Lab, run_cli: CliRunner) -> None:
    arena = Path("/dev/shm" + rm.arena_name(lab.directory))
    arena.write_bytes(b"\xff" * 4096)  # what another layout, or garbage, looks like
    try:
        code, _, err = run_cli("rm", "status")
        assert code == 1
        assert "refusing the arena" in err and "not a threadlab-rm arena" in err
        code, _, err = run_cli("rm", "start")
        assert code == 1 and "--reset" in err
        manager = lab.start_manager(reset=True)
        assert manager.status()["layout_version"] == 2
    finally:
        lab.close()
        arena.unlink(missing_ok=True)


# ----------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rm", "start", "--policy", "fifo"],
         "--policy fifo: expected one of timeshare, equipartition, static (equi = equipartition"),
        (["rm", "start", "--quantum-ms", "0"], "--quantum-ms 0: expected an integer from 1 to 60000"),
        (["rm", "start", "--quantum-ms", "60001"], "--quantum-ms 60001: expected an integer from 1 to 60000"),
        (["rm", "start", "--slots", "0"], "--slots 0: expected an integer from 1 to 4096"),
        (["rm", "start", "--cpus", "3-1"], "--cpus 3-1: bad part '3-1'; expected a CPU list such as 0-3,6"),
        (["rm", "set", "--policy", "fair"], "--policy fair: expected one of timeshare, equipartition, static"),
        (["rm", "set"], "nothing to set: give --policy P and/or --quantum-ms N"),
        (["rm", "stop", "--timeout", "0"], "--timeout 0: expected a number from 0.1 to 3600 (seconds)"),
        (["rm", "status", "--watch", "0"], "--watch 0: expected a number from 0.05 to 3600 (seconds)"),
        (["rm"], "an action is required: start, stop, status or set"),
        (["rm", "restart"], "invalid choice: 'restart'"),
        (["omp"], "an action is required: run"),
        (["omp", "run"], "a program is required"),
        (["omp", "run", "--", "no-such-program-xyz"], "PROGRAM no-such-program-xyz: not found on $PATH"),
        (["rm", "status", "--db", "x.db"], "unrecognized arguments: --db x.db"),  # rm keeps no records
        (["omp", "run", "--db", "x.db", "--", "true"], "unrecognized arguments: --db"),
    ],
)
def test_usage_errors(args: list[str], message: str, run_cli: CliRunner, native_env: None) -> None:
    code, out, err = run_cli(*args)
    assert code == 2
    assert message in err
    assert err.startswith("threadlab: error: ") and "Traceback" not in err
    assert out == ""


@needs_native
@pytest.mark.parametrize("action", [["stop"], ["status"], ["set", "--policy", "static"]])
def test_no_manager_says_so(action: list[str], run_cli: CliRunner, native_env: None, tmp_path: Path) -> None:
    code, out, err = run_cli("rm", *action, "--dir", str(tmp_path / "none"))
    assert code == rm.EXIT_NOT_RUNNING
    assert "no resource manager is running" in err and str(tmp_path / "none") in err


@needs_native
@pytest.mark.parametrize("action", [["stop"], ["status"], ["status", "--json"], ["set", "--policy", "static"]])
def test_a_directory_others_may_enter_is_refused_not_reported_empty(action: list[str], run_cli: CliRunner,
                                                                     native_env: None, tmp_path: Path) -> None:
    # No manager can ever run there: saying "no manager is running" hid why.
    where = tmp_path / "open"
    where.mkdir(mode=0o755)
    code, out, err = run_cli("rm", *action, "--dir", str(where))
    assert code == 1, err
    assert f"refusing the directory {where}: its mode is 0755" in err and "Traceback" not in err


@needs_native
def test_omp_run_says_why_a_directory_is_refused(native_env: None, tmp_path: Path) -> None:
    where = tmp_path / "open"
    where.mkdir(mode=0o755)
    done = threadlab_run(None, "omp", "run", "--dir", str(where), "--", "true", timeout=60)
    assert done.returncode == 0, done.stderr  # the program still runs, unmanaged
    assert f"refusing the directory {where}: its mode is 0755" in done.stderr
    assert "the program runs unmanaged" in done.stderr and "Traceback" not in done.stderr


def test_api_refuses_bad_values(native_env: None, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="policy fair: expected one of timeshare, equipartition, static"):
        rm.Manager.start(directory=tmp_path, policy="fair")
    with pytest.raises(UserError, match="quantum 0 ms: expected an integer from 1 to 60000"):
        rm.Manager.start(directory=tmp_path, quantum_ms=0)
    with pytest.raises(UserError, match="CPU -1"):
        rm.Manager.start(directory=tmp_path, cpus=[-1])
    beyond = max(os.sched_getaffinity(0)) + 1
    with pytest.raises(UserError, match=f"CPU {beyond} is not available to this process"):
        rm.Manager.start(directory=tmp_path, cpus=[beyond])
    assert not (tmp_path / "rm.pid").exists()


def test_missing_build_says_how_to_build(tmp_path: Path) -> None:
    # conftest points THREADLAB_NATIVE_DIR at an empty directory
    with pytest.raises(ThreadlabError, match="threadlab-rm not found .*point it at a build's bin directory"):
        discovery.find_one("threadlab-rm")
    with pytest.raises(ThreadlabError, match="threadlab-omp-run not found"):
        rm.omp_launch(["true"])


def test_arena_names_follow_the_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(rm.DIR_ENV, raising=False)
    monkeypatch.delenv(rm.ARENA_ENV, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    assert rm.runtime_dir() == Path(f"/tmp/threadlab-{os.getuid()}")  # no such directory: not used
    (tmp_path / "xdg").mkdir(mode=0o755)
    assert rm.runtime_dir() == Path(f"/tmp/threadlab-{os.getuid()}")  # others may enter it: not used
    (tmp_path / "xdg").chmod(0o700)
    assert rm.runtime_dir() == tmp_path / "xdg" / "threadlab"
    standard = f"/threadlab-rm-{os.getuid()}"
    assert rm.arena_name() == standard  # the daemon's own default
    private_a, private_b = rm.arena_name(tmp_path / "a"), rm.arena_name(tmp_path / "b")
    assert len({standard, private_a, private_b}) == 3
    monkeypatch.setenv(rm.DIR_ENV, str(tmp_path / "a"))
    assert rm.runtime_dir() == tmp_path / "a"
    assert rm.arena_name() == private_a
    monkeypatch.setenv(rm.ARENA_ENV, "mine")  # the environment's own pair wins
    assert rm.arena_name() == "/mine"
    assert rm.arena_name(tmp_path / "b") == private_b
    # A private manager's directory (Manager.start_private) names its arena.
    private = tmp_path / f"{rm.private_prefix(1234)}AbC123"
    assert rm.arena_name(private) == f"/threadlab-rm-{os.getuid()}-pid1234-AbC123"


def test_help_documents_exit_status(run_cli: CliRunner) -> None:
    for args in (["rm", "start"], ["rm", "stop"], ["rm", "status"], ["rm", "set"], ["omp", "run"]):
        code, out, _ = run_cli(*args, "--help")
        assert code == 0
        assert "exit status" in out, args
