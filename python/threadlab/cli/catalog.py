"""`threadlab list`: the benchmarks of the native programs (docs/commands/list.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from threadlab.cli.options import EXIT_OK, ArgumentParser, selected_benchmarks, split_patterns, suite_list
from threadlab import vocabulary


def register(commands: Any, common: ArgumentParser) -> None:
    listing = commands.add_parser(
        "list", parents=[common], help="list the benchmarks, their parameters and placements",
        description="List every benchmark of the native programs (build/bin/threadlab-bench-*, or "
        "$THREADLAB_NATIVE_DIR).",
    )
    listing.set_defaults(handler=cmd_list)
    listing.add_argument("--filter", action="append", metavar="GLOB", help="as for bench (default: all)")
    listing.add_argument("--suite", type=suite_list, metavar="LIST",
                         help=f"only these suites, comma-separated from {', '.join(vocabulary.SUITES)} (default: all)")
    listing.add_argument("--json", action="store_true", help="one JSON object per benchmark instead of a table")


def cmd_list(args: argparse.Namespace) -> int:
    _, selected = selected_benchmarks(split_patterns(args.filter), args.suite)
    if args.json:
        for info in selected:
            print(json.dumps(info.as_dict()))
        return EXIT_OK
    from threadlab.output.listing import render_catalog
    from threadlab.output.table import make_console

    render_catalog(make_console(), selected)
    return EXIT_OK
