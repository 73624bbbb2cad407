"""`threadlab study omp` (docs/omp-suite.md, "The study"): the plan, a run's
outcome, the cells' records and tables, and a quick study on the programs
built here."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import REAL_NATIVE_DIR, stored_records, threadlab_run
from threadlab.errors import UserError
from threadlab.native.protocol import BenchmarkInfo, ParamInfo
from threadlab.output.table import make_console
from threadlab.records import schema
from threadlab.records.record import new_record
from threadlab.study import omp, tables_omp
from threadlab.study.engine import cell_record

SYNC = ("parallel", "barrier", "nested")
TASK = ("master_task", "taskwait")


def _info(benchmark: str, model: str, constructs: tuple[str, ...]) -> BenchmarkInfo:
    params = (ParamInfo("construct", "", constructs, constructs), ParamInfo("threads", "", ("1", "2", "4"), ("2",)))
    return BenchmarkInfo(benchmark, model, "", "overhead", "ns", 2, ("same-cpu", "different-cpus"),
                         ("different-cpus",), params, f"threadlab-bench-omp-{model}", "omp")


def _catalog(ult_tasks: bool = True) -> tuple[list[BenchmarkInfo], dict[str, Path]]:
    infos = [_info("omp.sync", m, SYNC) for m in ("gomp", "ult")]
    infos += [_info("omp.task", "gomp", TASK)] + ([_info("omp.task", "ult", TASK)] if ult_tasks else [])
    return infos, {f"threadlab-bench-omp-{m}": Path(f"/bin/threadlab-bench-omp-{m}") for m in ("gomp", "ult")}


def test_the_plan_crosses_constructs_and_runtimes_in_a_seeded_order() -> None:
    catalog, programs = _catalog()
    plan = omp.make_plan(catalog=catalog, programs=programs, constructs=["barrier", "taskwait"], runs=3, seed=7)
    assert [(c.construct, c.runtime, c.benchmark) for c in plan.cells] == [
        ("barrier", "gomp", "omp.sync"), ("barrier", "ult", "omp.sync"),
        ("taskwait", "gomp", "omp.task"), ("taskwait", "ult", "omp.task")]
    assert len(plan.jobs) == 12 and sorted(j.cell for j in plan.jobs) == sorted([0, 1, 2, 3] * 3)
    same = omp.make_plan(catalog=catalog, programs=programs, constructs=["barrier", "taskwait"], runs=3, seed=7)
    assert same.jobs == plan.jobs
    assert omp.run_argv(plan, plan.cells[3]) == [
        "/bin/threadlab-bench-omp-ult", "--run", "omp.task", "--placement", "different-cpus",
        "--param", "construct=taskwait", "--param", "threads=2"]


@pytest.mark.parametrize("option, value, words", [
    ("constructs", ["barier"], "unknown construct 'barier'; accepted: parallel, barrier, nested"),
    ("runtimes", ["llvmomp"], "'llvmomp' has no program here; accepted: gomp, ult"),
    ("threads", 3, "--threads 3: not a team size of the suite; accepted: 1, 2, 4"),
    ("placement", "far", "--placement far: expected one of"),
])
def test_the_plan_refuses_what_the_programs_do_not_have(option: str, value: Any, words: str) -> None:
    catalog, programs = _catalog()
    with pytest.raises(UserError, match=words.replace("(", r"\(")):
        omp.make_plan(catalog=catalog, programs=programs, **{option: value})


def test_a_construct_a_runtime_lacks_is_an_unsupported_cell() -> None:
    catalog, programs = _catalog(ult_tasks=False)
    plan = omp.make_plan(catalog=catalog, programs=programs, constructs=["taskwait"], runs=2, seed=1)
    ult = plan.cells[1]
    assert ult.unsupported == "ult's program has no construct taskwait"
    record = omp.cell_record_of(ult, plan)
    assert record["status"] == "unsupported" and schema.record_problems(record) == []


def _run_record(median: float, failed: tuple[str, ...] = ()) -> dict[str, Any]:
    checks = [{"name": name, "ok": name not in failed, "value": 0.0, "detail": f"{name} detail"}
              for name in ("work", omp.STATE_CHECK)]
    return {"status": "ok", "summary": {"median": median}, "checks": checks, "cpus": [0, 1], "unit": "ns",
            "clock": "monotonic", "extra": {"runtime_library": "/lib/x.so"}}


def _measured_plan(medians: dict[tuple[str, str], list[float]]) -> tuple[omp.Plan, list[dict[str, Any]]]:
    catalog, programs = _catalog()
    constructs = list(dict.fromkeys(c for c, _ in medians))
    plan = omp.make_plan(catalog=catalog, programs=programs, constructs=constructs, runs=3, seed=3)
    for cell in plan.cells:
        for value in medians[(cell.construct, cell.runtime)]:
            omp.record_outcome(cell, omp.Outcome("ok", None, _run_record(value), 0.1))
    return plan, [omp.cell_record_of(cell, plan) for cell in plan.cells]


def test_a_cell_keeps_each_runs_median_and_marks_a_changed_machine_state() -> None:
    catalog, programs = _catalog()
    plan = omp.make_plan(catalog=catalog, programs=programs, constructs=["barrier"], runtimes=["ult"], runs=3)
    cell = plan.cells[0]
    omp.record_outcome(cell, omp.Outcome("ok", None, _run_record(120.0), 0.5))
    omp.record_outcome(cell, omp.Outcome("ok", None, _run_record(300.0, failed=(omp.STATE_CHECK,)), 0.5))
    omp.record_outcome(cell, omp.Outcome("failed", "timed out after 30 s", {}, 30.0))
    record = omp.cell_record_of(cell, plan)
    assert schema.record_problems(record) == []
    assert record["samples"] == [120.0, 300.0] and record["model"] == "ult"
    assert record["params"] == {"construct": "barrier", "threads": "2"}
    checks = {c["name"]: c for c in record["checks"]}
    assert checks["verified"]["ok"] and not checks[omp.STATE_CHECK]["ok"]
    assert "1 of 2 runs: the machine changed state" in checks[omp.STATE_CHECK]["detail"]
    assert "team_apart" not in checks
    assert not checks["runs"]["ok"] and "timed out after 30 s" in checks["runs"]["detail"]
    assert record["extra"]["runs_state_changed"] == 1 and record["stop"]["elapsed_s"] == 31.0


def test_a_team_that_shared_a_cpu_on_a_loaded_machine_is_marked_not_wrong(tmp_path: Path) -> None:
    catalog, programs = _catalog()
    plan = omp.make_plan(catalog=catalog, programs=programs, constructs=["barrier"], runtimes=["ult"], runs=1)
    cell = plan.cells[0]
    # a point whose team_apart check failed (its ULTs shared a VP while sampled): a run of the suite's own program
    # whose record says so, classified by run_once
    point = new_record("omp.sync", "ult", metric="overhead", params={"construct": "barrier", "threads": "2"},
                       placement="different-cpus", cpus=[0, 1], unit="ns", quantity="overhead per construct")
    point = cell_record(point, [250.0, 260.0, 255.0], clock="monotonic", runs=3, elapsed_s=0.1, failures=[],
                        runs_done=3, nothing="", checks=lambda: [
                            {"name": "work", "ok": True, "value": 3.0, "detail": "counted as expected"},
                            {"name": "team_apart", "ok": False, "value": 256.0, "detail": "256 of 256 shared"}])
    (tmp_path / "point.json").write_text(json.dumps(point) + "\n")
    program = tmp_path / "threadlab-bench-omp-ult"
    program.write_text(f"#!/bin/sh\ncat '{tmp_path / 'point.json'}'\n")
    program.chmod(0o755)
    cell.program = program
    outcome = omp.run_once(plan, cell, omp.StopRequest())
    assert outcome is not None and outcome.kind == "ok", outcome
    omp.record_outcome(cell, outcome)
    checks = {c["name"]: c for c in omp.cell_record_of(cell, plan)["checks"]}
    assert checks["verified"]["ok"] and not checks["team_apart"]["ok"]
    assert "1 of 1 runs: two threads of the team shared a CPU" in checks["team_apart"]["detail"]


def test_a_run_whose_point_failed_a_check_is_a_wrong_result() -> None:
    catalog, programs = _catalog()
    plan = omp.make_plan(catalog=catalog, programs=programs, constructs=["barrier"], runtimes=["gomp"], runs=1)
    cell = plan.cells[0]
    omp.record_outcome(cell, omp.Outcome("wrong", "check work: 3 counted, 4 expected", _run_record(9.0, ("work",))))
    checks = {c["name"]: c for c in omp.cell_record_of(cell, plan)["checks"]}
    assert not checks["verified"]["ok"] and "3 counted, 4 expected" in checks["verified"]["detail"]


def test_the_tables_give_each_runtimes_median_over_libgomps() -> None:
    _, records = _measured_plan({("barrier", "gomp"): [280.0, 290.0, 300.0], ("barrier", "ult"): [130.0, 140.0, 150.0],
                                 ("taskwait", "gomp"): [500.0, 510.0, 520.0], ("taskwait", "ult"): [95.0, 100.0, 110.0]})
    # the rows in the suite's order, whatever order the cells ended in
    assert [r["construct"] for r in tables_omp.summary_rows(records[::-1])] == ["barrier"] * 2 + ["taskwait"] * 2
    rows = {(r["construct"], r["runtime"]): r for r in tables_omp.summary_rows(records)}
    assert rows[("barrier", "gomp")]["median"] == 290.0 and "ratio_to_baseline" not in rows[("barrier", "gomp")]
    assert rows[("taskwait", "ult")]["ratio_to_baseline"] == pytest.approx(100 / 510)
    assert rows[("barrier", "ult")]["ratio_to_baseline"] == pytest.approx(140 / 290)
    low, high = rows[("taskwait", "ult")]["ratio_low"], rows[("taskwait", "ult")]["ratio_high"]
    assert low < 100 / 510 < high
    out = io.StringIO()
    tables_omp.render(make_console(out), records, title="Study omp, test")
    text = out.getvalue()
    assert "taskwait" in text and "0.196 [" in text and "0.483 [" in text and "threadlab-gomp (ult) / libgomp" in text


@pytest.mark.skipif(not all(os.access(REAL_NATIVE_DIR / f"threadlab-bench-omp-{m}", os.X_OK) for m in ("gomp", "ult")),
                    reason="threadlab-bench-omp-gomp or -ult not built")
@pytest.mark.heavy
def test_a_quick_study_on_the_programs_built_here(tmp_path: Path) -> None:
    db = tmp_path / "study.db"
    done = threadlab_run(db, "study", "omp", "--quick", "--quiet", "--json", "--constructs", "barrier,taskwait",
                         "--runtimes", "gomp,ult", "--seed", "5")
    records = [r for r in stored_records(db) if r["benchmark"] == omp.BENCHMARK] if db.exists() else []
    failed = [(r["model"], r["params"], c) for r in records for c in r.get("checks", []) if not c["ok"]]
    assert done.returncode == 0, f"{done.stderr}\n{failed}\n{[r.get('reason') for r in records]}"
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert {(r["construct"], r["runtime"]) for r in rows} == {(c, m) for c in ("barrier", "taskwait")
                                                               for m in ("gomp", "ult")}
    assert all(r["status"] == "ok" and r["runs"] == omp.QUICK_RUNS and r["median"] > 0 for r in rows)
    assert all(r["ratio_to_baseline"] and r["ratio_to_baseline"] > 0 for r in rows if r["runtime"] == "ult")
    assert len(records) == 4 and all(schema.record_problems(r) == [] for r in records)
    assert all(len(r["samples"]) == omp.QUICK_RUNS for r in records)
    # each run was a point of the suite's program, checked: the runtime that served it is the cell's
    assert {r["model"]: Path(r["extra"]["runtime_library"]).name.split(".")[0] for r in records} == {
        "gomp": "libgomp", "ult": "libthreadlab-gomp"}


def test_the_report_draws_a_studys_cells_as_the_suites_table_of_constructs() -> None:
    from threadlab.report.omp import construct_table

    _, records = _measured_plan({("barrier", "gomp"): [280.0, 290.0, 300.0], ("barrier", "ult"): [130.0, 140.0, 150.0],
                                 ("taskwait", "gomp"): [500.0, 510.0, 520.0], ("taskwait", "ult"): [95.0, 100.0, 110.0]})
    table = construct_table(records)
    assert table is not None and table.runtimes == ["gomp", "ult"]
    assert sorted(row[0] for row in table.rows) == ["barrier", "taskwait"]
    assert all(set(cells) == {"gomp", "ult"} for cells in table.cells)
