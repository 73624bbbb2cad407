"""The one way to start a data-point record (docs/record-schema.md) in
Python: producers written here (the JVM launcher, the studies, the runner's
stand-in for a point whose program wrote nothing) fill in what they measured
on top of a record that already has every field of the format.

Kept free of heavy imports: the JVM launcher imports it at every point.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

RECORD_SCHEMA_ID = "threadlab.record/1"


def new_record(
    benchmark: str,
    model: str,
    *,
    metric: str,
    params: Mapping[str, str],
    placement: str,
    cpus: Sequence[int | None],
    unit: str,
    quantity: str,
    status: str = "ok",
    reason: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A record of the format with nothing measured yet: no samples, no
    summary, no clock, no checks."""
    return {
        "schema": RECORD_SCHEMA_ID,
        "benchmark": benchmark,
        "model": model,
        "metric": metric,
        "params": dict(params),
        "placement": placement,
        "cpus": list(cpus),
        "unit": unit,
        "quantity": quantity,
        "status": status,
        "reason": reason,
        "clock": None,
        "iterations": None,
        "actions_per_iteration": None,
        "warmup": 0,
        "overhead_ns": None,
        "samples": [],
        "summary": None,
        "stop": None,
        "derived": None,
        "checks": [],
        "extra": dict(extra or {}),
    }
