"""The machine's limits on how many threads may exist at once, and the
count of threads a benchmark can safely ask for.

100,000 platform threads alive at once (the seed's yield test) exceed what
many Linux machines allow: every thread is a kernel task (bounded by
kernel.pid_max, kernel.threads-max, the cgroup's pids.max and, for users
other than root, RLIMIT_NPROC) and two memory mappings (bounded by
vm.max_map_count per process), and costs memory.  Asking anyway makes the
JVM fail half-way ("unable to create native thread") or, worse, starves
every other process on the machine of pids.  So before a benchmark that
keeps COUNT threads alive, the producer reads the limits, computes how many
threads fit with a margin, and scales the count down (the record then says
so: params.count is the count used, extra.scaled_from the count asked,
extra.scaled_because the limit), or reports the point unsupported when not
even a minimal count fits.

$THREADLAB_TEST_LIMITS (a JSON object of MachineLimits fields) replaces the
values read, for the tests.
"""

from __future__ import annotations

import json
import os
import resource
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

TEST_OVERRIDE_ENV = "THREADLAB_TEST_LIMITS"

# Of the free kernel tasks (pids, threads-max, cgroup, RLIMIT_NPROC), a
# benchmark takes at most this share, less a reserve, so the rest of the
# machine (other users' builds and tests) can still fork.
TASK_SHARE = 0.75
TASK_RESERVE = 512
# Mappings a JVM has before its benchmark threads (libraries, heap regions,
# code cache, CDS; about 200-500 measured), with room to spare.
BASELINE_MAPS = 2000
MAP_SHARE = 0.9
# Of the available memory, a benchmark takes at most this share.
MEMORY_SHARE = 0.5
# The smallest count worth measuring: below it the point is unsupported.
MINIMUM_COUNT = 1000


@dataclass(frozen=True)
class ThreadCost:
    """What one thread of a model takes from the machine."""

    kernel_task: bool  # a kernel task (pid) per thread
    maps: float  # memory mappings per thread (glibc stack + guard page)
    resident_bytes: int  # memory actually used per thread, generously
    stack_bytes: int  # reserved stack (committed under strict overcommit)


# A platform thread: 2 mappings (measured: stack and guard), its touched
# stack pages, the JVM's per-thread structures and the kernel's (16 KiB
# kernel stack, task_struct), rounded up; 1 MiB reserved stack (-Xss).
PLATFORM_THREAD = ThreadCost(kernel_task=True, maps=2, resident_bytes=128 * 1024, stack_bytes=1024 * 1024)
# A virtual thread: a Thread object and stack chunks on the heap.
VIRTUAL_THREAD = ThreadCost(kernel_task=False, maps=0, resident_bytes=8 * 1024, stack_bytes=0)


@dataclass(frozen=True)
class MachineLimits:
    """The limits as read (None: absent or unreadable)."""

    pid_max: int | None = None
    threads_max: int | None = None
    tasks_now: int | None = None  # kernel tasks (threads) existing now, system-wide
    max_map_count: int | None = None
    nproc_soft: int | None = None  # RLIMIT_NPROC; None = unlimited
    nproc_enforced: bool = True  # root (CAP_SYS_RESOURCE) is exempt
    cgroup_pids_max: int | None = None
    cgroup_pids_current: int | None = None
    mem_available_bytes: int | None = None
    cgroup_memory_max: int | None = None
    cgroup_memory_current: int | None = None
    overcommit_memory: int | None = None
    address_space_bytes: int | None = None  # RLIMIT_AS (ulimit -v); None = unlimited

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Scaling:
    """The count to use: requested when it fits."""

    requested: int
    count: int
    because: str | None  # why the count was lowered, in words
    unsupported: str | None = None  # not even MINIMUM_COUNT fits: why

    @property
    def scaled(self) -> bool:
        return self.count != self.requested


def _int(path: str | Path) -> int | None:
    try:
        text = Path(path).read_text().split()[0]
    except (OSError, IndexError):
        return None
    if text == "max":
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _meminfo(key: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _tasks_now() -> int | None:
    """Kernel scheduling entities existing now: /proc/loadavg's 4th field is running/total."""
    try:
        return int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])
    except (OSError, IndexError, ValueError):
        return None


def _cgroup_dirs(controller: str) -> list[Path]:
    """This process's cgroup directories holding a controller's files, from
    the innermost up (cgroup v2 unified, or the v1 hierarchy of the controller)."""
    dirs: list[Path] = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return dirs
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            base = Path("/sys/fs/cgroup")
        elif controller in controllers.split(","):
            base = Path("/sys/fs/cgroup") / controllers
        else:
            continue
        current = base / path.lstrip("/")
        while True:
            dirs.append(current)
            if current == base or base not in current.parents:
                break
            current = current.parent
    return dirs


def _cgroup_limit(controller: str, limit_files: tuple[str, ...], usage_files: tuple[str, ...]) -> tuple[int | None, int | None]:
    """The tightest (limit, usage) along this process's cgroup path."""
    best: tuple[int | None, int | None] = (None, None)
    for directory in _cgroup_dirs(controller):
        for limit_name, usage_name in zip(limit_files, usage_files):
            limit = _int(directory / limit_name)
            # cgroup v1 memory has no "max": a huge number means unlimited.
            if limit is None or limit >= 1 << 60:
                continue
            usage = _int(directory / usage_name)
            if best[0] is None or limit - (usage or 0) < best[0] - (best[1] or 0):
                best = (limit, usage)
    return best


def read_limits() -> MachineLimits:
    """The limits of this machine and process, with $THREADLAB_TEST_LIMITS applied."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    address_space, _ = resource.getrlimit(resource.RLIMIT_AS)
    pids_max, pids_current = _cgroup_limit("pids", ("pids.max",), ("pids.current",))
    mem_max, mem_current = _cgroup_limit(
        "memory", ("memory.max", "memory.limit_in_bytes"), ("memory.current", "memory.usage_in_bytes")
    )
    limits = MachineLimits(
        pid_max=_int("/proc/sys/kernel/pid_max"),
        threads_max=_int("/proc/sys/kernel/threads-max"),
        tasks_now=_tasks_now(),
        max_map_count=_int("/proc/sys/vm/max_map_count"),
        nproc_soft=None if soft == resource.RLIM_INFINITY else int(soft),
        nproc_enforced=os.geteuid() != 0,
        cgroup_pids_max=pids_max,
        cgroup_pids_current=pids_current,
        mem_available_bytes=_meminfo("MemAvailable"),
        cgroup_memory_max=mem_max,
        cgroup_memory_current=mem_current,
        overcommit_memory=_int("/proc/sys/vm/overcommit_memory"),
        address_space_bytes=None if address_space == resource.RLIM_INFINITY else int(address_space),
    )
    return apply_override(limits, os.environ.get(TEST_OVERRIDE_ENV))


def apply_override(limits: MachineLimits, text: str | None) -> MachineLimits:
    if not text:
        return limits
    try:
        values = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"${TEST_OVERRIDE_ENV}: not JSON ({error.msg})") from None
    known = {f.name for f in fields(MachineLimits)}
    if not isinstance(values, dict):
        raise ValueError(f"${TEST_OVERRIDE_ENV}: expected a JSON object of {sorted(known)}")
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"${TEST_OVERRIDE_ENV}: unknown fields {unknown}; known: {sorted(known)}")
    return replace(limits, **values)


def _fmt(n: int) -> str:
    return f"{n:,}"


def headroom(limits: MachineLimits, cost: ThreadCost) -> list[tuple[int, str]]:
    """(threads that fit, the limit in words) for every limit that applies."""
    found: list[tuple[int, str]] = []
    in_use = limits.tasks_now or 0

    def tasks(limit: int | None, used: int, name: str) -> None:
        if limit is None:
            return
        free = max(0, limit - used)
        fit = max(0, int(free * TASK_SHARE) - TASK_RESERVE)
        found.append((fit, f"{name} {_fmt(limit)} with {_fmt(used)} in use leaves room for about {_fmt(fit)} threads"))

    if cost.kernel_task:
        tasks(limits.pid_max, in_use, "kernel.pid_max")
        tasks(limits.threads_max, in_use, "kernel.threads-max")
        if limits.cgroup_pids_max is not None:
            tasks(limits.cgroup_pids_max, limits.cgroup_pids_current or 0, "cgroup pids.max")
        if limits.nproc_enforced and limits.nproc_soft is not None:
            tasks(limits.nproc_soft, in_use, "ulimit -u (RLIMIT_NPROC)")
    if cost.maps and limits.max_map_count is not None:
        fit = max(0, int((limits.max_map_count - BASELINE_MAPS) * MAP_SHARE / cost.maps))
        found.append((fit, f"vm.max_map_count {_fmt(limits.max_map_count)} ({cost.maps:g} mappings per thread) "
                           f"leaves room for about {_fmt(fit)} threads"))
    per_thread = cost.resident_bytes + (cost.stack_bytes if limits.overcommit_memory == 2 else 0)
    available = limits.mem_available_bytes
    if limits.cgroup_memory_max is not None:
        cgroup_free = max(0, limits.cgroup_memory_max - (limits.cgroup_memory_current or 0))
        available = cgroup_free if available is None else min(available, cgroup_free)
    if available is not None and per_thread > 0:
        fit = int(available * MEMORY_SHARE / per_thread)
        found.append((fit, f"{available / 2**30:.1f} GiB of available memory at {per_thread // 1024} KiB per thread "
                           f"leaves room for about {_fmt(fit)} threads"))
    return found


def safe_count(requested: int, limits: MachineLimits, cost: ThreadCost, minimum: int = MINIMUM_COUNT) -> Scaling:
    """The count of threads that may be alive at once: requested if it fits,
    else the largest that fits (rounded down to 2 significant digits), else
    unsupported when less than minimum (or requested, if smaller) fits."""
    room = headroom(limits, cost)
    fits = [fit for fit, _ in room]
    if not fits or requested <= min(fits):
        return Scaling(requested=requested, count=requested, because=None)
    fit, why = min(room, key=lambda item: item[0])
    floor = min(requested, minimum)
    if fit < floor:
        return Scaling(
            requested=requested, count=requested, because=None,
            unsupported=f"{_fmt(requested)} threads alive at once do not fit on this machine, not even {_fmt(floor)}: {why}",
        )
    count = _round_down(fit)
    return Scaling(requested=requested, count=count, because=f"{_fmt(requested)} threads alive at once do not fit: {why}")


def _round_down(n: int) -> int:
    """Two significant digits, downwards: 24,567 -> 24,000."""
    if n < 100:
        return n
    scale = 10 ** (len(str(n)) - 2)
    return n // scale * scale


def describe(limits: MachineLimits) -> str:
    """One line for failure reasons: the limits that bound threads."""
    parts = []
    for name, label in (
        ("pid_max", "kernel.pid_max"), ("threads_max", "kernel.threads-max"), ("tasks_now", "tasks in use"),
        ("max_map_count", "vm.max_map_count"), ("cgroup_pids_max", "cgroup pids.max"),
    ):
        value = getattr(limits, name)
        if value is not None:
            parts.append(f"{label} {_fmt(value)}")
    if limits.nproc_soft is not None and limits.nproc_enforced:
        parts.append(f"ulimit -u {_fmt(limits.nproc_soft)}")
    if limits.mem_available_bytes is not None:
        parts.append(f"MemAvailable {limits.mem_available_bytes / 2**30:.1f} GiB")
    if limits.address_space_bytes is not None:
        # Every platform thread reserves its stack (-Xss, 1 MiB) of address space.
        parts.append(f"ulimit -v {limits.address_space_bytes / 2**30:.1f} GiB")
    return ", ".join(parts)

