"""Output files and streams against a clumsy or hostile user
(docs/security.md, "Output files", "Terminal, CSV and Markdown output"):
never onto the store, whole or not at all, never through another user's
link; a closed pipe is an error; stored text cannot inject formulas,
escape sequences or HTML."""

from __future__ import annotations

import csv
import io
import re
import json
import os
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from conftest import stored_records, threadlab_process
from hostile import OTHER_UID, in_mount_namespace, require_root, run_threadlab, shell_threadlab
from synthetic import failed, pingpong_run, point, store_run

RunCli = Callable[..., tuple[int, str, str]]


# ------------------------------------------------------ never onto the store


def test_bench_json_onto_the_store_is_refused(db_path: Path, run_cli: RunCli, fake_native: Path) -> None:
    store_run(db_path, pingpong_run(), name="kept")
    for target in (str(db_path), f"{db_path}-wal", f"{db_path}-shm"):
        code, _, err = run_cli("bench", "--filter", "fake.single", "--json", target)
        assert code == 2, err
        assert "that is the store" in err
    code, out, _ = run_cli("runs", "--json")
    assert [json.loads(line)["name"] for line in out.splitlines()] == ["kept"]


def test_export_onto_the_store_or_a_link_to_it_is_refused(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run(), name="kept")
    link = tmp_path / "innocent.json"
    link.symlink_to(db_path)
    before = db_path.read_bytes()
    for target in (str(db_path), str(link), f"{db_path}-wal"):
        code, _, err = run_cli("export", "kept", "-o", target)
        assert code == 2, err
        assert "that is the store" in err
    assert db_path.read_bytes() == before
    code, out, _ = run_cli("show", "kept", "--json")
    assert code == 0 and len(out.splitlines()) == 6


def test_export_replaces_a_file_whole_and_keeps_its_mode(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run(), name="kept")
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    target.chmod(0o640)
    code, _, err = run_cli("export", "kept", "--format", "csv", "-o", str(target))
    assert code == 0, err
    assert target.read_text().startswith("run,run_name,")
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


# ---------------------------------------------------------- full disk


def _tiny_file_system(body: str) -> subprocess.CompletedProcess[str]:
    """body runs with $T a 64 KiB tmpfs holding old.txt ('old'), the store
    in $DB; then prints the listing of $T and old.txt."""
    return in_mount_namespace(
        'T=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$T" && echo old > "$T/old.txt" && '
        f"{body}; echo \"status: $?\"; ls -a \"$T\"; cat \"$T/old.txt\""
    )


def test_export_on_a_full_disk_leaves_the_old_file(db_path: Path, run_cli: RunCli) -> None:
    big = [point("pthread.mutex.pingpong", "same-cpu", 2000.0, n=20000, seed=1)]
    store_run(db_path, big, name="big")
    done = _tiny_file_system(f"{shell_threadlab()} export big --db '{db_path}' -o \"$T/old.txt\"")
    assert "status: 1" in done.stdout, done.stdout + done.stderr
    assert "No space left on device" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stdout.split("status: 1")[1].split() == [".", "..", "old.txt", "old"]


@pytest.mark.heavy
def test_report_on_a_full_disk_is_a_one_line_error(db_path: Path) -> None:
    store_run(db_path, pingpong_run(), name="base")
    done = _tiny_file_system(f"{shell_threadlab()} report base --db '{db_path}' -o \"$T/report\"")
    assert "status: 1" in done.stdout, done.stdout + done.stderr
    assert "No space left on device" in done.stderr and "Traceback" not in done.stderr
    listing = done.stdout.split("status: 1")[1]
    assert ".tmp" not in listing


# --------------------------------------------------------------- links


def test_report_never_writes_through_links_in_its_directory(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run(), name="base")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "file").write_text("precious\n")
    report = tmp_path / "report"
    report.mkdir()
    (report / ".threadlab-report").write_text("written by threadlab report\n")  # looks like an old report
    (report / "index.html").symlink_to(victim / "file")
    (report / "figures").symlink_to(victim)
    code, _, err = run_cli("report", "base", "-o", str(report))
    assert code == 0, err
    assert (victim / "file").read_text() == "precious\n"
    assert sorted(p.name for p in victim.iterdir()) == ["file"]
    assert not (report / "index.html").is_symlink() and "<html" in (report / "index.html").read_text()
    assert not (report / "figures").is_symlink() and any((report / "figures").glob("*.png"))


def test_report_refuses_a_directory_others_can_write_or_own(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run(), name="base")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    code, _, err = run_cli("report", "base", "-o", str(shared))
    assert code == 2 and "every user may write into the directory" in err
    require_root("a directory of another user")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, OTHER_UID, OTHER_UID)
    code, _, err = run_cli("report", "base", "-o", str(theirs))
    assert code == 2 and "belongs to another user" in err
    assert list(theirs.iterdir()) == []


def test_a_link_of_another_user_is_not_followed(db_path: Path, tmp_path: Path, run_cli: RunCli,
                                                fake_native: Path) -> None:
    require_root("a link owned by another user")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    planted = tmp_path / "out.json"
    planted.symlink_to(victim)
    os.lchown(planted, OTHER_UID, OTHER_UID)
    code, _, err = run_cli("bench", "--filter", "fake.single", "--json", str(planted))
    assert code == 2 and "a symbolic link owned by another user" in err
    store_run(db_path, pingpong_run(), name="base")
    code, _, err = run_cli("export", "base", "-o", str(planted))
    assert code == 2 and "a symbolic link owned by another user" in err
    assert victim.read_text() == "precious\n"


def test_a_file_of_another_user_does_not_lend_its_mode(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    """A world-writable file another user planted is replaced by a file of
    the default mode, not one that user may still write."""
    require_root("a file of another user")
    store_run(db_path, pingpong_run(), name="base")
    planted = tmp_path / "out.json"
    planted.write_text("planted\n")
    os.chown(planted, OTHER_UID, OTHER_UID)
    planted.chmod(0o666)
    umask = os.umask(0o022)
    try:
        code, _, err = run_cli("export", "base", "-o", str(planted))
    finally:
        os.umask(umask)
    assert code == 0, err
    assert planted.stat().st_uid == os.geteuid() and planted.stat().st_mode & 0o777 == 0o644


# ----------------------------------------------------------- closed pipes


def test_a_closed_json_pipe_stops_bench_with_an_error(db_path: Path, fake_native: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SLOW_S", "0.2")
    child = threadlab_process("bench", "--filter", "fake.slow", "--json", "-")
    assert child.stdout and child.stderr
    first = child.stdout.readline()
    assert json.loads(first)["benchmark"] == "fake.slow"
    child.stdout.close()  # the reader leaves, as `head -n 1` does
    err = child.stderr.read()
    assert child.wait(timeout=60) == 1, err
    lines = [line for line in err.splitlines() if line.startswith("threadlab: error:")]
    assert len(lines) == 1 and "broken pipe" in lines[0] and "stopped after" in lines[0], err
    assert "Traceback" not in err
    run = json.loads(run_threadlab("runs", "--json", "--db", str(db_path)).stdout.splitlines()[0])
    assert run["stored_status"] == "failed"
    assert "broken pipe" in run["stop_reason"] and run["stop_reason"].startswith("stopped after")
    assert len(stored_records(db_path)) < 6


@pytest.mark.parametrize("command", [["runs"], ["runs", "--json"], ["show", "base"], ["export", "base"],
                                     ["compare", "base", "slow", "--format", "csv"]])
def test_a_closed_pipe_is_a_one_line_error_for_every_command(db_path: Path, command: list[str]) -> None:
    for _ in range(40):  # enough output to fill a pipe
        store_run(db_path, pingpong_run())
    store_run(db_path, pingpong_run(), name="base")
    store_run(db_path, pingpong_run(scale=1.3, seed=4), name="slow")
    child = threadlab_process(*command, "--db", str(db_path))
    assert child.stdout and child.stderr
    child.stdout.close()
    err = child.stderr.read()
    assert child.wait(timeout=60) == 1, err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert err.count("\n") == 1 and "broken pipe" in err


# --------------------------------------------------------- stored text


def _hostile_run(db_path: Path, tmp_path: Path, run_cli: RunCli, name: str, hostname: str, reason: str) -> None:
    """A run whose name, hostname and failure reason come from an imported file."""
    store_run(db_path, [point("pthread.mutex.pingpong", "same-cpu", 2000.0, seed=1),
                        failed("pthread.sem.pingpong", "same-cpu", reason=reason)], name="source")
    code, out, _ = run_cli("export", "source")
    header, *records = out.splitlines()
    data = json.loads(header)
    data.update(name=name, hostname=hostname, machine_id="feedfacefeedface", started_at="2024-01-01T00:00:00+00:00",
                finished_at="2024-01-01T00:01:00+00:00")
    crafted = tmp_path / "crafted.jsonl"
    crafted.write_text("\n".join([json.dumps(data), *records]) + "\n")
    code, _, err = run_cli("import", str(crafted))
    assert code == 0, err


def test_csv_cells_cannot_be_formulas(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    _hostile_run(db_path, tmp_path, run_cli, "=HYPERLINK(\"http://evil\",\"x\")", "+cmd|' /C calc'!A0",
                 "@SUM(1+1)*cmd")
    code, out, _ = run_cli("export", "latest", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0]["run_name"] == "'=HYPERLINK(\"http://evil\",\"x\")"
    assert rows[0]["hostname"] == "'+cmd|' /C calc'!A0"
    assert rows[1]["reason"] == "'@SUM(1+1)*cmd"
    assert float(rows[0]["n"]) == 20 and not rows[0]["mean"].startswith("'")
    code, out, _ = run_cli("compare", "source", "latest", "--format", "csv")
    assert code == 0
    cells = [cell for row in csv.reader(io.StringIO(out)) for cell in row]
    assert not any(cell.startswith(("=", "+", "@")) for cell in cells)


def test_compare_csv_cells_cannot_be_formulas() -> None:
    from threadlab.analysis import compare

    records = [point("pthread.mutex.pingpong", "same-cpu", 2000.0, seed=1)]
    pair = compare.compare_sides(compare.Side("=1+1", "A", records), compare.Side("@SUM(A1)", "B", records))
    rows = list(csv.DictReader(io.StringIO(compare.pair_csv([pair]))))
    assert rows[0]["a"] == "'=1+1" and rows[0]["b"] == "'@SUM(A1)"
    assert float(rows[0]["ratio"]) == 1.0


def test_negative_numbers_stay_numbers_in_csv() -> None:
    from threadlab.output.sanitize import csv_cell

    assert csv_cell(-1.5) == -1.5 and csv_cell("-1.5") == "-1.5" and csv_cell("-2e-3") == "-2e-3"
    assert csv_cell("-1+1") == "'-1+1" and csv_cell("\t=1") == "'\t=1" and csv_cell("\r=1") == "'\r=1"


def test_stored_text_cannot_send_escape_sequences_to_the_terminal(
    db_path: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    _hostile_run(db_path, tmp_path, run_cli, "named", "host\x1b]0;pwned\x07\x1b[2J",
                 "boom\x1b[31m\x9b2J\u202eevil")
    for command in (["runs"], ["show", "named"], ["compare", "source", "named"], ["compare", "source", "named",
                    "--by", "machine"], ["import", str(tmp_path / "crafted.jsonl")]):
        code, out, err = run_cli(*command)
        for text in (out, err):
            assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text and "\u202e" not in text, command
    code, out, _ = run_cli("show", "named")
    assert "host\\x1b]0;pwned" in out and "boom\\x1b[31m\\x9b2J\\u202eevil" in out


def test_a_progress_line_cannot_send_escape_sequences(db_path: Path, fake_native: Path, tmp_path: Path) -> None:
    fake = fake_native / "threadlab-bench-fake"
    fake.write_text(fake.read_text().replace('"fake: about to crash"', '"fake: \\x1b]0;pwned\\x07 about to crash"'))
    done = run_threadlab("bench", "--filter", "fake.crash", "--db", str(db_path))
    assert done.returncode == 1
    assert "about to crash" in done.stderr and "\x1b" not in done.stderr + done.stdout


def test_markdown_export_escapes_html_links_and_images(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    _hostile_run(db_path, tmp_path, run_cli, "<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
                 "![track](http://evil/pixel.png) [click](javascript:alert(1)) `code` | cell")
    code, out, _ = run_cli("export", "latest", "--format", "md")
    assert code == 0
    assert not re.search(r"(?<!\\)<", out)  # every < escaped: no HTML
    assert "![track](" not in out and "[click](" not in out
    assert "\\<script\\>" in out and "\\!\\[track\\]" in out and "\\| cell" in out
    code, out, _ = run_cli("compare", "source", "latest", "--format", "md")
    assert code == 0 and "![track](" not in out and "\\!\\[track\\]" in out


def test_a_program_name_in_rm_status_is_text_not_markup() -> None:
    """A managed program's name is chosen by the program (prctl PR_SET_NAME):
    `threadlab rm status` must print it, never interpret it as rich markup."""
    from rich.console import Console

    from threadlab.cli.rm import render_status

    state = {"running": True, "directory": "/d", "arena": "/a", "layout_version": 1, "ncpus": 2,
             "manager": {"pid": 1, "policy": "timeshare", "quantum_ms": 100, "fresh": True},
             "counters": {}, "apps": [{"slot": 0, "pid": 42, "comm": "[link=http://x]ev[/link][bold]il",
                                       "requested": 2, "team": 2, "owned": 2, "cpus": "0-1", "epoch": 1,
                                       "regions": 3, "alive": True}]}
    console = Console(width=200, record=True, force_terminal=True)
    console.print(render_status(state))
    assert "[link=http://x]ev[/link][bold]il" in console.export_text()
    assert "\x1b]8;" not in console.export_text(styles=True)  # no hyperlink escape was made
