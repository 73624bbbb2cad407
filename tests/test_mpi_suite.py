"""The mpi suite for real (docs/mpi.md): threadlab-bench-mpi started by a
local mpirun with 2 ranks, through `threadlab bench --suite mpi`.

Every launch runs under `timeout` (the launcher given to threadlab starts
with it, and each point has threadlab's own time limit), since a small
share of Open MPI's process starts hang in PMIx_Init here; a sweep that
lost a point to such a hang is run once more."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import REAL_NATIVE_DIR, stored_records, threadlab_run
from threadlab.native import launcher
from threadlab.native import protocol as native
from threadlab.analysis.points import failed_checks
from threadlab.records import schema
from threadlab.errors import ThreadlabError, UserError

PROGRAM = REAL_NATIVE_DIR / "threadlab-bench-mpi"
ASAN_PROGRAM = Path(os.environ.get("THREADLAB_ASAN_DIR") or "/nonexistent") / "threadlab-bench-mpi"
needs_mpi = pytest.mark.skipif(not os.access(PROGRAM, os.X_OK),
                               reason=f"no {PROGRAM} (MPI not found at build time, or not built)")
LAUNCH_LIMIT_S = 90


def _launcher(program: Path, ranks: int = 2) -> str:
    """The default local launcher with `ranks` ranks, under `timeout`."""
    words = launcher.default(program, ranks)
    if words[0] == "srun":
        pytest.skip("inside a Slurm allocation: the tests start local ranks only")
    return shlex.join(["timeout", "-k", "5", str(LAUNCH_LIMIT_S), *words])


def _bench(db: Path, *args: str, native_dir: Path = REAL_NATIVE_DIR) -> subprocess.CompletedProcess[str]:
    return threadlab_run(db, "bench", "--quiet", *args, env={"THREADLAB_NATIVE_DIR": str(native_dir)}, timeout=600)


def _sweep(tmp_path: Path, *args: str, native_dir: Path = REAL_NATIVE_DIR) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A bench run; once more when a point timed out (a start that hung)."""
    for attempt in (1, 2):
        db = tmp_path / f"sweep-{attempt}.db"
        done = _bench(db, *args, native_dir=native_dir)
        records = stored_records(db) if db.exists() else []
        if not any("timed out" in (r["reason"] or "") for r in records):
            break
    return done, db


def _run_environment(db: Path) -> dict[str, Any]:
    with sqlite3.connect(db) as connection:
        return json.loads(connection.execute("SELECT environment FROM runs").fetchone()[0])


@needs_mpi
@pytest.mark.heavy
def test_pingpong_and_barrier_with_two_local_ranks(tmp_path: Path) -> None:
    done, db = _sweep(tmp_path, "--suite", "mpi", "--quick", "--filter", "mpi.pingpong,mpi.barrier",
                      "--placement", "different-cpus", "--timeout", "60", "--launcher", _launcher(PROGRAM))
    records = stored_records(db)
    assert [schema.record_problems(r) for r in records if schema.record_problems(r)] == []
    assert done.returncode == 0, done.stderr
    hosts = _run_environment(db)["mpi"]
    assert hosts["world"] == 2 and len(hosts["hosts"]) == 1 and hosts["hosts"][0]["ranks"] == [0, 1]
    host = hosts["hosts"][0]["host"]

    by_point: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in records:
        by_point[(r["benchmark"], r["metric"], json.dumps(r["params"], sort_keys=True))] = r
        assert r["mpi"]["rank"] == 0 and r["mpi"]["host"] == host and r["mpi"]["world"] == 2
        assert r["mpi"]["transport"] == r["params"]["transport"]
        assert failed_checks(r) == []
    pingpongs = [r for r in records if r["benchmark"] == "mpi.pingpong"]
    inter = [r for r in pingpongs if r["params"]["pair"] == "inter-node"]
    intra = [r for r in pingpongs if r["params"]["pair"] == "intra-node"]
    # One host: inter-node says so; intra-node measures latency and bandwidth.
    assert inter and all(r["status"] == "unsupported" and "inter-node needs ranks on two hosts" in r["reason"]
                         for r in inter)
    assert sorted({r["metric"] for r in intra}) == ["bandwidth", "latency"]
    for r in intra:
        assert r["status"] == "ok" and r["mpi"]["ranks"] == 2 and r["mpi"]["threads_per_rank"] == 1
        names = {c["name"] for c in r["checks"]}
        assert {"payload", "echoed", "placement_ranks"} <= names
        # The forced network transport proves itself; the default one is not labelled so.
        assert ("tcp_path" in names) == (r["params"]["transport"] == "tcp")
    latency = [r for r in intra if r["metric"] == "latency"]
    # a round trip is two messages: a sample is half of one
    assert all(r["unit"] == "ns" and r["summary"]["median"] > 0 and r["actions_per_iteration"] == 2 for r in latency)
    assert all(r["unit"] == "MB/s" and r["derived"] for r in intra if r["metric"] == "bandwidth")

    barriers = {r["params"]["layout"]: r for r in records if r["benchmark"] == "mpi.barrier"}
    assert barriers["ranks"]["status"] == "ok" and barriers["hybrid"]["status"] == "ok"
    # ranks: both ranks, one thread; hybrid: one rank per host with a thread per rank started there
    assert (barriers["ranks"]["mpi"]["ranks"], barriers["ranks"]["mpi"]["threads_per_rank"]) == (2, 1)
    assert (barriers["hybrid"]["mpi"]["ranks"], barriers["hybrid"]["mpi"]["threads_per_rank"]) == (1, 2)
    assert {"episodes", "all_passed"} <= {c["name"] for c in barriers["hybrid"]["checks"]}


@needs_mpi
def test_show_names_the_hosts(tmp_path: Path) -> None:
    done, db = _sweep(tmp_path, "--suite", "mpi", "--quick", "--filter", "mpi.barrier", "--placement", "unbound",
                      "--launcher", _launcher(PROGRAM))
    assert done.returncode == 0, done.stderr
    show = threadlab_run(db, "show", "latest", timeout=60)
    assert show.returncode == 0, show.stderr
    shown = show.stdout
    host = _run_environment(db)["mpi"]["hosts"][0]["host"]
    assert "2 ranks on 1 host(s)" in shown and f"host {host}" in shown and "ranks 0-1" in shown


@needs_mpi
@pytest.mark.heavy
def test_threads_per_rank_and_thread_levels(tmp_path: Path) -> None:
    done, db = _sweep(tmp_path, "--suite", "mpi", "--quick", "--filter", "mpi.*.mt", "--placement", "unbound",
                      "--timeout", "60", "--launcher", _launcher(PROGRAM))
    records = stored_records(db)
    assert [schema.record_problems(r) for r in records if schema.record_problems(r)] == []
    assert done.returncode == 0, done.stderr
    measured = [r for r in records if r["status"] == "ok"]
    # threads 1 and 2, FUNNELED and MULTIPLE; FUNNELED with two threads is refused, with the reason
    refused = [r for r in records if r["status"] == "unsupported"]
    assert {(r["benchmark"], r["params"]["threads"], r["params"]["level"]) for r in refused} == {
        ("mpi.latency.mt", "2", "funneled"), ("mpi.msgrate.mt", "2", "funneled")}
    assert all("level=funneled" in r["reason"] for r in refused)
    for r in measured:
        assert r["mpi"]["threads_per_rank"] == int(r["params"]["threads"])
        assert r["mpi"]["thread_level"] == r["params"]["level"]
        assert failed_checks(r) == []
        assert {"payload", "rounds"} <= {c["name"] for c in r["checks"]}
    assert {r["metric"] for r in measured if r["benchmark"] == "mpi.msgrate.mt"} == {"time_per_message", "rate"}
    rates = [r for r in measured if r["metric"] == "rate"]
    assert rates and all(r["unit"] == "msg/s" and r["summary"]["median"] > 0 for r in rates)


@pytest.mark.skipif(not os.access(ASAN_PROGRAM, os.X_OK), reason="no ASan build of threadlab-bench-mpi")
@pytest.mark.heavy
def test_the_asan_build_measures_cleanly(tmp_path: Path) -> None:
    """Under AddressSanitizer and UBSan: a report makes the rank exit non-zero,
    which the point records as failed."""
    done, db = _sweep(tmp_path, "--suite", "mpi", "--quick", "--filter", "mpi.barrier,mpi.msgrate.mt",
                      "--placement", "unbound", "--timeout", "90", "--launcher", _launcher(ASAN_PROGRAM),
                      native_dir=ASAN_PROGRAM.parent)
    records = stored_records(db)
    failed = [f"{r['benchmark']} {r['params']}: {r['reason']}" for r in records if r["status"] == "failed"]
    assert records and failed == [], "\n".join(failed)
    assert done.returncode == 0, done.stderr


@needs_mpi
def test_a_launcher_that_fails_stores_nothing(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    done = _bench(db, "--suite", "mpi", "--quick", "--launcher", "timeout 30 false")
    assert done.returncode == 1
    assert "threadlab: error: launcher 'timeout 30 false' failed (exit status 1)" in done.stderr
    assert not db.exists() or stored_records(db) == []
    # a launcher of another MPI starts singletons, each its own rank 0
    other = "mpirun.mpich" if "openmpi" in os.path.realpath(launcher.default(PROGRAM)[0]) or \
        "orterun" in launcher.default(PROGRAM)[0] else "mpirun.openmpi"
    if subprocess.run(["sh", "-c", f"command -v {other}"], capture_output=True, check=False).returncode == 0:
        done = _bench(db, "--suite", "mpi", "--quick", "--launcher", f"timeout 60 {other} -np 2")
        assert done.returncode == 1 and "separate MPI jobs of one rank each" in done.stderr, done.stderr
        assert not db.exists() or stored_records(db) == []


def test_launcher_option_errors(tmp_path: Path, run_cli: Any) -> None:
    code, _, err = run_cli("bench", "--suite", "mpi", "--launcher", "no-such-launcher -np 2")
    assert code == 2 and "'no-such-launcher' is not a program on PATH" in err
    code, _, err = run_cli("bench", "--suite", "mpi", "--launcher", "mpirun 'unclosed")
    assert code == 2 and "--launcher" in err and "quotation" in err
    code, _, err = run_cli("bench", "--suite", "mpi", "--launcher", "")
    assert code == 2 and "expected a command" in err


@needs_mpi
def test_launcher_only_with_the_mpi_suite(monkeypatch: pytest.MonkeyPatch, run_cli: Any) -> None:
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(REAL_NATIVE_DIR))
    code, _, err = run_cli("bench", "--filter", "pthread.empty", "--launcher", "mpirun", "--dry-run")
    assert code == 2 and "--launcher applies to the mpi suite" in err
    code, out, _ = run_cli("bench", "--suite", "mpi", "--quick", "--filter", "mpi.barrier", "--dry-run",
                           "--launcher", "timeout 60 mpirun -np 3")
    lines = out.splitlines()
    assert code == 0 and lines and all(line.startswith("timeout 60 mpirun -np 3 ") for line in lines)
    assert all("threadlab-bench-mpi --run mpi.barrier" in line for line in lines)


def test_default_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    assert launcher.default(tmp_path / "threadlab-bench-mpi") == ["srun", "--cpu-bind=none"]
    assert launcher.default(tmp_path / "threadlab-bench-mpi", 2) == ["srun", "--cpu-bind=none", "--ntasks=2"]
    monkeypatch.delenv("SLURM_JOB_ID")
    # the build's own launcher, named beside the program
    fake = tmp_path / "mpiexec-fake"
    fake.write_text("#!/bin/sh\necho 'mpirun (Open MPI) 4.1.4'\n")
    fake.chmod(0o755)
    (tmp_path / launcher.MANIFEST).write_text(json.dumps({"mpiexec": str(fake)}))
    words = launcher.default(tmp_path / "threadlab-bench-mpi")
    assert words[:5] == [str(fake), "-np", str(len(os.sched_getaffinity(0))), "--bind-to", "none"]
    assert launcher.default(tmp_path / "threadlab-bench-mpi", 3)[1:3] == ["-np", "3"]
    assert ("--allow-run-as-root" in words) == (os.geteuid() == 0)
    fake.write_text("#!/bin/sh\necho 'HYDRA build details:'\n")
    assert launcher.default(tmp_path / "threadlab-bench-mpi")[3:] == ["-bind-to", "none"]


def test_hosts_probe_errors(tmp_path: Path) -> None:
    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    with pytest.raises(ThreadlabError, match="failed \\(exit status 0\\)"):
        launcher.probe_hosts(["env"], program)
    program.write_text("#!/bin/sh\necho '{\"world\": 1, \"hosts\": []}'\necho '{\"world\": 1, \"hosts\": []}'\n")
    with pytest.raises(ThreadlabError, match="2 separate MPI jobs"):
        launcher.probe_hosts(["env"], program)
    program.write_text("#!/bin/sh\necho 'not json'\n")
    with pytest.raises(ThreadlabError, match="not JSON"):
        launcher.probe_hosts(["env"], program)
    program.write_text("#!/bin/sh\nsleep 30\n")
    with pytest.raises(ThreadlabError, match="did not start prog within 1 s"):
        launcher.probe_hosts(["env"], program, timeout_s=1)
    program.write_text("#!/bin/sh\necho '{\"world\": 2, \"hosts\": [{\"host\": \"a\", \"ranks\": [0, 1]}]}'\n")
    assert launcher.probe_hosts(["env"], program)["launcher"] == ["env"]


def test_hosts_are_described() -> None:
    env = {"mpi": {"world": 5, "library": "Open MPI v4.1.4", "thread_multiple": True, "launcher": ["srun"],
                   "hosts": [{"host": "n1", "ranks": [0, 1, 2], "cpu_model": "X", "online_cpus": 4,
                              "kernel": "Linux 6", "libc": "2.36", "loadavg": "0.1"},
                             {"host": "n2", "ranks": [3, 4], "cpu_model": "X", "online_cpus": 4}]}}
    lines = dict(launcher.describe(env))
    assert lines["MPI"].startswith("5 ranks on 2 host(s), Open MPI v4.1.4") and "launcher srun" in lines["MPI"]
    assert lines["host n1"].startswith("ranks 0-2; X, 4 CPUs") and lines["host n2"].startswith("ranks 3-4")
    assert launcher.describe({}) == []


def test_launched_points_start_with_the_launcher() -> None:
    options = native.PointOptions(quick=True, launcher=("mpirun", "-np", "2"))
    argv = native.point_argv(Path("/x/threadlab-bench-mpi"), "mpi.barrier", "unbound", {"layout": "ranks"}, options, "mpi")
    assert argv[:4] == ["mpirun", "-np", "2", "/x/threadlab-bench-mpi"] and "--quick" in argv
    # other suites ignore it
    assert native.point_argv(Path("/x/p"), "b.c", None, {}, options, "primitives")[0] == "/x/p"
    with pytest.raises(UserError):
        launcher.parse("   ")


@pytest.mark.skipif(not os.access(PROGRAM, os.X_OK) or not os.access(REAL_NATIVE_DIR / "threadlab-crosscheck-mpi", os.X_OK),
                    reason="no mpi suite or no threadlab-crosscheck-mpi")
def test_crosscheck_of_the_pingpong(monkeypatch: pytest.MonkeyPatch, run_cli: Any) -> None:
    """Both sides measured under the same launcher; the ratio is for the
    reader (a loaded machine moves it), not asserted."""
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(REAL_NATIVE_DIR))
    code, out, err = run_cli("crosscheck", "--suite", "mpi", "--rounds", "1", "--json", "--launcher", _launcher(PROGRAM))
    assert code == 0, err
    (result,) = [json.loads(line) for line in out.splitlines()]
    assert result["benchmark"] == "mpi.pingpong" and result["params"]["size"] == "8"
    assert result["suite_median_ns"] > 0 and result["naive_median_ns"] > 0


@needs_mpi
def test_spawned_thread_task_against_a_process_rank(tmp_path: Path) -> None:
    """mpi.spawn.latency: side by side in one run, rank 0 with a thread
    task of libthreadlab-spawn and with a process rank of its host; each
    record says which, and checks that it was so and that the messages
    went between the two."""
    if not os.access(REAL_NATIVE_DIR.parent / "lib" / "libthreadlab-spawn.so", os.R_OK):
        pytest.skip("no libthreadlab-spawn.so (not built)")
    done, db = _sweep(tmp_path, "--suite", "mpi", "--quick", "--filter", "mpi.spawn.latency", "--placement",
                      "unbound,different-cpus", "--timeout", "60", "--launcher", _launcher(PROGRAM))
    records = stored_records(db)
    assert [schema.record_problems(r) for r in records if schema.record_problems(r)] == []
    assert done.returncode == 0, done.stderr
    by = {(r["params"]["partner"], r["placement"]): r for r in records}
    assert set(by) == {(p, pl) for p in ("thread-task", "process-rank") for pl in ("unbound", "different-cpus")}
    for (partner, placement), r in by.items():
        assert r["status"] == "ok", r["reason"]
        checks = {c["name"]: c for c in r["checks"]}
        assert failed_checks(r) == []
        assert {"echoed", "partner"} <= set(checks)
        assert ("placement_partner" in checks) == (placement == "different-cpus")
        assert r["extra"]["spawn_library"].startswith("libthreadlab-spawn")
        assert r["mpi"]["rank"] == 0 and r["mpi"]["world"] == 2
        if partner == "thread-task":
            assert "a thread task of rank 0" in checks["partner"]["detail"]
            assert r["mpi"]["ranks"] == 1 and r["mpi"]["threads_per_rank"] == 2
            assert "partner_rank" not in r["extra"]
        else:
            assert "another process of the host" in checks["partner"]["detail"]
            assert r["mpi"]["ranks"] == 2 and r["extra"]["partner_rank"] == 1
            assert r["extra"]["partner_pid"] != by[("thread-task", placement)]["extra"]["partner_pid"]
