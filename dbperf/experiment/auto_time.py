"""`time = "auto"`: the lab sizes each (benchmark, threads) group's rounds to its noise (stats/round_length.py). The
group first runs `pilot_rounds` rounds of `pilot_s`, which only measure the noise and are not kept (so that every
round the verdict reads has one length); its rounds then run at the length that decides most per minute, within
[shortest_s, longest_s] (runner/pilot.py). `[run].auto_time` changes these four. Plain settings, parsed once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbperf.errors import UserError
from dbperf.experiment.durations import parse_duration

AUTO = "auto"
FIELDS = ("pilot", "pilot_rounds", "shortest", "longest")
MAX_PILOT_ROUNDS = 100


@dataclass(frozen=True)
class AutoTime:
    # Three rounds: two degrees of freedom per ratio for its per-process part, for three rounds a group.
    pilot_rounds: int = 3
    # 3 s at most: ten samples of the time series per cell (runner/pilot.py); under a budget, shorter where the
    # group's share is small, so that the pilot costs little beside the rounds (runner/pilot.py pilot_length).
    pilot_s: float = 3.0
    # 0.3 s: the demo's own rounds, which decided 5 of 6 cells in each of two quiet runs where rounds of 1.5-2.4 s
    # decided 3 (benchmarks/verdicts/auto_time.py, 2026-11-29); the pilot measures a round's start and warm-up
    # (the overhead c), so shorter rounds are chosen only where they pay. At most the default `time` (10 s): where
    # the longest is chosen (the pilot saw no per-process part, and was sure enough: stats/round_length.py), rounds
    # cost no more than the default's would.
    shortest_s: float = 0.3
    longest_s: float = 10.0

    def describe(self) -> dict[str, Any]:
        """For meta.json."""
        return {"pilot_rounds": self.pilot_rounds, "pilot_s": self.pilot_s, "shortest_s": self.shortest_s,
                "longest_s": self.longest_s}


def check_auto_time(value: Any, where: str) -> AutoTime:
    """`[run].auto_time`'s own check: a table of the four settings, each optional."""
    if not isinstance(value, dict):
        raise UserError(f"{where}: expected a table such as {{ pilot = \"3s\", pilot_rounds = 3, shortest = \"1s\", "
                        f"longest = \"10s\" }}, got {value!r}")
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise UserError(f"{where}: unknown setting {unknown[0]!r} (known: {', '.join(FIELDS)})")
    default = AutoTime()
    rounds = value.get("pilot_rounds", default.pilot_rounds)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 2 <= rounds <= MAX_PILOT_ROUNDS:
        raise UserError(f"{where}.pilot_rounds: expected an integer from 2 to {MAX_PILOT_ROUNDS} (two rounds at "
                        f"least: the noise between rounds is one of the two parts), got {rounds!r}")

    def seconds(key: str, fallback: float) -> float:
        return parse_duration(value.get(key, fallback), f"{where}.{key}", positive=True, per="per cell")

    auto = AutoTime(rounds, seconds("pilot", default.pilot_s), seconds("shortest", default.shortest_s),
                    seconds("longest", default.longest_s))
    if auto.longest_s < auto.shortest_s:
        raise UserError(f"{where}: longest = {auto.longest_s:g} s is shorter than shortest = {auto.shortest_s:g} s")
    return auto


def time_setting(value: float | str, auto: AutoTime | None, where: str) -> tuple[float, AutoTime | None]:
    """`[run].time` and `[run].auto_time` as the key table checked them: a cell's measured time, and the automatic
    length's settings when time is "auto" (the time is then the pilot's, which the estimate counts)."""
    if value == AUTO:
        auto = auto or AutoTime()
        return auto.pilot_s, auto
    time_s = float(value)
    if auto is not None:
        raise UserError(f"{where}.auto_time: only with time = \"auto\" (time is {time_s:g} s)")
    return time_s, None
