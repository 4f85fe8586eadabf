"""The verdict on one (target, benchmark, threads) against the base.

**The rule** (`verdict_on_rounds`): the anytime-valid sequential rule of stats/sequential.py on the per-round log
ratios target/base, or, for a run whose rounds were planned (`planned`: a fixed repeats, or what a budget afforded;
stats/rule_history.run_plans says which runs), the planned looks of stats/planned.py; one verdict per metric (wall
clock: QPS; CPU time: queries per CPU second), each at METRIC_ALPHA so that a cell called changed by either metric
stays within ALPHA, at every round looked at; a cell whose ratios shift level (stats/level_shift.py) is left
undecided with the reason, unless its call holds at both levels. The stopping rule of `repeats = "auto"`
(runner/rounds.py) and the report (stats/rqps_matrix.py) both call `verdict_on_rounds`, so the same data get the
same call. Fixed `repeats = N` runs use it too, their N the plan: one rule for every run, and a reader who reruns
and looks again is stopping optionally as well.

**The randomization views** below (ClickHouse's way, [ClickHouse perf comparison], plus a paired view) are kept as
descriptions of the data (the report shows both views) and as the verdict where no round pairs exist (`decide`: one
look, 1%):

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, cast

import numpy as np

from dbperf.experiment.keys import DEFAULT_MIN_EFFECT
from dbperf.metrics import CPU, WALL, Metric
from dbperf.stats.level_shift import find_level_shift
from dbperf.stats.planned import planned_interval
from dbperf.stats.process_level import process_interval, rounds_per_process
from dbperf.stats.sequential import UNSTABLE_MARGIN, ConfidenceSequence, call, confidence_sequence

ALPHA = 0.01  # per cell: the chance that an A/A cell is ever called changed, by either metric
METRICS = (WALL, CPU)  # the two a cell is decided by: wall clock, else CPU time
METRIC_ALPHA = ALPHA / len(METRICS)  # split between the metrics, so that "decided by either" stays within ALPHA
QUANTILE = 0.99
QUANTILE_ALPHA = 1 - QUANTILE
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
    unpaired: View | None  # None: not described (the stopping loop, which needs only the call)
    paired: View | None
    metric: Metric = WALL
    # "sequential": on round pairs (noise_threshold = the confidence interval's half-width), stats/planned.py's
    # looks when `planned` is set, else stats/sequential.py's anytime-valid rule; "randomization": `decide`, one
    # look, where no round pairs exist
    rule: Literal["sequential", "randomization"] = "randomization"
    level_shift: str | None = None  # the ratios changed level: the call was withheld, or it holds at both levels
    lower: float | None = None  # sequential: the confidence interval of the relative change (-1..inf; None: none)
    upper: float | None = None
    alpha: float = QUANTILE_ALPHA
    planned: int | None = None  # sequential: the rounds its run planned (stats/planned.py); None: anytime-valid
    # The server processes (blocks of rounds, stats/process_level.py) the interval rests on, its unit; None: one
    # process a target for the whole run, the round the unit (the interval speaks of those processes)
    processes: int | None = None

    @property
    def decided(self) -> bool:
        return self.verdict in DECIDED

    @property
    def min_detectable_effect(self) -> float | None:
        """What an undecided cell could still hide: sequential, the largest change inside its confidence interval;
        randomization, the smallest change it would have called at its n. None when nothing can be called at this
        n (too few repeats or rounds)."""
        if self.rule == "sequential":
            if self.lower is None or self.upper is None or not (self.paired and self.paired.can_decide):
                return None
            return max(abs(self.lower), abs(self.upper))
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


def _with_level_shift(word: Verdict, logs: list[float], rounds: list[int],
                      min_effect: float) -> tuple[Verdict, str | None]:
    """The sequential call and its note once a level shift in the rounds is looked for: a shift leaves the call
    undecided unless both levels are beyond the effect the same way."""
    shift = find_level_shift(logs, min_effect, rounds)
    if shift is None:
        return word, None
    if word in ("faster", "slower") and shift.beyond(word, min_effect):
        return word, f"{shift.describe()}, both {word}: called"
    return "undecided", shift.describe()


@dataclass(frozen=True)
class ProcessPlan:
    """Which process block each round ran in (CellRecord.process), and the run's plan of them (`processes = P`)."""
    process_of: Mapping[int, int]
    processes: int
    ended: bool = False  # the group's rounds are over (a report): its last block counts as it is

    @classmethod
    def of(cls, process_of: Mapping[int, int], processes: int | None, ended: bool = False) -> ProcessPlan | None:
        """The plan of a run with `processes` above 1; None for one process a target (the round the unit)."""
        return cls(process_of, processes, ended) if processes and processes > 1 else None

    def applies(self, pairs: list[tuple[int, float, float]]) -> bool:
        return self.processes > 1 and any(r in self.process_of for r, _, _ in pairs)


def _interval_and_call(pairs: list[tuple[int, float, float]], logs: list[float], min_effect: float, alpha: float,
                       planned: int | None, blocks: ProcessPlan | None
                       ) -> tuple[ConfidenceSequence, Verdict, str | None, int | None]:
    """The rule's interval, its call, the level shift's note and the processes it rests on: on process blocks
    (stats/process_level.py), else on rounds (planned looks or the anytime-valid sequence)."""
    if blocks is not None and blocks.applies(pairs):
        cs, processes = process_interval(pairs, blocks.process_of, alpha, blocks.processes,
                                         rounds_per_process(planned, blocks.processes), blocks.ended)
        return cs, cast(Verdict, call(cs, min_effect)), None, processes
    cs = (planned_interval([r for r, _, _ in pairs], logs, alpha, planned) if planned
          else confidence_sequence(logs, alpha))
    word, shift_note = _with_level_shift(cast(Verdict, call(cs, min_effect)), logs, [r for r, _, _ in pairs],
                                         min_effect)
    return cs, word, shift_note, None


def verdict_on_rounds(pairs: list[tuple[int, float, float]], target: list[float], base: list[float],
            min_effect: float = DEFAULT_MIN_EFFECT, metric: Metric = WALL,
            alpha: float = METRIC_ALPHA, describe: bool = True, planned: int | None = None,
            blocks: ProcessPlan | None = None) -> CellVerdict | None:
    """The verdict on one metric (positive, higher is better: QPS, queries per CPU second). `pairs`: (round, target,
    base) of the same round, in round order (`pair_rounds`); `target`, `base`: every repeat of each side (the unpaired
    view describes them). Without two round pairs: the one-look randomization verdict (`decide`). None when either
    side has fewer than 2 repeats. `describe=False` leaves out the unpaired view (a randomization over the pooled
    repeats, most of the cost), which only reports show: the stopping loop asks after every round. `planned`: the
    rounds the run planned, whose looks stats/planned.py's rule takes (None: the anytime-valid rule of
    stats/sequential.py, a run's rule before it or a group whose plan was not kept). `blocks`: the run started
    each server target as several processes; the unit is then the process block (stats/process_level.py) and no
    level shift is looked for (a level a process drew is what the rule's unit takes in)."""
    pairs = [(r, t, b) for r, t, b in pairs if t > 0 and b > 0]
    if len(pairs) < 2:
        fallback = decide(target, base, None, min_effect)
        return replace(fallback, metric=metric) if fallback else None
    if len(target) < 2 or len(base) < 2 or min(target) <= 0 or min(base) <= 0:
        return None
    logs = [math.log(t / b) for _, t, b in pairs]
    cs, word, shift_note, processes = _interval_and_call(pairs, logs, min_effect, alpha, planned, blocks)
    finite = math.isfinite(cs.lower) and math.isfinite(cs.upper)
    # Unbounded (too few rounds): half the span of the changes not ruled out yet, over the candidates examined (the
    # grid reaches ratios of 0.22-4.5 at least), so the true width is at least that; none fits: the data's half-span.
    half = cs.half_width if finite else cs.open_half_width
    threshold = math.expm1(half if math.isfinite(half) else (max(logs) - min(logs)) / 2)
    diff = math.expm1(cs.estimate)
    paired = View("paired", diff, threshold, len(logs), cs.bounded)
    unpaired = unpaired_view(target, base) if describe else None
    return CellVerdict(word, "paired", diff, threshold, min_effect, unpaired, paired, metric,
                       "sequential", shift_note,
                       math.expm1(cs.lower) if finite else None, math.expm1(cs.upper) if finite else None, alpha,
                       planned, processes)


def pair_rounds(target: str, target_runs: Sequence[tuple[int, float | None]],
                base_runs: Sequence[tuple[int, str | None, float | None]]) -> list[tuple[int, float, float]]:
    """(round, target, base) per round, in round order. `target_runs`: (round, value); `base_runs`: (round, partner,
    value). A duet's base ran once per other target, at the same moment as it: its measurement with partner ==
    target is the pair; otherwise (interleaved rounds) the base's measurement of that round without a partner.
    Failed measurements (None) pair with nothing."""
    base: dict[tuple[int, str | None], float] = {(r, p): v for r, p, v in base_runs if v is not None}
    out = []
    for r, value in sorted(target_runs, key=lambda rv: rv[0]):
        partner = base.get((r, target), base.get((r, None)))
        if value is not None and partner is not None:
            out.append((r, value, partner))
    return out


def deciding(wall: CellVerdict | None, cpu: CellVerdict | None) -> CellVerdict | None:
    """The verdict that decides the cell: wall clock when it decided (the headline), else CPU time when it did,
    else wall clock's (undecided) one; read its `metric` for which."""
    if wall is not None and wall.decided:
        return wall
    if cpu is not None and cpu.decided:
        return cpu
    return wall or cpu
