"""The live progress of a sweep, on stderr.

On a terminal: one line redrawn in place every second (point i/N, what is
being measured, elapsed time, estimated time left).  Elsewhere (CI logs,
pipes): one line per finished benchmark, plus a line for each failed
point at once, so a log stays short but shows where a run is.

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

from threadlab.run.runner import Point, ProgressSink
from threadlab.output.sanitize import printable, printable_lines
from threadlab.output.units import format_duration

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


class Progress(ProgressSink):
    def __init__(self, points: Sequence[Point], stream: TextIO | None = None, enabled: bool = True) -> None:
        self._points = points
        self._stream = stream if stream is not None else sys.stderr
        self._enabled = enabled and bool(points)
        self._live = self._enabled and self._stream.isatty()
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._done = 0
        self._current: Point | None = None
        self._group_counts: dict[str, int] = {}
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self._live:
            # Redraws while a long point runs, so elapsed time keeps moving.
            self._ticker = threading.Thread(target=self._tick, name="threadlab-progress", daemon=True)
            self._ticker.start()

    # ----------------------------------------------------------- helpers

    def _elapsed(self) -> float:
        return time.monotonic() - self._started

    def _eta(self) -> str:
        if self._done == 0:
            return "?"
        remaining = len(self._points) - self._done
        return format_duration(self._elapsed() / self._done * remaining)

    def _counter(self, number: int) -> str:
        width = len(str(len(self._points)))
        return f"[{number:>{width}}/{len(self._points)}]"

    def _write_live(self) -> None:
        if self._current is None:
            return
        text = (
            f"{self._counter(self._current.index + 1)} {printable(self._current.label)}  "
            f"{format_duration(self._elapsed())} elapsed, ETA {self._eta()}"
        )
        width = shutil.get_terminal_size((100, 20)).columns - 1
        self._write("\r" + text[:width] + "\x1b[K")

    def _clear_live(self) -> None:
        self._write("\r\x1b[K")

    def _write(self, text: str) -> None:
        if self._enabled and not write_or_give_up(self._stream, text):
            self._enabled = self._live = False

    def _tick(self) -> None:
        while not self._stop.wait(_REDRAW_S):
            with self._lock:
                self._write_live()

    # ------------------------------------------------------- the interface

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
        self._done += 1
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
                    f"{self._counter(self._done)} {point.info.benchmark}: {counts or 'no records'} "
                    f"({format_duration(self._elapsed())} elapsed, ETA {self._eta()})"
                )
            self._group_counts = {}

    def close(self) -> None:
        """Stops redrawing and removes the live line (before the table)."""
        self._stop.set()
        if self._ticker:
            self._ticker.join()
        if self._live:
            with self._lock:
                self._clear_live()
