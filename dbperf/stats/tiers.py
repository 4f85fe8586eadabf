"""Do the tiers agree? Per compared cell: the measured verdict that decided it (wall clock, else CPU time) against the
simulated tier's work (stats/simulated.py) and, where the host has a calibrated cost model (stats/cost_model.py), its
predicted CPU change against the measured one. `agree`, `disagree` or `open` (nothing measured decided, or no
simulated figure to compare), with the reason in words that name both figures."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from scipy import stats as scipy_stats

from dbperf.stats.cost_model import PredictedChange
from dbperf.stats.simulated import SimulatedDelta
from dbperf.stats.verdict import CellVerdict

Tiers = Literal["agree", "disagree", "open"]
AA_REASON = "the A/A copy: the base's own build, so its Δ is 0 in every tier by construction"
# The work that goes with a measured speed: faster needs fewer estimated cycles, slower more.
SHARED = {"faster": "fewer", "slower": "more"}


@dataclass(frozen=True)
class Interval:
    """A measured relative change (target / base - 1) with its 95% confidence interval."""
    estimate: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


@dataclass(frozen=True)
class TierAgreement:
    tiers: Tiers
    why: str


def measured_text(v: CellVerdict) -> str:
    """The measured figure as the legend names it: metric, change in QPS, word."""
    return f"{v.metric.label} {v.diff:+.1%} QPS ({v.verdict})"


def simulated_text(sim: SimulatedDelta) -> str:
    assert sim.estimated_cycles_delta is not None
    return f"simulated {sim.estimated_cycles_delta:+.2%} est. cycles ({sim.verdict})"


def tiers_of(measured: CellVerdict | None, sim: SimulatedDelta | None, predicted: PredictedChange | None = None,
             measured_cpu: Interval | None = None, aa_copy: bool = False) -> TierAgreement | None:
    """The agreement of one compared cell; None for the base's own cells and where the run has no simulated tier
    (`sim` None). `measured`: the deciding verdict (stats/verdict.py deciding). `measured_cpu`: the measured change of
    CPU per query of what the cost model predicts (user, or user + system), for the calibrated check."""
    if aa_copy:
        return TierAgreement("agree", AA_REASON)
    if sim is None or sim.verdict == "base":
        return None
    if sim.verdict == "missing":
        return TierAgreement("open", f"no simulated figure ({sim.error})")
    if measured is None or not measured.decided:
        return TierAgreement("open", "nothing measured decided")
    shared = SHARED.get(measured.verdict)
    if shared is not None and sim.verdict != shared:
        return TierAgreement("disagree", f"{measured_text(measured)} but {simulated_text(sim)}: the work does not "
                                         f"share the measured {measured.verdict}")
    if predicted is not None and measured_cpu is not None:
        gap = abs(predicted.delta - measured_cpu.estimate)
        if gap > predicted.band + measured_cpu.half_width:
            return TierAgreement("disagree", f"calibrated prediction {predicted.delta:+.1%} CPU/q "
                                             f"(±{predicted.band:.1%}) but measured {measured_cpu.estimate:+.1%} "
                                             f"(±{measured_cpu.half_width:.1%}): outside both bands")
    how = "the work shares the measured call" if shared else "measured same; work may change without speed"
    return TierAgreement("agree", f"{measured_text(measured)}, {simulated_text(sim)}: {how}")


def paired_change(pairs: Sequence[tuple[float, float]]) -> Interval | None:
    """The change target/base - 1 of a per-query cost from per-round pairs (target, base): the geometric mean of the
    round ratios, with a t interval on their logs. None with fewer than three usable rounds."""
    logs = [math.log(t / b) for t, b in pairs if t > 0 and b > 0]
    if len(logs) < 3:
        return None
    mean = statistics.fmean(logs)
    half = float(scipy_stats.t.ppf(0.975, len(logs) - 1)) * statistics.stdev(logs) / math.sqrt(len(logs))
    return Interval(math.exp(mean) - 1, math.exp(mean - half) - 1, math.exp(mean + half) - 1)
