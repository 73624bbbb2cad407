"""`threadlab import` and `threadlab export`: runs in and out of the store
(docs/commands/import.md, docs/commands/export.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from threadlab.cli.options import EXIT_OK, PROG, ArgumentParser, choice, db_path
from threadlab.output.files import write_output
from threadlab.output.sanitize import printable
from threadlab.records import transfer
from threadlab.records.store import Store


def register_import(commands: Any, common: ArgumentParser) -> None:
    imp = commands.add_parser(
        "import", parents=[common], help="import a run exported elsewhere (or bare records)",
        description="Import a run written by `threadlab export --format json` (a run header, then its records), "
        "or bare records as `bench --json` writes them (the run's metadata is then synthesized). Every line is "
        "validated first; a bad file is refused with its line number and nothing is written.",
    )
    imp.set_defaults(handler=cmd_import)
    imp.add_argument("file", metavar="FILE", help="JSON Lines file, or - for standard input")
    imp.add_argument("--name", metavar="NAME", help="name the imported run (default: its exported name, if free)")
    imp.add_argument("--host", metavar="HOST", help="the machine's name (for bare records, which do not say)")


def cmd_import(args: argparse.Namespace) -> int:
    plan = transfer.read_source(args.file, host=args.host)
    with Store(db_path(args)) as store:
        run = transfer.import_file(store, plan, args.name)
    if plan.synthesized:
        print(
            f"{PROG}: {printable(plan.source)} has no run header (bare records, as `bench --json` writes): run "
            f"metadata synthesized (host {printable(run.hostname)}, environment unknown)",
            file=sys.stderr,
        )
    print(f"imported {len(plan.records)} records from {printable(plan.source)} as {printable(run.label)} "
          f"(machine {printable(run.hostname)})")
    return EXIT_OK


def register_export(commands: Any, common: ArgumentParser) -> None:
    exp = commands.add_parser(
        "export", parents=[common], help="write a run as JSON Lines, CSV or Markdown",
        description="Write one run: json (a threadlab.run/1 header with the environment, then every record; "
        "`threadlab import` reads it), csv (one row of statistics per record) or md (a Markdown report).",
    )
    exp.set_defaults(handler=cmd_export)
    exp.add_argument("run", nargs="?", default="latest", metavar="RUN", help="a run number, name, or latest (default)")
    exp.add_argument("--format", type=choice("--format", transfer.EXPORT_FORMATS), default="json", metavar="FORMAT",
                     help="json, csv or md (default json)")
    exp.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")


def cmd_export(args: argparse.Namespace) -> int:
    store_path = db_path(args)
    with Store(store_path, readonly=True) as store:
        run = store.resolve_run(args.run)
        records, points = store.records_with_points(run.id)
    text = transfer.export_text(args.format, run, records, points)
    target = args.output or "-"
    write_output(target, text, "standard output" if target == "-" else f"-o {target}", store_path)
    if target != "-":
        print(f"{PROG}: wrote {printable(run.label)} ({len(records)} records) to {printable(target)}", file=sys.stderr)
    return EXIT_OK
