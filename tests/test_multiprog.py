"""`threadlab study multiprog` (seed 004): the plan, bad input, the static
split, the tables on fixed data, the kernels' verification (with independent
recomputations of the small references), the instances' environments, an
end-to-end quick study with show and report, and Ctrl-C.  Nothing here
asserts a timing threshold."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import REAL_NATIVE_DIR, REPO, stored_records, threadlab_run, wait_for_records
from threadlab.records import schema
from threadlab.errors import ThreadlabError, UserError
from threadlab.native import rm
from threadlab.study import multiprog, tables_multiprog

NPB = REAL_NATIVE_DIR / "threadlab-npb"
RM = REAL_NATIVE_DIR / "threadlab-rm"
SHIM = REAL_NATIVE_DIR.parent / "lib" / "libthreadlab-omp.so"
needs_npb = pytest.mark.skipif(not os.access(NPB, os.X_OK), reason=f"threadlab-npb is not built in {REAL_NATIVE_DIR} "
                               "(run `make`; it needs OpenMP)")
ULT = REAL_NATIVE_DIR.parent / "lib" / "libthreadlab-gomp.so"
needs_all = pytest.mark.skipif(not (os.access(NPB, os.X_OK) and os.access(RM, os.X_OK) and SHIM.is_file()
                                    and ULT.is_file()),
                               reason=f"threadlab-npb, threadlab-rm, libthreadlab-omp.so or libthreadlab-gomp.so is "
                               f"not built in {REAL_NATIVE_DIR} (run `make`)")
FAKE = Path("/nonexistent/threadlab-npb")


@pytest.fixture
def real_native(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(REAL_NATIVE_DIR))
    return REAL_NATIVE_DIR


# ------------------------------------------------------------------ plan


def test_plan_crosses_baselines_degrees_and_runs_in_a_seeded_order() -> None:
    plan = multiprog.make_plan(program=FAKE, apps=["cg", "ep"], baselines=["gomp", "rm", "static"], degrees=[4, 1, 2],
                               runs=3, seed=7, cpus=[0, 1, 2])
    assert plan.apps == ["cg", "ep"] and plan.degrees == [1, 2, 4]
    workloads = [c for c in plan.cells if not c.dedicated and not c.scenario]
    dedicated = [c for c in plan.cells if c.dedicated]
    assert {(c.app, c.baseline, c.degree) for c in workloads} == {
        (a, b, k) for a in ("cg", "ep") for b in ("gomp", "rm", "static") for k in (1, 2, 4)}
    assert all(c.cpus == 3 for c in workloads)
    # Table 1: rm and gomp (the dedicated baselines asked for) on 1..3 CPUs, one instance.
    assert {(c.app, c.baseline, c.cpus, c.degree) for c in dedicated} == {
        (a, b, n, 1) for a in ("cg", "ep") for b in ("rm", "gomp") for n in (1, 2, 3)}
    assert len(plan.jobs) == len(plan.cells) * 3
    per_cell = Counter(job.cell for job in plan.jobs)
    assert set(per_cell.values()) == {3}
    runs_of: dict[int, list[int]] = {}
    for job in plan.jobs:
        runs_of.setdefault(job.cell, []).append(job.run)
    assert all(runs == [0, 1, 2] for runs in runs_of.values())  # numbered in the order done
    again = multiprog.make_plan(program=FAKE, apps=["cg", "ep"], baselines=["gomp", "rm", "static"],
                                degrees=[1, 2, 4], runs=3, seed=7, cpus=[0, 1, 2])
    assert again.jobs == plan.jobs
    other = multiprog.make_plan(program=FAKE, apps=["cg", "ep"], baselines=["gomp", "rm", "static"],
                                degrees=[1, 2, 4], runs=3, seed=8, cpus=[0, 1, 2])
    assert other.jobs != plan.jobs and sorted(other.jobs, key=str) == sorted(plan.jobs, key=str)
    # The order interleaves the cells rather than running them one after the other.
    cells_in_order = [job.cell for job in plan.jobs]
    assert cells_in_order != sorted(cells_in_order)


def test_plan_scenarios() -> None:
    plan = multiprog.make_plan(program=FAKE, cpus=[0, 1], seed=1, size="W", baselines=["rm", "passive", "static"])
    assert plan.scenarios == list(multiprog.SCENARIOS)
    cells = {(c.scenario.name, c.baseline): c for c in plan.cells if c.scenario}
    # The manager's stop is compared with passive libgomp only.
    assert {b for (n, b) in cells if n == "stop"} == {"rm", "passive"}
    assert {b for (n, b) in cells if n == "mixed"} == {"rm", "passive", "static"}
    late = cells[("late", "rm")].scenario
    assert [(e.kernel, e.at_s) for e in late.entries] == [("cg", 0.0), ("ep", multiprog.LATE_S)]
    assert late.workload == "cg(S)@0s,ep@0.03s"  # the CG is short beside the EP
    late_argv = [l.argv for l in multiprog.launches(cells[("late", "static")], plan, None)]
    assert [a[1:] for a in late_argv] == [
        ["--run", "study.multiprog.cg", "--param", "size=S"],
        ["--run", "study.multiprog.ep", "--param", "size=W"],
    ]
    mixed = cells[("mixed", "static")]
    assert mixed.scenario.workload == "ep@0s,cg@0.1s,mg@0.2s" and mixed.degree == 3
    kill = cells[("kill", "rm")].scenario
    assert kill.fault == "kill" and not kill.measured(0) and kill.measured(1)
    assert multiprog.make_plan(program=FAKE, cpus=[0, 1], seed=1, scenarios=[]).scenarios == []
    assert multiprog.parse_scenarios("kill,late") == ["late", "kill"] and multiprog.parse_scenarios("none") == []
    with pytest.raises(UserError, match="unknown scenario 'fast'"):
        multiprog.parse_scenarios("fast")
    # The static split of a scenario follows its programs; staggered starts.
    starts = multiprog.launches(mixed, plan, None)
    assert [(l.argv[2], l.at_s, l.affinity, l.env["OMP_NUM_THREADS"]) for l in starts] == [
        ("study.multiprog.ep", 0.0, [0], "1"), ("study.multiprog.cg", 0.1, [1], "1"),
        ("study.multiprog.mg", 0.2, [0], "1")]


def test_plan_defaults_quick_and_no_dedicated() -> None:
    plan = multiprog.make_plan(program=FAKE, cpus=[0, 1], seed=1)
    # every baseline but llvmomp, whose kernels are not built beside FAKE
    assert plan.apps == list(multiprog.APPS) and plan.baselines == [b for b in multiprog.BASELINES if b != "llvmomp"]
    assert plan.degrees == [1, 2, 4, 8] and plan.runs == multiprog.DEFAULT_RUNS and plan.size == "W"
    assert plan.policy == multiprog.DEFAULT_POLICY
    quick = multiprog.make_plan(program=FAKE, cpus=[0, 1], seed=1, quick=True)
    assert quick.degrees == [1, 2] and quick.runs == multiprog.QUICK_RUNS and quick.size == "small"
    alone = multiprog.make_plan(program=FAKE, cpus=[0, 1], seed=1, dedicated=False, baselines=["passive"])
    assert not any(c.dedicated for c in alone.cells)
    only_static = multiprog.make_plan(program=FAKE, cpus=[0, 1], seed=1, baselines=["static"])
    assert not any(c.dedicated for c in only_static.cells)  # Table 1 is rm and gomp only
    assert plan.options()["study"] == "multiprog" and plan.catalog()[0]["benchmark"] == "study.multiprog.ep"


# ------------------------------------------------------------- bad input


@pytest.mark.parametrize("parse, text, named", [
    (multiprog.parse_apps, "cg,bt", ["'bt'", "ep, cg, mg, sp"]),
    (multiprog.parse_apps, "cg,", ["empty"]),
    (multiprog.parse_baselines, "rm,pgi", ["'pgi'", "rm, ult, gomp, llvmomp, passive, dynamic, static"]),
    (multiprog.parse_degrees, "0,2", ["'0'", "from 1 to 64"]),
    (multiprog.parse_degrees, "1,65", ["'65'", "from 1 to 64"]),
    (multiprog.parse_degrees, "4-2", ["'4-2'"]),
    (multiprog.parse_degrees, "two", ["'two'"]),
    (multiprog.parse_size, "B", ["--size B", "small, S, W, A"]),
    (multiprog.parse_scenarios, "late,slow", ["'slow'", "mixed, staggered, late, stop, kill"]),
])
def test_bad_values_are_refused_naming_the_accepted_ones(parse: Any, text: str, named: list[str]) -> None:
    with pytest.raises(UserError) as caught:
        parse(text)
    for part in named:
        assert part in str(caught.value)


def test_good_values_parse() -> None:
    assert multiprog.parse_apps("sp,ep") == ["ep", "sp"]
    assert multiprog.parse_baselines("static,rm") == ["rm", "static"]
    assert multiprog.parse_degrees("8,1-3,2") == [1, 2, 3, 8]


def test_plan_refuses_bad_values() -> None:
    with pytest.raises(UserError, match="--stagger"):
        multiprog.make_plan(program=FAKE, cpus=[0, 1], stagger_s=-1)
    with pytest.raises(UserError, match="--policy fair: expected one of"):
        multiprog.make_plan(program=FAKE, cpus=[0, 1], policy="fair")
    with pytest.raises(UserError, match="--degree 0"):
        multiprog.make_plan(program=FAKE, cpus=[0, 1], degrees=[0])
    with pytest.raises(UserError, match="--other-load all: expected count or ignore"):
        multiprog.make_plan(program=FAKE, cpus=[0, 1], other_load="all")
    assert multiprog.make_plan(program=FAKE, cpus=[0, 1], seed=1).options()["other_load"] == "count"


@pytest.mark.parametrize("args, named", [
    (["--apps", "lu"], "unknown kernel 'lu'"),
    (["--baselines", "nanos"], "unknown baseline 'nanos'"),
    (["--degree", "100"], "'100' is out of range"),
    (["--runs", "0"], "--runs 0"),
    (["--stagger", "-2"], "--stagger -2"),
    (["--policy", "fifo"], "--policy fifo: expected one of"),
    (["--size", "huge"], "--size huge"),
    (["--scenarios", "every"], "unknown scenario 'every'"),
    (["--other-load", "some"], "invalid choice: 'some'"),
])
def test_cli_bad_input_is_a_usage_error_without_traceback(run_cli: Any, args: list[str], named: str) -> None:
    code, out, err = run_cli("study", "multiprog", *args)
    assert code == 2
    assert named in err and "Traceback" not in err


def test_cli_without_the_kernels_built_says_how_to_build_them(run_cli: Any) -> None:
    code, _, err = run_cli("study", "multiprog", "--quick")
    assert code == 1 and "threadlab-npb not found" in err and "Traceback" not in err


# ----------------------------------------------------------- static split


@pytest.mark.parametrize("n", range(1, 9))
def test_static_split_gives_everyone_a_cpu_and_covers_the_cpus(n: int) -> None:
    cpus = list(range(10, 10 + n))
    for k in range(1, 3 * n + 2):
        shares = multiprog.static_split(cpus, k)
        assert len(shares) == k
        assert all(len(share) >= 1 for share in shares)
        assert sorted({c for share in shares for c in share}) == cpus  # every CPU is used
        if k <= n:
            flat = [c for share in shares for c in share]
            assert sorted(flat) == cpus  # disjoint, exactly the CPUs
            sizes = [len(share) for share in shares]
            assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)
            assert all(share == list(range(share[0], share[0] + len(share))) for share in shares)  # contiguous
        else:
            assert all(len(share) == 1 for share in shares)
            assert Counter(c for share in shares for c in share) == Counter(cpus[i % n] for i in range(k))


def test_static_split_examples() -> None:
    assert multiprog.static_split([0, 1], 1) == [[0, 1]]
    assert multiprog.static_split([0, 1], 2) == [[0], [1]]
    assert multiprog.static_split([0, 1, 2, 3, 4], 2) == [[0, 1, 2], [3, 4]]
    assert multiprog.static_split([0, 1], 5) == [[0], [1], [0], [1], [0]]
    with pytest.raises(ValueError):
        multiprog.static_split([], 1)


def test_launch_environments_of_the_libgomp_baselines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    monkeypatch.setenv("GOMP_SPINCOUNT", "1")
    monkeypatch.setenv("LD_PRELOAD", "/somewhere/libthreadlab-omp.so:/x/libother.so")
    plan = multiprog.make_plan(program=FAKE, apps=["cg"], cpus=[0, 1, 2, 3], seed=1, stagger_s=0.5)

    def cell(baseline: str, degree: int, dedicated_cpus: int | None = None) -> multiprog.Cell:
        return multiprog.Cell(0, "cg", baseline, degree, dedicated_cpus or 4, dedicated_cpus is not None)

    gomp = multiprog.launches(cell("gomp", 3), plan, None)
    assert len(gomp) == 3 and [l.at_s for l in gomp] == [0.0, 0.5, 1.0]  # --stagger
    for launch in gomp:
        assert launch.env["OMP_NUM_THREADS"] == "4" and launch.affinity is None
        assert launch.argv == [str(FAKE), "--run", "study.multiprog.cg", "--param", "size=W"]
        assert "OMP_WAIT_POLICY" not in launch.env and "GOMP_SPINCOUNT" not in launch.env
        assert "OMP_DYNAMIC" not in launch.env and launch.env["LD_PRELOAD"] == "/x/libother.so"
    assert [l.env["OMP_WAIT_POLICY"] for l in multiprog.launches(cell("passive", 2), plan, None)] == ["passive"] * 2
    assert [l.env["OMP_DYNAMIC"] for l in multiprog.launches(cell("dynamic", 2), plan, None)] == ["true"] * 2
    static = multiprog.launches(cell("static", 3), plan, None)
    assert [l.affinity for l in static] == [[0, 1], [2], [3]]
    assert [l.env["OMP_NUM_THREADS"] for l in static] == ["2", "1", "1"]
    alone = multiprog.launches(cell("gomp", 1, dedicated_cpus=2), plan, None)
    assert [(l.affinity, l.env["OMP_NUM_THREADS"]) for l in alone] == [([0, 1], "2")]


# ------------------------------------------------------------ the tables


def _cell(app: str, baseline: str, degree: int, turnarounds: list[float], dedicated: bool = False,
          cpus: int = 2, cpu_s: float | None = None) -> multiprog.Cell:
    """A cell whose experiments had these turnarounds; each instance took
    cpu_s of CPU time (default: its turnaround)."""
    cell = multiprog.Cell(0, app, baseline, degree, cpus, dedicated)
    for t in turnarounds:
        instances = [multiprog.Instance(t, 0, True, {"verified": True, "teams": {"2": 3, "1": 1}, "regions": 4,
                                                      "time_s": t / 2, "managed": baseline == "rm" or None,
                                                      "quantity": "zeta", "tolerance": 1e-9}, 10, 20,
                                        cpu_s=t if cpu_s is None else cpu_s)
                     for _ in range(degree)]
        if degree > 1:
            instances[-1].turnaround_s = t * 2  # one slower instance: mean and max differ
        multiprog.record_experiment(cell, multiprog.Experiment("ok", None, instances, t * 2 + 0.5))
    return cell


def _records() -> list[dict[str, Any]]:
    plan = multiprog.make_plan(program=FAKE, apps=["cg"], baselines=["rm", "gomp"], degrees=[1, 4], runs=3,
                               seed=1, cpus=[0, 1])
    cells = [
        _cell("cg", "gomp", 1, [1.0, 1.2, 1.4], dedicated=True, cpus=2),
        _cell("cg", "gomp", 1, [2.0, 2.0, 2.0], dedicated=True, cpus=1),
        _cell("cg", "rm", 1, [1.0, 1.0, 1.0]),
        _cell("cg", "gomp", 1, [1.0, 1.0, 1.0]),
        _cell("cg", "rm", 4, [4.0, 5.0, 6.0]),
        _cell("cg", "gomp", 4, [8.0, 10.0, 12.0]),
    ]
    return [record for cell in cells for record in multiprog.cell_records(cell, plan)]


def test_records_are_valid_and_carry_every_measure() -> None:
    records = _records()
    assert all(schema.record_problems(r) == [] for r in records)
    turnaround = next(r for r in records if r["model"] == "rm" and r["params"].get("degree") == "4"
                      and r["metric"] == "turnaround")
    # Per experiment: instances 4, 4, 4, 8 -> mean 5; max 8; makespan 2t + 0.5.
    assert turnaround["samples"] == pytest.approx([5.0, 6.25, 7.5])
    by_metric = {r["metric"]: r for r in records if r["model"] == "rm" and r["params"].get("degree") == "4"}
    assert by_metric["turnaround_max"]["samples"] == pytest.approx([8.0, 10.0, 12.0])
    assert by_metric["makespan"]["samples"] == pytest.approx([8.5, 10.5, 12.5])
    assert by_metric["csw_voluntary"]["samples"] == [10.0] * 3 and by_metric["csw_involuntary"]["samples"] == [20.0] * 3
    extra = turnaround["extra"]
    assert extra["team_min"] == 1 and extra["team_max"] == 2 and extra["team_mean"] == pytest.approx(7 / 4)
    assert extra["teams"] == "1:12,2:36"  # 4 instances x 3 experiments x {2: 3, 1: 1}
    assert {c["name"]: c["ok"] for c in turnaround["checks"]} == {"verified": True, "managed": True}
    dedicated = [r for r in records if r["params"].get("mode") == "dedicated"]
    assert by_metric["cpu"]["samples"] == pytest.approx([4.0, 5.0, 6.0]) and by_metric["cpu"]["unit"] == "s"
    assert {r["metric"] for r in dedicated} == {"time", "csw_voluntary", "csw_involuntary", "cpu"}
    assert {r["params"]["threads"] for r in dedicated} == {"1", "2"}


def test_table_arithmetic_on_fixed_data() -> None:
    rows = {(r["baseline"], r["degree"]): r for r in tables_multiprog.summary_rows(_records())}
    rm4, gomp4 = rows[("rm", 4)], rows[("gomp", 4)]
    assert rm4["mean_turnaround_s"] == pytest.approx(6.25)
    assert gomp4["mean_turnaround_s"] == pytest.approx(12.5)
    assert rm4["ratio_to_gomp"] == pytest.approx(0.5)
    assert rows[("gomp", 1)]["ratio_to_gomp"] == pytest.approx(1.0)
    # slowdown: against the dedicated gomp run on every CPU (mean 1.2 s).
    assert rm4["slowdown"] == pytest.approx(6.25 / 1.2)
    assert rm4["mean_turnaround_max_s"] == pytest.approx(10.0)
    assert rm4["mean_makespan_s"] == pytest.approx(10.5)
    # 95% interval of 5, 6.25, 7.5 on the log scale (modified Cox): positive.
    logs = [math.log(v) for v in (5.0, 6.25, 7.5)]
    m = sum(logs) / 3
    var = sum((v - m) ** 2 for v in logs) / 2
    half = 4.302652729911275 * math.sqrt(var / 3 + var * var / 4)
    assert (rm4["low_s"], rm4["high_s"]) == (pytest.approx(math.exp(m + var / 2 - half)),
                                             pytest.approx(math.exp(m + var / 2 + half)))
    assert all(r["verified"] for r in rows.values())


def test_tables_render(capsys: pytest.CaptureFixture[str]) -> None:
    from rich.console import Console

    console = Console(width=200, force_terminal=False)
    tables_multiprog.render(console, _records(), title="Study multiprog, run 1")
    out = capsys.readouterr().out
    for text in ("the seed's Table 1", "the seed's Table 2", "Against plain libgomp",
                 "cg: CPU time (user + system) and context switches"):
        assert text in out
    assert "0.500 [" in out  # rm/gomp at k=4
    assert "6.25 s [" in out and "12.5 s [" in out


def _scenario_cell(name: str, baseline: str, per_entry: list[list[float]],
                   cpu: list[float] | None = None) -> multiprog.Cell:
    """A scenario cell whose experiments had these turnarounds (one list
    per program, one value per experiment); program i took cpu[i] of CPU
    time in each (default: none recorded)."""
    sc = multiprog.scenario(name, "small")
    cell = multiprog.Cell(0, name, baseline, len(sc.entries), 2, False, scenario=sc)
    for turnarounds in zip(*per_entry):
        instances = [multiprog.Instance(t, 0 if sc.measured(i) else -9, sc.measured(i),
                                        {"verified": True, "managed": baseline == "rm" or None, "shim_state": 2,
                                         "quantity": "x", "tolerance": 1e-9} if sc.measured(i) else {}, 1, 1,
                                        cpu_s=cpu[i] if cpu else None)
                     for i, t in enumerate(turnarounds)]
        measured = [sc.measured(i) for i in range(len(instances))]
        multiprog.record_experiment(cell, multiprog.Experiment("ok", None, instances, max(turnarounds), measured,
                                                               sc.fault is not None))
    return cell


def _scenario_records() -> list[dict[str, Any]]:
    plan = multiprog.make_plan(program=FAKE, apps=["ep"], baselines=["rm", "passive", "static"], degrees=[1],
                               runs=2, seed=1, cpus=[0, 1], size="small")
    cells = [
        _cell("ep", "gomp", 1, [2.0, 2.0], dedicated=True, cpus=2),
        _scenario_cell("late", "rm", [[1.0, 1.0], [3.0, 3.2]]),
        _scenario_cell("late", "passive", [[2.0, 2.0], [4.0, 4.0]]),
        _scenario_cell("mixed", "rm", [[2.0, 2.2], [1.0, 1.0], [0.5, 0.5]]),
        _scenario_cell("mixed", "passive", [[3.0, 3.0], [2.0, 2.0], [1.0, 1.0]]),
        _scenario_cell("mixed", "static", [[4.0, 4.0], [1.0, 1.0], [0.6, 0.6]]),
        _scenario_cell("kill", "rm", [[9.0, 9.0], [2.0, 2.0]]),
    ]
    return [record for cell in cells for record in multiprog.cell_records(cell, plan)]


def test_scenario_records_tables_and_the_late_gap(capsys: pytest.CaptureFixture[str]) -> None:
    records = _scenario_records()
    assert all(schema.record_problems(r) == [] for r in records)
    late = {r["metric"]: r for r in records if r["params"].get("scenario") == "late" and r["model"] == "rm"}
    assert late["turnaround.0.cg"]["samples"] == [1.0, 1.0] and late["turnaround.1.ep"]["samples"] == [3.0, 3.2]
    assert late["turnaround"]["params"] == {"scenario": "late", "workload": "cg@0s,ep@0.03s", "size": "small"}
    kill = {r["metric"]: r for r in records if r["params"].get("scenario") == "kill"}
    assert kill["turnaround"]["samples"] == [2.0, 2.0]  # the killed program is not a turnaround
    assert "turnaround.0.ep" not in kill and kill["turnaround"]["params"]["fault"] == "ep#0 SIGKILLed at 0.01s"
    assert kill["turnaround"]["extra"]["faults_applied"] == 2
    rows = tables_multiprog.summary_rows(records)
    mixed_rm = next(r for r in rows if r.get("scenario") == "mixed" and r["baseline"] == "rm")
    # rm (1.2 s) against the best other: static (1.87 s), not passive (2.0 s).
    assert mixed_rm["best_competitor"] == "static"
    assert mixed_rm["ratio_to_best_competitor"] == pytest.approx((2.1 + 1.0 + 0.5) / 3 / ((4.0 + 1.0 + 0.6) / 3))
    late_rm = next(r for r in rows if r.get("scenario") == "late" and r["baseline"] == "rm")
    # EP alone on both CPUs: 2.0 s (the dedicated run); gap = 3.1 - (2.0 + 1.0).
    assert late_rm["late_gap_s"] == pytest.approx(0.1) and late_rm["late_ep_alone_s"] == pytest.approx(2.0)
    assert all(r["low_s"] > 0 for r in rows if r.get("scenario"))
    from rich.console import Console

    tables_multiprog.render(Console(width=250, force_terminal=False), records, title="scenarios")
    out = capsys.readouterr().out
    assert "Scenarios where the manager should win" in out and "The late arrival" in out
    assert "ep@0s,cg@0.01s,mg@0.02s" in out and "static " in out and "+0.1 s" in out


def test_slowdown_falls_back_to_gomp_at_degree_1_without_dedicated_runs() -> None:
    records = [r for r in _records() if r["params"].get("mode") != "dedicated"]
    rows = {(r["baseline"], r["degree"]): r for r in tables_multiprog.summary_rows(records)}
    assert rows[("rm", 4)]["slowdown"] == pytest.approx(6.25)


def test_a_wrong_instance_fails_the_cell_check() -> None:
    plan = multiprog.make_plan(program=FAKE, apps=["cg"], baselines=["gomp"], degrees=[2], runs=1, seed=1,
                               cpus=[0, 1])
    bad = multiprog.Instance(1.0, 1, False, {"verified": False, "kernel": "cg", "quantity": "zeta", "value": 3.0,
                                             "reference": 2.0, "detail": "x"}, 1, 1)
    problem = multiprog._instance_problem(bad)
    assert problem is not None and problem[0] == "wrong" and "did not verify" in problem[1]
    crashed = multiprog.Instance(1.0, -9, False, {}, 1, 1, "boom")
    assert multiprog._instance_problem(crashed) == ("failed", "killed by SIGKILL: boom")
    cell = multiprog.Cell(0, "cg", "gomp", 2, 2, False)
    good = multiprog.Instance(1.0, 0, True, {"verified": True}, 1, 1)
    multiprog.record_experiment(cell, multiprog.Experiment("wrong", "1 of 2 instances: cg did not verify", [good, bad],
                                                           1.0))
    multiprog.record_experiment(cell, multiprog.Experiment("failed", "timed out after 5 s", [], 0.0))
    record = multiprog.cell_records(cell, plan)[0]
    checks = {c["name"]: c for c in record["checks"]}
    assert not checks["verified"]["ok"] and not checks["runs"]["ok"]
    assert "timed out" in checks["runs"]["detail"]


# ------------------------------------------------------------ the kernels


def npb_run(kernel: str, size: str = "small", env: dict[str, str] | None = None) -> dict[str, Any]:
    """threadlab-npb's record of one run (the native protocol), as the study
    reads it (multiprog.instance_data); the record asserted valid."""
    done = subprocess.run([str(NPB), "--run", f"study.multiprog.{kernel}", "--param", f"size={size}"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    schema.parse_record_line(done.stdout.strip().splitlines()[-1])
    return multiprog.instance_data(done.stdout)


@needs_npb
@pytest.mark.parametrize("kernel", multiprog.APPS)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_every_kernel_verifies_at_the_small_size(kernel: str, threads: int) -> None:
    data = npb_run(kernel, env={**multiprog.clean_environment(), "OMP_NUM_THREADS": str(threads)})
    assert data["verified"] is True and data["kernel"] == kernel and data["error"] <= data["tolerance"]
    assert data["team_max"] == threads and data["regions"] >= 1 and data["managed"] is None
    assert sum(data["teams"].values()) == data["regions"]


@needs_npb
def test_npb_usage_errors() -> None:
    for args, text in ((["--run", "study.multiprog.bt"], "unknown benchmark 'study.multiprog.bt'"),
                       (["--run", "study.multiprog.cg", "--param", "size=Z"], "cg has sizes small S W A"),
                       (["--run", "study.multiprog.cg", "--bogus"], "unexpected argument '--bogus'"),
                       ([], "--run study.multiprog.K, --list or --env is required")):
        done = subprocess.run([str(NPB), *args], capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 2 and text in done.stderr and not done.stdout


_A, _MASK = 1220703125, (1 << 46) - 1


def _randlc(state: list[int], a: int = _A) -> float:
    state[0] = (a * state[0]) & _MASK
    return state[0] / 2.0**46


@needs_npb
def test_ep_small_reference_recomputed_sequentially() -> None:
    """NAS EP for M = 20 in plain Python: one sequential stream of the
    generator (the kernel jumps ahead per batch instead)."""
    state, sx, sy = [271828183], 0.0, 0.0
    for _ in range(1 << 20):
        x1, x2 = 2 * _randlc(state) - 1, 2 * _randlc(state) - 1
        t = x1 * x1 + x2 * x2
        if t <= 1.0:
            f = math.sqrt(-2.0 * math.log(t) / t)
            sx, sy = sx + x1 * f, sy + x2 * f
    data = npb_run("ep")
    # The record carries 10 significant digits.
    assert data["value"] == pytest.approx(sx, rel=1e-9) and data["value2"] == pytest.approx(sy, rel=1e-9)


@needs_npb
def test_cg_small_reference_recomputed_with_numpy() -> None:
    """The CG kernel's matrix and inverse power iteration, in numpy, dense."""
    import numpy as np

    na, nonzer, niter, cgit, shift = 1400, 7, 8, 25, 10.0
    state = [314159265]
    a = np.zeros((na, na))
    for i in range(na):
        for _ in range((nonzer + 1) * (nonzer + 1) // 2):
            j = int(_randlc(state) * na)
            w = _randlc(state)
            if j == i or j >= na:
                continue
            a[i, j] -= w
            a[j, i] -= w
            a[i, i] += w
            a[j, j] += w
    for i in range(na):
        a[i, i] += shift + _randlc(state)
    x = np.full(na, 1.0 / math.sqrt(na))
    zeta = 0.0
    for _ in range(niter):
        z, r, p = np.zeros(na), x.copy(), x.copy()
        rho = r @ r
        for _ in range(cgit):
            q = a @ p
            alpha = rho / (p @ q)
            z += alpha * p
            r -= alpha * q
            rho_new = r @ r
            p = r + rho_new / rho * p
            rho = rho_new
        zeta = 1.0 / (x @ z)
        x = z / np.linalg.norm(z)
    data = npb_run("cg")
    assert data["value"] == pytest.approx(zeta, rel=1e-9)
    assert shift < zeta < shift + 1  # between the Gershgorin bound and the largest diagonal excess


# ------------------------------------------------------------ end to end


def _processes_with(marker: str) -> list[str]:
    """Live processes whose environment holds marker (our children and the
    managers they started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes().split(b"\0"):
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return found


@needs_all
def test_quick_study_end_to_end_with_show_and_report(db_path: Path, tmp_path: Path, run_cli: Any,
                                                     real_native: Path) -> None:
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    done = threadlab_run(db_path, "study", "multiprog", "--quick", "--runs", "1", "--name", "mp", "--seed", "3",
                         timeout=240, env={"TMPDIR": str(private_tmp)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert _processes_with(f"TMPDIR={private_tmp}") == []  # every instance and manager is gone
    assert list(private_tmp.iterdir()) == []  # the private managers' directories are removed
    records = stored_records(db_path)
    assert [schema.record_problems(r) for r in records if schema.record_problems(r)] == []
    assert all(r["status"] == "ok" for r in records)
    turnaround = [r for r in records if r["metric"] == "turnaround" and "degree" in r["params"]]
    # every baseline; llvmomp where its kernels were built (libomp-dev installed)
    baselines = [b for b in multiprog.BASELINES
                 if b != "llvmomp" or multiprog.llvmomp_program(real_native / multiprog.PROGRAM)]
    assert {(r["benchmark"], r["model"], r["params"]["degree"]) for r in turnaround} == {
        (f"study.multiprog.{a}", b, k) for a in multiprog.APPS for b in baselines for k in ("1", "2")}
    scenarios = {(r["params"]["scenario"], r["model"]): r for r in records
                 if r["metric"] == "turnaround" and "scenario" in r["params"]}
    assert {name for name, _ in scenarios} == set(multiprog.SCENARIOS)
    assert {b for (name, b) in scenarios if name == "stop"} == {"rm", "ult", "passive"}
    for (name, baseline), record in scenarios.items():
        assert next(c for c in record["checks"] if c["name"] == "verified")["ok"], record["checks"]
        if baseline == "rm":  # managed throughout, or cooperative once the manager stopped
            assert all(c["ok"] for c in record["checks"] if c["name"] in ("managed", "cooperative")), record["checks"]
    assert "Scenarios where the manager should win" in done.stdout
    ncpus = len(os.sched_getaffinity(0))
    dedicated = [r for r in records if r["metric"] == "time"]
    assert len(dedicated) == len(multiprog.APPS) * 2 * ncpus
    for record in turnaround + dedicated:
        assert next(c for c in record["checks"] if c["name"] == "verified")["ok"]
        extra = record["extra"]
        assert 1 <= extra["team_min"] <= extra["team_max"] <= ncpus
        if record["model"] in ("rm", "ult") and "degree" in record["params"]:
            assert next(c for c in record["checks"] if c["name"] == "managed")["ok"]
        if record["model"] == "ult":  # really on libthreadlab-gomp, not fallen back to libgomp
            assert next(c for c in record["checks"] if c["name"] == "runtime")["ok"]
            assert extra["runtime"] == "libthreadlab-gomp.so"
        if record["model"] == "llvmomp":  # really on LLVM's libomp
            assert next(c for c in record["checks"] if c["name"] == "runtime")["ok"]
            assert extra["runtime"].startswith("libomp.so")
        if record["model"] == "static" and ncpus == 2 and record["params"].get("degree") == "2":
            assert extra["team_max"] == 1  # each instance's share is one CPU
    for text in ("the seed's Table 1", "the seed's Table 2", "Against plain libgomp",
                 "OpenMP on user-level threads against the shim"):
        assert text in done.stdout
    with sqlite3.connect(db_path) as connection:
        options, status = connection.execute("SELECT options, status FROM runs").fetchone()
    assert json.loads(options)["study"] == "multiprog" and json.loads(options)["seed"] == 3 and status == "complete"
    code, out, _ = run_cli("--db", str(db_path), "show", "mp")
    assert code == 0 and "the seed's Table 2" in out and "Study of run 1 (mp)" in out
    report_dir = tmp_path / "report"
    code, out, err = run_cli("--db", str(db_path), "report", "mp", "-o", str(report_dir))
    assert code == 0, err
    figures = {p.name for p in (report_dir / "figures").iterdir()}
    assert {f"run1-multiprog-{a}.png" for a in multiprog.APPS} | {"run1-multiprog-scenarios.png"} <= figures
    page = (report_dir / "index.html").read_text()
    assert "mean turnaround per degree" in page and "scenarios: mean turnaround per baseline" in page


@needs_all
def test_ctrl_c_keeps_the_finished_cells_and_leaves_nothing_running(db_path: Path, tmp_path: Path) -> None:
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "threadlab", "--db", str(db_path), "study", "multiprog", "--quick", "--runs", "1",
         "--apps", "cg", "--degree", "1,2,3,4,5,6", "--no-dedicated", "--scenarios", "none", "--seed", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "python"), "THREADLAB_NATIVE_DIR": str(REAL_NATIVE_DIR),
             "TMPDIR": str(private_tmp)})
    try:
        wait_for_records(db_path, 5, timeout_s=120)  # one cell is stored
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err[-2000:]
    assert "interrupted after" in err and "Traceback" not in err
    deadline = time.monotonic() + 5
    while _processes_with(f"TMPDIR={private_tmp}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(f"TMPDIR={private_tmp}") == []
    records = stored_records(db_path)
    assert records and all(schema.record_problems(r) == [] for r in records)
    with sqlite3.connect(db_path) as connection:
        assert connection.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"


def test_an_instance_that_cannot_start_fails_its_experiment(tmp_path: Path) -> None:
    program = tmp_path / "threadlab-npb"
    program.write_text("not a program\n")
    program.chmod(0o755)  # executable, but no interpreter line: exec fails
    plan = multiprog.make_plan(program=program, apps=["cg"], baselines=["gomp"], degrees=[2], runs=1, seed=1,
                               cpus=[0], dedicated=False)
    from threadlab.native.process import StopRequest

    experiment = multiprog.run_experiment(plan, plan.cells[0], StopRequest())
    assert experiment is not None and experiment.kind == "failed"
    assert experiment.reason is not None and "cannot start threadlab-npb" in experiment.reason


def test_an_instance_that_does_not_verify_fails_the_study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          run_cli: Any, db_path: Path) -> None:
    """A stand-in threadlab-npb whose second instance reports a wrong
    result: the cell's `verified` check fails and the study exits 1."""
    directory = tmp_path / "native"
    directory.mkdir()
    program = directory / "threadlab-npb"
    program.write_text(f"""#!{sys.executable}
import json, os, sys, time
marker = os.path.join({str(tmp_path)!r}, "first")
first = not os.path.exists(marker)
open(marker, "a").close()
ok = first
record = {{"schema": "threadlab.record/1", "benchmark": sys.argv[2], "model": "openmp", "metric": "time",
          "params": {{"size": sys.argv[4][5:]}}, "placement": "none", "cpus": [], "unit": "s", "quantity": "time",
          "status": "ok", "reason": None, "clock": "monotonic", "iterations": 1, "actions_per_iteration": 1,
          "warmup": 0, "overhead_ns": None, "samples": [0.01],
          "summary": {{"n": 1, "mean": 0.01, "sd": None, "rsd": None, "se": None, "rse": None, "median": 0.01,
                      "min": 0.01, "max": 0.01}},
          "stop": {{"rule": "fixed", "target": None, "reason": "fixed", "min_timings": 1, "max_timings": 1,
                   "elapsed_s": 0.01}}, "derived": None,
          "checks": [{{"name": "verified", "ok": ok, "value": 0.0, "detail": "stand-in"}}],
          "extra": {{"quantity": "zeta", "value": 1.0, "reference": 1.0 if ok else 2.0, "tolerance": 1e-9,
                    "regions": 3, "teams": os.environ["OMP_NUM_THREADS"] + ":3", "managed": None}}}}
print(json.dumps(record))
""")
    program.chmod(0o755)
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(directory))
    code, out, err = run_cli("--db", str(db_path), "study", "multiprog", "--apps", "cg", "--baselines", "gomp",
                             "--degree", "2", "--runs", "1", "--no-dedicated", "--scenarios", "none", "--quiet")
    assert code == 1, err
    records = stored_records(db_path)
    assert {r["metric"] for r in records} == set(multiprog.METRICS)
    verified = next(c for c in records[0]["checks"] if c["name"] == "verified")
    assert not verified["ok"] and "1 of 1 experiments" in verified["detail"] and "did not verify" in verified["detail"]
    assert "!" in out  # the table marks the cell


# ------------------------------------------------ ult: libthreadlab-gomp under the manager


@needs_all
def test_launches_of_the_ult_baseline(monkeypatch: pytest.MonkeyPatch, real_native: Path) -> None:
    # the kernels through the launcher on libthreadlab-gomp, under the
    # experiment's private manager, every instance asking for every CPU; the
    # user's preloaded runtimes and THREADLAB_GOMP_* do not leak in
    monkeypatch.setenv("LD_PRELOAD", "/somewhere/libthreadlab-gomp.so:/x/libother.so")
    monkeypatch.setenv("THREADLAB_GOMP_VPS", "7")
    plan = multiprog.make_plan(program=FAKE, apps=["cg"], baselines=["ult"], cpus=[0, 1], seed=1)
    starts = multiprog.launches(multiprog.Cell(0, "cg", "ult", 2, 2, False), plan, Path("/run/private-rm"))
    assert len(starts) == 2
    for launch in starts:
        assert launch.argv[:3] == [str(real_native / rm.LAUNCHER), "--runtime", "ult"]
        assert launch.argv[3:] == ["--quiet", "--", str(FAKE), "--run", "study.multiprog.cg", "--param", "size=W"]
        assert launch.env["OMP_NUM_THREADS"] == "2" and launch.env[rm.DIR_ENV] == "/run/private-rm"
        assert launch.env["LD_PRELOAD"] == "/x/libother.so" and "THREADLAB_GOMP_VPS" not in launch.env
    shim = multiprog.launches(multiprog.Cell(0, "cg", "rm", 1, 2, False), plan, Path("/run/private-rm"))
    assert "--runtime" not in shim[0].argv  # rm: the shim, the launcher's default
    assert multiprog.MANAGED_BASELINES == {"rm": "shim", "ult": "ult"}


def _fake_programs(tmp_path: Path, llvmomp: bool) -> Path:
    """An executable threadlab-npb in tmp_path, and threadlab-npb-llvmomp
    beside it when llvmomp (neither is run)."""
    names = [multiprog.PROGRAM] + ([multiprog.LLVMOMP_PROGRAM] if llvmomp else [])
    for name in names:
        (tmp_path / name).write_text("#!/bin/sh\nexit 1\n")
        (tmp_path / name).chmod(0o755)
    return tmp_path / multiprog.PROGRAM


def test_the_llvmomp_baseline_runs_the_kernels_linked_against_libomp(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    program = _fake_programs(tmp_path, llvmomp=True)
    llvmomp = tmp_path / multiprog.LLVMOMP_PROGRAM
    # built: among the default baselines, after gomp
    plan = multiprog.make_plan(program=program, apps=["cg"], cpus=[0, 1], seed=1, scenarios=[])
    assert plan.baselines == list(multiprog.BASELINES) and plan.llvmomp_program == llvmomp
    # its instances: that program, plain libomp defaults (nothing of libgomp's, KMP_* of the user scrubbed)
    monkeypatch.setenv("KMP_BLOCKTIME", "0")
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    starts = multiprog.launches(multiprog.Cell(0, "cg", "llvmomp", 2, 2, False), plan, None)
    assert [l.argv for l in starts] == [[str(llvmomp), "--run", "study.multiprog.cg", "--param", "size=W"]] * 2
    for launch in starts:
        assert launch.env["OMP_NUM_THREADS"] == "2" and launch.affinity is None
        assert not any(k.startswith(("KMP_", "OMP_WAIT", "GOMP_")) for k in launch.env)
    gomp = multiprog.launches(multiprog.Cell(0, "cg", "gomp", 1, 2, False), plan, None)
    assert gomp[0].argv[0] == str(program)
    # not built: left out of the defaults, refused by name saying what to install
    llvmomp.unlink()
    program = _fake_programs(tmp_path, llvmomp=False)
    assert "llvmomp" not in multiprog.make_plan(program=program, cpus=[0, 1], seed=1).baselines
    with pytest.raises(ThreadlabError, match="threadlab-npb-llvmomp is not built.*libomp-dev"):
        multiprog.make_plan(program=program, baselines=["gomp", "llvmomp"], cpus=[0, 1], seed=1)


def test_an_llvmomp_instance_on_another_runtime_fails_its_check(tmp_path: Path) -> None:
    plan = multiprog.make_plan(program=_fake_programs(tmp_path, llvmomp=True), apps=["ep"], baselines=["llvmomp"],
                               degrees=[2], runs=1, seed=1, cpus=[0, 1])
    libomp = "/usr/lib/llvm-14/lib/libomp.so.5"
    good = multiprog.cell_records(_ult_cell([libomp, libomp], [None, None], "llvmomp"), plan)[0]
    assert {c["name"]: c["ok"] for c in good["checks"]} == {"verified": True, "runtime": True}
    assert good["extra"]["runtime"] == "libomp.so.5" and good["extra"]["program"] == multiprog.LLVMOMP_PROGRAM
    wrong = multiprog.cell_records(_ult_cell([libomp, "/usr/lib/x86_64-linux-gnu/libgomp.so.1"], [None, None],
                                             "llvmomp"), plan)[0]
    check = next(c for c in wrong["checks"] if c["name"] == "runtime")
    assert check["ok"] is False and "1 of 2 instances ran on another runtime" in check["detail"]
    # a library whose name only begins like libomp's is not it
    lookalike = multiprog.cell_records(_ult_cell(["/x/libompx.so", libomp], [None, None], "llvmomp"), plan)[0]
    assert next(c for c in lookalike["checks"] if c["name"] == "runtime")["ok"] is False


def _ult_cell(runtimes: list[str], managed: list[bool | None], baseline: str = "ult") -> multiprog.Cell:
    cell = multiprog.Cell(0, "ep", baseline, len(runtimes), 2, False)
    instances = [multiprog.Instance(1.0, 0, True, {"verified": True, "runtime": r, "managed": m, "quantity": "sx",
                                                   "tolerance": 1e-8}, 1, 1) for r, m in zip(runtimes, managed)]
    multiprog.record_experiment(cell, multiprog.Experiment("ok", None, instances, 1.0))
    return cell


def test_a_ult_instance_on_another_runtime_or_unmanaged_fails_its_check() -> None:
    plan = multiprog.make_plan(program=FAKE, apps=["ep"], baselines=["ult"], degrees=[2], runs=1, seed=1, cpus=[0, 1])
    ult = "/b/lib/libthreadlab-gomp.so"
    good = multiprog.cell_records(_ult_cell([ult, ult], [True, True]), plan)[0]
    assert {c["name"]: c["ok"] for c in good["checks"]} == {"verified": True, "runtime": True, "managed": True}
    assert good["extra"]["runtime"] == "libthreadlab-gomp.so"
    fell_back = multiprog.cell_records(_ult_cell([ult, "/usr/lib/x86_64-linux-gnu/libgomp.so.1"], [True, True]),
                                       plan)[0]
    check = next(c for c in fell_back["checks"] if c["name"] == "runtime")
    assert check["ok"] is False and "1 of 2 instances ran on another runtime" in check["detail"]
    assert "libgomp.so.1" in check["detail"]
    unmanaged = multiprog.cell_records(_ult_cell([ult, ult], [True, False]), plan)[0]
    assert next(c for c in unmanaged["checks"] if c["name"] == "managed")["ok"] is False


def test_ult_against_rm_target_rows_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    # EP (long regions): 0.8 of rm's turnaround meets "15% lower"; CG: 1.1 is worse than rm;
    # the late arrival: 0.9 does not meet "15% lower".  Measured, never asserted elsewhere.
    plan = multiprog.make_plan(program=FAKE, apps=["ep", "cg"], baselines=["rm", "ult"], degrees=[2], runs=3,
                               seed=1, cpus=[0, 1], size="small")
    cells = [
        _cell("ep", "rm", 2, [1.0, 1.1, 1.2]), _cell("ep", "ult", 2, [0.8, 0.88, 0.96]),
        _cell("cg", "rm", 2, [1.0, 1.1, 1.2]), _cell("cg", "ult", 2, [1.1, 1.21, 1.32]),
        _scenario_cell("late", "rm", [[1.0, 1.0], [3.0, 3.0]]), _scenario_cell("late", "ult", [[0.9, 0.9], [2.7, 2.7]]),
    ]
    records = [record for cell in cells for record in multiprog.cell_records(cell, plan)]
    targets = {(t.kernel, t.scenario): t for t in tables_multiprog.ult_targets(tables_multiprog.collect(records))}
    assert targets[("ep", None)].ratio == pytest.approx(0.8) and targets[("ep", None)].met
    assert targets[("ep", None)].bound == pytest.approx(0.85)
    assert targets[("cg", None)].ratio == pytest.approx(1.1) and not targets[("cg", None)].met
    assert targets[("cg", None)].bound == 1.0
    assert targets[(None, "late")].ratio == pytest.approx(0.9) and not targets[(None, "late")].met
    rows = tables_multiprog.summary_rows(records)
    ep_ult = next(r for r in rows if r.get("kernel") == "ep" and r["baseline"] == "ult")
    assert ep_ult["ratio_to_rm"] == pytest.approx(0.8) and ep_ult["ult_target_met"] is True
    assert "ratio_to_rm" not in next(r for r in rows if r.get("kernel") == "ep" and r["baseline"] == "rm")
    from rich.console import Console

    tables_multiprog.render(Console(width=250, force_terminal=False), records, title="ult")
    out = capsys.readouterr().out
    assert "OpenMP on user-level threads against the shim" in out
    assert "ep k=2" in out and "not met" in out and " met" in out


def test_shared_floor_is_egalitarian_processor_sharing() -> None:
    floor = tables_multiprog.shared_floor
    assert floor([(0.0, 1.0)], 2) == pytest.approx([0.5])  # alone: perfect speedup on both CPUs
    assert floor([(0.0, 1.0)] * 2, 2) == pytest.approx([1.0, 1.0])  # k * W / N
    assert floor([(0.0, 1.0)] * 3, 2) == pytest.approx([1.5, 1.5, 1.5])
    # The late arrival: CG (0.1 CPU s) alone for 0.03 s at 2 CPUs (0.06 done), then 1 CPU each until CG
    # ends at 0.07; EP (0.6) did 0.04 by then and runs its 0.56 left on both CPUs: ends at 0.35.
    assert floor([(0.0, 0.1), (0.03, 0.6)], 2) == pytest.approx([0.07, 0.32])
    assert floor([(0.0, 0.2), (1.0, 0.2)], 2) == pytest.approx([0.1, 0.1])  # an idle gap between them
    # 1 CPU each until the shorter ends at 0.1 s; the longer then has 0.2 left on both CPUs
    assert floor([(0.0, 0.3), (0.0, 0.1)], 2) == pytest.approx([0.2, 0.1])


def test_the_ult_target_against_the_floor(capsys: pytest.CaptureFixture[str]) -> None:
    # EP: each instance took 1.5 CPU s, so two on 2 CPUs cannot end before 1.5 s; rm's mean is 1.65 s
    # (_cell: one instance of two takes twice as long) and "15% lower" asks for 1.40: out of reach.
    # CG's work (0.5) leaves it reachable.  The late
    # arrival: CG 0.1 and EP 0.6 CPU s (the least over rm and ult) -> floor (0.07 + 0.32) / 2 = 0.195,
    # above 0.85 x rm's 0.205.
    plan = multiprog.make_plan(program=FAKE, apps=["ep", "cg"], baselines=["rm", "ult"], degrees=[2], runs=3,
                               seed=1, cpus=[0, 1], size="small")
    cells = [
        _cell("ep", "rm", 2, [1.0, 1.1, 1.2], cpu_s=1.55), _cell("ep", "ult", 2, [1.0, 1.1, 1.2], cpu_s=1.5),
        _cell("cg", "rm", 2, [1.0, 1.1, 1.2], cpu_s=0.5), _cell("cg", "ult", 2, [1.1, 1.21, 1.32], cpu_s=0.6),
        _scenario_cell("late", "rm", [[0.08, 0.08], [0.33, 0.33]], cpu=[0.1, 0.7]),
        _scenario_cell("late", "ult", [[0.08, 0.08], [0.33, 0.33]], cpu=[0.12, 0.6]),
        _scenario_cell("kill", "rm", [[9.0, 9.0], [2.0, 2.0]], cpu=[1.0, 1.0]),
        _scenario_cell("kill", "ult", [[9.0, 9.0], [2.0, 2.0]], cpu=[1.0, 1.0]),
    ]
    records = [record for cell in cells for record in multiprog.cell_records(cell, plan)]
    late_rm = {r["metric"]: r for r in records if r["params"].get("scenario") == "late" and r["model"] == "rm"}
    assert late_rm["cpu.0.cg"]["samples"] == [0.1, 0.1] and late_rm["cpu.1.ep"]["samples"] == [0.7, 0.7]
    targets = {(t.kernel, t.scenario): t for t in tables_multiprog.ult_targets(tables_multiprog.collect(records))}
    ep, cg, late = targets[("ep", None)], targets[("cg", None)], targets[(None, "late")]
    assert ep.floor == pytest.approx(1.5) and ep.rm_mean == pytest.approx(1.65)
    assert ep.reachable is False and not ep.met
    assert cg.floor == pytest.approx(0.5) and cg.reachable is True
    assert late.floor == pytest.approx((0.07 + 0.32) / 2) and late.reachable is False
    assert targets[(None, "kill")].floor is None and targets[(None, "kill")].reachable is None  # one killed
    rows = tables_multiprog.summary_rows(records)
    ep_ult = next(r for r in rows if r.get("kernel") == "ep" and r["baseline"] == "ult")
    assert ep_ult["floor_s"] == pytest.approx(1.5) and ep_ult["ult_target_reachable"] is False
    from rich.console import Console

    tables_multiprog.render(Console(width=300, force_terminal=False), records, title="ult")
    out = capsys.readouterr().out
    assert "no: the bound is below the floor" in out and "rm / floor" in out
    assert "1.100" in out  # EP: rm's 1.65 s against the floor's 1.5 s
    # a run stored before CPU times were recorded: neither the floor's columns nor a CPU column
    older = [r for r in records if not r["metric"].startswith("cpu")]
    assert all(t.floor is None for t in tables_multiprog.ult_targets(tables_multiprog.collect(older)))
    tables_multiprog.render(Console(width=300, force_terminal=False), older, title="ult")
    out = capsys.readouterr().out
    assert "OpenMP on user-level threads against the shim" in out
    assert "rm / floor" not in out and "CPU time" not in out and "ep: context switches" in out


def test_the_floor_reads_the_least_cpu_time_of_every_cell_of_the_kernel() -> None:
    # The degree-1 workload under rm took the least CPU time (1.2 s); the dedicated run of rm on 1 CPU
    # (2.0 s) has the same (metric, kernel, baseline, count) key in the other table and must not hide it.
    plan = multiprog.make_plan(program=FAKE, apps=["ep"], baselines=["rm", "ult"], degrees=[1, 2], runs=2,
                               seed=1, cpus=[0, 1], size="small")
    cells = [_cell("ep", "rm", 1, [1.0, 1.0], cpu_s=1.2), _cell("ep", "rm", 1, [2.0, 2.0], dedicated=True, cpus=1,
                                                                   cpu_s=2.0),
             _cell("ep", "rm", 2, [3.0, 3.0], cpu_s=3.0), _cell("ep", "ult", 2, [3.0, 3.0], cpu_s=3.0)]
    data = tables_multiprog.collect([record for cell in cells for record in multiprog.cell_records(cell, plan)])
    assert tables_multiprog.workload_floor(data, "ep", 2, 2) == pytest.approx(1.2)  # 2 x 1.2 / 2
    assert tables_multiprog.workload_floor(data, "cg", 2, 2) is None  # no CPU time of it
