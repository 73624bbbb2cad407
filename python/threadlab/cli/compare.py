"""`threadlab compare`: runs, machines, or variants within a run, side by
side with their statistics; the regression gate (docs/commands/compare.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from threadlab.analysis import compare, stats
from threadlab.cli.options import EXIT_FAILED, EXIT_OK, PROG, ArgumentParser, choice, db_path, number, \
    select_records, split_patterns
from threadlab.errors import UserError
from threadlab.output.sanitize import printable
from threadlab.output.table import make_console
from threadlab.records.store import Store


def register(commands: Any, common: ArgumentParser) -> None:
    comp = commands.add_parser(
        "compare", parents=[common], help="compare runs, machines, or variants within a run",
        description="Compare the matched points of two or more runs (each against the first), or, with "
        "--between, variants within one run. Each point: the medians, their ratio B/A with its interval, "
        "Welch's and Mann-Whitney's p-values and a verdict; a geometric-mean row sums up. --by machine "
        "puts machines side by side as columns.",
        epilog="exit status: 0 compared (no regression beyond --fail-above), 1 a regression beyond "
        "--fail-above or the store failed, 2 bad usage. Example: threadlab compare latest "
        "--between placement=same-cpu,different-cpus",
    )
    comp.set_defaults(handler=cmd_compare)
    comp.add_argument("runs", nargs="+", metavar="RUN", help="run numbers, names, or latest; the first is the baseline A")
    comp.add_argument(
        "--between", metavar="DIM=V1,V2", help="compare variants within ONE run: DIM is placement, model, or a "
        "parameter's name; V1 is the baseline (e.g. placement=same-cpu,different-cpus)",
    )
    comp.add_argument("--by", type=choice("--by", ("run", "machine")), metavar="run|machine",
                      help="one column per run or per machine (medians and ratios to the first column) instead of pairs")
    comp.add_argument("--filter", action="append", metavar="GLOB", help="only these benchmarks (as for bench)")
    comp.add_argument("--alpha", type=number("--alpha", float, 0.0001, 0.5, "the significance level"), default=0.05,
                      metavar="A", help="significance level of the tests; intervals are 1-A (default 0.05)")
    comp.add_argument("--test", type=choice("--test", stats.TESTS), default="welch", metavar="TEST",
                      help="the test that decides the verdict: welch (Welch's t-test, as in the papers this tool reproduces) or mann-whitney (default welch; "
                      "both p-values are shown)")
    comp.add_argument("--adjust", type=choice("--adjust", stats.ADJUSTMENTS), default="none", metavar="METHOD",
                      help="adjust p-values for many comparisons: none, holm or bh (default none)")
    comp.add_argument(
        "--fail-above", type=number("--fail-above", float, 0, 100000, "a percentage, e.g. 5"), metavar="PCT",
        help="exit 1 when a point is significantly slower in B by more than PCT percent (a regression gate)",
    )
    comp.add_argument("--format", type=choice("--format", compare.FORMATS), default="table", metavar="FORMAT",
                      help="table, json (JSON Lines), csv or md (default table)")
    comp.add_argument("--json", action="store_true", help="same as --format json")


def _machine_sides(runs: Sequence[Any], records: dict[int, list[dict[str, Any]]]) -> list[compare.Side]:
    """--by machine: one side per machine; a later run's point replaces an
    earlier run's point of the same machine."""
    from threadlab.analysis.points import record_key

    grouped: dict[str, list[Any]] = {}
    for run in runs:
        grouped.setdefault(run.machine_id, []).append(run)
    hostnames = [group[0].hostname for group in grouped.values()]
    sides = []
    for machine, group in grouped.items():
        merged: dict[Any, dict[str, Any]] = {}
        for run in group:
            for record in records[run.id]:
                merged[record_key(record)] = record
        first = group[-1]
        cpu = (first.environment.get("cpu") or {}).get("model") or "CPU unknown"
        header = first.hostname if hostnames.count(first.hostname) == 1 else f"{first.hostname}#{machine[:6]}"
        label = f"{header}: {cpu} — " + ", ".join(run.label for run in group)
        sides.append(compare.Side(label, header, list(merged.values()), machine))
    return sides


def cmd_compare(args: argparse.Namespace) -> int:
    fmt = "json" if args.json else args.format
    patterns = split_patterns(args.filter)
    if args.between and len(args.runs) != 1:
        raise UserError("--between compares variants within ONE run: give exactly one RUN")
    if not args.between and len(args.runs) < 2:
        raise UserError(
            "compare needs two runs (threadlab compare A B), or one run and --between, e.g. "
            f"threadlab compare {args.runs[0]} --between placement=same-cpu,different-cpus"
        )
    if args.by and args.between:
        raise UserError("--by and --between do not go together: --by lays out runs or machines as columns")
    if args.by and args.fail_above is not None:
        raise UserError("--fail-above gates pairwise comparisons: drop --by")
    if args.by and fmt in ("csv",):
        raise UserError("--by prints a table, json or md; csv is for pairwise comparisons")
    with Store(db_path(args), readonly=True) as store:
        runs = [store.resolve_run(ref) for ref in args.runs]
        seen: set[int] = set()
        for run in runs:
            if run.id in seen:
                raise UserError(f"{printable(run.label)} is given twice")
            seen.add(run.id)
        records = {run.id: select_records(store.records(run.id), patterns) for run in runs}
    for run in runs:
        if not records[run.id]:
            what = "the --filter selects none of its records" if patterns else "it has no records"
            raise UserError(f"{printable(run.label)}: nothing to compare ({what})")
    if args.by:
        if args.by == "machine":
            sides = _machine_sides(runs, records)
            if len(sides) < 2:
                raise UserError(f"--by machine: all these runs are from one machine ({printable(runs[0].hostname)}); "
                                "use --by run, or compare without --by")
        else:
            sides = [compare.Side(f"{run.label} on {run.hostname}", f"run {run.id}", records[run.id]) for run in runs]
        matrix = compare.build_matrix(sides, args.alpha, args.test)
        if fmt == "json":
            for row in matrix.rows:
                print(json.dumps({"label": row.label, "placement": row.placement,
                                  "columns": [side.label for side in sides], "cells": row.cells,
                                  "comparisons": [c.as_dict() if c else None for c in row.comparisons]}))
        elif fmt == "md":
            sys.stdout.write(compare.matrix_markdown(matrix))
        else:
            compare.render_matrix(make_console(), matrix, "machine" if args.by == "machine" else "run")
        return EXIT_OK
    pairs: list[compare.PairComparison] = []
    if args.between:
        run = runs[0]
        dimension, variants = compare.split_variants(records[run.id], args.between)
        base_value, base_records = variants[0]
        base = compare.Side(f"{compare.variant_header(dimension, base_value)} in {run.label}",
                            compare.variant_header(dimension, base_value), base_records)
        for value, value_records in variants[1:]:
            other = compare.Side(f"{compare.variant_header(dimension, value)} in {run.label}",
                                 compare.variant_header(dimension, value), value_records)
            pairs.append(compare.compare_sides(base, other, args.alpha, args.test, args.adjust, dimension))
    else:
        base_run = runs[0]
        base = compare.Side(f"{base_run.label} on {base_run.hostname}", f"run {base_run.id}", records[base_run.id])
        for run in runs[1:]:
            other = compare.Side(f"{run.label} on {run.hostname}", f"run {run.id}", records[run.id])
            pairs.append(compare.compare_sides(base, other, args.alpha, args.test, args.adjust))
    if fmt == "json":
        for pair in pairs:
            for line in compare.pair_json_lines(pair):
                print(line)
    elif fmt == "csv":
        sys.stdout.write(compare.pair_csv(pairs))
    elif fmt == "md":
        print("\n".join(compare.pair_markdown(pair) for pair in pairs), end="")
    else:
        console = make_console()
        for index, pair in enumerate(pairs):
            if index:
                console.print()
            compare.render_pair(console, pair)
        console.file.flush()
    return _regression_gate(pairs, args.fail_above)


def _regression_gate(pairs: Sequence[compare.PairComparison], percent: float | None) -> int:
    """--fail-above: exit 1 on a regression, and whenever the comparison
    cannot vouch for B (docs/commands/compare.md, "The regression gate")."""
    if percent is None:
        return EXIT_OK
    gate = compare.regression_gate(pairs, percent)
    for pair, point in gate.regressions:
        where = f" {point.placement}" if point.placement else ""
        print(printable(
            f"{PROG}: regression: {point.label}{where}: B/A = {compare.format_ratio(point.ratio)} "
            f"({compare.change_text(point.slowdown or 1.0)}; the limit is {percent:g}% slower), "
            f"p = {compare.format_p(point.p_adjusted)}; A: {pair.a.label}, B: {pair.b.label}"),
            file=sys.stderr,
        )
    for problem in gate.undecided:
        print(printable(f"{PROG}: the gate cannot pass: {problem}"), file=sys.stderr)
    if gate.regressions or gate.undecided:
        found = len(gate.regressions)
        why = [f"{found} regression{'s' if found != 1 else ''} beyond {percent:g}%"] if found else []
        why += [f"{len(gate.undecided)} reason{'s' if len(gate.undecided) != 1 else ''} it cannot decide"] \
            if gate.undecided else []
        print(f"{PROG}: the regression gate fails: {', '.join(why)}", file=sys.stderr)
        return EXIT_FAILED
    print(f"{PROG}: no point significantly slower by more than {percent:g}% ({gate.decided} points tested)",
          file=sys.stderr)
    return EXIT_OK
