"""The Go suite (build/bin/threadlab-bench-go, `make go`): its protocol,
real records of every benchmark (small counts), the memory-limit path, and
`threadlab bench --suite go`."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import REAL_NATIVE_DIR, stored_records
from threadlab.records import schema

PROGRAM = REAL_NATIVE_DIR / "threadlab-bench-go"
pytestmark = pytest.mark.skipif(not PROGRAM.exists(), reason="the Go suite is not built (make go; needs Go)")


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PROGRAM), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def only_record(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, (done.stdout, done.stderr)
    return schema.parse_record_line(lines[0])


def test_list_and_env() -> None:
    entries = [json.loads(line) for line in run("--list").stdout.splitlines()]
    names = [e["benchmark"] for e in entries]
    assert names == ["threads.instantiate", "threads.start", "threads.start_join", "threads.sleep_yield",
                     "threads.create_join", "threads.channel_pingpong", "threads.capacity"]
    assert all(e["model"] == "goroutine" and e["suite"] == "go" for e in entries)
    assert all(isinstance(e["params"], list) for e in entries)
    env = json.loads(run("--env", "--clock", "auto").stdout)
    assert env["gomaxprocs"] >= 1 and env["go_version"].startswith("go")
    assert env["defaults"]["normal"] == {"warmup": 1, "iterations": 30}


@pytest.mark.parametrize(
    ("benchmark", "params", "unit"),
    [
        ("threads.start", ["count=2000"], "s"),
        ("threads.start_join", ["count=2000"], "s"),
        ("threads.sleep_yield", ["count=2000", "sleep_ms=5", "joined=yes"], "s"),
        ("threads.sleep_yield", ["count=2000", "sleep_ms=5", "joined=no"], "s"),
        ("threads.create_join", [], "ns"),
        ("threads.channel_pingpong", [], "ns"),
        ("threads.capacity", ["count=2000"], "bytes"),
    ],
)
def test_every_benchmark_gives_a_valid_record(benchmark: str, params: list[str], unit: str) -> None:
    args = [arg for p in params for arg in ("--param", p)]
    done = run("--run", benchmark, *args, "--quick", "--iterations", "3")
    record = only_record(done)
    assert done.returncode == 0 and record["status"] == "ok"
    assert record["model"] == "goroutine" and record["unit"] == unit and len(record["samples"]) == 3
    assert record["stop"]["rule"] == "fixed" and record["warmup"] == 1
    assert record["extra"]["gomaxprocs"] >= 1
    assert all(value > 0 for value in record["samples"])
    if benchmark == "threads.capacity":  # machine-wide kernel memory: a goroutine needs none of its own, so no sign
        kernel = record["extra"]["kernel_memory_per_thread"]
        assert isinstance(kernel, (int, float)) and math.isfinite(kernel)
    else:
        assert "kernel_memory_per_thread" not in record["extra"]


def test_sleep_yield_joined_lasts_at_least_both_sleeps() -> None:
    record = only_record(run("--run", "threads.sleep_yield", "--param", "count=100", "--param", "sleep_ms=20",
                             "--param", "joined=yes", "--warmup", "0", "--iterations", "2"))
    assert min(record["samples"]) >= 0.040


def test_pingpong_checks_its_handoffs() -> None:
    record = only_record(run("--run", "threads.channel_pingpong", "--quick", "--iterations", "2"))
    assert record["iterations"] == 4000 and record["checks"][0] == {
        "name": "handoffs", "ok": True, "value": None,
        "detail": "every handoff carried the next sequence number and every one arrived (the benchmark fails otherwise)"}


def test_instantiate_is_unsupported_with_the_reason() -> None:
    done = run("--run", "threads.instantiate")
    record = only_record(done)
    assert done.returncode == 0 and record["status"] == "unsupported"
    assert "cannot be created without being started" in record["reason"]


def test_memory_limit_scales_the_count() -> None:
    done = run("--run", "threads.capacity", "--param", "count=100000", "--warmup", "0", "--iterations", "1",
               env={"THREADLAB_TEST_LIMITS": json.dumps({"mem_available_bytes": 100 << 20})})
    record = only_record(done)
    # 100 MiB * 0.5 / 8 KiB = 6400
    assert record["params"]["count"] == "6400" and record["extra"]["scaled_from"] == 100000
    assert "goroutines alive at once do not fit" in record["extra"]["scaled_because"]
    tiny = only_record(run("--run", "threads.capacity", "--param", "count=100000",
                           env={"THREADLAB_TEST_LIMITS": json.dumps({"mem_available_bytes": 1 << 20})}))
    assert tiny["status"] == "unsupported" and "not even 1,000" in tiny["reason"]


def test_placement_other_than_unbound_is_unsupported() -> None:
    record = only_record(run("--run", "threads.start", "--placement", "same-cpu", "--param", "count=10"))
    assert record["status"] == "unsupported" and "unbound only" in record["reason"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "threads.nope"], "no such benchmark"),
        (["--run", "threads.start", "--param", "count=x"], "expected an integer"),
        (["--run", "threads.start", "--param", "size=1"], "has no such parameter"),
        (["--run", "threads.start", "--target", "0.05"], "fixed number of iterations"),
        (["--run", "threads.start", "--clock", "tsc"], "--clock"),
        (["--list", "--env"], "exactly one of"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    done = run(*args)
    assert done.returncode == 2 and done.stdout == "" and message in done.stderr


def test_bench_suite_go(run_cli: Any, monkeypatch: pytest.MonkeyPatch, db_path: Path) -> None:
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(REAL_NATIVE_DIR))
    code, out, err = run_cli("bench", "--suite", "go", "--quick", "--filter", "threads.start*,threads.instantiate",
                             "--iterations", "3")
    assert code == 0, err
    records = stored_records(db_path)
    assert [(r["benchmark"], r["status"]) for r in records] == [
        ("threads.instantiate", "unsupported"), ("threads.start", "ok"), ("threads.start_join", "ok")]
    assert "threads.start count=10000" in out
