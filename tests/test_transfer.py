"""`threadlab export` and `threadlab import`: round trips, bare records,
and malformed files refused with the line and the reason, nothing written."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Callable

import pytest

from conftest import make_record, threadlab_run
from synthetic import derived, pingpong_run, store_run
from threadlab.records.store import Store

RunCli = Callable[..., tuple[int, str, str]]


def _count_runs(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


@pytest.fixture
def exported(tmp_path: Path, db_path: Path, run_cli: RunCli) -> Path:
    records = pingpong_run() + [derived("pthread.logp", "same-cpu", 900.0, metric="L")]
    store_run(db_path, records, name="there", hostname="far-away", machine_id="f" * 16)
    target = tmp_path / "run.jsonl"
    code, _, err = run_cli("export", "there", "-o", str(target))
    assert code == 0 and "wrote run 1 (there) (7 records)" in err
    return target


def test_json_export_has_a_run_header_then_the_records(exported: Path) -> None:
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    header, records = lines[0], lines[1:]
    assert header["schema"] == "threadlab.run/1"
    assert (header["name"], header["hostname"], header["records"]) == ("there", "far-away", 7)
    assert header["points"] == list(range(7))
    assert header["environment"]["cpu"]["model"] == "Test CPU @ 2.0GHz"
    assert all(r["schema"] == "threadlab.record/1" for r in records)


def test_export_then_import_into_another_store_round_trips(exported: Path, tmp_path: Path, run_cli: RunCli) -> None:
    other = tmp_path / "other.db"
    code, out, err = run_cli("--db", str(other), "import", str(exported))
    assert code == 0, err
    assert "imported 7 records from" in out and "as run 1 (there) (machine far-away)" in out
    with Store(other) as store:
        run = store.resolve_run("there")
        assert run.hostname == "far-away" and run.machine_id == "f" * 16
        assert run.environment["cpu"]["model"] == "Test CPU @ 2.0GHz"
        assert run.origin and run.origin["header"] is True and run.origin["original_id"] == 1
        assert store.records_with_points(run.id)[1] == list(range(7))
        imported = store.records(run.id)
    original = [json.loads(line) for line in exported.read_text().splitlines()[1:]]
    assert imported == original
    code, out, _ = run_cli("--db", str(other), "runs")
    assert "far-away" in out
    code, out, _ = run_cli("--db", str(other), "show", "there")
    assert code == 0 and "Test CPU" in out


def test_importing_the_same_file_twice_is_refused(exported: Path, tmp_path: Path, run_cli: RunCli) -> None:
    other = tmp_path / "other.db"
    assert run_cli("--db", str(other), "import", str(exported))[0] == 0
    code, _, err = run_cli("--db", str(other), "import", str(exported), "--name", "again")
    assert code == 2 and "already in the store as run 1 (there); nothing was imported" in err
    assert _count_runs(other) == 1


def test_a_taken_name_asks_for_another(exported: Path, db_path: Path, run_cli: RunCli) -> None:
    # Into the store it came from: the name is taken (and it is the same run).
    code, _, err = run_cli("import", str(exported))
    assert code == 2 and "a run named there exists already (run 1); import with --name NEW" in err


def test_bare_records_are_imported_with_synthesized_metadata(tmp_path: Path, db_path: Path, run_cli: RunCli) -> None:
    records = pingpong_run() + [derived("pthread.logp", "same-cpu", 900.0, metric="rtt"),
                                derived("pthread.logp", "same-cpu", 100.0, metric="L")]
    bare = tmp_path / "records.jsonl"
    bare.write_text("".join(json.dumps(r) + "\n" for r in records))
    code, out, err = run_cli("import", str(bare), "--host", "lab-7", "--name", "lab")
    assert code == 0, err
    assert "has no run header (bare records, as `bench --json` writes): run metadata synthesized" in err
    assert "imported 8 records" in out and "(machine lab-7)" in out
    with Store(db_path) as store:
        run = store.resolve_run("lab")
        assert run.origin and run.origin["header"] is False
        assert run.hostname == "lab-7" and run.status == "complete"
        assert store.records_with_points(run.id)[1] == [0, 1, 2, 3, 4, 5, 6, 6]  # LogP's two records: one point


def test_stdin_is_accepted(exported: Path, tmp_path: Path) -> None:
    done = threadlab_run(tmp_path / "stdin.db", "import", "-", input=exported.read_text(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert "from <stdin>" in done.stdout


def _lines(exported: Path) -> list[str]:
    return exported.read_text().splitlines()


@pytest.mark.parametrize("mutate,message", [
    (lambda ls: ls[:3] + ["{not json"] + ls[3:], "line 4: not JSON: Expecting property name enclosed in double quotes"),
    (lambda ls: ls[:2] + ["[1, 2]"] + ls[2:], "line 3: expected a JSON object, got list"),
    (lambda ls: ls[:-1], "line 1: the run header announces 7 records but the file has 6 (a truncated or edited file?)"),
    (lambda ls: ls + [ls[0]], "line 9: a run header may only be the first line"),
    (lambda ls: [ls[0].replace('"threadlab.run/1"', '"threadlab.run/2"')] + ls[1:],
     "line 1: run header format 'threadlab.run/2' is not one this threadlab reads (threadlab.run/1)"),
    (lambda ls: [ls[0].replace('"status":"complete"', '"status":"great"')] + ls[1:], "line 1: run header: field 'status'"),
    (lambda ls: [json.dumps({**json.loads(ls[0]), "started_at": "the day before yesterday"})] + ls[1:],
     "line 1: run header: field 'started_at': 'the day before yesterday' is not an ISO 8601 time"),
    (lambda ls: [json.dumps({k: v for k, v in json.loads(ls[0]).items() if k != "environment"})] + ls[1:],
     "line 1: run header: field 'environment': missing (required)"),
], ids=["bad-json", "not-object", "truncated", "second-header", "unknown-version", "bad-status", "bad-time",
        "no-environment"])
def test_a_malformed_file_is_refused_naming_the_line_and_nothing_is_written(
    exported: Path, tmp_path: Path, run_cli: RunCli, mutate: Callable, message: str
) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(mutate(_lines(exported))) + "\n")
    other = tmp_path / "other.db"
    code, out, err = run_cli("--db", str(other), "import", str(broken))
    assert code == 2, (out, err)
    assert err.startswith(f"threadlab: error: import {broken}: ")
    assert message in err
    assert err.rstrip().endswith("nothing was imported")
    assert "Traceback" not in err
    assert _count_runs(other) == 0


def test_an_invalid_record_is_refused_with_its_line_and_field(tmp_path: Path, db_path: Path, run_cli: RunCli) -> None:
    good = make_record()
    bad = make_record()
    bad["summary"] = {**bad["summary"], "n": 7}
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [good, good, bad]) + "\n")
    code, _, err = run_cli("import", str(path))
    assert code == 2
    assert "line 3: field 'summary.n': 7 but there are 3 samples; nothing was imported" in err
    assert _count_runs(db_path) == 0


@pytest.mark.parametrize("content,message", [("", "no records (an empty file)"), ("\n\n", "no records")])
def test_empty_files_are_refused(tmp_path: Path, run_cli: RunCli, content: str, message: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    code, _, err = run_cli("import", str(path))
    assert code == 2 and message in err


def test_missing_and_binary_files_are_refused(tmp_path: Path, run_cli: RunCli) -> None:
    code, _, err = run_cli("import", str(tmp_path / "nope.jsonl"))
    assert code == 2 and "no such file" in err
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    code, _, err = run_cli("import", str(binary))
    assert code == 2 and "not UTF-8 text" in err


def test_csv_export_has_every_statistic(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run())
    code, out, _ = run_cli("export", "latest", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 6
    first = rows[0]
    assert first["benchmark"] == "pthread.mutex.pingpong" and first["placement"] == "same-cpu"
    assert float(first["median_ci_low"]) <= float(first["median"]) <= float(first["median_ci_high"])
    assert float(first["mean_ci_low"]) <= float(first["mean"]) <= float(first["mean_ci_high"])
    assert first["n"] == "20" and first["outliers_low"] != ""
    assert rows[-1]["status"] == "unsupported" and rows[-1]["median"] == ""


def test_markdown_export(db_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run(), name="md")
    code, out, _ = run_cli("export", "md", "--format", "md")
    assert code == 0
    assert out.startswith("# threadlab run 1 (md)")
    assert "| benchmark | placement | median [95% CI] | mean ± 95% CI | n | outliers | notes |" in out
    assert "**Warnings**" in out and "virtual machine (kvm)" in out
    assert "unsupported: placement needs 3 CPUs" in out
