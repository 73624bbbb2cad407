"""Runs in and out of the store: `threadlab export` and `threadlab import`.

JSON export (docs/commands/export.md) is JSON Lines: a run header (schema
"threadlab.run/1": the run's metadata, environment, record count and the
sweep point of each record), then every record exactly as stored.  Import
reads that, or bare records as `bench --json` and `show --json` write them
(then it synthesizes the run's metadata and says so).  Everything is
validated before anything is written, and the whole run goes in as one
transaction: a bad file is refused with its line number and the reason,
and the store is left as it was.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from threadlab import __version__, environment, schema, stats
from threadlab.errors import UserError
from threadlab.points import canonical_params, describe_points, failed_checks, placement_text
from threadlab.store import RUN_STATUSES, RunInfo, Store, now_utc, validate_run_name
from threadlab.units import format_value

RUN_SCHEMA_ID = "threadlab.run/1"
RUN_SCHEMA_FILE = "run-1.json"
EXPORT_FORMATS = ("json", "csv", "md")
CSV_COLUMNS = (
    "run", "run_name", "hostname", "machine_id", "benchmark", "model", "metric", "params", "placement", "status",
    "reason", "unit", "n", "mean", "sd", "mean_ci_low", "mean_ci_high", "median", "median_ci_low", "median_ci_high",
    "median_ci_coverage", "iqm", "mad", "outliers_low", "outliers_high", "min", "max", "checks_failed", "stop_reason",
    "quantity",
)


# ------------------------------------------------------------------ export


def run_header(run: RunInfo, points: Sequence[int]) -> dict[str, Any]:
    return {
        "schema": RUN_SCHEMA_ID,
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "hostname": run.hostname,
        "machine_id": run.machine_id,
        "threadlab_version": run.threadlab_version,
        "record_schema": run.record_schema,
        "command": run.command,
        "options": run.options,
        "catalog": run.catalog,
        "environment": run.environment,
        "points_planned": run.points_planned,
        "records": len(points),
        "points": list(points),
        "origin": run.origin,
        "exported_at": now_utc(),
        "exported_by": f"threadlab {__version__}",
    }


def export_json(run: RunInfo, records: Sequence[Mapping[str, Any]], points: Sequence[int]) -> str:
    lines = [json.dumps(run_header(run, points), separators=(",", ":"))]
    lines += [json.dumps(record, separators=(",", ":")) for record in records]
    return "\n".join(lines) + "\n"


def _number(value: float | None) -> str | float:
    return "" if value is None else value


def export_csv(run: RunInfo, records: Sequence[Mapping[str, Any]]) -> str:
    """One row per record: identity, status and every statistic."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for record in records:
        d = stats.record_description(record)
        summary = stats.record_summary(record)
        stop = record.get("stop") or {}
        writer.writerow([
            run.id, run.name or "", run.hostname, run.machine_id, record["benchmark"], record["model"],
            record["metric"], canonical_params(record["params"]), record["placement"], record["status"],
            record["reason"] or "", record["unit"],
            summary.n if summary else "",
            _number(summary.mean if summary else None), _number(d.sd if d else None),
            _number(d.mean_ci.low if d and d.mean_ci else None), _number(d.mean_ci.high if d and d.mean_ci else None),
            _number(summary.median if summary else None),
            _number(d.median_ci.low if d else None), _number(d.median_ci.high if d else None),
            _number(d.median_ci.coverage if d else None),
            _number(d.iqm if d else None), _number(d.mad if d else None),
            d.outliers_low if d else "", d.outliers_high if d else "",
            _number(summary.min if summary else None), _number(summary.max if summary else None),
            sum(1 for c in record.get("checks", []) if not c["ok"]), stop.get("reason", ""), record["quantity"],
        ])
    return out.getvalue()


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def interval_text(low: float | None, high: float | None, unit: str) -> str:
    if low is None or high is None:
        return ""
    return f"[{format_value(low, unit)}, {format_value(high, unit)}]"


def export_markdown(run: RunInfo, records: Sequence[Mapping[str, Any]]) -> str:
    lines = [f"# threadlab {run.label}", ""]
    lines.append(f"- status: {run.display_status}")
    lines.append(f"- started: {run.started_at} (UTC) on {run.hostname} (machine {run.machine_id})")
    lines.append(f"- command: `{' '.join(run.command)}`")
    if run.origin:
        lines.append(f"- imported from {run.origin.get('file')} at {run.origin.get('imported_at')}")
    for label, text in environment.describe(run.environment):
        lines.append(f"- {label}: {text}")
    warnings = run.environment.get("warnings") or []
    if warnings:
        lines += ["", "**Warnings**", ""] + [f"- {w}" for w in warnings]
    lines += [
        "",
        "| benchmark | placement | median [95% CI] | mean ± 95% CI | n | outliers | notes |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for point in describe_points(records):
        record, d = point.record, point.description
        unit = point.unit
        notes = failed_checks(record)
        if record["status"] != "ok":
            notes.insert(0, f"{record['status']}: {record['reason']}")
            median = mean = ""
        elif d is None:
            median, mean = format_value(point.value, unit) + " (derived)", ""
        else:
            median = f"{format_value(d.median, unit)} {interval_text(d.median_ci.low, d.median_ci.high, unit)}"
            if d.median_ci.short:
                notes.append(f"median interval covers only {d.median_ci.coverage:.0%} (n = {d.n})")
            mean = format_value(d.mean, unit)
            if d.mean_ci:
                mean += f" ± {format_value((d.mean_ci.high - d.mean_ci.low) / 2, unit)}"
        n = str(d.n) if d else ""
        out = f"{d.outliers_low}↓ {d.outliers_high}↑" if d and d.outliers else ("0" if d else "")
        lines.append(
            f"| {_md(point.label)} | {placement_text(record['placement'])} | {median} | {mean} | {n} | {out} | "
            f"{_md('; '.join(notes))} |"
        )
    lines += ["", f"Exported by threadlab {__version__} at {now_utc()}; statistics as in docs/statistics.md."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ import


@lru_cache(maxsize=1)
def _run_validator() -> Draft202012Validator:
    text = resources.files("threadlab").joinpath("schema", RUN_SCHEMA_FILE).read_text("utf-8")
    run_schema = json.loads(text)
    Draft202012Validator.check_schema(run_schema)
    return Draft202012Validator(run_schema)


def header_problems(header: Mapping[str, Any]) -> list[str]:
    errors = list(_run_validator().iter_errors(header))
    if errors:
        # As schema.record_problems: best_match of the single best error
        # descends into oneOf alternatives.
        return [schema._describe(best_match([best_match(errors)]))]
    problems = []
    for key in ("started_at", "finished_at"):
        value = header.get(key)
        if value is None:
            continue
        try:
            datetime.fromisoformat(value)
        except ValueError:
            problems.append(f"field '{key}': {value!r} is not an ISO 8601 time")
    if header["record_schema"] != schema.RECORD_SCHEMA_ID:
        problems.append(
            f"field 'record_schema': the run's records are {header['record_schema']!r}; this threadlab reads "
            f"{schema.RECORD_SCHEMA_ID}"
        )
    if len(header["points"]) != header["records"]:
        problems.append(f"field 'points': {len(header['points'])} entries for {header['records']} records")
    return problems


@dataclass
class ImportPlan:
    """A file read and validated, ready to be stored in one transaction."""

    run: dict[str, Any]
    records: list[dict[str, Any]]
    points: list[int]
    origin: dict[str, Any]
    synthesized: bool


class ImportError_(UserError):  # noqa: N801 - not the builtin ImportError
    pass


def _refuse(source: str, line: int | None, reason: str) -> ImportError_:
    where = f"{source}: line {line}: " if line else f"{source}: "
    return ImportError_(f"import {where}{reason}; nothing was imported")


def _bare_points(records: Sequence[Mapping[str, Any]]) -> list[int]:
    """Bare records carry no point index: consecutive records of the same
    benchmark, model, params and placement are one point (LogP writes five)."""
    points: list[int] = []
    previous = None
    for record in records:
        identity = (record["benchmark"], record["model"], canonical_params(record["params"]), record["placement"])
        if identity != previous:
            points.append(points[-1] + 1 if points else 0)
        else:
            points.append(points[-1])
        previous = identity
    return points


def read_import(text: str, source: str, host: str | None = None) -> ImportPlan:
    """Parses and validates a whole file; raises UserError naming the line."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    header: dict[str, Any] | None = None
    header_line = 0
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise _refuse(source, number, f"not JSON: {error.msg} at column {error.colno}") from None
        if not isinstance(value, dict):
            raise _refuse(source, number, f"expected a JSON object, got {type(value).__name__}")
        kind = value.get("schema")
        if isinstance(kind, str) and kind.startswith("threadlab.run/"):
            if header is not None or records:
                raise _refuse(source, number, "a run header may only be the first line")
            if kind != RUN_SCHEMA_ID:
                raise _refuse(source, number, f"run header format {kind!r} is not one this threadlab reads ({RUN_SCHEMA_ID})")
            problems = header_problems(value)
            if problems:
                raise _refuse(source, number, "run header: " + "; ".join(problems))
            header, header_line = value, number
            continue
        try:
            records.append(schema.validate_record(value))
        except schema.RecordError as error:
            raise _refuse(source, number, str(error)) from None
    if header is None and not records:
        raise _refuse(source, None, "no records (an empty file)")
    origin: dict[str, Any] = {"imported_at": now_utc(), "file": source, "sha256": digest, "header": header is not None}
    if header is not None:
        if header["records"] != len(records):
            raise _refuse(
                source, header_line,
                f"the run header announces {header['records']} records but the file has {len(records)} "
                "(a truncated or edited file?)",
            )
        run = dict(header)
        if host:
            run["hostname"] = host
        origin["original_id"] = header.get("id")
        return ImportPlan(run, records, list(header["points"]), origin, synthesized=False)
    points = _bare_points(records)
    hostname = host or "unknown"
    machine = hashlib.sha256((f"host:{host}" if host else f"file:{digest}").encode()).hexdigest()[:16]
    now = now_utc()
    run = {
        "name": None,
        "status": "complete",
        "started_at": now,
        "finished_at": now,
        "hostname": hostname,
        "machine_id": machine,
        "threadlab_version": "unknown",
        "record_schema": schema.RECORD_SCHEMA_ID,
        "command": ["threadlab", "import", source],
        "options": {},
        "catalog": [],
        "environment": {"warnings": [], "note": "imported from bare records: the environment was not recorded"},
        "points_planned": (points[-1] + 1) if points else 0,
    }
    return ImportPlan(run, records, points, origin, synthesized=True)


def _duplicate_of(store: Store, plan: ImportPlan) -> RunInfo | None:
    """A run of the store that this file already is: imported from the same
    bytes, or (with a header) the same machine's run with the same start."""
    for run in store.runs():
        if run.origin and run.origin.get("sha256") == plan.origin["sha256"]:
            return run
        if not plan.synthesized and run.machine_id == plan.run["machine_id"] and run.started_at == plan.run["started_at"]:
            return run
    return None


def import_file(store: Store, plan: ImportPlan, name: str | None) -> RunInfo:
    source = plan.origin["file"]
    if name is not None:
        plan.run["name"] = validate_run_name(name)
    elif plan.run.get("name") is not None:
        try:
            plan.run["name"] = validate_run_name(str(plan.run["name"]))
        except UserError:
            plan.run["name"] = None
    if plan.run.get("name"):
        taken = [run for run in store.runs() if run.name == plan.run["name"]]
        if taken:
            raise UserError(
                f"import {source}: a run named {plan.run['name']} exists already (run {taken[0].id}); "
                "import with --name NEW; nothing was imported"
            )
    duplicate = _duplicate_of(store, plan)
    if duplicate is not None:
        raise UserError(f"import {source}: already in the store as {duplicate.label}; nothing was imported")
    if plan.run["status"] not in RUN_STATUSES:  # the header schema checks it; keep the store's CHECK happy anyway
        raise UserError(f"import {source}: unknown run status {plan.run['status']!r}; nothing was imported")
    run_id = store.import_run(plan.run, plan.records, plan.points, plan.origin)
    return store.resolve_run(str(run_id))


def read_source(path: str) -> tuple[str, str]:
    """(text, name) of FILE or '-' (standard input)."""
    import sys

    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(encoding="utf-8"), path
    except FileNotFoundError:
        raise UserError(f"import {path}: no such file") from None
    except UnicodeDecodeError as error:
        raise UserError(f"import {path}: not UTF-8 text ({error.reason} at byte {error.start}); nothing was imported") from None
    except OSError as error:
        raise UserError(f"import {path}: cannot read: {error.strerror}") from None


def export_text(fmt: str, run: RunInfo, records: Sequence[Mapping[str, Any]], points: Sequence[int]) -> str:
    if fmt == "json":
        return export_json(run, records, points)
    if fmt == "csv":
        return export_csv(run, records)
    return export_markdown(run, records)

