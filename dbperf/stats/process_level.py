"""A verdict whose unit is the server process, for runs that start each server target as several processes.

**Why**: the round-level rules (stats/sequential.py, stats/planned.py) take a run's rounds as exchangeable given the
past. A server target serves every round of a run from one process, and whatever that process drew for its life
(where its shared memory and binary landed, its data files' placement, its background threads' phase) is in every
round: their interval covers the ratio of *those two processes*, and no count of rounds averages the draw out. An
independent rerun draws again, and may decide the other way (benchmarks/verdicts/rerun.py measures how often).

**The design**: a run with `processes = P` restarts every lab-started server target between P blocks of a group's
rounds (runner/process_blocks.py: the base, its A/A copy and the others at the same boundary, so block k pairs the
k-th process of each side). The unit above the round is the block: its log ratio is the mean of its rounds' log
ratios, x_k = mean(log(target / base)) over block k. Given random per-process draws of either side that do not
depend on the block's index, the x_k are independent and identically distributed about the builds' center, whatever
the rounds inside a block share; the rule is stats/planned.py's group-sequential t interval on them, its looks at
the blocks a half, three quarters and all of the way through the plan of P (the first at FIRST_LOOK blocks, or at
P), its reserve covering an `--extend` beyond P. So the cell's error stays within the rule's alpha per metric at
every look, **of the builds**, not of the processes. A block counts once it is complete (its last planned round
measured, or a later block begun, or the group's rounds over): an unfinished block would weigh a few rounds as much
as a whole process while more of them may come.

**What it costs**: the interval's width is set by the spread of whole processes and their count, t_{P-1} · sd(x) /
sqrt(P), not by the rounds: with P = 3 nothing under about 8 sd can be called at 0.5% (t with 2 degrees of freedom);
P >= 5 is the useful range. The rounds inside a block still narrow each x_k's own noise.

Pure: the callers say which process block each round belongs to (CellRecord.process) and the plan's P."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy.stats import f

from dbperf.stats.planned import MIN_PAIRS, planned_interval, price
from dbperf.stats.sequential import ConfidenceSequence, confidence_sequence


def complete_blocks(pairs: Sequence[tuple[int, float, float]], process_of: Mapping[int, int],
                    rounds_per_process: int | None, ended: bool = False) -> dict[int, list[float]]:
    """The log ratios of each complete block (block -> its rounds' log ratios, in block order). A block is complete
    when a later one has begun or, with `rounds_per_process` known, its last planned round has been measured, or
    the group's rounds have `ended` (a budget spent a round or two before the plan: its last process served what it
    served); the rounds without a block (measured before the run kept one) are left out."""
    by: dict[int, list[float]] = {}
    last_round: dict[int, int] = {}
    for r, t, b in pairs:
        block = process_of.get(r)
        if block is None or t <= 0 or b <= 0:
            continue
        by.setdefault(block, []).append(math.log(t / b))
        last_round[block] = max(last_round.get(block, 0), r)
    newest = max(by, default=0)
    out = {}
    for block in sorted(by):
        done = ended or block < newest or (rounds_per_process is not None
                                            and last_round[block] >= block * rounds_per_process)
        if done:
            out[block] = by[block]
    return out


def process_interval(pairs: Sequence[tuple[int, float, float]], process_of: Mapping[int, int], alpha: float,
                     processes: int | None, rounds_per_process: int | None, ended: bool = False
                     ) -> tuple[ConfidenceSequence, int]:
    """The interval of the builds' center from the complete blocks' mean log ratios, and how many blocks it rests
    on: stats/planned.py's looks over the plan of `processes` blocks, or (no plan) the anytime-valid sequence on
    the block means. Fewer than MIN_PAIRS complete blocks: unbounded."""
    blocks = complete_blocks(pairs, process_of, rounds_per_process, ended)
    means = [statistics.fmean(v) for v in blocks.values()]
    if len(means) < MIN_PAIRS:
        estimate = statistics.fmean(means) if means else 0.0
        return ConfidenceSequence(len(means), estimate, -math.inf, math.inf, False, alpha), len(means)
    if processes:
        return planned_interval(list(range(1, len(means) + 1)), means, alpha, processes), len(means)
    return confidence_sequence(means, alpha), len(means)


def rounds_per_process(planned: int | None, processes: int | None) -> int | None:
    """The rounds of one process block: the plan's rounds shared out over its processes (the last block may be
    shorter). None when the run starts one process a target, or its plan is not known."""
    if not processes or processes < 2 or not planned:
        return None
    return max(1, math.ceil(planned / processes))


def block_of(round_: int, per_process: int) -> int:
    """The process block of a round (1-based): rounds past the plan (an --extend) go on into further blocks."""
    return (round_ - 1) // per_process + 1


def process_spread(pairs: Sequence[tuple[int, float, float]], process_of: Mapping[int, int]
                   ) -> tuple[float, float] | None:
    """Where a cell's log ratio varies (the method of moments of a one-way layout, the blocks its groups): the
    standard deviation of a round within its process, and of a process's own level beyond what its rounds' noise
    gives its mean (0 when the blocks' means spread no more than that). None with fewer than two blocks of two
    rounds or more."""
    blocks = [v for v in complete_blocks(pairs, process_of, None, ended=True).values() if len(v) >= 2]
    if len(blocks) < 2:
        return None
    within = statistics.fmean(statistics.variance(v) for v in blocks)
    size = statistics.fmean(len(v) for v in blocks)
    between = statistics.variance([statistics.fmean(v) for v in blocks])
    return math.sqrt(within), math.sqrt(max(0.0, between - within / size))


@dataclass(frozen=True)
class LevelInterval:
    """A process's own level (its standard deviation, as a log ratio) over runs: the point estimate and the
    interval that covers it with `coverage`, with the degrees of freedom it rests on."""
    point: float
    low: float
    high: float
    coverage: float
    between_df: int
    within_df: int


def level_interval(runs: Sequence[Mapping[int, Sequence[float]]], coverage: float = 0.90) -> LevelInterval | None:
    """The interval on the process level of one cell over several runs (each run: its blocks' rounds, as log
    ratios), from the one-way random-effects layout with processes nested in runs: the mean squares between the
    processes of a run (about their run's mean) and within a process, F = MSB / MSW, and the exact interval on
    theta = sd_p² / sd_round², [(F / F_hi - 1) / n, (F / F_lo - 1) / n] (n: rounds a process; F_lo, F_hi the F
    distribution's quantiles on the two degrees of freedom), each end at least 0, scaled by the rounds' own variance
    (MSW, whose own error is small beside it with over a hundred degrees of freedom). None where fewer than two
    processes of two rounds or more are in any run."""
    ss_between = ss_within = 0.0
    df_between = df_within = 0
    sizes: list[int] = []
    for run in runs:
        blocks = [list(v) for v in run.values() if len(v) >= 2]
        if len(blocks) < 2:
            continue
        means = [statistics.fmean(v) for v in blocks]
        grand = statistics.fmean(means)
        ss_between += sum(len(v) * (m - grand) ** 2 for v, m in zip(blocks, means, strict=True))
        df_between += len(blocks) - 1
        ss_within += sum((x - m) ** 2 for v, m in zip(blocks, means, strict=True) for x in v)
        df_within += sum(len(v) - 1 for v in blocks)
        sizes += [len(v) for v in blocks]
    if df_between < 1 or df_within < 1:
        return None
    msb, msw = ss_between / df_between, ss_within / df_within
    # n0 of an unbalanced layout (Searle), over all the processes: about the rounds a process
    n0 = (sum(sizes) - sum(s * s for s in sizes) / sum(sizes)) / max(1, len(sizes) - 1) if len(sizes) > 1 else 1.0
    ratio = msb / msw if msw > 0 else math.inf
    tail = (1 - coverage) / 2
    hi_q, lo_q = f.ppf(1 - tail, df_between, df_within), f.ppf(tail, df_between, df_within)

    def sd(theta: float) -> float:
        return math.sqrt(max(0.0, theta) * msw)

    return LevelInterval(point=math.sqrt(max(0.0, (msb - msw) / n0)), low=sd((ratio / hi_q - 1) / n0),
                         high=sd((ratio / lo_q - 1) / n0), coverage=coverage, between_df=df_between,
                         within_df=df_within)


FEWEST_PROCESSES = 5  # fewer: t on 3 degrees of freedom or less, nothing a few % calls (see the module's docstring)
MOST_PROCESSES = 32
ROUNDS_A_PROCESS = 2  # the least a block holds: its rounds' own spread is then measured too (process_spread)


@dataclass(frozen=True)
class ProcessChoice:
    """`processes = "auto"`: the count chosen, the rounds the group's share then affords, and why (said and kept)."""
    count: int
    rounds: int
    reason: str


def choose_processes(share_s: float, round_s: float, restart_s: float, alpha: float) -> ProcessChoice:
    """The processes a target is started as over a group's rounds, chosen once the first group has measured one
    round (`round_s`, every target's cells) and the load has timed the servers' starts (`restart_s`, all of them):
    the count whose interval over the blocks is narrowest for the rounds' own noise, from FEWEST_PROCESSES to
    MOST_PROCESSES with at least ROUNDS_A_PROCESS rounds a process and every block of the plan's layout there (33
    rounds over 12 processes of 3 rounds would leave the twelfth empty). The half-width goes like
    price(P) / sqrt(n(P)): the planned looks' t quantile on P - 1 degrees of freedom (stats/planned.py) over the
    rounds the share affords after P restarts, n(P) = (share - P·restart) / round. Judged without a process level,
    which is the case least favourable to restarts: a process's own level adds sd²/P to the block mean's variance,
    and so favours more processes still; the choice never rests on a level the run has not yet measured."""
    def rounds(p: int) -> int:
        return int(max(0.0, share_s - p * restart_s) // round_s) if round_s > 0 else 0

    def whole(p: int) -> bool:  # the plan's layout (rounds_per_process) makes p blocks, none of them empty
        n = rounds(p)
        return n >= ROUNDS_A_PROCESS * p and math.ceil(n / math.ceil(n / p)) == p

    fits = [p for p in range(FEWEST_PROCESSES, MOST_PROCESSES + 1) if whole(p)]
    if not fits:
        return ProcessChoice(FEWEST_PROCESSES, rounds(FEWEST_PROCESSES),
                             f"{FEWEST_PROCESSES}, the fewest the rule can call a change on: the share "
                             f"({share_s:.0f} s, rounds of {round_s:.1f} s, restarts of {restart_s:.1f} s) affords "
                             f"fewer than {ROUNDS_A_PROCESS} rounds a process for any count; a longer budget lets "
                             "more processes in")
    best = min(fits, key=lambda p: (price(p, alpha) / math.sqrt(rounds(p)), p))
    return ProcessChoice(best, rounds(best),
                         f"{best}, of {FEWEST_PROCESSES}–{MOST_PROCESSES}: the narrowest interval over the processes "
                         f"for the group's share of {share_s:.0f} s at {round_s:.1f} s a round and {restart_s:.1f} s "
                         f"a restart ({rounds(best)} rounds, {math.ceil(rounds(best) / best)} a process, restarts "
                         f"{best * restart_s:.0f} s)")
