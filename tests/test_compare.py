"""`threadlab compare`: two runs, variants within a run, machines as
columns, the regression gate's exit status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from synthetic import derived, pingpong_run, point, store_run, unsupported

RunCli = Callable[..., tuple[int, str, str]]


def _json_points(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if json.loads(line)["kind"] == "point"]


def test_two_runs_table_with_ratio_interval_p_values_verdict_and_geometric_mean(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run(), name="before")
    store_run(db_path, pingpong_run(scale=1.25, seed=10), name="after")
    code, out, err = run_cli("compare", "before", "after")
    assert code == 0, err
    assert "A: run 1 (before) on vm; B: run 2 (after) on vm" in out
    for header in ("A: run 1", "B: run 2", "B/A [95% CI]", "Welch p", "MWU p", "verdict"):
        assert header in out
    lines = {line.split()[0] + " " + line.split()[1]: line for line in out.splitlines() if line.startswith("  pthread")}
    assert "slower" in lines["pthread.mutex.pingpong different"]
    assert "no significant difference" in lines["pthread.mutex.pingpong same"]
    assert "not compared" in lines["pthread.cond.broadcast different"]
    assert "geometric mean (5 points)" in out
    assert "2 slower, 3 no significant difference, 1 not compared" in out


def test_json_output_carries_every_statistic(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run())
    store_run(db_path, pingpong_run(scale=1.25, seed=10))
    code, out, _ = run_cli("compare", "1", "2", "--json")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    summary = lines[-1]
    assert summary["kind"] == "summary" and summary["geometric_mean_points"] == 5
    assert summary["geometric_mean"] == pytest.approx((1.25 * 1.25) ** (1 / 5), rel=0.03)
    slowed = next(p for p in lines if p["kind"] == "point" and p["benchmark"] == "pthread.sem.pingpong"
                  and p["placement"] == "different-cpus")
    assert slowed["verdict"] == "slower" and slowed["direction"] == 1
    s = slowed["statistics"]
    assert s["ratio_ci"]["low"] > 1 and s["welch"]["p"] < 0.05 and s["mann_whitney"]["p"] < 0.05
    assert s["n_a"] == s["n_b"] == 20


def test_within_one_run_between_placements(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run())
    code, out, err = run_cli("compare", "latest", "--between", "placement=same-cpu,different-cpus")
    assert code == 0, err
    assert "A: same CPU in run 1" in out and "B: different CPUs in run 1" in out
    header = out.splitlines()[3]
    assert "benchmark" in header and "placement" not in header  # the compared dimension is not a column
    rows = [line for line in out.splitlines() if line.startswith("  pthread.")]
    assert [row.split()[0] for row in rows] == ["pthread.mutex.pingpong", "pthread.sem.pingpong", "pthread.cond.broadcast"]
    assert all("slower" in row for row in rows[:2])
    assert "only in B" in rows[2]
    code, out, _ = run_cli("compare", "latest", "--between", "placement=same-cpu,different-cpus", "--json")
    ratios = [p["ratio"] for p in _json_points(out) if p["ratio"]]
    assert ratios == pytest.approx([20.0, 20.0], rel=0.05)


def test_within_one_run_between_values_of_a_param(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, [
        point("pthread.cond.broadcast", "same-cpu", 1000.0, params={"waiters": "1"}, seed=1),
        point("pthread.cond.broadcast", "same-cpu", 1000.0, params={"waiters": "2"}, seed=2),
        point("pthread.cond.broadcast", "same-cpu", 3000.0, params={"waiters": "4"}, seed=3),
    ])
    code, out, _ = run_cli("compare", "1", "--between", "waiters=1,2,4", "--json")
    assert code == 0
    points = _json_points(out)
    assert [(p["b"].split()[0], p["verdict"]) for p in points] == [("waiters=2", "no significant difference"),
                                                                   ("waiters=4", "slower")]


@pytest.mark.parametrize("spec,message", [
    ("placement", "expected DIMENSION=V1,V2"),
    ("placement=same-cpu", "at least two values"),
    ("color=red,blue", "the run has no dimension 'color'; it has placement (different-cpus, none, same-cpu)"),
    ("placement=same-cpu,unbound", "no record has placement=unbound; values in the run: different-cpus, none, same-cpu"),
    ("placement=same-cpu,same-cpu", "a value is given twice"),
])
def test_bad_between_is_refused(db_path: Path, run_cli: RunCli, spec: str, message: str) -> None:
    store_run(db_path, pingpong_run())
    code, _, err = run_cli("compare", "1", "--between", spec)
    assert code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize("args,message", [
    (["1"], "compare needs two runs"),
    (["1", "2", "--between", "placement=a,b"], "give exactly one RUN"),
    (["1", "1"], "run 1 is given twice"),
    (["1", "9"], "no run '9'"),
    (["1", "2", "--alpha", "0"], "--alpha 0: expected a number from 0.0001 to 0.5"),
    (["1", "2", "--test", "t"], "--test t: expected one of welch, mann-whitney"),
    (["1", "2", "--fail-above", "-3"], "--fail-above -3: expected a number from 0"),
    (["1", "2", "--by", "machine"], "all these runs are from one machine"),
    (["1", "2", "--filter", "nothing.*"], "nothing to compare (the --filter selects none of its records)"),
])
def test_bad_compare_usage_is_refused(db_path: Path, run_cli: RunCli, args: list[str], message: str) -> None:
    store_run(db_path, pingpong_run())
    store_run(db_path, pingpong_run(seed=5))
    code, _, err = run_cli("compare", *args)
    assert code == 2, err
    assert message in err


def test_regression_gate_exit_status(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run(), name="base")
    store_run(db_path, pingpong_run(scale=1.25, seed=10), name="slow")
    store_run(db_path, pingpong_run(seed=20), name="same")
    code, _, err = run_cli("compare", "base", "slow", "--fail-above", "10")
    assert code == 1
    assert "regression: pthread.mutex.pingpong different-cpus: B/A = 1.2" in err
    assert "2 regressions beyond 10%" in err
    code, _, err = run_cli("compare", "base", "slow", "--fail-above", "40")  # slower, but by less than 40%
    assert code == 0 and "no point significantly slower by more than 40%" in err
    code, _, err = run_cli("compare", "base", "same", "--fail-above", "0")  # no significant change
    assert code == 0, err
    code, _, err = run_cli("compare", "slow", "base", "--fail-above", "5")  # B faster: not a regression
    assert code == 0


def test_regression_gate_ignores_differences_that_are_not_significant(db_path: Path, run_cli: RunCli) -> None:
    noisy_a = [point("pthread.mutex.pingpong", "same-cpu", 1000.0, n=4, seed=1)]
    noisy_b = [point("pthread.mutex.pingpong", "same-cpu", 1000.0, n=4, seed=2)]
    noisy_b[0]["samples"] = [1000.0, 3000.0, 900.0, 1200.0]
    from threadlab.analysis import stats
    noisy_b[0]["summary"] = stats.summarize(noisy_b[0]["samples"]).as_dict()
    store_run(db_path, noisy_a)
    store_run(db_path, noisy_b)
    code, out, err = run_cli("compare", "1", "2", "--fail-above", "5")
    assert code == 0, err
    assert "fewer than 5 timings on a side" in out


def test_units_are_converted_and_unmatched_points_are_shown(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, [point("threads.start", "unbound", 5000.0, seed=1),
                        point("threads.yield_pingpong", "unbound", 300.0, seed=2)])
    in_us = point("threads.start", "unbound", 5.0, seed=3)
    in_us["unit"] = "us"
    store_run(db_path, [in_us, derived("pthread.logp", "same-cpu", 900.0, metric="L")])
    code, out, _ = run_cli("compare", "1", "2", "--json")
    points = _json_points(out)
    by_name = {p["benchmark"]: p for p in points}
    assert by_name["threads.start"]["ratio"] == pytest.approx(1.0, rel=0.05)
    assert by_name["threads.start"]["verdict"] == "no significant difference"
    assert by_name["threads.yield_pingpong"]["verdict"] == "only in A"
    assert by_name["pthread.logp"]["verdict"] == "only in B"


def test_derived_values_are_not_tested(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, [derived("pthread.logp", "same-cpu", 900.0, metric="L")])
    store_run(db_path, [derived("pthread.logp", "same-cpu", 1800.0, metric="L")])
    code, out, _ = run_cli("compare", "1", "2", "--json")
    (only,) = _json_points(out)
    assert only["verdict"] == "not tested" and only["ratio"] == pytest.approx(2.0)


def test_machines_as_columns(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run(), hostname="alpha", machine_id="a" * 16, cpu="Alpha EV5")
    store_run(db_path, pingpong_run(scale=1.25, seed=3), hostname="power", machine_id="b" * 16, cpu="PowerPC 604e")
    store_run(db_path, pingpong_run(scale=0.5, seed=6), hostname="power", machine_id="b" * 16, cpu="PowerPC 604e")
    code, out, err = run_cli("compare", "1", "2", "3", "--by", "machine")
    assert code == 0, err
    assert "column 1: alpha: Alpha EV5 — run 1" in out
    assert "column 2: power: PowerPC 604e — run 2, run 3" in out  # the later run's points win
    row = next(line for line in out.splitlines() if "pthread.mutex.pingpong" in line and "different CPUs" in line)
    assert "×0.50*" in row
    na = next(line for line in out.splitlines() if "pthread.cond.broadcast" in line)
    assert na.count("n/a") == 2
    code, out, _ = run_cli("compare", "1", "2", "3", "--by", "run", "--format", "md")
    assert out.splitlines()[0] == "| benchmark | placement | run 1 | run 2 | run 3 |"


def test_csv_and_markdown_outputs(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run())
    store_run(db_path, pingpong_run(scale=1.25, seed=10))
    code, out, _ = run_cli("compare", "1", "2", "--format", "csv")
    header, *rows = out.splitlines()
    assert header.startswith("a,b,benchmark,model,metric,params,placement,unit,median_a")
    assert len(rows) == 6
    code, out, _ = run_cli("compare", "1", "2", "--format", "md", "--adjust", "holm")
    assert "| benchmark | placement | A: run 1 | B: run 2 |" in out and "holm p" in out


def test_unsupported_on_one_side_is_not_compared(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, [point("pthread.barrier", "different-cpus", 500.0)])
    store_run(db_path, [unsupported("pthread.barrier", "different-cpus", reason="needs 4 CPUs")])
    code, out, _ = run_cli("compare", "1", "2")
    assert "not compared" in out and "B unsupported: needs 4 CPUs" in out


# ------------------------------------------------ the gate cannot vouch for B


def test_the_gate_fails_when_every_point_of_b_failed(db_path: Path, run_cli: RunCli) -> None:
    from synthetic import failed

    store_run(db_path, pingpong_run(), name="base")
    store_run(db_path, [failed(r["benchmark"], r["placement"], reason="killed by SIGSEGV") for r in pingpong_run()],
              name="broken")
    code, _, err = run_cli("compare", "base", "broken", "--fail-above", "5")
    assert code == 1, err
    assert "the gate cannot pass: 6 points of B (run 2 (broken) on vm) failed: pthread.mutex.pingpong same-cpu: " \
           "killed by SIGSEGV (and 5 more)" in err
    assert "the regression gate fails: 1 reason it cannot decide" in err


def test_the_gate_fails_when_one_point_of_b_failed(db_path: Path, run_cli: RunCli) -> None:
    from synthetic import failed

    store_run(db_path, pingpong_run(), name="base")
    candidate = pingpong_run(seed=20)
    candidate[0] = failed("pthread.mutex.pingpong", "same-cpu", reason="timed out after 30 s")
    store_run(db_path, candidate, name="candidate")
    code, _, err = run_cli("compare", "base", "candidate", "--fail-above", "5")
    assert code == 1 and "1 point of B (run 2 (candidate) on vm) failed: pthread.mutex.pingpong same-cpu" in err


def test_the_gate_fails_when_the_runs_share_no_point(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, [point("pthread.mutex.pingpong", "same-cpu", 2000.0, seed=1)], name="a")
    store_run(db_path, [point("pthread.sem.pingpong", "same-cpu", 2000.0, seed=2)], name="b")
    code, _, err = run_cli("compare", "a", "b", "--fail-above", "5")
    assert code == 1, err
    assert "share no point: nothing was compared" in err


def test_the_gate_fails_when_too_few_points_were_measured_to_decide(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run(), name="base")
    single = pingpong_run(seed=30)
    single[1] = point("pthread.mutex.pingpong", "different-cpus", 40000.0, n=1, seed=31)  # one timing: no test
    single[2] = unsupported("pthread.sem.pingpong", "same-cpu")  # A measured it, B could not
    store_run(db_path, single, name="thin")
    code, _, err = run_cli("compare", "base", "thin", "--fail-above", "5")
    assert code == 1, err
    assert "too few points measured to decide: 2 of the 6 points" in err
    # Points that no side measured, and derived values, do not hold the gate back.
    store_run(db_path, pingpong_run(seed=40) + [derived("logp.l", "different-cpus", 1.0)], name="full")
    store_run(db_path, pingpong_run(seed=50) + [derived("logp.l", "different-cpus", 1.5)], name="full2")
    code, _, err = run_cli("compare", "full", "full2", "--fail-above", "5")
    assert code == 0, err
    assert "(5 points tested)" in err


def test_points_measured_on_unlike_machines_say_so() -> None:
    """The omp suite's cross-CPU hand-off (extra.line_handoff_ns) moves
    when a virtual machine's host moves its CPUs: a pair whose readings
    differ 2x or more gets a note; alike or missing readings get none."""
    from threadlab.analysis import compare

    def side(name: str, handoff: float | None) -> compare.Side:
        extra = {} if handoff is None else {"line_handoff_ns": handoff}
        return compare.Side(name, name, [point("omp.sync", "different-cpus", 505.0, extra=extra)])

    def notes(a: float | None, b: float | None) -> list[str]:
        return [n for n in compare.compare_sides(side("A", a), side("B", b)).points[0].notes if "unlike" in n]

    assert notes(40.0, 170.0) == ["unlike machines: a cache line crossed between the CPUs in 40 ns in A, 170 ns in B "
                                  "(a virtual machine's host moved its CPUs; docs/omp-suite.md)"]
    assert len(notes(170.0, 40.0)) == 1
    assert notes(40.0, 45.0) == [] and notes(40.0, None) == [] and notes(None, None) == []
