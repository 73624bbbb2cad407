"""Record validation: the format file, real records, and each kind of corruption."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest
from jsonschema import Draft202012Validator

from conftest import load_real_record, make_record
from threadlab.analysis import stats
from threadlab.records import schema
from threadlab.native.protocol import BenchmarkInfo
from threadlab.run.runner import Point, failed_record


def test_schema_file_is_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(schema.record_schema())
    assert schema.record_schema()["$id"] == schema.RECORD_SCHEMA_ID


def test_real_record_passes() -> None:
    record = load_real_record()
    assert schema.record_problems(record) == []
    accepted = schema.validate_record(record)
    # The producer's summary (10 digits) is replaced by the front end's.
    assert {k: v for k, v in accepted.items() if k != "summary"} == {k: v for k, v in record.items() if k != "summary"}
    assert accepted["summary"] == stats.summarize(record["samples"]).as_dict()
    assert accepted["summary"]["sd"] != record["summary"]["sd"]  # full precision, not the producer's digits


def test_record_line_parses() -> None:
    line = json.dumps(load_real_record())
    assert schema.parse_record_line(line)["benchmark"] == "pthread.empty"


def test_synthesized_failed_record_is_valid() -> None:
    info = BenchmarkInfo("x.y", "pthread", "", "time per y", "ns", 2, ("unbound",), ("unbound",), ())
    point = Point(0, info, Path("/bin/false"), "unbound", {"n": "2"})
    record = failed_record(point, "timed out after 3 s", stderr="x" * 2000, exit_status=None)
    assert schema.record_problems(record) == []
    assert len(record["extra"]["stderr"]) <= 500


def _without(field: str) -> Callable[[dict[str, Any]], None]:
    return lambda record: record.pop(field)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(record: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = record
        for part in parents:
            target = target[part]
        target[last] = value

    return change


_N = len(load_real_record()["samples"])
CORRUPTIONS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("missing field", _without("unit"), "field 'unit': missing"),
    ("missing summary field", lambda r: r["summary"].pop("median"), "field 'summary.median': missing"),
    ("wrong type", _set("iterations", "many"), "field 'iterations'"),
    ("wrong nested type", _set("summary.n", "ten"), "field 'summary.n'"),
    ("sample not a number", lambda r: r["samples"].__setitem__(0, "fast"), "field 'samples[0]'"),
    ("bad status", _set("status", "great"), "field 'status': 'great' is not one of"),
    ("bad placement", _set("placement", "nearby"), "field 'placement'"),
    ("unknown schema version", _set("schema", "threadlab.record/2"), "field 'schema': record format 'threadlab.record/2' is not one this threadlab reads"),
    ("schema version missing", _without("schema"), "field 'schema': missing"),
    ("unknown field", _set("colour", "blue"), "field 'colour': not part of the format"),
    ("summary of wrong type", _set("summary", 3), "field 'summary': expected null or object"),
    ("n mismatch", lambda r: r["summary"].update(n=_N + 1), f"field 'summary.n': {_N + 1} but there are {_N} samples"),
    ("mean mismatch", _set("summary.mean", 1000.0), "field 'summary.mean': 1000.0 but the samples give"),
    ("ok without summary", _set("summary", None), "field 'summary': an ok record needs a summary"),
    ("ok without samples", _set("samples", []), "field 'samples': an ok record needs samples"),
    ("failed without reason", lambda r: r.update(status="failed", samples=[], summary=None), "field 'reason': a failed record must say why"),
    ("unsupported with blank reason", lambda r: r.update(status="unsupported", reason=" ", samples=[], summary=None), "field 'reason'"),
]


@pytest.mark.parametrize("change,expected", [(c[1], c[2]) for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS])
def test_corruption_is_refused_naming_the_field(change: Callable[[dict[str, Any]], None], expected: str) -> None:
    record = make_record()
    change(record)
    problems = schema.record_problems(record)
    assert problems, "a corrupted record passed validation"
    assert expected in problems[0]
    with pytest.raises(schema.RecordError, match="field '"):
        schema.validate_record(record)


def test_not_json_is_refused() -> None:
    with pytest.raises(schema.RecordError, match="not JSON"):
        schema.parse_record_line('{"schema": "threadlab.record/1", ')


def test_not_an_object_is_refused() -> None:
    with pytest.raises(schema.RecordError, match="is not of type 'object'"):
        schema.parse_record_line("[1, 2]")
