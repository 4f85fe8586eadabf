"""Central value, spread and significance of a few repeated measurements ([Ronström 2008-03-25]; [benchstat]).

- median, min, max; a distribution-free 95% CI on the median from order statistics, when n allows (n >= 6);
- `trimmed`: drop the best and the worst repeat and average the rest (the tuning ladder's method);
- Mann-Whitney U (two-sided, exact for small n) between two targets; a difference is significant only with
  p < 0.05 and at least 4 repeats a side, as benchstat asks; with fewer, significance is unknown (None).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from scipy import stats as scipy_stats

ALPHA = 0.05
MIN_REPEATS_FOR_TEST = 4
NOISY_SPREAD = 0.10


@dataclass(frozen=True)
class Summary:
    n: int
    center: float
    median: float
    minimum: float
    maximum: float
    ci_low: float | None
    ci_high: float | None

    @property
    def spread(self) -> float:
        """(max - min) / median: above 10% the cell is flagged as noisy."""
        return (self.maximum - self.minimum) / self.median if self.median else 0.0

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD


def median_ci(values: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """The widest-needed order-statistic interval [x_(k), x_(n-k+1)] that covers the median with at least
    `confidence`; None when even [min, max] covers less (n < 6 for 95%)."""
    n = len(values)
    xs = sorted(values)
    best = None
    for k in range(1, n // 2 + 1):
        # P(x_(k) <= median <= x_(n-k+1)) = 1 - 2 * P(Bin(n, 1/2) <= k - 1)
        coverage = 1 - 2 * scipy_stats.binom.cdf(k - 1, n, 0.5)
        if coverage >= confidence:
            best = (xs[k - 1], xs[n - k])
        else:
            break
    return best


def trimmed_mean(values: list[float]) -> float:
    if len(values) < 3:
        return statistics.fmean(values)
    xs = sorted(values)
    return statistics.fmean(xs[1:-1])


def summarize(values: list[float], aggregate: str = "median") -> Summary:
    if not values:
        raise ValueError("no values to summarize")
    median = statistics.median(values)
    ci = median_ci(values)
    return Summary(
        n=len(values),
        center=trimmed_mean(values) if aggregate == "trimmed" else median,
        median=median,
        minimum=min(values),
        maximum=max(values),
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
    )


def significance(a: list[float], b: list[float]) -> tuple[bool | None, float | None]:
    """(significant, p). None when either side has fewer than 4 repeats: the test could not say."""
    if len(a) < MIN_REPEATS_FOR_TEST or len(b) < MIN_REPEATS_FOR_TEST:
        return None, None
    if len(set(a) | set(b)) == 1:
        return False, 1.0
    p = float(scipy_stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return p < ALPHA, p
