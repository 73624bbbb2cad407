"""The application programs of `threadlab study apps` (native/apps), run
for real: every kernel verifies its result on every platform and
architecture built, a wrong result is caught, the work split covers every
item once for any thread count, what cannot run here says why; and an
end-to-end quick study.  The sanitizer builds' programs run too when
`make test-python` names them (THREADLAB_ASAN_DIR, THREADLAB_TSAN_DIR)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from conftest import REAL_NATIVE_DIR, stored_records, threadlab_run
from threadlab.records import schema
from threadlab.run.progress import JobProgress
from threadlab.study import apps, tables

KERNELS = apps.KERNELS
NCPUS = len(os.sched_getaffinity(0))


def _programs(directory: str | Path | None) -> list[Path]:
    if not directory or not Path(directory).is_dir():
        return []
    return sorted(p for p in Path(directory).glob(apps.APP_PREFIX + "*") if os.access(p, os.X_OK))


PROGRAMS = _programs(REAL_NATIVE_DIR)
needs_build = pytest.mark.skipif(not PROGRAMS, reason=f"no application programs in {REAL_NATIVE_DIR} (run `make`)")
PTHREAD = REAL_NATIVE_DIR / "threadlab-app-pthread"


def run(program: Path, *args: str, timeout: float = 120) -> tuple[int, dict[str, Any] | None, str]:
    """The program with these arguments: its exit status, what its record
    says (apps.run_data; the record asserted valid against the format),
    its stderr."""
    done = subprocess.run([str(program), *args], capture_output=True, text=True, timeout=timeout, check=False)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    data = apps.run_data(schema.parse_record_line(lines[-1])) if lines else None
    return done.returncode, data, done.stderr


def point(program: Path, kernel: str, threads: int, *args: str, size: int | None = None, pin: bool = False,
          priority: str | None = None) -> tuple[int, dict[str, Any] | None, str]:
    """One run of a kernel (the native protocol's --run); --quick's size
    unless one is given."""
    size_args = ["--param", f"size={size}"] if size is not None else ["--param", f"size={QUICK[kernel]}"]
    return run(program, "--run", f"study.apps.{kernel}", "--param", f"threads={threads}", *size_args,
               *(["--placement", "different-cpus"] if pin else []),
               *(["--param", f"priority={priority}"] if priority else []), *args)


def _quick_sizes() -> dict[str, int]:
    if not PROGRAMS:
        return {}
    done = subprocess.run([str(PROGRAMS[0]), "--list"], capture_output=True, text=True, check=True, timeout=60)
    return {entry["kernel"]: entry["quick_size"] for entry in map(json.loads, done.stdout.splitlines())}


QUICK = _quick_sizes()


def _all_program_params() -> list[Any]:
    params = [pytest.param(p, id=p.name) for p in PROGRAMS]
    for kind, var in (("asan", "THREADLAB_ASAN_DIR"), ("tsan", "THREADLAB_TSAN_DIR")):
        params += [pytest.param(p, id=f"{kind}-{p.name}") for p in _programs(os.environ.get(var))]
    return params or [pytest.param(None, marks=pytest.mark.skip(reason="no application programs built"))]


@pytest.mark.parametrize("program", _all_program_params())
def test_every_kernel_verifies_on_every_program(program: Path) -> None:
    env = json.loads(subprocess.run([str(program), "--env"], capture_output=True, text=True, check=True).stdout)
    for kernel in KERNELS:
        for threads in (1, 2, 3):
            code, data, err = point(program, kernel, threads)
            assert code == 0, err
            assert data and data["status"] == "ok" and data["verified"] is True, data
            assert data["kernel"] == kernel and data["arch"] == env["arch"]
            assert data["platform"] == env["platform"] and data["time_s"] > 0 and data["rate"] > 0
            assert data["error"] <= data["error_bound"]
            assert len(data["cpus"]) == threads and data["priority_ok"] is True
    if env["platform"] == "llvmomp":  # really LLVM's runtime, not libgomp
        assert env["runtime"].startswith("LLVM libomp"), env
    if env["platform"] == "gomp":
        assert env["runtime"].startswith("GNU libgomp"), env


@needs_build
@pytest.mark.parametrize("program", [pytest.param(p, id=p.name) for p in PROGRAMS])
def test_a_wrong_result_is_caught(program: Path) -> None:
    """A wrong result is a measured record whose "verified" check failed."""
    for kernel in KERNELS:
        code, data, err = point(program, kernel, 2, "--inject-error")
        assert code == 0, err
        assert data and data["status"] == "ok" and data["verified"] is False
        assert data["verdict"].startswith("wrong result") and "[--inject-error]" in data["verdict"]
        assert f"{kernel}: wrong result" in err
        assert data["error"] > data["error_bound"]


@needs_build
def test_known_results() -> None:
    # MIPS: the sum of w = x = (i mod 2^20) + 1 over 10 items; pi and the integral near their values.
    code, data, _ = point(PTHREAD, "mips", 3, size=40)
    assert code == 0 and data and data["result"] == data["expected"] == 55 and data["error_bound"] == 0
    code, data, _ = point(PTHREAD, "mflops", 3, size=40)
    assert data and data["result"] == data["expected"] == 60.0
    code, data, _ = point(PTHREAD, "pi", 2, size=1000000)
    assert data and abs(data["result"] - 3.141592653589793) < 2e-6
    assert data["expected"] == pytest.approx(3.141592653589793, rel=1e-9)  # the record's 10 digits
    code, data, _ = point(PTHREAD, "trapezoid", 2, size=1000)
    assert data and data["expected"] == pytest.approx(121 / 12, rel=1e-9)
    assert data["error"] == pytest.approx(11 / 12 / 1000**2, rel=1e-6)  # the method's error


@needs_build
@pytest.mark.parametrize("program", [pytest.param(p, id=p.name) for p in PROGRAMS])
def test_the_split_covers_every_item_once_for_any_thread_count(program: Path) -> None:
    """MIPS and MFLOPS check exact checksums: with a size that no thread
    count divides, a lost or doubled item fails verification."""
    for kernel in ("mips", "mflops"):
        for threads in range(1, 10):
            code, data, err = point(program, kernel, threads, size=4 * 1000003)
            assert code == 0 and data and data["verified"] and data["items"] == 1000003, (threads, err)
    # More threads than items: the surplus workers get nothing.
    code, data, err = point(program, "pi", 7, size=3)
    assert code == 0 and data and data["result"] == pytest.approx(4 * (1 - 1 / 3 + 1 / 5)), err


@needs_build
def test_pinning_places_each_worker_on_its_cpu() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    for program in PROGRAMS:
        threads = min(2, NCPUS)
        code, data, err = point(program, "pi", threads, pin=True)
        assert code == 0, err
        if program.name.startswith("threadlab-app-ult"):  # the runtime binds its VPs, not its threads
            assert data and data["status"] == "unsupported" and "cannot pin a worker" in data["reason"]
            continue
        assert data and data["pinned"] and data["placement_ok"] and data["cpus"] == cpus[:threads]
        assert data["cpus_end"] == ",".join(map(str, cpus[:threads]))


@needs_build
def test_what_cannot_run_here_is_unsupported_with_the_reason() -> None:
    code, data, err = point(PTHREAD, "pi", NCPUS + 1, pin=True)
    assert code == 0 and data and data["status"] == "unsupported"
    assert f"pinning {NCPUS + 1} threads to distinct CPUs needs {NCPUS + 1} CPUs" in data["reason"]
    done = subprocess.run([str(PTHREAD), "--probe", "--param", "priority=normal"], capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "ok"


def _as_nobody() -> None:
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


@needs_build
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the program as another user")
@pytest.mark.parametrize("priority", ["fifo:1", "rr:1", "nice:-20"])
def test_a_priority_the_user_may_not_set_is_unsupported(priority: str) -> None:
    """As an unprivileged user (nobody, RLIMIT_RTPRIO 0), the real-time
    policies and a negative nice are refused: the program says unsupported
    and why."""
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:  # where nobody may execute it
        os.chmod(directory, 0o755)
        program = Path(directory) / PTHREAD.name
        program.write_bytes(PTHREAD.read_bytes())
        program.chmod(0o755)
        _check_refused(program, priority)


def _check_refused(program: Path, priority: str) -> None:
    done = subprocess.run([str(program), "--run", "study.apps.pi", "--param", "threads=1", "--param",
                           f"priority={priority}"], capture_output=True, text=True, preexec_fn=_as_nobody,
                          check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    record = schema.parse_record_line(done.stdout)
    assert record["status"] == "unsupported"
    assert "Operation not permitted" in record["reason"] or "Permission denied" in record["reason"]
    assert "CAP_SYS_NICE" in record["reason"]
    done = subprocess.run([str(program), "--probe", "--param", f"priority={priority}"], capture_output=True,
                          text=True, preexec_fn=_as_nobody, check=False, timeout=60)
    assert done.returncode == apps.EXIT_REFUSED and "CAP_SYS_NICE" in json.loads(done.stdout)["reason"]
    # batch and idle need no privilege.
    for allowed in ("batch", "idle"):
        done = subprocess.run([str(program), "--probe", "--param", f"priority={allowed}"], capture_output=True,
                              text=True, preexec_fn=_as_nobody, check=False, timeout=60)
        assert done.returncode == 0, done.stderr


@needs_build
@pytest.mark.parametrize("priority,policy", [("fifo:1", "SCHED_FIFO"), ("rr:1", "SCHED_RR"), ("batch", "SCHED_BATCH"),
                                             ("idle", "SCHED_IDLE"), ("nice:5", "SCHED_OTHER")])
def test_the_workers_run_with_the_priority(priority: str, policy: str) -> None:
    if apps.probe_priority(PTHREAD, priority):
        pytest.skip(f"this user may not set {priority}")
    code, data, err = point(PTHREAD, "pi", 2, priority=priority)
    assert code == 0, err
    assert data and data["policy"] == policy and data["priority_ok"] is True
    if priority.startswith("nice:"):
        assert data["nice"] == 5


@needs_build
def test_usage_errors() -> None:
    for args, words in ((["--run", "study.apps.fft", "--param", "threads=1"], "--run study.apps.fft"),
                        (["--run", "study.apps.pi"], "threads=T is required"),
                        (["--run", "study.apps.mips", "--param", "threads=1", "--param", "size=10"], "multiple of 4"),
                        (["--run", "study.apps.pi", "--param", "threads=1", "--param", "priority=fifo:0"],
                         "--priority fifo:0"),
                        (["--run", "study.apps.pi", "--param", "threads=0"], "threads 0"),
                        (["--run", "study.apps.pi", "--param", "threads=1", "--placement", "same-cpu"],
                         "--placement same-cpu"),
                        ([], "one of --list, --env, --run or --probe is required")):
        code, data, err = run(PTHREAD, *args)
        assert code == 2 and data is None and words in err, (args, err)


@needs_build
@pytest.mark.heavy
def test_quick_study_end_to_end(db_path: Path) -> None:
    """`threadlab study apps --quick`, the whole default design, for real."""
    done = threadlab_run(db_path, "study", "apps", "--quick", "--name", "quick", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    records = stored_records(db_path)
    assert [schema.record_problems(r) for r in records if schema.record_problems(r)] == []
    times = [r for r in records if r["metric"] == "time"]
    assert len(times) == 23 * 4 * NCPUS  # scenarios x kernels x thread counts
    assert {r["benchmark"] for r in times} == {f"study.apps.{k}" for k in KERNELS}
    ok = [r for r in times if r["status"] == "ok"]
    assert ok and all(r["summary"]["n"] == apps.QUICK_RUNS for r in ok)
    assert all(next(c for c in r["checks"] if c["name"] == "verified")["ok"] for r in ok)
    assert [r for r in times if r["status"] == "failed"] == []
    unsupported = [r for r in times if r["status"] == "unsupported"]
    assert all(r["reason"] for r in unsupported)
    for text in ("Scenarios (de Sá et al.'s Table I)", "Speedup of mips", "Speedup of trapezoid", "Time and rate of pi"):
        assert text in done.stdout
    if NCPUS >= 2:
        assert "Effect of priority" in done.stdout
        assert tables.speedups(records)


OMP_ULT = apps.discover_programs(REAL_NATIVE_DIR) if PROGRAMS else None
needs_omp_ult = pytest.mark.skipif(
    OMP_ULT is None or OMP_ULT.path("omp-ult", OMP_ULT.native_arch) is None,
    reason=f"no omp-ult here: {OMP_ULT.reason('omp-ult', OMP_ULT.native_arch) if OMP_ULT else 'nothing built'}")


@needs_omp_ult
def test_omp_ult_runs_the_gomp_program_on_libthreadlab_gomp(db_path: Path) -> None:
    """The gomp program unmodified, its runs with libthreadlab-gomp
    preloaded: every result verified, and every record names the library
    as the runtime that ran (libgomp for gomp)."""
    done = threadlab_run(db_path, "study", "apps", "--quick", "--runs", "2", "--kernels", "pi,mips", "--factors",
                         "platform", "--platform", "gomp,omp-ult", "--threads", "1,2", "--name", "omp-ult", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    times = [r for r in stored_records(db_path) if r["metric"] == "time"]
    assert {r["model"] for r in times} == {"gomp", "omp-ult"} and len(times) == 2 * 2 * 2
    assert all(r["status"] == "ok" and next(c for c in r["checks"] if c["name"] == "verified")["ok"] for r in times)
    library = str(OMP_ULT.preload("omp-ult", OMP_ULT.native_arch)) if OMP_ULT else ""
    for record in times:
        runtime = record["extra"]["runtime"]
        if record["model"] == "omp-ult":
            assert f"({library})" in runtime and "libthreadlab-gomp.so" in library, runtime
            # the library is named for what it is, not as the libgomp it replaces
            assert runtime.startswith("threadlab libthreadlab-gomp (") and "GNU libgomp" not in runtime, runtime
            assert record["extra"]["program"] == "threadlab-app-gomp" and record["extra"]["preload"] == library
            assert next(c for c in record["checks"] if c["name"] == "runtime")["ok"]
        else:
            assert "libgomp" in runtime and "libthreadlab-gomp" not in runtime, runtime
            assert "runtime" not in {c["name"] for c in record["checks"]}


def _a_loaded_library_without_openmp() -> Path | None:
    """libm as this process has it: it loads, and defines no OpenMP entry."""
    maps = Path("/proc/self/maps").read_text().split()
    return next((Path(p) for p in maps if p.startswith("/") and Path(p).name.startswith("libm.so")), None)


@needs_omp_ult
def test_omp_ult_fails_when_the_preload_takes_no_effect(tmp_path: Path) -> None:
    """A manifest whose preload loads but is no OpenMP runtime: the program
    runs on libgomp, verifies, and every run is failed, never measured."""
    harmless = _a_loaded_library_without_openmp()
    if harmless is None:
        pytest.skip("no libm mapped in this process")
    (tmp_path / "threadlab-app-gomp").symlink_to(REAL_NATIVE_DIR / "threadlab-app-gomp")
    (tmp_path / apps.MANIFEST_NAME).write_text(json.dumps({"native_arch": "64", "programs": {"omp-ult-64": {
        "platform": "omp-ult", "arch": "64", "program": "threadlab-app-gomp", "preload": str(harmless),
        "reason": None}}}))
    programs = apps.discover_programs(tmp_path)
    plan = apps.make_plan(programs=programs, kernels=apps.kernel_catalog(programs), kernel_names=["pi"],
                          threads=[2], runs=2, design="platform", levels={"platform": ["omp-ult"]}, quick=True,
                          probe=lambda program, level: None)
    result = apps.run_study(plan, lambda cell, record: None, JobProgress(len(plan.jobs), enabled=False))
    (record,) = [r for r in result.records if r["metric"] == "time"]
    assert record["status"] == "failed" and schema.record_problems(record) == []
    assert "libgomp" in record["reason"] and f"not on the preloaded {harmless.resolve()}" in record["reason"]
    check = next(c for c in record["checks"] if c["name"] == "runtime")
    assert not check["ok"] and check["detail"].startswith("2 of 2 runs did not run on the preloaded")


@needs_build
def test_small_study_and_show(db_path: Path, run_cli: Any) -> None:
    done = threadlab_run(db_path, "study", "apps", "--quick", "--runs", "3", "--kernels", "mips,pi", "--factors",
                         "platform,priority", "--platform", "pthread,gomp", "--priority", "normal,nice-20", "--name",
                         "small", "--seed", "9", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    records = stored_records(db_path)
    assert {(r["model"], r["params"]["priority"]) for r in records} == {("pthread", "normal"), ("gomp", "normal"),
                                                                         ("pthread", "nice-20")}
    code, out, _ = run_cli("--db", str(db_path), "show", "small")
    assert code == 0 and "Speedup of pi" in out and "Study of run 1 (small)" in out
    with sqlite3.connect(db_path) as connection:
        options, environment = connection.execute("SELECT options, environment FROM runs").fetchone()
    assert json.loads(options)["study"] == "apps" and json.loads(options)["seed"] == 9
    assert {"threadlab-app-pthread", "threadlab-app-gomp"} <= set(json.loads(environment)["native"])
