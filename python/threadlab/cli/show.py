"""`threadlab show`: one stored run, its environment and its results
(docs/commands/show.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from threadlab.cli.options import EXIT_OK, ArgumentParser, db_path
from threadlab.records.store import Store


def register(commands: Any, common: ArgumentParser) -> None:
    show = commands.add_parser(
        "show", parents=[common], help="show a stored run: environment, warnings, results table",
        description="Show one run: its environment and warnings, then the results table.",
    )
    show.set_defaults(handler=cmd_show)
    show.add_argument("run", nargs="?", default="latest", metavar="RUN",
                      help="a run number, a run name, or latest/last (default latest)")
    show.add_argument("--json", action="store_true", help="print the run's records as JSON Lines instead")


def cmd_show(args: argparse.Namespace) -> int:
    from threadlab.output.listing import render_run_header
    from threadlab.output.table import make_console, render_results
    from threadlab.study.registry import study_of_run

    with Store(db_path(args), readonly=True) as store:
        run = store.resolve_run(args.run)
        records = store.records(run.id)
    if args.json:
        for record in records:
            print(json.dumps(record, separators=(",", ":")))
        return EXIT_OK
    console = make_console()
    render_run_header(console, run, str(store.path))
    console.print()
    study = study_of_run(run.options)
    if study is not None:  # a study's own tables
        study.render(console, records, title=f"Study of {run.label}")
        return EXIT_OK
    render_results(console, records, run.catalog, title=f"Results of {run.label}")
    return EXIT_OK
