"""`threadlab report`: the page, its figures, studies, the output
directory, and the page rendered in headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from cdp import find_chromium, load_page
from synthetic import derived, failed, pingpong_run, point, store_run, timings
from conftest import measured

RunCli = Callable[..., tuple[int, str, str]]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _study_records() -> list[dict[str, Any]]:
    """A study as the application-study feature writes it: benchmark names
    under study., a numeric threads param, one point per thread count."""
    records = []
    for threads, median in ((1, 1.0e9), (2, 0.5e9), (4, 0.3e9)):
        for kernel in ("pi", "trapezoid"):
            records.append(measured("study.apps.kernel", timings(median, 10, seed=threads), placement="unbound",
                                    params={"kernel": kernel, "threads": str(threads)}))
    return records


@pytest.fixture
def two_runs(db_path: Path) -> None:
    extra = [derived("pthread.logp", "same-cpu", 900.0, metric="L"), failed("pthread.barrier", "unbound")]
    checkfail = point("pthread.yield.pingpong", "same-cpu", 700.0, seed=9)
    checkfail["checks"] = [{"name": "alternated", "ok": False, "value": 0.0, "detail": "the yields did not alternate"}]
    store_run(db_path, pingpong_run() + extra + [checkfail] + _study_records(), name="base")
    store_run(db_path, pingpong_run(scale=1.25, seed=10) + _study_records(), name="next")


def _report(run_cli: RunCli, out: Path, *runs: str) -> str:
    code, stdout, err = run_cli("report", *runs, "-o", str(out))
    assert code == 0, err
    assert stdout.startswith(f"Report: {(out / 'index.html').resolve()}")
    return (out / "index.html").read_text()


@pytest.mark.heavy
def test_a_self_contained_page_with_every_section(two_runs: None, tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "report"
    page = _report(run_cli, out, "base", "next")
    for anchor in ("overview", "comparisons", "results", "distributions", "studies", "environment"):
        assert f'id="{anchor}"' in page
    # the first screen: machine, warnings, overview
    assert page.index("Machine: vm") < page.index("Warnings (") < page.index('id="overview"')
    for fact in ("Test CPU @ 2.0GHz", "Linux 6.1.0-test x86_64", "kvm", "8.0 GiB"):
        assert fact in page
    assert "virtual machine (kvm)" in page
    assert "run 1 (base): 1 point failed (no measurement)" in page
    assert "run 1 (base): 1 point with a failed check" in page
    # comparison table: run 2 against run 1
    assert "Comparison — A: run 1 (base) on vm; B: run 2 (next) on vm" in page
    assert 'class="slower"' in page
    # nothing from the network, no script
    assert "<script" not in page and "<link rel=\"stylesheet\"" not in page
    assert not re.search(r'(src|href)="https?:', page)
    # figures: inline SVG in the page, a PNG file each
    figures = re.findall(r'<figure class="plot" id="fig-([^"]+)"', page)
    pngs = sorted(p.stem for p in (out / "figures").glob("*.png"))
    assert sorted(figures) == pngs and len(pngs) >= 8
    for png in (out / "figures").glob("*.png"):
        data = png.read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 2000
    assert page.count("<svg ") == len(figures)
    assert any(name.startswith("run1-ecdf-pthread-mutex-pingpong") for name in figures)
    assert any("speedup-study-apps-kernel" in name for name in figures)


def test_study_speedups_over_one_thread(two_runs: None, tmp_path: Path, run_cli: RunCli) -> None:
    page = _report(run_cli, tmp_path / "r", "base")
    section = page[page.index('id="studies"'):page.index('id="environment"')]
    rows = re.findall(r"<tr><td>(pthread kernel=(?:pi|trapezoid) \[unbound\])</td><td class=\"num\">(\d)</td>.*?"
                      r"<td class=\"num\">([\d.]+)(?: \[([\d.]+), ([\d.]+)\])?</td><td class=\"num\">(\d+)%</td>", section)
    speedups = {(label.split()[1], int(threads)): float(s) for label, threads, s, *_ in rows}
    assert speedups[("kernel=pi", 1)] == pytest.approx(1.0)
    assert speedups[("kernel=pi", 2)] == pytest.approx(2.0, rel=0.05)
    assert speedups[("kernel=trapezoid", 4)] == pytest.approx(3.33, rel=0.05)
    assert all(int(r[5]) > 0 for r in rows)


def test_one_run_report_has_no_comparison(two_runs: None, tmp_path: Path, run_cli: RunCli) -> None:
    page = _report(run_cli, tmp_path / "one")  # the default run: latest
    assert 'id="comparisons"' not in page and "run 2 (next)" in page


def test_the_output_directory(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    store_run(db_path, [point("pthread.empty", "none", 0.7)], name="tiny")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    code, _, err = run_cli("report", "-o", str(foreign))
    assert code == 2 and "holds other files" in err
    assert (foreign / "notes.txt").read_text() == "mine"
    out = tmp_path / "again"
    _report(run_cli, out, "tiny")
    stale = out / "figures" / "stale.png"
    stale.write_bytes(b"old")
    _report(run_cli, out, "tiny")  # a previous report's directory is reused, its old figures go
    assert not stale.exists() and list((out / "figures").glob("*.png"))
    code, _, err = run_cli("report", "tiny", "1", "-o", str(out))
    assert code == 2 and "given twice" in err
    code, _, err = run_cli("report", "-o", str(out / "index.html"))
    assert code == 2 and "exists and is not a directory" in err


def test_report_of_an_imported_bare_run_says_the_environment_is_unknown(tmp_path: Path, run_cli: RunCli) -> None:
    bare = tmp_path / "records.jsonl"
    bare.write_text("".join(json.dumps(r) + "\n" for r in pingpong_run()))
    assert run_cli("import", str(bare))[0] == 0
    page = _report(run_cli, tmp_path / "bare")
    assert "imported from bare records: the environment was not recorded" in page


CHROMIUM = find_chromium()


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (scripts/install-deps.sh installs Debian's chromium)")
@pytest.mark.heavy
def test_the_page_renders_in_headless_chromium(two_runs: None, tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "browser"
    page = _report(run_cli, out, "base", "next")
    expected = len(re.findall(r'<figure class="plot"', page))
    probe = """JSON.stringify({
      title: document.title,
      headings: [...document.querySelectorAll('h2')].map(h => h.id || h.textContent),
      figures: [...document.querySelectorAll('figure.plot')].map(f => {
        const svg = f.querySelector('svg'); const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
        return {name: f.dataset.figure, marks: svg ? svg.querySelectorAll('path, use, rect, line, text').length : 0,
                width: box.width, height: box.height};
      }),
      overviewRows: document.querySelectorAll('#overview-table tbody tr').length,
      firstScreen: [...document.querySelectorAll('.cards .card h2')].map(h => h.textContent),
    })"""
    shot = tmp_path / "first-screen.png"
    result = load_page(CHROMIUM, (out / "index.html").resolve().as_uri(), tmp_path / "profile", shot,
                       expression=probe)
    assert result["problems"] == []
    found = json.loads(result["value"])
    assert found["title"] == "threadlab report"
    assert found["firstScreen"][0] == "Machine: vm" and found["firstScreen"][1].startswith("Warnings")
    assert found["overviewRows"] >= 6
    assert len(found["figures"]) == expected >= 8
    for figure in found["figures"]:
        assert figure["marks"] > 10, figure
        assert figure["width"] > 200 and figure["height"] > 80, figure
    data = shot.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000


def test_a_two_count_study_is_drawn_as_bars_of_the_speedup(db_path: Path, tmp_path: Path, run_cli: RunCli) -> None:
    """The study's own layout: 1 and T threads per scenario; size may differ
    between the points of a series (it is not part of the series)."""
    records = []
    for scenario, (platform, placement) in enumerate((("pthread", "unbound"), ("gomp", "different-cpus"))):
        for threads, median, size in ((1, 2.0, "600"), (2, 1.0 + scenario * 0.2, "600")):
            for metric in ("time", "process"):
                records.append(measured("study.apps.pi", timings(median, 8, seed=threads + scenario), placement=placement,
                                        model=platform, metric=metric, unit="s",
                                        params={"threads": str(threads), "size": size, "arch": "64"}))
    store_run(db_path, records, name="study")
    page = _report(run_cli, tmp_path / "study")
    section = page[page.index('id="studies"'):page.index('id="environment"')]
    assert section.count("<tr><td>") == 4  # two series x two thread counts, metric time only
    assert "gomp arch=64 [different CPUs]" in section and "pthread arch=64 [unbound]" in section
    assert 'data-figure="run1-speedup-study-apps-pi"' in section
    speedups = [float(s) for s in re.findall(r"<td class=\"num\">(\d\.\d\d) \[", section)]
    assert speedups == pytest.approx([1.0, 2.0, 1.0, 1.67], rel=0.05), speedups
