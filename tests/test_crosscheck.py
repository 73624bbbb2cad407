"""threadlab crosscheck: the suite beside the naive program, ratio per figure."""

from __future__ import annotations

import json
import os
from typing import Callable

import pytest

from conftest import REAL_NATIVE_DIR
from threadlab.run import crosscheck

RunCli = Callable[..., tuple[int, str, str]]

needs_build = pytest.mark.skipif(
    not os.access(REAL_NATIVE_DIR / crosscheck.NAIVE_PROGRAM, os.X_OK),
    reason=f"no {crosscheck.NAIVE_PROGRAM} in {REAL_NATIVE_DIR}",
)


@needs_build
@pytest.mark.heavy
def test_crosscheck_reports_every_figure_with_consistent_ratios(monkeypatch: pytest.MonkeyPatch,
                                                                run_cli: RunCli) -> None:
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(REAL_NATIVE_DIR))
    code, out, _ = run_cli("crosscheck", "--rounds", "1", "--json")
    assert code == 0
    results = [json.loads(line) for line in out.splitlines()]
    assert [r["benchmark"] for r in results] == [f.benchmark for f in crosscheck.FIGURES]
    for r in results:
        assert r["suite_ns"] and r["naive_ns"] and all(v > 0 for v in r["suite_ns"] + r["naive_ns"])
        assert r["ratio"] == pytest.approx(r["suite_median_ns"] / r["naive_median_ns"])


def test_missing_naive_program_is_a_clear_error(fake_native: object, run_cli: RunCli) -> None:
    code, _, err = run_cli("crosscheck", "--rounds", "1")
    assert code != 0
    assert "threadlab-crosscheck not found" in err and "Traceback" not in err


def test_rounds_out_of_range_is_refused(run_cli: RunCli) -> None:
    code, _, err = run_cli("crosscheck", "--rounds", "0")
    assert code == 2 and "--rounds" in err and "1" in err
