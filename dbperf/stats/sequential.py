"""An anytime-valid verdict on per-round log ratios: a confidence sequence from tests by betting.

The unit is one round's log ratio x = log(target / base), the two measured in the same round (interleaved) or at
the same moment (duet). For a candidate center mu, a gambler bets each round on the sign of x - mu:

    K_n(mu) = prod_i (1 + LAMBDA * tanh(theta_i * (x_i - mu))),
    theta_i = MULT * (center_{i-1} - mu) / scale_{i-1}^2

where center and scale are robust estimates from rounds 1..i-1 only (predictable: the bet is placed before the
round is seen; round 1 bets from a prior center of 0). tanh(theta * y) is the log-optimal bet against "symmetric
about mu" when the alternative is a normal shift; it is bounded in (-1, 1), so one wild round costs at most a
factor of 1 - LAMBDA and heavy tails cannot blow the wealth up or down.

**What it assumes**: given the rounds before it, the log ratio of a round is symmetric about mu (for an A/A pair,
mu = 0: the two sides are exchangeable within a round, so target/base and base/target are equally likely). Then
E[tanh(theta (x - mu)) | past] = 0 (tanh is odd) and K_n(mu) is a nonnegative martingale; by Ville's inequality
P(sup_n K_n(mu) >= 1/alpha) <= alpha, **however many rounds are looked at and whatever the tails**. Why it holds
here: a slow round, a slow minute, drift across rounds (a host whose speed wanders) hit both sides of the round
alike and cancel in the ratio whatever their size or correlation across rounds. A duet measures both sides at the
same moment; interleaved rounds alternate the order (or draw it at random), so a drift inside a round favours
each side in turn: not exactly symmetric given the past, which the synthetic test includes and which stays within
the bound there. What it does not cover: a state one side keeps for several rounds (a process that drew slow pages)
shifts the ratios' level; stats/level_shift.py looks for that, and a cell with a level shift is not decided on (the
caller withholds the call) unless the call holds at both levels.

**The confidence sequence**: CS_n = {mu : sup_{m<=n} K_m(mu) < 1/alpha} covers the true center at every round at
once with probability >= 1 - alpha. Calls, on its hull (lower, upper):
- faster: the interval lies above 0 and the estimate > +min_effect (slower: the mirror image);
- same: the interval lies within +-min_effect;
- unstable: neither, and the half-width exceeds min_effect + 10% (ClickHouse's margin);
- undecided: otherwise; while the interval still reaches the grid's edge nothing can be called.
A wrong call needs the true center outside the CS, so the false-alarm rate (faster or slower on A/A) and the rate
of "same" on a real change of min_effect or more are each at most alpha per cell and metric, over every look. The
budget is the hard stop: the CS stays valid wherever the loop ends.

Rounds to a decision (tests/test_sequential.py, Student t noise with 3 df, alpha 0.5% a metric): nothing is called
before about 9 rounds (a round multiplies the wealth by less than 1 + LAMBDA, and 1/alpha = 200); a 5% change at 5%
noise (sigma of the log ratio) in a median of 16 rounds, where a paired randomization test at a fixed n needs 17
for 80% power at the same alpha (at 1%: the rule 14, the fixed test 15, valid only if looked at once); 5% at 2%
noise (duet-like) in about 9; no change at 0.5-1% noise is "same" within +-2% in 9-10.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

LAMBDA = 0.95  # the share of wealth a round may stake: one round against us keeps at least 5% of it
MULT = 2.0  # bets somewhat bolder than the plug-in normal optimum: tanh saturates, so over-betting costs little
PRIOR_SCALE = 0.02  # the log-ratio noise assumed before two rounds are seen, worth one round's evidence
PRIOR_WEIGHT = 1.0
PRIOR_CENTER = 0.0  # round 1 bets as if the past said "no change": candidates away from 0 are bet against at once
FIRST_LAMBDA = 0.5  # but stakes less: where the data lie on the other side, that round costs at most half
CLIP_MADS = 2.0  # the robust center: values beyond median +- 2 MADs are pulled in to that bound
GRID_STEP = 0.001  # candidate centers 0.1% apart (log units)
GRID_HALF_RANGE = 1.5
UNSTABLE_MARGIN = 0.10  # ClickHouse: unstable when the threshold exceeds the report threshold + 10%


def prefix_estimates(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The robust center and variance of every prefix of x's last axis: entry i describes rounds 1..i (i = 0..n;
    entry 0, of nothing, is NaN). From 3 rounds on, values beyond median +- CLIP_MADS scaled MADs are pulled in to
    that bound first (heavy tails); below 3, the plain mean and variance (0 for one round)."""
    n = x.shape[-1]
    inside = np.arange(n)[None, :] < np.arange(n + 1)[:, None]  # (n+1, n): round j is in prefix i
    prefixes = np.where(inside, x[..., None, :], np.nan)
    count = np.arange(n + 1)
    center = np.full((*x.shape[:-1], n + 1), np.nan)
    var = np.zeros((*x.shape[:-1], n + 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        med = _prefix_median(prefixes, count)
        mad = _prefix_median(np.abs(prefixes - med[..., None]), count) * 1.4826
        clipped = np.clip(prefixes, (med - CLIP_MADS * mad)[..., None], (med + CLIP_MADS * mad)[..., None])
        robust = count >= 3
        chosen = np.where(robust[:, None], clipped, prefixes)
        total = np.nansum(chosen, axis=-1)
        center[..., 1:] = (total / np.maximum(count, 1))[..., 1:]
        squares = np.nansum((chosen - center[..., None]) ** 2, axis=-1)
        var[..., 2:] = (squares / np.maximum(count - 1, 1))[..., 2:]
    return center, var


def _prefix_median(prefixes: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Medians of NaN-padded rows whose first count[i] entries are the values (np.sort puts NaN last)."""
    ordered = np.sort(prefixes, axis=-1)
    lo = np.maximum((count - 1) // 2, 0)
    hi = np.minimum(count // 2, prefixes.shape[-1] - 1)
    shape = (*prefixes.shape[:-1], 1)
    low = np.take_along_axis(ordered, np.broadcast_to(lo[:, None], shape), axis=-1)[..., 0]
    high = np.take_along_axis(ordered, np.broadcast_to(hi[:, None], shape), axis=-1)[..., 0]
    return np.asarray((low + high) / 2)


def robust_center(x: np.ndarray) -> float:
    """The robust center of all of x (1-D): see prefix_estimates."""
    return float(prefix_estimates(np.asarray(x, dtype=float))[0][-1])


def predictable_estimates(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each round i (last axis), the center and variance estimated from rounds before i only. Round 1 has no
    past: its center is NaN (log_wealth bets from PRIOR_CENTER). The variance is shrunk towards PRIOR_SCALE**2
    (worth PRIOR_WEIGHT rounds) and inflated by 1 + 1/(i-1) for the uncertainty of the center."""
    n = x.shape[-1]
    center, var = prefix_estimates(x)
    center, var = center[..., :n], var[..., :n]
    dof = np.maximum(np.arange(n) - 1, 0)
    shrunk = (PRIOR_WEIGHT * PRIOR_SCALE ** 2 + dof * var) / (PRIOR_WEIGHT + dof)
    return center, shrunk * (1 + 1 / np.maximum(np.arange(n), 1))


def log_wealth(x: np.ndarray, mu: np.ndarray | float) -> np.ndarray:
    """log K_n(mu) for every prefix: x is (..., n) log ratios, mu broadcasts against x's leading axes with one
    extra trailing axis, e.g. x (S, n) with mu 0.0 gives (S, n); x (n,) with mu (G, 1) gives (G, n)."""
    center, var = predictable_estimates(x)
    theta = MULT * (np.nan_to_num(center, nan=PRIOR_CENTER) - mu) / var
    stake = np.where(np.arange(x.shape[-1]) == 0, FIRST_LAMBDA, LAMBDA)
    return np.cumsum(np.log1p(stake * np.tanh(theta * (x - mu))), axis=-1)


@dataclass(frozen=True)
class ConfidenceSequence:
    """The rule's state after n rounds, in log-ratio units (relative: math.expm1). The true center lies in the open
    interval (lower, upper) at every round at once with probability >= 1 - alpha: lower and upper are the nearest
    rejected grid points around the candidates not rejected."""
    n: int
    estimate: float  # robust center of the log ratios
    lower: float
    upper: float
    bounded: bool  # False: candidates at the grid's edge are not rejected yet (too few rounds to bound it)
    alpha: float
    open_half_width: float = math.inf  # half the span of the candidates not rejected yet (finite even unbounded)

    @property
    def half_width(self) -> float:
        return (self.upper - self.lower) / 2


def grid_for(x: np.ndarray) -> np.ndarray:
    """Candidate centers: multiples of GRID_STEP (0 among them) from at least -1.5 to +1.5 (ratios 0.22-4.5),
    wider when the data are: the same candidate gets the same wealth whatever the round, so the verdict after n
    rounds does not depend on when it is computed."""
    lo = min(-GRID_HALF_RANGE, float(x.min()) - 0.5) if x.size else -GRID_HALF_RANGE
    hi = max(GRID_HALF_RANGE, float(x.max()) + 0.5) if x.size else GRID_HALF_RANGE
    return GRID_STEP * np.arange(math.floor(lo / GRID_STEP), math.ceil(hi / GRID_STEP) + 1)


def confidence_path(log_ratios: list[float] | np.ndarray, alpha: float) -> list[ConfidenceSequence]:
    """The confidence sequence after each round (running intersection: a candidate once rejected stays so)."""
    x = np.asarray(log_ratios, dtype=float)
    if x.size == 0:
        return []
    grid = grid_for(x)
    rejected = np.maximum.accumulate(log_wealth(x, grid[:, None]), axis=1) >= math.log(1 / alpha)
    estimates = prefix_estimates(x)[0]
    out = []
    for i in range(x.size):
        estimate = float(estimates[i + 1])
        kept = np.flatnonzero(~rejected[:, i])
        if kept.size == 0:  # no center fits (chance <= alpha under the assumption): nothing to call on
            out.append(ConfidenceSequence(i + 1, estimate, -math.inf, math.inf, False, alpha))
            continue
        first, last = int(kept[0]), int(kept[-1])
        bounded = first > 0 and last < grid.size - 1
        out.append(ConfidenceSequence(i + 1, estimate, float(grid[first - 1]) if first > 0 else -math.inf,
                                      float(grid[last + 1]) if last < grid.size - 1 else math.inf, bounded, alpha,
                                      float(grid[last] - grid[first]) / 2))
    return out


def confidence_sequence(log_ratios: list[float] | np.ndarray, alpha: float) -> ConfidenceSequence:
    """The confidence sequence after every round seen."""
    path = confidence_path(log_ratios, alpha)
    return path[-1] if path else ConfidenceSequence(0, 0.0, -math.inf, math.inf, False, alpha)


def call(seq: ConfidenceSequence, min_effect: float) -> str:
    """faster, slower, same, unstable or undecided (see the module's docstring); min_effect is relative."""
    m = math.log1p(min_effect)
    if seq.lower >= 0 and seq.estimate > m:
        return "faster"
    if seq.upper <= 0 and seq.estimate < -m:
        return "slower"
    if seq.bounded and -m <= seq.lower and seq.upper <= m:
        return "same"
    if seq.bounded and math.expm1(seq.half_width) > min_effect + UNSTABLE_MARGIN:
        return "unstable"
    return "undecided"
