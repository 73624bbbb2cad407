"""The command line: bad input is refused in one line naming the value and
what is accepted (exit 2, never a traceback); the read commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

RunCli = Callable[..., tuple[int, str, str]]


def _refused(run_cli: RunCli, *args: str) -> str:
    code, out, err = run_cli(*args)
    assert code == 2, (out, err)
    assert "Traceback" not in err
    assert err.startswith("threadlab: error: ")
    return err


def test_unknown_filter_lists_the_valid_names(fake_native: Path, run_cli: RunCli) -> None:
    err = _refused(run_cli, "bench", "--filter", "fake.nothing*")
    assert "--filter 'fake.nothing*' matches no benchmark; valid names:" in err
    for name in ("fake.ok", "fake.single", "fake.hang", "fake.slow"):
        assert f"\n  {name}\n" in err


def test_unknown_filter_suggests_a_wider_pattern(fake_native: Path, run_cli: RunCli) -> None:
    err = _refused(run_cli, "bench", "--filter", "ok")
    assert "--filter 'ok' matches no benchmark (did you mean '*ok*'? it selects 1); valid names:" in err


def test_filter_selects_by_glob_and_by_prefix(fake_native: Path, run_cli: RunCli) -> None:
    code, out, _ = run_cli("bench", "--dry-run", "--quick", "--filter", "fake.s*", "--filter", "fake.ok")
    assert code == 0
    names = [line.split()[2] for line in out.splitlines()]
    assert sorted(set(names)) == ["fake.ok", "fake.sanitizer", "fake.single", "fake.slow"]
    code, out, _ = run_cli("list", "--json", "--filter", "fake")
    assert len(out.splitlines()) == 10


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--target", "0"], "--target 0: expected a number from 1e-06 to 1"),
        (["--target", "2"], "--target 2: expected a number from 1e-06 to 1"),
        (["--target", "nan"], "--target nan: expected a number from 1e-06 to 1"),
        (["--target", "five"], "--target five: expected a number"),
        (["--min-timings", "1"], "--min-timings 1: expected an integer from 2 to 100000"),
        (["--min-timings", "2.5"], "--min-timings 2.5: expected an integer from 2 to 100000"),
        (["--max-timings", "100001"], "--max-timings 100001: expected an integer from 2 to 100000"),
        (["--min-timings", "20", "--max-timings", "10"], "--max-timings 10: expected at least --min-timings (20)"),
        (["--max-timings", "4"], "--max-timings 4: expected at least the default --min-timings (10)"),
        (["--timeout", "0"], "--timeout 0: expected a number from 1 to 86400 (seconds)"),
        (["--warmup", "-1"], "--warmup -1: expected an integer from 0 to 1000"),
        (["--min-timing-ms", "0"], "--min-timing-ms 0: expected a number from 0.001 to 10000"),
        (["--max-seconds", "4000"], "--max-seconds 4000: expected a number from 0.001 to 3600"),
        (["--rule", "median"], "--rule median: expected one of rsd, rse"),
        (["--clock", "rdtscp"], "--clock rdtscp: expected one of auto, tsc, monotonic_raw"),
        (["--placement", "same-cpu,nearby"], "unknown placement 'nearby'; accepted: unbound, same-cpu, different-cpus"),
        (["--placement", ""], "unknown placement '(empty)'"),
        (["--name", "42"], "--name 42: a name cannot be a number"),
        (["--name", "latest"], "--name latest: a name cannot be a number or one of latest, last"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_bench_options_are_refused_with_the_accepted_range(
    fake_native: Path, db_path: Path, run_cli: RunCli, args: list[str], expected: str
) -> None:
    err = _refused(run_cli, "bench", "--quick" if "--max-timings" not in args else "--dry-run", *args)
    assert expected in err
    assert not db_path.exists()  # refused before anything was written


def test_no_command_is_refused(run_cli: RunCli) -> None:
    assert "a command is required" in _refused(run_cli)


def test_unknown_command_is_refused(run_cli: RunCli) -> None:
    assert "invalid choice: 'benchmark'" in _refused(run_cli, "benchmark")


def test_help_states_the_defaults(fake_native: Path, run_cli: RunCli) -> None:
    code, out, _ = run_cli("bench", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "default 0.05" in flat and "default 120 s, 30 s with --quick" in flat
    assert "the fake's min_timings, 2..100000 (default 10, 3 with --quick)" in flat  # the program's --options
    assert "130 interrupted" in flat


def test_help_without_native_programs_says_where_the_defaults_are(run_cli: RunCli) -> None:
    code, out, _ = run_cli("bench", "--help")
    assert code == 0
    assert "their --options; none is built here" in " ".join(out.split())


def test_the_ranges_of_the_adaptive_options_are_the_programs(
    fake_native: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The front end keeps no copy of them: a program stating another range
    is obeyed."""
    monkeypatch.setenv("FAKE_TARGET_MAX", "0.5")
    err = _refused(run_cli, "bench", "--quick", "--target", "0.7")
    assert "--target 0.7: expected a number from 1e-06 to 0.5 (the relative spread that ends a point" in err


def test_an_adaptive_option_needs_the_native_programs(run_cli: RunCli) -> None:
    code, _, err = run_cli("bench", "--quick", "--target", "0.1")
    assert code == 1 and "no native benchmark programs" in err


def test_version(run_cli: RunCli) -> None:
    code, out, _ = run_cli("--version")
    assert code == 0 and out.startswith("threadlab ")


def test_show_an_unknown_run(fake_native: Path, run_cli: RunCli) -> None:
    assert run_cli("bench", "--quick", "--filter", "fake.single")[0] == 0
    err = _refused(run_cli, "show", "99")
    assert "no run '99'" in err and "a run number (1..1), a run name, or 'latest'" in err


def test_show_without_a_store(run_cli: RunCli, db_path: Path) -> None:
    err = _refused(run_cli, "show")
    assert f"no store at {db_path}" in err


def test_db_option_after_the_command(fake_native: Path, tmp_path: Path, run_cli: RunCli) -> None:
    other = tmp_path / "other" / "place.db"
    assert run_cli("bench", "--quick", "--filter", "fake.single", "--db", str(other))[0] == 0
    assert other.exists()
    code, out, _ = run_cli("--db", str(other), "runs", "--json")
    assert json.loads(out)["records"] == {"ok": 1}


def test_unwritable_db_location_is_refused(run_cli: RunCli, fake_native: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    err = _refused(run_cli, "bench", "--quick", "--filter", "fake.single", "--db", str(blocker / "sub" / "x.db"))
    assert "cannot create its directory" in err


def test_unwritable_json_file_is_refused(run_cli: RunCli, fake_native: Path, tmp_path: Path) -> None:
    err = _refused(run_cli, "bench", "--quick", "--filter", "fake.single", "--json", str(tmp_path / "no" / "x.jsonl"))
    assert "--json" in err and "cannot write" in err


def test_duplicate_run_name_is_refused(fake_native: Path, run_cli: RunCli) -> None:
    assert run_cli("bench", "--quick", "--filter", "fake.single", "--name", "base")[0] == 0
    err = _refused(run_cli, "bench", "--quick", "--filter", "fake.single", "--name", "base")
    assert "--name base: a run with that name exists already (run 1)" in err


def test_list_shows_benchmarks_params_and_placements(fake_native: Path, run_cli: RunCli) -> None:
    code, out, _ = run_cli("list")
    assert code == 0
    assert "fake.ok" in out and "size = 1, 2 (1)" in out and "unbound, same-cpu" in out
    assert "— (not placed)" in out
    code, out, _ = run_cli("list", "--json", "--filter", "fake.ok")
    entry = json.loads(out)
    assert entry["threads"] == 2 and entry["params"][0]["values"] == ["1", "2"]


def test_runs_and_show(fake_native: Path, run_cli: RunCli) -> None:
    run_cli("bench", "--quick", "--filter", "fake.ok,fake.usage", "--name", "first")
    code, out, _ = run_cli("runs")
    assert code == 0 and "first" in out and "complete" in out
    code, out, _ = run_cli("show", "first")
    assert code == 0
    for expected in ("run 1 (first): complete", "CPU", "kernel", "compiler", "fake 1.0", "scheduler",
                     "virtualization", "load average", "Results of run 1 (first)", "fake.ok", "unbound",
                     "same CPU", "FAILED [1]", "usage error"):
        assert expected in out, expected
    code, out, _ = run_cli("show", "1", "--json")
    assert [json.loads(line)["benchmark"] for line in out.splitlines()] == ["fake.ok", "fake.ok", "fake.usage"]
