"""Synthetic runs for the comparison, transfer and report tests: records
built from the real record template with chosen samples, stored as runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from conftest import make_record, measured
from threadlab.records.store import Store


def timings(median: float, n: int = 20, spread: float = 0.03, seed: int = 0) -> list[float]:
    """n positive timings around `median` (lognormal, relative spread)."""
    rng = np.random.default_rng(seed)
    return [float(v) for v in median * rng.lognormal(0.0, spread, n)]


def point(benchmark: str, placement: str, median: float, n: int = 20, seed: int = 0, **changes: Any) -> dict[str, Any]:
    return measured(benchmark, timings(median, n, seed=seed), placement=placement, **changes)


def unsupported(benchmark: str, placement: str, reason: str = "placement needs 3 CPUs", **changes: Any) -> dict[str, Any]:
    return make_record(benchmark=benchmark, placement=placement, status="unsupported", reason=reason, samples=[],
                       summary=None, stop=None, iterations=None, actions_per_iteration=None, **changes)


def failed(benchmark: str, placement: str, reason: str = "timed out after 30 s", **changes: Any) -> dict[str, Any]:
    return make_record(benchmark=benchmark, placement=placement, status="failed", reason=reason, samples=[],
                       summary=None, stop=None, iterations=None, actions_per_iteration=None, **changes)


def derived(benchmark: str, placement: str, value: float, **changes: Any) -> dict[str, Any]:
    summary = {"n": 1, "mean": value, "sd": None, "rsd": None, "se": None, "rse": None, "median": value,
               "min": value, "max": value}
    stop = {"rule": "rsd", "target": 0.05, "reason": "derived", "min_timings": 3, "max_timings": 10, "elapsed_s": 0.0}
    return make_record(benchmark=benchmark, placement=placement, samples=[], summary=summary, stop=stop,
                       iterations=None, derived={"formula": "rtt/2 - os - or"}, **changes)


ENVIRONMENT = {
    "host": {"hostname": "vm", "machine_id": "0035969ec53f6e7f"},
    "cpu": {"model": "Test CPU @ 2.0GHz", "online_cpus": 2, "governors": None},
    "kernel": {"system": "Linux", "release": "6.1.0-test", "version": "#1", "machine": "x86_64"},
    "virtualization": {"vm": "kvm", "container": None, "hypervisor_flag": True},
    "load": {"start": [0.2, 0.1, 0.1], "end": [1.0, 0.5, 0.2]},
    "memory": {"total_bytes": 8 * 2**30},
    "runner": {"policy": "SCHED_OTHER", "nice": 0, "allowed_cpus": [0, 1], "cpu_quota": None},
    "warnings": ["virtual machine (kvm): cross-CPU wake-ups and timer reads are slower and noisier than on bare metal"],
}


def store_run(db: Path, records: Sequence[dict[str, Any]], name: str | None = None, hostname: str = "vm",
              machine_id: str = "0035969ec53f6e7f", cpu: str = "Test CPU @ 2.0GHz") -> int:
    env = {**ENVIRONMENT, "host": {"hostname": hostname, "machine_id": machine_id},
           "cpu": {**ENVIRONMENT["cpu"], "model": cpu}}
    with Store(db) as store:
        run_id = store.create_run(
            name=name, command=["threadlab", "bench"], options={}, catalog=[], environment=env,
            points_planned=len(records), record_schema="threadlab.record/1", threadlab_version="test",
        )
        for index, record in enumerate(records):
            store.add_record(run_id, index, record)
        store.finish_run(run_id, "complete")
    return run_id


def pingpong_run(scale: float = 1.0, seed: int = 0) -> list[dict[str, Any]]:
    """Two ping-pongs on two placements, one single-thread point, one
    unsupported point; `scale` multiplies every different-cpus time."""
    return [
        point("pthread.mutex.pingpong", "same-cpu", 2000.0, seed=seed + 1),
        point("pthread.mutex.pingpong", "different-cpus", 40000.0 * scale, seed=seed + 2),
        point("pthread.sem.pingpong", "same-cpu", 1500.0, seed=seed + 3),
        point("pthread.sem.pingpong", "different-cpus", 30000.0 * scale, seed=seed + 4),
        point("pthread.empty", "none", 0.7, seed=seed + 5),
        unsupported("pthread.cond.broadcast", "different-cpus"),
    ]
