"""`time = "auto"`: the lab sizes each (benchmark, threads) group's rounds to its noise (stats/round_length.py). The
group first runs `pilot_rounds` rounds of `pilot_s`, which only measure the noise and are not kept (so that every
round the verdict reads has one length); its rounds then run at the length that decides most per minute, within
[shortest_s, longest_s] (runner/pilot.py). Plain settings, parsed from `[run].time`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

AUTO = "auto"


@dataclass(frozen=True)
class AutoTime:
    # Three rounds: two degrees of freedom per ratio for the per-process part, at the cost of three rounds a group.
    pilot_rounds: int = 3
    # 3 s: several intervals of the default 1 s time series per cell (the per-second part), short enough to cost
    # little beside the rounds it sizes.
    pilot_s: float = 3.0
    # Below 1 s a cell's warm-up and start dominate any round; above 30 s a group runs too few rounds for the
    # verdict's minimum to fit in a budget of minutes.
    shortest_s: float = 1.0
    longest_s: float = 30.0

    def describe(self) -> dict[str, Any]:
        """For meta.json."""
        return {"pilot_rounds": self.pilot_rounds, "pilot_s": self.pilot_s, "shortest_s": self.shortest_s,
                "longest_s": self.longest_s}


def time_setting(value: float | str) -> tuple[float, AutoTime | None]:
    """`[run].time` as the key table checked it: a cell's measured time, and the automatic length's settings when it
    is "auto" (the time is then the pilot's, which the estimate and the first rounds use)."""
    if value == AUTO:
        auto = AutoTime()
        return auto.pilot_s, auto
    return float(value), None
