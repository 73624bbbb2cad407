"""A stored run from its first line to its last: the one life cycle of
`threadlab bench` and of every study (docs/store.md, docs/architecture.md).

    create    the run's row, with its environment, status 'running'
    progress  a first line saying what it will do and where it is stored,
              the environment's warnings, then the caller's progress
    keep      every record committed as it arrives (and written to --json
              FILE when asked), so an interrupted run keeps what it measured
    finish    the final status (complete, interrupted, failed) and why it
              stopped before its plan, whatever happened
    epilogue  one line on stderr, and the exit status

A command gives what is its own (the options and catalog to store, how to
collect the environment, the loop that measures) and gets the run back
finished; the records it printed are the loop's result.
"""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from threadlab import __version__
from threadlab.errors import ThreadlabError
from threadlab.native.process import signal_name
from threadlab.output.files import RecordsOutput
from threadlab.output.units import format_duration
from threadlab.records.record import RECORD_SCHEMA_ID
from threadlab.records.store import Store
from threadlab.run import environment

EXIT_OK, EXIT_FAILED = 0, 1


class Indexed(Protocol):
    """What a record is kept for: a sweep's point, a study's cell."""

    index: int


class Result(Protocol):
    """What the measuring loop returns (run.runner.Result)."""

    records: list[dict[str, Any]]
    interrupted_by: int | None
    done: int


Keep = Callable[[Indexed, dict[str, Any]], None]


class Messages(Protocol):
    """The caller's progress: lines above it, and closing it."""

    def message(self, text: str) -> None: ...

    def close(self) -> None: ...


@dataclass
class RunSpec:
    """What a command stores about its run, settled before anything runs."""

    name: str | None
    command: Sequence[str]
    options: dict[str, Any]
    catalog: list[dict[str, Any]]
    planned: int  # the points (cells) it plans to store records for
    header: str  # what it will do, for the first line
    environment: Callable[[], dict[str, Any]]  # collected once the run's name is known to be free
    records_to: str | None = None  # --json FILE: every record also written there as it is kept
    unit: str = "points"  # what `planned` counts, in messages


@dataclass
class Finished:
    run_id: int
    label: str
    status: str  # complete, interrupted, failed
    result: Any  # the loop's Result
    elapsed_s: float


def stored_run(db_path: Path, spec: RunSpec, progress: Messages, measure: Callable[[Keep], Result]) -> Finished:
    """Creates the run, measures with measure(keep), keeps every record as
    it comes, and finishes the run whatever happens (complete, interrupted
    or failed with the reason); the store is left consistent on Ctrl-C and
    on any error, which propagates."""
    with Store(db_path) as store:
        store.require_free_name(spec.name)  # before --json creates anything
        output = RecordsOutput(spec.records_to, db_path)
        try:
            env = spec.environment()
            run_id = store.create_run(
                name=spec.name, command=list(spec.command), options=spec.options, catalog=spec.catalog,
                environment=env, points_planned=spec.planned, record_schema=RECORD_SCHEMA_ID,
                threadlab_version=__version__,
            )
        except BaseException:
            output.close(keep=False)
            raise
        label = f"run {run_id}" + (f" ({spec.name})" if spec.name else "")
        progress.message(f"threadlab: {label}: {spec.header}; store {db_path}")
        for warning in env["warnings"]:
            progress.message(f"threadlab: warning: {warning}")

        stored: set[int] = set()

        def keep(item: Indexed, record: dict[str, Any]) -> None:
            store.add_record(run_id, item.index, record)
            stored.add(item.index)
            output.write(record)

        started = time.monotonic()
        status, stop_reason = "failed", "threadlab itself failed"  # unless measure returns
        output_ok = True
        try:
            result = measure(keep)
            status = "interrupted" if result.interrupted_by else "complete"
            stop_reason = f"interrupted by {signal_name(result.interrupted_by)}" if result.interrupted_by else None
        except KeyboardInterrupt:  # a second Ctrl-C
            status, stop_reason = "interrupted", "interrupted by a second Ctrl-C"
            raise
        except ThreadlabError as error:  # the --json output (a closed pipe, a full disk), the store
            output_ok = False
            where = f"stopped after {len(stored)} of {spec.planned} {spec.unit}"
            stop_reason = f"{where}: {error}"
            error.args = (f"{error}; {label} {where}, stored as failed with what it measured "
                          f"(threadlab show {run_id})",)
            raise
        finally:
            progress.close()
            try:
                output.close(keep=output_ok)
            finally:
                store.finish_run(run_id, status, environment.finish(env), stop_reason)
    return Finished(run_id, label, status, result, time.monotonic() - started)


def epilogue(finished: Finished, *, quiet: bool, summary: str, done: str, kept: str, failed: bool) -> int:
    """The run's last line on stderr and the command's exit status: 128 +
    the signal when interrupted (`done`: how far it got; `kept`: what is
    stored), else EXIT_FAILED when `failed`, else EXIT_OK."""
    if finished.status == "interrupted":
        print(f"threadlab: {finished.label} interrupted after {done} ({summary}); {kept}", file=sys.stderr)
        return 128 + int(finished.result.interrupted_by or signal.SIGINT)
    if not quiet:
        print(f"threadlab: {finished.label} complete in {format_duration(finished.elapsed_s)}: {summary}",
              file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK
