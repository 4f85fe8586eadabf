"""The verdict on one (target, benchmark, threads) against the base, ClickHouse's way (BRIEF §10), plus a paired view.

- **Unpaired** (ClickHouse's `eqmed`): diff = median(target) / median(base) - 1. Noise threshold: pool both sides'
  repeats, relabel them (every relabeling when there are few, else 10,000 seeded random ones), and take the 99th
  percentile of |median(X) - median(Y)| / median(base).
- **Paired**: repeats are interleaved in rounds (a slow round is slow for both), so the per-round ratio
  target/base removes what the round shared. diff = geometric mean of the per-round ratios - 1; its threshold is the
  99th percentile of |mean log ratio| under random sign flips (every pattern when there are few), the exact null of
  "target and base are exchangeable within a round". The mean, not the median: a sign-flipped median ties at its
  maximum for a quarter of the patterns at n = 8 and could never decide.
- The view with the **tighter** threshold decides (both are exact tests at 1%, so taking the better of two is at
  most a 2% false-alarm rate before the minimum effect cuts it further), and the verdict says which.
- **faster / slower**: |diff| > threshold and |diff| > min_effect. **same**: not changed and threshold <=
  min_effect: a change of min_effect would have been seen. **unstable**: threshold > min_effect + 10% (ClickHouse's
  margin). **undecided**: in between; `min_detectable_effect` is what it could still hide at this n.
- A view whose 99th percentile is its largest possible value can call nothing at this n (unpaired: fewer than 5
  repeats a side; paired: fewer than 8 rounds): only a view that can decide is chosen, and when neither can the
  cell is **undecided** for want of repeats, with no detectable effect to quote.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass
from typing import Literal

import numpy as np

DEFAULT_MIN_EFFECT = 0.02
UNSTABLE_MARGIN = 0.10  # ClickHouse: unstable when the threshold exceeds the report threshold + 10%
QUANTILE = 0.99
RELABELINGS = 10_000  # random relabelings when enumerating every one would take more
SEED = 20140101  # fixed: the same samples always give the same threshold

Verdict = Literal["faster", "slower", "same", "undecided", "unstable"]
DECIDED: tuple[Verdict, ...] = ("faster", "slower", "same")


@dataclass(frozen=True)
class View:
    """One way of looking at the difference: its diff (relative to the base), its noise threshold, and n."""
    name: Literal["unpaired", "paired"]
    diff: float
    threshold: float
    n: int  # repeats a side (unpaired: the smaller side) or rounds (paired)
    can_decide: bool  # False: the threshold is the statistic's maximum, no difference can exceed it at this n


@dataclass(frozen=True)
class CellVerdict:
    verdict: Verdict
    decided_by: Literal["unpaired", "paired"]
    diff: float  # the deciding view's
    noise_threshold: float  # the deciding view's
    min_effect: float
    unpaired: View
    paired: View | None

    @property
    def decided(self) -> bool:
        return self.verdict in DECIDED

    @property
    def min_detectable_effect(self) -> float | None:
        """The smallest change this cell would have called at its current n: what an undecided cell could hide;
        None when no view can decide at this n (too few repeats)."""
        view = self.paired if self.decided_by == "paired" else self.unpaired
        return max(self.noise_threshold, self.min_effect) if view and view.can_decide else None


def _quantile(values: np.ndarray) -> tuple[float, bool]:
    """The 99th percentile and whether anything can exceed it. "higher": the threshold is a value the statistic
    actually takes, so "exceeds" means what it says."""
    q = float(np.quantile(values, QUANTILE, method="higher"))
    return q, q < float(values.max()) * (1 - 1e-12)


def unpaired_threshold(target: list[float], base: list[float]) -> tuple[float, bool]:
    """99th percentile of |median(X) - median(Y)| / median(base) over relabelings of the pooled repeats."""
    pooled = np.asarray(target + base, dtype=float)
    n, k = len(pooled), len(target)
    if math.comb(n, k) <= RELABELINGS:
        mask = np.zeros((math.comb(n, k), n), dtype=bool)
        for row, chosen in enumerate(itertools.combinations(range(n), k)):
            mask[row, list(chosen)] = True
    else:
        rng = np.random.default_rng(SEED)
        order = np.argsort(rng.random((RELABELINGS, n)), axis=1)
        mask = np.zeros((RELABELINGS, n), dtype=bool)
        np.put_along_axis(mask, order[:, :k], True, axis=1)
    values = np.broadcast_to(pooled, mask.shape)
    x = np.median(values[mask].reshape(len(mask), k), axis=1)
    y = np.median(values[~mask].reshape(len(mask), n - k), axis=1)
    q, can_decide = _quantile(np.abs(x - y))
    return q / statistics.median(base), can_decide


def paired_threshold(log_ratios: list[float]) -> tuple[float, bool]:
    """99th percentile of |mean| of the log ratios under random sign flips, as a relative change."""
    x = np.asarray(log_ratios, dtype=float)
    n = len(x)
    if 2 ** n <= RELABELINGS:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    else:
        signs = np.where(np.random.default_rng(SEED).random((RELABELINGS, n)) < 0.5, -1.0, 1.0)
    q, can_decide = _quantile(np.abs((signs * x).mean(axis=1)))
    return math.expm1(q), can_decide


def unpaired_view(target: list[float], base: list[float]) -> View:
    diff = statistics.median(target) / statistics.median(base) - 1
    return View("unpaired", diff, *_threshold_n(unpaired_threshold(target, base), min(len(target), len(base))))


def paired_view(rounds: list[tuple[float, float]]) -> View:
    """`rounds`: (target, base) measured in the same round."""
    logs = [math.log(t / b) for t, b in rounds]
    return View("paired", math.expm1(statistics.fmean(logs)), *_threshold_n(paired_threshold(logs), len(logs)))


def _threshold_n(threshold: tuple[float, bool], n: int) -> tuple[float, int, bool]:
    return threshold[0], n, threshold[1]


def decide(target: list[float], base: list[float], rounds: list[tuple[float, float]] | None = None,
           min_effect: float = DEFAULT_MIN_EFFECT) -> CellVerdict | None:
    """The verdict on `target` against `base` (positive values, higher is better, e.g. QPS); `rounds` pairs the
    repeats measured in the same round. None when either side has fewer than 2 repeats: nothing to randomize."""
    if len(target) < 2 or len(base) < 2 or min(base) <= 0 or min(target) <= 0:
        return None
    unpaired = unpaired_view(target, base)
    paired = paired_view(rounds) if rounds and len(rounds) >= 2 else None
    able = [v for v in (unpaired, paired) if v is not None and v.can_decide]
    view = min(able, key=lambda v: v.threshold) if able else unpaired
    verdict: Verdict
    if not able:
        verdict = "undecided"
    elif abs(view.diff) > view.threshold and abs(view.diff) > min_effect:
        verdict = "faster" if view.diff > 0 else "slower"
    elif view.threshold <= min_effect:
        verdict = "same"
    elif view.threshold > min_effect + UNSTABLE_MARGIN:
        verdict = "unstable"
    else:
        verdict = "undecided"
    return CellVerdict(verdict, view.name, view.diff, view.threshold, min_effect, unpaired, paired)
