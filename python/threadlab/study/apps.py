"""`threadlab study apps`: seed 000's scenario study (docs/study.md).

Four multithreaded kernels (MIPS, MFLOPS, Leibniz pi, trapezoid integral)
run over a matrix of scenarios: thread platform x architecture x priority
x affinity, each at 1..N threads, many times, every run its own process
(threadlab-app-PLATFORM[-32]), the runs of all scenarios interleaved in a
seeded random order so that drift of the machine favours none of them.

The platform omp-ult is the gomp program, unmodified, with
libthreadlab-gomp.so (libgomp's ABI on user-level threads) preloaded in
place of libgomp: the build's manifest names the library, every run
checks that the program really ran on it.

This module plans the study (programs, factor levels, the design, the
cells and their runs), runs it, and turns each cell (scenario x kernel x
thread count) into threadlab.record/1 records: the times of the parallel
part (metric 'time'), the rates ('rate') and the whole processes' wall
times ('process'), each with every run as a sample.  tables.py computes the
speedups and the priority effects from those records.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from threadlab import vocabulary
from threadlab.errors import ThreadlabError, UserError
from threadlab.native import discovery, process, rm
from threadlab.native.process import StopRequest, exit_text
from threadlab.records import schema
from threadlab.records.record import new_record
from threadlab.run.progress import JobProgress
from threadlab.run.runner import Result
from threadlab.study.engine import (Job, allowed_cpus, cell_record, drive, interleaved_jobs, new_seed, run_checks,
                                    run_program)

STUDY = "apps"
APP_PREFIX = discovery.APP_PREFIX
MANIFEST_NAME = "threadlab-apps.json"
BENCHMARK_PREFIX = "study.apps."

KERNELS: tuple[str, ...] = ("mips", "mflops", "pi", "trapezoid")
FACTORS: tuple[str, ...] = ("platform", "arch", "priority", "affinity")
PLATFORMS: tuple[str, ...] = ("pthread", "c11", "gomp", "llvmomp", "ult", "omp-ult")
ARCHS: tuple[str, ...] = ("64", "32")
PRIORITIES: tuple[str, ...] = ("normal", "nice-20", "fifo", "rr", "batch", "idle")
AFFINITIES: tuple[str, ...] = ("os", "pinned")
DEFAULT_LEVELS: dict[str, tuple[str, ...]] = {
    "platform": PLATFORMS, "arch": ARCHS, "priority": PRIORITIES, "affinity": AFFINITIES,
}
# Each block varies its factors together (crossed); the others stay at
# their baseline, the first level.  The union of the blocks is the design.
DEFAULT_DESIGN = "platform*affinity,platform*arch,priority"
DEFAULT_RUNS = 33  # the seed's number
QUICK_RUNS = 5
DEFAULT_TIMEOUT_S = 120.0
QUICK_TIMEOUT_S = 30.0
PAPER_TIMEOUT_S = 1800.0
# The real-time priority of the 'fifo' and 'rr' levels: the lowest one,
# which already runs ahead of every normal thread (fifo:P / rr:P for others).
RT_PRIORITY = 1
MAX_THREADS = 4096

# Platforms without a program of their own: another platform's, run with
# this library preloaded (the manifest names both).
PRELOADED: dict[str, str] = {"omp-ult": rm.ULT_LIBRARY}
# Levels that do not exist for a platform, whatever the build: the cells
# are planned as unsupported with the reason, and nothing runs.
NOT_APPLICABLE: dict[tuple[str, str, str], str] = {
    ("omp-ult", "affinity", "pinned"): (
        f"omp-ult cannot pin a worker to a CPU: its workers are user-level threads of {rm.ULT_LIBRARY}, which "
        "move between virtual processors, so a worker binding itself would bind a virtual processor, not the "
        "worker"
    ),
}

# The affinity factor as a record placement.
PLACEMENT_OF: dict[str, str] = {"os": "unbound", "pinned": "different-cpus"}
AFFINITY_OF: dict[str, str] = {placement: affinity for affinity, placement in PLACEMENT_OF.items()}

# The probe's exit status when the priority may not be set (native/apps/app.c).
EXIT_REFUSED = 3
_QUERY_TIMEOUT_S = 30.0


# ------------------------------------------------------------------ levels


_PRIORITY_FORM = re.compile(r"^(normal|batch|idle|nice-20|fifo|rr|nice:(-?\d+)|(fifo|rr):(\d+))$")


def check_priority(level: str) -> str:
    """A priority level as given, checked: the six names, or nice:N
    (-20..19), fifo:P, rr:P (1..99)."""
    match = _PRIORITY_FORM.match(level)
    ok = bool(match)
    if match and match.group(2) is not None:
        ok = -20 <= int(match.group(2)) <= 19
    elif match and match.group(4) is not None:
        ok = 1 <= int(match.group(4)) <= 99
    if not ok:
        raise UserError(
            f"--priority {level}: expected normal, nice-20, fifo, rr, batch, idle, nice:N (N from -20 to 19), "
            "fifo:P or rr:P (P from 1 to 99)"
        )
    return level


def priority_argument(level: str) -> str:
    """The program's --priority value of a level."""
    return {"nice-20": "nice:-20", "fifo": f"fifo:{RT_PRIORITY}", "rr": f"rr:{RT_PRIORITY}"}.get(level, level)


def _check_level(factor: str, level: str) -> str:
    if factor == "priority":
        return check_priority(level)
    accepted = {"platform": PLATFORMS, "arch": ARCHS, "affinity": AFFINITIES}[factor]
    if level not in accepted:
        raise UserError(f"--{factor} {level}: expected one of {', '.join(accepted)} (comma-separated)")
    return level


def parse_levels(factor: str, text: str) -> list[str]:
    """--platform pthread,gomp: the levels in the order given (the first is
    the factor's baseline)."""
    levels = [part.strip() for part in text.split(",")]
    if any(not level for level in levels):
        raise UserError(f"--{factor} {text}: empty level (comma-separated list expected)")
    return list(dict.fromkeys(_check_level(factor, level) for level in levels))


def parse_design(text: str) -> list[tuple[str, ...]]:
    """--factors: blocks separated by commas, the factors of a block joined
    by '*' (crossed); 'all' crosses the four factors, 'none' is the
    baseline scenario alone."""
    spec = text.strip()
    if spec == "all":
        return [FACTORS]
    if spec == "none":
        return [()]
    blocks: list[tuple[str, ...]] = []
    for part in spec.split(","):
        names = tuple(name.strip() for name in part.split("*"))
        for name in names:
            if name not in FACTORS:
                raise UserError(
                    f"--factors {text}: unknown factor '{name or '(empty)'}'; expected factors from "
                    f"{', '.join(FACTORS)}, crossed with '*' and separated by ',' (e.g. {DEFAULT_DESIGN}), "
                    "or all, or none"
                )
        if len(set(names)) != len(names):
            raise UserError(f"--factors {text}: a factor appears twice in '{part.strip()}'")
        blocks.append(names)
    return blocks


def parse_threads(text: str) -> list[int]:
    """--threads 1,2,4 or 1-8 (ranges and lists mix)."""
    try:
        return vocabulary.parse_ranges(text.split(","), 1, MAX_THREADS)
    except ValueError:
        raise UserError(
            f"--threads {text}: expected thread counts from 1 to {MAX_THREADS}, as a list and/or ranges "
            "(e.g. 1,2,4 or 1-8)"
        ) from None


def parse_kernels(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",")]
    for name in names:
        if name not in KERNELS:
            raise UserError(f"--kernels {text}: unknown kernel '{name or '(empty)'}'; expected from {', '.join(KERNELS)}")
    return [k for k in KERNELS if k in names]


def parse_sizes(text: str) -> dict[str, int]:
    """--size mips=4e8,pi=1e8."""
    sizes: dict[str, int] = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        name = name.strip()
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if name not in KERNELS or not math.isfinite(number) or number < 1 or number != int(number) or number > 1e15:
            raise UserError(
                f"--size {text}: expected KERNEL=N[,KERNEL=N...] with a kernel from {', '.join(KERNELS)} "
                "and N a whole number from 1 to 1e15 (e.g. mips=4e8,pi=1e8)"
            )
        sizes[name] = int(number)
    return sizes


# ----------------------------------------------------------------- programs


@dataclass(frozen=True)
class KernelInfo:
    """A kernel as the programs describe it (--kernels)."""

    name: str
    summary: str
    size_unit: str
    rate_unit: str
    quantity: str
    ops_per_item: int
    default_size: int
    quick_size: int
    paper_size: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KernelInfo:
        """From a program's --list entry (study.apps.KERNEL)."""
        return cls(
            name=str(data["kernel"]), summary=str(data["summary"]), size_unit=str(data["size_unit"]),
            rate_unit=str(data["rate_unit"]), quantity=str(data["rate_quantity"]),
            ops_per_item=int(data["ops_per_item"]), default_size=int(data["default_size"]),
            quick_size=int(data["quick_size"]), paper_size=int(data["paper_size"]),
        )


def program_name(platform: str, arch: str, native_arch: str = "64") -> str:
    return APP_PREFIX + platform + ("" if arch == native_arch else f"-{arch}")


@dataclass
class Programs:
    """The application programs of one build: which (platform, arch) has a
    program, the library its runs preload (omp-ult), and why the others
    have none."""

    directory: Path | None
    native_arch: str
    paths: dict[tuple[str, str], Path]
    reasons: dict[tuple[str, str], str]
    preloads: dict[tuple[str, str], Path] = field(default_factory=dict)

    def path(self, platform: str, arch: str) -> Path | None:
        return self.paths.get((platform, arch))

    def preload(self, platform: str, arch: str) -> Path | None:
        return self.preloads.get((platform, arch))

    def reason(self, platform: str, arch: str) -> str:
        name = program_name(platform, arch, self.native_arch)
        where = f" in {self.directory}" if self.directory else ""
        if (platform, arch) in self.reasons:
            return self.reasons[(platform, arch)]
        if platform in PRELOADED:
            return f"the build's {MANIFEST_NAME}{where} names no program for {platform} {arch}-bit (a build " \
                   f"older than the platform, or without {PRELOADED[platform]})"
        return f"{name} was not built (no such program{where})"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def discover_programs(directory: Path | None = None) -> Programs:
    """The programs of the first native directory holding any
    (discovery.find: $THREADLAB_NATIVE_DIR, else build/bin, else $PATH), or
    of `directory`, with the build's manifest of what was not built and why."""
    if directory is not None:
        found_dir: Path | None = directory if any(_executable(p) for p in directory.glob(APP_PREFIX + "*")) else None
        if found_dir is None:
            raise ThreadlabError(f"no application programs ({APP_PREFIX}*) in {directory}; build them with `make`")
    else:
        found_dir = discovery.find(APP_PREFIX + "*", "application programs")[0].parent
    native_arch = "64" if sys.maxsize > 2**32 else "32"
    paths: dict[tuple[str, str], Path] = {}
    reasons: dict[tuple[str, str], str] = {}
    preloads: dict[tuple[str, str], Path] = {}
    manifest_path = found_dir / MANIFEST_NAME
    manifest: dict[str, Any] = {}
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, json.JSONDecodeError):
            manifest = {}
    native_arch = str(manifest.get("native_arch", native_arch))
    for entry in (manifest.get("programs") or {}).values():
        key = (str(entry.get("platform")), str(entry.get("arch")))
        if entry.get("program"):
            candidate = found_dir / str(entry["program"])
            # Canonical, as native/omp/env.c names a preloaded runtime.
            library = (found_dir / str(entry["preload"])).resolve() if entry.get("preload") else None
            if not _executable(candidate):
                reasons[key] = f"{entry['program']} is missing from {found_dir} (build it with `make`)"
            elif library is not None and not library.is_file():
                reasons[key] = f"{library.name}, which {entry['program']} runs with preloaded, is missing " \
                               f"({library}; build it with `make`)"
            else:
                paths[key] = candidate
                if library is not None:
                    preloads[key] = library
        elif entry.get("reason"):
            reasons[key] = str(entry["reason"])
    # Programs the manifest does not know (copied elsewhere, or a newer build).
    for platform, arch in itertools.product(PLATFORMS, ARCHS):
        candidate = found_dir / program_name(platform, arch, native_arch)
        if (platform, arch) not in paths and _executable(candidate):
            paths[(platform, arch)] = candidate
            reasons.pop((platform, arch), None)
    return Programs(found_dir, native_arch, paths, reasons, preloads)


def kernel_catalog(programs: Programs) -> dict[str, KernelInfo]:
    """The kernels and their sizes, from the first available program."""
    if not programs.paths:
        raise ThreadlabError(f"no application program of a known platform ({', '.join(PLATFORMS)}) in "
                             f"{programs.directory}; build them with `make`")
    program = programs.path("pthread", programs.native_arch) or min(programs.paths.values())
    entries = discovery.query_json(program, "--list", timeout_s=_QUERY_TIMEOUT_S)
    try:
        kernels = {info.name: info for info in map(KernelInfo.from_dict, entries)}
    except (KeyError, TypeError, ValueError) as error:
        raise ThreadlabError(f"{program.name} --list: bad answer ({error!r})") from None
    missing = [k for k in KERNELS if k not in kernels]
    if missing:
        raise ThreadlabError(f"{program.name} --list lacks {', '.join(missing)}")
    return kernels


Probe = Callable[[Path, str], "str | None"]


def probe_priority(program: Path, level: str) -> str | None:
    """None when this user may run a program at the level; else why not,
    as the program found out applying it (`--probe`)."""
    try:
        done = process.run([program, "--probe", "--param", f"priority={priority_argument(level)}"],
                           timeout_s=_QUERY_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"priority {level}: the probe failed ({error})"
    if done.returncode == 0:
        return None
    try:
        reason = json.loads(done.stdout.strip().splitlines()[-1])["reason"]
    except (IndexError, KeyError, ValueError, TypeError):
        reason = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return str(reason)


# ------------------------------------------------------------------ design


@dataclass(frozen=True)
class Scenario:
    platform: str
    arch: str
    priority: str
    affinity: str

    def value(self, factor: str) -> str:
        return str(getattr(self, factor))

    def replace(self, **changes: str) -> Scenario:
        return Scenario(**{**{f: self.value(f) for f in FACTORS}, **changes})

    @property
    def label(self) -> str:
        return f"{self.platform} {self.arch}-bit {self.priority} {self.affinity}"


def not_applicable(scenario: Scenario) -> str | None:
    """Why a level of the scenario does not exist for its platform
    (NOT_APPLICABLE), or None."""
    keys = ((scenario.platform, factor, scenario.value(factor)) for factor in FACTORS)
    return next((NOT_APPLICABLE[key] for key in keys if key in NOT_APPLICABLE), None)


def expand_design(blocks: Sequence[tuple[str, ...]], levels: Mapping[str, Sequence[str]]) -> list[Scenario]:
    """Every scenario of the design, in order: for each block, the product
    of its factors' levels, the other factors at their baseline (first
    level); a scenario two blocks share appears once."""
    baseline = {factor: levels[factor][0] for factor in FACTORS}
    scenarios: dict[Scenario, None] = {}
    for block in blocks:
        for combination in itertools.product(*(levels[factor] for factor in block)):
            scenarios.setdefault(Scenario(**{**baseline, **dict(zip(block, combination))}), None)
    return list(scenarios)


@dataclass
class Cell:
    """One scenario x kernel x thread count: its runs, and what they gave."""

    index: int
    scenario: Scenario
    kernel: KernelInfo
    threads: int
    size: int
    program: Path | None
    unsupported: str | None = None
    preload: Path | None = None  # the OpenMP runtime the runs preload (omp-ult)
    times: list[float] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    runs_done: int = 0
    wrong: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    misplaced: list[str] = field(default_factory=list)
    misprioritized: list[str] = field(default_factory=list)
    off_runtime: list[str] = field(default_factory=list)  # runtimes of runs that did not run on the preload
    max_error: float = 0.0
    last: dict[str, Any] = field(default_factory=dict)
    emitted: bool = False

    @property
    def label(self) -> str:
        return f"{self.kernel.name} {self.scenario.label} threads={self.threads}"

    def argv(self) -> list[str]:
        """The run's command line (the native protocol's --run)."""
        assert self.program is not None
        return [str(self.program), "--run", BENCHMARK_PREFIX + self.kernel.name, "--placement",
                PLACEMENT_OF[self.scenario.affinity], "--param", f"threads={self.threads}", "--param",
                f"size={self.size}", "--param", f"priority={priority_argument(self.scenario.priority)}"]

    def environment(self) -> dict[str, str] | None:
        """The run's environment: threadlab's own, with the cell's runtime
        preloaded (rm.preload_environment); None: threadlab's own."""
        return rm.preload_environment(self.preload) if self.preload else None

    def runs_on_preload(self, runtime: object) -> bool:
        """The program's reported runtime (its OpenMP entry points' file,
        found with dladdr) is the preloaded library: not libgomp, which a
        preload that did not take effect leaves in place."""
        return self.preload is None or (isinstance(runtime, str) and f"({self.preload})" in runtime)


@dataclass
class Plan:
    kernels: list[KernelInfo]
    threads: list[int]
    runs: int
    seed: int
    design: str
    levels: dict[str, list[str]]
    sizes: dict[str, int]
    scenarios: list[Scenario]
    cells: list[Cell]
    jobs: list[Job]
    timeout_s: float
    quick: bool
    paper: bool
    cpus: list[int]
    programs: Programs

    def options(self) -> dict[str, Any]:
        """What the run stores as its options."""
        return {
            "study": STUDY,
            "kernels": [k.name for k in self.kernels],
            "threads": self.threads,
            "runs": self.runs,
            "seed": self.seed,
            "factors": self.design,
            "levels": self.levels,
            "sizes": self.sizes,
            "scenarios": [
                {"number": i + 1, **{f: s.value(f) for f in FACTORS}} for i, s in enumerate(self.scenarios)
            ],
            "quick": self.quick,
            "paper": self.paper,
            "timeout_s": self.timeout_s,
            "cpus": self.cpus,
            "rt_priority": RT_PRIORITY,
        }

    def catalog(self) -> list[dict[str, Any]]:
        """One entry per kernel, shaped like a benchmark program's --list."""
        param_values = {
            "arch": sorted({s.arch for s in self.scenarios}),
            "priority": list(dict.fromkeys(s.priority for s in self.scenarios)),
            "affinity": list(dict.fromkeys(s.affinity for s in self.scenarios)),
            "threads": [str(t) for t in self.threads],
        }
        helps = {
            "arch": "architecture of the program: 64 (native) or 32 (-m32)",
            "priority": "scheduling of the process: normal, nice-20, fifo, rr, batch, idle",
            "affinity": "os: placement left to the OS; pinned: worker t bound to the t-th allowed CPU",
            "threads": "worker threads",
            "size": "problem size, in the kernel's unit",
        }
        entries = []
        for kernel in self.kernels:
            params = [{"name": name, "help": helps[name], "values": values, "quick_values": values}
                      for name, values in param_values.items()]
            params.append({"name": "size", "help": helps["size"] + f" ({kernel.size_unit})",
                           "values": [str(self.sizes[kernel.name])], "quick_values": [str(self.sizes[kernel.name])]})
            entries.append({
                "benchmark": BENCHMARK_PREFIX + kernel.name,
                "model": ",".join(dict.fromkeys(s.platform for s in self.scenarios)),
                "summary": kernel.summary,
                "quantity": TIME_QUANTITY,
                "unit": "s",
                "threads": max(self.threads),
                "placements": [PLACEMENT_OF[a] for a in param_values["affinity"]],
                "default_placements": [PLACEMENT_OF[a] for a in param_values["affinity"]],
                "params": params,
                "program": APP_PREFIX + "*",
                "study": STUDY,
                "size_unit": kernel.size_unit,
                "rate_unit": kernel.rate_unit,
            })
        return entries


def make_plan(
    *,
    programs: Programs,
    kernels: Mapping[str, KernelInfo],
    kernel_names: Sequence[str] = KERNELS,
    threads: Sequence[int] | None = None,
    runs: int | None = None,
    design: str = DEFAULT_DESIGN,
    levels: Mapping[str, Sequence[str]] | None = None,
    sizes: Mapping[str, int] | None = None,
    quick: bool = False,
    paper: bool = False,
    seed: int | None = None,
    timeout_s: float | None = None,
    cpus: Sequence[int] | None = None,
    probe: Probe = probe_priority,
) -> Plan:
    """The whole study, settled before anything runs: scenarios, cells
    (those that cannot run here marked unsupported with the reason), and
    the runs in their interleaved order."""
    if quick and paper:
        raise UserError("--quick and --paper exclude each other (quick: small sizes; paper: the sizes of de Sá et al.'s paper)")
    cpus = list(cpus) if cpus is not None else allowed_cpus()
    threads = list(threads) if threads else list(range(1, len(cpus) + 1))
    runs = runs or (QUICK_RUNS if quick else DEFAULT_RUNS)
    chosen: dict[str, list[str]] = {}
    for factor in FACTORS:
        given = (levels or {}).get(factor)
        if given:
            chosen[factor] = list(given)
        else:
            chosen[factor] = list(DEFAULT_LEVELS[factor])
    blocks = parse_design(design)
    scenarios = expand_design(blocks, chosen)
    if seed is None:
        seed = new_seed()
    chosen_sizes: dict[str, int] = {}
    infos = [kernels[name] for name in kernel_names]
    for info in infos:
        size = (sizes or {}).get(info.name)
        if size is None:
            size = info.paper_size if paper else info.quick_size if quick else info.default_size
        if size % info.ops_per_item:
            raise UserError(
                f"--size {info.name}={size}: {info.name} counts {info.size_unit} in items of {info.ops_per_item}, "
                f"so the size must be a multiple of {info.ops_per_item}"
            )
        chosen_sizes[info.name] = size

    # Priorities this user may not set: asked once per level, of any program.
    any_program = next(iter(sorted(programs.paths.values())), None)
    refused: dict[str, str | None] = {}
    for priority in dict.fromkeys(s.priority for s in scenarios):
        refused[priority] = None if priority == "normal" or any_program is None else probe(any_program, priority)

    cells: list[Cell] = []
    for scenario in scenarios:
        program = programs.path(scenario.platform, scenario.arch)
        preload = programs.preload(scenario.platform, scenario.arch)
        inapplicable = not_applicable(scenario)
        for info in infos:
            for count in threads:
                reason = None
                if inapplicable:
                    reason = inapplicable
                elif program is None:
                    reason = programs.reason(scenario.platform, scenario.arch)
                elif refused.get(scenario.priority):
                    reason = refused[scenario.priority]
                elif scenario.affinity == "pinned" and count > len(cpus):
                    reason = (
                        f"pinning {count} threads to distinct CPUs needs {count} CPUs, but this process may use "
                        f"{len(cpus)} (CPUs {','.join(map(str, cpus))})"
                    )
                cells.append(Cell(len(cells), scenario, info, count, chosen_sizes[info.name], program, reason,
                                  preload))
    numbered = interleaved_jobs([cell.index for cell in cells if cell.unsupported is None], runs, seed)
    timeout = timeout_s or (PAPER_TIMEOUT_S if paper else QUICK_TIMEOUT_S if quick else DEFAULT_TIMEOUT_S)
    return Plan(
        kernels=infos, threads=threads, runs=runs, seed=seed, design=design, levels=chosen, sizes=chosen_sizes,
        scenarios=scenarios, cells=cells, jobs=numbered, timeout_s=timeout, quick=quick, paper=paper, cpus=cpus,
        programs=programs,
    )


# ------------------------------------------------------------------ running


@dataclass
class Outcome:
    """One run of one cell."""

    kind: str  # "ok", "wrong", "unsupported", "failed"
    reason: str | None
    data: dict[str, Any]
    wall_s: float


def run_data(record: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's record says, as the cell keeps it: the time of the
    parallel part, the verdict and the workers' placement and priority
    (its checks), and the program's extra values."""
    checks = {check["name"]: check for check in record["checks"]}
    samples = record["samples"]
    return {
        **record["extra"],
        "status": record["status"],
        "reason": record["reason"],
        "time_s": samples[0] if samples else None,
        "verified": checks.get("verified", {}).get("ok", False),
        "verdict": checks.get("verified", {}).get("detail"),
        "pinned": record["placement"] == PLACEMENT_OF["pinned"],
        "placement_ok": checks.get("placement", {}).get("ok", True),
        "priority_ok": checks.get("priority", {}).get("ok", True),
        "cpus": record["cpus"],
    }


def _measured(data: Mapping[str, Any]) -> bool:
    """The run printed the time of its parallel part (positive: the rate
    divides by it)."""
    value = data.get("time_s")
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def run_once(cell: Cell, timeout_s: float, stop: StopRequest, extra_args: Sequence[str] = ()) -> Outcome | None:
    """Runs the cell's program once (process.Follow: its own process group,
    within the timeout) and reads its record.  None when a stop (Ctrl-C)
    was requested meanwhile."""
    ran = run_program(cell.argv() + list(extra_args), timeout_s, stop, env=cell.environment())
    if ran is None or isinstance(ran, str):
        return None if ran is None else Outcome("failed", ran, {}, 0.0)
    lines, wall, said, code = ran.lines, ran.wall_s, ran.said, ran.returncode
    if ran.timed_out:
        return Outcome("failed", f"timed out after {timeout_s:g} s", {}, wall)
    problem = None
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        try:
            records.append(schema.parse_record_line(line))
        except schema.RecordError as error:
            problem = f"invalid record (stdout line {number}): {error}"
    if code < 0 or (code not in (0, 1) and not problem):
        return Outcome("failed", ("usage error" if code == 2 else exit_text(code)) + (f": {said}" if said else ""),
                       {}, wall)
    if problem or len(records) != 1:
        return Outcome("failed", problem or f"{exit_text(code)} with {len(records)} records, expected one"
                       + (f": {said}" if said else ""), {}, wall)
    data = run_data(records[0])
    if data["status"] == "unsupported":
        return Outcome("unsupported", str(data["reason"]), data, wall)
    if data["status"] == "failed":
        return Outcome("failed", str(data["reason"]), data, wall)
    if not _measured(data):
        return Outcome("failed", f"the record has no positive time ({data['time_s']!r})", data, wall)
    if not cell.runs_on_preload(data.get("runtime")):
        # It measured libgomp, not the platform: never counted as this one's.
        return Outcome("failed", f"ran on {data.get('runtime')!s}, not on the preloaded {cell.preload} "
                       "(the preload did not take effect)", data, wall)
    if not data["verified"]:
        return Outcome("wrong", str(data["verdict"] or "wrong result"), data, wall)
    return Outcome("ok", None, data, wall)


def record_outcome(cell: Cell, outcome: Outcome) -> None:
    """Adds one run's outcome to its cell."""
    if outcome.kind == "unsupported" and not cell.times:
        cell.unsupported = outcome.reason
        return
    if outcome.kind in ("failed", "unsupported"):
        cell.failures.append(outcome.reason or "failed")
        if outcome.data and not cell.runs_on_preload(outcome.data.get("runtime")):
            cell.off_runtime.append(str(outcome.data.get("runtime")))
        cell.runs_done += 1
        return
    data = outcome.data
    cell.runs_done += 1
    time_s = float(data["time_s"])
    cell.times.append(time_s)
    cell.walls.append(outcome.wall_s)
    if outcome.kind == "wrong":
        cell.wrong.append(outcome.reason or "wrong result")
    error = data.get("error")
    if isinstance(error, (int, float)) and math.isfinite(error):
        cell.max_error = max(cell.max_error, float(error))
    if data.get("pinned") and not data.get("placement_ok"):
        cell.misplaced.append(f"workers started on CPUs {data.get('cpus')} and ended on {data.get('cpus_end')}")
    if not data.get("priority_ok", True):
        cell.misprioritized.append(f"workers ran with {data.get('policy')} nice {data.get('nice')}")
    cell.last = data


def run_study(
    plan: Plan,
    on_record: Callable[[Cell, dict[str, Any]], None],
    progress: JobProgress,
    extra_args: Sequence[str] = (),
) -> Result:
    """Runs every job in the plan's order (study.engine.drive).  A cell's
    records are made and handed to on_record (the store) as soon as its
    last run is done; the cells that cannot run are recorded first.
    Ctrl-C/SIGTERM: the run in progress is killed, every cell with at least
    one run is recorded with what it has, and the study stops."""
    return drive(plan.cells, plan.jobs, lambda cell, stop: run_once(cell, plan.timeout_s, stop, extra_args),
                 record_outcome, lambda cell: cell_records(cell, plan), on_record, progress,
                 unsupported=lambda cell: bool(cell.unsupported))


# ------------------------------------------------------------------ records


TIME_QUANTITY = "wall time of the parallel part (workers start to combined result)"
PROCESS_QUANTITY = "wall time of the whole process, as the runner saw it (start, runtime, parallel part, exit)"


def _params(cell: Cell) -> dict[str, str]:
    s = cell.scenario
    return {"arch": s.arch, "priority": s.priority, "affinity": s.affinity, "threads": str(cell.threads),
            "size": str(cell.size)}


def _cpus(cell: Cell, plan: Plan) -> list[int | None]:
    """Worker t's CPU: the t-th allowed CPU when pinned, else None (the OS's choice)."""
    if cell.scenario.affinity == "pinned" and cell.threads <= len(plan.cpus):
        return list(plan.cpus[: cell.threads])
    return [None] * cell.threads


def _checks(cell: Cell) -> list[dict[str, Any]]:
    measured = len(cell.times)
    bound = cell.last.get("error_bound")
    bound_text = "exactly" if bound == 0 else f"within the bound {bound:.3g}" if isinstance(bound, (int, float)) else ""
    checks = run_checks(measured, cell.wrong, cell.failures, cell.runs_done, wrong_what="runs returned a wrong result",
                        verified=f"every run's result matched the expected value {bound_text} "
                                 f"(largest error {cell.max_error:.3g})".replace("  ", " "),
                        verified_unmeasured=True)
    if cell.preload is not None:
        # A run on another runtime is not measured (run_once), and fails this.
        ok = not cell.off_runtime
        checks.append({"name": "runtime", "ok": ok, "value": float(measured),
                       "detail": f"every run reported {cell.preload.name} as its OpenMP runtime ({cell.preload})"
                       if ok else f"{len(cell.off_runtime)} of {cell.runs_done} runs did not run on the preloaded "
                       f"{cell.preload}; first: {cell.off_runtime[0]}"})
    if cell.scenario.affinity == "pinned":
        ok = not cell.misplaced
        checks.append({"name": "placement", "ok": ok, "value": None,
                       "detail": "every worker ran on its CPU in every run" if ok
                       else f"{len(cell.misplaced)} runs: {cell.misplaced[0]}"})
    if cell.scenario.priority != "normal":
        ok = not cell.misprioritized
        policy = cell.last.get("policy")
        nice = cell.last.get("nice")
        checks.append({"name": "priority", "ok": ok, "value": None,
                       "detail": f"every worker ran with {policy}, nice {nice}" if ok
                       else f"{len(cell.misprioritized)} runs: {cell.misprioritized[0]}"})
    return checks


def _extra(cell: Cell, plan: Plan) -> dict[str, Any]:
    last = cell.last
    extra: dict[str, Any] = {
        "study": STUDY,
        "kernel": cell.kernel.name,
        "platform": cell.scenario.platform,
        "scenario": plan.scenarios.index(cell.scenario) + 1 if cell.scenario in plan.scenarios else None,
        "size_unit": cell.kernel.size_unit,
        "rate_unit": cell.kernel.rate_unit,
        "runs_planned": plan.runs,
        "runs_done": cell.runs_done,
        "runs_failed": len(cell.failures),
        "seed": plan.seed,
        "program": cell.program.name if cell.program else None,
    }
    if cell.preload is not None:
        extra["preload"] = str(cell.preload)
    for key in ("runtime", "policy", "nice", "items", "result", "expected", "error_bound"):
        value = last.get(key)
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            extra[key] = value
    if last:
        extra["max_error"] = cell.max_error
    return extra


def _base_record(cell: Cell, plan: Plan, metric: str, unit: str, quantity: str) -> dict[str, Any]:
    return new_record(
        BENCHMARK_PREFIX + cell.kernel.name, cell.scenario.platform, metric=metric, params=_params(cell),
        placement=PLACEMENT_OF[cell.scenario.affinity], cpus=_cpus(cell, plan), unit=unit, quantity=quantity,
        extra=_extra(cell, plan),
    )


METRICS: tuple[str, ...] = ("time", "rate", "process")


def cell_records(cell: Cell, plan: Plan) -> list[dict[str, Any]]:
    """The cell's records, one per metric: time (s), rate (the kernel's
    unit), process (s). Samples: every run, in the order run."""
    specs = {
        "time": ("s", TIME_QUANTITY, cell.times, "monotonic_raw"),
        "rate": (cell.kernel.rate_unit, cell.kernel.quantity + " (size / time of the parallel part)",
                 [cell.size / t / 1e6 for t in cell.times], "monotonic_raw"),
        "process": ("s", PROCESS_QUANTITY, cell.walls, "monotonic"),
    }
    records = []
    for metric, (unit, quantity, samples, clock) in specs.items():
        record = _base_record(cell, plan, metric, unit, quantity)
        if cell.unsupported:
            record.update(status="unsupported", reason=cell.unsupported)
            records.append(schema.validate_record(record))
            continue
        records.append(cell_record(record, samples, clock=clock, runs=plan.runs, elapsed_s=sum(cell.walls),
                                   checks=lambda: _checks(cell), failures=cell.failures, runs_done=cell.runs_done,
                                   nothing="no run completed"))
    return records


def is_study_record(record: Mapping[str, Any]) -> bool:
    return str(record.get("benchmark", "")).startswith(BENCHMARK_PREFIX)


def dry_run_lines(plan: Plan) -> Iterable[str]:
    """What --dry-run prints: the scenarios, then one command line per cell."""
    import shlex

    for number, scenario in enumerate(plan.scenarios, start=1):
        yield f"# scenario {number}: {scenario.label}"
    for cell in plan.cells:
        if cell.unsupported:
            yield f"# unsupported: {cell.label}: {cell.unsupported}"
        else:
            preload = [f"LD_PRELOAD={cell.environment()['LD_PRELOAD']}"] if cell.preload else []
            yield shlex.join(["env", *preload, *cell.argv()] if preload else cell.argv())
