"""Running a sweep: points, one subprocess each, records as they arrive.

Each data point is its own process in its own process group (so a hang,
or a benchmark's forked helpers, can be killed as a whole, and a Ctrl-C at
the terminal reaches threadlab alone), started by process.start: it dies
with threadlab and has a time limit of its own.  Its stdout is read line by line as
it comes; each line is validated and handed on at once, so the store holds
it even if the run dies right after.

Whatever goes wrong with a point becomes a record too, status 'failed',
with the reason in words: a timeout, a crash, a usage error, a line that is
not a valid record.  The run then goes on with the next point.
"""

from __future__ import annotations

import itertools
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from threadlab.native import process
from threadlab.native.process import StopRequest, exit_text, signal_name
from threadlab.native.protocol import BenchmarkInfo, PointOptions, point_argv
from threadlab.records import schema
from threadlab.records.record import new_record

_EXTRA_TEXT_LIMIT = 500


@dataclass(frozen=True)
class Point:
    """One data point of the sweep."""

    index: int
    info: BenchmarkInfo
    program: Path
    placement: str | None  # None: the benchmark takes no placement
    params: dict[str, str]

    @property
    def record_placement(self) -> str:
        return self.placement or "none"

    @property
    def label(self) -> str:
        parts = [self.info.benchmark]
        if self.placement:
            parts.append(self.placement)
        parts += [f"{name}={value}" for name, value in self.params.items()]
        return " ".join(parts)

    def argv(self, options: PointOptions) -> list[str]:
        return point_argv(self.program, self.info.benchmark, self.placement, self.params, options, self.info.suite)


def _param_combinations(info: BenchmarkInfo, quick: bool) -> list[dict[str, str]]:
    axes = []
    for param in info.params:
        values = (param.quick_values if quick else param.values) or (param.default,)
        axes.append([(param.name, value) for value in values])
    return [dict(combo) for combo in itertools.product(*axes)]


def _placements(info: BenchmarkInfo, requested: Sequence[str] | None) -> list[str | None]:
    if info.threads == 0:
        return [None]
    if requested:
        # The user's list as given: a placement the benchmark cannot do is
        # asked anyway, and comes back as an explicit 'unsupported' record.
        return list(requested)
    return list(info.default_placements or info.placements)


def expand_sweep(
    benchmarks: Sequence[BenchmarkInfo], programs: dict[str, Path], placements: Sequence[str] | None, quick: bool
) -> list[Point]:
    """Every point, benchmark by benchmark, parameters, then placement; the
    points that differ only in their model (one benchmark, one program per
    model: the omp suite's runtimes, the models suite's thread models) run
    one after the other, in the order of the benchmarks.  A sweep that ran
    one model's points, then the next model's, put the machine's drift
    between them: this VM switches between a fast and a slow cache
    hand-off state for minutes at a time, and a whole runtime's points
    fell in the slow one (barrier 490 ns against libgomp's 264 in one run).
    Side by side, a switch falls on one group of points instead."""
    groups: dict[tuple[Any, ...], list[tuple[BenchmarkInfo, str | None, dict[str, str]]]] = {}
    for info in benchmarks:
        for params in _param_combinations(info, quick):
            for placement in _placements(info, placements):
                key = (info.benchmark, placement, tuple(params.items()))
                groups.setdefault(key, []).append((info, placement, params))
    points: list[Point] = []
    for members in groups.values():
        for info, placement, params in members:
            points.append(Point(len(points), info, programs[info.program], placement, params))
    return points


# ---------------------------------------------------------- failed records


def failed_record(point: Point, reason: str, **extra: Any) -> dict[str, Any]:
    """A valid 'failed' record for a point whose program did not produce one."""
    clean_extra = {
        key: (value[:_EXTRA_TEXT_LIMIT] if isinstance(value, str) else value)
        for key, value in {"produced_by": "threadlab", **extra}.items()
        if value is not None
    }
    return new_record(
        point.info.benchmark, point.info.model, metric="time", params=point.params,
        placement=point.record_placement, cpus=[], unit=point.info.unit, quantity=point.info.quantity or "time",
        status="failed", reason=reason, extra=clean_extra,
    )


def _check_belongs(point: Point, record: dict[str, Any]) -> None:
    """A valid record must also be the one asked for."""
    if record["benchmark"] != point.info.benchmark:
        raise schema.RecordError(f"field 'benchmark': {record['benchmark']} but {point.info.benchmark} was run")
    if record["model"] != point.info.model:
        raise schema.RecordError(f"field 'model': {record['model']} but {point.info.model} was run")
    if record["placement"] != point.record_placement:
        raise schema.RecordError(f"field 'placement': {record['placement']} but {point.record_placement} was asked")


# --------------------------------------------------------- one data point


def run_point(point: Point, options: PointOptions, timeout_s: float, stop: StopRequest) -> Iterator[dict[str, Any]]:
    """Records of one point, each as soon as its line is complete: the
    program's own (validated), plus a synthesized 'failed' one when the
    program timed out, crashed, or broke the protocol.  Yields nothing more
    once a stop is requested."""
    schema.prepare()  # not while the point measures
    try:
        child = process.Follow(point.argv(options), timeout_s, stop)
    except OSError as error:
        yield failed_record(point, f"cannot start {point.program.name}: {error.strerror}")
        return
    statuses: list[str] = []
    with child:
        for number, line in enumerate(child.lines(), start=1):
            try:
                record = schema.parse_record_line(line)
                _check_belongs(point, record)
            except schema.RecordError as error:
                record = failed_record(point, f"invalid record (stdout line {number}): {error}", invalid_line=line)
            statuses.append(record["status"])
            yield record
        if stop.requested:
            return
        if child.timed_out:
            why = " (the program was stopped by a signal, e.g. SIGSTOP, and never continued)" if child.was_stopped else ""
            yield failed_record(point, f"timed out after {timeout_s:g} s{why}", stderr=child.stderr_summary())
            return
        assert child.returncode is not None
        reason = _exit_problem(child.returncode, statuses, child.stderr_summary())
        if reason:
            yield failed_record(point, reason, exit_status=child.returncode, stderr=child.stderr_summary())


def _exit_problem(returncode: int, statuses: list[str], last_stderr: str | None) -> str | None:
    """Why the point failed although (or because) its records say otherwise;
    None when the exit status agrees with the records (protocol: 0 = records
    emitted, 1 = a failed record emitted, 2 = usage error)."""
    said = f": {last_stderr}" if last_stderr else ""
    if returncode in (-signal.SIGALRM, -signal.SIGXCPU):
        return f"killed by {signal_name(-returncode)}: its own time limit ran out (docs/security.md){said}"
    if returncode < 0:
        return f"{exit_text(returncode)}{said}"
    if returncode == 0 and statuses:
        return None
    if returncode == 1 and "failed" in statuses:
        return None
    if returncode == 0:
        return "exited without emitting a record" + said
    if returncode == 2:
        return f"usage error{said}"
    if returncode == 1:
        return f"exited with status 1 without a failed record{said}"
    return f"{exit_text(returncode)}{said}"


# ------------------------------------------------------------- the sweep


@dataclass
class Result:
    """What a loop of child runs gives back: a sweep's points, a study's
    runs (study.engine)."""

    records: list[dict[str, Any]]
    interrupted_by: int | None  # the signal that stopped the loop, if any
    done: int  # points (runs) that ran to their end


class ProgressSink:
    """What the runner reports to; progress.Progress implements it."""

    def point_started(self, point: Point) -> None: ...

    def point_finished(self, point: Point, records: list[dict[str, Any]]) -> None: ...


def run_sweep(
    points: Sequence[Point],
    options: PointOptions,
    timeout_s: float | Callable[[Point], float],
    on_record: Callable[[Point, dict[str, Any]], None],
    progress: ProgressSink,
) -> Result:
    """Runs the points in order; on_record stores each record as it comes.
    SIGINT/SIGTERM stop the sweep after the current point's stored records.
    timeout_s: one limit for every point, or a function giving each point's
    (suites differ: a JMH point of the seed's method takes minutes)."""
    stop = StopRequest()
    restore = stop.install()
    records: list[dict[str, Any]] = []
    done = 0
    try:
        for point in points:
            if stop.requested:
                break
            progress.point_started(point)
            point_records: list[dict[str, Any]] = []
            limit = timeout_s(point) if callable(timeout_s) else timeout_s
            for record in run_point(point, options, limit, stop):
                on_record(point, record)
                point_records.append(record)
            records += point_records
            if stop.requested:
                break
            done += 1
            progress.point_finished(point, point_records)
    finally:
        restore()
    return Result(records=records, interrupted_by=stop.signal, done=done)
