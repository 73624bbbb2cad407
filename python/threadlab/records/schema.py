"""Validation of data-point records against the record format, and the
one place a stored record's summary is made (docs/record-schema.md, "The
summary").

The format is schema/record-1.json (JSON Schema draft 2020-12), the contract
between every producer and the front end.  On top of it come the checks a
JSON Schema cannot express: the summary agrees with the raw samples, an ok
point has a summary, an unsupported or failed point says why.

A record is accepted (validate_record, parse_record_line) on its way into
threadlab: from a program's stdout, a study's cells, an imported file.
There the front end computes the summary of its raw samples once
(stats.summarize): the producer's mean, median, minimum and maximum must
agree with it within a relative 1e-6 (producers print 10 significant
digits), and the accepted record carries the front end's whole summary,
at full precision.  That
is the summary the store keeps and every reader reads
(stats.record_summary); nothing recomputes it.  A derived record (no
samples) keeps its producer's.

Every problem is reported as "field 'PATH': what is wrong", so a producer's
author can find it at once.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from threadlab.analysis import stats
from threadlab.vocabulary import record_format
from threadlab.records.record import RECORD_SCHEMA_ID  # noqa: F401  (the format's id, re-exported)

if TYPE_CHECKING:  # jsonschema is imported where records are validated: `threadlab --help` does not pay for it
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError


# The producer prints 10 significant digits (native/core/json.c); values
# recomputed from rounded samples agree far better than this.
_RELATIVE_TOLERANCE = 1e-6
_ABSOLUTE_TOLERANCE = 1e-9


class RecordError(ValueError):
    """A record that does not follow the format; str() names the field."""


def record_schema() -> dict[str, Any]:
    """The record format, as shipped in the package."""
    return record_format()


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    schema = record_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@lru_cache(maxsize=1)
def prepare() -> None:
    """Does validation's one-time work now: jsonschema's import and the
    validator's construction, and the imports of the samples' summary
    (numpy), 0.16-0.20 s of CPU here.  A harness calls it before it
    starts a point: done at the point's first record, it took a CPU from
    the measurements the point was still running (on 2 CPUs, a sample of
    the shim's regions in omp.region.overhead took up to 200 times its
    median, and the private manager, seeing the load, once gave a team of
    1).  Once per process (a harness calls it before every point)."""
    _validator()
    stats.summarize([1.0, 2.0, 3.0])


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(record)"


def _describe(error: ValidationError) -> str:
    """One line naming the field and the rule it breaks."""
    path = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [key for key in error.validator_value if key not in error.instance]
        if missing:
            return f"field '{_path(path + [missing[0]])}': missing (required)"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        unexpected = sorted(key for key in error.instance if key not in allowed)
        if unexpected:
            return f"field '{_path(path + [unexpected[0]])}': not part of the format"
    if error.validator in ("oneOf", "anyOf") and error.context:
        # Every alternative was rejected by its type: say which types fit.
        types = [e.validator_value for e in error.context if e.validator == "type" and not e.relative_path]
        if len(types) == len(error.context):
            expected = " or ".join(t if isinstance(t, str) else "/".join(t) for t in types)
            return f"field '{_path(path)}': expected {expected}, got {_short(error.instance)}"
    return f"field '{_path(path)}': {_shorten(error.message)}"


def _short(value: Any) -> str:
    return _shorten(json.dumps(value), 60)


def _shorten(text: str, limit: int = 200) -> str:
    """Messages quote the offending value; a whole sample list is too much."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_RELATIVE_TOLERANCE, abs_tol=_ABSOLUTE_TOLERANCE)


def _semantic_problems(record: Mapping[str, Any]) -> tuple[list[str], dict[str, Any] | None]:
    """Rules between fields (the record is already structurally valid), and
    the summary of its samples when it has some and agrees with them."""
    problems: list[str] = []
    status = record["status"]
    samples = record["samples"]
    summary = record["summary"]
    if status in ("unsupported", "failed"):
        if not (record["reason"] or "").strip():
            problems.append(f"field 'reason': a {status} record must say why (got {record['reason']!r})")
        if samples:
            problems.append(f"field 'samples': a {status} record carries no samples")
        return problems, None
    # status == "ok"
    if summary is None:
        problems.append("field 'summary': an ok record needs a summary")
    if record["stop"] is None:
        problems.append("field 'stop': an ok record needs its stopping rule")
    if not samples:
        if record["derived"] is None:
            problems.append("field 'samples': an ok record needs samples, or a 'derived' formula")
        return problems, None
    if record["iterations"] is None:
        problems.append("field 'iterations': a measured record says how many iterations each timing ran")
    if summary is None:
        return problems, None
    if summary["n"] != len(samples):
        problems.append(f"field 'summary.n': {summary['n']} but there are {len(samples)} samples")
        return problems, None
    computed = stats.summarize(samples)
    # The location of the samples must agree; their spread (sd, se and the
    # relative ones) is the front end's alone: from samples printed with 10
    # digits, a spread far below the mean cannot be recomputed to the
    # producer's digits.
    for key in ("mean", "median", "min", "max"):
        if not _close(float(summary[key]), getattr(computed, key)):
            problems.append(
                f"field 'summary.{key}': {summary[key]} but the samples give {getattr(computed, key):.10g}"
            )
    return problems, (computed.as_dict() if not problems else None)


def record_problems(record: Any) -> list[str]:
    """Every problem of a record (empty when it is valid), most relevant first."""
    return _check(record)[0]


def _check(record: Any) -> tuple[list[str], dict[str, Any] | None]:
    """The record's problems, and the front end's summary of its samples
    when it is valid and has some."""
    if isinstance(record, dict) and isinstance(record.get("schema"), str) and record["schema"] != RECORD_SCHEMA_ID:
        # A version this reader does not know: say so rather than list the
        # differences of an unknown format.
        return [f"field 'schema': record format {record['schema']!r} is not one this threadlab reads "
                f"({RECORD_SCHEMA_ID})"], None
    errors = list(_validator().iter_errors(record))
    if errors:
        # best_match of a single error descends into oneOf alternatives, so
        # "summary.n is not an integer" is reported rather than "summary is
        # not valid under any of the given schemas".
        from jsonschema.exceptions import best_match

        best = best_match(errors)
        rest = [error for error in errors if error is not best]
        rest.sort(key=lambda error: list(map(str, error.absolute_path)))
        messages = [_describe(best_match([error])) for error in [best] + rest]
        return list(dict.fromkeys(messages)), None
    return _semantic_problems(record)


def validate_record(record: Any) -> dict[str, Any]:
    """The record accepted: itself with the front end's summary of its
    samples (computed once, here, by the validation); RecordError naming
    the first problems otherwise."""
    problems, computed = _check(record)
    if problems:
        more = f" (and {len(problems) - 2} more)" if len(problems) > 2 else ""
        raise RecordError("; ".join(problems[:2]) + more)
    return {**record, "summary": computed} if computed is not None else record


def parse_record_line(line: str) -> dict[str, Any]:
    """A record from one line of JSON Lines, validated."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise RecordError(f"not JSON: {error.msg} at column {error.colno}") from None
    return validate_record(record)
