"""The metrics (dbperf/metrics/metric.py), one a file, and `named`: a metric's name resolved once, where it comes in
(a command-line flag, a file's field), or refused in one line."""

from __future__ import annotations

from collections.abc import Callable

from dbperf.errors import UserError
from dbperf.metrics.cpu import CPU
from dbperf.metrics.metric import Metric
from dbperf.metrics.simulated import SIMULATED
from dbperf.metrics.wall import WALL

METRICS: dict[str, Metric] = {m.name: m for m in (WALL, CPU, SIMULATED)}

__all__ = ["CPU", "METRICS", "SIMULATED", "WALL", "Metric", "among", "named"]


def among(fits: Callable[[Metric], bool]) -> list[Metric]:
    """The metrics that fit (`lambda m: m.bisects`: those a bisect can be decided by)."""
    return [m for m in METRICS.values() if fits(m)]


def named(name: str, fits: Callable[[Metric], bool] = lambda m: True, flag: str = "--metric") -> Metric:
    """The metric called `name` among those that fit, or a UserError naming the ones that do, in one line."""
    found = METRICS.get(name)
    if found is None or not fits(found):
        raise UserError(f"{flag}: expected one of {', '.join(m.name for m in among(fits))}, got {name!r}")
    return found
