"""libthreadlab-omp through `threadlab omp run`, for real, with
threadlab-omp-probe (native/omp/probe.c): a managed program whose team
follows its allocation while it runs, programs with one long region whose
threads' CPUs follow it (and a late arrival that gets the CPUs back), no
manager (the program runs as without the shim), a manager stopped or
killed mid-run (the program cooperates, with its CPUs back and one
notice, and joins the next manager), pinning, and the environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import REAL_NATIVE_DIR, threadlab_run
from rmtools import NCPUS, PROBE, SHIM, Lab, Program, lab, native_env, needs_native, poll, thread_cpus  # noqa: F401
from threadlab.native import rm



def _team(line: str) -> int | None:
    """The team of a probe --events line, None for other lines."""
    if not line.startswith('{"event"'):
        return None
    return int(json.loads(line)["team"])


@pytest.mark.skipif(NCPUS < 2, reason="a team can only shrink from 2 CPUs up")
def test_team_follows_the_allocation_while_running(lab: Lab, tmp_path: Path) -> None:
    manager = lab.start_manager(policy="equipartition")
    args = ("--kinds", "parallel", "--work-us", "200", "--events")
    first = lab.probe(*args, "--until", str(tmp_path / "stop-first"))
    assert first.stdout.wait_for("the whole machine, alone", lambda l: _team(l) == NCPUS)
    lab.registered(manager, first)

    second = lab.probe(*args, "--until", str(tmp_path / "stop-second"))
    shrunk = first.stdout.wait_for("the first program's team shrinks", lambda l: (_team(l) or NCPUS) < NCPUS)
    share = (NCPUS + 1) // 2  # equipartition between two; the earlier arrival gets an odd CPU
    assert _team(shrunk) == share
    state = lab.registered(manager, second) and manager.status()
    apps = state["apps"]
    assert len(apps) == 2
    assert sum(a["owned"] for a in apps) <= NCPUS and all(a["team"] >= 1 for a in apps)
    owned = [set(rm.parse_cpu_list(a["cpus"])) for a in apps if a["cpus"]]
    assert sum(map(len, owned)) == len(set().union(*owned))  # disjoint CPU sets

    (tmp_path / "stop-second").touch()
    code, summary, _ = second.summary()
    assert code == 0 and summary["work_ok"] is True
    first.stdout.wait_for("the first program's team grows back", lambda l: _team(l) == NCPUS)
    (tmp_path / "stop-first").touch()
    code, summary, _ = first.summary()
    assert code == 0 and summary["work_ok"] is True
    assert summary["shim_state"] == 2  # managed to the end
    assert summary["kinds"]["parallel"]["max"] == NCPUS and summary["histogram"][str(share)] > 0


def _long_team(line: str) -> int | None:
    """The team of a probe's long region, from its {"event": "long"} line."""
    if not line.startswith('{"event"'):
        return None
    event = json.loads(line)
    return int(event["team"]) if event["event"] == "long" else None


def _owned(manager: rm.Manager, program: Program) -> set[int]:
    app = next((a for a in manager.status()["apps"] if a["pid"] == program.pid), None)
    return set(rm.parse_cpu_list(app["cpus"])) if app and app["cpus"] else set()


def _confined(manager: rm.Manager, program: Program) -> set[int] | None:
    """The CPUs the program owns when every one of its threads is confined
    to them (and it owns some), else None."""
    owned = _owned(manager, program)
    threads = thread_cpus(program.pid)
    return owned if owned and threads and all(cpus <= owned for cpus in threads.values()) else None


def _free(program: Program) -> bool:
    """Every thread of the program may run on every CPU of this process."""
    threads = thread_cpus(program.pid)
    return bool(threads) and all(cpus == set(os.sched_getaffinity(0)) for cpus in threads.values())


def _notices(err: list[str]) -> list[str]:
    return [line for line in err if line.startswith("threadlab-omp[")]


@pytest.mark.skipif(NCPUS < 2, reason="CPUs can only be shared from 2 CPUs up")
def test_a_late_long_region_runs_its_request_on_its_cpus_and_gets_the_rest_back(lab: Lab, tmp_path: Path) -> None:
    # Seed 004's late arrival: a program of short regions holds the
    # machine, then one whose only region is long (NAS EP) arrives.  The
    # long region must start with its full request, run on the CPUs it
    # owns while the other runs, and get every CPU once the other exits.
    manager = lab.start_manager()
    short = lab.probe("--kinds", "parallel", "--work-us", "200", "--until", str(tmp_path / "stop-short"))
    lab.registered(manager, short)
    late = lab.probe("--kinds", "long", "--until", str(tmp_path / "stop-late"))
    team = _long_team(late.stdout.wait_for("the long region starts", lambda l: _long_team(l) is not None))
    assert team == NCPUS  # its request, though it arrived with one CPU's share
    owned_late = poll("the long region's threads confined to the CPUs it owns", lambda: _confined(manager, late))
    owned_short = poll("the short program's threads confined to its CPUs", lambda: _confined(manager, short))
    assert owned_late and owned_short and not owned_late & owned_short  # disjoint
    assert len(owned_late) + len(owned_short) == NCPUS

    (tmp_path / "stop-short").touch()
    assert short.summary()[0] == 0
    poll("the long region gets every CPU back", lambda: _free(late) and _owned(manager, late) == set(
        os.sched_getaffinity(0)))
    (tmp_path / "stop-late").touch()
    code, summary, err = late.summary()
    assert code == 0 and summary["shim_state"] == 2 and summary["histogram"] == {str(NCPUS): 1}
    assert _notices(err) == []


@pytest.mark.skipif(NCPUS < 2, reason="CPUs can only be shared from 2 CPUs up")
def test_a_running_long_region_gives_cpus_to_a_newcomer(lab: Lab, tmp_path: Path) -> None:
    # The first instance's only region started alone on every CPU; when a
    # second arrives its threads move to its share at once, mid-region.
    manager = lab.start_manager()
    first = lab.probe("--kinds", "long", "--until", str(tmp_path / "stop-first"))
    assert _long_team(first.stdout.wait_for("the first region starts", lambda l: _long_team(l) is not None)) == NCPUS
    poll("alone, it runs on every CPU", lambda: _free(first))
    second = lab.probe("--kinds", "long", "--until", str(tmp_path / "stop-second"))
    second.stdout.wait_for("the second region starts", lambda l: _long_team(l) is not None)
    mine = poll("the first program's threads confined to its share", lambda: _confined(manager, first))
    theirs = poll("the newcomer's threads confined to its share", lambda: _confined(manager, second))
    assert len(mine) < NCPUS and not mine & theirs
    (tmp_path / "stop-second").touch()
    assert second.summary()[0] == 0
    poll("the first program gets every CPU back", lambda: _free(first))
    (tmp_path / "stop-first").touch()
    assert first.summary()[0] == 0


@pytest.mark.skipif(NCPUS < 2, reason="CPUs can only be shared from 2 CPUs up")
def test_a_stopped_manager_gives_the_cpus_back_with_one_notice(lab: Lab, tmp_path: Path) -> None:
    manager = lab.start_manager()
    short = lab.probe("--kinds", "parallel", "--work-us", "200", "--until", str(tmp_path / "stop-short"))
    lab.registered(manager, short)
    long = lab.probe("--kinds", "long", "--until", str(tmp_path / "stop-long"))
    long.stdout.wait_for("the long region starts", lambda l: _long_team(l) is not None)
    poll("the long region confined", lambda: _confined(manager, long))
    manager.stop()  # mid-region: the long program starts no region again
    poll("the long region's threads get every CPU back", lambda: _free(long))
    poll("the short program's threads too", lambda: _free(short))
    (tmp_path / "stop-short").touch()
    (tmp_path / "stop-long").touch()
    for program in (short, long):
        code, summary, err = program.summary()
        assert code == 0 and summary["work_ok"] is True
        assert summary["shim_state"] == 3  # cooperative: teams sized by the idle CPUs
        notices = _notices(err)
        # One event, one notice (it looked for a manager every 50 ms since).
        assert len(notices) == 1 and "stopped; running unmanaged but cooperative" in notices[0], err


@pytest.mark.skipif(NCPUS < 2, reason="a team can only be smaller than the CPUs from 2 CPUs up")
def test_without_its_manager_a_program_leaves_busy_cpus_alone(lab: Lab, tmp_path: Path) -> None:
    # After the manager stops, teams are sized by the CPUs other work
    # leaves idle, never the full spinning team libgomp would run.
    manager = lab.start_manager()
    program = lab.probe("--kinds", "parallel", "--work-us", "300", "--events", "--until", str(tmp_path / "stop"))
    lab.registered(manager, program)
    program.stdout.wait_for("the whole machine, alone", lambda l: _team(l) == NCPUS)
    for cpu in sorted(os.sched_getaffinity(0))[1:]:  # every CPU but one busy with other work
        lab.hog(cpu)
    manager.stop()
    program.stdout.wait_for("a team smaller than the CPUs", lambda l: (_team(l) or NCPUS) < NCPUS)
    (tmp_path / "stop").touch()
    code, summary, _ = program.summary()
    assert code == 0 and summary["shim_state"] == 3


def _plain(*args: str) -> dict[str, Any]:
    done = subprocess.run([str(PROBE), *args], capture_output=True, text=True, timeout=60, check=True)
    assert done.stderr == ""
    return json.loads(done.stdout.splitlines()[-1])


def _comparable(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in ("seconds", "shim_state")}


def test_without_a_manager_the_program_runs_as_without_the_shim(lab: Lab) -> None:
    args = ("--rounds", "5", "--nested")  # every kind of region, nested ones too
    plain = _plain(*args)
    code, shimmed, err = lab.probe(*args).summary()
    assert code == 0
    assert plain["shim_state"] == -1 and shimmed["shim_state"] == 1  # loaded, unmanaged
    assert _comparable(shimmed) == _comparable(plain)  # same teams, same omp_get_dynamic(), same results
    notices = [line for line in err if line.startswith("threadlab-omp[")]
    assert len(notices) == 1 and "no resource manager" in notices[0], err


def test_a_killed_manager_is_survived_and_the_next_one_joined(lab: Lab, tmp_path: Path) -> None:
    manager = lab.start_manager()
    program = lab.probe("--kinds", "parallel", "--work-us", "100", "--until", str(tmp_path / "stop"))
    lab.registered(manager, program)
    manager.kill()  # SIGKILL: no goodbye in the arena
    program.stderr.wait_for("the program falls back", lambda l: "running unmanaged" in l)

    # A new manager on the same directory adopts (or resets) the arena; the
    # program, looking again, is managed once more.
    successor = lab.start_manager()
    assert successor.pid != manager.pid
    lab.registered(successor, program)
    program.stderr.wait_for("the program says it is managed again", lambda l: "managed by threadlab-rm" in l)
    (tmp_path / "stop").touch()
    code, summary, _ = program.summary()
    assert code == 0 and summary["work_ok"] is True
    assert summary["shim_state"] == 2


def test_a_killed_manager_the_program_finishes_unmanaged(lab: Lab, tmp_path: Path) -> None:
    manager = lab.start_manager()
    program = lab.probe("--kinds", "parallel,for_dynamic,sections", "--work-us", "100",
                        "--until", str(tmp_path / "stop"))
    lab.registered(manager, program)
    manager.kill()
    program.stderr.wait_for("the program falls back", lambda l: "resource manager" in l and "unmanaged" in l)
    poll("its threads get every CPU back", lambda: _free(program))
    time.sleep(0.3)  # it looks for a manager every 50 ms meanwhile: no new notice
    (tmp_path / "stop").touch()
    code, summary, err = program.summary()
    assert code == 0 and summary["work_ok"] is True
    assert summary["shim_state"] == 3  # cooperative
    notices = _notices(err)
    assert len(notices) == 1 and "is gone; running unmanaged but cooperative" in notices[0], err
    manager.stop()
    assert not (rm.SHM_DIR / manager.arena.lstrip("/")).exists()  # nothing of the killed manager is left


RUNTIMES = ["shim", pytest.param("ult", marks=pytest.mark.skipif(
    not (REAL_NATIVE_DIR.parent / "lib" / rm.ULT_LIBRARY).is_file(), reason=f"{rm.ULT_LIBRARY} is not built"))]


@pytest.mark.skipif(NCPUS < 2, reason="a team can only shrink from 2 CPUs up")
@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize(("clause", "dynamic", "shrinks"), [
    (False, None, True),      # threadlab's default sizes a region that names no size
    (True, None, False),      # ... but not one with a num_threads clause (GROMACS crashed on a smaller team)
    (True, "true", True),     # the user's OMP_DYNAMIC=true lets it
    (False, "false", False),  # the user's OMP_DYNAMIC=false keeps every size
], ids=["no-clause", "clause", "clause-dynamic", "no-clause-static"])
def test_which_managed_regions_get_fewer_threads_than_they_ask(lab: Lab, tmp_path: Path, runtime: str,
                                                               clause: bool, dynamic: str | None,
                                                               shrinks: bool) -> None:
    # Two programs share two CPUs, one each.  The second one's regions ask
    # for 2 threads, by the ICV or a num_threads(2) clause; whether they
    # get 1 (the allocation) or 2 (their request, the extra thread sharing
    # the program's CPU) is the rule under test.
    manager = lab.start_manager(cpus=sorted(os.sched_getaffinity(0))[:2])
    holder = lab.probe("--kinds", "parallel", "--work-us", "200", "--until", str(tmp_path / "stop"))
    lab.registered(manager, holder)
    env = {k: v for k, v in os.environ.items() if k != "OMP_DYNAMIC"}
    env["OMP_NUM_THREADS"] = "2"
    if dynamic is not None:
        env["OMP_DYNAMIC"] = dynamic
    args = ("--kinds", "parallel", "--work-us", "100", "--until", str(tmp_path / "stop-asker"),
            *(("--num-threads", "2") if clause else ()))
    asker = lab.probe(*args, env=env, options=("--runtime", runtime, "--quiet"))
    lab.registered(manager, asker)  # managed (what follows holds for managed regions)
    time.sleep(0.3)
    (tmp_path / "stop-asker").touch()
    code, summary, err = asker.summary()
    (tmp_path / "stop").touch()
    assert code == 0 and summary["work_ok"] is True, err[-5:]
    teams = {int(t) for t in summary["histogram"]}
    # (the first region of each may run its request: its length is unknown)
    assert (1 in teams) is shrinks and teams <= {1, 2}, summary["histogram"]
    assert holder.summary()[0] == 0


def test_pinned_program(lab: Lab) -> None:
    manager = lab.start_manager()
    program = lab.probe("--kinds", "parallel,for_static,legacy", "--work-us", "50", "--seconds", "60",
                        options=("--pin",))
    app = lab.registered(manager, program)
    assert app["pinned"] is True
    assert set(rm.parse_cpu_list(app["cpus"])) <= set(os.sched_getaffinity(0))
    program.kill()


def test_exit_status_is_the_programs(lab: Lab) -> None:
    code, _, _ = lab.omp_run("sh", "-c", "exit 7").finish()
    assert code == 7


def test_environment_of_a_managed_program(lab: Lab) -> None:
    env = dict(os.environ, LD_PRELOAD="/usr/lib/other.so", OMP_DYNAMIC="false")
    code, out, _ = lab.omp_run("env", env=env, options=("--pin", "--quiet")).finish()
    assert code == 0
    seen = dict(line.split("=", 1) for line in out if "=" in line)
    assert seen["LD_PRELOAD"] == f"{os.path.abspath(SHIM)}:/usr/lib/other.so"
    assert seen["OMP_DYNAMIC"] == "true"
    assert seen["THREADLAB_OMP_DYNAMIC_ORIG"] == "false"  # restored whenever unmanaged
    assert seen["GOMP_SPINCOUNT"] == "100"  # native/omp/env.h: docs/omp.md "Waiting"
    assert seen["THREADLAB_OMP_PIN"] == "1" and seen["THREADLAB_OMP_QUIET"] == "1"
    assert seen[rm.DIR_ENV] == str(lab.directory)
    assert seen[rm.ARENA_ENV] == rm.arena_name(lab.directory)


def _launched_env(base: dict[str, str], tmp_path: Path, **options: Any) -> dict[str, str]:
    argv, env = rm.omp_launch(["env"], base, directory=tmp_path, **options)
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


@needs_native
def test_the_launcher_keeps_the_users_wait_policy(native_env: None, tmp_path: Path) -> None:
    seen = _launched_env({"PATH": os.environ["PATH"], "OMP_WAIT_POLICY": "active", "THREADLAB_OMP_PIN": "1"},
                         tmp_path)
    assert seen["OMP_WAIT_POLICY"] == "active" and "GOMP_SPINCOUNT" not in seen
    assert "THREADLAB_OMP_PIN" not in seen  # pin=False means unpinned
    assert seen["THREADLAB_OMP_DYNAMIC_ORIG"] == "unset" and seen["OMP_DYNAMIC"] == "true"
    assert seen[rm.DIR_ENV] == str(tmp_path) and seen[rm.ARENA_ENV] == rm.arena_name(tmp_path)
    again = _launched_env(seen, tmp_path, pin=True)  # nested: the shim once, the user's setting kept
    assert again["LD_PRELOAD"] == seen["LD_PRELOAD"] == str(os.path.realpath(SHIM))
    assert again["THREADLAB_OMP_DYNAMIC_ORIG"] == "unset" and again["THREADLAB_OMP_PIN"] == "1"


@needs_native
def test_omp_run_starts_without_the_front_end(native_env: None, tmp_path: Path) -> None:
    # `threadlab omp run` must not pay for threadlab.cli's imports (numpy,
    # scipy, rich, the store): the program starts from the entry point.
    # PYTHONPROFILEIMPORTTIME=1 is -X importtime.
    done = threadlab_run(None, "omp", "run", "--dir", str(tmp_path / "rm"), "--quiet", "--", "sh", "-c",
                         "echo ran; exit 3", timeout=60, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 3 and done.stdout == "ran\n"
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "threadlab.native.rm" in imported
    assert not imported & {"threadlab.cli", "numpy", "scipy", "rich", "threadlab.records.store", "sqlite3"}, \
        sorted(imported)


@needs_native
def test_the_launcher_on_its_own(native_env: None) -> None:
    launcher = REAL_NATIVE_DIR / rm.LAUNCHER
    done = subprocess.run([str(launcher), "--", "no-such-program-xyz"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "PROGRAM no-such-program-xyz: not found on $PATH" in done.stderr
    done = subprocess.run([str(launcher), "--fast"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "unknown option '--fast'" in done.stderr
    done = subprocess.run([str(launcher)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "a program is required" in done.stderr
    done = subprocess.run([str(launcher), "sh", "-c", "exit 5"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 5


def _dynamic_symbols(library: Path) -> set[str]:
    """The defined dynamic symbols of a shared object (nm -D)."""
    out = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True)
    return {line.split()[-1].split("@")[0] for line in out.stdout.splitlines() if line.strip()}


@needs_native
def test_the_shims_abi_header_matches_libgomp_and_the_shim() -> None:
    """gomp_abi.h declares the GOMP entries by hand (libgomp_g.h is not
    installed): each must exist in libgomp.so.1, and every GOMP entry the
    shim exports must be declared there, so a misspelt or missing
    interposition cannot go unnoticed."""
    header = (Path(__file__).resolve().parents[1] / "native" / "omp" / "gomp_abi.h").read_text()
    declared = set(re.findall(r"\b(GOMP_\w+)\(", header))
    assert len(declared) > 20
    libgomp = subprocess.run(["gcc", "-print-file-name=libgomp.so.1"], capture_output=True, text=True,
                             check=True).stdout.strip()
    exported_by_libgomp = _dynamic_symbols(Path(libgomp))
    assert declared - exported_by_libgomp == set()
    shim_gomp = {s for s in _dynamic_symbols(SHIM) if s.startswith("GOMP_")}
    assert shim_gomp and shim_gomp - declared == set()


# ------------------------------------------------ --runtime ult (libthreadlab-gomp)

NPB = REAL_NATIVE_DIR / "threadlab-npb"
ULT = REAL_NATIVE_DIR.parent / "lib" / rm.ULT_LIBRARY
needs_ult = pytest.mark.skipif(not (os.access(NPB, os.X_OK) and ULT.is_file()),
                               reason=f"threadlab-npb or {rm.ULT_LIBRARY} is not built in {REAL_NATIVE_DIR}")


def _npb_record(program: Program) -> dict[str, Any]:
    code, out, err = program.finish(timeout=120)
    assert code == 0, f"exit status {code}; stderr {err[-5:]}"
    records = [json.loads(line) for line in out if line.startswith("{")]
    assert records, f"no record; stdout {out[-5:]}, stderr {err[-5:]}"
    return records[-1]


@needs_ult
@pytest.mark.parametrize("managed", [False, True], ids=["unmanaged", "managed"])
def test_omp_run_on_user_level_threads(lab: Lab, managed: bool) -> None:
    # An unmodified OpenMP program (threadlab-npb links libgomp) on
    # libthreadlab-gomp: GOMP_parallel comes from it, the kernel verifies,
    # and under a manager the runtime says it is managed.
    if managed:
        lab.start_manager()
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    record = _npb_record(lab.omp_run(str(NPB), "--run", "study.multiprog.cg", "--param", "size=small", env=env,
                                     options=("--runtime", "ult", "--quiet")))
    assert Path(record["extra"]["runtime"]).name == rm.ULT_LIBRARY
    assert record["checks"][0]["name"] == "verified" and record["checks"][0]["ok"] is True
    assert record["extra"]["managed"] == ("yes" if managed else "no")
    assert record["extra"]["shim_state"] == -1  # the shim is not there


@needs_native
def test_the_launchers_ult_environment(native_env: None, tmp_path: Path) -> None:
    # After a shim's run (nested): the shim leaves LD_PRELOAD, the user's
    # OMP_DYNAMIC comes back (libthreadlab-gomp makes dyn-var true itself
    # while managed), quiet reaches the runtime.
    shimmed = _launched_env({"PATH": os.environ["PATH"], "LD_PRELOAD": "/usr/lib/other.so"}, tmp_path)
    seen = _launched_env(shimmed, tmp_path, runtime="ult", quiet=True)
    assert seen["LD_PRELOAD"] == f"{os.path.realpath(ULT)}:/usr/lib/other.so"
    assert "OMP_DYNAMIC" not in seen and "THREADLAB_OMP_DYNAMIC_ORIG" not in seen
    assert seen["THREADLAB_GOMP_QUIET"] == "1"
    back = _launched_env(seen, tmp_path)  # and the other way: the shim replaces libthreadlab-gomp
    assert back["LD_PRELOAD"] == f"{os.path.realpath(SHIM)}:/usr/lib/other.so"


@needs_native
def test_omp_run_runtime_errors(native_env: None, tmp_path: Path) -> None:
    def threadlab(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return threadlab_run(None, "omp", "run", *args, timeout=60, env=extra)

    done = threadlab("--runtime", "fibers", "--", "true")
    assert done.returncode == 2 and "--runtime fibers: unknown runtime; expected shim" in done.stderr
    assert "ult (" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = threadlab("--runtime", "ult", "--pin", "--", "true")
    assert done.returncode == 2 and "--pin applies to --runtime shim only" in done.stderr
    # a build without libthreadlab-gomp: one line saying how to build it
    (tmp_path / "bin").mkdir()
    (tmp_path / "lib").mkdir()
    launcher = tmp_path / "bin" / rm.LAUNCHER
    launcher.write_bytes((REAL_NATIVE_DIR / rm.LAUNCHER).read_bytes())
    launcher.chmod(0o755)
    done = threadlab("--runtime=ult", "--", "true", THREADLAB_NATIVE_DIR=str(tmp_path / "bin"))
    assert done.returncode == 1 and f"{rm.ULT_LIBRARY} not found" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = subprocess.run([str(launcher), "--runtime", "ult", "true"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and f"{rm.ULT_LIBRARY} not found" in done.stderr and "make build" in done.stderr
    done = subprocess.run([str(launcher), "--runtime", "fibers", "true"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "--runtime 'fibers': unknown runtime (accepted: shim" in done.stderr
