"""Statistics of raw timings: the one module every command computes with.

For now it holds the summary the results table needs.  The front end
recomputes it from the record's raw samples instead of trusting the
producer's summary, so every producer (C, JVM, Go) is summarised the same
way; schema.py checks that the two agree.

Later this module grows confidence intervals, robust statistics (IQM, MAD,
outliers) and the two-sample tests used by `threadlab compare`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class Summary:
    """The summary of one data point, in the record's unit.

    sd, rsd, se and rse are None for a single value (a derived record or
    n = 1), where a spread does not exist.
    """

    n: int
    mean: float
    sd: float | None
    rsd: float | None
    se: float | None
    rse: float | None
    median: float
    min: float
    max: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _relative(spread: float | None, mean: float) -> float | None:
    if spread is None or mean == 0:
        return None
    return spread / abs(mean)


def summarize(samples: Sequence[float]) -> Summary:
    """Summary of raw samples (sample standard deviation, ddof = 1)."""
    values = np.asarray(samples, dtype=np.float64)
    if values.size == 0:
        raise ValueError("cannot summarise zero samples")
    n = int(values.size)
    mean = float(values.mean())
    sd = float(values.std(ddof=1)) if n > 1 else None
    se = sd / math.sqrt(n) if sd is not None else None
    return Summary(
        n=n,
        mean=mean,
        sd=sd,
        rsd=_relative(sd, mean),
        se=se,
        rse=_relative(se, mean),
        median=float(np.median(values)),
        min=float(values.min()),
        max=float(values.max()),
    )


def record_summary(record: Mapping[str, Any]) -> Summary | None:
    """Summary of a record: from its samples, or the producer's summary for a
    derived record (no samples of its own); None when nothing was measured."""
    samples = record.get("samples") or []
    if samples:
        return summarize(samples)
    given = record.get("summary")
    if record.get("status") != "ok" or not given:
        return None
    return Summary(
        n=int(given["n"]),
        mean=float(given["mean"]),
        sd=given.get("sd"),
        rsd=given.get("rsd"),
        se=given.get("se"),
        rse=given.get("rse"),
        median=float(given["median"]),
        min=float(given["min"]),
        max=float(given["max"]),
    )
