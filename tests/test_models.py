"""The models suite (docs/thread-models.md): the C thread-model programs
threadlab-bench-models-{pthread,process,ult,boost-fiber}, against the real
build.  Each must offer the shared benchmark names, produce valid records,
and notice when it did not measure what it claims."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import REAL_NATIVE_DIR, run_native_point, stored_records, threadlab_run
from threadlab.records import schema

MODELS = ("pthread", "process", "ult", "boost-fiber")
SHARED_NAMES = {
    "threads.create_join", "threads.chain", "threads.instantiate", "threads.start", "threads.start_join",
    "threads.yield_pingpong", "threads.mutex_pingpong", "threads.cond_pingpong", "threads.sleep_yield",
    "threads.capacity",
}
# The models that can create a thread without starting it.
INSTANTIATE = {"ult"}


def program(model: str, directory: Path = REAL_NATIVE_DIR) -> Path:
    return directory / f"threadlab-bench-models-{model}"


def built(model: str) -> bool:
    return os.access(program(model), os.X_OK)


def each_model(models: tuple[str, ...] = MODELS) -> list[Any]:
    """The models as parameters, skipped where the program is not built
    (boost-fiber without libboost-fiber-dev)."""
    return [pytest.param(m, id=m, marks=pytest.mark.skipif(not built(m), reason=f"no {program(m)}"))
            for m in models]


def run_point(model: str, name: str, *args: str, env: dict[str, str] | None = None
              ) -> tuple[int, list[dict[str, Any]], str]:
    return run_native_point(program(model), name, *args, env=env)


def check(record: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in record["checks"] if c["name"] == name]
    assert found, f"no check {name!r} in {record['checks']}"
    return found[0]


@pytest.mark.parametrize("model", each_model())
def test_each_model_lists_the_shared_names_in_the_models_suite(model: str) -> None:
    done = subprocess.run([str(program(model)), "--list"], capture_output=True, text=True, timeout=60, check=True)
    listed = [json.loads(line) for line in done.stdout.splitlines()]
    assert {entry["benchmark"] for entry in listed} == SHARED_NAMES
    assert {entry["model"] for entry in listed} == {model}
    assert {entry["suite"] for entry in listed} == {"models"}
    # Points match the JVM and Go peers' (placement unbound) unless the
    # protocol needs one CPU.
    for entry in listed:
        expected = ["same-cpu"] if entry["benchmark"].endswith("_pingpong") else ["unbound"]
        assert entry["placements"] == expected, entry["benchmark"]


@pytest.mark.parametrize("model", each_model())
def test_yield_pingpong_alternates(model: str) -> None:
    code, [record], _ = run_point(model, "threads.yield_pingpong", "--placement", "same-cpu")
    assert code == 0 and record["status"] == "ok", record["reason"]
    assert record["model"] == model
    alternated = check(record, "alternated")
    assert alternated["ok"] and alternated["value"] >= 0.9


@pytest.mark.parametrize("model", each_model())
def test_yield_pingpong_that_does_not_alternate_is_flagged(model: str) -> None:
    """order=serial keeps main blocked until the partner has yielded all its
    turns (the seed's AIX behaviour): measured, but the check fails."""
    code, [record], _ = run_point(model, "threads.yield_pingpong", "--placement", "same-cpu",
                                  "--param", "order=serial")
    assert code == 0 and record["status"] == "ok", record["reason"]
    alternated = check(record, "alternated")
    assert not alternated["ok"]
    assert alternated["value"] < 0.1


@pytest.mark.parametrize("model", each_model())
@pytest.mark.parametrize("name", ["threads.mutex_pingpong", "threads.cond_pingpong"])
def test_every_handoff_arrives_in_order(model: str, name: str) -> None:
    code, [record], _ = run_point(model, name, "--placement", "same-cpu")
    assert code == 0 and record["status"] == "ok", record["reason"]
    handoffs = check(record, "handoffs")
    assert handoffs["ok"]
    per_iteration = 8 if name == "threads.mutex_pingpong" else 2
    assert record["actions_per_iteration"] == per_iteration
    # Every timing (warm-up and calibration included) sent its handoffs.
    assert handoffs["value"] >= per_iteration * record["iterations"] * len(record["samples"])


@pytest.mark.parametrize("model", each_model())
def test_chain_creates_exactly_count_threads(model: str) -> None:
    code, [record], _ = run_point(model, "threads.chain", "--param", "count=37")
    assert code == 0 and record["status"] == "ok", record["reason"]
    length = check(record, "chain_length")
    assert length["ok"] and length["value"] == 37
    assert record["iterations"] == 37 and record["params"] == {"count": "37"}


@pytest.mark.parametrize("model", each_model())
@pytest.mark.parametrize("name", ["threads.create_join", "threads.start", "threads.start_join"])
def test_every_created_thread_ran(model: str, name: str) -> None:
    args = [] if name == "threads.create_join" else ["--param", "count=300"]
    code, [record], _ = run_point(model, name, *args)
    assert code == 0 and record["status"] == "ok", record["reason"]
    ran = check(record, "every_thread_ran")
    assert ran["ok"]
    if name != "threads.create_join":
        assert ran["value"] == 300 and record["params"]["count"] == "300"


@pytest.mark.parametrize("model", each_model())
def test_instantiate_is_measured_or_unsupported_with_the_reason(model: str) -> None:
    code, [record], _ = run_point(model, "threads.instantiate", "--param", "count=500")
    assert code == 0
    if model in INSTANTIATE:
        assert record["status"] == "ok", record["reason"]
        assert check(record, "not_started")["ok"] and check(record, "every_thread_ran")["ok"]
    else:
        assert record["status"] == "unsupported"
        assert "start" in record["reason"] and record["samples"] == []


@pytest.mark.parametrize("model", each_model())
def test_sleep_yield_threads_sleep_twice(model: str) -> None:
    code, [record], _ = run_point(model, "threads.sleep_yield", "--param", "count=200", "--param", "sleep_ms=5",
                                  "--param", "joined=yes")
    assert code == 0 and record["status"] == "ok", record["reason"]
    ran = check(record, "every_thread_ran")
    assert ran["ok"] and ran["value"] == 200
    slept = check(record, "slept")
    assert slept["ok"] and slept["value"] >= 10
    # joined=yes: a sample covers both sleeps.
    assert min(record["samples"]) >= 10e6


@pytest.mark.parametrize("model", each_model())
def test_capacity_reports_the_count_it_used(model: str) -> None:
    code, records, _ = run_point(model, "threads.capacity", "--param", "count=1500")
    assert code == 0 and [r["metric"] for r in records] == ["memory_per_thread"]
    [record] = records
    assert record["status"] == "ok", record["reason"]
    assert record["params"] == {"count": "1500"} and record["unit"] == "bytes"
    assert check(record, "all_suspended")["value"] == 1500
    assert record["summary"]["median"] > 0
    kernel = record["extra"]["kernel_memory_per_thread"]
    assert isinstance(kernel, (int, float)) and math.isfinite(kernel)
    if model in ("pthread", "process"):  # each has a kernel stack of its own (16 KiB on x86-64)
        assert kernel > 0


def limits(**values: int) -> dict[str, str]:
    """The environment that makes the programs see these machine limits."""
    return {"THREADLAB_TEST_LIMITS": json.dumps(values)}


def thread_cost(model: str) -> float:
    """The bytes per thread the program budgets, from the reason it gives
    when not even 1000 of its threads fit in 1 MiB."""
    code, [record], _ = run_point(model, "threads.capacity", "--param", "count=5000",
                                  env=limits(mem_available_bytes=1024 ** 2))
    assert code == 0 and record["status"] == "unsupported"
    assert "not even 1000" in record["reason"]
    match = re.search(r"at (\d+) bytes per thread", record["reason"])
    assert match, record["reason"]
    return float(match.group(1))


@pytest.mark.parametrize("model", each_model())
@pytest.mark.heavy
def test_capacity_scaled_to_the_memory_says_so(model: str) -> None:
    """THREADLAB_TEST_LIMITS stands for a machine with little memory: the
    count used is the one that fits, and a max_threads record says so."""
    # Half the available memory is the budget: room for 2,500 threads.
    memory = int(2 * 2500 * thread_cost(model))
    code, records, _ = run_point(model, "threads.capacity", "--param", "count=5000",
                                 env=limits(mem_available_bytes=memory))
    assert code == 0, records
    memory, limit = records
    used = int(memory["params"]["count"])
    assert used == 2500
    assert memory["status"] == "ok" and check(memory, "all_suspended")["value"] == used
    assert memory["extra"]["scaled_from"] == 5000 and "memory" in memory["extra"]["scaled_because"]
    assert limit["metric"] == "max_threads" and limit["unit"] == "threads"
    assert limit["summary"]["median"] == used and limit["params"] == memory["params"]


@pytest.mark.parametrize("model", each_model())
def test_a_count_that_cannot_fit_is_unsupported(model: str) -> None:
    code, [record], _ = run_point(model, "threads.start", "--param", "count=100000",
                                  env=limits(mem_available_bytes=1024 ** 2))
    assert code == 0 and record["status"] == "unsupported"
    assert "do not fit" in record["reason"] and "100000" in record["reason"]


@pytest.mark.parametrize("model", each_model(("ult",)))
def test_ult_records_its_virtual_processors(model: str) -> None:
    code, [record], _ = run_point(model, "threads.create_join", env={"TL_ULT_VPS": "2"})
    assert code == 0 and record["extra"]["vps"] == 2
    code, [record], _ = run_point(model, "threads.create_join", env={"TL_ULT_VPS": ""})
    assert code == 0 and record["extra"]["vps"] == 1


@pytest.mark.parametrize("model", each_model())
@pytest.mark.parametrize("args,message", [
    (["--run", "threads.start", "--param", "count=0"], "count=0 of threads.start is not accepted (accepted: an integer from 1 to 10000000)"),
    (["--run", "threads.sleep_yield", "--param", "sleep_ms=soon"], "sleep_ms=soon of threads.sleep_yield is not accepted (accepted: an integer from 1 to 60000)"),
    (["--run", "threads.yield_pingpong", "--placement", "unbound"], None),
])
def test_bad_input_is_refused_with_what_is_accepted(model: str, args: list[str], message: str | None) -> None:
    done = subprocess.run([str(program(model)), *args], capture_output=True, text=True, timeout=60, check=False)
    if message is None:  # a placement the protocol cannot use: an unsupported record
        [record] = [json.loads(line) for line in done.stdout.splitlines()]
        assert done.returncode == 0 and record["status"] == "unsupported"
        assert "unbound" in record["reason"]
    else:
        assert done.returncode == 2 and done.stdout == ""
        assert message in done.stderr


def _builds() -> list[Any]:
    """The plain build and the sanitizer builds `make test-python` names."""
    builds = [("release", str(REAL_NATIVE_DIR))]
    builds += [(kind, os.environ.get(var, "")) for kind, var in (("asan", "THREADLAB_ASAN_DIR"), ("tsan", "THREADLAB_TSAN_DIR"))]
    params = []
    for kind, directory in builds:
        missing = not directory or not os.access(program("ult", Path(directory)), os.X_OK)
        params.append(pytest.param(kind, directory, id=kind,
                                   marks=pytest.mark.skipif(missing, reason=f"no {kind} build of the models programs")))
    return params


@pytest.mark.parametrize("kind,directory", _builds())
@pytest.mark.heavy
def test_whole_quick_models_suite(kind: str, directory: str, db_path: Path) -> None:
    """`threadlab bench --suite models --quick` from each build: every
    benchmark of every model program, records valid, none failed, every
    check passed.  Under the sanitizers a report makes the program exit
    non-zero, which the runner records as a failed point.  Two timings a
    point and no warm-up: every timing runs every check, and the process
    model's 10,000 forks a timing made this test a minute long."""
    done = threadlab_run(db_path, "bench", "--suite", "models", "--quick", "--quiet", "--min-timings", "2", "--warmup",
                         "0", "--timeout", "120", timeout=600,
                         env={"THREADLAB_NATIVE_DIR": directory, "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"})
    records = stored_records(db_path)
    assert records, done.stderr
    assert [schema.record_problems(r) for r in records if schema.record_problems(r)] == []
    failed = [f"{r['model']} {r['benchmark']} {r['params']}: {r['reason']}" for r in records if r["status"] == "failed"]
    assert failed == [], "\n".join(failed)
    bad_checks = [f"{r['model']} {r['benchmark']}: {c['name']}: {c['detail']}"
                  for r in records for c in r["checks"] if not c["ok"]]
    assert bad_checks == [], "\n".join(bad_checks)
    offered = {p.name.removeprefix("threadlab-bench-models-") for p in Path(directory).glob("threadlab-bench-models-*")}
    for model in offered:
        assert {r["benchmark"] for r in records if r["model"] == model} == SHARED_NAMES, model
    for record in records:
        if record["status"] == "unsupported":
            assert record["benchmark"] == "threads.instantiate" and record["model"] not in INSTANTIATE
    assert done.returncode == 0, done.stderr
