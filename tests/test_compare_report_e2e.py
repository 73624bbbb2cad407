"""Against the real native build: measure two placements, compare them
within the run, export, import elsewhere, and write the report."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import pytest

from conftest import REAL_NATIVE_DIR, threadlab_run

RunCli = Callable[..., tuple[int, str, str]]
PROGRAM = REAL_NATIVE_DIR / "threadlab-bench-posix"


@pytest.mark.skipif(not os.access(PROGRAM, os.X_OK), reason=f"no native build at {PROGRAM} (run `make` first)")
def test_bench_compare_export_import_report(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    done = threadlab_run(db_path, "bench", "--quick", "--quiet", "--name", "pp", "--filter",
                         "pthread.mutex.pingpong,pthread.sem.pingpong", "--placement", "same-cpu,different-cpus",
                         timeout=240)
    assert done.returncode == 0, done.stderr
    code, out, err = run_cli("compare", "pp", "--between", "placement=same-cpu,different-cpus", "--json")
    assert code == 0, err
    points = [json.loads(line) for line in out.splitlines()]
    measured = [p for p in points if p["kind"] == "point"]
    assert {p["benchmark"] for p in measured} == {"pthread.mutex.pingpong", "pthread.sem.pingpong"}
    for p in measured:  # no timing asserted: only that each point was compared and judged
        assert p["ratio"] is not None and p["ratio"] > 0
        assert p["verdict"] in ("faster", "slower", "no significant difference")
    exported = tmp_path / "pp.jsonl"
    assert run_cli("export", "pp", "-o", str(exported))[0] == 0
    elsewhere = tmp_path / "elsewhere.db"
    code, out, err = run_cli("--db", str(elsewhere), "import", str(exported))
    assert code == 0, err
    code, out, err = run_cli("--db", str(elsewhere), "report", "pp", "-o", str(tmp_path / "report"))
    assert code == 0, err
    page = (tmp_path / "report" / "index.html").read_text()
    assert "pthread.mutex.pingpong" in page and page.count("<svg ") >= 2
