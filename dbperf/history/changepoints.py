"""Change points in a series by E-divisive means (Matteson and James 2014), the method MongoDB and Apache Otava use
to find the commit or version where performance stepped: Apache Otava's `change_point_divisive` does the detection
(the original algorithm: recursive splits kept while a permutation test finds them significant). Each step is then
described: its size (median after / median before − 1, each over the segment up to the neighbouring change point),
the two columns it falls between, and a Mann-Whitney U p-value of the two segments as its significance.

The permutation test draws from a generator of its own seeded here, so the same series gives the same change points
every time (and NumPy's global generator is left alone)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from dbperf.errors import UserError

PVALUE = 0.01  # of E-divisive's permutation test; stricter than MongoDB's 0.05: fewer false steps per series
PERMUTATIONS = 100
SEED = 1


@dataclass(frozen=True)
class Step:
    index: int  # the first point after the step
    before: float  # median of the segment before
    after: float  # median of the segment after
    p_value: float | None  # Mann-Whitney U, two-sided, of the two segments

    @property
    def size(self) -> float:
        return self.after / self.before - 1 if self.before else 0.0


def change_points(values: Sequence[float], pvalue: float = PVALUE, permutations: int = PERMUTATIONS,
                  seed: int = SEED) -> list[int]:
    """Indices where a new segment begins, ascending."""
    try:
        from otava.change_point_divisive.calculator import PairDistanceCalculator
        from otava.change_point_divisive.detector import ChangePointDetector
        from otava.change_point_divisive.significance_test import PermutationsSignificanceTester
    except ImportError as e:
        raise UserError(f"change points need Apache Otava (pip install apache-otava): {e}") from None
    if len(values) < 4:
        return []
    # A point is kept while (permuted statistics at least as large) / (permutations + 1) <= pvalue: the same test
    # as otava's compute_change_points_orig, with the permutation count and the seed ours.
    tester = PermutationsSignificanceTester(max_pvalue=pvalue, permutations=permutations,
                                            calculator=PairDistanceCalculator, seed=seed)
    found = ChangePointDetector(tester, PairDistanceCalculator).get_change_points(
        np.asarray(values, dtype=np.float64))
    return sorted(int(p.index) for p in found if 0 < int(p.index) < len(values))


def steps(values: Sequence[float], pvalue: float = PVALUE, permutations: int = PERMUTATIONS,
          seed: int = SEED) -> list[Step]:
    points = change_points(values, pvalue, permutations, seed)
    bounds = [0, *points, len(values)]
    out = []
    for k, index in enumerate(points, 1):
        before, after = list(values[bounds[k - 1]:index]), list(values[index:bounds[k + 1]])
        p = None
        if len(before) >= 2 and len(after) >= 2:
            p = float(scipy_stats.mannwhitneyu(before, after, alternative="two-sided").pvalue)
        out.append(Step(index, statistics.median(before), statistics.median(after), p))
    return out
