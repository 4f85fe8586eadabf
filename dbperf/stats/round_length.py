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

The estimates, from pilot rounds at one length t_p: b from the within-round spread of each cell's time series (n
intervals of Δ seconds whose relative variance is s²: s²·Δ per target; a ratio's b is the sum of its two targets');
a + b/t_p from the between-round variance S² of the ratios' logarithms, on k degrees of freedom (`PilotSpread`;
ratios that share the base's rounds are correlated, so k overstates them a little: two count 2(n - 1), hold 1.6(n - 1)).

**The choice under the pilot's uncertainty** (`choose_from_pilot`). b rests on tens of intervals; a does not: with
the default three pilot rounds, k is 2 per ratio (4 for the demo's two), and S² - b/t_p, the point estimate, is
often below 0. Plugged into t* it picks the longest whenever it is: one noisy estimate would decide a whole run. So
a gets a posterior (`posterior`): a weakly-informative prior, uniform in log t* from half the shortest to twice the
longest (a priori any length within the bounds as likely to be the best), times the likelihood of S² (k·S²/v is
χ²_k, v = a + b/t_p). The length chosen is the one of least *relative* cost cost(t)/cost(t*(a)) expected over it:
the relative cost is bounded for every a, so no tail of the posterior rules it, and it weighs how far from its
best each plausible a would be. Tried on synthetic pilots (tests/test_round_length.py), other choices did worse:
the prior 1/v (Jeffreys's, kept to a >= 0) has a tail of large a that chose short rounds where a was none (1.7× the
optimum's cost in the median seed); preferring the shortest length within 1% to 5% of the least expected cost (the
optimum's flatness, for more rounds and looks) moved the length far, the expected cost being flatter than any one
a's (1.25× to 1.4× in the median seed where a was none, against 1.18×); a conservative quantile of a, or the
worst over its 80% range, did as the 1/v prior. More pilot rounds narrow the posterior, and the choice tends to the
point estimate's t*.
The host's noise sensors (host/noise.py) measure steal and foreign CPU, not a per-process variance: no prior for a
comes from them. Pure: no file, no driver, no clock (runner/pilot.py runs the pilot rounds and asks this)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

WIDEN = 2.0  # the prior's t* reaches this factor beyond each bound (where the bound itself is the best length)
PRIOR_POINTS = 200  # a's grid, evenly on a logarithmic scale over the prior's range
GRID = 97  # lengths tried, evenly on a logarithmic scale from the shortest to the longest
SHOWN = (0.1, 0.9)  # a's quantiles said as its range


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


@dataclass(frozen=True)
class RoundBudget:
    """What a group's rounds have when a budget bounds them: `left_s` seconds, a round of cells of t seconds taking
    `measured`·(t + c) of them (`measured`: the seconds a round measures per second of a cell), at least
    `min_rounds` rounds, run whatever the budget says, and the verdict rule's price at n planned rounds (its
    half-width over a single look's that knew the noise: stats/planned.py `price`). With it a length's cost is the
    squared half-width its rounds end at, v(t)·price(n)²/n for the n = left / (measured·(t + c)) rounds it affords:
    a long round that leaves the rule few looks pays the rule's price at few rounds, which (a + b/t)·(t + c) does
    not hold."""
    left_s: float
    measured: float
    min_rounds: int
    price: Callable[[int], float]

    def rounds(self, time_s: float, overhead_s: float) -> int:
        """The rounds the time left affords at cells of `time_s`."""
        return int(self.left_s // max(self.measured * (time_s + overhead_s), 1e-9))

    def longest(self, overhead_s: float, shortest_s: float, longest_s: float) -> float:
        """The longest cell whose rounds, the minimum of them, fit in the time left (never below the shortest:
        where even the shortest's do not fit, the run overruns its budget at the shortest)."""
        fits = self.left_s / (self.min_rounds * self.measured) - overhead_s if self.measured > 0 else longest_s
        return min(max(fits, shortest_s), longest_s)

    def cost(self, variance: np.ndarray, time_s: float, overhead_s: float) -> np.ndarray:
        """v·price(n)²/n at cells of `time_s` (v: a round ratio's variance there, one per value of a)."""
        n = max(self.rounds(time_s, overhead_s), self.min_rounds)
        return variance * self.price(n) ** 2 / n


def per_second_part(samples: Sequence[float], interval_s: float) -> float | None:
    """One cell's b from its time series: the relative variance of its per-interval throughputs times the interval
    (the variance of a mean of t seconds is then b/t); None with fewer than 2 samples or no throughput."""
    if len(samples) < 2 or interval_s <= 0:
        return None
    mean = statistics.fmean(samples)
    if mean <= 0:
        return None
    return statistics.variance(samples) / mean ** 2 * interval_s


def pooled(log_ratios: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """The pooled variance of the rounds' log ratios and its degrees of freedom, one sequence per target compared
    with the base (each about its own mean: the targets' levels differ); None with no two rounds of any."""
    parts = [(statistics.variance(xs), len(xs) - 1) for xs in log_ratios if len(xs) >= 2]
    freedom = sum(n for _, n in parts)
    return (sum(v * n for v, n in parts) / freedom, freedom) if freedom else None


def between_rounds(log_ratios: Sequence[Sequence[float]]) -> float | None:
    """The pooled variance of the rounds' log ratios (`pooled`'s, without its degrees of freedom)."""
    spread = pooled(log_ratios)
    return spread[0] if spread else None


@dataclass(frozen=True)
class PilotSpread:
    """What pilot rounds of `pilot_s` measured: the between-round variance of the log ratios (`between`, on
    `freedom` degrees of freedom) and the ratios' per-second part b (a's posterior: `posterior`)."""
    between: float
    freedom: int
    per_second: float
    pilot_s: float

    @property
    def point(self) -> NoiseParts:
        """The point estimate: a = S² - b/t_p, never below 0."""
        return NoiseParts(max(self.between - self.per_second / self.pilot_s, 0.0), self.per_second)


def posterior(spread: PilotSpread, overhead_s: float, shortest_s: float,
              longest_s: float) -> tuple[np.ndarray, np.ndarray]:
    """a's posterior on a grid of PRIOR_POINTS values (ascending) and their weights (summing to 1): the prior
    uniform in log t* = log sqrt(b·c/a) from shortest/WIDEN to longest·WIDEN, times the likelihood of the pilot's S²
    given v = a + b/t_p (k·S²/v is χ²_k). Needs b > 0 and c > 0."""
    b, c, k = spread.per_second, overhead_s, spread.freedom
    low, high = b * c / (longest_s * WIDEN) ** 2, b * c * WIDEN ** 2 / shortest_s ** 2
    a = low * (high / low) ** (np.arange(PRIOR_POINTS) / (PRIOR_POINTS - 1))
    v = a + b / spread.pilot_s
    log_weight = -k / 2 * np.log(v) - k * spread.between / (2 * v)
    weight = np.exp(log_weight - log_weight.max())
    return a, weight / weight.sum()


def quantile(values: np.ndarray, weights: np.ndarray, p: float) -> float:
    """The p quantile of weighted values (ascending)."""
    return float(values[min(int(np.searchsorted(np.cumsum(weights), p)), len(values) - 1)])


def pilot_spread(log_ratios: Sequence[Sequence[float]], ratio_per_second: float, pilot_s: float) -> PilotSpread | None:
    """The pilot's spread: `log_ratios` per target, `ratio_per_second` the ratios' b (the sum of each pair's
    targets' b, averaged over the pairs); None without two rounds of a ratio."""
    spread = pooled(log_ratios)
    return PilotSpread(spread[0], spread[1], ratio_per_second, pilot_s) if spread else None


def estimate_parts(log_ratios: Sequence[Sequence[float]], ratio_per_second: float, pilot_s: float) -> NoiseParts | None:
    """a and b from pilot rounds of `pilot_s`, as point estimates (`PilotSpread.point`); None without two rounds of
    a ratio."""
    spread = pilot_spread(log_ratios, ratio_per_second, pilot_s)
    return spread.point if spread else None


@dataclass(frozen=True)
class Expected:
    """A length chosen over a's posterior: a's 10% and 90% quantiles and their degrees of freedom, the length of
    least expected relative cost, and the expected relative cost at the length chosen (1: as good as the best)."""
    low: float
    high: float
    freedom: int
    least_s: float
    relative: float


@dataclass(frozen=True)
class LengthChoice:
    """A group's round length and why: the parts, the overhead, the bounds it was clamped to, and, when chosen
    over the pilot's uncertainty, how (`expected`)."""
    time_s: float
    parts: NoiseParts | None  # None: the pilot measured too little to estimate them (its length is kept)
    overhead_s: float
    shortest_s: float
    longest_s: float
    expected: Expected | None = None  # None: chosen from the point estimates alone
    budget: RoundBudget | None = None  # what the group's rounds had when it was chosen (None: no budget bounds them)

    def _bound(self, time_s: float) -> str:
        return (" (the shortest)" if time_s <= self.shortest_s else " (the longest)" if time_s >= self.longest_s
                else "")

    def _budgeted(self) -> str:
        """What the budget left the rounds, said after the reason (nothing without a budget)."""
        budget = self.budget
        if budget is None:
            return ""
        n = budget.rounds(self.time_s, self.overhead_s)
        if n < budget.min_rounds:
            return (f"; even the shortest length's {budget.min_rounds} rounds overrun the {budget.left_s:.0f} s left "
                    f"of the group's budget share")
        longest = budget.longest(self.overhead_s, self.shortest_s, self.longest_s)
        capped = (f", the longest whose {budget.min_rounds} rounds fit" if self.time_s >= longest < self.longest_s
                  else "")
        return (f"; about {n} rounds fit in the {budget.left_s:.0f} s left of the group's budget share{capped}, the "
                f"rule's half-width there {budget.price(n):.2f}× a single look's")

    @property
    def reason(self) -> str:
        return self._reason() + self._budgeted()

    def _reason(self) -> str:
        if self.parts is None:
            return "the pilot measured too little to estimate the noise: the pilot length kept, within the bounds"
        a, b, c, e = self.parts.per_process, self.parts.per_second, self.overhead_s, self.expected
        known = (f" (80% within {e.low:.2g} to {e.high:.2g}, {e.freedom} degree{'s' if e.freedom != 1 else ''} of "
                 f"freedom)" if e else "")
        said = f"per-process variance a = {a:.2g}{known}, per-second b = {b:.2g} s, overhead c = {c:.2g} s"
        if b <= 0:
            return f"{said}: no per-second part, the shortest"
        if c <= 0:
            return f"{said}: no overhead a round, the shortest"
        if e is not None:
            return (f"{said}: the least cost expected over a's posterior{self._bound(self.time_s)}, "
                    f"{e.relative:.2f}× the best length's on average")
        if a <= 0:
            return f"{said}: no per-process part, the longest"
        best = math.sqrt(b * c / a)
        return f"{said}: sqrt(b·c/a) = {best:.3g} s{self._bound(min(max(best, self.shortest_s), self.longest_s))}"


def choose_length(parts: NoiseParts | None, overhead_s: float, pilot_s: float, shortest_s: float,
                  longest_s: float) -> LengthChoice:
    """The round length from point estimates (the pilot's own length, within the bounds, where nothing was
    estimated)."""
    if parts is None:
        time_s = min(max(pilot_s, shortest_s), longest_s)
    else:
        time_s = best_length(parts, overhead_s, shortest_s, longest_s)
    return LengthChoice(time_s, parts, overhead_s, shortest_s, longest_s)


def lengths(shortest_s: float, longest_s: float) -> list[float]:
    """The lengths tried: GRID of them from the shortest to the longest, evenly on a logarithmic scale."""
    if longest_s <= shortest_s:
        return [shortest_s]
    return [*(shortest_s * (longest_s / shortest_s) ** (i / (GRID - 1)) for i in range(GRID - 1)), longest_s]


def expected_relative_costs(per_process: np.ndarray, weights: np.ndarray, per_second: float, overhead_s: float,
                            tried: Sequence[float], shortest_s: float, longest_s: float,
                            budget: RoundBudget | None = None) -> list[float]:
    """Per length tried, its cost relative to the best length's (`relative_cost`), averaged over values of a with
    their weights (b and c as given). Under a budget the cost is the budget's (`RoundBudget.cost`) and the best
    length, for each a, the least costly of those tried (there is no closed form)."""
    a, t, b, c = per_process, np.asarray(tried, dtype=float), per_second, overhead_s
    if budget is None:
        best_t = np.clip(np.sqrt(b * c / a), shortest_s, longest_s)
        best = (a + b / best_t) * (best_t + c)
        costs = (a[:, None] + b / t[None, :]) * (t[None, :] + c) / best[:, None]
    else:
        costs = np.stack([budget.cost(a + b / length, length, c) for length in tried], axis=1)
        costs = costs / costs.min(axis=1, keepdims=True)
    return [float(x) for x in weights @ costs]


def choose_from_pilot(spread: PilotSpread | None, overhead_s: float, pilot_s: float, shortest_s: float,
                      longest_s: float, budget: RoundBudget | None = None) -> LengthChoice:
    """The round length for a group's rounds after its pilot: the least relative cost expected over a's posterior
    (see the module's docstring); the pilot's own length, within the bounds, where nothing was estimated. Under a
    `budget`, only lengths whose minimum of rounds fits in it are tried, and each costs what its rounds end at."""
    afford = budget.longest(overhead_s, shortest_s, longest_s) if budget is not None else longest_s
    # nothing estimated (the pilot's length), or no per-second part or overhead (the shortest, whatever a is)
    if spread is None or spread.point.per_second <= 0 or overhead_s <= 0:
        parts = spread.point if spread is not None else None
        return replace(choose_length(parts, overhead_s, pilot_s, shortest_s, afford), longest_s=longest_s,
                       budget=budget)
    point = spread.point
    # the prior spans the experiment's bounds (what a could be is not the budget's to say); the lengths tried, the
    # budget's
    a, weights = posterior(spread, overhead_s, shortest_s, longest_s)
    tried = lengths(shortest_s, afford)
    costs = expected_relative_costs(a, weights, point.per_second, overhead_s, tried, shortest_s, afford, budget)
    least = min(range(len(tried)), key=costs.__getitem__)
    low, high = (quantile(a, weights, p) for p in SHOWN)
    return LengthChoice(tried[least], point, overhead_s, shortest_s, longest_s,
                        Expected(low, high, spread.freedom, tried[least], costs[least]), budget)
