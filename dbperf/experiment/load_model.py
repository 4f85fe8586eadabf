"""How a cell offers its load and what it records beyond the totals: closed or open loop (`rate`, `arrivals`,
`latency_limit`), the time series interval and the latency percentiles. Parsed from `[run]` once (the keys and their
checks are in keys.py), handed to every driver job of the run."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dbperf.errors import UserError

ARRIVALS = ("uniform", "poisson")
DEFAULT_PERCENTILES = (50.0, 95.0, 99.0, 99.9)


def percentiles(value: Any, where: str) -> list[float]:
    """A non-empty list of distinct percentiles in (0, 100], such as [50, 95, 99, 99.9]."""
    if not isinstance(value, list) or not value:
        raise UserError(f"{where}: expected a list of percentiles such as [50, 95, 99, 99.9], got {value!r}")
    out: list[float] = []
    for p in value:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or not 0 < p <= 100:
            raise UserError(f"{where}: unknown percentile {p!r} (a number above 0 and at most 100, e.g. 99.9)")
        if float(p) in out:
            raise UserError(f"{where}: percentile {p!r} is listed twice")
        out.append(float(p))
    return out


# The highest open-loop rate of a cell (all threads together), the driver's schedule.rs MAX_RATE: above it an event
# is due less than 10 ns (ten ticks of the 1 ns clock) after the previous one, a gap no event fits in. Refused rather
# than clamped, so that a cell never runs at a rate other than the one asked for.
MAX_RATE = 1e8


def rate(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise UserError(f"{where}: expected a positive number of events per second, got {value!r}")
    if value > MAX_RATE:
        raise UserError(f"{where}: {value:g} events/s is above the {MAX_RATE:g} the driver can schedule (one event "
                        "every 10 ns); ask for at most that")
    return float(value)


@dataclass(frozen=True)
class LoadModel:
    interval_s: float = 1.0  # 0: no time series
    percentiles: tuple[float, ...] = field(default=DEFAULT_PERCENTILES)
    rate: float | None = None  # events/s of a cell, all threads together; None: closed loop
    arrivals: str = "uniform"
    latency_limit_s: float | None = None

    @property
    def open_loop(self) -> bool:
        return self.rate is not None

    def job_fields(self) -> dict[str, Any]:
        """The driver job's fields (records.DriverJob) for this load model."""
        return {"interval_s": self.interval_s, "percentiles": tuple(self.percentiles), "rate": self.rate,
                "arrivals": self.arrivals, "latency_limit_s": self.latency_limit_s}

    def describe(self) -> dict[str, Any]:
        """For meta.json."""
        return {"loop": "open" if self.open_loop else "closed", **self.job_fields()}


def check_rate_in_time(rate: float, time_s: float, where: str) -> None:
    """A rate must schedule at least one event in a cell's measured time. Below that the schedule has nothing to
    pace: at 1e-300 events/s the driver's gap between events overflows to infinity and every event came due at
    once, an unthrottled closed loop recorded as an open loop at the rate asked."""
    if rate * time_s < 1:
        raise UserError(f"{where}.rate: {rate:g} events/s is less than one event in a cell's measured time "
                        f"(time = {time_s:g} s); ask for at least {1 / time_s:.3g} events/s, or drop rate for a "
                        "closed loop")


def parse_load_model(run: dict[str, Any], values: dict[str, Any], where: str, time_s: float) -> LoadModel:
    """`values`: [run]'s keys as keys.checked returned them; `time_s`: a cell's measured time."""
    for key in ("arrivals", "latency_limit"):
        if key in run and "rate" not in run:
            raise UserError(f"{where}.{key}: applies to open-loop runs; set rate = N (events per second) too")
    if values.get("rate") is not None:
        check_rate_in_time(values["rate"], time_s, where)
    limit = values.get("latency_limit")
    if limit is not None and limit <= 0:
        raise UserError(f"{where}.latency_limit: must be longer than 0")
    return LoadModel(
        interval_s=values.get("interval", 1.0),
        percentiles=tuple(values.get("percentiles", DEFAULT_PERCENTILES)),
        rate=values.get("rate"),
        arrivals=values.get("arrivals", "uniform"),
        latency_limit_s=limit,
    )
