"""`threadlab runs` (and runs delete, runs rename): the stored runs
(docs/commands/runs.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from threadlab.cli.options import EXIT_OK, ArgumentParser, db_path, number
from threadlab.errors import UserError
from threadlab.output.sanitize import printable
from threadlab.records.store import NoStore, Store, validate_run_name

DEFAULT_RUNS_LIMIT = 20


def register(commands: Any, common: ArgumentParser) -> None:
    runs = commands.add_parser(
        "runs", parents=[common], help="list the stored runs",
        description="List stored runs, newest first. A run whose process died without finishing is "
        "shown as incomplete.",
    )
    runs.set_defaults(handler=cmd_runs)
    runs.add_argument(
        "--limit", type=number("--limit", int, 0, 10**9), default=DEFAULT_RUNS_LIMIT, metavar="N",
        help=f"show the newest N runs, 0 = all (default {DEFAULT_RUNS_LIMIT})",
    )
    runs.add_argument("--json", action="store_true", help="one JSON object per run instead of a table")
    actions = runs.add_subparsers(dest="runs_action", metavar="ACTION", parser_class=ArgumentParser)
    delete = actions.add_parser(
        "delete", parents=[common], help="delete runs and their records",
        description="Delete runs and all their records, in one transaction. A run whose process is still "
        "measuring is refused unless --force. Export a run first (threadlab export) to keep a copy.",
    )
    delete.set_defaults(handler=cmd_runs_delete)
    delete.add_argument("runs", nargs="+", metavar="RUN", help="run numbers, names, or latest")
    delete.add_argument("--force", action="store_true", help="also delete a run that is still running")
    rename = actions.add_parser(
        "rename", parents=[common], help="name or rename a run",
        description="Give a run a new name, usable wherever a RUN is asked; --clear removes its name.",
    )
    rename.set_defaults(handler=cmd_runs_rename)
    rename.add_argument("run", metavar="RUN", help="a run number, name, or latest")
    rename.add_argument("name", nargs="?", metavar="NAME", help="the new name (1-100 characters, not a number, "
                        "not latest/last, unique)")
    rename.add_argument("--clear", action="store_true", help="remove the run's name instead")


def cmd_runs(args: argparse.Namespace) -> int:
    try:
        store = Store(db_path(args), readonly=True)
    except NoStore as missing:
        print(f"No runs yet (no store at {missing.path}).")
        return EXIT_OK
    with store:
        runs = store.runs(limit=args.limit or None)
    if args.json:
        for run in runs:
            print(json.dumps({
                "id": run.id, "name": run.name, "status": run.display_status, "stored_status": run.status,
                "started_at": run.started_at, "finished_at": run.finished_at, "hostname": run.hostname,
                "machine_id": run.machine_id, "points_planned": run.points_planned, "records": run.counts,
                "command": run.command, "stop_reason": run.stop_reason,
            }))
        return EXIT_OK
    if not runs:
        print(f"No runs yet in {store.path}.")
        return EXIT_OK
    from threadlab.output.listing import render_runs
    from threadlab.output.table import make_console

    render_runs(make_console(), runs)
    return EXIT_OK


def cmd_runs_delete(args: argparse.Namespace) -> int:
    with Store(db_path(args), create=False) as store:
        runs = {run.id: run for run in (store.resolve_run(ref) for ref in args.runs)}
        alive = [run for run in runs.values() if run.display_status == "running"]
        if alive and not args.force:
            raise UserError(
                f"{printable(alive[0].label)} is still running (process {alive[0].pid}); stop it first, or pass --force"
            )
        deleted = store.delete_runs(list(runs))
    for run_id, count in deleted.items():
        print(f"deleted {printable(runs[run_id].label)}: {count} record{'s' if count != 1 else ''}")
    return EXIT_OK


def cmd_runs_rename(args: argparse.Namespace) -> int:
    if args.clear == (args.name is not None):
        raise UserError("runs rename RUN NAME, or runs rename RUN --clear (one of the two)")
    with Store(db_path(args), create=False) as store:
        run = store.resolve_run(args.run)
        name = None if args.clear else validate_run_name(args.name)
        store.rename_run(run.id, name)
    was = f" (was {printable(run.name)})" if run.name else ""
    print(f"run {run.id} is now named {name}{was}" if name else f"run {run.id} has no name now{was}")
    return EXIT_OK
