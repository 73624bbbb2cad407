"""The report's table of the omp suite: every construct by runtime
(docs/report.md), from a real quick run of the suite and from synthetic
records; absent, without error, from a run that lacks the suite."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import REAL_NATIVE_DIR, measured, stored_records, threadlab_run
from synthetic import failed, pingpong_run, point, store_run
from threadlab.analysis import stats
from threadlab.analysis.compare import format_ratio
from threadlab.report.cells import median_text

RunCli = Callable[..., tuple[int, str, str]]
needs_omp = pytest.mark.skipif(not os.access(REAL_NATIVE_DIR / "threadlab-bench-omp-gomp", os.X_OK),
                               reason="no threadlab-bench-omp-gomp (OpenMP not found, or not built)")


def _table(page: str, run_id: int = 1) -> tuple[list[str], list[list[str]]]:
    """The headers and rows of a run's table of constructs, as text."""
    match = re.search(rf'<table class="data" id="omp-runtimes-run{run_id}">(.*?)</table>', page, re.S)
    assert match, "no table of constructs by runtime"

    def cells(row: str) -> list[str]:
        return [html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]

    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", match.group(1), re.S)
    return cells(rows[0]), [cells(r) for r in rows[1:]]


def _ratio(base: dict[str, Any], other: dict[str, Any]) -> str:
    """The ratio cell's text; "— " (and a note) where a median is 0 or below."""
    ratio, interval = stats.ratio_of_medians(base["samples"], other["samples"])
    if ratio is None:
        return "— "
    assert interval is not None
    return f"{format_ratio(ratio)} [{format_ratio(interval.low)}, {format_ratio(interval.high)}]"


@needs_omp
@pytest.mark.heavy
def test_the_table_of_a_real_quick_run(tmp_path: Path) -> None:
    db = tmp_path / "omp.db"
    done = threadlab_run(db, "bench", "--suite", "omp", "--quick", "--quiet", "--timeout", "60", "--filter",
                         "omp.sync,omp.schedule,omp.task", "--placement", "unbound", timeout=600)
    assert done.returncode == 0, done.stderr
    records = [r for r in stored_records(db) if r["metric"] == "overhead"]
    runtimes = list(dict.fromkeys(r["model"] for r in records))
    assert "gomp" in runtimes
    done = threadlab_run(db, "report", "-o", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "report" / "index.html").read_text()
    assert 'href="#omp-runtimes"' in page
    headers, rows = _table(page)
    # --quick: 2 threads, one placement; schedule and chunk vary (omp.schedule)
    order = [m for m in ("gomp", "llvmomp", "shim", "ult") if m in runtimes]
    expected = ["construct", "schedule", "chunk"]
    for model in order:
        expected += [model] if model == "gomp" else [model, f"{model} / gomp"]
    assert headers == expected
    by_row = {tuple(row[:3]): row for row in rows}
    points = {(r["params"].get("construct", "for"), r["params"].get("schedule", ""), r["params"].get("chunk", ""))
              for r in records}
    assert set(by_row) == points and len(rows) == len(points)
    for record in records:
        params = record["params"]
        row = by_row[(params.get("construct", "for"), params.get("schedule", ""), params.get("chunk", ""))]
        described = stats.record_description(record)
        assert described is not None
        assert row[headers.index(record["model"])] == median_text(described, record["unit"])
        if record["model"] != "gomp":
            gomp = next(r for r in records if r["model"] == "gomp" and r["benchmark"] == record["benchmark"]
                        and r["params"] == params)
            cell = row[headers.index(f"{record['model']} / gomp")]
            expected_ratio = _ratio(gomp, record)
            assert cell == expected_ratio or (expected_ratio == "— " and cell.startswith("— ["))


def _omp(model: str, median: float, seed: int, **params: str) -> dict[str, Any]:
    return point("omp.sync", "unbound", median, seed=seed, model=model, metric="overhead", params=params)


def test_rows_follow_what_varies(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    records = [_omp("gomp", 1000.0, 1, construct="parallel", threads="2"),
               _omp("llvmomp", 2000.0, 2, construct="parallel", threads="2"),
               _omp("gomp", 1500.0, 3, construct="parallel", threads="4"),
               failed("omp.sync", "unbound", model="llvmomp", metric="overhead",
                      params={"construct": "parallel", "threads": "4"}),
               _omp("gomp", 300.0, 4, construct="atomic", threads="2"),
               measured("omp.sync", [-5.0, -1.0, 0.0, -2.0, -3.0], placement="unbound", model="llvmomp",
                        metric="overhead", params={"construct": "atomic", "threads": "2"})]
    store_run(db_path, pingpong_run() + records, name="omp")
    code, _, err = run_cli("report", "omp", "-o", str(tmp_path / "r"))
    assert code == 0, err
    page = (tmp_path / "r" / "index.html").read_text()
    headers, rows = _table(page)
    assert headers == ["construct", "threads", "gomp", "llvmomp", "llvmomp / gomp"]
    assert [row[:2] for row in rows] == [["parallel", "2"], ["parallel", "4"], ["atomic", "2"]]
    assert rows[0][4] == _ratio(records[0], records[1])
    assert rows[1][3].startswith("FAILED [") and rows[1][4] == ""
    assert rows[2][4].startswith("— [")  # no ratio of a median at or below zero, and a note says why
    assert "no ratio where a median overhead is 0 or below" in page


def test_no_table_without_gomp_ratios_or_the_suite(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run(), name="plain")
    store_run(db_path, [_omp("ult", 500.0, 1, construct="barrier", threads="2"),
                        _omp("shim", 700.0, 2, construct="barrier", threads="2")], name="noGomp")
    code, _, err = run_cli("report", "plain", "-o", str(tmp_path / "a"))
    assert code == 0, err
    page = (tmp_path / "a" / "index.html").read_text()
    assert "omp-runtimes" not in page and "OpenMP constructs by runtime" not in page
    code, _, err = run_cli("report", "noGomp", "-o", str(tmp_path / "b"))
    assert code == 0, err
    headers, rows = _table((tmp_path / "b" / "index.html").read_text(), run_id=2)
    assert headers == ["construct", "shim", "ult"] and [row[0] for row in rows] == ["barrier"]
    # two runs: a table per run that has the suite
    code, _, err = run_cli("report", "plain", "noGomp", "-o", str(tmp_path / "c"))
    assert code == 0, err
    page = (tmp_path / "c" / "index.html").read_text()
    assert "omp-runtimes-run1" not in page and 'id="omp-runtimes-run2"' in page
