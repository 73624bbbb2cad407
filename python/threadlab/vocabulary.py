"""The names threadlab's Python side shares, stated once: placements,
statuses, stopping rules, suites, clocks, and the syntax of number lists.

The names a record may carry (placements, statuses, stopping rules and
reasons) are the record format's: they are read from its schema
(records/schema/record-1.json), the contract every producer is written
against, so the command line, the tables and the JVM launcher cannot
drift from what a record may say.  The rest (suites, clocks, options) is
the command line's own vocabulary.

Kept free of heavy imports: the JVM launcher imports it at every point.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Sequence

RECORD_SCHEMA_FILE = "record-1.json"


@lru_cache(maxsize=1)
def record_format() -> dict[str, Any]:
    """The record format (JSON Schema), as shipped in the package."""
    text = resources.files("threadlab.records").joinpath("schema", RECORD_SCHEMA_FILE).read_text("utf-8")
    return json.loads(text)


def _enum(*path: str) -> tuple[str, ...]:
    """The values the record format allows at path (a property, then the
    property of the object it holds: ("stop", "rule"))."""
    node = record_format()["properties"][path[0]]
    for name in path[1:]:
        node = next(alternative for alternative in node["oneOf"] if alternative.get("type") == "object")
        node = node["properties"][name]
    return tuple(node["enum"])


# ------------------------------------------------------------- placements

# Where each placed thread runs; a record of a benchmark that places no
# thread says NO_PLACEMENT.
RECORD_PLACEMENTS: tuple[str, ...] = _enum("placement")
NO_PLACEMENT = "none"
PLACEMENTS: tuple[str, ...] = tuple(p for p in RECORD_PLACEMENTS if p != NO_PLACEMENT)
# Column headers of the results tables, in RECORD_PLACEMENTS' order.
PLACEMENT_HEADERS: dict[str, str] = {
    "none": "not placed",
    "unbound": "unbound",
    "same-cpu": "same CPU",
    "different-cpus": "different CPUs",
}

# ---------------------------------------------------------------- statuses

RECORD_STATUSES: tuple[str, ...] = _enum("status")  # ok, unsupported, failed
RUN_STATUSES: tuple[str, ...] = ("running", "complete", "interrupted", "failed")

# -------------------------------------------------------- stopping rules

STOP_RULES: tuple[str, ...] = _enum("stop", "rule")
STOP_REASONS: tuple[str, ...] = _enum("stop", "reason")
# A point measured a fixed number of times (the studies' runs, JMH's
# iterations) rather than until a spread target is met.
FIXED = "fixed"


def fixed_stop(runs: int, elapsed_s: float | None) -> dict[str, Any]:
    """The record's stop object of a point measured `runs` times."""
    return {"rule": FIXED, "target": None, "reason": FIXED, "min_timings": runs, "max_timings": runs,
            "elapsed_s": None if elapsed_s is None else round(elapsed_s, 6)}


# ------------------------------------------------------ suites and clocks

# Which programs a `bench` runs (--suite).  A program says the suite of
# each benchmark in its --list ("suite"; absent = primitives).  The spawn
# suite (threadlab-bench-spawn, docs/spawn.md) is adaptive: the cost of a
# spawned task and of a message, thread tasks against processes.
DEFAULT_SUITE = "primitives"
SUITES: tuple[str, ...] = ("primitives", "models", "jvm", "go", "mpi", "omp", "spawn")
ALL_SUITES = "all"
# Suites whose every point is started by a launcher (mpirun, srun: the
# launcher's words before the program; docs/mpi.md).
LAUNCHED_SUITES: tuple[str, ...] = ("mpi",)
# The omp suite's runtimes (one program each, the record's model), in the
# order its tables show them, and the one the others are compared with.
OMP_RUNTIMES: tuple[str, ...] = ("gomp", "llvmomp", "shim", "ult")
OMP_BASELINE = "gomp"
# The options of the adaptive loop (the C programs': their kinds, ranges
# and defaults are stated in native/core/options.c and read through
# `--options`, native.protocol.native_options).
ADAPTIVE_OPTIONS: tuple[str, ...] = (
    "rule", "target", "warmup", "min_timings", "max_timings", "min_timing_ms", "max_seconds", "clock",
)
# The options each suite's programs accept; a suite not named here takes
# ADAPTIVE_OPTIONS.  The jvm and go suites run a fixed number of
# iterations (JMH's method, the seed's: warm-up, then N measured).
SUITE_OPTIONS: dict[str, tuple[str, ...]] = {
    "jvm": ("warmup", "iterations", "forks"),
    "go": ("warmup", "iterations"),
}


def suite_options(suite: str) -> tuple[str, ...]:
    return SUITE_OPTIONS.get(suite, ADAPTIVE_OPTIONS)


# ------------------------------------------------- lists of numbers (1-4,6)


def parse_ranges(parts: Iterable[str], low: int, high: int) -> list[int]:
    """Numbers from low to high given as numbers and ranges ("1,2,4" or
    "1-8", mixed), sorted, each once; ValueError naming the first bad part."""
    numbers: list[int] = []
    for part in parts:
        part = part.strip()
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        first = int(match.group(1)) if match else low - 1
        last = int(match.group(2)) if match and match.group(2) else first
        if not match or not low <= first <= last <= high:
            raise ValueError(part)
        numbers.extend(range(first, last + 1))
    return sorted(set(numbers))


def format_ranges(numbers: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" ("" for none)."""
    runs: list[list[int]] = []
    for value in sorted(set(numbers)):
        if runs and runs[-1][1] + 1 == value:
            runs[-1][1] = value
        else:
            runs.append([value, value])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
