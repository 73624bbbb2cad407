"""What every command of the command line shares: the parser class that
turns a mistake into one line, the option types that refuse a bad value
naming what is accepted, the store option, the selection of benchmarks,
the exit statuses.

Command modules import this module, never the package root
(threadlab.cli), which imports them.
"""

from __future__ import annotations

import argparse
import fnmatch
import math
from pathlib import Path
from typing import Any, Callable, Sequence

from threadlab import vocabulary
from threadlab.errors import ThreadlabError, UserError
from threadlab.native import discovery
from threadlab.native.protocol import BenchmarkInfo
from threadlab.records.store import default_db_path, user_data_db_path

PROG = "threadlab"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports through UserError: one line, exit status 2."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise UserError(f"{message} (see `{self.prog} --help`)")


def common_parser() -> ArgumentParser:
    """The options every command that reads or writes the store takes."""
    common = ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help=f"the SQLite store (default: $THREADLAB_DB, else {user_data_db_path()})",
    )
    return common


def db_path(args: argparse.Namespace) -> Path:
    """The store the command works on: --db, else $THREADLAB_DB, else the
    user's data directory."""
    given = getattr(args, "db", None)
    return Path(given).expanduser() if given else default_db_path()


def show_number(value: float) -> str:
    return f"{value:g}"


# ------------------------------------------------------------ option types


def number(option: str, kind: type, low: float, high: float, meaning: str = "") -> Callable[[str], Any]:
    """An option's value parser refusing anything outside [low, high]."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or not low <= value <= high:
            noun = "an integer" if kind is int else "a number"
            hint = f" ({meaning})" if meaning else ""
            raise UserError(f"{option} {text}: expected {noun} from {show_number(low)} to {show_number(high)}{hint}")
        return value

    return parse


def choice(option: str, accepted: Sequence[str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in accepted:
            raise UserError(f"{option} {text}: expected one of {', '.join(accepted)}")
        return text

    return parse


def placement_list(text: str) -> list[str]:
    """--placement unbound,same-cpu: the placements in the order given."""
    names = [name.strip() for name in text.split(",")]
    for name in names:
        if name not in vocabulary.PLACEMENTS:
            shown = name or "(empty)"
            raise UserError(f"--placement {text}: unknown placement '{shown}'; accepted: "
                            f"{', '.join(vocabulary.PLACEMENTS)} (comma-separated)")
    return list(dict.fromkeys(names))


def suite_list(text: str) -> list[str]:
    """--suite jvm,go: the suites in the order given; ['all']: every suite
    that has programs here."""
    names = [name.strip() for name in text.split(",")]
    if names == [vocabulary.ALL_SUITES]:
        return names
    for name in names:
        if name not in vocabulary.SUITES:
            shown = name or "(empty)"
            raise UserError(f"--suite {text}: unknown suite '{shown}'; accepted: {', '.join(vocabulary.SUITES)} "
                            "or all (comma-separated)")
    return list(dict.fromkeys(names))


# ------------------------------------------------------ selecting benchmarks


def split_patterns(values: Sequence[str] | None) -> list[str]:
    """--filter a,b --filter c -> [a, b, c]."""
    patterns = [p.strip() for value in values or [] for p in value.split(",")]
    if any(not p for p in patterns):
        raise UserError("--filter: empty pattern (expected GLOB[,GLOB...], e.g. 'pthread.mutex.*')")
    return patterns


def matches(name: str, pattern: str) -> bool:
    """fnmatch on the name; a pattern also selects the names below it
    ('pthread.mutex' selects 'pthread.mutex.pingpong')."""
    return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + ".*")


def _suggestion(catalog: Sequence[BenchmarkInfo], pattern: str) -> str:
    """' (did you mean '*mutex*'? ...)' when the pattern occurs inside names."""
    wider = f"*{pattern.strip('*')}*"
    count = sum(1 for info in catalog if fnmatch.fnmatchcase(info.benchmark, wider))
    return f" (did you mean '{wider}'? it selects {count})" if count else ""


def select_benchmarks(catalog: Sequence[BenchmarkInfo], patterns: Sequence[str]) -> list[BenchmarkInfo]:
    """The benchmarks the filters select, in catalog order; a filter that
    selects nothing is refused with the list of valid names."""
    if not patterns:
        return list(catalog)
    for pattern in patterns:
        if not any(matches(info.benchmark, pattern) for info in catalog):
            names = "\n".join(f"  {info.benchmark}" for info in catalog)
            raise UserError(f"--filter '{pattern}' matches no benchmark{_suggestion(catalog, pattern)}; valid names:\n{names}")
    return [info for info in catalog if any(matches(info.benchmark, p) for p in patterns)]


def selected_benchmarks(patterns: Sequence[str], suites: Sequence[str] | None = None
                        ) -> tuple[list[Path], list[BenchmarkInfo]]:
    """The benchmark programs, and the benchmarks of the suites (None or
    ['all']: every suite) that the filters select; a suite named that has
    no program here is an error."""
    from threadlab.native import protocol

    programs = discovery.benchmark_programs()
    found = protocol.catalog(programs)
    if suites is not None and list(suites) != [vocabulary.ALL_SUITES]:
        for suite in suites:
            if not any(info.suite == suite for info in found):
                build = {"jvm": "make jvm", "go": "make go",
                         "spawn": "make, with an MPI installed (scripts/install-deps.sh)"}.get(suite, "make")
                raise ThreadlabError(
                    f"--suite {suite}: no benchmark program of that suite in {programs[0].parent} "
                    f"(build it with `{build}`; see docs/{suite if suite in ('jvm', 'go', 'spawn') else 'native-protocol'}.md)"
                )
        found = [info for info in found if info.suite in suites]
    return programs, select_benchmarks(found, patterns)


def select_records(records: list[dict[str, Any]], patterns: Sequence[str]) -> list[dict[str, Any]]:
    """The records of the benchmarks the filters select (all without one)."""
    if not patterns:
        return records
    return [r for r in records if any(matches(r["benchmark"], p) for p in patterns)]
