"""The JVM suite's launcher: speaks the native protocol
(docs/native-protocol.md) for one thread model of the JVM, runs JMH for one
data point, and converts JMH's JSON into threadlab records.

    python -m threadlab.producers.jmh --model jvm-platform --list
    python -m threadlab.producers.jmh --model jvm-virtual --env
    python -m threadlab.producers.jmh --model jvm-virtual --run threads.start --param count=100000
        [--placement unbound] [--quick] [--warmup N] [--iterations N] [--forks N]

`make jvm` writes build/bin/threadlab-bench-jvm-platform and
threadlab-bench-jvm-virtual, two one-line scripts running this module, so
`threadlab bench --suite jvm` finds, runs, times out and validates them
like the C programs.  Exit status: 0 records written (ok or unsupported),
1 a failed record written, 2 usage error.  JMH's own output goes to
standard error; standard output carries records only.

Method (the seed's by default): JMH SingleShotTime, one timed invocation
per iteration, 1 warm-up iteration and 30 measured ones in 1 fork; every
measured iteration becomes one sample (rawData, in order), so the
statistics module applies unchanged.  Batch benchmarks (the seed's four)
report the time of the whole batch in seconds; per-action benchmarks
(create_join, ping-pongs, lock) run a fixed number of actions per
invocation and report the time per action in nanoseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from threadlab import vocabulary
from threadlab.native import process
from threadlab.native.discovery import repository_root
from threadlab.producers import jdk as jdk_module
from threadlab.producers import limits as limits_module
from threadlab.producers.limits import MachineLimits, ThreadCost
from threadlab.records.record import new_record

SUITE = "jvm"
MODELS: dict[str, str] = {"jvm-platform": "platform", "jvm-virtual": "virtual"}
COSTS: dict[str, ThreadCost] = {"jvm-platform": limits_module.PLATFORM_THREAD, "jvm-virtual": limits_module.VIRTUAL_THREAD}
JAR_ENV = "THREADLAB_JMH_JAR"
JVM_ARGS_ENV = "THREADLAB_JVM_ARGS"  # extra flags for the benchmark JVMs (e.g. -Xmx4g)
JMH_PACKAGE = "threadlab.jvm"
# The seed's method: one warm-up iteration, 30 measured, (implicitly) one fork.
DEFAULTS: dict[bool, dict[str, int]] = {
    False: {"warmup": 1, "iterations": 30, "forks": 1},
    True: {"warmup": 1, "iterations": 5, "forks": 1},
}
# Capacity is a memory figure, stable from one repetition to the next.
CAPACITY_MAX_REPETITIONS = 5
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A bad command line: exit status 2, message on stderr, no record."""


# ------------------------------------------------------------------ catalog


@dataclass(frozen=True)
class Param:
    name: str
    help: str
    values: tuple[str, ...]
    quick_values: tuple[str, ...]
    accepted: Callable[[str], bool]
    expected: str  # what is accepted, in words

    def as_list_entry(self) -> dict[str, Any]:
        return {"name": self.name, "help": self.help, "values": list(self.values), "quick_values": list(self.quick_values)}


def _positive_int(limit: int) -> Callable[[str], bool]:
    return lambda text: text.isdigit() and 1 <= int(text) <= limit


def _one_of(*choices: str) -> Callable[[str], bool]:
    return lambda text: text in choices


def _count(default: str, quick: str, help_text: str) -> Param:
    return Param("count", help_text, (default,), (quick,), _positive_int(10_000_000), "an integer from 1 to 10000000")


@dataclass(frozen=True)
class JvmBenchmark:
    name: str
    target: str  # JMH class (benchmark method run) or main class (capacity)
    summary: str
    quantity: str
    unit: str  # the record's unit
    params: tuple[Param, ...] = ()
    # JMH parameters threadlab does not vary: (normal, quick) values.
    fixed: dict[str, tuple[str, str]] = field(default_factory=dict)
    per_action: str | None = None  # the JMH param whose value divides the invocation time
    threads: int = 1  # thread slots, for --list (all placements are unbound)
    alive_at_once: Callable[[dict[str, str]], int] = lambda params: 0  # threads of the model alive together
    metric: str = "time"
    kind: str = "jmh"  # or "capacity"
    checks: tuple[tuple[str, str], ...] = ()  # (name, detail) the benchmark enforces by failing

    @property
    def jmh_time_unit(self) -> str:
        return {"s": "s", "ns": "ns"}[self.unit]

    def list_entry(self, model: str) -> dict[str, Any]:
        return {
            "benchmark": self.name,
            "model": model,
            "suite": SUITE,
            "summary": self.summary,
            "quantity": self.quantity,
            "unit": self.unit,
            "threads": self.threads,
            "placements": ["unbound"],
            "default_placements": ["unbound"],
            "params": [p.as_list_entry() for p in self.params],
        }


def _count_of(params: dict[str, str]) -> int:
    return int(params["count"])


HANDOFF_CHECK = ("handoffs", "every handoff carried the next sequence number and every one arrived (the benchmark fails otherwise)")

BENCHMARKS: tuple[JvmBenchmark, ...] = (
    JvmBenchmark(
        "threads.instantiate", "Instantiate",
        "create COUNT thread objects without starting them, each consumed by a JMH Blackhole (seed 003, Table 1)",
        "time to create `count` unstarted thread objects", "s",
        params=(_count("100000", "10000", "threads created per sample"),),
    ),
    JvmBenchmark(
        "threads.start", "Start",
        "create and start COUNT threads that end at once; joining them is clean-up outside the measurement (seed 003, Table 2)",
        "time to create and start `count` threads", "s",
        params=(_count("100000", "10000", "threads started per sample"),),
    ),
    JvmBenchmark(
        "threads.start_join", "StartJoin",
        "start COUNT threads created beforehand, then join each (seed 003, Table 3)",
        "time to start and join `count` threads", "s",
        params=(_count("10000", "1000", "threads started and joined per sample"),),
    ),
    JvmBenchmark(
        "threads.sleep_yield", "SleepYield",
        "start COUNT threads (created beforehand) that each sleep SLEEP_MS, yield, sleep SLEEP_MS; "
        "joined=no: the joins are clean-up outside the measurement (seed 003, Table 4); "
        "joined=yes: the measurement ends with the last join",
        "time to start `count` sleeping threads (joined=yes: and join them all)", "s",
        params=(
            _count("100000", "10000", "threads per sample (all alive at once; scaled down to the machine's limits)"),
            Param("sleep_ms", "each sleep, in milliseconds", ("100",), ("100",), _positive_int(60_000), "an integer from 1 to 60000"),
            Param("joined", "whether the joins are measured (no: the protocol of de Souto's study)", ("no", "yes"), ("no",), _one_of("no", "yes"), "no or yes"),
        ),
        alive_at_once=_count_of,
    ),
    JvmBenchmark(
        "threads.create_join", "CreateJoin",
        "create, start and join one thread that ends at once, OPS times per sample",
        "time per create + start + join of one thread", "ns",
        fixed={"ops": ("2000", "500")}, per_action="ops",
    ),
    JvmBenchmark(
        "threads.park_pingpong", "ParkPingPong",
        "two threads of the model hand a turn back and forth with LockSupport.park/unpark",
        "time per one-way handoff (park/unpark)", "ns",
        fixed={"handoffs": ("20000", "4000")}, per_action="handoffs", threads=2, checks=(HANDOFF_CHECK,),
    ),
    JvmBenchmark(
        "threads.channel_pingpong", "ChannelPingPong",
        "two threads of the model pass a number back and forth through two SynchronousQueues",
        "time per one-way handoff (SynchronousQueue)", "ns",
        fixed={"handoffs": ("20000", "4000")}, per_action="handoffs", threads=2, checks=(HANDOFF_CHECK,),
    ),
    JvmBenchmark(
        "threads.lock_contended", "LockContended",
        "THREADS threads increment a counter under one lock (ReentrantLock or synchronized); "
        "pinned=yes runs each thread's loop inside a native frame, which pins a blocked virtual thread on any JDK",
        "time per lock + unlock under contention", "ns",
        params=(
            Param("lock", "the lock", ("reentrant", "synchronized"), ("reentrant", "synchronized"),
                  _one_of("reentrant", "synchronized"), "reentrant or synchronized"),
            Param("threads", "contending threads", ("2", "8"), ("2",), _positive_int(1024), "an integer from 1 to 1024"),
            Param("pinned", "whether each thread's loop runs inside a native frame (pins a blocked virtual thread)",
                  ("no", "yes"), ("no",), _one_of("no", "yes"), "no or yes"),
        ),
        fixed={"ops": ("200000", "40000")}, per_action="ops", threads=2,
        checks=(("counter", "the counter equals the number of increments (the benchmark fails otherwise)"),),
    ),
    JvmBenchmark(
        "threads.capacity", "Capacity",
        "memory per suspended thread: start COUNT threads that block, compare heap (after a full GC) and "
        "resident memory outside the heap with before",
        "bytes per suspended thread (heap + resident outside the heap)", "bytes",
        params=(Param("count", "threads alive at once (scaled down to the machine's limits)", ("10000", "100000"),
                      ("1000",), _positive_int(10_000_000), "an integer from 1 to 10000000"),),
        alive_at_once=_count_of, metric="memory_per_thread", kind="capacity",
    ),
)
BY_NAME: dict[str, JvmBenchmark] = {b.name: b for b in BENCHMARKS}


# --------------------------------------------------------------- the jar


def jar_path() -> Path:
    override = os.environ.get(JAR_ENV)
    return Path(override) if override else repository_root() / "jvm" / "target" / "benchmarks.jar"


def jmh_version(jar: Path) -> str | None:
    try:
        with zipfile.ZipFile(jar) as archive:
            text = archive.read("META-INF/maven/org.openjdk.jmh/jmh-core/pom.properties").decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    match = re.search(r"^version=(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else None


def base_jvm_args(jdk: jdk_module.Jdk, scratch: Path) -> list[str]:
    """Flags of the harness JVM; JMH passes them on to its forks."""
    args = [
        f"-XX:ErrorFile={scratch}/hs_err_pid%p.log",  # a crash report where we find it, not in the cwd
        f"-XX:ReplayDataFile={scratch}/replay_pid%p.log",  # a JIT compiler crash's replay data: not in the cwd either
        "-XX:-UsePerfData",  # no hsperfdata file: less I/O, nothing left in /tmp
        # JMH's lock file is java.io.tmpdir's jmh.lock, which it creates and
        # makes writable by all (File.setWritable follows a symbolic link
        # another user left there): in the private scratch directory, not
        # /tmp, where it also failed every run that met another one's lock
        f"-Djava.io.tmpdir={scratch}",
    ]
    if jdk.feature >= 22:
        args.append("--enable-native-access=ALL-UNNAMED")  # NativeFrame's qsort upcall, without a warning
    return args + shlex.split(os.environ.get(JVM_ARGS_ENV, ""))


# ------------------------------------------------------------- the records


def record_base(bench: JvmBenchmark, model: str, params: dict[str, str]) -> dict[str, Any]:
    return new_record(bench.name, model, metric=bench.metric, params=params, placement="unbound", cpus=[None],
                      unit=bench.unit, quantity=bench.quantity)


def not_measured(bench: JvmBenchmark, model: str, params: dict[str, str], status: str, reason: str,
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    record = record_base(bench, model, params)
    record.update(status=status, reason=reason, extra=_clean_extra(extra or {}))
    return record


def _clean_extra(extra: dict[str, Any]) -> dict[str, Any]:
    clean: dict[str, Any] = {}
    for key, value in extra.items():
        if isinstance(value, bool):
            value = "yes" if value else "no"
        if value is None or isinstance(value, (int, float, str)):
            clean[key] = value
        else:
            clean[key] = json.dumps(value, separators=(",", ":"))
    return clean


def measured(bench: JvmBenchmark, model: str, params: dict[str, str], samples: list[float], *, iterations: int,
             warmup: int, elapsed_s: float | None, clock: str | None, extra: dict[str, Any]) -> dict[str, Any]:
    from threadlab.analysis import stats  # numpy: only a measured point pays for it

    record = record_base(bench, model, params)
    summary = stats.summarize(samples).as_dict()
    record.update(
        clock=clock,
        iterations=iterations,
        actions_per_iteration=1,
        warmup=warmup,
        samples=samples,
        summary=summary,
        stop=vocabulary.fixed_stop(len(samples), elapsed_s),
        checks=[{"name": name, "ok": True, "value": None, "detail": detail} for name, detail in bench.checks],
        extra=_clean_extra(extra),
    )
    return record


_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def convert_jmh_result(result: dict[str, Any], bench: JvmBenchmark, model: str, params: dict[str, str],
                       elapsed_s: float | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One entry of JMH's JSON (-rf json) as a threadlab record: every
    measured iteration of every fork (primaryMetric.rawData, in order) is a
    sample, in the record's unit, divided by the actions of one invocation
    for per-action benchmarks."""
    metric = result["primaryMetric"]
    unit_text = str(metric["scoreUnit"])
    jmh_unit = unit_text.split("/")[0]
    if result.get("mode") != "ss" or not unit_text.endswith("/op") or jmh_unit not in _UNITS:
        raise ValueError(f"JMH result in mode {result.get('mode')!r}, unit {unit_text!r}: expected single-shot, s|ms|us|ns/op")
    scale = _UNITS[jmh_unit] / _UNITS[bench.unit]
    actions = int(result["params"][bench.per_action]) if bench.per_action else 1
    raw = [float(value) for fork in metric["rawData"] for value in fork]
    if not raw:
        raise ValueError("JMH result without raw data")
    samples = [value * scale / actions for value in raw]
    info = {
        "jvm": f"{result.get('vmName', '?')} {result.get('vmVersion', '?')}",
        "jdk_version": result.get("jdkVersion"),
        "jmh_version": result.get("jmhVersion"),
        "jmh_benchmark": result.get("benchmark"),
        "jmh_mode": "SingleShotTime",
        "forks": result.get("forks"),
        "measurement_iterations": result.get("measurementIterations"),
        "jvm_args": " ".join(result.get("jvmArgs", [])),
        "jmh_score": metric.get("score"),
        "jmh_score_error": metric.get("scoreError") if isinstance(metric.get("scoreError"), (int, float)) else None,
        "jmh_unit": unit_text,
    }
    return measured(
        bench, model, params, samples, iterations=actions, warmup=int(result.get("warmupIterations") or 0),
        elapsed_s=elapsed_s, clock="monotonic (System.nanoTime)", extra={**info, **(extra or {})},
    )


# ------------------------------------------------------------ failures


_OUR_LINE = re.compile(r"threadlab: (.*)")
_ERROR_LINE = re.compile(r"(OutOfMemoryError|unable to create native thread|Exception|Error)[:\s]")
_FORK_FAILED = re.compile(r"<forked VM failed with exit code (\d+)>")


def failure_reason(output: Sequence[str], scratch: Path | None, limits_text: str) -> tuple[str, str]:
    """(status, reason) of a JMH run that produced no result, from its
    output and any crash report: the first line of our own benchmarks'
    messages, else the first error line, else a crash report's headline."""
    ours = [m.group(1).strip() for line in output if (m := _OUR_LINE.search(line))]
    for text in ours:
        if text.startswith("unsupported: "):
            return "unsupported", text[len("unsupported: "):]
    native_thread = any("unable to create native thread" in line for line in output)
    hint = f" (machine limits: {limits_text})" if native_thread and limits_text else ""
    if ours:
        return "failed", f"JVM: {ours[0]}{hint}"
    for line in output:
        stripped = line.strip()
        if _ERROR_LINE.search(stripped) and not stripped.startswith("at "):
            return "failed", f"JVM: {stripped}{hint}"
    crash = crash_summary(scratch) if scratch else None
    fork = next((m.group(1) for line in output if (m := _FORK_FAILED.search(line))), None)
    if crash:
        return "failed", f"the JVM crashed{f' (exit code {fork})' if fork else ''}: {crash}"
    if fork:
        return "failed", f"the forked JVM exited with code {fork}"
    last = next((line.strip() for line in reversed(output) if line.strip()), "no output")
    return "failed", f"JMH produced no result: {last}"


def crash_summary(scratch: Path) -> str | None:
    """The headline of a HotSpot crash report (hs_err_pid*.log) in scratch,
    and where the report is kept."""
    reports = sorted(scratch.glob("hs_err_pid*.log"))
    if not reports:
        return None
    lines = []
    for line in reports[0].read_text(errors="replace").splitlines()[:40]:
        text = line.lstrip("#").strip()
        if not text or text.startswith(("JRE version", "Java VM", "Problematic frame", "Core dump", "An error report",
                                        "If you would like", "http", "The crash happened", "See problematic")):
            continue
        lines.append(text)
        if len(lines) == 3:
            break
    return "; ".join(lines) + f" (report kept: {reports[0]})"


# --------------------------------------------------------------- running


@dataclass
class RunSettings:
    quick: bool
    warmup: int
    iterations: int
    forks: int


def _stream(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """Runs a JVM; its output (both streams) is copied to our stderr line by
    line, so stdout stays records only; returns (exit status, lines).  The
    JVM dies with this launcher (process.start) and stays in its process
    group: the point's timeout kills it with the JVMs JMH forks."""
    lines: list[str] = []
    with process.start(argv, timeout_s=None, own_group=False, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, errors="replace", env=env) as child:
        assert child.stdout
        for line in child.stdout:
            sys.stderr.write(line)
            lines.append(line.rstrip("\n"))
            if len(lines) > 20000:
                del lines[:10000]
    sys.stderr.flush()
    return child.returncode, lines


def run_jmh(bench: JvmBenchmark, model: str, params: dict[str, str], settings: RunSettings,
            jdk: jdk_module.Jdk, jar: Path, limits: MachineLimits, extra: dict[str, Any]) -> dict[str, Any]:
    jmh_params = {"model": MODELS[model], **params,
                  **{name: values[1 if settings.quick else 0] for name, values in bench.fixed.items()}}
    with tempfile.TemporaryDirectory(prefix="threadlab-jmh-") as scratch_name:
        scratch = Path(scratch_name)
        result_file = scratch / "result.json"
        argv = [str(jdk.java), *base_jvm_args(jdk, scratch), "-jar", str(jar),
                f"^{re.escape(JMH_PACKAGE)}\\.{bench.target}\\.run$",
                "-f", str(settings.forks), "-wi", str(settings.warmup), "-i", str(settings.iterations),
                "-bm", "ss", "-tu", bench.jmh_time_unit, "-foe", "true",
                "-rf", "json", "-rff", str(result_file)]
        for name, value in jmh_params.items():
            argv += ["-p", f"{name}={value}"]
        print(f"threadlab: {shlex.join(argv)}", file=sys.stderr)
        started = time.monotonic()
        status, output = _stream(argv)
        elapsed = time.monotonic() - started
        results = _read_results(result_file)
        if status == 0 and results:
            return convert_jmh_result(results[0], bench, model, params, elapsed_s=round(elapsed, 3), extra=extra)
        kind, reason = failure_reason(output, scratch, limits_module.describe(limits))
        if kind == "failed" and "report kept" in reason:
            _keep(scratch)
        return not_measured(bench, model, params, kind, reason, {**extra, "jmh_exit_status": status})


def _read_results(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return []
    return data if isinstance(data, list) else []


def _keep(scratch: Path) -> None:
    """Moves crash reports out of the scratch directory before it is removed."""
    keep = Path(tempfile.mkdtemp(prefix="threadlab-jvm-crash-"))
    for report in scratch.glob("hs_err_pid*.log"):
        report.rename(keep / report.name)


def capacity_samples(output: Sequence[str], count: int) -> tuple[list[float], dict[str, Any]]:
    """The samples of Capacity's "sample BYTES_PER_THREAD RSS_DELTA
    HEAP_DELTA COMMITTED_DELTA KERNEL_DELTA" lines and the record's
    per-thread extras.  KERNEL_DELTA is "-" where /proc/meminfo did not
    tell; then kernel_memory_per_thread is left out rather than guessed."""
    samples: list[float] = []
    rss: list[int] = []
    heap: list[int] = []
    kernel: list[int | None] = []
    for line in output:
        parts = line.split()
        if len(parts) == 6 and parts[0] == "sample":
            samples.append(float(parts[1]))
            rss.append(int(parts[2]))
            heap.append(int(parts[3]))
            kernel.append(None if parts[5] == "-" else int(parts[5]))
    if not samples:
        return samples, {}
    more: dict[str, Any] = {
        "rss_delta_per_thread": round(sum(rss) / len(rss) / count, 1),
        "heap_delta_per_thread": round(sum(heap) / len(heap) / count, 1),
    }
    known = [delta for delta in kernel if delta is not None]
    if len(known) == len(kernel):
        more["kernel_memory_per_thread"] = statistics.median(delta / count for delta in known)
    return samples, more


def run_capacity(bench: JvmBenchmark, model: str, params: dict[str, str], settings: RunSettings,
                 jdk: jdk_module.Jdk, jar: Path, limits: MachineLimits, extra: dict[str, Any]) -> dict[str, Any]:
    repetitions = min(settings.iterations, CAPACITY_MAX_REPETITIONS)
    count = int(params["count"])
    with tempfile.TemporaryDirectory(prefix="threadlab-jvm-") as scratch_name:
        scratch = Path(scratch_name)
        argv = [str(jdk.java), *base_jvm_args(jdk, scratch), "-cp", str(jar), f"{JMH_PACKAGE}.{bench.target}",
                MODELS[model], params["count"], str(settings.warmup), str(repetitions)]
        print(f"threadlab: {shlex.join(argv)}", file=sys.stderr)
        started = time.monotonic()
        status, output = _stream(argv)
        elapsed = time.monotonic() - started
        samples, per_thread = capacity_samples(output, count)
        if status != 0 or len(samples) != repetitions:
            kind, reason = failure_reason(output, scratch, limits_module.describe(limits))
            return not_measured(bench, model, params, kind, reason, {**extra, "exit_status": status})
    more = {
        **per_thread,
        "jvm": f"{jdk.vendor or ''} {jdk.runtime or jdk.version}".strip(),
        "jdk_version": jdk.version,
        "not_counted": "the kernel's slab objects such as task_struct (cached slab pages cannot be attributed)",
    }
    return measured(bench, model, params, samples, iterations=1, warmup=settings.warmup,
                    elapsed_s=round(elapsed, 3), clock=None, extra={**extra, **more})


def run_point(bench: JvmBenchmark, model: str, params: dict[str, str], settings: RunSettings) -> dict[str, Any]:
    """The record of one data point (ok, unsupported or failed)."""
    try:
        jdk = jdk_module.find_jdk()
    except jdk_module.NoSuitableJdk as error:
        return not_measured(bench, model, params, "failed", str(error))
    jar = jar_path()
    if not jar.is_file():
        return not_measured(bench, model, params, "failed", f"{jar} is not built: run `make jvm`")
    limits = limits_module.read_limits()
    extra: dict[str, Any] = {"jdk_home": str(jdk.home)}
    if bench.name == "threads.lock_contended":
        extra["pinning"] = pinning_note(jdk, params)
    alive = bench.alive_at_once(params)
    if alive:
        scaling = limits_module.safe_count(alive, limits, COSTS[model])
        if scaling.unsupported:
            return not_measured(bench, model, params, "unsupported", scaling.unsupported, extra)
        if scaling.scaled:
            params = {**params, "count": str(scaling.count)}
            extra.update(scaled_from=scaling.requested, scaled_because=scaling.because)
    if bench.kind == "capacity":
        return run_capacity(bench, model, params, settings, jdk, jar, limits, extra)
    return run_jmh(bench, model, params, settings, jdk, jar, limits, extra)


def pinning_note(jdk: jdk_module.Jdk, params: dict[str, str]) -> str:
    pinned = params.get("pinned") == "yes"
    monitors = (
        "a virtual thread blocked in synchronized is pinned on this JDK (before JEP 491, JDK 24)"
        if jdk.feature < 24 else
        "a virtual thread blocked in synchronized unmounts on this JDK (JEP 491)"
    )
    frame = "; the loop runs inside a native frame (qsort upcall): a blocked virtual thread is pinned" if pinned else ""
    return f"Java {jdk.version}: {monitors}{frame}"


# -------------------------------------------------------------- protocol


def list_entries(model: str) -> list[dict[str, Any]]:
    return [bench.list_entry(model) for bench in BENCHMARKS]


def env_object(model: str) -> dict[str, Any]:
    jar = jar_path()
    env: dict[str, Any] = {
        "producer": "threadlab.producers.jmh",
        "suite": SUITE,
        "model": model,
        "defaults": {"normal": DEFAULTS[False], "quick": DEFAULTS[True]},
        "jar": str(jar),
        "jar_built": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(jar.stat().st_mtime)) if jar.is_file() else None,
        "jmh_version": jmh_version(jar) if jar.is_file() else None,
        "limits": limits_module.read_limits().as_dict(),
        "cpus": os.cpu_count(),
    }
    jdk = jdk_module.find_jdk()  # NoSuitableJdk: the caller says what to install
    env["java"] = {"home": str(jdk.home), "version": jdk.version, "vendor": jdk.vendor, "runtime": jdk.runtime}
    env["compiler"] = f"javac --release 21 (JDK {jdk.version}), JMH {env['jmh_version'] or '?'}"
    env["jvm_args"] = base_jvm_args(jdk, Path("SCRATCH"))
    return env


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # type: ignore[override]
        raise UsageError(message)


def _parser() -> _Parser:
    parser = _Parser(prog="threadlab-bench-jvm", add_help=True,
                     description="threadlab's JVM suite (JMH) for one thread model; see docs/jvm.md")
    parser.add_argument("--model", required=True, choices=sorted(MODELS))
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true")
    action.add_argument("--env", action="store_true")
    action.add_argument("--run", metavar="NAME")
    parser.add_argument("--placement", default="unbound")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--warmup", type=int, metavar="N")
    parser.add_argument("--iterations", type=int, metavar="N")
    parser.add_argument("--forks", type=int, metavar="N")
    return parser


# The adaptive loop's options, which this suite refuses (it runs a fixed number of iterations).
ADAPTIVE_OPTIONS = tuple("--" + name.replace("_", "-") for name in vocabulary.ADAPTIVE_OPTIONS
                         if name not in vocabulary.suite_options("jvm"))


def parse_params(bench: JvmBenchmark, given: Sequence[str], quick: bool) -> dict[str, str]:
    values = {p.name: (p.quick_values if quick else p.values)[0] for p in bench.params}
    for item in given:
        name, sep, value = item.partition("=")
        param = next((p for p in bench.params if p.name == name), None)
        if not sep or param is None:
            names = ", ".join(p.name for p in bench.params) or "none"
            raise UsageError(f"--param {item}: {bench.name} has no parameter {name!r} (parameters: {names})")
        if not param.accepted(value):
            raise UsageError(f"--param {item}: expected {param.expected}")
        values[name] = value
    return values


def settings_from(args: argparse.Namespace) -> RunSettings:
    defaults = DEFAULTS[args.quick]
    settings = RunSettings(
        quick=args.quick,
        warmup=defaults["warmup"] if args.warmup is None else args.warmup,
        iterations=defaults["iterations"] if args.iterations is None else args.iterations,
        forks=defaults["forks"] if args.forks is None else args.forks,
    )
    if not 0 <= settings.warmup <= 1000:
        raise UsageError(f"--warmup {settings.warmup}: expected 0 to 1000")
    if not 1 <= settings.iterations <= 100000:
        raise UsageError(f"--iterations {settings.iterations}: expected 1 to 100000")
    if not 0 <= settings.forks <= 100:
        raise UsageError(f"--forks {settings.forks}: expected 0 (in the harness JVM) to 100")
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if "--env" in args_list and "--clock" in args_list[:-1]:
        # threadlab asks every program's --env with the run's --clock; the
        # JVM reads its own clock (System.nanoTime), so it is ignored here.
        at = args_list.index("--clock")
        del args_list[at:at + 2]
    try:
        adaptive = [a for a in args_list if a.split("=")[0] in ADAPTIVE_OPTIONS]
        if adaptive:
            raise UsageError(f"{adaptive[0]}: the JVM suite runs a fixed number of iterations (JMH); "
                             "accepted: --quick, --warmup N, --iterations N, --forks N")
        args = _parser().parse_args(args_list)
        if args.list:
            for entry in list_entries(args.model):
                print(json.dumps(entry))
            return EXIT_OK
        if args.env:
            try:
                print(json.dumps(env_object(args.model)))
            except jdk_module.NoSuitableJdk as error:
                print(f"threadlab: {error}", file=sys.stderr)
                return EXIT_FAILED
            return EXIT_OK
        bench = BY_NAME.get(args.run)
        if bench is None:
            raise UsageError(f"--run {args.run}: no such benchmark; valid: {', '.join(BY_NAME)}")
        params = parse_params(bench, args.param, args.quick)
        settings = settings_from(args)
    except UsageError as error:
        print(f"threadlab-bench-{args_list and _model_name(args_list) or 'jvm'}: usage error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.placement != "unbound":
        record = not_measured(
            bench, args.model, params, "unsupported",
            f"placement {args.placement}: the JVM suite runs unbound only (platform threads are placed by the OS, "
            "virtual threads by the JVM's carrier pool)",
        )
        record["placement"] = args.placement if args.placement in vocabulary.PLACEMENTS else "unbound"
    else:
        record = run_point(bench, args.model, params, settings)
    print(json.dumps(record, separators=(",", ":")), flush=True)
    return EXIT_FAILED if record["status"] == "failed" else EXIT_OK


def _model_name(argv: Sequence[str]) -> str:
    for i, arg in enumerate(argv):
        if arg == "--model" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--model="):
            return arg.split("=", 1)[1]
    return "jvm"


if __name__ == "__main__":
    sys.exit(main())
