"""Shared fixtures: a fake native program, a private store, CLI runners."""

from __future__ import annotations

import copy
import inspect
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from threadlab import cli

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]
# Where the real native programs are, read before the fixtures hide them:
# $THREADLAB_NATIVE_DIR as the test run was started, else build/bin.
REAL_NATIVE_DIR = Path(os.environ.get("THREADLAB_NATIVE_DIR") or REPO / "build" / "bin")
# The ASan programs run without the sanitizer's __tls_get_addr interception,
# which makes LeakSanitizer die at exit by chance (CMakeLists.txt,
# THREADLAB_ASAN_OPTIONS); `make test` sets the same.
os.environ.setdefault("ASAN_OPTIONS", "intercept_tls_get_addr=0")


# The modules whose tests start a resource manager (threadlab-rm, or a study
# that runs one).  A manager counts every CPU that other work keeps busy and
# withholds it from its programs (docs/rm.md, "Other work"), so a test that
# ran beside these would change the CPUs they hand out.  They are marked
# `alone`, and `make test-python` runs them after the others, one at a time;
# the others run TEST_JOBS at a time (pytest-xdist).
ALONE_MODULES = frozenset({
    "test_gomp_multiprog.py", "test_multiprog.py", "test_omp.py", "test_rm.py", "test_rm_private.py",
    "test_security_rm.py",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unlisted = set()
    for module in {item.module for item in items if isinstance(item, pytest.Function)}:
        name = Path(module.__file__ or "").name
        uses_rmtools = any(getattr(value, "__module__", None) == "rmtools"
                           or (inspect.ismodule(value) and value.__name__ == "rmtools")
                           for value in vars(module).values())
        if uses_rmtools and name not in ALONE_MODULES:
            unlisted.add(name)
    if unlisted:
        raise pytest.UsageError(f"{', '.join(sorted(unlisted))}: imports rmtools, which starts managers, "
                                "but is not in ALONE_MODULES (tests/conftest.py)")
    for item in items:
        if item.path.name in ALONE_MODULES:
            item.add_marker(pytest.mark.alone)
    # The `heavy` tests (several seconds each) go first, so that the xdist
    # workers end together: one of them started last kept one worker busy
    # 48 s after the other had finished.
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


@pytest.fixture(autouse=True)
def not_beside_others(request: pytest.FixtureRequest) -> None:
    """A test marked alone is not run by a pytest-xdist worker (-n)."""
    if request.node.get_closest_marker("alone") and hasattr(request.config, "workerinput"):
        pytest.fail("marked alone (tests/conftest.py): run it without -n, as make test-python does", pytrace=False)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test touches the user's store or finds the real build by accident."""
    monkeypatch.setenv("THREADLAB_DB", str(tmp_path / "store.db"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(tmp_path / "no-native-programs"))
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def fake_native(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A THREADLAB_NATIVE_DIR holding threadlab-bench-fake."""
    directory = tmp_path / "native"
    directory.mkdir()
    program = directory / "threadlab-bench-fake"
    program.write_text(f"#!{sys.executable}\n" + (FIXTURES / "fake_bench.py").read_text())
    program.chmod(0o755)
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(directory))
    return directory


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """threadlab in this process: (exit status, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        code = cli.main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def threadlab_process(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    """threadlab as its own process (for signals)."""
    return subprocess.Popen(
        [sys.executable, "-m", "threadlab", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "python")},
        **kwargs,
    )


def threadlab_run(db: Path | None, *args: str, timeout: float = 300, env: Mapping[str, str] | None = None,
                  input: str | None = None) -> subprocess.CompletedProcess[str]:
    """threadlab as its own process, run to its end, on the build's programs
    (REAL_NATIVE_DIR) and storing into db: the one way the tests start
    `python -m threadlab` and wait for it (threadlab_process is for signals).

    db: the store (THREADLAB_DB); None for the commands that keep no
    records (`omp run`, `spawn run`), which then see the test's own
    (`isolated` above).
    env: variables set on top of that, for the tests whose point is one:
    another build's programs (THREADLAB_NATIVE_DIR of the sanitizer builds,
    or of a build missing a library), UBSAN_OPTIONS, a private TMPDIR whose
    processes a test finds, PYTHONPROFILEIMPORTTIME, a launcher's setting.
    input: standard input, for `import -`."""
    environ = {**os.environ, "THREADLAB_NATIVE_DIR": str(REAL_NATIVE_DIR), "PYTHONPATH": str(REPO / "python"),
               **({} if db is None else {"THREADLAB_DB": str(db)}), **(env or {})}
    return subprocess.run([sys.executable, "-m", "threadlab", *args], capture_output=True, text=True, env=environ,
                          input=input, timeout=timeout, check=False)


def stored_records(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT record FROM records ORDER BY run_id, seq").fetchall()
    return [json.loads(row[0]) for row in rows]


def wait_for_records(db: Path, count: int, timeout_s: float = 30.0) -> None:
    """Until the store holds `count` records (polling: another process writes)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if db.exists() and len(stored_records(db)) >= count:
                return
        except sqlite3.OperationalError:
            pass  # tables not created yet
        time.sleep(0.05)
    raise AssertionError(f"the store did not reach {count} records within {timeout_s} s")


def run_native_point(program: Path, name: str, *args: str, env: dict[str, str] | None = None
                     ) -> tuple[int, list[dict[str, Any]], str]:
    """One --quick point of a native benchmark program: its exit status, its
    records (each asserted valid against the record format) and stderr."""
    from threadlab.records import schema

    done = subprocess.run([str(program), "--run", name, "--quick", *args], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, **(env or {})})
    records = [json.loads(line) for line in done.stdout.splitlines()]
    for record in records:
        assert schema.record_problems(record) == [], record
    return done.returncode, records, done.stderr


def load_real_record() -> dict[str, Any]:
    """A record as threadlab-bench-posix printed it."""
    return json.loads((FIXTURES / "record-pthread-empty.json").read_text())


def make_record(**changes: Any) -> dict[str, Any]:
    """A valid record (the real one) with fields replaced."""
    record = copy.deepcopy(load_real_record())
    record.update(changes)
    return record


def measured(benchmark: str, samples: list[float], placement: str = "none", **changes: Any) -> dict[str, Any]:
    """A valid ok record of the given samples."""
    from threadlab.analysis import stats

    summary = stats.summarize(samples).as_dict()
    return make_record(benchmark=benchmark, placement=placement, samples=samples, summary=summary, **changes)
