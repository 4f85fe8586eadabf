"""A level shift within a target's per-round ratios: a change point the verdict must not decide across,
unless its call holds at both levels.

On a VM the host's speed, or one process's state (where its pages, files or library landed), can change between
rounds and stay changed: a target that draws a slow state for rounds 1-5 and a fast one from round 6 on gives
ratios at two levels. Both verdict rules assume one level; the sequential rule would happily call the mixture.

The test (Pettitt's, by permutation): rank the log ratios, and for every split with at least MIN_SEGMENT rounds on
each side take |sum of centered ranks before it| / sqrt(k (n - k)); the largest is the statistic, its split the
candidate change point. Its p-value counts seeded random permutations of the ranks with a statistic at least as
large (ranks: heavy tails do not matter; permutations: exact under "no change", whatever the distribution). A shift
is reported when p <= P_SHIFT and the two segments' medians differ by at least SHIFT_EFFECTS x min_effect: a
shift too small to matter is not worth withholding a verdict for. A false flag costs time, not a false verdict
(the cell stays undecided while flagged), so the level is looser than the verdict's: at 8 rounds nothing tighter
than about 5% can be reached at all.

What a shift withholds (stats/verdict.py): the mixture of two levels is what the sequential rule's interval
describes, and a call on it could be wrong at either level (0.90 then 1.05: slower, or faster, by how the rounds
fell). A faster (slower) call is kept when both levels lie beyond the minimum effect on its side (1.06 then 1.17):
then the direction holds whichever level is the target's, and the call is one the rule made on the whole run, so
it adds no call the rule would not make without the check. "same" cannot survive a shift (the levels differ by
at least two minimum effects).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

MIN_SEGMENT = 3  # rounds on each side of a change point
P_SHIFT = 0.05
SHIFT_EFFECTS = 2.0  # the segments' medians must differ by at least this many min_effects
PERMUTATIONS = 2000
SEED = 20261123


@dataclass(frozen=True)
class LevelShift:
    after_round: int  # the last round of the first level (1-based)
    before: float  # median ratio target/base before the shift
    after: float  # and from the round after it on
    p_value: float

    def describe(self) -> str:
        return f"level shift after round {self.after_round}: ratios {self.before:.2f} → {self.after:.2f}"

    def beyond(self, call: str, min_effect: float) -> bool:
        """Both levels lie beyond the minimum effect on the side of `call` (faster or slower)."""
        m = math.log1p(min_effect)
        levels = (math.log(self.before), math.log(self.after))
        if call == "faster":
            return min(levels) > m
        return call == "slower" and max(levels) < -m


def _statistic(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pettitt-type statistic of each row of ranks (..., n): the largest standardized |cumulative centered rank|
    over the allowed splits, and the split (the number of rounds before it)."""
    n = ranks.shape[-1]
    k = np.arange(MIN_SEGMENT, n - MIN_SEGMENT + 1)
    sums = np.cumsum(ranks - (n + 1) / 2, axis=-1)[..., k - 1]
    scaled = np.abs(sums) / np.sqrt(k * (n - k))
    return scaled.max(axis=-1), k[scaled.argmax(axis=-1)]


def find_level_shift(log_ratios: list[float], min_effect: float,
                     rounds: list[int] | None = None) -> LevelShift | None:
    """The level shift in the per-round log ratios (in round order), or None. `rounds`: their round numbers (a
    failed round leaves a gap), 1, 2, ... when not given."""
    x = np.asarray(log_ratios, dtype=float)
    n = len(x)
    if n < 2 * MIN_SEGMENT:
        return None
    ranks = rankdata(x)
    observed, split = _statistic(ranks)
    before, after = float(np.median(x[: int(split)])), float(np.median(x[int(split):]))
    if abs(after - before) < SHIFT_EFFECTS * math.log1p(min_effect):
        return None
    rng = np.random.default_rng(SEED)
    shuffled = rng.permuted(np.broadcast_to(ranks, (PERMUTATIONS, n)), axis=1)
    null, _ = _statistic(shuffled)
    p = float((1 + np.sum(null >= observed - 1e-12)) / (1 + PERMUTATIONS))
    if p > P_SHIFT:
        return None
    last = int(split)
    return LevelShift(rounds[last - 1] if rounds else last, math.exp(before), math.exp(after), p)
