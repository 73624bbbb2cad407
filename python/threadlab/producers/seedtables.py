"""Seed 003's Tables 1-4 from threadlab records: for each of the seed's four
benchmarks, the mean and standard deviation in seconds per thread model,
Welch's t-test p-value between jvm-platform and jvm-virtual (the seed used
a t-test at alpha 0.05), the ratio of the means, and the seed's published
figures beside them.  Other models in the records (goroutine, pthread,
ult) get their own columns.  docs/jvm.md describes the tables; the HTML
report can show them through `seed_tables` and `markdown`.

    python -m threadlab.producers.seedtables [--db PATH] [RUN...]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from threadlab.analysis import stats
from threadlab.output.units import to_ns

# The seed's published means and standard deviations, in seconds
# (platform, virtual), and what its sample was.
SEED: dict[str, tuple[str, tuple[float, float], tuple[float, float]]] = {
    "threads.instantiate": ("Table 1: instantiate 100,000 threads", (0.178, 0.006), (0.001, 0.001)),
    "threads.start": ("Table 2: start 100,000 threads", (1.099, 0.008), (0.002, 0.001)),
    "threads.start_join": ("Table 3: start and join 10,000 threads", (1.093, 0.005), (0.002, 0.001)),
    "threads.sleep_yield": ("Table 4: yield test, 100,000 threads", (14.216, 0.030), (0.019, 0.002)),
}
BASE, OTHER = "jvm-platform", "jvm-virtual"
MODEL_ORDER = ("jvm-platform", "jvm-virtual", "goroutine", "pthread", "ult", "boost-fiber", "process")


@dataclass
class Cell:
    model: str
    count: str | None
    n: int
    mean_s: float
    sd_s: float | None
    scaled_from: Any = None


@dataclass
class SeedTable:
    benchmark: str
    title: str
    params: dict[str, str]  # the params other than count
    cells: list[Cell] = field(default_factory=list)
    welch_p: float | None = None  # platform vs virtual
    ratio: float | None = None  # mean platform / mean virtual
    seed_ratio: float = 0.0
    note: str = ""

    def cell(self, model: str) -> Cell | None:
        return next((c for c in self.cells if c.model == model), None)


def _seconds(record: Mapping[str, Any]) -> list[float]:
    return [to_ns(v, record["unit"]) / 1e9 for v in record["samples"]]


def seed_tables(records: Sequence[Mapping[str, Any]]) -> list[SeedTable]:
    """One table per seed benchmark and per combination of its other params
    (sleep_yield: joined=no is the seed's protocol), from ok time records."""
    tables: dict[tuple[str, tuple[tuple[str, str], ...]], SeedTable] = {}
    samples: dict[tuple[Any, str], list[float]] = {}
    for record in records:
        if record["benchmark"] not in SEED or record["status"] != "ok" or record["metric"] != "time":
            continue
        others = tuple(sorted((k, v) for k, v in record["params"].items() if k != "count"))
        key = (record["benchmark"], others)
        title, platform, virtual = SEED[record["benchmark"]]
        table = tables.setdefault(key, SeedTable(record["benchmark"], title, dict(others),
                                                 seed_ratio=platform[0] / virtual[0]))
        values = _seconds(record)
        summary = stats.record_summary(record)  # stored with the record; in its unit
        if summary is None:
            continue
        second = to_ns(1.0, record["unit"]) / 1e9
        table.cells = [c for c in table.cells if c.model != record["model"]]  # a later run's point wins
        table.cells.append(Cell(record["model"], record["params"].get("count"), summary.n, summary.mean * second,
                                summary.sd * second if summary.sd is not None else None,
                                record["extra"].get("scaled_from")))
        samples[(key, record["model"])] = values
    for key, table in tables.items():
        table.cells.sort(key=lambda c: MODEL_ORDER.index(c.model) if c.model in MODEL_ORDER else len(MODEL_ORDER))
        a, b = samples.get((key, BASE)), samples.get((key, OTHER))
        if a and b:
            result = stats.welch_test(a, b)
            table.welch_p = result.p if result else None
            table.ratio = (sum(a) / len(a)) / (sum(b) / len(b))
            counts = {table.cell(BASE).count, table.cell(OTHER).count}  # type: ignore[union-attr]
            if len(counts) > 1:
                table.note = (f"the models ran different counts ({' vs '.join(sorted(c or '?' for c in counts))}): "
                              "the ratio compares unequal batches")
    return list(tables.values())


def _fmt(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.4f}" if value < 10 else f"{value:.3f}"


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return "< 1e-16" if value < 1e-16 else f"{value:.2g}"


def markdown(tables: Sequence[SeedTable]) -> str:
    """The tables as Markdown, the seed's figures beside ours."""
    lines: list[str] = []
    for table in tables:
        extra = " ".join(f"{k}={v}" for k, v in table.params.items())
        lines.append(f"### {table.title} — `{table.benchmark}`{' ' + extra if extra else ''}")
        lines.append("")
        lines.append("| model | count | n | mean (s) | sd (s) |")
        lines.append("|---|---:|---:|---:|---:|")
        for cell in table.cells:
            scaled = f" (scaled from {cell.scaled_from})" if cell.scaled_from else ""
            lines.append(f"| {cell.model} | {cell.count or '—'}{scaled} | {cell.n} | {_fmt(cell.mean_s)} | {_fmt(cell.sd_s)} |")
        _, platform, virtual = SEED[table.benchmark]
        lines.append(f"| seed: Thread | | 30 | {platform[0]} | {platform[1]} |")
        lines.append(f"| seed: Virtual Thread | | 30 | {virtual[0]} | {virtual[1]} |")
        lines.append("")
        ratio = f"{table.ratio:.1f}" if table.ratio else "—"
        lines.append(f"platform/virtual mean ratio {ratio} (seed {table.seed_ratio:.0f}); Welch t-test p = {_p(table.welch_p)}"
                     + (f"; note: {table.note}" if table.note else ""))
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from threadlab.records.store import Store, default_db_path

    parser = argparse.ArgumentParser(prog="python -m threadlab.producers.seedtables",
                                     description="seed 003's Tables 1-4 from stored runs (Markdown)")
    parser.add_argument("runs", nargs="*", default=["latest"], metavar="RUN")
    parser.add_argument("--db", metavar="PATH")
    args = parser.parse_args(argv)
    from pathlib import Path

    with Store(Path(args.db) if args.db else default_db_path(), create=False) as store:
        records = [r for ref in args.runs for r in store.records(store.resolve_run(ref).id)]
    print(markdown(seed_tables(records)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
