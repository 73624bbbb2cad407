"""Runs in and out of the store: `threadlab export` and `threadlab import`.

JSON export (docs/commands/export.md) is JSON Lines: a run header (schema
"threadlab.run/1": the run's metadata, environment, record count and the
sweep point of each record), then every record exactly as stored.  Import
reads that, or bare records as `bench --json` and `show --json` write them
(then it synthesizes the run's metadata and says so).  Everything is
validated before anything is written, and the whole run goes in as one
transaction: a bad file is refused with its line number and the reason,
and the store is left as it was.  A file is read line by line within
documented limits (IMPORT_LIMITS, docs/commands/import.md), checked as it
is read: a huge or hostile file is refused before it fills the memory.

CSV and Markdown exports neutralise stored text (threadlab.sanitize):
formulas in CSV cells, HTML, links and images in Markdown.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from importlib import resources
from typing import IO, Any, Iterator, Mapping, Sequence

from threadlab import __version__
from threadlab.run import environment
from threadlab.records import schema
from threadlab.analysis import stats
from threadlab.errors import UserError
from threadlab.analysis.points import canonical_params, describe_points, failed_checks, placement_text
from threadlab.output.sanitize import CsvWriter, markdown, markdown_code, printable
from threadlab.records.store import RunInfo, Store, now_utc, validate_run_name
from threadlab.vocabulary import RUN_STATUSES
from threadlab.output.units import format_value

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
        "stop_reason": run.stop_reason,
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
    """One row per record: identity, status and every statistic; numbers as
    numbers, text neutralised against formulas (sanitize.CsvWriter)."""
    out = io.StringIO()
    writer = CsvWriter(out)
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


def interval_text(low: float | None, high: float | None, unit: str) -> str:
    if low is None or high is None:
        return ""
    return f"[{format_value(low, unit)}, {format_value(high, unit)}]"


def export_markdown(run: RunInfo, records: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown page of the run.  Every stored text goes through
    sanitize.markdown (or markdown_code): a run name, a hostname or a
    reason cannot open HTML, a link or an image on a rendered page."""
    md = markdown
    lines = [f"# threadlab {md(run.label)}", ""]
    lines.append(f"- status: {md(run.display_status)}")
    if run.stop_reason:
        lines.append(f"- stopped: {md(run.stop_reason)}")
    lines.append(f"- started: {md(run.started_at)} (UTC) on {md(run.hostname)} (machine {md(run.machine_id)})")
    lines.append(f"- command: {markdown_code(' '.join(run.command))}")
    if run.origin:
        lines.append(f"- imported from {md(run.origin.get('file'))} at {md(run.origin.get('imported_at'))}")
    for label, text in environment.describe(run.environment):
        lines.append(f"- {md(label)}: {md(text)}")
    warnings = run.environment.get("warnings") or []
    if warnings:
        lines += ["", "**Warnings**", ""] + [f"- {md(w)}" for w in warnings]
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
            f"| {md(point.label)} | {md(placement_text(record['placement']))} | {md(median)} | {md(mean)} | {n} | "
            f"{out} | {md('; '.join(notes))} |"
        )
    lines += ["", f"Exported by threadlab {__version__} at {now_utc()}; statistics as in docs/statistics.md."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ import


@lru_cache(maxsize=1)
def _run_validator() -> Any:
    from jsonschema import Draft202012Validator

    text = resources.files("threadlab.records").joinpath("schema", RUN_SCHEMA_FILE).read_text("utf-8")
    run_schema = json.loads(text)
    Draft202012Validator.check_schema(run_schema)
    return Draft202012Validator(run_schema)


def header_problems(header: Mapping[str, Any]) -> list[str]:
    errors = list(_run_validator().iter_errors(header))
    if errors:
        from jsonschema.exceptions import best_match

        # As schema.record_problems: best_match of the single best error
        # descends into oneOf alternatives.
        return [schema._describe(best_match([best_match(errors)]))]
    problems = []
    times: dict[str, datetime] = {}
    for key in ("started_at", "finished_at"):
        value = header.get(key)
        if value is None:
            continue
        try:
            times[key] = datetime.fromisoformat(value)
        except ValueError:
            problems.append(f"field '{key}': {value!r} is not an ISO 8601 time")
    if len(times) == 2:
        started, finished = times["started_at"], times["finished_at"]
        if (started.tzinfo is None) != (finished.tzinfo is None):
            problems.append("fields 'started_at' and 'finished_at': one has a time zone and the other not")
        elif finished < started:
            problems.append(f"field 'finished_at': {header['finished_at']} is before started_at "
                            f"{header['started_at']}")
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
    source: str = ""  # the file's name as given ('<stdin>' for -)


class ImportRefused(UserError):
    """A file `threadlab import` refuses (the line and the reason); nothing
    of it is written."""


def _refuse(source: str, line: int | None, reason: str) -> ImportRefused:
    where = f"{source}: line {line}: " if line else f"{source}: "
    return ImportRefused(f"import {where}{reason}; nothing was imported")


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


@dataclass(frozen=True)
class ImportLimits:
    """What `threadlab import` accepts (docs/commands/import.md).  A real
    run is far inside them: a record of 100,000 timings (the most `bench`
    takes) is about 2 MB, a default run a few MB, a study's run a few
    thousand records."""

    line_bytes: int = 8 * 1024 * 1024
    total_bytes: int = 64 * 1024 * 1024
    records: int = 100_000
    depth: int = 32  # nesting of objects and arrays in one line
    integer_digits: int = 19  # SQLite's integers are 64-bit: |n| < 2^63


IMPORT_LIMITS = ImportLimits()
_MIB = 1024 * 1024


class _BadLine(ValueError):
    """A line refused while it is parsed (the message says why)."""


def _integer(text: str) -> int:
    """json's parse_int: an integer SQLite can store, or the line is refused
    (Python would otherwise spend its time on a 100,000-digit number)."""
    digits = text.lstrip("-")
    value = int(text) if len(digits) <= IMPORT_LIMITS.integer_digits else None
    if value is None or not -(2**63) <= value < 2**63:
        shown = text if len(text) <= 24 else f"{text[:20]}... ({len(digits)} digits)"
        raise _BadLine(f"the integer {shown} is out of range (accepted: -2^63 to 2^63-1)")
    return value


def _check_value(value: Any) -> None:
    """The nesting depth and the text of a parsed line: at most
    IMPORT_LIMITS.depth levels, and no lone surrogate (\\udc00 is valid
    JSON but not Unicode text: the store could not write it)."""
    pending: list[tuple[Any, int, str]] = [(value, 1, "")]
    while pending:
        item, depth, path = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as error:
                where = f"field '{path}': " if path else ""
                raise _BadLine(f"{where}a lone surrogate \\u{ord(item[error.start]):04x} is not Unicode text") from None
            continue
        if not isinstance(item, (dict, list)):
            continue
        if depth > IMPORT_LIMITS.depth:
            raise _BadLine(f"nested deeper than {IMPORT_LIMITS.depth} levels (the limit of a line)")
        if isinstance(item, dict):
            for key, child in item.items():
                inner = f"{path}.{key}" if path else str(key)
                pending.append((key, depth, path))
                pending.append((child, depth + 1, inner))
        else:
            pending += [(child, depth + 1, f"{path}[{index}]") for index, child in enumerate(item)]


def _parse_line(line: str) -> Any:
    try:
        value = json.loads(line, parse_int=_integer)
    except RecursionError:
        raise _BadLine(f"nested deeper than {IMPORT_LIMITS.depth} levels (the limit of a line)") from None
    except json.JSONDecodeError as error:
        raise _BadLine(f"not JSON: {error.msg} at column {error.colno}") from None
    except ValueError as error:  # _BadLine from _integer, or a number Python refuses
        raise _BadLine(str(error) if isinstance(error, _BadLine) else f"not JSON: {error}") from None
    _check_value(value)
    return value


def _lines(stream: IO[bytes], source: str, digest: Any) -> Iterator[tuple[int, str]]:
    """(number, text) of each line, checked as it is read: its length, the
    total size, UTF-8."""
    total = 0
    number = 0
    while True:
        raw = stream.readline(IMPORT_LIMITS.line_bytes + 1)
        if not raw:
            return
        number += 1
        if len(raw) > IMPORT_LIMITS.line_bytes:
            raise _refuse(source, number, f"longer than {IMPORT_LIMITS.line_bytes // _MIB} MiB (the limit of a line)")
        total += len(raw)
        if total > IMPORT_LIMITS.total_bytes:
            raise _refuse(source, number, f"the file is larger than {IMPORT_LIMITS.total_bytes // _MIB} MiB "
                                          "(the limit of an import)")
        digest.update(raw)
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _refuse(source, number, f"not UTF-8 text ({error.reason} at byte {error.start + 1} of the line)") \
                from None


def read_import(stream: IO[bytes], source: str, host: str | None = None) -> ImportPlan:
    """Reads, parses and validates a whole file within IMPORT_LIMITS;
    raises UserError naming the line."""
    digest = hashlib.sha256()
    header: dict[str, Any] | None = None
    header_line = 0
    records: list[dict[str, Any]] = []
    for number, line in _lines(stream, source, digest):
        if not line.strip():
            continue
        try:
            value = _parse_line(line)
        except _BadLine as error:
            raise _refuse(source, number, str(error)) from None
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
        if len(records) >= IMPORT_LIMITS.records:
            raise _refuse(source, number, f"more than {IMPORT_LIMITS.records} records (the limit of an import)")
        try:
            records.append(schema.validate_record(value))
        except schema.RecordError as error:
            raise _refuse(source, number, str(error)) from None
    if header is None and not records:
        raise _refuse(source, None, "no records (an empty file)")
    origin: dict[str, Any] = {"imported_at": now_utc(), "file": source, "sha256": digest.hexdigest(),
                              "header": header is not None}
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
        return ImportPlan(run, records, list(header["points"]), origin, synthesized=False, source=source)
    points = _bare_points(records)
    hostname = host or "unknown"
    machine = hashlib.sha256((f"host:{host}" if host else f"file:{origin['sha256']}").encode()).hexdigest()[:16]
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
    return ImportPlan(run, records, points, origin, synthesized=True, source=source)


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


def read_source(path: str, host: str | None = None) -> ImportPlan:
    """Reads and validates FILE or '-' (standard input) within IMPORT_LIMITS."""
    if path == "-":
        return read_import(sys.stdin.buffer, "<stdin>", host)
    try:
        with open(path, "rb") as stream:
            return read_import(stream, path, host)
    except FileNotFoundError:
        raise UserError(f"import {printable(path)}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"import {printable(path)}: is a directory; give a JSON Lines file") from None
    except OSError as error:
        raise UserError(f"import {printable(path)}: cannot read: {error.strerror}") from None


def export_text(fmt: str, run: RunInfo, records: Sequence[Mapping[str, Any]], points: Sequence[int]) -> str:
    if fmt == "json":
        return export_json(run, records, points)
    if fmt == "csv":
        return export_csv(run, records)
    return export_markdown(run, records)

