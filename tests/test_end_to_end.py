"""End to end against the real native build: `threadlab bench --quick`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Callable

import pytest

from conftest import REAL_NATIVE_DIR, stored_records, threadlab_run
from threadlab.records import schema

RunCli = Callable[..., tuple[int, str, str]]

PROGRAM = REAL_NATIVE_DIR / "threadlab-bench-posix"
needs_build = pytest.mark.skipif(
    not os.access(PROGRAM, os.X_OK),
    reason=f"no native build at {PROGRAM} (run `make` first, or set THREADLAB_NATIVE_DIR)",
)


@needs_build
def test_quick_run_of_the_real_empty_benchmark(db_path: Path, run_cli: RunCli) -> None:
    done = threadlab_run(db_path, "bench", "--quick", "--filter", "pthread.empty", "--name", "e2e", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Results of run 1 (e2e)" in done.stdout
    assert re.search(r"pthread\.empty\s+\d[\d.]* (ns|µs) ±\d", done.stdout), done.stdout
    assert "complete" in done.stderr
    records = stored_records(db_path)
    assert [r["benchmark"] for r in records] == ["pthread.empty"]
    assert records[0]["status"] == "ok" and schema.record_problems(records[0]) == []
    code, out, _ = run_cli("runs", "--json")
    run = json.loads(out)
    assert run["status"] == "complete" and run["records"] == {"ok": 1}
    code, out, _ = run_cli("show", "e2e")
    assert code == 0
    for expected in ("compiler", "gcc", "C library", "clock", "pthread.empty"):
        assert expected in out, expected


def _builds() -> list:
    """The native builds to run the whole quick suite from: the plain one, and
    the sanitizer builds `make test-python` names (THREADLAB_ASAN_DIR,
    THREADLAB_TSAN_DIR)."""
    builds = [("release", str(REAL_NATIVE_DIR))]
    builds += [(kind, os.environ.get(var, "")) for kind, var in (("asan", "THREADLAB_ASAN_DIR"), ("tsan", "THREADLAB_TSAN_DIR"))]
    params = []
    for kind, directory in builds:
        program = Path(directory) / "threadlab-bench-posix" if directory else None
        missing = program is None or not os.access(program, os.X_OK)
        why = f"no {kind} build ({program or 'directory not set'})"
        params.append(pytest.param(kind, directory, id=kind, marks=pytest.mark.skipif(missing, reason=why)))
    return params


@pytest.mark.parametrize("kind,directory", _builds())
@pytest.mark.heavy
def test_whole_quick_suite_measures_every_benchmark(kind: str, directory: str, db_path: Path) -> None:
    """Every benchmark of the build, quick: records valid, none failed.  Under
    the sanitizers a report makes the program exit non-zero, which the runner
    records as a failed point naming the report's first line."""
    done = threadlab_run(db_path, "bench", "--quick", "--quiet", "--timeout", "120", timeout=280,
                         env={"THREADLAB_NATIVE_DIR": directory, "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"})
    records = stored_records(db_path)
    assert records, done.stderr
    assert [schema.record_problems(r) for r in records if schema.record_problems(r)] == []
    failed = [f"{r['benchmark']} {r['placement']} {r['params']}: {r['reason']}" for r in records if r["status"] == "failed"]
    assert failed == [], "\n".join(failed)
    assert done.returncode == 0, done.stderr
