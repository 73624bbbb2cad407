"""`threadlab crosscheck`: three figures of the primitives suite beside
naive, independent measurements of the same things, in one run.

The naive side is threadlab-crosscheck (native/crosscheck/crosscheck.c),
which shares no code with the timing core: another clock
(CLOCK_MONOTONIC), fixed iteration counts, the median of 7 repetitions,
and for the context switch the kernel's own count of switches
(getrusage) as the divisor.  Rounds alternate the two sides so that drift
of the machine affects both alike; the ratio is suite / naive, each the
median over the rounds.
"""

from __future__ import annotations

import json
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from threadlab import native, process, stats, units
from threadlab.errors import ThreadlabError
from threadlab.native import PointOptions
from threadlab.runner import Point, StopRequest, run_point

NAIVE_PROGRAM = "threadlab-crosscheck"
_NAIVE_TIMEOUT_S = 300.0
_POINT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Figure:
    label: str
    benchmark: str
    placement: str | None
    params: dict[str, str]
    naive_key: str  # the field of the naive program's JSON


FIGURES: tuple[Figure, ...] = (
    Figure("same-CPU yield switch", "pthread.yield.pingpong", "same-cpu", {"order": "interleaved"}, "yield_switch_ns"),
    Figure("uncontended mutex lock+unlock", "pthread.mutex.lockunlock", None,
           {"kind": "normal", "process": "multi-threaded"}, "mutex_lockunlock_ns"),
    Figure("pthread create+join", "pthread.create.join", "unbound", {}, "create_join_ns"),
)


@dataclass
class FigureResult:
    figure: Figure
    suite_ns: list[float]
    naive_ns: list[float]

    @property
    def suite_median(self) -> float:
        return statistics.median(self.suite_ns)

    @property
    def naive_median(self) -> float:
        return statistics.median(self.naive_ns)

    @property
    def ratio(self) -> float:
        return self.suite_median / self.naive_median

    def as_dict(self) -> dict[str, Any]:
        return {"figure": self.figure.label, "benchmark": self.figure.benchmark,
                "placement": self.figure.placement or "none", "params": self.figure.params,
                "suite_ns": self.suite_ns, "naive_ns": self.naive_ns,
                "suite_median_ns": self.suite_median, "naive_median_ns": self.naive_median, "ratio": self.ratio}


def _find_naive_program(programs: Sequence[Path]) -> Path:
    for directory in native.native_dirs():
        candidate = directory / NAIVE_PROGRAM
        if candidate.is_file():
            return candidate
    where = ", ".join(str(d) for d in native.native_dirs())
    raise ThreadlabError(f"{NAIVE_PROGRAM} not found (looked in {where}); build it with `make build`")


def _naive_round(program: Path, cpu: int) -> dict[str, float]:
    try:
        done = process.run([program, str(cpu)], timeout_s=_NAIVE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ThreadlabError(f"{program.name} did not finish within {_NAIVE_TIMEOUT_S:g} s") from None
    except OSError as error:
        raise ThreadlabError(f"cannot start {program}: {error.strerror}") from None
    if done.returncode != 0:
        raise ThreadlabError(f"{program.name} failed (exit {done.returncode}): {done.stderr.strip()}")
    result = json.loads(done.stdout)
    # The divisor is the kernel's count of switches; if it is far from the
    # number of yields, the threads did not alternate and the figure is void.
    if result["switches_counted_min"] < 0.9 * result["yields"]:
        raise ThreadlabError(f"{program.name}: the kernel counted {result['switches_counted_min']} switches for "
                             f"{result['yields']} yields: the yielding threads did not alternate")
    return result


def _suite_median(point: Point) -> float:
    records = list(run_point(point, PointOptions(), _POINT_TIMEOUT_S, StopRequest()))
    if len(records) != 1 or records[0]["status"] != "ok":
        reason = records[0]["reason"] if records else "no record"
        raise ThreadlabError(f"{point.label}: {reason}")
    failed = [c["name"] for c in records[0]["checks"] if not c["ok"]]
    if failed:
        raise ThreadlabError(f"{point.label}: check(s) {', '.join(failed)} failed, the figure is void")
    summary = stats.record_summary(records[0])
    assert summary is not None
    return summary.median


def run(rounds: int, progress: Callable[[str], None]) -> list[FigureResult]:
    programs = native.discover_programs()
    by_name = {info.benchmark: info for info in native.catalog(programs)}
    program_paths = {p.name: p for p in programs}
    naive = _find_naive_program(programs)
    env = native.program_env(program_paths[by_name[FIGURES[0].benchmark].program])
    same_cpu = int(env["topology"]["allowed_cpus"][0])  # the suite's same-cpu CPU

    points = []
    for index, figure in enumerate(FIGURES):
        if figure.benchmark not in by_name:
            raise ThreadlabError(f"benchmark {figure.benchmark} is not in the native build")
        info = by_name[figure.benchmark]
        points.append(Point(index, info, program_paths[info.program], figure.placement, figure.params))

    results = [FigureResult(figure, [], []) for figure in FIGURES]
    for r in range(rounds):
        progress(f"round {r + 1}/{rounds}: naive measurements")
        values = _naive_round(naive, same_cpu)
        for result, point in zip(results, points):
            result.naive_ns.append(float(values[result.figure.naive_key]))
            progress(f"round {r + 1}/{rounds}: {point.label}")
            result.suite_ns.append(_suite_median(point))
    return results


def format_table(results: Sequence[FigureResult]) -> str:
    header = f"{'figure':32} {'suite (median)':>15} {'naive (median)':>15} {'suite/naive':>12}  per-round ratios"
    lines = [header]
    for result in results:
        per_round = " ".join(f"{s / n:.2f}" for s, n in zip(result.suite_ns, result.naive_ns))
        lines.append(f"{result.figure.label:32} {units.format_value(result.suite_median, 'ns'):>15} "
                     f"{units.format_value(result.naive_median, 'ns'):>15} {result.ratio:>12.3f}  {per_round}")
    lines.append("suite: the benchmark's median sample (TSC or monotonic_raw, calibrated, adaptive); naive: "
                 "threadlab-crosscheck (CLOCK_MONOTONIC, fixed counts, median of 7; the yield switch divided by "
                 "the kernel's count of context switches)")
    return "\n".join(lines)
