"""The JVM suite: JDK discovery (with fake JDK trees), the machine-limit
checks (with injected limits), the conversion of JMH's JSON (checked-in
real outputs), and small real JMH runs through the launchers when the
suite is built (`make jvm`)."""

from __future__ import annotations

import fcntl
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, REAL_NATIVE_DIR, REPO, stored_records
from threadlab.records import schema
from threadlab.producers import jdk, jmh, limits
from threadlab.producers.limits import MachineLimits

JMH_FIXTURES = FIXTURES / "jmh"
LAUNCHERS = {model: REAL_NATIVE_DIR / f"threadlab-bench-{model}" for model in ("jvm-platform", "jvm-virtual")}
JAR = REPO / "jvm" / "target" / "benchmarks.jar"
try:
    REAL_JDK: jdk.Jdk | None = jdk.find_jdk()
except jdk.NoSuitableJdk:
    REAL_JDK = None
needs_jvm = pytest.mark.skipif(
    not (all(p.exists() for p in LAUNCHERS.values()) and JAR.exists() and REAL_JDK),
    reason="the JVM suite is not built (make jvm; needs a JDK 21+ and Maven)",
)


# ------------------------------------------------------------ JDK discovery


def fake_jdk(home: Path, version: str | None, javac: bool = True, java_version_output: str | None = None) -> Path:
    """A JDK tree: bin/java (a script), bin/javac, and a release file."""
    (home / "bin").mkdir(parents=True)
    output = java_version_output or f'openjdk version "{version}" 2025-01-01'
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{output}' >&2\n")
    java.chmod(0o755)
    if javac:
        (home / "bin" / "javac").write_text("#!/bin/sh\n")
        (home / "bin" / "javac").chmod(0o755)
    if version is not None:
        (home / "release").write_text(f'IMPLEMENTOR="Test"\nJAVA_VERSION="{version}"\n')
    return home


def search(env: dict[str, str] | None = None, **kwargs: Any) -> jdk.Jdk:
    return jdk.find_jdk(env={"PATH": "", **(env or {})}, **kwargs)


def test_discovery_picks_the_newest_suitable_jdk(tmp_path: Path) -> None:
    fake_jdk(tmp_path / "jvm" / "jdk-17", "17.0.15")
    fake_jdk(tmp_path / "jvm" / "jdk-21", "21.0.4")
    fake_jdk(tmp_path / "jvm" / "jre-25", "25.0.1", javac=False)
    globs = [str(tmp_path / "jvm" / "*")]
    assert search(globs=globs).version == "25.0.1"  # to run, a runtime will do
    built_with = search(globs=globs, need_javac=True)  # to build, javac is needed
    assert built_with.version == "21.0.4" and built_with.feature == 21 and built_with.has_javac


def test_discovery_prefers_nothing_older_than_21_even_from_java_home(tmp_path: Path) -> None:
    old = fake_jdk(tmp_path / "old", "17.0.15")
    fake_jdk(tmp_path / "jvm" / "jdk-22", "22.0.2")
    found = search({"JAVA_HOME": str(old)}, globs=[str(tmp_path / "jvm" / "*")])
    assert found.version == "22.0.2"


def test_discovery_with_only_old_jdks_says_what_to_install(tmp_path: Path) -> None:
    fake_jdk(tmp_path / "jvm" / "jdk-17", "17.0.15")
    fake_jdk(tmp_path / "jvm" / "jdk-8", "1.8.0_402")
    with pytest.raises(jdk.NoSuitableJdk) as caught:
        search(globs=[str(tmp_path / "jvm" / "*")])
    message = str(caught.value)
    assert "17.0.15" in message and "1.8.0_402" in message  # what was seen
    assert "JDK 21 or newer" in message and "Temurin" in message and "THREADLAB_JAVA_HOME" in message


def test_discovery_without_any_java(tmp_path: Path) -> None:
    with pytest.raises(jdk.NoSuitableJdk, match=r"seen: none.*install a JDK 21 or newer"):
        search(globs=[str(tmp_path / "nothing" / "*")])


def test_discovery_reads_java_version_without_release_file(tmp_path: Path) -> None:
    fake_jdk(tmp_path / "jvm" / "custom", None, java_version_output='openjdk version "23.0.1" 2024-10-15')
    assert search(globs=[str(tmp_path / "jvm" / "*")]).version == "23.0.1"


def test_discovery_finds_java_on_path(tmp_path: Path) -> None:
    home = fake_jdk(tmp_path / "somewhere" / "jdk", "21.0.1")
    found = jdk.find_jdk(env={"PATH": str(home / "bin")}, globs=[])
    assert found.home == home.resolve()


def test_threadlab_java_home_is_taken_as_given(tmp_path: Path) -> None:
    old = fake_jdk(tmp_path / "old", "17.0.15")
    good = fake_jdk(tmp_path / "good", "21.0.2")
    fake_jdk(tmp_path / "jvm" / "jdk-25", "25")
    globs = [str(tmp_path / "jvm" / "*")]
    assert search({jdk.HOME_ENV: str(good)}, globs=globs).version == "21.0.2"
    with pytest.raises(jdk.NoSuitableJdk, match="is Java 17.0.15; the JVM suite needs 21 or newer"):
        search({jdk.HOME_ENV: str(old)}, globs=globs)
    with pytest.raises(jdk.NoSuitableJdk, match="no bin/java there"):
        search({jdk.HOME_ENV: str(tmp_path / "missing")}, globs=globs)


@pytest.mark.parametrize(("text", "feature"), [("21.0.4", 21), ("1.8.0_402", 8), ("25-ea", 25), ("17", 17), ("x", 0)])
def test_feature_version(text: str, feature: int) -> None:
    assert jdk.feature_version(text) == feature


def launcher(model: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The launcher module itself (no build needed for what runs no JVM)."""
    return subprocess.run(
        [sys.executable, "-m", "threadlab.producers.jmh", "--model", model, *args],
        capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO / "python"), **(env or {})},
    )


def only_record(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, (done.stdout, done.stderr[-2000:])
    return schema.parse_record_line(lines[0])


def test_a_run_without_a_suitable_jdk_is_a_failed_record_saying_what_to_install(tmp_path: Path) -> None:
    old = fake_jdk(tmp_path / "old", "17.0.15")
    done = launcher("jvm-virtual", "--run", "threads.start", "--param", "count=10", env={jdk.HOME_ENV: str(old)})
    record = only_record(done)
    assert done.returncode == 1
    assert record["status"] == "failed" and "needs 21 or newer" in record["reason"] and "Temurin" in record["reason"]
    env = launcher("jvm-virtual", "--env", env={jdk.HOME_ENV: str(old)})
    assert env.returncode == 1 and "install a JDK 21 or newer" in env.stderr


# ------------------------------------------------------------------ limits


PLATFORM = limits.PLATFORM_THREAD
ROOMY = MachineLimits(pid_max=4_194_304, threads_max=1_000_000, tasks_now=200, max_map_count=1_000_000,
                      mem_available_bytes=64 << 30, overcommit_memory=0)


def test_a_count_that_fits_is_kept() -> None:
    scaling = limits.safe_count(100_000, ROOMY, PLATFORM)
    assert (scaling.count, scaling.because, scaling.unsupported, scaling.scaled) == (100_000, None, None, False)


def test_pid_max_scales_platform_threads_but_not_virtual_ones() -> None:
    tight = MachineLimits(**{**ROOMY.as_dict(), "pid_max": 32_768, "tasks_now": 100})
    scaling = limits.safe_count(100_000, tight, PLATFORM)
    # (32768 - 100) * 0.75 - 512 = 23989, rounded down to two digits
    assert scaling.scaled and scaling.count == 23_000
    assert "kernel.pid_max 32,768" in scaling.because and "100,000 threads" in scaling.because
    assert not limits.safe_count(100_000, tight, limits.VIRTUAL_THREAD).scaled


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"max_map_count": 65_530}, "vm.max_map_count 65,530"),
        ({"cgroup_pids_max": 10_000, "cgroup_pids_current": 50}, "cgroup pids.max 10,000"),
        ({"nproc_soft": 20_000, "nproc_enforced": True}, "ulimit -u (RLIMIT_NPROC) 20,000"),
        ({"threads_max": 40_000}, "kernel.threads-max 40,000"),
        ({"mem_available_bytes": 4 << 30}, "4.0 GiB of available memory"),
        ({"mem_available_bytes": 64 << 30, "cgroup_memory_max": 2 << 30, "cgroup_memory_current": 0}, "2.0 GiB"),
    ],
)
def test_each_limit_is_detected_and_named(change: dict[str, Any], named: str) -> None:
    scaling = limits.safe_count(100_000, MachineLimits(**{**ROOMY.as_dict(), **change}), PLATFORM)
    assert scaling.scaled and scaling.count < 100_000 and named in scaling.because


def test_root_is_not_bound_by_rlimit_nproc() -> None:
    as_root = MachineLimits(**{**ROOMY.as_dict(), "nproc_soft": 20_000, "nproc_enforced": False})
    assert not limits.safe_count(100_000, as_root, PLATFORM).scaled


def test_strict_overcommit_counts_the_reserved_stacks() -> None:
    strict = MachineLimits(**{**ROOMY.as_dict(), "mem_available_bytes": 8 << 30, "overcommit_memory": 2})
    scaling = limits.safe_count(100_000, strict, PLATFORM)
    assert scaling.count == 3_600  # 4 GiB / (1 MiB + 128 KiB) = 3,640, two digits


def test_too_little_room_is_unsupported_with_the_reason() -> None:
    tiny = MachineLimits(**{**ROOMY.as_dict(), "pid_max": 1_500, "tasks_now": 300})
    scaling = limits.safe_count(100_000, tiny, PLATFORM)
    assert scaling.unsupported and "not even 1,000" in scaling.unsupported and "kernel.pid_max 1,500" in scaling.unsupported
    assert limits.safe_count(100, tiny, PLATFORM).count == 100  # a small request that fits is kept


def test_unknown_limits_do_not_scale() -> None:
    assert not limits.safe_count(10**6, MachineLimits(), PLATFORM).scaled


def test_the_test_override_is_checked() -> None:
    base = MachineLimits()
    assert limits.apply_override(base, '{"pid_max": 10}').pid_max == 10
    with pytest.raises(ValueError, match="unknown fields"):
        limits.apply_override(base, '{"pids": 10}')
    with pytest.raises(ValueError, match="not JSON"):
        limits.apply_override(base, "{")


def test_the_real_limits_are_read() -> None:
    found = limits.read_limits()
    assert found.pid_max and found.max_map_count and found.mem_available_bytes
    assert "kernel.pid_max" in limits.describe(found)


def test_a_count_that_cannot_fit_is_unsupported_before_any_jvm_starts() -> None:
    done = launcher("jvm-platform", "--run", "threads.sleep_yield", "--param", "count=100000",
                    env={limits.TEST_OVERRIDE_ENV: json.dumps({"pid_max": 1200, "tasks_now": 100})})
    record = only_record(done)
    assert done.returncode == 0 and record["status"] == "unsupported"
    assert "100,000 threads alive at once do not fit" in record["reason"] and "kernel.pid_max 1,200" in record["reason"]


# -------------------------------------------------------------- conversion


def load_fixture(name: str) -> dict[str, Any]:
    results = json.loads((JMH_FIXTURES / name).read_text())
    assert len(results) == 1
    return results[0]


def test_conversion_keeps_every_iteration_of_every_fork_in_order() -> None:
    result = load_fixture("start-platform-2forks.json")
    record = jmh.convert_jmh_result(result, jmh.BY_NAME["threads.start"], "jvm-platform", {"count": "1000"})
    schema.validate_record(record)
    raw = [v for fork in result["primaryMetric"]["rawData"] for v in fork]
    assert record["samples"] == raw and len(raw) == 6
    assert record["unit"] == "s" and record["iterations"] == 1 and record["warmup"] == 1
    assert record["stop"] == {"rule": "fixed", "target": None, "reason": "fixed", "min_timings": 6,
                              "max_timings": 6, "elapsed_s": None}
    assert record["params"] == {"count": "1000"} and record["model"] == "jvm-platform"
    assert record["extra"]["forks"] == 2 and record["extra"]["jmh_version"] == "1.37"
    assert record["extra"]["jdk_version"] and "OpenJDK" in record["extra"]["jvm"]
    assert record["summary"]["mean"] == pytest.approx(result["primaryMetric"]["score"])


def test_conversion_of_a_per_action_benchmark_divides_by_the_actions() -> None:
    result = load_fixture("park-pingpong-virtual.json")
    record = jmh.convert_jmh_result(result, jmh.BY_NAME["threads.park_pingpong"], "jvm-virtual", {})
    schema.validate_record(record)
    handoffs = int(result["params"]["handoffs"])
    assert record["iterations"] == handoffs and record["unit"] == "ns"
    assert record["samples"] == pytest.approx([v / handoffs for v in result["primaryMetric"]["rawData"][0]])
    assert [c["name"] for c in record["checks"]] == ["handoffs"]


def test_conversion_scales_time_units() -> None:
    result = load_fixture("start-platform-2forks.json")
    result["primaryMetric"]["scoreUnit"] = "ms/op"
    result["primaryMetric"]["rawData"] = [[1500.0, 2500.0]]
    record = jmh.convert_jmh_result(result, jmh.BY_NAME["threads.start"], "jvm-platform", {"count": "1000"})
    assert record["samples"] == [1.5, 2.5]


def test_conversion_refuses_other_modes() -> None:
    result = load_fixture("start-platform-2forks.json")
    result["mode"] = "thrpt"
    result["primaryMetric"]["scoreUnit"] = "ops/s"
    with pytest.raises(ValueError, match="single-shot"):
        jmh.convert_jmh_result(result, jmh.BY_NAME["threads.start"], "jvm-platform", {"count": "1000"})


def test_capacity_lines_give_the_median_kernel_memory_per_thread() -> None:
    output = ["sample 1500.0 1000000 500000 0 16384000", "# not a sample", "sample 9 9 9",
              "sample 1600.0 1100000 500000 0 18432000", "sample 1700.0 1200000 500000 0 20480000"]
    samples, extra = jmh.capacity_samples(output, 1000)
    assert samples == [1500.0, 1600.0, 1700.0]
    assert extra == {"rss_delta_per_thread": 1100.0, "heap_delta_per_thread": 500.0,
                     "kernel_memory_per_thread": 18432.0}


def test_capacity_without_meminfo_leaves_kernel_memory_out() -> None:
    """One repetition that could not read /proc/meminfo ("-"): no median of the others, and never a 0."""
    samples, extra = jmh.capacity_samples(["sample 1500.0 1000000 500000 0 16384000",
                                           "sample 1600.0 1100000 500000 0 -"], 1000)
    assert len(samples) == 2 and "kernel_memory_per_thread" not in extra


OOM_OUTPUT = [
    "# Benchmark: threadlab.jvm.SleepYield.run",
    "<failure>",
    "",
    "java.lang.IllegalStateException: threadlab: could not start thread 1414 of 5000: "
    "java.lang.OutOfMemoryError: unable to create native thread: possibly out of memory or process/resource limits reached",
    "\tat threadlab.jvm.Models.startFailure(Models.java:73)",
    "Caused by: java.lang.OutOfMemoryError: unable to create native thread",
]


def test_failure_reason_of_a_thread_that_could_not_start(tmp_path: Path) -> None:
    status, reason = jmh.failure_reason(OOM_OUTPUT, tmp_path, "kernel.pid_max 32,768")
    assert status == "failed"
    assert reason.startswith("JVM: could not start thread 1414 of 5000: java.lang.OutOfMemoryError: unable to create native thread")
    assert reason.endswith("(machine limits: kernel.pid_max 32,768)")


def test_failure_reason_of_an_unsupported_construct(tmp_path: Path) -> None:
    output = ["java.lang.UnsupportedOperationException: threadlab: unsupported: pinned=yes needs the Foreign Function API"]
    assert jmh.failure_reason(output, tmp_path, "") == ("unsupported", "pinned=yes needs the Foreign Function API")


def test_failure_reason_of_a_crash_names_the_report(tmp_path: Path) -> None:
    (tmp_path / "hs_err_pid42.log").write_text(
        "#\n# There is insufficient memory for the Java Runtime Environment to continue.\n"
        "# Native memory allocation (mmap) failed to map 16384 bytes for committing reserved memory.\n"
        "# An error report file with more information is saved as:\n#\n"
    )
    output = ["<forked VM failed with exit code 1>", "<stdout last='20 lines'>", "</stdout>"]
    status, reason = jmh.failure_reason(output, tmp_path, "")
    assert status == "failed" and "the JVM crashed (exit code 1)" in reason
    assert "insufficient memory" in reason and "mmap) failed to map 16384 bytes" in reason
    assert "hs_err_pid42.log" in reason


def test_failure_reason_when_nothing_is_recognised(tmp_path: Path) -> None:
    assert jmh.failure_reason(["", "something odd", ""], tmp_path, "") == ("failed", "JMH produced no result: something odd")


# ------------------------------------------------------------- protocol


def test_list_entries_follow_the_shared_names() -> None:
    done = launcher("jvm-virtual", "--list")
    entries = [json.loads(line) for line in done.stdout.splitlines()]
    names = [e["benchmark"] for e in entries]
    assert names[:4] == ["threads.instantiate", "threads.start", "threads.start_join", "threads.sleep_yield"]
    assert {"threads.park_pingpong", "threads.channel_pingpong", "threads.lock_contended", "threads.capacity",
            "threads.create_join"} <= set(names)
    assert all(e["model"] == "jvm-virtual" and e["suite"] == "jvm" and e["placements"] == ["unbound"] for e in entries)
    defaults = {e["benchmark"]: {p["name"]: p["values"][0] for p in e["params"]} for e in entries}
    assert defaults["threads.start"] == {"count": "100000"} and defaults["threads.start_join"] == {"count": "10000"}
    assert defaults["threads.sleep_yield"] == {"count": "100000", "sleep_ms": "100", "joined": "no"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "threads.nope"], "no such benchmark"),
        (["--run", "threads.start", "--param", "count=0"], "expected an integer from 1"),
        (["--run", "threads.start", "--param", "size=1"], "has no parameter 'size'"),
        (["--run", "threads.start", "--target", "0.05"], "fixed number of iterations"),
        (["--run", "threads.start", "--iterations", "0"], "--iterations 0"),
    ],
)
def test_usage_errors_exit_2_without_a_record(args: list[str], message: str) -> None:
    done = launcher("jvm-platform", *args)
    assert done.returncode == 2 and done.stdout == "" and message in done.stderr


def test_a_placement_other_than_unbound_is_unsupported() -> None:
    done = launcher("jvm-platform", "--run", "threads.start", "--placement", "same-cpu", "--param", "count=10")
    record = only_record(done)
    assert done.returncode == 0 and record["status"] == "unsupported" and record["placement"] == "same-cpu"


# ------------------------------------------------- real JMH (make jvm)


def run_launcher(model: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120,
                 prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, str(LAUNCHERS[model]), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@needs_jvm
def test_real_env_names_the_jdk_and_jmh() -> None:
    done = run_launcher("jvm-platform", "--env")
    env = json.loads(done.stdout)
    assert env["java"]["version"] == REAL_JDK.version and env["jmh_version"] == "1.37"
    assert env["defaults"]["normal"] == {"warmup": 1, "iterations": 30, "forks": 1}


@needs_jvm
@pytest.mark.parametrize("model", ["jvm-platform", "jvm-virtual"])
def test_real_jmh_run_converts_into_a_valid_record(model: str) -> None:
    done = run_launcher(model, "--run", "threads.start", "--param", "count=1000", "--warmup", "1", "--iterations", "3")
    record = only_record(done)
    assert done.returncode == 0 and record["status"] == "ok", done.stderr[-3000:]
    assert len(record["samples"]) == 3 and all(0 < s < 60 for s in record["samples"])
    assert record["extra"]["jdk_version"] == REAL_JDK.version and record["extra"]["jmh_benchmark"] == "threadlab.jvm.Start.run"
    assert "-XX:ErrorFile=" in record["extra"]["jvm_args"]
    assert "Run complete" in done.stderr  # JMH's own output goes to stderr, never into the records


@needs_jvm
def test_real_run_does_not_use_the_jmh_lock_in_the_default_tmpdir(tmp_path: Path) -> None:
    # JMH's lock is java.io.tmpdir's jmh.lock (/tmp/jmh.lock by default),
    # held here as another JMH or another user would hold it. The default
    # temporary directory is made this test's own (JDK_JAVA_OPTIONS comes
    # before the command line's flags, which win): a run that kept it stops
    # with "Unable to acquire the JMH lock"; threadlab's runs keep their
    # temporary files in their private scratch directory.
    shared = tmp_path / "shared-tmp"
    shared.mkdir(mode=0o700)
    fd = os.open(shared / "jmh.lock", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = run_launcher("jvm-platform", "--run", "threads.start", "--param", "count=1000", "--warmup", "0",
                            "--iterations", "2", env={"JDK_JAVA_OPTIONS": f"-Djava.io.tmpdir={shared}"})
    finally:
        os.close(fd)
    record = only_record(done)
    assert done.returncode == 0 and record["status"] == "ok", done.stderr[-3000:]
    assert "-Djava.io.tmpdir=" in record["extra"]["jvm_args"]
    assert "Picked up JDK_JAVA_OPTIONS" in done.stderr  # the default really was the held lock's directory


@needs_jvm
# The kernel memory is the whole machine's (/proc/meminfo): beside another
# test that starts or ends thousands of threads, a platform thread came out
# at -10,000 bytes.  That check runs with nothing beside it.
@pytest.mark.parametrize("model", [pytest.param("jvm-platform", marks=pytest.mark.alone), "jvm-virtual"])
def test_real_capacity_reports_kernel_memory_per_thread(model: str) -> None:
    done = run_launcher(model, "--run", "threads.capacity", "--quick", "--iterations", "2")
    record = only_record(done)
    assert done.returncode == 0 and record["status"] == "ok", done.stderr[-3000:]
    kernel = record["extra"]["kernel_memory_per_thread"]
    assert isinstance(kernel, (int, float)) and math.isfinite(kernel)
    if model == "jvm-platform":  # its kernel stack alone is 16 KiB on x86-64; other processes are noise
        assert kernel >= 8192
    assert "task_struct" in record["extra"]["not_counted"]


@needs_jvm
def test_real_scaled_count_is_in_the_record() -> None:
    done = run_launcher(
        "jvm-platform", "--run", "threads.sleep_yield", "--param", "count=5000", "--param", "sleep_ms=5",
        "--warmup", "0", "--iterations", "2",
        env={limits.TEST_OVERRIDE_ENV: json.dumps({"pid_max": 4000, "tasks_now": 100})},
    )
    record = only_record(done)
    assert record["status"] == "ok", done.stderr[-3000:]
    assert record["params"]["count"] == "2400"  # (4000 - 100) * 0.75 - 512 = 2413
    assert record["extra"]["scaled_from"] == 5000 and "kernel.pid_max 4,000" in record["extra"]["scaled_because"]


@needs_jvm
@pytest.mark.skipif(not shutil.which("prlimit"), reason="prlimit (util-linux) is not installed")
@pytest.mark.parametrize(
    ("benchmark", "params"),
    [("threads.sleep_yield", ("--param", "count=5000", "--param", "sleep_ms=3000")),
     # Its threads wait for a latch opened only after all have started: they
     # must be interrupted, not just joined, or the point hangs.
     ("threads.capacity", ("--param", "count=5000"))],
)
@pytest.mark.heavy
def test_real_thread_creation_failure_is_a_failed_record_with_the_reason(benchmark: str, params: tuple[str, ...]) -> None:
    """A 2 GiB address space (ulimit -v) holds only about a thousand 1 MiB
    thread stacks: the JVM fails to create a native thread half-way.  With
    the address space full, any malloc may fail too and crash the JVM: for
    capacity, whose JIT compiles while its threads start, in about half of
    the runs (3 of 6 here).  One C1 compiler thread makes that rare for it
    (none in 38 runs), and a crash left anyway is skipped, not passed.
    sleep_yield keeps the JVM's own JIT, which never crashed it (20 of 20; one
    C1 thread made it crash once in a CI run)."""
    jvm_args = ("-XX:+UseSerialGC -Xmx128m -XX:CompressedClassSpaceSize=64m -XX:ReservedCodeCacheSize=64m "
                "-XX:MaxMetaspaceSize=128m")
    if benchmark == "threads.capacity":
        jvm_args += " -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1"
    done = run_launcher(
        "jvm-platform", "--run", benchmark, *params, "--warmup", "0", "--iterations", "1",
        env={"MALLOC_ARENA_MAX": "2", jmh.JVM_ARGS_ENV: jvm_args},
        prefix=("prlimit", f"--as={2 << 30}"),
    )
    record = only_record(done)
    assert done.returncode == 1 and record["status"] == "failed"
    if benchmark == "threads.capacity" and "Native memory allocation" in record["reason"]:
        pytest.skip(f"the JVM crashed before the failure path was reached: {record['reason']}")
    assert "could not start thread" in record["reason"] and "unable to create native thread" in record["reason"]
    assert "ulimit -v 2.0 GiB" in record["reason"]


@needs_jvm
def test_real_lock_and_pingpong_points_verify_themselves() -> None:
    done = run_launcher("jvm-virtual", "--run", "threads.lock_contended", "--param", "lock=synchronized",
                        "--param", "threads=4", "--param", "pinned=yes", "--quick", "--iterations", "2")
    record = only_record(done)
    assert record["status"] == "ok", done.stderr[-3000:]
    assert record["iterations"] == 40000 and record["checks"][0]["name"] == "counter"
    assert "native frame" in record["extra"]["pinning"]


@needs_jvm
@pytest.mark.heavy
def test_real_bench_suite_jvm_stores_both_models(run_cli: Any, monkeypatch: pytest.MonkeyPatch, db_path: Path) -> None:
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(REAL_NATIVE_DIR))
    code, out, err = run_cli("bench", "--suite", "jvm", "--quick", "--filter", "threads.instantiate", "--iterations", "2")
    assert code == 0, err
    records = stored_records(db_path)
    assert sorted(r["model"] for r in records) == ["jvm-platform", "jvm-virtual"]
    assert all(r["status"] == "ok" and r["params"] == {"count": "10000"} for r in records)
    assert "threads.instantiate [jvm-platform]" in out and "threads.instantiate [jvm-virtual]" in out
