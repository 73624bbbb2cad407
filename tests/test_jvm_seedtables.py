"""Seed 003's Tables 1-4 from records (threadlab.producers.seedtables)."""

from __future__ import annotations

import pytest

from conftest import measured
from threadlab.producers import seedtables


def point(model: str, samples: list[float], benchmark: str = "threads.start", unit: str = "s",
          count: str = "100000", **params: str) -> dict:
    record = measured(benchmark, samples, placement="unbound", model=model, unit=unit,
                      params={"count": count, **params})
    return record


def test_tables_per_benchmark_with_t_test_and_ratio() -> None:
    records = [
        point("jvm-platform", [1.0, 1.1, 0.9, 1.05]),
        point("jvm-virtual", [0.002, 0.0021, 0.0019, 0.002]),
        point("goroutine", [80.0, 82.0, 79.0], unit="ms"),
        point("jvm-platform", [0.2, 0.21], benchmark="threads.instantiate"),
    ]
    tables = {t.benchmark: t for t in seedtables.seed_tables(records)}
    start = tables["threads.start"]
    assert [c.model for c in start.cells] == ["jvm-platform", "jvm-virtual", "goroutine"]
    assert start.ratio == pytest.approx(1.0125 / 0.002)
    assert start.welch_p is not None and start.welch_p < 1e-3
    assert start.cell("goroutine").mean_s == pytest.approx(0.08033, rel=1e-3)  # ms -> s
    assert start.seed_ratio == pytest.approx(549.5)
    assert tables["threads.instantiate"].welch_p is None  # one model only
    text = seedtables.markdown(list(tables.values()))
    assert "Table 2: start 100,000 threads" in text and "| seed: Thread | | 30 | 1.099 | 0.008 |" in text
    assert "platform/virtual mean ratio 506.2 (seed 550)" in text


def test_scaled_counts_are_flagged_and_params_split_tables() -> None:
    records = [
        point("jvm-platform", [3.0, 3.2], benchmark="threads.sleep_yield", count="23000", joined="no", sleep_ms="100"),
        point("jvm-virtual", [0.05, 0.06], benchmark="threads.sleep_yield", joined="no", sleep_ms="100"),
        point("jvm-virtual", [0.3, 0.31], benchmark="threads.sleep_yield", joined="yes", sleep_ms="100"),
    ]
    records[0]["extra"] = {"scaled_from": 100000, "scaled_because": "pid_max"}
    tables = seedtables.seed_tables(records)
    assert [t.params for t in tables] == [{"joined": "no", "sleep_ms": "100"}, {"joined": "yes", "sleep_ms": "100"}]
    assert "different counts (100000 vs 23000)" in tables[0].note
    assert "23000 (scaled from 100000)" in seedtables.markdown(tables)


def test_failed_and_other_records_are_left_out() -> None:
    failed = point("jvm-platform", [1.0, 2.0])
    failed.update(status="failed", reason="x", samples=[], summary=None)
    other = point("jvm-platform", [1.0, 2.0], benchmark="threads.park_pingpong")
    assert seedtables.seed_tables([failed, other]) == []
