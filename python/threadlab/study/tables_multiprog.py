"""The tables of `threadlab study multiprog`, computed from a run's records
(so `threadlab show` prints them too), like the seed's (004):

- Dedicated (Table 1): one instance on 1..N CPUs; rows = CPUs, columns =
  kernel x baseline (rm, gomp); mean turnaround [95% interval].
- Multiprogrammed (Table 2): rows = degree, columns = kernel x baseline;
  mean turnaround of the workload's instances [95% interval across the
  experiments].
- Scenarios: rows = scenario (mixed kernels, staggered arrivals, the late
  arrival, faults), columns = baselines, and rm against the best of
  passive, dynamic and static (Fieller interval); the late arrival's gap to
  "EP alone on every CPU plus CG's run time".
- OpenMP on user-level threads against the shim (issue 14's target): ult's
  mean turnaround / rm's per workload and scenario, with the target
  (at least 15% lower with long regions, EP, and in the late arrival; no
  worse elsewhere), shown as measured: met or not.

Intervals of means of times are on the log scale (stats.mean_interval):
they never reach below zero.
- Against plain libgomp: each baseline's mean turnaround / gomp's at the
  same degree, with its 95% Fieller interval (stats.ratio_of_means).
- Per kernel, every measure: mean and maximum turnaround, makespan, the
  slowdown against the dedicated run (mean turnaround / mean dedicated time
  on all CPUs, Fieller interval) and per degree (slowdown / degree: 1 is
  linear), context switches, team sizes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from rich.console import Console

from threadlab.analysis import stats
from threadlab.output.table import Footnotes
from threadlab.output.units import format_value
from threadlab.study.cells import mean_cell, print_titled as _print, speedup_cell, study_heading
from threadlab.study.multiprog import APPS, BASELINES, BENCHMARK_PREFIX, COMPETITORS, SCENARIOS, scenario

# Issue 14's target for ult against rm (libthreadlab-gomp against the shim,
# both under the manager): mean turnaround at least ULT_LONG_GAIN lower in
# the workloads with long regions (EP's one region) and in the late
# arrival; no worse elsewhere.  Reported as measured, never asserted.
ULT_LONG_GAIN = 0.15
ULT_LONG_KERNELS: tuple[str, ...] = ("ep",)
ULT_LONG_SCENARIOS: tuple[str, ...] = ("late",)

Key = tuple[str, str, str, int]  # metric, kernel, baseline, degree (dedicated: CPUs)


@dataclass
class MultiprogData:
    apps: list[str] = field(default_factory=list)
    baselines: list[str] = field(default_factory=list)
    degrees: list[int] = field(default_factory=list)
    cpus: list[int] = field(default_factory=list)  # dedicated CPU counts
    workloads: dict[Key, Mapping[str, Any]] = field(default_factory=dict)
    dedicated: dict[Key, Mapping[str, Any]] = field(default_factory=dict)
    scenarios: list[str] = field(default_factory=list)
    scenario_records: dict[tuple[str, str, str], Mapping[str, Any]] = field(default_factory=dict)

    def get(self, metric: str, app: str, baseline: str, degree: int) -> Mapping[str, Any] | None:
        return self.workloads.get((metric, app, baseline, degree))

    def scenario(self, metric: str, name: str, baseline: str) -> Mapping[str, Any] | None:
        return self.scenario_records.get((metric, name, baseline))

    def alone(self, app: str) -> Mapping[str, Any] | None:
        """The reference of the slowdown: plain libgomp alone on every CPU
        (the dedicated run), else gomp at degree 1."""
        if self.cpus:
            record = self.dedicated.get(("time", app, "gomp", max(self.cpus)))
            if record is not None and record["status"] == "ok":
                return record
        record = self.get("turnaround", app, "gomp", 1)
        return record if record is not None and record["status"] == "ok" else None


def _order(values: Sequence[str], canonical: Sequence[str]) -> list[str]:
    return sorted(set(values), key=lambda v: canonical.index(v) if v in canonical else len(canonical))


def collect(records: Sequence[Mapping[str, Any]]) -> MultiprogData:
    data = MultiprogData()
    apps, baselines, degrees, cpus, scenarios = [], [], set(), set(), []
    for record in records:
        if not str(record.get("benchmark", "")).startswith(BENCHMARK_PREFIX):
            continue
        app, baseline, params = record["benchmark"][len(BENCHMARK_PREFIX):], record["model"], record["params"]
        baselines.append(baseline)
        if params.get("scenario"):
            scenarios.append(params["scenario"])
            data.scenario_records[(record["metric"], params["scenario"], baseline)] = record
            continue
        apps.append(app)
        if params.get("mode") == "dedicated":
            count = int(params.get("threads", "0"))
            cpus.add(count)
            data.dedicated[(record["metric"], app, baseline, count)] = record
        else:
            degree = int(params.get("degree", "0"))
            degrees.add(degree)
            data.workloads[(record["metric"], app, baseline, degree)] = record
    data.apps = _order(apps, APPS)
    data.baselines = _order(baselines, BASELINES)
    data.degrees = sorted(degrees)
    data.cpus = sorted(cpus)
    data.scenarios = _order(scenarios, SCENARIOS)
    return data


def _mean(record: Mapping[str, Any] | None) -> float | None:
    if record is None or record["status"] != "ok" or not record["samples"]:
        return None
    return float(sum(record["samples"]) / len(record["samples"]))


def best_competitor(data: MultiprogData, name: str) -> str | None:
    """The baseline among passive, dynamic and static with the lowest mean
    turnaround in scenario `name` (the target compares rm with it)."""
    means = {b: _mean(data.scenario("turnaround", name, b)) for b in COMPETITORS}
    present = {b: m for b, m in means.items() if m is not None}
    return min(present, key=lambda b: present[b]) if present else None


@dataclass
class LateGap:
    """The late arrival under one baseline: EP's turnaround against "EP
    alone on every CPU plus CG's run time"."""

    baseline: str
    ep: float
    cg: float
    alone: float

    @property
    def reference(self) -> float:
        return self.alone + self.cg

    @property
    def gap(self) -> float:
        return self.ep - self.reference


def late_gaps(data: MultiprogData) -> list[LateGap]:
    """Per baseline of the late scenario, when EP's dedicated time on every
    CPU was measured (the dedicated runs, rm's or gomp's)."""
    alone = None
    if data.cpus:
        for b in ("rm", "gomp"):
            alone = alone if alone is not None else _mean(data.dedicated.get(("time", "ep", b, max(data.cpus))))
    gaps = []
    for b in data.baselines:
        ep, cg = _mean(data.scenario("turnaround.1.ep", "late", b)), _mean(data.scenario("turnaround.0.cg", "late", b))
        if alone is not None and ep is not None and cg is not None:
            gaps.append(LateGap(b, ep, cg, alone))
    return gaps


def shared_floor(programs: Sequence[tuple[float, float]], cpus: int) -> list[float]:
    """The turnarounds of programs (start s, work in CPU seconds) if each
    had perfect speedup and the CPUs were shared equally among the programs
    present at every instant (egalitarian processor sharing: what a manager
    giving equal shares allows at best, whatever the runtime).  k programs
    of work W started together all take k * W / cpus."""
    remaining = [work for _, work in programs]
    ends: list[float | None] = [None] * len(programs)
    pending = sorted(range(len(programs)), key=lambda i: programs[i][0])
    active: list[int] = []
    now = 0.0
    while pending or active:
        arrival = programs[pending[0]][0] if pending else float("inf")
        if not active:
            now = arrival
        else:
            rate = cpus / len(active)
            finish = now + min(remaining[i] for i in active) / rate
            step = min(arrival, finish) - now
            for i in active:
                remaining[i] -= rate * step
            now += step
            for i in [i for i in active if remaining[i] <= 1e-12 * max(1.0, programs[i][1])]:
                active.remove(i)
                ends[i] = now
        while pending and programs[pending[0]][0] <= now:
            active.append(pending.pop(0))
    return [end - start for end, (start, _) in zip(ends, programs) if end is not None]


def _least_mean(records: Sequence[Mapping[str, Any] | None]) -> float | None:
    means = [m for r in records if (m := _mean(r)) is not None and m > 0]
    return min(means) if means else None


def _cpus(record: Mapping[str, Any]) -> int | None:
    used = (record.get("extra") or {}).get("cpus_used")
    return int(used) if isinstance(used, (int, float)) and used > 0 else None


def workload_floor(data: MultiprogData, app: str, degree: int, cpus: int) -> float | None:
    """The floor of the mean turnaround of k instances of `app` started
    together (shared_floor), from the least CPU time an instance of it took
    in this run (any baseline, degree or dedicated run): None without CPU
    times (runs before they were recorded)."""
    # two tables: a dedicated run on 1 CPU and a workload of degree 1 have the same key
    work = _least_mean([r for table in (data.workloads, data.dedicated) for (metric, a, _, _), r in table.items()
                        if metric == "cpu" and a == app])
    return None if work is None else sum(shared_floor([(0.0, work)] * degree, cpus)) / degree


def scenario_floor(data: MultiprogData, name: str, cpus: int) -> float | None:
    """The floor of a scenario's mean turnaround (shared_floor, the
    programs at their start offsets), each program's work the least CPU time
    it took under any baseline of this run; None when a program's CPU time
    is missing (the SIGKILLed one of `kill`)."""
    record = next((r for b in data.baselines if (r := data.scenario("turnaround", name, b)) is not None), None)
    if record is None:
        return None
    try:
        entries = scenario(name, str(record["params"].get("size"))).entries
    except ValueError:
        return None
    programs = []
    for index, entry in enumerate(entries):
        work = _least_mean([data.scenario(f"cpu.{index}.{entry.kernel}", name, b) for b in data.baselines])
        if work is None:
            return None
        programs.append((entry.at_s, work))
    turnarounds = shared_floor(programs, cpus)
    return sum(turnarounds) / len(turnarounds)


@dataclass
class UltTarget:
    """ult against rm in one workload (kernel, degree) or scenario: the
    ratio of mean turnarounds with its 95% Fieller interval, the target's
    bound on the ratio, and the floor no runtime under the manager's equal
    shares goes below (None when CPU times were not recorded)."""

    kernel: str | None
    degree: int | None
    scenario: str | None
    ratio: float
    low: float | None
    high: float | None
    bound: float
    rm_mean: float = 0.0
    floor: float | None = None

    @property
    def long_regions(self) -> bool:
        return self.bound < 1.0

    @property
    def met(self) -> bool:
        return self.ratio <= self.bound

    @property
    def reachable(self) -> bool | None:
        """Whether the bound lies above the floor: below it, no runtime
        meets the target under this manager on this machine."""
        return None if self.floor is None else self.bound * self.rm_mean >= self.floor

    @property
    def target_text(self) -> str:
        return f"at least {ULT_LONG_GAIN:.0%} lower" if self.long_regions else "no worse"


def ult_targets(data: MultiprogData) -> list[UltTarget]:
    """ult / rm (mean turnarounds) wherever both were measured; the bound
    is 1 - ULT_LONG_GAIN for EP's workloads and the late arrival, else 1."""
    targets = []

    def add(ult: Mapping[str, Any] | None, rm: Mapping[str, Any] | None, long: bool,
            floor: Callable[[int], float | None], **where: Any) -> None:
        if not (ult and rm and ult["status"] == "ok" and rm["status"] == "ok" and ult["samples"] and rm["samples"]):
            return
        ratio, interval = stats.ratio_of_means(ult["samples"], rm["samples"])
        if ratio is None:
            return
        cpus = _cpus(rm)
        targets.append(UltTarget(where.get("kernel"), where.get("degree"), where.get("scenario"), ratio,
                                 interval.low if interval else None, interval.high if interval else None,
                                 1.0 - ULT_LONG_GAIN if long else 1.0, rm_mean=_mean(rm) or 0.0,
                                 floor=floor(cpus) if cpus else None))

    for app in data.apps:
        for k in data.degrees:
            add(data.get("turnaround", app, "ult", k), data.get("turnaround", app, "rm", k), app in ULT_LONG_KERNELS,
                functools.partial(workload_floor, data, app, k), kernel=app, degree=k)
    for name in data.scenarios:
        add(data.scenario("turnaround", name, "ult"), data.scenario("turnaround", name, "rm"),
            name in ULT_LONG_SCENARIOS, functools.partial(scenario_floor, data, name), scenario=name)
    return targets


def _render_ult_targets(console: Console, data: MultiprogData) -> None:
    targets = ult_targets(data)
    if not targets:
        return
    # runs stored before CPU times were recorded have no floor: no columns
    floors = any(t.floor is not None for t in targets)
    rows = []
    for t in targets:
        interval = f" [{t.low:.3f}, {t.high:.3f}]" if t.low is not None and t.high is not None else ""
        reach = "—" if t.reachable is None else "yes" if t.reachable else "no: the bound is below the floor"
        rows.append([t.scenario or f"{t.kernel} k={t.degree}", f"{t.ratio:.3f}{interval}",
                     f"{t.target_text} (≤ {t.bound:.2f})", "met" if t.met else "not met"]
                    + ([format_value(t.floor, "s"), f"{t.rm_mean / t.floor:.3f}" if t.floor else "—", reach]
                       if floors else []))
    title = ("OpenMP on user-level threads against the shim, both under the manager: ult's mean turnaround / rm's "
             f"[95% Fieller interval] (below 1: ult is faster); the target (issue 14): at least {ULT_LONG_GAIN:.0%} "
             f"lower with long regions ({', '.join(ULT_LONG_KERNELS)}) and in the late arrival, no worse elsewhere; "
             "met or not as measured here (the point estimate against the bound)")
    if floors:
        title += (". The floor: the mean turnaround if every program had perfect speedup and the CPUs were shared "
                  "equally among the programs present, each program's work the least CPU time it took in this run; "
                  "no runtime goes below it under a manager that shares equally, so a target whose bound (bound x "
                  "rm) lies below it is out of reach here")
    _print(console, title,
           [("workload", "left"), ("ult / rm", "right"), ("target", "left"), ("measured", "left")]
           + ([("floor", "right"), ("rm / floor", "right"), ("reachable", "left")] if floors else []), rows)
    console.print()


def _size(records: Sequence[Mapping[str, Any]]) -> str:
    sizes = sorted({r["params"].get("size", "?") for r in records if r["benchmark"].startswith(BENCHMARK_PREFIX)})
    return ", ".join(sizes)


def _teams(record: Mapping[str, Any] | None) -> str:
    extra = (record or {}).get("extra") or {}
    if extra.get("team_mean") is None:
        return "—"
    low, high = extra.get("team_min"), extra.get("team_max")
    spread = f" ({low}-{high})" if low != high else ""
    return f"{float(extra['team_mean']):.2f}{spread}"


def _count_cell(record: Mapping[str, Any] | None) -> str:
    if record is None or record["status"] != "ok":
        return "—"
    samples = record["samples"]
    return f"{sum(samples) / len(samples):.1f}"


def render(console: Console, records: Sequence[Mapping[str, Any]], title: str = "Study multiprog") -> None:
    data = collect(records)
    if not study_heading(console, title, bool(data.apps or data.scenarios)):
        return
    size = _size(records)
    if data.dedicated:
        notes = Footnotes()
        dedicated = [b for b in data.baselines if any(key[2] == b for key in data.dedicated)]
        rows = [[app, str(c)] + [mean_cell(data.dedicated.get(("time", app, b, c)), notes) for b in dedicated]
                for app in data.apps for c in data.cpus]
        _print(console, f"Dedicated (the seed's Table 1): turnaround of one instance on 1..N CPUs, size {size}: "
               "mean [95% interval]", [("kernel", "left"), ("CPUs", "right")] + [(b, "right") for b in dedicated],
               rows, notes.texts)
        console.print()
    _render_scenarios(console, data, size)
    if not data.degrees:
        _render_ult_targets(console, data)
        console.file.flush()
        return
    notes = Footnotes()
    rows = [[app, str(k)] + [mean_cell(data.get("turnaround", app, b, k), notes) for b in data.baselines]
            for app in data.apps for k in data.degrees]
    _print(console, f"Multiprogrammed (the seed's Table 2): mean turnaround of the instances of a workload of k "
           f"instances each asking for every CPU, size {size}: mean [95% interval across experiments]",
           [("kernel", "left"), ("k", "right")] + [(b, "right") for b in data.baselines], rows, notes.texts)
    console.print()
    _render_ult_targets(console, data)
    others = [b for b in data.baselines if b != "gomp"]
    if "gomp" in data.baselines and others:
        notes = Footnotes()
        rows = [[app, str(k)] + [speedup_cell(data.get("turnaround", app, b, k), data.get("turnaround", app, "gomp", k),
                                            notes) for b in others] for app in data.apps for k in data.degrees]
        _print(console, "Against plain libgomp: mean turnaround / gomp's at the same degree [95% Fieller interval] "
               "(below 1: faster)", [("kernel", "left"), ("k", "right")] + [(f"{b}/gomp", "right") for b in others],
               rows, notes.texts)
        console.print()
    # runs stored before CPU times were recorded have none: no column
    has_cpu = any(key[0] == "cpu" for key in data.workloads)
    for app in data.apps:
        notes = Footnotes()
        alone = data.alone(app)
        rows, behaviour = [], []
        for b in data.baselines:
            for k in data.degrees:
                turnaround = data.get("turnaround", app, b, k)
                if turnaround is None:
                    continue
                rows.append([
                    b, str(k), mean_cell(turnaround, notes), mean_cell(data.get("turnaround_max", app, b, k), notes),
                    mean_cell(data.get("makespan", app, b, k), notes),
                    speedup_cell(turnaround, alone, notes) if alone else "—",
                    speedup_cell(turnaround, alone, notes, per=float(k)) if alone else "—",
                ])
                cpu = [format_value(_mean(data.get("cpu", app, b, k)), "s")] if has_cpu else []
                behaviour.append([b, str(k)] + cpu + [_count_cell(data.get("csw_voluntary", app, b, k)),
                                                      _count_cell(data.get("csw_involuntary", app, b, k)),
                                                      _teams(turnaround)])
        reference = ("the dedicated gomp run on every CPU" if data.cpus and alone is not None
                     and alone["params"].get("mode") == "dedicated" else "gomp at degree 1")
        _print(console, f"{app}: turnaround, maximum turnaround, makespan (means [95% interval]); slowdown = mean "
               f"turnaround / that of {reference} [95% Fieller interval]; per degree = slowdown / k (1: turnaround "
               "linear in the degree)",
               [("baseline", "left"), ("k", "right"), ("turnaround", "right"), ("max turnaround", "right"),
                ("makespan", "right"), ("slowdown", "right"), ("per degree", "right")], rows, notes.texts)
        console.print()
        what = "CPU time (user + system) and context switches" if has_cpu else "context switches"
        _print(console, f"{app}: {what} per instance (wait4 rusage, mean of the experiments) and team sizes (mean "
               "over all parallel regions, (smallest-largest))",
               [("baseline", "left"), ("k", "right")] + ([("CPU time", "right")] if has_cpu else [])
               + [("voluntary", "right"), ("involuntary", "right"), ("team", "right")], behaviour)
        console.print()
    console.file.flush()


def _render_scenarios(console: Console, data: MultiprogData, size: str) -> None:
    if not data.scenarios:
        return
    baselines = [b for b in data.baselines if any(data.scenario("turnaround", n, b) for n in data.scenarios)]
    notes = Footnotes()
    rows = []
    for name in data.scenarios:
        any_record = next(r for b in baselines if (r := data.scenario("turnaround", name, b)) is not None)
        params = any_record["params"]
        what = params.get("workload", "") + (f"; {params['fault']}" if params.get("fault") else "")
        best = best_competitor(data, name)
        rm = data.scenario("turnaround", name, "rm")
        versus = speedup_cell(rm, data.scenario("turnaround", name, best), notes) if rm is not None and best else "—"
        rows.append([name, what] + [mean_cell(data.scenario("turnaround", name, b), notes) for b in baselines]
                    + [best or "—", versus])
    _print(console, f"Scenarios where the manager should win, size {size}: mean turnaround of the programs "
           "(the one SIGKILLed excluded) [95% interval]; rm / the best of passive, dynamic and static [95% Fieller "
           "interval] (below 1: rm is faster)",
           [("scenario", "left"), ("programs@start", "left")] + [(b, "right") for b in baselines]
           + [("best other", "left"), ("rm / best other", "right")], rows, notes.texts)
    console.print()
    gaps = late_gaps(data)
    if gaps:
        rows = [[g.baseline, f"{g.ep:.3g} s", f"{g.cg:.3g} s", f"{g.alone:.3g} s", f"{g.reference:.3g} s",
                 f"{g.gap:+.3g} s ({g.gap / g.reference:+.0%})"] for g in gaps]
        _print(console, "The late arrival: EP's turnaround against EP alone on every CPU (the dedicated run) plus "
               "CG's turnaround (means); the gap is what EP lost to arriving late",
               [("baseline", "left"), ("EP", "right"), ("CG", "right"), ("EP alone", "right"),
                ("reference", "right"), ("gap", "right")], rows)
        console.print()


def summary_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The multiprogrammed cells as data (for --json and the tests): mean
    turnaround with its interval, the ratio to gomp and the slowdown."""
    data = collect(records)
    rows = []
    for app in data.apps:
        alone = data.alone(app)
        for b in data.baselines:
            for k in data.degrees:
                record = data.get("turnaround", app, b, k)
                if record is None or record["status"] != "ok":
                    continue
                samples = record["samples"]
                interval = stats.mean_interval(samples, record["unit"])
                row: dict[str, Any] = {
                    "kernel": app, "baseline": b, "degree": k, "runs": len(samples),
                    "mean_turnaround_s": sum(samples) / len(samples),
                    "low_s": interval.low if interval else None, "high_s": interval.high if interval else None,
                }
                for metric in ("turnaround_max", "makespan"):
                    other = data.get(metric, app, b, k)
                    row[f"mean_{metric}_s"] = (sum(other["samples"]) / len(other["samples"])
                                               if other and other["status"] == "ok" else None)
                gomp = data.get("turnaround", app, "gomp", k)
                ratio = stats.ratio_of_means(samples, gomp["samples"])[0] if gomp and gomp["status"] == "ok" else None
                row["ratio_to_gomp"] = ratio
                row["slowdown"] = stats.ratio_of_means(samples, alone["samples"])[0] if alone else None
                row["verified"] = all(c["ok"] for c in record["checks"] if c["name"] == "verified")
                rows.append(row)
    for name in data.scenarios:
        best = best_competitor(data, name)
        for b in data.baselines:
            record = data.scenario("turnaround", name, b)
            if record is None or record["status"] != "ok":
                continue
            samples = record["samples"]
            interval = stats.mean_interval(samples, record["unit"])
            other = data.scenario("turnaround", name, best) if best else None
            rows.append({
                "scenario": name, "workload": record["params"].get("workload"),
                "fault": record["params"].get("fault"), "baseline": b, "runs": len(samples),
                "mean_turnaround_s": sum(samples) / len(samples),
                "low_s": interval.low if interval else None, "high_s": interval.high if interval else None,
                "best_competitor": best,
                "ratio_to_best_competitor": (stats.ratio_of_means(samples, other["samples"])[0]
                                             if other is not None and other["status"] == "ok" else None),
                "verified": all(c["ok"] for c in record["checks"] if c["name"] == "verified"),
            })
    for target in ult_targets(data):
        for row in rows:
            same = (row.get("scenario") == target.scenario if target.scenario
                    else row.get("kernel") == target.kernel and row.get("degree") == target.degree)
            if same and row["baseline"] == "ult":
                row.update(ratio_to_rm=target.ratio, ult_target_ratio=target.bound, ult_target_met=target.met,
                           floor_s=target.floor, ult_target_reachable=target.reachable)
    for gap in late_gaps(data):
        for row in rows:
            if row.get("scenario") == "late" and row["baseline"] == gap.baseline:
                row.update(late_ep_s=gap.ep, late_cg_s=gap.cg, late_ep_alone_s=gap.alone, late_gap_s=gap.gap)
    return rows
