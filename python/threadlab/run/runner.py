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
import re
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from threadlab.native import protocol as native
from threadlab.native import process
from threadlab.records import schema
from threadlab.native.protocol import BenchmarkInfo, PointOptions
from threadlab.native.process import kill_group
from threadlab.records.record import new_record

# After the program exits, its forked helpers may hold stdout open; wait
# this long for EOF before killing the group.
_EXIT_GRACE_S = 2.0
# How often the read loop wakes up to check the deadline and Ctrl-C.
_POLL_S = 0.25
# stderr kept for failure reasons: the first and the last bytes.
_STDERR_KEEP_BYTES = 8192
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
        return native.point_argv(
            self.program, self.info.benchmark, self.placement, self.params, options, self.info.suite
        )


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
    """Every point, benchmark by benchmark, parameters, then placement."""
    points: list[Point] = []
    for info in benchmarks:
        for params in _param_combinations(info, quick):
            for placement in _placements(info, placements):
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


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# ---------------------------------------------------------------- Ctrl-C


class StopRequest:
    """Set by SIGINT/SIGTERM: kills the point being measured at once and tells
    the runner to stop after storing what it has.  A second Ctrl-C raises
    KeyboardInterrupt, for the impatient."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.child: subprocess.Popen[bytes] | None = None

    @property
    def requested(self) -> bool:
        return self.signal is not None

    def handle(self, signum: int, _frame: object) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signal = signum
        kill_group(self.child)

    def install(self) -> Callable[[], None]:
        """Installs the handlers; returns a function restoring the old ones."""
        old = {sig: signal.signal(sig, self.handle) for sig in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for sig, handler in old.items():
                signal.signal(sig, handler)

        return restore


# --------------------------------------------------------- one data point


# A line of stderr that says what went wrong better than the last line does
# (a sanitizer report ends with stack frames and a summary).
_HEADLINE = re.compile(r"Sanitizer:|runtime error:|error:|Assertion .* failed|panic", re.IGNORECASE)


@dataclass
class _Output:
    stdout: bytearray = field(default_factory=bytearray)
    stderr_head: bytearray = field(default_factory=bytearray)
    stderr_tail: bytearray = field(default_factory=bytearray)
    line_number: int = 0

    def add_stderr(self, data: bytes) -> None:
        room = _STDERR_KEEP_BYTES - len(self.stderr_head)
        if room > 0:
            self.stderr_head += data[:room]
        self.stderr_tail += data
        del self.stderr_tail[:-_STDERR_KEEP_BYTES]

    def stderr_summary(self) -> str | None:
        """The first line naming an error, else the last line of stderr."""
        head = self.stderr_head.decode("utf-8", "replace").splitlines()
        for line in head:
            if _HEADLINE.search(line):
                return line.strip()
        lines = [line.strip() for line in self.stderr_tail.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1] if lines else None


def run_point(point: Point, options: PointOptions, timeout_s: float, stop: StopRequest) -> Iterator[dict[str, Any]]:
    """Records of one point, each as soon as its line is complete: the
    program's own (validated), plus a synthesized 'failed' one when the
    program timed out, crashed, or broke the protocol.  Yields nothing more
    once a stop is requested."""
    argv = point.argv(options)
    try:
        child = process.start(argv, timeout_s=timeout_s, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    except OSError as error:
        yield failed_record(point, f"cannot start {point.program.name}: {error.strerror}")
        return
    stop.child = child
    try:
        yield from _follow(point, child, timeout_s, stop)
    finally:
        kill_group(child)
        child.wait()
        for pipe in (child.stdout, child.stderr):
            if pipe:
                pipe.close()
        stop.child = None


def _follow(
    point: Point, child: subprocess.Popen[bytes], timeout_s: float, stop: StopRequest
) -> Iterator[dict[str, Any]]:
    out = _Output()
    statuses: list[str] = []
    started = time.monotonic()
    deadline = started + timeout_s
    exited_at: float | None = None
    timed_out = was_stopped = False
    selector = selectors.DefaultSelector()
    assert child.stdout and child.stderr
    selector.register(child.stdout, selectors.EVENT_READ, "stdout")
    selector.register(child.stderr, selectors.EVENT_READ, "stderr")
    try:
        while selector.get_map():
            now = time.monotonic()
            if stop.requested:
                return
            if child.poll() is not None:
                # The program is done; helpers it forked may still hold the
                # pipes.  Give them a moment, then kill the group below.  The
                # point is judged by the program's own exit, not as a hang.
                exited_at = exited_at or now
                if now - exited_at >= _EXIT_GRACE_S:
                    break
            elif now >= deadline:
                timed_out = True
                was_stopped = process.stopped(child.pid)
                break
            wait = _POLL_S if exited_at else min(_POLL_S, deadline - now)
            for key, _ in selector.select(wait):
                data = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                if not data:
                    selector.unregister(key.fileobj)
                elif key.data == "stderr":
                    out.add_stderr(data)
                else:
                    out.stdout += data
                    for record in _complete_lines(point, out):
                        statuses.append(record["status"])
                        yield record
    finally:
        selector.close()
    if not timed_out and not stop.requested and child.poll() is None:
        # The output ended before the program: a program may close its
        # streams on the way out (GNU timeout does, a launcher wrapped in it
        # then), and killing it in between would pass for a crash.
        try:
            child.wait(timeout=max(0.0, min(_EXIT_GRACE_S, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            pass
    kill_group(child)
    child.wait()
    if stop.requested:
        return
    if timed_out:
        why = " (the program was stopped by a signal, e.g. SIGSTOP, and never continued)" if was_stopped else ""
        yield failed_record(point, f"timed out after {timeout_s:g} s{why}", stderr=out.stderr_summary())
        return
    if out.stdout.strip():  # a last line without its newline: the program died writing it
        out.stdout += b"\n"
        for record in _complete_lines(point, out):
            statuses.append(record["status"])
            yield record
    reason = _exit_problem(child.returncode, statuses, out.stderr_summary())
    if reason:
        yield failed_record(point, reason, exit_status=child.returncode, stderr=out.stderr_summary())


def _complete_lines(point: Point, out: _Output) -> Iterator[dict[str, Any]]:
    while (end := out.stdout.find(b"\n")) >= 0:
        line = out.stdout[:end].decode("utf-8", "replace").strip()
        del out.stdout[: end + 1]
        if not line:
            continue
        out.line_number += 1
        try:
            record = schema.parse_record_line(line)
            _check_belongs(point, record)
        except schema.RecordError as error:
            yield failed_record(
                point, f"invalid record (stdout line {out.line_number}): {error}", invalid_line=line
            )
            continue
        yield record


def _exit_problem(returncode: int, statuses: list[str], last_stderr: str | None) -> str | None:
    """Why the point failed although (or because) its records say otherwise;
    None when the exit status agrees with the records (protocol: 0 = records
    emitted, 1 = a failed record emitted, 2 = usage error)."""
    said = f": {last_stderr}" if last_stderr else ""
    if returncode in (-signal.SIGALRM, -signal.SIGXCPU):
        return f"killed by {signal_name(-returncode)}: its own time limit ran out (docs/security.md){said}"
    if returncode < 0:
        return f"killed by {signal_name(-returncode)}{said}"
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
    return f"exited with status {returncode}{said}"


# ------------------------------------------------------------- the sweep


@dataclass
class SweepResult:
    records: list[dict[str, Any]]
    interrupted_by: int | None  # the signal that stopped the sweep, if any
    points_done: int

    @property
    def failed_records(self) -> int:
        return sum(1 for record in self.records if record["status"] == "failed")


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
) -> SweepResult:
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
    return SweepResult(records=records, interrupted_by=stop.signal, points_done=done)
