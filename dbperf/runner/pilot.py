"""Pilot rounds (`time = "auto"`, experiment/auto_time.py): before a (benchmark, threads) group's rounds, a few
rounds at the pilot's length measure its noise, and the group's rounds then run at the length that decides most per
minute (stats/round_length.py). The pilot's cells are not kept: every round the verdict reads has one length, so
its rounds stay comparable, and the choice, made before any of them, cannot bias it.

From the pilot's records: each round's ratio of every target to the base (their logarithms' spread between rounds:
a + b/t_p), each cell's time series (the spread within a round: b; its interval is a tenth of the pilot's length,
whatever `interval` says, so that every cell has ten samples; a slices side's series is its slices), and the
rounds' wall clock less what they measured (the overhead c). The matrix (matrix.py) runs the rounds; this module
says how to run and read them."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial

from dbperf.experiment.auto_time import AutoTime
from dbperf.experiment.model import Experiment
from dbperf.records import CellRecord, Interval
from dbperf.run_meta import RoundLengthMeta
from dbperf.runner.orders.base import Order
from dbperf.stats.planned import price
from dbperf.stats.round_length import (
    LengthChoice,
    RoundBudget,
    choose_from_pilot,
    per_second_part,
    pilot_spread,
)
from dbperf.stats.verdict import METRIC_ALPHA

PILOT_SAMPLES = 10  # time series intervals per pilot cell
PILOT_SHARE = 0.15  # at most this share of a group's budget share measured by its pilot (its overhead comes on top)


@dataclass(frozen=True)
class PilotRound:
    """One pilot round: its records (every target's) and how long it took on the wall clock."""
    records: list[CellRecord]
    wall_s: float


def pilot_length(auto: AutoTime, share_s: float | None, measured: float) -> float:
    """The pilot's cell length: `auto.pilot_s`, or less where the group's share of a budget (`share_s`) is small,
    so that the pilot's cells take at most PILOT_SHARE of it (never below the shortest length). The pilot is paid
    from the group's share like its rounds: a pilot of the default length took a third of a 3-minute demo's
    (benchmarks/verdicts/auto_time.py, 2026-11-29)."""
    if share_s is None or measured <= 0:
        return auto.pilot_s
    return min(auto.pilot_s, max(auto.shortest_s, PILOT_SHARE * share_s / (auto.pilot_rounds * measured)))


def pilot_experiment(e: Experiment, auto: AutoTime, length_s: float | None = None) -> Experiment:
    """The experiment as the pilot's cells run it: the pilot's length (`length_s`, by default `auto.pilot_s`), a
    time series of PILOT_SAMPLES intervals."""
    length = auto.pilot_s if length_s is None else length_s
    return replace(e, time_s=length, load=replace(e.load, interval_s=length / PILOT_SAMPLES))


def measured_per_second(order: Order, threads: int) -> float:
    """The seconds a round of the group measures per second of a cell's time: every target one after the other, or
    in one process, or a duet's two at once (the way's own round time, which is linear in a cell's length)."""
    return order.round_s(threads, 1.0) - order.round_s(threads, 0.0)


def _samples(intervals: Sequence[Interval]) -> tuple[list[float], float]:
    """A cell's per-interval throughputs and their length, the partial interval at the end left out."""
    if not intervals:
        return [], 0.0
    length = statistics.median(i.duration_s for i in intervals)
    whole = [i for i in intervals if i.duration_s >= length / 2]
    return [i.qps for i in whole], length


def cell_per_second(record: CellRecord) -> float | None:
    """A cell's per-second part b (stats/round_length.py) from its time series; None when it has none."""
    if not record.ok or record.result is None:
        return None
    samples, length = _samples(record.result.intervals)
    return per_second_part(samples, length)


def _qps(record: CellRecord | None) -> float | None:
    return record.result.qps if record is not None and record.ok and record.result and record.result.qps else None


def log_ratios(base: str, rounds: Sequence[PilotRound]) -> dict[str, list[float]]:
    """Per target other than the base, the logarithm of its throughput over the base's in each pilot round where
    both were measured (in a duet, over the base's cell beside it)."""
    out: dict[str, list[float]] = {}
    for pilot in rounds:
        bases = {r.partner: r for r in pilot.records if r.target == base}
        for r in pilot.records:
            mine, theirs = _qps(r), _qps(bases.get(r.target) or bases.get(None))
            if r.target != base and mine and theirs:
                out.setdefault(r.target, []).append(math.log(mine / theirs))
    return out


def ratio_per_second(base: str, rounds: Sequence[PilotRound], targets: Sequence[str]) -> float | None:
    """A ratio's b: its target's plus the base's (their fluctuations are independent), averaged over the targets
    and the pilot's cells; None when a side has no time series."""
    def part(name: str) -> float | None:
        parts = [p for pilot in rounds for r in pilot.records if r.target == name
                 if (p := cell_per_second(r)) is not None]
        return statistics.fmean(parts) if parts else None

    base_part = part(base)
    if base_part is None:
        return None
    sums = [base_part + p for p in map(part, targets) if p is not None]
    return statistics.fmean(sums) if sums else None


def overhead_s(rounds: Sequence[PilotRound], pilot_s: float, measured: float) -> float:
    """c: a round's wall clock less what it measured, per second it measures (`measured`: measured_per_second)."""
    if measured <= 0 or not rounds:
        return 0.0
    wall = statistics.fmean(p.wall_s for p in rounds)
    return max(wall - measured * pilot_s, 0.0) / measured


def choose(base: str, rounds: Sequence[PilotRound], auto: AutoTime, measured: float,
           budget: RoundBudget | None = None, pilot_s: float | None = None) -> LengthChoice:
    """The group's round length from its pilot rounds of `pilot_s` (by default `auto.pilot_s`; `measured`:
    measured_per_second), within what a budget left its rounds (`budget`)."""
    length = auto.pilot_s if pilot_s is None else pilot_s
    ratios = log_ratios(base, rounds)
    b = ratio_per_second(base, rounds, sorted(ratios))
    spread = pilot_spread(list(ratios.values()), b, length) if b is not None else None
    return choose_from_pilot(spread, overhead_s(rounds, length, measured), length, auto.shortest_s,
                             auto.longest_s, budget)


def round_budget(left_s: float, measured: float, min_rounds: int) -> RoundBudget:
    """What a group's rounds have after its pilot: the time left of its share, at the deciding rule's price (the
    planned looks' at the per-metric error, stats/verdict.py)."""
    return RoundBudget(left_s, measured, min_rounds, partial(price, alpha=METRIC_ALPHA))


def length_meta(benchmark: str, threads: int, choice: LengthChoice, pilot_s: float | None = None) -> RoundLengthMeta:
    """meta.json's record of the choice (in its `auto_time`), from pilot cells of `pilot_s`."""
    parts, e = choice.parts, choice.expected
    left = round(choice.budget.left_s, 1) if choice.budget is not None else None
    return RoundLengthMeta(benchmark=benchmark, threads=threads, time_s=round(choice.time_s, 3), pilot_s=pilot_s,
                           budget_left_s=left,
                           per_process=parts.per_process if parts else None,
                           per_second=parts.per_second if parts else None,
                           overhead_s=round(choice.overhead_s, 3), reason=choice.reason,
                           per_process_low=e.low if e else None, per_process_high=e.high if e else None,
                           freedom=e.freedom if e else None, expected_cost=round(e.relative, 4) if e else None)


def length_line(chosen: RoundLengthMeta, auto: AutoTime) -> str:
    """The one line a run says of a group's choice."""
    return (f"dbperf: time = \"auto\": {chosen.benchmark} t={chosen.threads}: rounds of {chosen.time_s:g} s "
            f"({chosen.reason}; from {auto.pilot_rounds} pilot rounds of {chosen.pilot_s or auto.pilot_s:.3g} s, "
            f"not kept)")
