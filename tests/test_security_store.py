"""The store against a clumsy or hostile user (docs/security.md, "The
store"): another program's SQLite file is never migrated, a read-only
store can be read, run numbers beyond SQLite's integers and unreachable
paths are one-line errors."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Callable

import pytest

from hostile import OTHER_UID, in_mount_namespace, require_root, run_threadlab, shell_threadlab, without_write_override
from synthetic import pingpong_run, store_run
from threadlab.records import store as store_module
from threadlab.errors import UserError
from threadlab.records.store import Store

RunCli = Callable[..., tuple[int, str, str]]


def _foreign_database(path: Path) -> bytes:
    """Another program's SQLite file; its bytes."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
        db.execute("INSERT INTO contacts VALUES ('ada', '555-0100')")
    return path.read_bytes()


@pytest.mark.parametrize("command", [["runs"], ["show"], ["import", "-"], ["runs", "delete", "1"],
                                     ["runs", "rename", "1", "x"]])
def test_another_programs_database_is_refused_and_left_as_it_was(
    tmp_path: Path, run_cli: RunCli, command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    foreign = tmp_path / "contacts.db"
    before = _foreign_database(foreign)
    if command == ["import", "-"]:
        import io
        import json
        import sys

        from conftest import make_record

        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((json.dumps(make_record()) + "\n").encode())))
    code, _, err = run_cli(*command, "--db", str(foreign))
    assert code == 2, err
    assert "not a threadlab store" in err and "contacts" in err and err.count("\n") == 1
    assert foreign.read_bytes() == before
    with sqlite3.connect(foreign) as db:
        assert [row[0] for row in db.execute("SELECT name FROM sqlite_master")] == ["contacts"]


def test_a_database_with_another_application_id_is_refused(db_path: Path) -> None:
    with sqlite3.connect(db_path) as db:
        db.execute("PRAGMA application_id = 1234")
    with pytest.raises(UserError, match="application_id is 0x000004d2"):
        Store(db_path)


def test_a_new_store_carries_threadlabs_application_id(db_path: Path) -> None:
    Store(db_path).close()
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA application_id").fetchone()[0] == store_module.APPLICATION_ID


def test_a_store_from_before_the_application_id_is_still_a_store(db_path: Path) -> None:
    store_run(db_path, pingpong_run(), name="old")
    with sqlite3.connect(db_path) as db:  # as threadlab with store format 2 left it
        db.execute("ALTER TABLE runs DROP COLUMN stop_reason")
        db.execute("PRAGMA application_id = 0")
        db.execute("PRAGMA user_version = 2")
    with Store(db_path, readonly=True) as store:
        assert store.resolve_run("old").stop_reason is None
    with Store(db_path) as store:
        assert store.format_version == len(store_module.MIGRATIONS)
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA application_id").fetchone()[0] == store_module.APPLICATION_ID


def _read_only_copy(db_path: Path, directory: Path) -> Path:
    """The store alone (no -wal, no -shm) in a directory nobody may write."""
    store_run(db_path, pingpong_run(), name="base")
    store_run(db_path, pingpong_run(scale=1.2, seed=5), name="slow")
    directory.mkdir()
    copy = directory / "store.db"
    shutil.copyfile(db_path, copy)
    copy.chmod(0o444)
    directory.chmod(0o555)
    return copy


@pytest.mark.heavy
def test_a_read_only_store_can_be_read_by_every_reading_command(db_path: Path, tmp_path: Path) -> None:
    prefix = without_write_override()
    store = _read_only_copy(db_path, tmp_path / "readonly")
    before = store.read_bytes()
    for command in (["runs"], ["show", "base"], ["export", "slow"], ["compare", "base", "slow"],
                    ["export", "base", "--format", "csv"]):
        done = run_threadlab(*command, "--db", str(store), prefix=prefix)
        assert done.returncode == 0, (command, done.stderr)
        assert "readonly" not in done.stderr
    done = run_threadlab("report", "base", "--db", str(store), "-o", str(tmp_path / "report"), prefix=prefix)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report" / "index.html").is_file()
    assert store.read_bytes() == before
    assert sorted(p.name for p in store.parent.iterdir()) == ["store.db"]


def test_a_writing_command_on_a_read_only_store_says_so(db_path: Path, tmp_path: Path) -> None:
    prefix = without_write_override()
    store = _read_only_copy(db_path, tmp_path / "readonly")
    for command in (["runs", "delete", "base"], ["runs", "rename", "base", "new"]):
        done = run_threadlab(*command, "--db", str(store), prefix=prefix)
        assert done.returncode == 2, done.stderr
        assert "the store is read-only here" in done.stderr and "Traceback" not in done.stderr


def test_a_store_on_a_read_only_file_system_can_be_read(db_path: Path, tmp_path: Path) -> None:
    require_root("a read-only bind mount")
    store_run(db_path, pingpong_run(), name="base")
    directory = tmp_path / "rofs"
    directory.mkdir()
    shutil.copyfile(db_path, directory / "store.db")
    done = in_mount_namespace(
        f"mount --bind '{directory}' '{directory}' && mount -o remount,ro,bind '{directory}' && "
        f"{shell_threadlab()} runs --db '{directory}/store.db' && "
        f"{shell_threadlab()} runs delete base --db '{directory}/store.db'; echo \"delete: $?\""
    )
    assert "base" in done.stdout and "Traceback" not in done.stderr, done.stderr
    assert "delete: 2" in done.stdout
    assert "a read-only file system" in done.stderr


@pytest.mark.parametrize("command", [["show"], ["export"], ["report"], ["runs", "delete"], ["compare", "1"],
                                     ["runs", "rename"]])
def test_run_numbers_beyond_sqlite_integers_are_a_one_line_error(
    db_path: Path, tmp_path: Path, run_cli: RunCli, command: list[str]
) -> None:
    store_run(db_path, pingpong_run())
    args = [*command, "9223372036854775808"]
    if command == ["runs", "rename"]:
        args.append("new")
    if command == ["report"]:
        args += ["-o", str(tmp_path / "report")]
    code, _, err = run_cli(*args)
    assert code == 2, err
    assert "no run '9223372036854775808'" in err and err.count("\n") == 1


def test_a_store_path_the_user_cannot_reach_is_a_one_line_error(tmp_path: Path) -> None:
    prefix = without_write_override()
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    if prefix:  # root: a directory of another user, searched without CAP_DAC_READ_SEARCH
        require_root("a directory of another user")
        import os

        os.chown(locked, OTHER_UID, OTHER_UID)
    else:
        locked.chmod(0o000)
    try:
        for command in (["runs"], ["show"], ["runs", "delete", "1"]):
            done = run_threadlab(*command, "--db", str(locked / "store.db"), prefix=prefix)
            assert done.returncode == 2, done.stderr
            assert "cannot reach it: Permission denied" in done.stderr and "Traceback" not in done.stderr
    finally:
        locked.chmod(0o700)


def test_a_run_name_with_control_characters_is_refused(run_cli: RunCli, fake_native: Path) -> None:
    code, _, err = run_cli("bench", "--filter", "fake.single", "--name", "evil\x1b[2J")
    assert code == 2
    assert "cannot hold control characters" in err and "\x1b" not in err
