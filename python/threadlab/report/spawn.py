"""The report's section of `threadlab study spawn`: the seed's Figure 2 (a),
the time of a CilkSort per thread limit, one bar per input, with 95%
intervals, process-only (plain MPI) first."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from threadlab.analysis import stats
from threadlab.report import figures as fig
from threadlab.report import html
from threadlab.records.store import RunInfo


def spawn_section(maker: Any, run: RunInfo, records: Sequence[Mapping[str, Any]]) -> str:
    from threadlab.study import tables_spawn
    from threadlab.study.spawn import PROCESS_ONLY

    cells, inputs, limits = tables_spawn.collect(records)
    if not cells:
        return ""
    bars = []
    for limit in limits:
        row = limit if limit == PROCESS_ONLY else f"limit {limit}"
        for index, name in enumerate(inputs):
            record = cells.get(("time", name, limit))
            if record is None:
                continue
            colour = fig.PALETTE[index % len(fig.PALETTE)]
            samples = record.get("samples") or []
            if record.get("status") != "ok" or not samples:
                bars.append(fig.Bar(row, name, colour, None, None, None, "FAILED"))
                continue
            interval = stats.mean_ci(samples)
            bars.append(fig.Bar(row, name, colour, sum(samples) / len(samples), interval.low if interval else None,
                                interval.high if interval else None))
    n = next(iter(cells.values()))["params"].get("n", "?")
    rendered = fig.bar_figure(maker.name(f"run{run.id}-spawn-cilksort"),
                              f"CilkSort of {n} integers: time per thread limit", bars, "s", maker.out_dir)
    rendered.caption = (f"{run.label}: mean time of a CilkSort per thread limit of libthreadlab-spawn and with "
                        "plain MPI (process-only), one bar per input, with the 95% Student t interval across runs "
                        "(the seed's Figure 2 (a)); FAILED: no run finished (a hung spawn, or a cell that cannot "
                        "finish here: its record says why).")
    return f"<h3>{html.e(run.label)}: CilkSort over MPI_Comm_spawn</h3>" + maker.html(rendered)
