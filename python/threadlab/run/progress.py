"""The live progress of a run, on stderr: a sweep's (Progress) and a
study's (JobProgress), on one base (LiveLine).

On a terminal: one line redrawn in place (item i/N, what is being measured,
elapsed time, estimated time left).  Elsewhere (CI logs, pipes): a sweep
prints one line per finished benchmark, a study one every 10% of its
runs, plus a line for each failure at once, so a log stays short but
shows where a run is.

Names and failure reasons are data (a program's stderr): their control
characters are shown as escapes.  A stderr that was closed ends the
progress, not the run: the measurements go on into the store.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from typing import Any, Sequence, TextIO

from threadlab.output.sanitize import printable, printable_lines
from threadlab.output.units import format_duration
from threadlab.run.runner import Point, ProgressSink

_REDRAW_S = 1.0


def write_or_give_up(stream: TextIO, text: str) -> bool:
    """Writes and flushes progress; False when the stream is closed (a
    closed stderr ends the progress, not the run)."""
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        return False
    return True


class LiveLine:
    """A line redrawn in place on a terminal, with messages above it; the
    elapsed time and the estimate of what is left, from items done of
    `total`.  Subclasses say what the line shows (live_text)."""

    def __init__(self, total: int, stream: TextIO | None, enabled: bool) -> None:
        self.total = total
        self._stream = stream if stream is not None else sys.stderr
        self._enabled = enabled and total > 0
        self._live = self._enabled and self._stream.isatty()
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self.done = 0

    def _elapsed(self) -> float:
        return time.monotonic() - self._started

    def _eta(self) -> str:
        if self.done == 0:
            return "?"
        return format_duration(self._elapsed() / self.done * (self.total - self.done))

    def _counter(self, number: int) -> str:
        width = len(str(self.total))
        return f"[{number:>{width}}/{self.total}]"

    def live_text(self) -> str | None:
        """What the live line shows now (None: nothing yet)."""
        return None

    def _write_live(self) -> None:
        text = self.live_text()
        if text is None:
            return
        width = shutil.get_terminal_size((100, 20)).columns - 1
        self._write("\r" + text[:width] + "\x1b[K")

    def _clear_live(self) -> None:
        self._write("\r\x1b[K")

    def _write(self, text: str) -> None:
        if self._enabled and not write_or_give_up(self._stream, text):
            self._enabled = self._live = False

    def message(self, text: str) -> None:
        """A line of its own, above the live line."""
        if not self._enabled:
            return
        with self._lock:
            if self._live:
                self._clear_live()
            self._write(printable_lines(text) + "\n")
            if self._live:
                self._write_live()

    def close(self) -> None:
        """Removes the live line (before the tables)."""
        if self._live:
            with self._lock:
                self._clear_live()


class Progress(LiveLine, ProgressSink):
    """A sweep's progress: redrawn every second on a terminal, so elapsed
    time keeps moving during a long point."""

    def __init__(self, points: Sequence[Point], stream: TextIO | None = None, enabled: bool = True) -> None:
        super().__init__(len(points), stream, enabled)
        self._points = points
        self._current: Point | None = None
        self._group_counts: dict[str, int] = {}
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self._live:
            self._ticker = threading.Thread(target=self._tick, name="threadlab-progress", daemon=True)
            self._ticker.start()

    def live_text(self) -> str | None:
        if self._current is None:
            return None
        return (f"{self._counter(self._current.index + 1)} {printable(self._current.label)}  "
                f"{format_duration(self._elapsed())} elapsed, ETA {self._eta()}")

    def _tick(self) -> None:
        while not self._stop.wait(_REDRAW_S):
            with self._lock:
                self._write_live()

    def point_started(self, point: Point) -> None:
        if not self._enabled:
            return
        with self._lock:
            self._current = point
            if self._live:
                self._write_live()

    def point_finished(self, point: Point, records: list[dict[str, Any]]) -> None:
        if not self._enabled:
            return
        self.done += 1
        for record in records:
            self._group_counts[record["status"]] = self._group_counts.get(record["status"], 0) + 1
            if record["status"] == "failed":
                self.message(f"threadlab: {point.label}: FAILED: {record['reason']}")
        last_of_benchmark = point.index + 1 == len(self._points) or (
            self._points[point.index + 1].info.benchmark != point.info.benchmark
        )
        if last_of_benchmark:
            if not self._live:
                counts = ", ".join(f"{n} {status}" for status, n in sorted(self._group_counts.items()))
                self.message(
                    f"{self._counter(self.done)} {point.info.benchmark}: {counts or 'no records'} "
                    f"({format_duration(self._elapsed())} elapsed, ETA {self._eta()})"
                )
            self._group_counts = {}

    def close(self) -> None:
        """Stops redrawing and removes the live line (before the table)."""
        self._stop.set()
        if self._ticker:
            self._ticker.join()
        super().close()


class JobProgress(LiveLine):
    """A study's progress: on a terminal one line redrawn after every run;
    otherwise a line every 10% of the runs.  `noun`: what a run is called
    ("runs", "experiments")."""

    def __init__(self, total: int, enabled: bool = True, stream: TextIO | None = None, noun: str = "runs") -> None:
        super().__init__(total, stream, enabled)
        self.noun = noun
        self._label = ""
        self._next_report = 0.1

    def live_text(self) -> str | None:
        if not self.done:
            return None
        return f"{self._counter(self.done)} {printable(self._label)}  {format_duration(self._elapsed())} elapsed, " \
               f"ETA {self._eta()}"

    def run_done(self, label: str, kind: str, reason: str | None) -> None:
        """A run of the cell `label` ended: kind 'ok', 'wrong', 'failed',
        'unsupported'."""
        if not self._enabled:
            return
        self.done += 1
        self._label = label
        if kind in ("failed", "wrong"):
            self.message(f"threadlab: {label}: {kind.upper()}: {reason}")
        if self._live:
            with self._lock:
                self._write_live()
        elif self.done >= self._next_report * self.total or self.done == self.total:
            self._next_report += 0.1
            self.message(f"{self._counter(self.done)} {self.noun} done ({format_duration(self._elapsed())} "
                         f"elapsed, ETA {self._eta()})")
