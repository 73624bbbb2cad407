"""`threadlab report`: a self-contained HTML page of runs (docs/commands/report.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from threadlab.analysis import stats
from threadlab.cli.options import EXIT_OK, ArgumentParser, choice, db_path, number
from threadlab.errors import UserError
from threadlab.output.sanitize import printable
from threadlab.records.store import Store


def register(commands: Any, common: ArgumentParser) -> None:
    rep = commands.add_parser(
        "report", parents=[common], help="write a self-contained HTML report with figures",
        description="Write DIR/index.html, a self-contained page (inline SVG figures, no network needed): the "
        "machine and its warnings, an overview of every result, the omp suite's constructs by runtime, "
        "comparisons of the runs, each benchmark family as a table and as bars with 95%% CI, ECDFs, study speedups, "
        "the environment; and each figure as a PNG in DIR/figures/.",
    )
    rep.set_defaults(handler=cmd_report)
    rep.add_argument("runs", nargs="*", metavar="RUN", help="runs to report, the first as the baseline (default latest)")
    rep.add_argument("-o", "--output", metavar="DIR", default="threadlab-report",
                     help="directory to write (default ./threadlab-report); an existing one must be empty or a "
                     "previous report")
    rep.add_argument("--alpha", type=number("--alpha", float, 0.0001, 0.5, "the significance level"), default=0.05,
                     metavar="A", help="significance level of the comparisons (default 0.05)")
    rep.add_argument("--test", type=choice("--test", stats.TESTS), default="welch", metavar="TEST",
                     help="the test that decides the comparisons' verdicts (default welch)")


def cmd_report(args: argparse.Namespace) -> int:
    from threadlab import report  # matplotlib: only this command pays for it

    refs = args.runs or ["latest"]
    store_path = db_path(args)
    with Store(store_path, readonly=True) as store:
        runs = [store.resolve_run(ref) for ref in refs]
        if len({run.id for run in runs}) != len(runs):
            raise UserError("a run is given twice")
        loaded = [(run, store.records(run.id)) for run in runs]
    out_dir = Path(args.output).expanduser()
    result = report.write_report(loaded, out_dir, alpha=args.alpha, test=args.test, store=store_path)
    print(f"Report: {printable(result.index.resolve())} ({len(result.figures)} figures; PNG files in "
          f"{printable((result.index.parent / report.FIGURES_DIR).resolve())})")
    return EXIT_OK
