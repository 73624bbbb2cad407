"""`threadlab crosscheck`: figures of a suite against naive, independent
measurements (docs/commands/crosscheck.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from threadlab.cli.options import EXIT_OK, PROG, ArgumentParser, choice, number
from threadlab.errors import UserError
from threadlab.native import launcher
from threadlab.run import crosscheck


def register(commands: Any, common: ArgumentParser) -> None:
    check = commands.add_parser(
        "crosscheck", parents=[common],
        help="check three figures of the suite against naive, independent measurements",
        description="Measure, in one run and in alternating rounds, the same-CPU yield switch, the uncontended "
        "mutex lock+unlock and pthread create+join with the suite and with threadlab-crosscheck, a naive "
        "program that shares no code with the timing core; print each side's median and their ratio.",
    )
    check.set_defaults(handler=cmd_crosscheck)
    check.add_argument("--rounds", type=number("--rounds", int, 1, 100), default=3, metavar="N",
                       help="alternating rounds of both sides, 1..100 (default 3)")
    check.add_argument("--json", action="store_true", help="print the results as one JSON object per figure")
    check.add_argument("--suite", type=choice("--suite", crosscheck.CROSS_SUITES), default="primitives",
                       metavar="SUITE", help="primitives (three figures), mpi (the ping-pong latency) or omp "
                       "(parallel region and barrier) (default primitives)")
    check.add_argument("--launcher", type=launcher.parse, metavar="CMD",
                       help="mpi: the launcher of both sides (default: the build's MPI launcher with 2 ranks)")


def cmd_crosscheck(args: argparse.Namespace) -> int:
    progress = (lambda text: print(f"{PROG}: {text}", file=sys.stderr)) if not args.json else (lambda text: None)
    if args.launcher and args.suite != "mpi":
        raise UserError("--launcher applies to crosscheck --suite mpi only")
    results = crosscheck.run(args.rounds, progress, args.suite, args.launcher)
    if args.json:
        for result in results:
            print(json.dumps(result.as_dict()))
    else:
        print(crosscheck.format_table(results, args.suite))
    return EXIT_OK
