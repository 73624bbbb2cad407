"""The `threadlab` command's entry point (pyproject.toml, `python -m
threadlab`): `threadlab omp run` starts its program without importing the
front end (threadlab.cli imports numpy, scipy, rich, the store: a quarter
of a second before a short OpenMP program could even start;
docs/commands/omp.md); every other command is threadlab.cli's."""

from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:2] == ["omp", "run"]:
        from threadlab import rm_cli

        rm_cli.omp_run_fast(words[2:])  # execs the program, or returns for the full command line
    from threadlab.cli import main as cli_main

    return cli_main(words)
