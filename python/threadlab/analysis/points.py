"""Data points across runs: identity, labels, and the per-point description
that compare, export and the report share.

A record's identity, for matching it with the same point of another run,
is (benchmark, model, metric, canonical params, placement)
(docs/commands/compare.md).  Params are compared as canonical JSON (sorted
keys), so their order in the record does not matter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from threadlab.analysis import stats
from threadlab.output.table import multi_model
from threadlab.vocabulary import PLACEMENT_HEADERS, RECORD_PLACEMENTS
from threadlab.output.units import format_value, is_time_unit, to_ns

IDENTITY_FIELDS = ("benchmark", "model", "metric", "params", "placement")
# Dimensions a comparison within one run can vary; any other name is a param.
RECORD_DIMENSIONS = ("placement", "model")

Key = tuple[str, str, str, str, str]


def canonical_params(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"))


def record_key(record: Mapping[str, Any], without: str | None = None) -> Key:
    """The identity of a record's data point; `without` leaves one dimension
    out (placement, model, or a param name), for comparisons within a run."""
    params = dict(record["params"])
    model, placement = record["model"], record["placement"]
    if without == "placement":
        placement = "*"
    elif without == "model":
        model = "*"
    elif without:
        params.pop(without, None)
    return (record["benchmark"], model, record["metric"], canonical_params(params), placement)


def dimension_value(record: Mapping[str, Any], dimension: str) -> str | None:
    if dimension in RECORD_DIMENSIONS:
        return str(record[dimension])
    value = record["params"].get(dimension)
    return None if value is None else str(value)


def varying_params(records: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """Per benchmark, the params that take several values among the records
    (they label the rows; a param with one value is noise in a label)."""
    seen: dict[str, dict[str, set[str]]] = {}
    for record in records:
        per = seen.setdefault(record["benchmark"], {})
        for name, value in record["params"].items():
            per.setdefault(name, set()).add(str(value))
    return {bench: {name for name, values in per.items() if len(values) > 1} for bench, per in seen.items()}


def point_label(record: Mapping[str, Any], shown: set[str], models: bool = False, skip: str | None = None) -> str:
    """benchmark [model] [param=value ...] [(metric)]."""
    parts = [record["benchmark"]]
    if models:
        parts.append(f"[{record['model']}]")
    parts += [f"{name}={value}" for name, value in sorted(record["params"].items()) if name in shown and name != skip]
    if record["metric"] != "time":
        parts.append(f"({record['metric']})")
    return " ".join(parts)


def placement_text(placement: str) -> str:
    return PLACEMENT_HEADERS.get(placement, placement)


def placement_rank(placement: str) -> int:
    return RECORD_PLACEMENTS.index(placement) if placement in RECORD_PLACEMENTS else len(RECORD_PLACEMENTS)


def samples_in(record: Mapping[str, Any], unit: str) -> list[float] | None:
    """The record's samples in `unit` (time units are converted); None when
    the units cannot be converted."""
    samples = [float(v) for v in record.get("samples") or []]
    if record["unit"] == unit:
        return samples
    if is_time_unit(record["unit"]) and is_time_unit(unit):
        factor = to_ns(1.0, record["unit"]) / to_ns(1.0, unit)
        return [v * factor for v in samples]
    return None


def failed_checks(record: Mapping[str, Any]) -> list[str]:
    return [f"check {c['name']} failed: {c['detail']}" for c in record.get("checks", []) if not c["ok"]]


@dataclass
class DescribedPoint:
    """One record with its label and statistics, for tables and figures."""

    record: Mapping[str, Any]
    label: str
    description: stats.Description | None  # None: no samples (not measured, or derived)
    value: float | None  # the median, or a derived record's single value

    @property
    def unit(self) -> str:
        return str(self.record["unit"])

    @property
    def status(self) -> str:
        return str(self.record["status"])

    def value_text(self, value: float | None) -> str:
        return format_value(value, self.unit)


def describe_points(records: Sequence[Mapping[str, Any]], models: bool = False) -> list[DescribedPoint]:
    shown = varying_params(records)
    several = multi_model(records)
    points = []
    for record in records:
        description = stats.record_description(record)
        summary = stats.record_summary(record)
        value = description.median if description else (summary.median if summary else None)
        label = point_label(record, shown.get(record["benchmark"], set()), models=models or record["benchmark"] in several)
        points.append(DescribedPoint(record, label, description, value))
    return points
