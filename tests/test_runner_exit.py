"""A program whose output ends before it does (it closes its streams on the
way out, as GNU timeout does, and so a launcher wrapped in it) is judged by
its exit, not killed in between and recorded as a crash."""

from __future__ import annotations

import sys
from pathlib import Path

from threadlab.native import protocol as native
from threadlab.native.protocol import BenchmarkInfo
from threadlab.native.process import StopRequest
from threadlab.run.runner import Point, run_point

PROGRAM = """
import json, os, sys, time
from threadlab.records.record import new_record
record = new_record("x.closes", "pthread", metric="time", params={}, placement="none", cpus=[], unit="ns",
                    quantity="time per x", status="unsupported", reason="not here")
sys.stdout.write(json.dumps(record) + "\\n")
sys.stdout.flush()
os.close(1)
os.close(2)
time.sleep(0.5)
sys.exit(STATUS)
"""


def _run(tmp_path: Path, status: int) -> list[dict]:
    program = tmp_path / "closes-early"
    program.write_text(f"#!{sys.executable}\n" + PROGRAM.replace("STATUS", str(status)))
    program.chmod(0o755)
    info = BenchmarkInfo("x.closes", "pthread", "", "time per x", "ns", 0, (), (), (), program.name)
    point = Point(0, info, program, None, {})
    return list(run_point(point, native.PointOptions(), 30.0, StopRequest()))


def test_the_exit_after_the_output_decides(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1] / "python"))
    records = _run(tmp_path, 0)
    assert [r["status"] for r in records] == ["unsupported"]
    records = _run(tmp_path, 3)
    assert [r["status"] for r in records] == ["unsupported", "failed"]
    assert records[1]["reason"].startswith("exited with status 3")
