"""libthreadlab-omp through `threadlab omp run`, for real, with
threadlab-omp-probe (native/omp/probe.c): a managed program whose team
follows its allocation while it runs, no manager (the program runs as
without the shim), a manager killed mid-run (the program falls back,
finishes, and joins the next manager), pinning, and the environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rmtools import NCPUS, PROBE, SHIM, Lab, lab, native_env, needs_native, poll  # noqa: F401
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
    (tmp_path / "stop").touch()
    code, summary, err = program.summary()
    assert code == 0 and summary["work_ok"] is True
    assert summary["shim_state"] == 1
    manager.stop()
    assert not (rm.SHM_DIR / manager.arena.lstrip("/")).exists()  # nothing of the killed manager is left


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
    assert seen["GOMP_SPINCOUNT"] == rm.SPINCOUNT
    assert seen["THREADLAB_OMP_PIN"] == "1" and seen["THREADLAB_OMP_QUIET"] == "1"
    assert seen[rm.DIR_ENV] == str(lab.directory)
    assert seen[rm.ARENA_ENV] == rm.arena_name(lab.directory)


@needs_native
def test_shim_environment_keeps_the_users_wait_policy(native_env: None, tmp_path: Path) -> None:
    env = rm.shim_environment({"OMP_WAIT_POLICY": "active", "THREADLAB_OMP_PIN": "1"}, directory=tmp_path)
    assert env["OMP_WAIT_POLICY"] == "active" and "GOMP_SPINCOUNT" not in env
    assert "THREADLAB_OMP_PIN" not in env  # pin=False means unpinned
    assert env["THREADLAB_OMP_DYNAMIC_ORIG"] == "unset"
    again = rm.shim_environment(env, directory=tmp_path)  # idempotent: the shim once, the user's setting kept
    assert again["LD_PRELOAD"] == env["LD_PRELOAD"] == str(os.path.abspath(SHIM))
    assert again["THREADLAB_OMP_DYNAMIC_ORIG"] == "unset"


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
