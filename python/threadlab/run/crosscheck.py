"""`threadlab crosscheck`: figures of a suite beside naive, independent
measurements of the same things, in one run: three of the primitives suite
(the default), the mpi suite's ping-pong latency, the omp suite's parallel
region and barrier.

The naive side is threadlab-crosscheck (native/crosscheck/crosscheck.c),
which shares no code with the timing core: another clock
(CLOCK_MONOTONIC), fixed iteration counts, the median of 7 repetitions,
and for the context switch the kernel's own count of switches
(getrusage) as the divisor.  Rounds alternate the two sides so that drift
of the machine affects both alike; the ratio is suite / naive, each the
median over the rounds.  The mpi and omp suites have naive programs of
their own (threadlab-crosscheck-mpi, threadlab-crosscheck-omp), as
independent from the timing core.
"""

from __future__ import annotations

import functools
import json
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from threadlab.analysis import stats
from threadlab.errors import ThreadlabError
from threadlab.native import discovery, launcher, process
from threadlab.native.process import StopRequest
from threadlab.native.protocol import PointOptions, catalog, program_env
from threadlab.output import units
from threadlab.run.runner import Point, run_point

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
    model: str | None = None  # the program's model, when several offer the benchmark
    metric: str = "time"  # the record of the point that holds the figure


FIGURES: tuple[Figure, ...] = (
    Figure("same-CPU yield switch", "pthread.yield.pingpong", "same-cpu", {"order": "interleaved"}, "yield_switch_ns"),
    Figure("uncontended mutex lock+unlock", "pthread.mutex.lockunlock", None,
           {"kind": "normal", "process": "multi-threaded"}, "mutex_lockunlock_ns"),
    Figure("pthread create+join", "pthread.create.join", "unbound", {}, "create_join_ns"),
)
# The mpi and omp suites: their naive programs, the figures, the suite's
# words for the table's last line.
MPI_NAIVE_PROGRAM = "threadlab-crosscheck-mpi"
MPI_FIGURES: tuple[Figure, ...] = (
    Figure("MPI ping-pong one-way, 8 bytes", "mpi.pingpong", "unbound",
           {"size": "8", "pair": "intra-node", "transport": "default"}, "one_way_ns_median", "mpi", "latency"),
)
OMP_NAIVE_PROGRAM = "threadlab-crosscheck-omp"
OMP_THREADS = 2
OMP_FIGURES: tuple[Figure, ...] = (
    Figure(f"OpenMP parallel region, {OMP_THREADS} threads", "omp.sync", "unbound",
           {"construct": "parallel", "threads": str(OMP_THREADS)}, "parallel_ns_median", "gomp", "overhead"),
    Figure(f"OpenMP barrier, {OMP_THREADS} threads", "omp.sync", "unbound",
           {"construct": "barrier", "threads": str(OMP_THREADS)}, "barrier_ns_median", "gomp", "overhead"),
)
CROSS_SUITES: tuple[str, ...] = ("primitives", "mpi", "omp")
_NAIVE_TEXT = {
    "primitives": "threadlab-crosscheck (CLOCK_MONOTONIC, fixed counts, median of 7; the yield switch divided by "
                  "the kernel's count of context switches)",
    "mpi": "threadlab-crosscheck-mpi (CLOCK_MONOTONIC, 2,000 round trips, median of 21)",
    "omp": "threadlab-crosscheck-omp (CLOCK_MONOTONIC, 2,000 empty regions and barriers, median of 21, libgomp)",
}


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


def _naive_round(argv: Sequence[str], program: Path) -> dict[str, Any]:
    try:
        done = process.run(list(argv), timeout_s=_NAIVE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ThreadlabError(f"{program.name} did not finish within {_NAIVE_TIMEOUT_S:g} s") from None
    except OSError as error:
        raise ThreadlabError(f"cannot start {program}: {error.strerror}") from None
    if done.returncode != 0:
        raise ThreadlabError(f"{program.name} failed (exit {done.returncode}): {done.stderr.strip()}")
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise ThreadlabError(f"{program.name} printed no JSON object") from None
    return result


def _naive_primitives(program: Path, cpu: int) -> dict[str, Any]:
    result = _naive_round([str(program), str(cpu)], program)
    # The divisor is the kernel's count of switches; if it is far from the
    # number of yields, the threads did not alternate and the figure is void.
    if result["switches_counted_min"] < 0.9 * result["yields"]:
        raise ThreadlabError(f"{program.name}: the kernel counted {result['switches_counted_min']} switches for "
                             f"{result['yields']} yields: the yielding threads did not alternate")
    return result


def _naive_checked(argv: Sequence[str], program: Path, errors_key: str) -> dict[str, Any]:
    """A naive program of the mpi or omp suite, whose own check must pass."""
    result = _naive_round(argv, program)
    if result.get(errors_key):
        raise ThreadlabError(f"{program.name}: {errors_key} {result[errors_key]}: the figure is void")
    return result


def _suite_median(point: Point, metric: str = "time", options: PointOptions | None = None) -> float:
    records = [r for r in run_point(point, options or PointOptions(), _POINT_TIMEOUT_S, StopRequest())
               if r["metric"] == metric or r["status"] != "ok"]
    if len(records) != 1 or records[0]["status"] != "ok":
        reason = records[0]["reason"] if records else "no record"
        raise ThreadlabError(f"{point.label}: {reason}")
    failed = [c["name"] for c in records[0]["checks"] if not c["ok"]]
    if failed:
        raise ThreadlabError(f"{point.label}: check(s) {', '.join(failed)} failed, the figure is void")
    summary = stats.record_summary(records[0])
    assert summary is not None
    return summary.median


def run(rounds: int, progress: Callable[[str], None], suite: str = "primitives",
        launcher_words: Sequence[str] | None = None) -> list[FigureResult]:
    """suite: primitives, mpi or omp; launcher_words: the mpi suite's
    launcher (default: the build's, with 2 ranks, the pair measured)."""
    figures = {"primitives": FIGURES, "mpi": MPI_FIGURES, "omp": OMP_FIGURES}[suite]
    naive = discovery.find_one({"primitives": NAIVE_PROGRAM, "mpi": MPI_NAIVE_PROGRAM, "omp": OMP_NAIVE_PROGRAM}[suite])
    programs = discovery.benchmark_programs()
    offered = catalog(programs)
    program_paths = {p.name: p for p in programs}

    points = []
    for index, figure in enumerate(figures):
        info = next((i for i in offered if i.benchmark == figure.benchmark and figure.model in (None, i.model)), None)
        if info is None:
            model = f" (model {figure.model})" if figure.model else ""
            raise ThreadlabError(f"benchmark {figure.benchmark}{model} is not in the native build")
        points.append(Point(index, info, program_paths[info.program], figure.placement, figure.params))

    options = PointOptions()
    measure_naive: Callable[[], dict[str, Any]]
    if suite == "primitives":
        env = program_env(points[0].program)
        same_cpu = int(env["topology"]["allowed_cpus"][0])  # the suite's same-cpu CPU
        measure_naive = functools.partial(_naive_primitives, naive, same_cpu)
    elif suite == "mpi":
        words = list(launcher_words or launcher.default(points[0].program, ranks=2))
        options = PointOptions(launcher=tuple(words))
        measure_naive = functools.partial(_naive_checked, [*words, str(naive), "8"], naive, "echo_errors")
    else:
        measure_naive = functools.partial(_naive_checked, [str(naive), str(OMP_THREADS)], naive, "team_errors")

    results = [FigureResult(figure, [], []) for figure in figures]
    for r in range(rounds):
        progress(f"round {r + 1}/{rounds}: naive measurements")
        values = measure_naive()
        for result, point in zip(results, points):
            result.naive_ns.append(float(values[result.figure.naive_key]))
            progress(f"round {r + 1}/{rounds}: {point.label}")
            result.suite_ns.append(_suite_median(point, result.figure.metric, options))
    return results


def format_table(results: Sequence[FigureResult], suite: str = "primitives") -> str:
    header = f"{'figure':32} {'suite (median)':>15} {'naive (median)':>15} {'suite/naive':>12}  per-round ratios"
    lines = [header]
    for result in results:
        per_round = " ".join(f"{s / n:.2f}" for s, n in zip(result.suite_ns, result.naive_ns))
        lines.append(f"{result.figure.label:32} {units.format_value(result.suite_median, 'ns'):>15} "
                     f"{units.format_value(result.naive_median, 'ns'):>15} {result.ratio:>12.3f}  {per_round}")
    lines.append("suite: the benchmark's median sample (TSC or monotonic_raw, calibrated, adaptive); naive: "
                 f"{_NAIVE_TEXT[suite]}")
    return "\n".join(lines)
