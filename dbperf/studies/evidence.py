"""The words a study record may use of a figure against its published claim, decided by the figure's evidence and
nothing else: its interval (or its decided verdict), not its point estimate alone.

    holds           the interval lies inside the published range (a compared cell: and its verdict is decided)
    consistent      the point estimate is inside the range, the interval is not (or there is no interval, or the
                    cell's verdict is undecided): the data do not contradict the claim, nor establish it
    does not hold   the interval lies wholly outside the range
    inconclusive    the point estimate is outside, the interval reaches into the range (or there is none)

"holds" and "does not hold" need an interval that covers the true value at least MIN_COVERAGE (90%) of the time:
a min–max of 3 repeats covers their median with 75%, a ratio of two such ranges with 56%; below it the interval is
shown with its coverage and the word is one of the other two; in a record held to the latest catches
(catches.py: every new study run), there is no word on it at all: `not judged` (unjudged).

A figure that is arithmetic (derived from the probe's own definitions, not measured) gets no word. A figure whose
conditions the host does not meet (its `requires`: threads beyond the vCPUs, vCPUs that share a core, no PMU, a
release no registry serves) gets no number and no word: it is `not reproducible here`, with the measured reason.
Pure: the intervals are computed here from samples the figures' reader hands over."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Word = Literal["holds", "consistent", "does not hold", "inconclusive"]
WORDS: tuple[Word, ...] = ("holds", "consistent", "does not hold", "inconclusive")
NOT_REPRODUCIBLE = "not reproducible here"  # a status, not a word: nothing was measured that could be judged
CONFIDENCE = 0.95  # of the interval of a median over repeats
MIN_COVERAGE = 0.90  # of an interval a word "holds" or "does not hold" rests on


@dataclass(frozen=True)
class Interval:
    """Where the figure's true value lies, with how that was computed (`how`, said beside the figure)."""
    low: float
    high: float
    how: str
    exact: bool = False  # a deterministic count: no noise, the interval is the value
    coverage: float | None = None  # how often such an interval holds the true value; None: not stated

    def scaled(self, factor: float) -> Interval:
        lo, hi = sorted((self.low * factor, self.high * factor))
        return Interval(lo, hi, self.how, self.exact, self.coverage)

    @property
    def enough(self) -> bool:
        """Whether a word may rest on it: exact, or covering at least MIN_COVERAGE."""
        return self.exact or (self.coverage is not None and self.coverage >= MIN_COVERAGE - 1e-9)


def word(expect: tuple[float | None, float | None], value: float, interval: Interval | None,
         decided: bool | None = None) -> Word:
    """The word for `value` (with its `interval`) against the published range `expect` (min, max; None: open).
    `decided`: a compared cell's verdict (False: undecided, which never holds); None where no verdict applies."""
    lo, hi = expect

    def inside(x: float) -> bool:
        return (lo is None or x >= lo) and (hi is None or x <= hi)

    if interval is not None and interval.enough:
        if (lo is not None and interval.high < lo) or (hi is not None and interval.low > hi):
            return "does not hold"
        if inside(interval.low) and inside(interval.high) and decided is not False:
            return "holds"
    return "consistent" if inside(value) else "inconclusive"


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval | str:
    """The distribution-free interval of a median: the order statistics (x_(k), x_(n+1-k)) with the largest k whose
    coverage, 1 - 2·P(Binomial(n, 1/2) < k), is at least `confidence`. Too few values for that: why, as text."""
    xs = sorted(values)
    n = len(xs)
    best = None
    for k in range(1, n // 2 + 1):
        below = sum(math.comb(n, i) for i in range(k)) / 2 ** n
        if 1 - 2 * below >= confidence:
            best = (k, 1 - 2 * below)
    if best is None:
        return f"{n} repeat(s): too few for a {confidence:.0%} interval of the median (6 or more)"
    k, coverage = best
    return Interval(xs[k - 1], xs[n - k], f"{coverage:.1%} interval of the median of {n} repeats (order statistics)",
                    coverage=coverage)


def spread_interval(low: float, high: float, repeats: int | None) -> Interval:
    """The range of a probe's repeats, as its JSON keeps it (min, max): it covers their median with probability
    1 - 2^(1-n)."""
    if repeats and repeats > 1:
        coverage: float | None = 1 - 2 ** (1 - repeats)
        how = f"min–max of {repeats} repeats (covers the median with {coverage:.1%})"
    else:
        coverage, how = None, "min–max of the repeats (their count not kept: coverage unknown)"
    return Interval(low, high, how, coverage=coverage)


def proportion_interval(count: int, of: int, z: float = 1.96) -> Interval:
    """Wilson's 95% score interval of a proportion count / of: it stays inside [0, 1] and is not empty at 0 or 1."""
    p = count / of
    centre = (p + z * z / (2 * of)) / (1 + z * z / of)
    half = z / (1 + z * z / of) * math.sqrt(p * (1 - p) / of + z * z / (4 * of * of))
    low = 0.0 if count == 0 else max(0.0, centre - half)  # exact ends where the count is: no rounding residue
    high = 1.0 if count == of else min(1.0, centre + half)
    return Interval(low, high, f"Wilson's 95% interval of {count:,} in {of:,}", coverage=0.95)


def ratio_interval(top: Interval, bottom: Interval) -> Interval | None:
    """top / bottom, each anywhere in its interval (conservative: both ends at their extremes)."""
    if bottom.low <= 0 or bottom.high <= 0:
        return None
    if top.exact and bottom.exact:  # deterministic counts: their ratio is exact too
        return Interval(top.low / bottom.low, top.low / bottom.low, top.how, exact=True, coverage=1.0)
    how = top.how if top.how == bottom.how else f"{top.how}; over {bottom.how}"
    # both ends at their extremes: it holds the true ratio whenever both hold theirs (independent runs)
    coverage = top.coverage * bottom.coverage if top.coverage is not None and bottom.coverage is not None else None
    covers = f"; covers with {coverage:.1%}" if coverage is not None else "; coverage not stated"
    return Interval(top.low / bottom.high, top.high / bottom.low, f"ratio of two ranges ({how}{covers})",
                    coverage=coverage)


COVERAGE_SAID = (  # how an interval's `how` states its coverage, for records written before it was kept apart
    (re.compile(r"covers with ([0-9.]+)%\)$"), 1),
    (re.compile(r"^ratio of two ranges \(min–max of (\d+) repeats.*; over min–max of (\d+) repeats"), 2),
    (re.compile(r"^ratio of two ranges \(min–max of (\d+) repeats \(covers"), 3),
    (re.compile(r"covers the median with ([0-9.]+)%"), 1),
    (re.compile(r"^([0-9.]+)% interval of the median"), 1),
    (re.compile(r"^the sequential rule's ([0-9.]+)% "), 1),
    (re.compile(r"^Wilson's ([0-9.]+)% interval"), 1),
)


def coverage_said(how: str) -> float | None:
    """The coverage an interval's description states (a record written before coverage was kept apart), else None."""
    ratio = how.startswith("ratio of two ranges")
    for pattern, kind in COVERAGE_SAID[:3] if ratio else COVERAGE_SAID[3:]:
        m = pattern.search(how)
        if m is None:
            continue
        if kind == 1:
            return float(m.group(1)) / 100
        if kind == 2:
            return (1 - 2 ** (1 - int(m.group(1)))) * (1 - 2 ** (1 - int(m.group(2))))
        return (1 - 2 ** (1 - int(m.group(1)))) ** 2  # one description: both ranges of that many repeats
    return None


def said(w: Word | None, claim: str, interval: Interval | None, why_none: str | None) -> str:
    """The verdict column's text: the word, the claim it is about, and the interval's basis (or why none)."""
    if w is None:
        return ""
    basis = ("no interval: " + (why_none or "none was kept") if interval is None
             else f"exact: {interval.how}" if interval.exact
             else f"interval {_num(interval.low)}–{_num(interval.high)}, {interval.how}"
             + ("" if interval.enough else f"; below the {MIN_COVERAGE:.0%} coverage a word needs"))
    return w + (f": {claim}" if claim else "") + f" ({basis})"


def unjudged(claim: str, interval: Interval) -> str:
    """The verdict column's text where the interval covers too little for any word (a record held to the latest
    catches: catches.py), with the claim and the interval's basis."""
    return ("not judged" + (f": {claim}" if claim else "") + f" (interval {_num(interval.low)}–{_num(interval.high)}, "
            f"{interval.how}; below the {MIN_COVERAGE:.0%} coverage a word needs)")


def _num(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def not_reproducible(reason: str) -> str:
    """The status of a figure the host cannot measure as published, with the measured reason."""
    return f"{NOT_REPRODUCIBLE}: {reason}"
