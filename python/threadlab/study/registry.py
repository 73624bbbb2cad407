"""The studies threadlab has, for the commands that meet their stored runs
(`threadlab show`, the report).  Adding a study: its module beside this
one (plan, cells, records, on study.engine), its tables module, an entry
here, and its subcommand in cli/study.py (docs/architecture.md)."""

from __future__ import annotations

from typing import Any

from threadlab.study import apps, multiprog, omp, spawn
from threadlab.study.engine import Study

STUDIES: dict[str, Study] = {
    apps.STUDY: Study(apps.STUDY, apps.BENCHMARK_PREFIX, "threadlab.study.tables", "speedups"),
    multiprog.STUDY: Study(multiprog.STUDY, multiprog.BENCHMARK_PREFIX, "threadlab.study.tables_multiprog",
                           "summary_rows"),
    spawn.STUDY: Study(spawn.STUDY, spawn.BENCHMARK_PREFIX, "threadlab.study.tables_spawn", "summary_rows"),
    omp.STUDY: Study(omp.STUDY, omp.BENCHMARK_PREFIX, "threadlab.study.tables_omp", "summary_rows"),
}


def study_of_run(options: Any) -> Study | None:
    """The study a stored run is (its options say), or None for a bench run."""
    if not isinstance(options, dict):
        return None
    return STUDIES.get(str(options.get("study")))
