"""The results table, unit scaling and the summary statistics."""

from __future__ import annotations

import io

import numpy as np
import pytest

from conftest import make_record, measured
from threadlab.analysis import stats
from threadlab.output import table
from threadlab.output.units import format_duration, format_relative, format_value


@pytest.mark.parametrize(
    "value,unit,expected",
    [
        (0.6674, "ns", "0.667 ns"),
        (12.34, "ns", "12.3 ns"),
        (999.0, "ns", "999 ns"),
        (3712.0, "ns", "3.71 µs"),
        (12_400_000.0, "ns", "12.4 ms"),
        (2.5e9, "ns", "2.50 s"),
        (1500.0, "us", "1.50 ms"),
        (0.002, "s", "2.00 ms"),
        (42.0, "switches", "42.0 switches"),
        (float("nan"), "ns", "—"),
    ],
)
def test_values_are_scaled_in_one_place(value: float, unit: str, expected: str) -> None:
    assert format_value(value, unit) == expected


def test_relative_and_duration_formats() -> None:
    assert format_relative(0.0423) == "±4.2%"
    assert format_relative(0.23) == "±23%"
    assert format_relative(None) == ""
    assert format_duration(75) == "1:15"
    assert format_duration(3725) == "1:02:05"


def test_summary_from_samples() -> None:
    samples = [10.0, 11.0, 12.0, 30.0]
    summary = stats.summarize(samples)
    assert summary.n == 4
    assert summary.mean == pytest.approx(15.75)
    assert summary.sd == pytest.approx(np.std(samples, ddof=1))
    assert summary.rsd == pytest.approx(summary.sd / 15.75)
    assert summary.se == pytest.approx(summary.sd / 2)
    assert summary.median == pytest.approx(11.5)
    assert (summary.min, summary.max) == (10.0, 30.0)
    single = stats.summarize([5.0])
    assert single.sd is None and single.rsd is None and single.median == 5.0
    with pytest.raises(ValueError):
        stats.summarize([])


def test_the_summary_is_the_front_ends_made_once_and_read() -> None:
    """A producer's summary that disagrees with its samples is refused when
    the record is accepted; an accepted record carries the front end's
    summary, which readers read as it is."""
    from threadlab.records import schema

    record = measured("x.y", [1.0, 2.0, 3.0])
    record["summary"]["mean"] = 99.0  # a producer's wrong summary does not reach the table
    with pytest.raises(schema.RecordError, match="summary.mean"):
        schema.validate_record(record)
    record["summary"]["mean"] = 2.0000000001  # within the producer's 10 digits: accepted, and replaced
    accepted = schema.validate_record(record)
    assert accepted["summary"] == stats.summarize([1.0, 2.0, 3.0]).as_dict()
    accepted["summary"]["median"] = 42.0  # what is stored is what is read: nothing recomputes it
    assert stats.record_summary(accepted).median == 42.0
    derived = make_record(samples=[], summary={"n": 1, "mean": 7.0, "sd": None, "rsd": None, "se": None,
                                               "rse": None, "median": 7.0, "min": 7.0, "max": 7.0},
                          derived={"formula": "o_s + o_r"})
    assert stats.record_summary(derived).mean == 7.0
    assert stats.record_summary(make_record(status="failed", samples=[], summary=None)) is None


def _records() -> list[dict]:
    unsupported = dict(status="unsupported", reason="needs 2 CPUs", samples=[], summary=None, stop=None)
    failed = dict(status="failed", reason="timed out after 30 s", samples=[], summary=None, stop=None)
    check = {"name": "alternation", "ok": False, "value": 3.0, "detail": "3 alternations, expected 1000"}
    return [
        measured("pthread.empty", [0.66, 0.67, 0.68]),
        measured("pthread.mutex.pingpong", [3000.0, 3100.0], "unbound", params={"threads": "2"}),
        measured("pthread.mutex.pingpong", [900.0, 910.0], "same-cpu", params={"threads": "2"}, checks=[check]),
        make_record(benchmark="pthread.mutex.pingpong", placement="different-cpus", params={"threads": "2"}, **unsupported),
        measured("pthread.mutex.pingpong", [5000.0, 5100.0], "unbound", params={"threads": "4"}),
        make_record(benchmark="pthread.cond.pingpong", placement="different-cpus", **unsupported),
        make_record(benchmark="pthread.create", placement="none", **failed),
        measured("logp.gap", [12.0, 12.5], "unbound", metric="g"),
    ]


def test_table_rows_columns_and_markers() -> None:
    model = table.build_table(_records())
    assert model.columns == ["none", "unbound", "same-cpu", "different-cpus"]
    labels = [row.label for row in model.rows]
    assert labels == [
        "pthread.empty",
        "pthread.mutex.pingpong threads=2",  # threads varies in the run: it labels the rows
        "pthread.mutex.pingpong threads=4",
        "pthread.cond.pingpong",
        "pthread.create",
        "logp.gap (g)",  # a metric other than time is named
    ]
    rows = {row.label: row.cells for row in model.rows}
    assert rows["pthread.empty"]["none"] == "0.670 ns ±1.5%"
    mutex = rows["pthread.mutex.pingpong threads=2"]
    assert mutex["unbound"].startswith("3.05 µs ±")
    assert mutex["same-cpu"].startswith("905 ns ±") and mutex["same-cpu"].endswith("![1]")
    assert mutex["different-cpus"] == "n/a [2]"
    assert rows["pthread.cond.pingpong"]["different-cpus"] == "n/a [2]"  # the same reason, one note
    assert rows["pthread.create"]["none"] == "FAILED [3]"
    assert model.footnotes == [  # numbered in reading order
        "pthread.mutex.pingpong: check alternation failed: 3 alternations, expected 1000 (value 3)",
        "unsupported: needs 2 CPUs",
        "failed: timed out after 30 s",
    ]


def test_a_param_at_its_default_is_not_shown_but_another_value_is() -> None:
    catalog = [{"benchmark": "x.y", "params": [{"name": "n", "values": ["1", "2"]}]}]
    at_default = table.build_table([measured("x.y", [1.0, 2.0], params={"n": "1"})], catalog)
    assert [row.label for row in at_default.rows] == ["x.y"]
    other = table.build_table([measured("x.y", [1.0, 2.0], params={"n": "2"})], catalog)
    assert [row.label for row in other.rows] == ["x.y n=2"]


def _switch(name: str, median: float, placement: str = "same-cpu") -> dict:
    return measured(name, [median * 0.99, median, median * 1.01], placement)


def test_context_switch_methods_that_disagree_are_flagged() -> None:
    records = [
        _switch("ctxswitch.futex", 1500.0),
        _switch("ctxswitch.pipe", 4800.0),
        _switch("ctxswitch.futex", 9000.0, "different-cpus"),  # not on one CPU: not compared
        _switch("pthread.yield.pingpong", 1200.0),
        measured("pthread.mutex.pingpong", [1.0, 2.0]),  # not a switch method
    ]
    section = table.context_switch_section(records)
    assert section is not None
    assert [m.benchmark for m in section.methods] == ["ctxswitch.futex", "ctxswitch.pipe", "pthread.yield.pingpong"]
    assert section.verdict.startswith("DISAGREEMENT: the methods' medians differ by a factor of 4.00 (more than 2)")
    assert "slowest ctxswitch.pipe 4.80 µs, fastest pthread.yield.pingpong 1.20 µs" in section.verdict


def test_context_switch_verdict_uses_medians_not_means() -> None:
    outlier = measured("ctxswitch.yield", [1000.0, 1000.0, 1000.0, 1000.0, 30000.0], "same-cpu")  # mean 6.8 µs
    section = table.context_switch_section([outlier, _switch("ctxswitch.futex", 1500.0)])
    assert section.verdict.startswith("The methods' medians agree within a factor of 1.50")


def test_context_switch_methods_that_agree_say_so() -> None:
    section = table.context_switch_section([_switch("ctxswitch.futex", 1500.0), _switch("ctxswitch.cond", 2000.0)])
    assert section.verdict == "The methods' medians agree within a factor of 1.33 (threshold 2)."
    assert table.context_switch_section([measured("pthread.empty", [1.0, 2.0])]) is None


def test_rendered_table_is_plain_text_without_a_terminal() -> None:
    out = io.StringIO()
    console = table.make_console(out)
    table.render_results(console, _records() + [_switch("ctxswitch.futex", 100.0), _switch("ctxswitch.pipe", 900.0)],
                         title="Results of run 7")
    text = out.getvalue()
    assert "\x1b[" not in text  # no colour codes in a file
    assert all(line == line.rstrip() for line in text.splitlines())
    assert "Results of run 7 — mean ±relative standard deviation" in text
    for header in ("not placed", "unbound", "same CPU", "different CPUs", "one sample is"):
        assert header in text
    assert "[3] failed: timed out after 30 s" in text
    assert "Context switch by method (one CPU)" in text and "DISAGREEMENT" in text


def test_reasons_are_not_read_as_markup() -> None:
    out = io.StringIO()
    record = make_record(status="failed", reason="[bold]not bold[/bold]", samples=[], summary=None, stop=None)
    table.render_results(table.make_console(out), [record])
    assert "[bold]not bold[/bold]" in out.getvalue()


@pytest.mark.parametrize("width", ["60", "100", "200"])
def test_no_value_is_dropped_or_cut_on_a_narrow_console(width: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", width)
    out = io.StringIO()
    records = _records()
    table.render_results(table.make_console(out), records)
    text = out.getvalue()
    for row in table.build_table(records).rows:
        assert row.label in text
        for cell in row.cells.values():
            assert cell in text, (width, cell)
