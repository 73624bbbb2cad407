"""`threadlab import` and start-up against hostile input (docs/security.md,
"Imports"; docs/commands/import.md, "Limits"): every bad file is a
one-line error with its line number, checked while it is read; Ctrl-C at
start-up and `--version` stay cheap and quiet."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from conftest import make_record
from hostile import environment, run_threadlab
from synthetic import pingpong_run, store_run
from threadlab import cli
from threadlab.records import transfer

RunCli = Callable[..., tuple[int, str, str]]


def _refused(run_cli: RunCli, path: Path, *expected: str) -> None:
    code, _, err = run_cli("import", str(path))
    assert code == 2, err
    assert err.count("\n") == 1 and "nothing was imported" in err
    for text in expected:
        assert text in err, err
    code, out, _ = run_cli("runs", "--json")
    assert out == "" or "import" not in out


def test_a_line_nested_100000_deep_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    _refused(run_cli, deep, "line 1", "nested deeper than 32 levels")


def test_a_record_nested_deeper_than_the_limit_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    nested: object = "bottom"
    for _ in range(40):
        nested = {"x": nested}
    path = tmp_path / "nested.jsonl"
    path.write_text(json.dumps(make_record(extra={"deep": nested})) + "\n")
    _refused(run_cli, path, "line 1", "nested deeper than 32 levels")


def test_a_lone_surrogate_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    path = tmp_path / "surrogate.jsonl"
    path.write_text(json.dumps(make_record()) + "\n" + json.dumps(make_record(extra={"note": "\udc00"})) + "\n")
    _refused(run_cli, path, "line 2", "field 'extra.note'", "lone surrogate \\udc00")


def test_a_huge_integer_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(make_record()).replace('"warmup": 1', '"warmup": ' + "9" * 5000, 1) + "\n")
    assert "9" * 5000 in path.read_text()
    _refused(run_cli, path, "line 1", "out of range")
    path.write_text(json.dumps(make_record(extra={"n": 2**64})) + "\n")
    _refused(run_cli, path, "line 1", "the integer 18446744073709551616 is out of range")


def test_random_bytes_on_standard_input_are_refused(db_path: Path) -> None:
    noise = b"\xff\x80" + os.urandom(4096)
    done = subprocess.run([sys.executable, "-m", "threadlab", "import", "-"], input=noise, capture_output=True,
                          env=environment(), timeout=120, check=False)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "import <stdin>: line 1: not UTF-8 text" in err and "Traceback" not in err


def test_a_line_longer_than_the_limit_is_refused_before_it_is_parsed(tmp_path: Path, run_cli: RunCli) -> None:
    path = tmp_path / "long.jsonl"
    record = make_record(extra={"padding": "x" * (transfer.IMPORT_LIMITS.line_bytes + 10)})
    path.write_text(json.dumps(make_record()) + "\n" + json.dumps(record) + "\n")
    _refused(run_cli, path, "line 2", "longer than 8 MiB (the limit of a line)")


def test_a_file_larger_than_the_limit_is_refused_while_it_is_read(tmp_path: Path, run_cli: RunCli) -> None:
    path = tmp_path / "large.jsonl"
    blank = " " * (4 * 1024 * 1024) + "\n"  # blank lines: nothing to parse, only to read
    with path.open("w") as out:
        out.write(json.dumps(make_record()) + "\n")
        for _ in range(transfer.IMPORT_LIMITS.total_bytes // len(blank) + 1):
            out.write(blank)
    _refused(run_cli, path, "larger than 64 MiB (the limit of an import)")


def test_more_records_than_the_limit_are_refused(tmp_path: Path, run_cli: RunCli,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transfer, "IMPORT_LIMITS", transfer.ImportLimits(records=3))
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(make_record()) + "\n" for _ in range(4)))
    _refused(run_cli, path, "line 4", "more than 3 records")


def test_a_run_that_finished_before_it_started_is_refused(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, pingpong_run(), name="base")
    code, out, _ = run_cli("export", "base")
    header, *records = out.splitlines()
    data = json.loads(header)
    data.update(name="other", machine_id="0123456789abcdef", started_at="2025-01-02T00:00:00.000+00:00",
                finished_at="2025-01-01T23:59:59.000+00:00")
    path = tmp_path / "backwards.jsonl"
    path.write_text("\n".join([json.dumps(data), *records]) + "\n")
    _refused(run_cli, path, "line 1", "field 'finished_at': 2025-01-01T23:59:59.000+00:00 is before started_at")


# -------------------------------------------------------------- start-up


def _entry_point() -> tuple[str, str]:
    """(module, function) of the `threadlab` command, as pyproject.toml declares it."""
    import tomllib

    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    module, _, function = tomllib.loads(text)["project"]["scripts"]["threadlab"].partition(":")
    return module, function


def test_ctrl_c_while_threadlab_loads_is_one_line() -> None:
    """A Ctrl-C in the first fraction of a second lands while the modules
    load: the entry point turns it into one line and status 130."""
    module, function = _entry_point()
    script = f"""
import importlib.abc, sys
class CtrlC(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "threadlab.records.store":  # a module `threadlab runs` imports
            raise KeyboardInterrupt
        return None
sys.meta_path.insert(0, CtrlC())
sys.argv = ["threadlab", "runs"]
from {module} import {function} as main
sys.exit(main())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment(),
                          timeout=120, check=False)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "threadlab: interrupted\n"


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["bench", "--help"], ["compare", "--help"]])
def test_version_and_help_do_not_load_heavy_modules(args: list[str]) -> None:
    module, function = _entry_point()
    script = f"""
import sys
sys.argv = ["threadlab", *{args!r}]
from {module} import {function} as main
try:
    main()
finally:
    heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {{"numpy", "scipy", "jsonschema", "matplotlib", "rich"}})
    print("HEAVY", heavy, file=sys.stderr)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment(),
                          timeout=120, check=False)
    assert "HEAVY []" in done.stderr, done.stderr
    assert done.returncode == 0 and "threadlab" in done.stdout


@pytest.mark.parametrize("args,loaded", [
    (["runs", "--db", "{db}"], {"threadlab.cli.runs"}),
    (["show", "--db", "{db}"], {"threadlab.cli.show"}),
    (["omp", "--help"], {"threadlab.cli.rm"}),
    (["--version"], set()),
    # an option's value that names a command: the whole parser reads the line
    (["--db", "bench", "runs"], None),
])
def test_a_command_loads_its_own_module_alone(args: list[str], loaded: set[str] | None, tmp_path: Path) -> None:
    """A command's parser is built from its module alone: `threadlab runs`
    imports neither the bench command nor the studies (0.12 s of the
    0.29 s it took to start here)."""
    module, function = _entry_point()
    args = [arg.replace("{db}", str(tmp_path / "store.db")) for arg in args]
    script = f"""
import sys
sys.argv = ["threadlab", *{args!r}]
from {module} import {function} as main
try:
    main()
finally:
    print("CLI", sorted(m for m in sys.modules if m.startswith("threadlab.cli.") and m != "threadlab.cli.options"),
          file=sys.stderr)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment(),
                          timeout=120, check=False)
    line = next(line for line in done.stderr.splitlines() if line.startswith("CLI "))
    every = {f"threadlab.cli.{module}" for _, module, _ in cli.COMMANDS}
    assert set(ast.literal_eval(line.removeprefix("CLI "))) == (every if loaded is None else loaded), done.stderr


def test_the_command_runs_through_its_entry_point(db_path: Path) -> None:
    done = run_threadlab("--version")
    assert done.returncode == 0 and done.stdout.startswith("threadlab ")
