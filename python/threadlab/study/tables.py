"""The tables of `threadlab study apps`, computed from a run's records
(so `threadlab show` prints them too), like the seed's tables:

- Scenarios (Table I): the number, factors and runtime of each scenario.
- Speedup per kernel (Tables II-V): rows = scenarios, columns = thread
  counts, each cell mean time at 1 thread / mean time at T threads of the
  same scenario, with its 95% Fieller interval (stats.ratio_of_means).
- Time and rate per kernel: means with their 95% Student t intervals
  (the data of the seed's Figs. 3-6).
- Priority effect (Table VI): each scenario that differs from another
  only by its priority, against that one at normal priority: the change
  of the mean time with its 95% interval and Welch's p-value, Holm-adjusted
  over the table, instead of the seed's bare percentages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from rich.console import Console

from threadlab.analysis import stats
from threadlab.output.table import Footnotes
from threadlab.study.apps import AFFINITY_OF, BENCHMARK_PREFIX, FACTORS, KERNELS
from threadlab.study.cells import marks, mean_cell, print_titled, speedup_cell, study_heading

ALPHA = 0.05

ScenarioKey = tuple[str, str, str, str]  # platform, arch, priority, affinity


def scenario_key(record: Mapping[str, Any]) -> ScenarioKey:
    params = record["params"]
    affinity = params.get("affinity") or AFFINITY_OF.get(record["placement"], record["placement"])
    return (record["model"], params.get("arch", "?"), params.get("priority", "?"), affinity)


@dataclass
class StudyData:
    """A study run's records, indexed by metric, kernel, scenario and threads."""

    kernels: list[str]
    scenarios: list[ScenarioKey]
    numbers: dict[ScenarioKey, int]
    threads: list[int]
    records: dict[tuple[str, str, ScenarioKey, int], Mapping[str, Any]] = field(default_factory=dict)
    runtimes: dict[ScenarioKey, str] = field(default_factory=dict)

    def get(self, metric: str, kernel: str, scenario: ScenarioKey, threads: int) -> Mapping[str, Any] | None:
        return self.records.get((metric, kernel, scenario, threads))

    def label(self, scenario: ScenarioKey) -> str:
        """The scenario's number and the factors that set it apart from
        scenario 1 (the baseline); the platform always."""
        base = self.scenarios[0]
        parts = [scenario[0]]
        if scenario[1] != base[1] or scenario[1] != "64":
            parts.append(f"{scenario[1]}-bit")
        if scenario[2] != base[2] or scenario[2] != "normal":
            parts.append(scenario[2])
        if scenario[3] != base[3] or scenario[3] != "os":
            parts.append(scenario[3])
        return f"{self.numbers[scenario]:>2} {' '.join(parts)}"


def collect(records: Sequence[Mapping[str, Any]]) -> StudyData:
    kernels: list[str] = []
    scenarios: dict[ScenarioKey, int] = {}
    threads: set[int] = set()
    data = StudyData([], [], {}, [])
    for record in records:
        if not str(record.get("benchmark", "")).startswith(BENCHMARK_PREFIX):
            continue
        kernel = record["benchmark"][len(BENCHMARK_PREFIX):]
        if kernel not in kernels:
            kernels.append(kernel)
        key = scenario_key(record)
        number = record.get("extra", {}).get("scenario")
        if key not in scenarios:
            scenarios[key] = int(number) if isinstance(number, int) else len(scenarios) + 1
        count = int(record["params"].get("threads", "1"))
        threads.add(count)
        data.records[(record["metric"], kernel, key, count)] = record
        runtime = record.get("extra", {}).get("runtime")
        if isinstance(runtime, str):
            data.runtimes.setdefault(key, runtime)
    data.kernels = sorted(kernels, key=lambda k: KERNELS.index(k) if k in KERNELS else len(KERNELS))
    data.scenarios = sorted(scenarios, key=lambda s: scenarios[s])
    data.numbers = scenarios
    data.threads = sorted(threads)
    return data


@dataclass
class Effect:
    ratio: float | None
    interval: stats.Interval | None
    p: float | None
    records: tuple[Mapping[str, Any], Mapping[str, Any]]


def priority_effects(data: StudyData) -> list[tuple[ScenarioKey, ScenarioKey, int, dict[str, Effect | str]]]:
    """For every scenario whose priority is not normal and whose twin at
    normal priority exists: per thread count, per kernel, the time ratio
    (priority / normal) and Welch's p, or the text of a missing cell."""
    rows = []
    for scenario in data.scenarios:
        if scenario[2] == "normal":
            continue
        twin = (scenario[0], scenario[1], "normal", scenario[3])
        if twin not in data.numbers:
            continue
        for count in data.threads:
            cells: dict[str, Effect | str] = {}
            for kernel in data.kernels:
                a, b = data.get("time", kernel, twin, count), data.get("time", kernel, scenario, count)
                if a is None or b is None or a["status"] != "ok" or b["status"] != "ok":
                    cells[kernel] = "n/a"
                    continue
                ratio, interval = stats.ratio_of_means(b["samples"], a["samples"])
                test = stats.welch_test(b["samples"], a["samples"])
                cells[kernel] = Effect(ratio, interval, test.p if test else None, (a, b))
            if any(isinstance(cell, Effect) for cell in cells.values()):
                rows.append((scenario, twin, count, cells))
    return rows


def _percent(value: float) -> str:
    return f"{(value - 1) * 100:+.1f}"


def _kernel_title(data: StudyData, kernel: str) -> str:
    for (metric, name, _, _), record in data.records.items():
        if name == kernel and metric == "time":
            size = record["params"].get("size")
            unit = record.get("extra", {}).get("size_unit", "")
            if size:
                return f"{kernel} ({float(size):.3g} {unit})"
    return kernel


def render(console: Console, records: Sequence[Mapping[str, Any]], title: str = "Study") -> None:
    """Every table of the study."""
    data = collect(records)
    if not study_heading(console, title, bool(data.scenarios)):
        return
    print_titled(
        console, "Scenarios (de Sá et al.'s Table I)",
        [("#", "right"), ("platform", "left"), ("architecture", "left"), ("priority", "left"),
         ("affinity", "left"), ("runtime", "left")],
        [[str(data.numbers[s]), s[0], f"{s[1]}-bit", s[2], s[3], data.runtimes.get(s, "—")] for s in data.scenarios],
    )
    console.print()
    more = [t for t in data.threads if t != 1]
    for kernel in data.kernels:
        notes = Footnotes()
        if 1 in data.threads and more:
            rows = [[data.label(s)] + [speedup_cell(data.get("time", kernel, s, 1), data.get("time", kernel, s, t), notes)
                                       for t in more] for s in data.scenarios]
            print_titled(console,
                   f"Speedup of {_kernel_title(data, kernel)} over 1 thread: mean time ratio [95% Fieller interval]",
                   [("scenario", "left")] + [(f"{t} threads", "right") for t in more], rows, notes.texts)
        elif not more:
            console.print(f"{kernel}: one thread count only: no speedups.", markup=False)
        else:
            console.print(f"{kernel}: no 1-thread runs: no speedups (add 1 to --threads).", markup=False)
        notes = Footnotes()
        headers = [("scenario", "left")]
        for t in data.threads:
            headers += [(f"time, {t} thr.", "right"), (f"rate, {t} thr.", "right")]
        rows = []
        for s in data.scenarios:
            row = [data.label(s)]
            for t in data.threads:
                row += [mean_cell(data.get("time", kernel, s, t), notes), mean_cell(data.get("rate", kernel, s, t), notes)]
            rows.append(row)
        print_titled(console, f"Time and rate of {_kernel_title(data, kernel)}: mean [95% interval]", headers, rows,
               notes.texts)
        console.print()
    effects = priority_effects(data)
    if effects:
        pvalues = [cell.p for _, _, _, cells in effects for cell in cells.values()
                   if isinstance(cell, Effect) and cell.p is not None]
        adjusted = iter(stats.adjust_pvalues(pvalues, "holm"))
        notes = Footnotes()
        rows = []
        for scenario, twin, count, cells in effects:
            row = [f"{data.label(scenario)} vs {data.numbers[twin]}", str(count)]
            for kernel in data.kernels:
                cell = cells[kernel]
                if not isinstance(cell, Effect) or cell.ratio is None:
                    row.append(str(cell) if not isinstance(cell, Effect) else "—")
                    continue
                text = f"{_percent(cell.ratio)}%"
                if cell.interval:
                    text += f" [{_percent(cell.interval.low)}, {_percent(cell.interval.high)}]"
                if cell.p is not None:
                    holm = next(adjusted)
                    text += f" p={cell.p:.2g}" + ("*" if holm < ALPHA else "")
                row.append(text + marks(list(cell.records), notes))
            rows.append(row)
        print_titled(
            console,
            "Effect of priority (de Sá et al.'s Table VI): change of the mean time against the same scenario at "
            "normal priority [95% interval], Welch's p (*: significant at 5% after Holm's adjustment over the table)",
            [("scenario vs normal", "left"), ("threads", "right")] + [(k, "right") for k in data.kernels],
            rows, notes.texts,
        )
    console.file.flush()


def speedups(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The speedups as data: one object per kernel, scenario and thread
    count above 1 (for --json and the tests)."""
    data = collect(records)
    result = []
    for kernel in data.kernels:
        for scenario in data.scenarios:
            base = data.get("time", kernel, scenario, 1)
            for count in data.threads:
                other = data.get("time", kernel, scenario, count)
                if count == 1 or not base or not other or base["status"] != "ok" or other["status"] != "ok":
                    continue
                ratio, interval = stats.ratio_of_means(base["samples"], other["samples"])
                result.append({
                    "kernel": kernel, "scenario": data.numbers[scenario],
                    **dict(zip(FACTORS, scenario)), "threads": count, "speedup": ratio,
                    "low": interval.low if interval else None, "high": interval.high if interval else None,
                    "median_speedup": stats.ratio_of_medians(other["samples"], base["samples"])[0],
                })
    return result
