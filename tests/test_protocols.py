"""The primitives suite's own checks, against the real native program: a
benchmark must notice when it did not measure what it claims."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from conftest import REAL_NATIVE_DIR, run_native_point
from threadlab.native import protocol as native

PROGRAM = REAL_NATIVE_DIR / "threadlab-bench-posix"
pytestmark = pytest.mark.skipif(not os.access(PROGRAM, os.X_OK), reason=f"no native build at {PROGRAM}")


def run_point(name: str, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    return run_native_point(PROGRAM, name, *args)


def check(record: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in record["checks"] if c["name"] == name]
    assert found, f"no check {name!r} in {record['checks']}"
    return found[0]


def test_the_options_are_stated_once_and_read_by_the_front_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """--options (native/core/options.c) is what the front end knows, and
    --env's defaults come from the same table."""
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(REAL_NATIVE_DIR))
    options = native.native_options()
    assert set(options) == {"rule", "target", "warmup", "min_timings", "max_timings", "min_timing_ms",
                            "max_seconds", "clock"}
    assert options["rule"].choices == ("rsd", "rse") and options["clock"].choices == ("auto", "tsc", "monotonic_raw")
    env = json.loads(subprocess.run([str(PROGRAM), "--env"], capture_output=True, text=True,
                                    check=True, timeout=60).stdout)
    for quick, key in ((False, "normal"), (True, "quick")):
        assert env["defaults"][key] == {name: option.default_for(quick) for name, option in options.items()
                                        if name != "clock"}, key
    # The program refuses what the front end refuses, with the same words.
    done = subprocess.run([str(PROGRAM), "--run", "pthread.empty", "--min-timings", "1"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2 and "--min-timings 1: expected an integer from 2 to 100000" in done.stderr
    with pytest.raises(Exception, match="--min-timings 1: expected an integer from 2 to 100000"):
        options["min_timings"].parse("1")


def test_yield_pingpong_on_one_cpu_alternates() -> None:
    code, [record], _ = run_point("pthread.yield.pingpong", "--placement", "same-cpu")
    assert code == 0 and record["status"] == "ok"
    alternated = check(record, "alternated")
    assert alternated["ok"] and alternated["value"] >= 0.9


def test_yield_pingpong_that_does_not_alternate_is_flagged() -> None:
    """order=serial reproduces the seed's AIX behaviour (the partner does all
    its yields first): the point is measured but its check fails."""
    code, [record], _ = run_point("pthread.yield.pingpong", "--placement", "same-cpu", "--param", "order=serial")
    assert code == 0 and record["status"] == "ok"
    alternated = check(record, "alternated")
    assert not alternated["ok"]
    assert alternated["value"] < 0.1


@pytest.mark.parametrize("detach", ["detached", "joinable"])
def test_creation_chain_creates_exactly_m_threads(detach: str) -> None:
    code, [record], _ = run_point("pthread.create.chain", "--placement", "same-cpu",
                                  "--param", "chain=37", "--param", f"detach={detach}")
    assert code == 0 and record["status"] == "ok", record["reason"]
    length = check(record, "chain_length")
    assert length["ok"] and length["value"] == 37
    assert record["iterations"] == 37
    assert check(record, "distinct_threads")["ok"]


def test_process_contention_scope_is_unsupported_with_the_reason() -> None:
    code, [record], _ = run_point("pthread.create.chain", "--param", "scope=process")
    assert code == 0
    assert record["status"] == "unsupported"
    assert "PTHREAD_SCOPE_PROCESS" in record["reason"]
    assert record["samples"] == [] and record["summary"] is None


def test_placement_a_protocol_cannot_use_is_unsupported() -> None:
    code, [record], _ = run_point("pthread.timeslice", "--placement", "different-cpus")
    assert code == 0 and record["status"] == "unsupported"
    assert "placement different-cpus" in record["reason"]


def test_bound_threads_report_their_placement() -> None:
    code, [record], _ = run_point("pthread.mutex.pingpong", "--placement", "same-cpu")
    assert code == 0 and record["status"] == "ok"
    assert len(set(record["cpus"])) == 1 and None not in record["cpus"]
    assert check(record, "placement")["ok"]


def test_logp_emits_every_parameter_and_derives_l() -> None:
    code, records, _ = run_point("pthread.logp", "--placement", "same-cpu", "--param", "mechanism=sem")
    assert code == 0
    assert [r["metric"] for r in records] == ["rtt", "os", "or", "g", "L"]
    by_metric = {r["metric"]: r for r in records}
    latency = by_metric["L"]
    assert latency["derived"]["formula"].startswith("rtt/2 - os - or")
    assert latency["samples"] == []
    # L is exactly the stated formula of the other records' medians.
    rtt, os_, or_ = (by_metric[m]["summary"]["median"] for m in ("rtt", "os", "or"))
    assert latency["summary"]["mean"] == pytest.approx(rtt / 2 - os_ - or_, rel=1e-6)


@pytest.mark.parametrize("args,message", [
    (["--param", "chain=0"], "chain=0"),
    (["--param", "nosuch=1"], "has no parameter 'nosuch'"),
    (["--placement", "sideways"], "expected unbound, same-cpu or different-cpus"),
    (["--target", "2"], "expected a number from"),
    (["--min-timings", "20", "--max-timings", "5"], "below --min-timings"),
])
def test_bad_input_is_refused_with_what_is_accepted(args: list[str], message: str) -> None:
    code, records, stderr = run_point("pthread.create.chain", *args)
    assert code == 2 and records == []
    assert message in stderr
    assert "Traceback" not in stderr
