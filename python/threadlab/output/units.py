"""Formatting of measured values: the one place that scales units.

Time units are rescaled so a value reads with at most three digits before
the point (0.667 ns, 3.71 µs, 12.4 ms); any other unit is printed as
recorded, since the front end cannot know how it scales.
"""

from __future__ import annotations

import math

# Nanoseconds per unit, for every time unit a record may carry.
_TIME_UNITS_NS: dict[str, float] = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
# Display scales, largest first.
_TIME_SCALES: tuple[tuple[str, float], ...] = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))


def is_time_unit(unit: str) -> bool:
    return unit in _TIME_UNITS_NS


def to_ns(value: float, unit: str) -> float:
    """The value in nanoseconds; the unit must be a time unit."""
    return value * _TIME_UNITS_NS[unit]


def format_number(value: float) -> str:
    """Three significant digits, without exponent for everyday magnitudes."""
    if value is None or not math.isfinite(value):
        return "—"
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    if magnitude >= 1e6 or magnitude < 1e-3:
        return f"{value:.3g}"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def scale_time(value_ns: float) -> tuple[float, str]:
    """(value, unit) with the largest unit in which the value is at least 1."""
    magnitude = abs(value_ns)
    for unit, factor in _TIME_SCALES:
        if magnitude >= factor:
            return value_ns / factor, unit
    return value_ns, "ns"


def format_value(value: float | None, unit: str) -> str:
    """A value with its unit, time values auto-scaled: '3.71 µs', '12 switches'."""
    if value is None or not math.isfinite(value):
        return "—"
    if is_time_unit(unit):
        scaled, shown_unit = scale_time(to_ns(value, unit))
        return f"{format_number(scaled)} {shown_unit}"
    return f"{format_number(value)} {unit}"


def format_relative(fraction: float | None) -> str:
    """A relative spread as '±4.2%' ('' when unknown, e.g. one sample)."""
    if fraction is None or not math.isfinite(fraction):
        return ""
    percent = 100.0 * fraction
    return f"±{percent:.1f}%" if percent < 10 else f"±{percent:.0f}%"


def format_duration(seconds: float | None) -> str:
    """Elapsed time as 'm:ss' or 'h:mm:ss' (progress, run durations)."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "?"
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
