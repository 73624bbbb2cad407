"""The environment of a run: what a reader needs to judge its numbers.

Collected once when a run starts (load average again when it ends) and
stored with it: CPU model and topology, kernel, C library, compiler and
flags, clock, scheduler settings, the runner's policy and priority,
virtualization, frequency governor, memory, load, versions.  Facts that
make timings less trustworthy become warnings, shown with the results.

Everything here is best effort: a value that cannot be read is recorded as
"unreadable: REASON" rather than failing the run.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any, Iterable

from threadlab import __version__
from threadlab.native import discovery, launcher, process, protocol
from threadlab.output.units import format_value

# Scheduler files worth recording: round-robin slice, autogroup, CFS
# bandwidth slice (cgroup quotas), and the EEVDF/CFS tunables that set how
# long a thread runs before another is picked.  Older kernels keep the CFS
# ones under /proc/sys/kernel; newer ones under debugfs.
SCHEDULER_FILES: tuple[str, ...] = (
    "/proc/sys/kernel/sched_rr_timeslice_ms",
    "/proc/sys/kernel/sched_autogroup_enabled",
    "/proc/sys/kernel/sched_cfs_bandwidth_slice_us",
    "/proc/sys/kernel/sched_child_runs_first",
    "/proc/sys/kernel/sched_min_granularity_ns",
    "/proc/sys/kernel/sched_latency_ns",
    "/proc/sys/kernel/sched_wakeup_granularity_ns",
    "/sys/kernel/debug/sched/base_slice_ns",
    "/sys/kernel/debug/sched/min_granularity_ns",
    "/sys/kernel/debug/sched/latency_ns",
    "/sys/kernel/debug/sched/wakeup_granularity_ns",
    "/sys/kernel/debug/sched/migration_cost_ns",
    "/sys/kernel/debug/sched/preempt",
)
_POLICY_NAMES = {
    getattr(os, name): name
    for name in ("SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE", "SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE")
    if hasattr(os, name)
}
# Above this 1-minute load average, other work competes for the CPUs.
LOAD_WARNING_THRESHOLD = 0.5
_HELPER_TIMEOUT_S = 5.0


def read_text(path: str | Path) -> str:
    """A small system file stripped, or 'unreadable: REASON'."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError as error:
        return f"unreadable: {error.strerror or error}"


def is_unreadable(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("unreadable:")


def _run_helper(argv: list[str], cwd: Path | None = None) -> str | None:
    """stdout of a helper program, or None when absent or unsuccessful."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = process.run(argv, timeout_s=_HELPER_TIMEOUT_S, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


# ------------------------------------------------------------------ parts


def cpuinfo() -> dict[str, Any]:
    """CPU model and flags from /proc/cpuinfo (x86 and Arm spellings)."""
    model = None
    flags: set[str] = set()
    text = read_text("/proc/cpuinfo")
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if model is None and key in ("model name", "Model", "Processor", "cpu model"):
            model = value
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    return {"model": model or "unknown", "hypervisor_flag": "hypervisor" in flags}


def machine_id(cpu_model: str) -> str:
    """A stable identity of this machine for grouping runs (`--by machine`):
    /etc/machine-id when there is one, else hostname and CPU model; hashed
    so the store does not carry the raw id."""
    raw = read_text("/etc/machine-id")
    if is_unreadable(raw) or not raw:
        raw = f"{socket.gethostname()}|{cpu_model}"
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _governors() -> dict[str, int] | None:
    """Frequency governor -> number of CPUs using it; None without cpufreq."""
    counts: dict[str, int] = {}
    for path in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        value = read_text(path)
        counts[value] = counts.get(value, 0) + 1
    return counts or None


def _cpu_quota() -> str | None:
    """The cgroup CPU quota of this process ('max' = none), v2 or v1."""
    for line in read_text("/proc/self/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, group = parts
        if controllers == "":
            value = read_text(f"/sys/fs/cgroup{group.rstrip('/')}/cpu.max")
            if not is_unreadable(value):
                return value
        elif "cpu" in controllers.split(","):
            base = f"/sys/fs/cgroup/{controllers}{group.rstrip('/')}"
            quota, period = read_text(f"{base}/cpu.cfs_quota_us"), read_text(f"{base}/cpu.cfs_period_us")
            if not is_unreadable(quota) and not is_unreadable(period):
                return "max" if quota == "-1" else f"{quota} {period}"
    return None


def _scheduler_files() -> dict[str, str]:
    """Each scheduler file this kernel has, with its value.  Files a kernel
    version does not have are left out; a directory we may not enter
    (debugfs without root) is recorded once as unreadable."""
    values: dict[str, str] = {}
    for path in SCHEDULER_FILES:
        directory = os.path.dirname(path)
        if directory in values:
            continue
        try:
            os.listdir(directory)
        except OSError as error:
            values[directory] = f"unreadable: {error.strerror or error}"
            continue
        if os.path.exists(path):
            values[path] = read_text(path)
    return values


def _memory() -> dict[str, int]:
    result: dict[str, int] = {}
    for line in read_text("/proc/meminfo").splitlines():
        key, _, value = line.partition(":")
        if key in ("MemTotal", "MemAvailable"):
            result[key] = int(value.split()[0]) * 1024
    return {"total_bytes": result.get("MemTotal", 0), "available_bytes": result.get("MemAvailable", 0)}


def _runner_scheduling() -> dict[str, Any]:
    """Policy, nice and CPUs of this process; the benchmark programs inherit them."""
    try:
        policy = _POLICY_NAMES.get(os.sched_getscheduler(0), "unknown")
    except OSError as error:
        policy = f"unreadable: {error.strerror}"
    return {
        "policy": policy,
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "allowed_cpus": sorted(os.sched_getaffinity(0)),
        "cpu_quota": _cpu_quota(),
    }


def _virtualization(cpu: dict[str, Any]) -> dict[str, Any]:
    vm = _run_helper(["systemd-detect-virt", "--vm"])
    container = _run_helper(["systemd-detect-virt", "--container"])
    return {
        "vm": None if vm in (None, "none") else vm,
        "container": None if container in (None, "none") else container,
        "hypervisor_flag": cpu["hypervisor_flag"],
        "dmi_vendor": read_text("/sys/class/dmi/id/sys_vendor"),
        "dmi_product": read_text("/sys/class/dmi/id/product_name"),
    }


def _git() -> dict[str, Any] | None:
    root = discovery.repository_root()
    if not (root / ".git").exists():
        return None
    commit = _run_helper(["git", "rev-parse", "HEAD"], cwd=root)
    status = _run_helper(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


# --------------------------------------------------------------- collection


def collect(programs: Iterable[Path], clock: str | None = None) -> dict[str, Any]:
    """The environment at the start of a run (a few hundred milliseconds)."""
    cpu = cpuinfo()
    uname = platform.uname()
    env: dict[str, Any] = {
        "threadlab": {"version": __version__, "python": platform.python_version(), "git": _git()},
        "host": {
            "hostname": socket.gethostname(),
            "machine_id": machine_id(cpu["model"]),
            "boot_id": read_text("/proc/sys/kernel/random/boot_id"),
        },
        "cpu": {"model": cpu["model"], "online_cpus": os.cpu_count(), "governors": _governors()},
        "kernel": {"system": uname.system, "release": uname.release, "version": uname.version, "machine": uname.machine},
        "scheduler": {"files": _scheduler_files()},
        "runner": _runner_scheduling(),
        "virtualization": _virtualization(cpu),
        "memory": _memory(),
        "load": {"start": load_average(), "end": None},
        "native": {program.name: protocol.program_env(program, clock) for program in programs},
    }
    env["warnings"] = warnings(env)
    return env


def finish(env: dict[str, Any]) -> dict[str, Any]:
    """The environment with the load average at the end of the run.  It is
    recorded, not warned about: by then the benchmarks' own threads make up
    most of it."""
    return {**env, "load": {**env.get("load", {}), "end": load_average()}}


def primary_native(env: dict[str, Any]) -> dict[str, Any]:
    """The --env of the first program (clock, compiler, topology)."""
    programs = env.get("native") or {}
    return next(iter(programs.values()), {})


def warnings(env: dict[str, Any]) -> list[str]:
    """Facts that make timings less trustworthy, in words."""
    found: list[str] = []
    virt = env["virtualization"]
    if virt["vm"] or virt["hypervisor_flag"]:
        found.append(
            f"virtual machine ({virt['vm'] or 'hypervisor flag set'}): cross-CPU wake-ups and "
            "timer reads are slower and noisier than on bare metal"
        )
    load = (env["load"] or {}).get("start")
    if load and load[0] > LOAD_WARNING_THRESHOLD:
        found.append(f"load average {load[0]:.2f} at start: other work competes for the CPUs")
    for governor in sorted(env["cpu"]["governors"] or {}):
        if governor != "performance" and not is_unreadable(governor):
            found.append(f"frequency governor is {governor}: clock speed may change during the run")
    runner = env["runner"]
    if isinstance(runner["nice"], int) and runner["nice"] > 0:
        found.append(f"threadlab runs at nice {runner['nice']}: the benchmarks get less CPU time than normal work")
    online = env["cpu"]["online_cpus"] or 0
    allowed = runner["allowed_cpus"]
    if online and len(allowed) < online:
        found.append(f"restricted to CPUs {_cpu_list(allowed)} of {online} online (affinity or cpuset)")
    if len(allowed) < 2:
        found.append("only one CPU available: the different-cpus placement is unsupported")
    quota = runner["cpu_quota"]
    if quota and quota.split()[0] not in ("max", "-1"):
        found.append(f"cgroup CPU quota {quota}: threads may be throttled")
    for name, program_env in (env.get("native") or {}).items():
        build = program_env.get("build_type")
        if build and build not in ("Release", "RelWithDebInfo"):
            found.append(f"{name} is a {build} build: timings are not representative")
        if program_env.get("sanitizer"):
            found.append(f"{name} is built with the {program_env['sanitizer']} sanitizer: timings are not representative")
        clock = program_env.get("clock") or {}
        if clock.get("source") == "tsc" and clock.get("tsc_invariant") is False:
            found.append(f"{name} reads a TSC that is not invariant: timings may drift with frequency changes")
    return found


def _cpu_list(cpus: list[int]) -> str:
    return ",".join(map(str, cpus))


# -------------------------------------------------------------- description


def describe(env: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, text) lines summarising an environment for `show` and `bench`."""
    lines: list[tuple[str, str]] = []
    nat = primary_native(env)
    topo = nat.get("topology") or {}
    cpu = env.get("cpu", {})
    topology = ""
    if topo:
        topology = (
            f" — {topo.get('packages', '?')} package(s), {topo.get('cores', '?')} cores, "
            f"{topo.get('pus', '?')} hardware threads, {topo.get('numa_nodes', '?')} NUMA node(s)"
        )
    lines.append(("CPU", f"{cpu.get('model', 'unknown')}{topology}"))
    kernel = env.get("kernel", {})
    lines.append(("kernel", f"{kernel.get('system', '')} {kernel.get('release', '')} {kernel.get('machine', '')}".strip()))
    if nat:
        lines.append(("C library", f"glibc {nat.get('libc', '?')}; hwloc {topo.get('hwloc_version', '?')}"))
        lines.append(("compiler", f"{nat.get('compiler', '?')} {nat.get('cflags', '')} ({nat.get('build_type', '?')})"))
        clock = nat.get("clock") or {}
        if clock:
            lines.append(
                (
                    "clock",
                    f"{clock.get('source', '?')}, resolution {format_value(clock.get('resolution_ns'), 'ns')}, "
                    f"read overhead {format_value(clock.get('read_overhead_ns'), 'ns')}",
                )
            )
    files = (env.get("scheduler") or {}).get("files", {})
    readable = [f"{Path(p).name}={v}" for p, v in files.items() if not is_unreadable(v)]
    unreadable = [p for p, v in files.items() if is_unreadable(v)]
    if unreadable:
        readable.append(f"unreadable: {', '.join(Path(p).name for p in unreadable)}")
    lines.append(("scheduler", "; ".join(readable) or "no settings found"))
    runner = env.get("runner", {})
    lines.append(
        (
            "runner",
            f"{runner.get('policy', '?')}, nice {runner.get('nice', '?')}, "
            f"CPUs {_cpu_list(runner.get('allowed_cpus', []))}",
        )
    )
    virt = env.get("virtualization", {})
    kinds = [k for k in (virt.get("vm"), virt.get("container")) if k]
    lines.append(("virtualization", ", ".join(kinds) or ("hypervisor flag" if virt.get("hypervisor_flag") else "none detected")))
    load = env.get("load", {})
    start, end = load.get("start"), load.get("end")
    lines.append(("load average", f"{_load(start)} at start, {_load(end)} at end"))
    lines += launcher.describe(env)  # the hosts of an mpi run
    versions = env.get("threadlab", {})
    git = versions.get("git") or {}
    source = f", source {git['commit'][:12]}{' (modified)' if git.get('dirty') else ''}" if git.get("commit") else ""
    lines.append(("threadlab", f"{versions.get('version', '?')}, Python {versions.get('python', '?')}{source}"))
    return lines


def _load(values: list[float] | None) -> str:
    return " ".join(f"{v:.2f}" for v in values) if values else "?"

