"""The runner against a fake native program: sweeps, faults, records."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

import pytest

from conftest import stored_records
from threadlab.errors import ThreadlabError
from threadlab.native import protocol as native
from threadlab.records import schema
from threadlab.native.protocol import BenchmarkInfo, ParamInfo
from threadlab.run.runner import expand_sweep

RunCli = Callable[..., tuple[int, str, str]]


def _info(name: str, threads: int, params: tuple[ParamInfo, ...] = (), defaults: tuple[str, ...] = ()) -> BenchmarkInfo:
    placements = ("unbound", "same-cpu", "different-cpus") if threads else ()
    return BenchmarkInfo(name, "pthread", "", "time per x", "ns", threads, placements, defaults, params, "prog")


# ------------------------------------------------------------------- sweep


def test_sweep_is_params_times_default_placements() -> None:
    params = (ParamInfo("n", "", ("1", "2", "4"), ("1",)), ParamInfo("mode", "", ("a", "b"), ("a",)))
    info = _info("x.y", 2, params, defaults=("unbound", "same-cpu"))
    points = expand_sweep([info], {"prog": Path("/p")}, None, quick=False)
    assert len(points) == 3 * 2 * 2
    assert {p.placement for p in points} == {"unbound", "same-cpu"}
    assert {(p.params["n"], p.params["mode"]) for p in points} == {(n, m) for n in "124" for m in "ab"}
    assert [p.index for p in points] == list(range(12))


def test_quick_sweep_uses_quick_values() -> None:
    params = (ParamInfo("n", "", ("1", "2", "4"), ("2",)),)
    points = expand_sweep([_info("x.y", 2, params, ("unbound",))], {"prog": Path("/p")}, None, quick=True)
    assert [p.params for p in points] == [{"n": "2"}]


def test_user_placements_replace_the_defaults_and_unplaced_benchmarks_run_once() -> None:
    threaded = _info("x.threaded", 2, defaults=("unbound",))
    single = _info("x.single", 0)
    points = expand_sweep([threaded, single], {"prog": Path("/p")}, ["different-cpus", "same-cpu"], quick=False)
    assert [(p.info.benchmark, p.placement) for p in points] == [
        ("x.threaded", "different-cpus"),
        ("x.threaded", "same-cpu"),
        ("x.single", None),
    ]
    assert "--placement" not in points[2].argv(native.PointOptions())


def test_the_models_of_one_point_run_side_by_side() -> None:
    params = (ParamInfo("n", "", ("1", "2"), ("1",)),)

    def model(name: str, program: str, extra: tuple[ParamInfo, ...] = ()) -> BenchmarkInfo:
        return BenchmarkInfo("omp.task", name, "", "time per x", "ns", 2, ("unbound",), ("unbound",),
                             params + extra, program)
    gomp, ult = model("gomp", "prog-gomp"), model("ult", "prog-ult")
    other = model("llvmomp", "prog-llvmomp", (ParamInfo("m", "", ("x",), ("x",)),))
    programs = {name: Path("/" + name) for name in ("prog-gomp", "prog-ult", "prog-llvmomp")}
    points = expand_sweep([gomp, other, ult], programs, None, quick=False)
    # gomp and ult share each point; llvmomp's have a parameter more: its own
    assert [(p.info.model, p.params.get("n")) for p in points] == [
        ("gomp", "1"), ("ult", "1"), ("gomp", "2"), ("ult", "2"), ("llvmomp", "1"), ("llvmomp", "2")]
    assert [p.program for p in points[:2]] == [Path("/prog-gomp"), Path("/prog-ult")]
    assert [p.index for p in points] == list(range(6))


def test_point_argv_passes_only_given_options() -> None:
    options = native.PointOptions(quick=True, target=0.02, min_timings=4)
    argv = native.point_argv(Path("/bin/p"), "x.y", "same-cpu", {"n": "2"}, options)
    assert argv == ["/bin/p", "--run", "x.y", "--placement", "same-cpu", "--param", "n=2",
                    "--quick", "--target", "0.02", "--min-timings", "4"]


# ------------------------------------------------------------------ faults


def test_faulty_points_become_failed_records_and_the_run_goes_on(
    fake_native: Path, db_path: Path, run_cli: RunCli
) -> None:
    # 3 s, not 1: the points that end must end within it while other tests
    # load the machine (make test runs two at a time)
    code, out, err = run_cli(
        "bench", "--timeout", "3", "--filter", "fake.hang,fake.single,fake.crash,fake.invalid,fake.usage,fake.ok",
    )
    assert code == 1, err  # a point failed
    records = stored_records(db_path)
    by_name = {}
    for record in records:
        by_name.setdefault(record["benchmark"], []).append(record)
        assert schema.record_problems(record) == [], record
    # Catalog order: ok, single, hang, crash, invalid, usage; every one was run.
    assert [r["benchmark"] for r in records] == ["fake.ok", "fake.ok", "fake.ok", "fake.ok",
                                                  "fake.single", "fake.hang", "fake.crash", "fake.invalid",
                                                  "fake.usage"]
    assert by_name["fake.hang"][0]["status"] == "failed"
    assert by_name["fake.hang"][0]["reason"] == "timed out after 3 s"
    crash = by_name["fake.crash"][0]
    assert crash["status"] == "failed"
    assert crash["reason"] == "killed by SIGSEGV: fake: about to crash"
    invalid = by_name["fake.invalid"][0]
    assert invalid["status"] == "failed"
    assert "field 'summary.n': 7 but there are 3 samples" in invalid["reason"]
    assert '"benchmark": "fake.invalid"' in invalid["extra"]["invalid_line"]  # kept (shortened) for debugging
    usage = by_name["fake.usage"][0]
    assert usage["reason"].startswith("usage error: ") and "--target 7" in usage["reason"]
    assert [r["status"] for r in by_name["fake.ok"]] == ["ok"] * 4
    assert by_name["fake.single"][0]["placement"] == "none"
    # The points after the hang ran: the table shows them, and the run is complete.
    assert "fake.usage" in out and "FAILED" in out and "timed out after 3 s" in out
    code, out, _ = run_cli("runs", "--json")
    run = json.loads(out.splitlines()[0])
    assert run["status"] == "complete"
    assert run["records"] == {"ok": 5, "failed": 4}


def test_a_hang_is_stopped_by_the_timeout(fake_native: Path, db_path: Path, run_cli: RunCli) -> None:
    # fake.hang sleeps forever: without the kill this test would never end.
    code, _, err = run_cli("bench", "--timeout", "1", "--filter", "fake.hang")
    assert code == 1
    assert [r["reason"] for r in stored_records(db_path)] == ["timed out after 1 s"]
    assert "threadlab: fake.hang: FAILED: timed out after 1 s" in err


def test_a_sanitizer_report_names_the_error_not_the_last_frame(
    fake_native: Path, db_path: Path, run_cli: RunCli
) -> None:
    code, out, _ = run_cli("bench", "--filter", "fake.sanitizer")
    assert code == 1
    records = stored_records(db_path)
    assert [r["status"] for r in records] == ["ok", "failed"]  # the measurement is kept, the point is failed
    assert records[1]["reason"] == (
        "exited with status 1 without a failed record: "
        "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010"
    )
    assert "FAILED [1]" in out  # the table shows the point's verdict


def test_helpers_left_holding_stdout_do_not_make_a_point_fail(
    fake_native: Path, db_path: Path, run_cli: RunCli
) -> None:
    code, _, err = run_cli("bench", "--timeout", "30", "--filter", "fake.forks")
    assert code == 0, err
    assert [r["status"] for r in stored_records(db_path)] == ["ok"]


def test_unsupported_placement_is_an_explicit_record(fake_native: Path, db_path: Path, run_cli: RunCli) -> None:
    code, out, _ = run_cli("bench", "--quick", "--filter", "fake.ok", "--placement", "different-cpus,same-cpu")
    assert code == 0
    records = stored_records(db_path)
    assert [(r["placement"], r["status"]) for r in records] == [("different-cpus", "unsupported"), ("same-cpu", "ok")]
    assert records[0]["reason"] == "fake.ok does not apply to placement different-cpus"
    assert "n/a [1]" in out and "unsupported: fake.ok does not apply to placement different-cpus" in out


def test_json_output_holds_the_stored_records(
    fake_native: Path, db_path: Path, run_cli: RunCli, tmp_path: Path
) -> None:
    target = tmp_path / "records.jsonl"
    code, _, _ = run_cli("bench", "--quick", "--filter", "fake.ok,fake.usage", "--json", str(target))
    assert code == 1
    lines = target.read_text().splitlines()
    assert [json.loads(line) for line in lines] == stored_records(db_path)
    assert len(lines) == 3


def test_json_to_stdout_sends_the_table_to_stderr(fake_native: Path, db_path: Path, run_cli: RunCli) -> None:
    code, out, err = run_cli("bench", "--quick", "--filter", "fake.single", "--json", "-")
    assert code == 0
    assert [json.loads(line)["benchmark"] for line in out.splitlines()] == ["fake.single"]
    assert "Results of run 1" in err


def test_checks_that_failed_are_marked(fake_native: Path, db_path: Path, run_cli: RunCli) -> None:
    code, out, _ = run_cli("bench", "--filter", "fake.checkfail")
    assert code == 0  # measured; the check flags it, it is not a failure
    assert "![1]" in out
    assert "check alternation failed: threads alternated 3 times, expected 1000 (value 3)" in out


def test_a_missing_program_directory_is_reported(db_path: Path, run_cli: RunCli, tmp_path: Path) -> None:
    code, _, err = run_cli("bench", "--quick")
    assert code == 1
    assert "no native benchmark programs" in err and "THREADLAB_NATIVE_DIR" in err
    assert "Traceback" not in err


def test_a_program_that_breaks_list_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli) -> None:
    directory = tmp_path / "broken"
    directory.mkdir()
    program = directory / "threadlab-bench-broken"
    program.write_text("#!/bin/sh\necho 'not json'\n")
    program.chmod(0o755)
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(directory))
    code, _, err = run_cli("list")
    assert code == 1
    assert "threadlab-bench-broken --list, line 1: not JSON" in err


def _lister(directory: Path, name: str, script: str) -> Path:
    program = directory / name
    program.write_text("#!/bin/sh\n" + script + "\n")
    program.chmod(0o755)
    return program


def _entry(benchmark: str) -> str:
    entry = {"benchmark": benchmark, "model": "pthread", "summary": "", "quantity": "time per x", "unit": "ns",
             "threads": 0, "placements": [], "default_placements": [], "params": []}
    return "echo '" + json.dumps(entry) + "'"


def test_the_catalog_asks_the_programs_side_by_side_and_keeps_their_order(tmp_path: Path) -> None:
    """The programs answer --list at once, but the catalog is in the
    programs' order, and the error raised is that of the first program in
    that order that failed, not of the first to fail."""
    slow = _lister(tmp_path, "a-slow", "sleep 0.5; " + _entry("one"))
    fast = _lister(tmp_path, "b-fast", _entry("two"))
    assert [b.benchmark for b in native.catalog([slow, fast])] == ["one", "two"]

    slow_failure = _lister(tmp_path, "c-slow-fails", "sleep 0.5; echo 'first' >&2; exit 3")
    fast_failure = _lister(tmp_path, "d-fast-fails", "echo 'second' >&2; exit 4")
    with pytest.raises(ThreadlabError, match="c-slow-fails --list failed with exit status 3: first"):
        native.catalog([slow, slow_failure, fast_failure])

    twice = _lister(tmp_path, "e-twice", _entry("one"))
    with pytest.raises(ThreadlabError, match="benchmark one \\(model pthread\\) is offered by both a-slow and e-twice"):
        native.catalog([slow, fast, twice])

    # Four programs that each answer only once all four have started: one
    # after the other, the first gives up after 20 s.
    marks = tmp_path / "marks"
    marks.mkdir()
    wait_for_all = (f"touch {marks}/$$; i=0; while [ $(ls {marks} | wc -l) -lt 4 ] && [ $i -lt 200 ]; "
                    f"do sleep 0.1; i=$((i+1)); done; [ $(ls {marks} | wc -l) -ge 4 ] || {{ echo alone >&2; exit 1; }}; ")
    together = [_lister(tmp_path, f"f-{i}", wait_for_all + _entry(f"x{i}")) for i in range(4)]
    assert [b.benchmark for b in native.catalog(together)] == ["x0", "x1", "x2", "x3"]


def test_no_process_is_left_behind(fake_native: Path, db_path: Path, run_cli: RunCli) -> None:
    run_cli("bench", "--timeout", "1", "--filter", "fake.hang,fake.forks")
    time.sleep(0.2)
    leftovers = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue  # gone meanwhile
            if str(fake_native) in cmdline and state != "Z":
                leftovers.append((entry.name, cmdline))
    assert leftovers == []
    assert os.getpgrp() == os.getpgid(0)  # threadlab never moved the test's own group


def test_validation_is_ready_before_a_point_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The validator and the summary's imports are made before the point's
    process starts, not at its first record (while it still measures)."""
    from threadlab.analysis import stats
    from threadlab.native import process
    from threadlab.run import runner

    schema._validator.cache_clear()
    schema.prepare.cache_clear()
    summarized: list[int] = []
    real_summarize = stats.summarize
    monkeypatch.setattr(stats, "summarize", lambda samples: summarized.append(len(samples)) or real_summarize(samples))
    seen: dict[str, object] = {}

    def follow(argv: list[str], timeout_s: float, stop: object) -> object:
        seen["validator"] = schema._validator.cache_info().currsize
        seen["summarized"] = len(summarized)
        raise OSError(2, "not started")  # the point ends here: run_point reports it

    monkeypatch.setattr(process, "Follow", follow)
    info = _info("x.y", 0)
    point = expand_sweep([info], {"prog": Path("/p")}, None, quick=False)[0]
    records = list(runner.run_point(point, native.PointOptions(), 5.0, process.StopRequest()))
    assert seen == {"validator": 1, "summarized": 1}
    assert records[0]["status"] == "failed" and "not started" in records[0]["reason"]
