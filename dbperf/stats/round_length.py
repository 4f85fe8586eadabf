"""Rounds sized to the noise (`time = "auto"`): the round length that decides most per minute, from pilot rounds.

A round's ratio (a target's throughput over the base's, what the verdict decides on) varies from round to round by
two parts. One does not fall with the round's measured length t: each round is a new process (or a new turn of the
targets), with its own caches, memory layout, frequency and neighbours; its relative variance is `a`. The other is
the throughput's own fluctuation from second to second, averaged over the round: `b / t`, as for the mean of t
seconds of roughly independent samples (b is a relative variance times seconds). A round's ratio has variance
v(t) = a + b/t.

Over n rounds a verdict's interval narrows like sqrt(v(t) / n), and a round costs t + c seconds per second it
measures (c: the round's fixed overhead, the driver's start, the warm-up, the data restored, over what it measures).
In a time T there are n = T / (t + c) rounds, so the squared half-width goes like v(t)·(t + c) / T. The length that
decides most per minute minimises

    (a + b/t)·(t + c) = a·t + (a·c + b) + b·c/t,   at   t* = sqrt(b·c / a),

clamped to [shortest, longest]. With no per-process part (a = 0) a longer round always helps (the longest); with no
per-second part (b = 0) the shortest is best: a longer round buys nothing a new round would not. The optimum is
flat: at k times t* the b·c/t + a·t term is sqrt(a·b·c)·(k + 1/k) against 2·sqrt(a·b·c), so estimates of a and b
off by a factor of 3 (k = 1.7) add at most 15% to that term and less to the whole (`relative_cost`).

The estimates (`estimate_parts`), from pilot rounds at one length t_p: b from the within-round spread of each cell's
time series (n intervals of Δ seconds whose relative variance is s²: s²·Δ per target; a ratio's b is the sum of its
two targets'); a from the between-round variance of the ratios' logarithms less the b/t_p those rounds hold (never
below 0). Pure: no file, no driver, no clock (runner/pilot.py runs the pilot rounds and asks this)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class NoiseParts:
    """A round ratio's relative variance a + b/t: `per_process` (a) does not fall with the round's length t,
    `per_second` (b, relative variance × seconds) does."""
    per_process: float
    per_second: float

    def variance(self, time_s: float) -> float:
        return self.per_process + self.per_second / time_s


def cost(parts: NoiseParts, time_s: float, overhead_s: float) -> float:
    """What a verdict's squared half-width costs in time at rounds of `time_s` (up to a constant factor):
    (a + b/t)·(t + c). The length that decides most per minute is the one that costs least."""
    return parts.variance(time_s) * (time_s + overhead_s)


def best_length(parts: NoiseParts, overhead_s: float, shortest_s: float, longest_s: float) -> float:
    """t* = sqrt(b·c / a) clamped to [shortest_s, longest_s] (see the module's docstring); no per-process part:
    the longest, no per-second part (or no overhead): the shortest."""
    a, b, c = parts.per_process, parts.per_second, max(overhead_s, 0.0)
    if b <= 0 or c <= 0:
        return shortest_s
    if a <= 0:
        return longest_s
    return min(max(math.sqrt(b * c / a), shortest_s), longest_s)


def relative_cost(parts: NoiseParts, overhead_s: float, time_s: float, shortest_s: float, longest_s: float) -> float:
    """How much more rounds of `time_s` cost than the best length's (1: as good)."""
    best = best_length(parts, overhead_s, shortest_s, longest_s)
    return cost(parts, time_s, overhead_s) / cost(parts, best, overhead_s)


def per_second_part(samples: Sequence[float], interval_s: float) -> float | None:
    """One cell's b from its time series: the relative variance of its per-interval throughputs times the interval
    (the variance of a mean of t seconds is then b/t); None with fewer than 2 samples or no throughput."""
    if len(samples) < 2 or interval_s <= 0:
        return None
    mean = statistics.fmean(samples)
    if mean <= 0:
        return None
    return statistics.variance(samples) / mean ** 2 * interval_s


def between_rounds(log_ratios: Sequence[Sequence[float]]) -> float | None:
    """The pooled variance of the rounds' log ratios, one sequence per target compared with the base (each about
    its own mean: the targets' levels differ); None with no two rounds of any."""
    pooled = [(statistics.variance(xs), len(xs) - 1) for xs in log_ratios if len(xs) >= 2]
    freedom = sum(n for _, n in pooled)
    return sum(v * n for v, n in pooled) / freedom if freedom else None


def estimate_parts(log_ratios: Sequence[Sequence[float]], ratio_per_second: float, pilot_s: float) -> NoiseParts | None:
    """a and b from pilot rounds of `pilot_s`: `log_ratios` per target, `ratio_per_second` the ratios' b (the sum of
    each pair's targets' b, averaged over the pairs); None without two rounds of a ratio."""
    between = between_rounds(log_ratios)
    if between is None:
        return None
    return NoiseParts(max(between - ratio_per_second / pilot_s, 0.0), ratio_per_second)


@dataclass(frozen=True)
class LengthChoice:
    """A group's round length and why: the parts, the overhead, the bounds it was clamped to."""
    time_s: float
    parts: NoiseParts | None  # None: the pilot measured too little to estimate them (its length is kept)
    overhead_s: float
    shortest_s: float
    longest_s: float

    @property
    def reason(self) -> str:
        if self.parts is None:
            return "the pilot measured too little to estimate the noise: the pilot length kept, within the bounds"
        a, b, c = self.parts.per_process, self.parts.per_second, self.overhead_s
        said = f"per-process variance a = {a:.2g}, per-second b = {b:.2g} s, overhead c = {c:.2g} s"
        if b <= 0:
            return f"{said}: no per-second part, the shortest"
        if c <= 0:
            return f"{said}: no overhead a round, the shortest"
        if a <= 0:
            return f"{said}: no per-process part, the longest"
        best = math.sqrt(b * c / a)
        bound = (" (the shortest)" if best < self.shortest_s else " (the longest)" if best > self.longest_s
                 else "")
        return f"{said}: sqrt(b·c/a) = {best:.3g} s{bound}"


def choose_length(parts: NoiseParts | None, overhead_s: float, pilot_s: float, shortest_s: float,
                  longest_s: float) -> LengthChoice:
    """The round length for a group's rounds after its pilot (the pilot's own length, within the bounds, where
    nothing was estimated)."""
    if parts is None:
        time_s = min(max(pilot_s, shortest_s), longest_s)
    else:
        time_s = best_length(parts, overhead_s, shortest_s, longest_s)
    return LengthChoice(time_s, parts, overhead_s, shortest_s, longest_s)
