"""Steady state (`[run] steady`): the warm-up of every dbperf-driver cell lasts until the cell's throughput has
settled, instead of a fixed time. The driver decides (driver/src/steady.rs): it samples the events completed by
all threads together every `interval`, and ends the warm-up at the first sample, at least `warmup` after the start,
where the last `window` samples agree within `tolerance`: (max - min) / mean <= tolerance. At `max_warmup` it ends
the warm-up anyway and the cell says it **never settled** (kept, flagged `w` in reports, and under
`repeats = "auto"` its round counts like an interfered one: run again while the budget lasts).

    steady = true                                     # the defaults below
    steady = { tolerance = 0.05, window = 3, interval = "1s", max_warmup = "30s" }
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dbperf.errors import UserError
from dbperf.experiment.durations import parse_duration
from dbperf.records import SteadyJob

DEFAULT_TOLERANCE = 0.05
DEFAULT_WINDOW = 3
DEFAULT_INTERVAL_S = 1.0
DEFAULT_MAX_WARMUP_S = 30.0
FIELDS = ("tolerance", "window", "interval", "max_warmup")


@dataclass(frozen=True)
class SteadyState:
    tolerance: float = DEFAULT_TOLERANCE
    window: int = DEFAULT_WINDOW
    interval_s: float = DEFAULT_INTERVAL_S
    max_warmup_s: float = DEFAULT_MAX_WARMUP_S

    def least_warmup_s(self, warmup_s: float) -> float:
        """The shortest a warm-up can be: the minimum warm-up, and `window` samples."""
        return max(warmup_s, self.window * self.interval_s)

    def job(self) -> SteadyJob:
        return SteadyJob(tolerance=self.tolerance, window=self.window, interval_s=self.interval_s,
                         max_warmup_s=self.max_warmup_s)

    def describe(self) -> dict[str, Any]:
        """For meta.json."""
        return {"rule": "(max - min) / mean of the last `window` throughput samples <= tolerance",
                "tolerance": self.tolerance, "window": self.window, "interval_s": self.interval_s,
                "max_warmup_s": self.max_warmup_s}


def check_steady(value: Any, where: str) -> SteadyState | None:
    """The key's own check: true/false or a table of the four settings (each optional)."""
    if isinstance(value, bool):
        return SteadyState() if value else None
    if not isinstance(value, dict):
        raise UserError(f"{where}: expected true, false or a table such as {{ tolerance = 0.05, window = 3, "
                        f"interval = \"1s\", max_warmup = \"30s\" }}, got {value!r}")
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise UserError(f"{where}: unknown setting {unknown[0]!r} (known: {', '.join(FIELDS)})")
    tolerance = value.get("tolerance", DEFAULT_TOLERANCE)
    if (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not math.isfinite(tolerance)
            or not 0 < tolerance < 1):
        raise UserError(f"{where}.tolerance: expected a fraction above 0 and below 1 such as 0.05, got {tolerance!r}")
    window = value.get("window", DEFAULT_WINDOW)
    if isinstance(window, bool) or not isinstance(window, int) or not 2 <= window <= 1000:
        raise UserError(f"{where}.window: expected an integer from 2 to 1000 (samples), got {window!r}")
    interval = parse_duration(value.get("interval", DEFAULT_INTERVAL_S), f"{where}.interval")
    if interval < 0.05:
        raise UserError(f"{where}.interval: must be at least 50ms (a sample needs events in it)")
    max_warmup = parse_duration(value.get("max_warmup", DEFAULT_MAX_WARMUP_S), f"{where}.max_warmup")
    return SteadyState(float(tolerance), window, interval, max_warmup)


def steady_with_warmup(steady: SteadyState | None, warmup_s: float, where: str) -> SteadyState | None:
    """The cross-check with `warmup` (the least warm-up): max_warmup must leave room for the rule to be met."""
    if steady is not None and steady.max_warmup_s < steady.least_warmup_s(warmup_s):
        raise UserError(f"{where}.steady.max_warmup: {steady.max_warmup_s:g} s is shorter than the least warm-up "
                        f"({steady.least_warmup_s(warmup_s):g} s: warmup, and {steady.window} samples of "
                        f"{steady.interval_s:g} s), so the cell could never settle")
    return steady
