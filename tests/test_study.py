"""`threadlab study apps` without the real programs: the design, the plan
and its unsupported cells, the records, the speedup / interval / test
arithmetic on fixed data, every outcome of a run (fake programs), the
command line and Ctrl-C."""

from __future__ import annotations

import json
import math
import re
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from scipy import stats as scipy_stats

from conftest import FIXTURES, stored_records, threadlab_process, wait_for_records
from threadlab.records import schema
from threadlab.analysis import stats
from threadlab.errors import UserError
from threadlab.run.progress import JobProgress
from threadlab.run.runner import Result
from threadlab.study import apps, tables

RunCli = Callable[..., tuple[int, str, str]]
FAKE_PROGRAMS = ("pthread", "c11", "gomp", "llvmomp", "pthread-32", "c11-32", "gomp-32")


@pytest.fixture
def fake_apps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A THREADLAB_NATIVE_DIR of fake application programs and a manifest
    saying why llvmomp-32 and ult were not built."""
    directory = tmp_path / "apps"
    directory.mkdir()
    text = f"#!{sys.executable}\n" + (FIXTURES / "fake_app.py").read_text()
    for name in FAKE_PROGRAMS:
        program = directory / f"threadlab-app-{name}"
        program.write_text(text)
        program.chmod(0o755)
    manifest = {"native_arch": "64", "programs": {
        "llvmomp-32": {"platform": "llvmomp", "arch": "32", "program": None, "reason": "no 32-bit LLVM libomp (fake)"},
        "ult-64": {"platform": "ult", "arch": "64", "program": None, "reason": "the ult platform is not built yet"},
    }}
    (directory / apps.MANIFEST_NAME).write_text(json.dumps(manifest))
    monkeypatch.setenv("THREADLAB_NATIVE_DIR", str(directory))
    return directory


def _plan(**kwargs: Any) -> apps.Plan:
    programs = apps.discover_programs()
    defaults: dict[str, Any] = dict(programs=programs, kernels=apps.kernel_catalog(programs), cpus=[0, 1], seed=7,
                                    probe=lambda program, level: None)
    return apps.make_plan(**{**defaults, **kwargs})


# ------------------------------------------------------------------ design


def test_default_design_is_platform_by_affinity_plus_arch_and_priority() -> None:
    levels = {f: list(v) for f, v in apps.DEFAULT_LEVELS.items()}
    scenarios = apps.expand_design(apps.parse_design(apps.DEFAULT_DESIGN), levels)
    labels = [s.label for s in scenarios]
    assert labels[0] == "pthread 64-bit normal os"  # the baseline first
    assert len(scenarios) == len(set(scenarios)) == 12 + 6 + 5
    assert "gomp 64-bit normal pinned" in labels and "c11 32-bit normal os" in labels
    assert "pthread 64-bit fifo os" in labels and "gomp 64-bit fifo os" not in labels
    assert all(s.arch == "64" for s in scenarios if s.priority != "normal")


def test_design_forms() -> None:
    levels = {f: list(v) for f, v in apps.DEFAULT_LEVELS.items()}
    assert len(apps.expand_design(apps.parse_design("all"), levels)) == 6 * 2 * 6 * 2
    assert [s.label for s in apps.expand_design(apps.parse_design("none"), levels)] == ["pthread 64-bit normal os"]
    crossed = apps.expand_design(apps.parse_design("platform*priority"), levels)
    assert len(crossed) == 6 * 6
    # Blocks overlap in the baseline: it appears once.
    assert len(apps.expand_design(apps.parse_design("arch,affinity"), levels)) == 3
    for bad, words in (("platform*nothing", "unknown factor 'nothing'"), ("arch*arch", "appears twice"),
                       ("platform,", "unknown factor '(empty)'")):
        with pytest.raises(UserError, match=re.escape(words)):
            apps.parse_design(bad)


def test_levels_threads_sizes_are_checked() -> None:
    assert apps.parse_levels("priority", "normal,nice:-5,fifo:99,rr,idle") == ["normal", "nice:-5", "fifo:99", "rr", "idle"]
    assert apps.parse_levels("platform", "gomp,pthread,gomp") == ["gomp", "pthread"]
    for factor, bad in (("priority", "nice:-21"), ("priority", "fifo:0"), ("priority", "high"),
                        ("platform", "winapi"), ("arch", "16"), ("affinity", "same-cpu"), ("arch", "64,")):
        with pytest.raises(UserError, match=f"--{factor}"):
            apps.parse_levels(factor, bad)
    assert apps.priority_argument("nice-20") == "nice:-20"
    assert apps.priority_argument("fifo") == f"fifo:{apps.RT_PRIORITY}"
    assert apps.priority_argument("rr:50") == "rr:50"
    assert apps.parse_threads("1-3,5,2") == [1, 2, 3, 5]
    for bad in ("0", "3-1", "x", "1,,2", str(apps.MAX_THREADS + 1)):
        with pytest.raises(UserError, match="--threads"):
            apps.parse_threads(bad)
    assert apps.parse_sizes("mips=4e8,pi=1000") == {"mips": 400_000_000, "pi": 1000}
    for bad in ("mips", "mips=0", "mips=1.5", "fft=10", "pi=abc"):
        with pytest.raises(UserError, match="--size"):
            apps.parse_sizes(bad)
    assert apps.parse_kernels("pi,mips") == ["mips", "pi"]
    with pytest.raises(UserError, match="unknown kernel 'fft'"):
        apps.parse_kernels("pi,fft")


# -------------------------------------------------------------------- plan


def test_plan_cells_and_their_unsupported_reasons(fake_apps: Path) -> None:
    refused = {"fifo": "priority fifo: sched_setscheduler: Operation not permitted (needs CAP_SYS_NICE)"}
    plan = _plan(threads=[1, 2, 3], runs=4, probe=lambda program, level: refused.get(level),
                 levels={"platform": ["pthread", "llvmomp", "ult"]})
    by = {(c.scenario.label, c.kernel.name, c.threads): c for c in plan.cells}
    assert len(plan.cells) == len(plan.scenarios) * 4 * 3
    # No program: the manifest's reason, or the program missing.
    assert by[("llvmomp 32-bit normal os", "pi", 1)].unsupported == "no 32-bit LLVM libomp (fake)"
    assert "not built yet" in by[("ult 64-bit normal os", "pi", 1)].unsupported
    # More pinned threads than CPUs.
    assert by[("pthread 64-bit normal pinned", "mips", 3)].unsupported.startswith(
        "pinning 3 threads to distinct CPUs needs 3 CPUs, but this process may use 2 (CPUs 0,1)")
    assert by[("pthread 64-bit normal pinned", "mips", 2)].unsupported is None
    assert by[("pthread 64-bit normal os", "mips", 3)].unsupported is None  # oversubscription is fine
    # A priority this user may not set (the probe's answer).
    assert by[("pthread 64-bit fifo os", "trapezoid", 1)].unsupported == refused["fifo"]
    assert by[("pthread 64-bit rr os", "trapezoid", 1)].unsupported is None
    # Every run of every supported cell exactly once, numbered 0.. per cell.
    supported = [c for c in plan.cells if c.unsupported is None]
    assert len(plan.jobs) == 4 * len(supported)
    runs: dict[int, list[int]] = {}
    for job in plan.jobs:
        runs.setdefault(job.cell, []).append(job.run)
    assert runs == {c.index: [0, 1, 2, 3] for c in supported}


def _manifest_omp_ult(directory: Path, entry: dict[str, Any] | None) -> None:
    manifest = json.loads((directory / apps.MANIFEST_NAME).read_text())
    if entry is not None:
        manifest["programs"]["omp-ult-64"] = {"platform": "omp-ult", "arch": "64", "reason": None, **entry}
    (directory / apps.MANIFEST_NAME).write_text(json.dumps(manifest))


def test_omp_ult_is_the_gomp_program_with_its_runtime_preloaded(fake_apps: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    library = fake_apps.parent / "lib" / "libthreadlab-gomp.so"
    library.parent.mkdir()
    library.write_bytes(b"")
    _manifest_omp_ult(fake_apps, {"program": "threadlab-app-gomp", "preload": "../lib/libthreadlab-gomp.so"})
    plan = _plan(threads=[1, 2], design="platform*affinity,platform*arch",
                 levels={"platform": ["pthread", "omp-ult"]})
    by = {(c.scenario.label, c.kernel.name, c.threads): c for c in plan.cells}
    cell = by[("omp-ult 64-bit normal os", "pi", 2)]
    assert cell.unsupported is None and cell.program == fake_apps / "threadlab-app-gomp"
    assert cell.preload == library.resolve()
    # Levels that do not exist for it: planned unsupported, never run.
    assert "omp-ult cannot pin a worker" in by[("omp-ult 64-bit normal pinned", "pi", 1)].unsupported
    assert "own architecture only" not in by[("omp-ult 32-bit normal os", "pi", 1)].unsupported
    assert "names no program for omp-ult 32-bit" in by[("omp-ult 32-bit normal os", "pi", 1)].unsupported
    assert {plan.cells[job.cell].scenario.label for job in plan.jobs} == {
        "pthread 64-bit normal os", "pthread 64-bit normal pinned", "pthread 32-bit normal os",
        "omp-ult 64-bit normal os"}
    # The library first, threadlab's other runtimes dropped, the user's own kept.
    monkeypatch.setenv("LD_PRELOAD", "/old/build/lib/libthreadlab-omp.so /usr/lib/mine.so")
    assert cell.environment()["LD_PRELOAD"] == f"{library.resolve()}:/usr/lib/mine.so"
    assert plan.cells[0].environment() is None  # pthread: threadlab's own environment
    assert any(line.startswith(f"env LD_PRELOAD={library.resolve()}:/usr/lib/mine.so ") and "--run study.apps.pi"
               in line for line in apps.dry_run_lines(plan))
    # Only a run that reports the preloaded file as its runtime counts.
    assert cell.runs_on_preload(f"GNU libgomp ({library.resolve()}), OpenMP 201511")
    assert not cell.runs_on_preload("GNU libgomp (/lib/x86_64-linux-gnu/libgomp.so.1), OpenMP 201511")
    assert not cell.runs_on_preload(None)


def test_omp_ult_fails_every_run_that_fell_back_to_libgomp(fake_apps: Path) -> None:
    """The fake gomp program reports 'fake gomp' as its runtime, as a real
    one reports libgomp when the preload did not take effect."""
    library = fake_apps / "libthreadlab-gomp.so"
    library.write_bytes(b"")
    _manifest_omp_ult(fake_apps, {"program": "threadlab-app-gomp", "preload": "libthreadlab-gomp.so"})
    plan = _plan(threads=[1], runs=2, design="platform", levels={"platform": ["omp-ult"]}, kernel_names=["pi"])
    # The empty file is no ELF object: the loader says so, ignores it, and
    # the program runs as it would without it.
    result = _run(plan)
    (time_record,) = [r for r in result.records if r["metric"] == "time"]
    assert time_record["status"] == "failed" and schema.record_problems(time_record) == []
    assert time_record["reason"].startswith("ran on fake gomp, not on the preloaded")
    check = next(c for c in time_record["checks"] if c["name"] == "runtime")
    assert not check["ok"] and check["detail"].startswith("2 of 2 runs did not run on the preloaded")


def test_omp_ult_without_its_library_or_manifest_entry_is_unsupported(fake_apps: Path) -> None:
    _manifest_omp_ult(fake_apps, {"program": "threadlab-app-gomp", "preload": "../lib/libthreadlab-gomp.so"})
    programs = apps.discover_programs()
    assert programs.path("omp-ult", "64") is None
    assert programs.reason("omp-ult", "64").startswith("libthreadlab-gomp.so, which threadlab-app-gomp runs with "
                                                       "preloaded, is missing")
    _manifest_omp_ult(fake_apps, {"program": None, "preload": None, "reason": "no OpenMP (fake)"})
    assert apps.discover_programs().reason("omp-ult", "64") == "no OpenMP (fake)"


def test_run_order_is_random_but_seeded(fake_apps: Path) -> None:
    first, again, other = _plan(seed=11), _plan(seed=11), _plan(seed=12)
    cells = [job.cell for job in first.jobs]
    assert cells == [job.cell for job in again.jobs]
    assert cells != [job.cell for job in other.jobs]
    assert cells != sorted(cells)  # interleaved, not cell after cell
    assert first.options()["seed"] == 11


def test_sizes_runs_and_modes(fake_apps: Path) -> None:
    assert {k: v for k, v in _plan().sizes.items()} == {"mips": 4000, "mflops": 4000, "pi": 1000, "trapezoid": 1000}
    assert _plan(quick=True).sizes["pi"] == 100 and _plan(quick=True).runs == apps.QUICK_RUNS
    assert _plan(paper=True).sizes["mips"] == 10**10 and _plan().runs == apps.DEFAULT_RUNS == 33
    assert _plan(sizes={"pi": 77}).sizes["pi"] == 77
    with pytest.raises(UserError, match="multiple of 4"):
        _plan(sizes={"mips": 10})
    with pytest.raises(UserError, match="exclude each other"):
        _plan(quick=True, paper=True)
    assert _plan(cpus=[0, 1, 2]).threads == [1, 2, 3]  # 1 to the number of CPUs by default


# ---------------------------------------------------------------- statistics


def _fieller_by_search(x: np.ndarray, y: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The Fieller set found by scanning rho, not by solving the quadratic."""
    vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    rho_hat = x.mean() / y.mean()
    df = (vx + rho_hat**2 * vy) ** 2 / (vx**2 / (x.size - 1) + rho_hat**4 * vy**2 / (y.size - 1))
    t = scipy_stats.t.ppf(0.5 + confidence / 2, df)
    grid = np.linspace(rho_hat * 0.5, rho_hat * 1.5, 200001)
    inside = grid[(x.mean() - grid * y.mean()) ** 2 <= t**2 * (vx + grid**2 * vy)]
    return float(inside.min()), float(inside.max())


def test_ratio_of_means_fieller_on_fixed_data() -> None:
    x = np.array([2.0, 4.0, 6.0])  # mean 4, var 4
    y = np.array([1.0, 2.0, 3.0])  # mean 2, var 1
    ratio, interval = stats.ratio_of_means(x, y)
    assert ratio == 2.0
    # By hand: vx = 4/3, vy = 1/3, df = (8/3)^2 / (16/9) = 4, t = 2.776445;
    # a = 4 - t^2/3, b = 8, c = 16 - 4t^2/3, rho = (b +- sqrt(b^2 - ac)) / a.
    t = 2.7764451051977987
    a, b, c = 4 - t * t / 3, 8.0, 16 - 4 * t * t / 3
    low, high = (b - math.sqrt(b * b - a * c)) / a, (b + math.sqrt(b * b - a * c)) / a
    assert interval is not None and interval.method == "fieller"
    assert interval.low == pytest.approx(low, rel=1e-9) and interval.high == pytest.approx(high, rel=1e-9)
    assert interval.low == pytest.approx(0.36984, abs=1e-4) and interval.high == pytest.approx(10.8147, abs=1e-3)
    # Times of a speedup study: 1 thread about twice 2 threads.
    t1 = np.array([0.101, 0.102, 0.100, 0.103, 0.101, 0.099, 0.100, 0.102])
    t2 = np.array([0.0508, 0.0512, 0.0503, 0.0515, 0.0507, 0.0510, 0.0501, 0.0509])
    ratio, interval = stats.ratio_of_means(t1, t2)
    assert ratio == pytest.approx(t1.mean() / t2.mean())
    low, high = _fieller_by_search(t1, t2)
    assert interval.low == pytest.approx(low, abs=1e-5) and interval.high == pytest.approx(high, abs=1e-5)
    assert interval.low < ratio < interval.high


def test_ratio_of_means_edge_cases() -> None:
    assert stats.ratio_of_means([1.0, 1.0], [2.0, 2.0])[1].low == 0.5  # no spread: a point
    assert stats.ratio_of_means([1.0], [2.0, 3.0]) == (0.4, None)  # one value: no interval
    assert stats.ratio_of_means([1.0, 2.0], [0.0, 0.0]) == (None, None)
    # A denominator indistinguishable from zero: unbounded set, no interval.
    ratio, interval = stats.ratio_of_means([1.0, 1.1, 0.9], [-1.0, 1.0, 0.5])
    assert ratio is not None and interval is None


def test_ratio_of_means_of_positive_values_is_never_negative() -> None:
    # 2 noisy runs: the numerator's mean is not significantly above 0, so
    # Fieller's lower root is negative; for times the ratio is at least 0
    x, y = [0.2, 3.0], [1.0, 1.1]
    ratio, interval = stats.ratio_of_means(x, y)
    assert ratio == pytest.approx(1.6 / 1.05) and interval is not None
    assert interval.low == 0.0 and interval.high > ratio
    # with a value of either sign the root stands as Fieller gives it
    _, signed = stats.ratio_of_means([-0.2, 3.0], y)
    assert signed is not None and signed.low < 0


def test_ratio_of_means_covers_the_true_ratio_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(2024)
    covered = 0
    trials = 1500
    for _ in range(trials):
        x = rng.normal(1.0, 0.05, 33)
        y = rng.normal(0.5, 0.04, 33)
        _, interval = stats.ratio_of_means(x, y)
        covered += interval.contains(2.0)
    assert abs(covered / trials - 0.95) < 0.02


# ------------------------------------------------------------------ records


def _filled_plan(times: dict[tuple[str, int], list[float]], **kwargs: Any) -> apps.Plan:
    """A plan whose cells hold fixed times, keyed by (scenario label, threads)."""
    plan = _plan(threads=[1, 2], runs=len(next(iter(times.values()))), **kwargs)
    for cell in plan.cells:
        samples = times.get((cell.scenario.label, cell.threads))
        if samples is None or cell.unsupported:
            continue
        for value in samples:
            apps.record_outcome(cell, apps.Outcome("ok", None, {
                "time_s": value, "error": 0.0, "error_bound": 0.0, "pinned": cell.scenario.affinity == "pinned",
                "placement_ok": True, "priority_ok": True, "policy": "SCHED_OTHER", "nice": 0,
                "runtime": "fake"}, value + 0.003))
    return plan


def _records(plan: apps.Plan) -> list[dict[str, Any]]:
    return [record for cell in plan.cells for record in apps.cell_records(cell, plan)]


def test_cell_records_follow_the_format(fake_apps: Path) -> None:
    t1, t2 = [0.10, 0.11, 0.12], [0.05, 0.06, 0.055]
    plan = _filled_plan({("pthread 64-bit normal pinned", 1): t1, ("pthread 64-bit normal pinned", 2): t2},
                        kernel_names=["pi"], design="affinity,arch")
    records = _records(plan)
    assert all(schema.record_problems(r) == [] for r in records)
    assert {r["benchmark"] for r in records} == {"study.apps.pi"}
    by = {(r["params"]["arch"], r["params"]["affinity"], r["params"]["threads"], r["metric"]): r for r in records}
    time_record = by[("64", "pinned", "2", "time")]
    assert time_record["model"] == "pthread" and time_record["placement"] == "different-cpus"
    assert time_record["cpus"] == [0, 1] and time_record["unit"] == "s" and time_record["samples"] == t2
    assert time_record["params"] == {"arch": "64", "priority": "normal", "affinity": "pinned", "threads": "2",
                                     "size": "1000"}
    assert {c["name"]: c["ok"] for c in time_record["checks"]} == {"verified": True, "placement": True}
    assert time_record["stop"]["rule"] == "fixed" and time_record["stop"]["max_timings"] == 3
    rate = by[("64", "pinned", "1", "rate")]
    assert rate["unit"] == "Mterms/s" and rate["samples"] == pytest.approx([1000 / t / 1e6 for t in t1])
    assert by[("64", "pinned", "1", "process")]["samples"] == pytest.approx([t + 0.003 for t in t1])
    # The cells nobody measured here were not run: no samples, so failed.
    assert by[("64", "os", "1", "time")]["status"] == "failed"
    assert by[("64", "os", "1", "time")]["placement"] == "unbound" and by[("64", "os", "1", "time")]["cpus"] == [None]


def test_speedups_and_priority_effects_on_fixed_data(fake_apps: Path) -> None:
    t1 = [0.100, 0.102, 0.101, 0.099, 0.103]
    t2 = [0.0505, 0.0511, 0.0502, 0.0509, 0.0507]
    nice1 = [0.104, 0.106, 0.105, 0.107, 0.103]
    nice2 = [0.0504, 0.0510, 0.0503, 0.0506, 0.0508]
    plan = _filled_plan({("pthread 64-bit normal os", 1): t1, ("pthread 64-bit normal os", 2): t2,
                         ("pthread 64-bit nice-20 os", 1): nice1, ("pthread 64-bit nice-20 os", 2): nice2},
                        kernel_names=["mips"], design="priority", levels={"priority": ["normal", "nice-20"]})
    records = _records(plan)
    rows = tables.speedups(records)
    assert [(r["priority"], r["threads"]) for r in rows] == [("normal", 2), ("nice-20", 2)]
    expected_ratio, expected_interval = stats.ratio_of_means(t1, t2)
    assert rows[0]["speedup"] == pytest.approx(np.mean(t1) / np.mean(t2))
    assert (rows[0]["low"], rows[0]["high"]) == pytest.approx((expected_interval.low, expected_interval.high))
    assert rows[0]["median_speedup"] == pytest.approx(np.median(t1) / np.median(t2))
    effects = tables.priority_effects(tables.collect(records))
    assert [(row[0][2], row[2]) for row in effects] == [("nice-20", 1), ("nice-20", 2)]
    effect = effects[0][3]["mips"]
    assert effect.ratio == pytest.approx(np.mean(nice1) / np.mean(t1))
    assert effect.p == pytest.approx(scipy_stats.ttest_ind(nice1, t1, equal_var=False).pvalue)
    assert effect.p < 0.05


def test_tables_render_every_section(fake_apps: Path) -> None:
    from threadlab.output.table import make_console
    import io

    plan = _filled_plan({("pthread 64-bit normal os", 1): [0.1, 0.11], ("pthread 64-bit normal os", 2): [0.05, 0.06],
                         ("pthread 64-bit idle os", 1): [0.1, 0.12], ("pthread 64-bit idle os", 2): [0.07, 0.06]},
                        kernel_names=["pi"], design="priority,arch", levels={"priority": ["normal", "idle"]})
    out = io.StringIO()
    tables.render(make_console(out), _records(plan), title="Study")
    text = out.getvalue()
    for expected in ("Scenarios (de Sá et al.'s Table I)", "Speedup of pi (1e+03 terms) over 1 thread",
                     "Time and rate of pi", "Effect of priority (de Sá et al.'s Table VI)", "2 pthread idle vs 1",
                     "FAILED"):
        assert expected in text, expected
    assert f"{0.105 / 0.055:.3f} [" in text  # the speedup with its interval


# ----------------------------------------------------------------- running


def _run(plan: apps.Plan) -> Result:
    return apps.run_study(plan, lambda cell, record: None, JobProgress(len(plan.jobs), enabled=False))


def test_every_outcome_of_a_run(fake_apps: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_APP_MODE", "mips=wrong,mflops=crash,pi=hang,trapezoid=unsupported")
    plan = _plan(threads=[1], runs=2, design="none", timeout_s=1.0)
    result = _run(plan)
    by = {r["benchmark"].split(".")[-1]: r for r in result.records if r["metric"] == "time"}
    assert all(schema.record_problems(r) == [] for r in result.records)
    # A wrong result is measured, and flagged.
    mips = by["mips"]
    assert mips["status"] == "ok" and mips["summary"]["n"] == 2
    check = next(c for c in mips["checks"] if c["name"] == "verified")
    assert not check["ok"] and "2 of 2 runs returned a wrong result" in check["detail"]
    # A crash and a hang measure nothing: failed, with the reason.
    assert by["mflops"]["status"] == "failed" and "killed by SIGSEGV: fake: about to crash" in by["mflops"]["reason"]
    assert by["pi"]["status"] == "failed" and by["pi"]["reason"] == "timed out after 1 s"
    # A program that says 'unsupported' makes its cell unsupported.
    assert by["trapezoid"]["status"] == "unsupported" and by["trapezoid"]["reason"] == "fake: not here"
    assert result.done == 2 * 3 + 1  # the unsupported cell's second run is not tried


def test_a_run_without_a_positive_time_fails(fake_apps: Path, tmp_path: Path) -> None:
    """The rate divides by the time: a result whose time_s is 0 is a failed
    run, not a sample (its records stay valid)."""
    from threadlab.native.process import StopRequest

    plan = _plan(threads=[1], runs=1, design="none", kernel_names=["pi"])
    cell = plan.cells[0]
    cell.program = tmp_path / "threadlab-app-zero"
    cell.program.write_text("#!/bin/sh\necho '{\"status\": \"ok\", \"time_s\": 0}'\n")
    cell.program.chmod(0o755)
    outcome = apps.run_once(cell, 10.0, StopRequest())
    assert outcome is not None and outcome.kind == "failed"
    apps.record_outcome(cell, outcome)
    records = apps.cell_records(cell, plan)
    assert [r["status"] for r in records] == ["failed"] * 3 and all(schema.record_problems(r) == [] for r in records)


# ---------------------------------------------------------------- the CLI


@pytest.mark.heavy
def test_study_apps_end_to_end_with_fake_programs(fake_apps: Path, run_cli: RunCli, db_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_APP_REFUSE", "fifo")
    code, out, err = run_cli("study", "apps", "--runs", "3", "--factors", "priority,platform",
                             "--priority", "normal,fifo", "--platform", "pthread,gomp", "--name", "fake-study",
                             "--seed", "5")
    assert code == 0, err
    assert "study apps: 3 scenarios x 4 kernels x 2 thread counts = 24 cells (8 unsupported here)" in err
    assert "Speedup of mips" in out and "Effect of priority" not in out  # fifo could not run
    records = stored_records(db_path)
    assert len(records) == 24 * 3
    fifo = [r for r in records if r["params"]["priority"] == "fifo"]
    assert fifo and all(r["status"] == "unsupported" and "Operation not permitted" in r["reason"] for r in fifo)
    measured = [r for r in records if r["status"] == "ok"]
    assert len(measured) == 16 * 3 and all(r["summary"]["n"] == 3 for r in measured)
    code, out, _ = run_cli("runs", "--json")
    run = json.loads(out.splitlines()[0])
    assert run["name"] == "fake-study" and run["status"] == "complete"
    code, out, _ = run_cli("show", "fake-study")
    assert code == 0 and "Scenarios (de Sá et al.'s Table I)" in out and "Speedup of trapezoid" in out
    code, out, _ = run_cli("study", "apps", "--runs", "2", "--factors", "none", "--kernels", "pi", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["kernel"], r["platform"], r["threads"]) for r in rows] == [("pi", "pthread", 2)]


def test_study_apps_dry_run_and_exit_status(fake_apps: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run_cli("study", "apps", "--dry-run", "--seed", "1")
    assert code == 0
    assert "# scenario 1: pthread 64-bit normal os" in out
    assert "--run study.apps.mips --placement unbound --param threads=1 --param size=4000 --param priority=normal" in out
    assert "# unsupported: mips llvmomp 32-bit normal os threads=1: no 32-bit LLVM libomp (fake)" in out
    assert "23 scenarios" in err
    monkeypatch.setenv("FAKE_APP_MODE", "pi=wrong")
    code, _, err = run_cli("study", "apps", "--runs", "1", "--factors", "none", "--kernels", "pi,mips", "--quiet")
    assert code == 1  # a wrong result fails the study


@pytest.mark.parametrize("args,words", [
    (["--factors", "platform*os"], "--factors platform*os: unknown factor 'os'"),
    (["--priority", "nice:-30"], "--priority nice:-30: expected normal"),
    (["--threads", "0"], "--threads 0: expected thread counts from 1"),
    (["--runs", "0"], "--runs 0: expected an integer from 1 to 100000"),
    (["--quick", "--paper"], "--quick and --paper exclude each other"),
    (["--kernels", "fft"], "--kernels fft: unknown kernel 'fft'"),
    (["--size", "mips=3"], "--size mips=3: mips counts operations in items of 4"),
    (["--platform", "winapi"], "--platform winapi: expected one of pthread, c11, gomp, llvmomp, ult, omp-ult"),
])
def test_bad_input_is_refused_in_one_line(fake_apps: Path, run_cli: RunCli, args: list[str], words: str) -> None:
    code, out, err = run_cli("study", "apps", "--dry-run", *args)
    assert code == 2, (out, err)
    assert err.startswith("threadlab: error: ") and words in err and "Traceback" not in err


def test_study_needs_a_study_name(run_cli: RunCli) -> None:
    code, _, err = run_cli("study")
    assert code == 2 and "a study is required: apps" in err


def test_no_programs_is_a_clear_error(run_cli: RunCli) -> None:
    code, _, err = run_cli("study", "apps", "--dry-run")
    assert code == 1 and "no application programs (threadlab-app-*)" in err


def test_ctrl_c_keeps_the_measured_cells(fake_apps: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_APP_TIME", "0.5")
    process = threadlab_process("study", "apps", "--runs", "6", "--factors", "none", "--kernels", "pi,mips",
                                "--threads", "1", "--seed", "3", "--quiet")
    # Once the run exists, let a few runs happen (interleaved, they finish
    # no cell before most of the study is done), then interrupt.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(db_path) as connection:
                if connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0]:
                    break
        except sqlite3.OperationalError:
            pass
        time.sleep(0.05)
    time.sleep(1.5)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "interrupted after" in err and "the measured cells are stored" in err
    records = stored_records(db_path)
    assert records and all(r["status"] == "ok" for r in records)
    assert all(1 <= r["summary"]["n"] < 6 for r in records)
    assert "Speedup" not in out  # one thread count: no speedups
    assert "Time and rate of pi" in out or "Time and rate of mips" in out
