"""The store: format and migrations, run references, interruption, crashes,
concurrent writers."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Callable

import pytest

from conftest import REPO, make_record, stored_records, threadlab_process, wait_for_records
from threadlab.records import store as store_module
from threadlab.errors import ThreadlabError, UserError
from threadlab.records.store import Migration, NoStore, Store

RunCli = Callable[..., tuple[int, str, str]]


def _new_run(store: Store, name: str | None = None) -> int:
    return store.create_run(
        name=name, command=["threadlab", "bench"], options={}, catalog=[], environment={"host": {}},
        points_planned=3, record_schema="threadlab.record/1", threadlab_version="test",
    )


# ------------------------------------------------------------ format


def test_a_new_store_has_the_latest_format_in_wal_mode(db_path: Path) -> None:
    with Store(db_path) as store:
        assert store.format_version == store_module.STORE_FORMAT == len(store_module.MIGRATIONS)
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runs", "records"} <= tables


def test_an_empty_database_file_is_migrated(db_path: Path) -> None:
    sqlite3.connect(db_path).close()  # an empty SQLite file: format 0
    with Store(db_path, create=False) as store:
        assert store.format_version == len(store_module.MIGRATIONS)
        assert store.runs() == []


def test_migrations_bring_an_older_store_forward_keeping_its_data(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store(db_path) as store:
        run_id = _new_run(store, "before")
        store.add_record(run_id, 0, make_record())
    upgrade = Migration(len(store_module.MIGRATIONS) + 1, "a note per run", ("ALTER TABLE runs ADD COLUMN note TEXT",))
    monkeypatch.setattr(store_module, "MIGRATIONS", store_module.MIGRATIONS + (upgrade,))
    with Store(db_path) as store:
        assert store.format_version == upgrade.version
        assert store.resolve_run("before").id == run_id
        assert len(store.records(run_id)) == 1
    with sqlite3.connect(db_path) as db:
        assert "note" in [row[1] for row in db.execute("PRAGMA table_info(runs)")]


def test_a_failing_migration_changes_nothing(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Store(db_path).close()
    latest = len(store_module.MIGRATIONS)
    broken = Migration(latest + 1, "broken", ("CREATE TABLE half_done (x INTEGER)", "ALTER TABLE no_such_table ADD COLUMN y"))
    monkeypatch.setattr(store_module, "MIGRATIONS", store_module.MIGRATIONS + (broken,))
    with pytest.raises(ThreadlabError, match=f"migrating the store to format {latest + 1} .broken. failed: .*the store is unchanged"):
        Store(db_path)
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == latest
        assert db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'half_done'").fetchone()[0] == 0


def test_a_store_from_a_newer_threadlab_is_refused(db_path: Path) -> None:
    Store(db_path).close()
    with sqlite3.connect(db_path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(UserError, match="store format 99 was written by a newer threadlab"):
        Store(db_path)


def test_a_file_that_is_not_a_database_is_refused(db_path: Path, run_cli: RunCli) -> None:
    db_path.write_text("hello, I am not SQLite\n" * 100)
    code, _, err = run_cli("runs", "--db", str(db_path))
    assert code == 2
    assert "not a usable threadlab store" in err and str(db_path) in err


def test_reading_a_missing_store_does_not_create_it(db_path: Path, run_cli: RunCli) -> None:
    with pytest.raises(NoStore):
        Store(db_path, create=False)
    code, out, _ = run_cli("runs")
    assert code == 0 and "No runs yet" in out
    assert not db_path.exists()


# ------------------------------------------------------------ runs


def test_runs_are_found_by_number_name_and_latest(db_path: Path) -> None:
    with Store(db_path) as store:
        first = _new_run(store, "baseline")
        second = _new_run(store)
        assert store.resolve_run(str(first)).name == "baseline"
        assert store.resolve_run("baseline").id == first
        assert store.resolve_run("latest").id == second
        assert store.resolve_run("last").id == second
        with pytest.raises(UserError, match=r"no run 'nope'.*a run number \(1\.\.2\), a run name, or 'latest'"):
            store.resolve_run("nope")
        with pytest.raises(UserError, match="exists already"):
            _new_run(store, "baseline")


def test_records_keep_their_order_and_counts(db_path: Path) -> None:
    with Store(db_path) as store:
        run_id = _new_run(store)
        failed = make_record(status="failed", reason="boom", samples=[], summary=None, stop=None)
        assert [store.add_record(run_id, i, r) for i, r in enumerate([make_record(), failed])] == [1, 2]
        store.finish_run(run_id, "complete")
        run = store.resolve_run("latest")
        assert run.counts == {"ok": 1, "failed": 1}
        assert run.display_status == "complete" and run.finished_at
        assert [r["status"] for r in store.records(run_id)] == ["ok", "failed"]


def test_a_write_interrupted_inside_its_transaction_leaves_nothing(db_path: Path) -> None:
    with Store(db_path) as store:
        run_id = _new_run(store)
        with pytest.raises(KeyError):
            store.add_record(run_id, 0, {"benchmark": "x.y"})  # fails half way through the INSERT's values
        assert store.records(run_id) == []
        store.add_record(run_id, 0, make_record())  # the store is still usable
        assert len(store.records(run_id)) == 1


def test_a_running_run_of_a_live_process_is_running(db_path: Path) -> None:
    with Store(db_path) as store:
        _new_run(store)
        assert store.resolve_run("latest").display_status == "running"


def test_process_liveness_survives_pid_reuse() -> None:
    key = store_module.process_key()
    import socket

    assert store_module.process_alive(socket.gethostname(), key) is True
    boot, pid, start = key.split(":")
    assert store_module.process_alive(socket.gethostname(), f"{boot}:{pid}:{int(start) + 1}") is False
    assert store_module.process_alive("another-host.example", key) is None


# ------------------------------------------------- interruption and crashes


def test_ctrl_c_keeps_finished_points_and_marks_the_run_interrupted(
    fake_native: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli
) -> None:
    monkeypatch.setenv("FAKE_SLOW_S", "0.3")
    bench = threadlab_process("bench", "--filter", "fake.slow", "--name", "to-interrupt")
    wait_for_records(db_path, 2)
    bench.send_signal(signal.SIGINT)
    out, err = bench.communicate(timeout=60)
    assert bench.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted after" in err and "the measured points are stored" in err
    assert "fake.slow" in out  # the table of what was measured
    records = stored_records(db_path)
    assert 2 <= len(records) < 6
    assert all(r["status"] == "ok" for r in records)  # the killed point left no failed record
    code, out, _ = run_cli("runs", "--json")
    run = json.loads(out.splitlines()[0])
    assert (run["name"], run["status"], run["stored_status"]) == ("to-interrupt", "interrupted", "interrupted")
    assert run["finished_at"] is not None


def test_a_killed_runner_leaves_a_run_shown_as_incomplete(
    fake_native: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli
) -> None:
    monkeypatch.setenv("FAKE_SLOW_S", "0.3")
    bench = threadlab_process("bench", "--filter", "fake.slow")
    wait_for_records(db_path, 1)
    bench.kill()
    bench.communicate(timeout=60)
    code, out, _ = run_cli("runs", "--json")
    run = json.loads(out.splitlines()[0])
    assert (run["status"], run["stored_status"]) == ("incomplete", "running")
    assert run["records"]["ok"] >= 1
    code, out, _ = run_cli("runs")
    assert "incomplete" in out
    code, out, _ = run_cli("show", "latest")
    assert code == 0
    assert "incomplete" in out and "the run's process is gone" in out and "fake.slow" in out


# ------------------------------------------------------ concurrent writers


_WRITER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from threadlab.records.store import Store
    record = json.loads(Path(sys.argv[2]).read_text())
    with Store(Path(sys.argv[1])) as store:
        run_id = store.create_run(name=None, command=[], options={}, catalog=[], environment={"host": {}},
                                  points_planned=0, record_schema="threadlab.record/1", threadlab_version="t")
        for i in range(int(sys.argv[3])):
            store.add_record(run_id, i, record)
        store.finish_run(run_id, "complete")
    """
)


def test_two_processes_write_the_same_store_at_once(db_path: Path, tmp_path: Path) -> None:
    record_file = tmp_path / "record.json"
    record_file.write_text(json.dumps(make_record()))
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    count = 150
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(db_path), str(record_file), str(count)],
                         stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(3)
    ]
    errors = [writer.communicate(timeout=120)[1] for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0, 0], errors
    with Store(db_path) as store:
        runs = store.runs()
        assert len(runs) == 3
        assert all(run.counts == {"ok": count} and run.status == "complete" for run in runs)


def test_a_store_created_while_another_opener_identifies_the_file_is_accepted(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the test above under load: an opener read the file's id (0:
    new), then another process created the store, then the opener read the
    tables and refused "an SQLite database of another program".  Here the
    other process creates the store between those two reads: its commit
    waits for the opener's reads (one read transaction), or, without it,
    lands between them within the 2 s given."""
    db_path.touch()  # an empty file: both openers find a new store
    created: list[BaseException | None] = []
    other = threading.Thread(target=lambda: created.append(_open_and_close(db_path)))
    real = Store.format_version

    def format_version_with_a_rival(self: Store) -> int:
        version = real.fget(self)  # type: ignore[attr-defined]
        if not other.is_alive() and not created:
            other.start()
            other.join(timeout=2)
        return version

    monkeypatch.setattr(Store, "format_version", property(format_version_with_a_rival))
    with Store(db_path):
        pass
    other.join(timeout=60)
    assert created == [None]
    monkeypatch.undo()
    with Store(db_path) as store:
        assert store.format_version == len(store_module.MIGRATIONS)


def _open_and_close(path: Path) -> BaseException | None:
    try:
        Store(path).close()
    except BaseException as error:  # noqa: BLE001 - the test reports it
        return error
    return None


# ------------------------------------------------- format 1 files, deleting, renaming


def _format_1_store(db_path: Path) -> None:
    """A store exactly as threadlab with store format 1 wrote it."""
    record = make_record()
    with sqlite3.connect(db_path) as db:
        for statement in store_module.MIGRATIONS[0].statements:
            db.execute(statement)
        db.execute("PRAGMA user_version = 1")
        db.execute(
            """INSERT INTO runs (name, status, started_at, finished_at, hostname, machine_id, pid, process_key,
               threadlab_version, record_schema, command, options, catalog, environment, points_planned)
               VALUES ('old', 'complete', '2025-11-21T14:15:08.000+00:00', '2025-11-21T14:16:08.000+00:00', 'vm',
               '0035969ec53f6e7f', 1, 'boot:1:2', '0.1.0', 'threadlab.record/1', '["threadlab","bench"]', '{}',
               '[]', '{"warnings":[]}', 1)"""
        )
        db.execute(
            """INSERT INTO records (run_id, seq, point, benchmark, model, metric, placement, params, status, reason,
               unit, quantity, n, mean, sd, rsd, median, min, max, checks_failed, record, stored_at)
               VALUES (1, 1, 0, 'pthread.empty', 'pthread', 'time', 'none', '{}', 'ok', NULL, 'ns', 'q',
               3, 1.0, 0.1, 0.1, 1.0, 0.9, 1.1, 0, ?, '2025-11-21T14:15:09.000+00:00')""",
            (json.dumps(record),),
        )


def test_a_format_1_store_file_is_migrated_forward(db_path: Path, run_cli: RunCli) -> None:
    _format_1_store(db_path)
    with Store(db_path) as store:
        assert store.format_version == len(store_module.MIGRATIONS) >= 2
        run = store.resolve_run("old")
        assert run.origin is None and run.status == "complete"
        assert store.records(run.id) == [make_record()]
    with sqlite3.connect(db_path) as db:
        assert "origin" in [row[1] for row in db.execute("PRAGMA table_info(runs)")]
    code, out, _ = run_cli("export", "old")
    assert code == 0 and json.loads(out.splitlines()[0])["name"] == "old"


def test_runs_delete_removes_runs_and_their_records(db_path: Path, run_cli: RunCli) -> None:
    with Store(db_path) as store:
        keep, gone, also = _new_run(store, "keep"), _new_run(store, "gone"), _new_run(store)
        for run_id in (keep, gone, also):
            store.add_record(run_id, 0, make_record())
            store.finish_run(run_id, "complete")
    code, out, err = run_cli("runs", "delete", "gone", str(also))
    assert code == 0, err
    assert out.splitlines() == ["deleted run 2 (gone): 1 record", "deleted run 3: 1 record"]
    assert len(stored_records(db_path)) == 1
    code, _, err = run_cli("runs", "delete", "gone")
    assert code == 2 and "no run 'gone'" in err


def test_a_running_run_is_deleted_only_with_force(db_path: Path, run_cli: RunCli) -> None:
    with Store(db_path) as store:
        _new_run(store, "live")  # this process is alive: the run shows as running
    code, _, err = run_cli("runs", "delete", "live")
    assert code == 2 and "run 1 (live) is still running" in err and "--force" in err
    code, _, _ = run_cli("runs", "delete", "live", "--force")
    assert code == 0


def test_runs_rename(db_path: Path, run_cli: RunCli) -> None:
    with Store(db_path) as store:
        _new_run(store, "first")
        _new_run(store, "second")
    code, out, _ = run_cli("runs", "rename", "first", "baseline")
    assert code == 0 and out.strip() == "run 1 is now named baseline (was first)"
    code, _, err = run_cli("runs", "rename", "baseline", "second")
    assert code == 2 and "run 2 has that name already" in err
    code, _, err = run_cli("runs", "rename", "baseline", "7")
    assert code == 2 and "cannot be a number" in err
    code, out, _ = run_cli("runs", "rename", "2", "--clear")
    assert code == 0 and "run 2 has no name now (was second)" in out
    code, _, err = run_cli("runs", "rename", "1")
    assert code == 2 and "runs rename RUN NAME, or runs rename RUN --clear" in err
    with Store(db_path) as store:
        assert store.resolve_run("baseline").id == 1


def test_two_imports_and_a_writer_at_once(db_path: Path, tmp_path: Path) -> None:
    """Two `threadlab import` processes and a record writer on one store: all
    three land whole (WAL, busy timeout, BEGIN IMMEDIATE)."""
    record = make_record()
    files = []
    for index in range(2):
        path = tmp_path / f"import-{index}.jsonl"
        changed = {**record, "params": {"copy": str(index)}}
        path.write_text("".join(json.dumps(changed) + "\n" for _ in range(200)))
        files.append(path)
    record_file = tmp_path / "record.json"
    record_file.write_text(json.dumps(record))
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "THREADLAB_DB": str(db_path)}
    processes = [
        subprocess.Popen([sys.executable, "-m", "threadlab", "import", str(path), "--host", f"h{i}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for i, path in enumerate(files)
    ]
    processes.append(subprocess.Popen([sys.executable, "-c", _WRITER, str(db_path), str(record_file), "150"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    results = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0], results
    with Store(db_path) as store:
        counts = sorted(sum(run.counts.values()) for run in store.runs())
    assert counts == [150, 200, 200]
