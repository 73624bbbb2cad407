"""`--suite`: how the JVM and Go suites plug into `threadlab bench` and
`list` beside the primitives (fake programs speaking the native protocol;
the real suites are exercised in test_jvm.py and test_go.py)."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, stored_records
from threadlab.native import discovery
from threadlab.native import protocol as native
from threadlab.native.protocol import PointOptions

# The options table the C programs state (as the fake benchmark program
# prints it): only the primitives program here answers --options.
FAKE_OPTIONS = runpy.run_path(str(FIXTURES / "fake_bench.py"))["OPTIONS"]

# One fake program per suite; the jvm one offers threads.start for two
# models (as the real launchers do), the go one the same name again.
FAKE = r'''
import json, sys
SUITE, MODELS, LOG = {suite!r}, {models!r}, {log!r}
NAMES = ["threads.start"] if SUITE != "primitives" else ["pthread.thing"]
def entry(name, model):
    e = {{"benchmark": name, "model": model, "summary": "s", "quantity": "time", "unit": "s", "threads": 1,
          "placements": ["unbound"], "default_placements": ["unbound"],
          "params": [{{"name": "count", "help": "h", "values": ["100"], "quick_values": ["10"]}}]}}
    if SUITE != "primitives":
        e["suite"] = SUITE
    return e
argv = sys.argv[1:]
with open(LOG, "a") as log:
    log.write(json.dumps(argv) + "\n")
if "--list" in argv:
    for model in MODELS:
        for name in NAMES:
            print(json.dumps(entry(name, model)))
elif "--env" in argv:
    print(json.dumps({{"suite": SUITE}}))
elif "--options" in argv and SUITE == "primitives":
    for option in {options!r}:
        print(json.dumps(option))
elif "--options" in argv:
    sys.exit(2)
else:
    name = argv[argv.index("--run") + 1]
    params = {{"count": "100"}}
    for i, a in enumerate(argv):
        if a == "--param":
            k, _, v = argv[i + 1].partition("=")
            params[k] = v
    samples = [1.0, 3.0]
    print(json.dumps({{"schema": "threadlab.record/1", "benchmark": name, "model": MODELS[0], "metric": "time",
        "params": params, "placement": "unbound", "cpus": [None], "unit": "s", "quantity": "time", "status": "ok",
        "reason": None, "clock": None, "iterations": 1, "actions_per_iteration": 1, "warmup": 1, "overhead_ns": None,
        "samples": samples, "summary": {{"n": 2, "mean": 2.0, "sd": 1.414, "rsd": 0.7, "se": 1.0, "rse": 0.5,
        "median": 2.0, "min": 1.0, "max": 3.0}}, "stop": {{"rule": "fixed", "target": None, "reason": "fixed",
        "min_timings": 2, "max_timings": 2, "elapsed_s": 0.1}}, "derived": None, "checks": [], "extra": {{}}}}))
'''


@pytest.fixture
def suites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A THREADLAB_NATIVE_DIR with a primitives, a jvm (two models, one
    program each, as the real launchers) and a go program; every call is
    logged to calls.log."""
    directory = tmp_path / "bin"
    directory.mkdir()
    log = tmp_path / "calls.log"
    for name, suite, models in (
        ("threadlab-bench-posix", "primitives", ["pthread"]),
        ("threadlab-bench-jvm-platform", "jvm", ["jvm-platform"]),
        ("threadlab-bench-jvm-virtual", "jvm", ["jvm-virtual"]),
        ("threadlab-bench-go", "go", ["goroutine"]),
    ):
        program = directory / name
        program.write_text(f"#!{sys.executable}\n" + FAKE.format(suite=suite, models=models, log=str(log),
                                                                options=FAKE_OPTIONS))
        program.chmod(0o755)
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(directory))
    return tmp_path


def calls(tmp_path: Path) -> list[list[str]]:
    return [json.loads(line) for line in (tmp_path / "calls.log").read_text().splitlines()]


def runs(tmp_path: Path) -> list[list[str]]:
    return [argv for argv in calls(tmp_path) if "--run" in argv]


def test_default_suite_is_primitives(suites: Path, run_cli: Any, db_path: Path) -> None:
    code, out, err = run_cli("bench", "--quiet")
    assert code == 0, err
    assert [r["benchmark"] for r in stored_records(db_path)] == ["pthread.thing"]


def test_suite_jvm_runs_each_model_with_fixed_iteration_options(suites: Path, run_cli: Any, db_path: Path) -> None:
    code, out, err = run_cli("bench", "--suite", "jvm", "--quiet", "--iterations", "3", "--forks", "2", "--warmup", "0")
    assert code == 0, err
    assert sorted(r["model"] for r in stored_records(db_path)) == ["jvm-platform", "jvm-virtual"]
    for argv in runs(suites):
        assert argv[argv.index("--iterations") + 1] == "3" and argv[argv.index("--forks") + 1] == "2"
        assert argv[argv.index("--warmup") + 1] == "0"
    assert "threads.start [jvm-platform]" in out and "threads.start [jvm-virtual]" in out


def test_mixed_suites_get_only_their_own_options(suites: Path, run_cli: Any, db_path: Path) -> None:
    code, _, err = run_cli("bench", "--suite", "primitives,jvm,go", "--quiet", "--iterations", "4", "--forks", "1",
                           "--target", "0.1")
    assert code == 0, err
    assert len(stored_records(db_path)) == 4
    logged = runs(suites)
    primitives = [a for a in logged if a[1] == "pthread.thing"]
    assert primitives and all("--target" in a and "--iterations" not in a and "--forks" not in a for a in primitives)
    fixed = [a for a in logged if a[1] == "threads.start"]
    assert len(fixed) == 3 and all("--target" not in a and "--iterations" in a for a in fixed)
    assert sum("--forks" in a for a in fixed) == 2  # the jvm programs; go takes no forks


def test_options_that_apply_to_no_selected_suite_are_refused(suites: Path, run_cli: Any) -> None:
    code, _, err = run_cli("bench", "--suite", "jvm", "--target", "0.1")
    assert code == 2 and "--target does not apply to the selected suites (jvm)" in err and "--iterations" in err
    code, _, err = run_cli("bench", "--iterations", "5")
    assert code == 2 and "--iterations does not apply" in err and "jvm and go" in err
    code, _, err = run_cli("bench", "--suite", "go", "--forks", "2")
    assert code == 2 and "--forks does not apply" in err


def test_unknown_and_missing_suites(suites: Path, run_cli: Any, tmp_path: Path) -> None:
    code, _, err = run_cli("bench", "--suite", "java")
    assert code == 2 and "unknown suite 'java'" in err and "primitives, models, jvm, go" in err
    code, _, err = run_cli("bench", "--suite", "models")
    assert code == 1 and "--suite models: no benchmark program of that suite" in err


def test_suite_all_and_list(suites: Path, run_cli: Any) -> None:
    code, out, _ = run_cli("list", "--json")
    assert code == 0
    listed = [(e["benchmark"], e["model"], e["suite"]) for e in map(json.loads, out.splitlines())]
    assert ("pthread.thing", "pthread", "primitives") in listed and ("threads.start", "goroutine", "go") in listed
    code, out, _ = run_cli("list", "--json", "--suite", "go")
    assert [json.loads(line)["model"] for line in out.splitlines()] == ["goroutine"]
    code, out, err = run_cli("bench", "--suite", "all", "--dry-run")
    assert code == 0 and "4 points of 4 benchmarks" in err


def test_per_suite_timeouts_are_stored(suites: Path, run_cli: Any, db_path: Path) -> None:
    import sqlite3

    code, _, err = run_cli("bench", "--suite", "jvm,go", "--quick")
    assert code == 0 and "timeouts per point: go 120 s, jvm 300 s" in err
    with sqlite3.connect(db_path) as connection:
        options = json.loads(connection.execute("SELECT options FROM runs").fetchone()[0])
    assert options["suites"] == ["go", "jvm"] and options["timeouts_s"] == {"jvm": 300.0, "go": 120.0}


def test_a_record_of_another_model_than_asked_is_refused(suites: Path, run_cli: Any, db_path: Path) -> None:
    # The fake prints its first model; make the jvm-virtual program lie.
    program = suites / "bin" / "threadlab-bench-jvm-virtual"
    program.write_text(program.read_text().replace('"model": MODELS[0]', '"model": "jvm-platform"'))
    code, _, err = run_cli("bench", "--suite", "jvm", "--quiet")
    failed = [r for r in stored_records(db_path) if r["status"] == "failed"]
    assert code == 1 and len(failed) == 1 and "field 'model': jvm-platform but jvm-virtual was run" in failed[0]["reason"]


def test_catalog_keys_benchmarks_by_name_and_model(suites: Path) -> None:
    found = native.catalog(discovery.benchmark_programs())
    assert sorted((i.benchmark, i.model, i.suite) for i in found if i.benchmark == "threads.start") == [
        ("threads.start", "goroutine", "go"), ("threads.start", "jvm-platform", "jvm"),
        ("threads.start", "jvm-virtual", "jvm")]


def test_point_options_per_suite() -> None:
    options = PointOptions(quick=True, target=0.1, warmup=2, iterations=7, forks=3)
    assert options.argv() == ["--quick", "--target", "0.1", "--warmup", "2"]
    assert options.argv("jvm") == ["--quick", "--warmup", "2", "--iterations", "7", "--forks", "3"]
    assert options.argv("go") == ["--quick", "--warmup", "2", "--iterations", "7"]
