"""Rounds: one repeat of every target for one (benchmark, threads), in an order that alternates or is drawn at random
(seeded), so that a drift within a round (cache warmth, thermal, a neighbour waking up) does not always favour the
first target; and how many rounds to run: a fixed number, or `repeats = "auto"`: at least MIN_ROUNDS clean rounds,
then more until every cell of the (benchmark, threads) is decided or its share of the budget is spent.

Planned looks (`RoundPolicy.plans`): after a group's first round, its rounds are planned: what its share of the
budget affords at that round's time (`afforded_rounds`), never fewer than the minimum. The verdict then looks at a
half, three quarters and all of them (stats/planned.py), and the group stops when every cell is decided at a look
or the plan's rounds have run (the time a group did not need goes to the next ones); --extend goes on past the plan
under the rule's reserve. A group whose plan is not known (not planned, or a resumed group whose plan was not kept)
is decided by the anytime-valid rule (stats/sequential.py). Either way a cell is decided when its wall-clock or its
CPU-time verdict is (stats/verdict.py `deciding`), each metric at half the cell's 1%, and asking after every round
does not add to the false-alarm rate: the planned rule's interval changes only at its looks, the anytime-valid
rule's error holds over every round. The budget is the hard stop. A cell whose ratios shift level stays undecided
(it does not stop the loop): more rounds may show which level holds.

The base's A/A copy (experiment/aa.py) does not hold the loop when other targets are compared: its question is how
many of its cells are called changed, and its verdict is as valid at the round the other targets stop at as at any
other (the rule's stopping time may depend on any data). Waiting for it to be decided "same" would spend every
group's budget share on a noisy host, where the same within the minimum effect needs far more rounds than a real
change does.

The loop (`run_rounds`) is written against a measurement function and a clock, so that its stopping rule is tested
with a fake measurement source (tests/test_rounds.py)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from dbperf.experiment.keys import MIN_ROUNDS
from dbperf.metrics import CPU, WALL, Metric
from dbperf.stats.verdict import (
    DEFAULT_MIN_EFFECT,
    CellVerdict,
    ProcessPlan,
    deciding,
    pair_rounds,
    verdict_on_rounds,
)

MAX_EXTRA_MIN_ROUNDS = MIN_ROUNDS  # interfered rounds replaced at most this many times within the minimum
MAX_ROUNDS = 10_000  # a safety net: a budget spent on cells of a millisecond would otherwise loop for ever

T = TypeVar("T")


def round_order(targets: Sequence[T], order: str, seed: int, benchmark: str, threads: int, round_: int) -> list[T]:
    """`alternate`: as listed in odd rounds, reversed in even ones (ClickHouse flips the order every run);
    `random`: a permutation drawn from the seed, the cell and the round, so a rerun draws the same orders."""
    items = list(targets)
    if order == "random":
        random.Random(f"{seed}/{benchmark}/{threads}/{round_}").shuffle(items)
        return items
    return items if round_ % 2 else items[::-1]


@dataclass(frozen=True)
class Measured:
    """What the stopping rule needs of one measured repeat."""
    target: str
    round: int
    qps: float | None  # None: the repeat failed
    interfered: bool = False  # its noise sensors saw heavy interference
    cpu_qps: float | None = None  # queries per CPU second (driver, plus a lab-started server): the CPU-time metric
    partner: str | None = None  # duet: the target measured at the same moment (the base's record names its target)
    process: int | None = None  # `processes` above 1: the block of rounds (its servers' processes) it ran in


@dataclass
class GroupState:
    """The repeats of one (benchmark, threads) so far, and why its rounds stopped."""
    base: str
    targets: list[str]
    min_effect: float = DEFAULT_MIN_EFFECT
    aa: str | None = None  # the base's A/A copy: measured and judged like the others, but it does not hold the loop
    measured: list[Measured] = field(default_factory=list)
    rounds: int = 0
    stop_reason: str = ""
    planned: int | None = None  # the rounds planned (the verdict's looks); None: the anytime-valid rule
    replayed: int = 0  # the rounds walked again from an earlier sitting (run_rounds)
    processes: int = 1  # `processes`: above 1, the verdict's unit is the block of rounds (stats/process_level.py)

    def clean_rounds(self) -> int:
        interfered = {m.round for m in self.measured if m.interfered}
        return sum(1 for r in range(1, self.rounds + 1) if r not in interfered)

    def verdicts(self, metric: Metric = WALL, only: set[str] | None = None) -> dict[str, CellVerdict | None]:
        """Each target's verdict against the base on one metric (`only` those targets when given): the rule the
        report applies to the records."""
        def value(m: Measured) -> float | None:
            return metric.rate(m)

        base = [(m.round, m.partner, value(m)) for m in self.measured if m.target == self.base]
        base_values = [v for _, _, v in base if v]
        out: dict[str, CellVerdict | None] = {}
        for t in self.targets:
            if t == self.base or (only is not None and t not in only):
                continue
            runs = [(m.round, value(m)) for m in self.measured if m.target == t]
            blocks = ProcessPlan.of({m.round: m.process for m in self.measured if m.target == t and m.process},
                                    self.processes)
            out[t] = verdict_on_rounds(pair_rounds(t, runs, base), [v for _, v in runs if v], base_values,
                                       self.min_effect, metric, describe=False, planned=self.planned, blocks=blocks)
        return out

    def deciding_verdicts(self) -> dict[str, CellVerdict | None]:
        """Per target, the verdict that decides it: wall clock's when decided, else CPU time's when decided."""
        wall = self.verdicts(WALL)
        cpu = self.verdicts(CPU, only={t for t, v in wall.items() if v is None or not v.decided})
        return {t: deciding(wall[t], cpu.get(t)) for t in wall}

    def all_decided(self) -> bool:
        """Every target with measurements is decided by either metric, the A/A copy aside (unless it is the only
        one: a run of the base against its copy alone is about the copy). A target (or a base) none of whose repeats
        succeeded has nothing more rounds could decide: it does not hold the loop."""
        measured = {m.target for m in self.measured if m.qps}
        if self.base not in measured:
            return True
        judged = (measured - {self.base, self.aa}) or measured
        return all(v is not None and v.decided for t, v in self.deciding_verdicts().items() if t in judged)


def afforded_rounds(share_s: float, round_s: float, min_rounds: int = MIN_ROUNDS) -> int:
    """The rounds a group's share of the budget affords at `round_s` seconds a round, never fewer than the minimum
    (which runs whatever the budget): the plan of the verdict's looks, made before any ratio is seen."""
    return max(min_rounds, int(share_s // round_s)) if round_s > 0 else min_rounds


@dataclass(frozen=True)
class RoundPolicy:
    """Fixed: exactly `repeats` rounds. Auto (`budget_s` set): see the module's docstring. `plans`: auto groups plan
    their rounds after the first (the verdict's looks); its caller records each group's plan (RoundsMeta.planned),
    which the report reads."""
    repeats: int
    budget_s: float | None = None
    min_rounds: int = MIN_ROUNDS
    plans: bool = False

    @property
    def auto(self) -> bool:
        return self.budget_s is not None

    def another_round(self, state: GroupState, now: float, deadline: float, last_round_s: float) -> bool:
        """Whether to run another round; sets the state's stop reason when not."""
        if not self.auto:
            if state.rounds >= self.repeats:
                state.stop_reason = f"{self.repeats} repeats"
                return False
            return True
        if state.rounds >= MAX_ROUNDS:
            state.stop_reason = f"{MAX_ROUNDS} rounds"
            return False
        if state.rounds < self.min_rounds:
            return True  # the minimum runs whatever the budget says
        if now + last_round_s > deadline:
            state.stop_reason = f"budget spent after {state.rounds} rounds"
            return False
        plan_ran = state.planned is not None and state.replayed < state.planned <= state.rounds
        if (state.clean_rounds() < self.min_rounds and state.rounds < self.min_rounds + MAX_EXTRA_MIN_ROUNDS
                and not plan_ran):
            return True  # an interfered round is run again, while the budget lasts
        if state.all_decided():
            state.stop_reason = f"every cell decided after {state.rounds} rounds"
            return False
        if plan_ran:  # what its share afforded has run: the time left goes to the groups after it
            state.stop_reason = f"budget spent after {state.rounds} rounds, the {state.planned} its share afforded"
            return False
        return True


def run_rounds(state: GroupState, policy: RoundPolicy, measure: Callable[[int], list[Measured]],
               deadline: float, clock: Callable[[], float] = time.monotonic, replay: int = 0,
               overhead: Callable[[float, float], float] = lambda share_s, round_s: 0.0) -> GroupState:
    """Runs rounds (`measure(round)` measures every target once and returns what it measured) until the policy
    says stop. `replay`: the rounds a resumed or extended group had measured; they are walked again whatever the
    rule says (their cells exist), then the rule takes over (a plan made before goes on with the state's `planned`;
    a replayed group without one is not planned again). A fixed number of repeats is the plan.
    `overhead(share_s, round_s)`: time the group will spend outside its rounds (servers started again between
    process blocks), kept out of the plan. An exception (Ctrl-C) propagates with everything measured already kept
    by `measure`."""
    state.replayed = replay
    if not policy.auto and state.planned is None:
        state.planned = policy.repeats
    last_round_s = 0.0
    while state.rounds < replay or policy.another_round(state, clock(), deadline, last_round_s):
        started = clock()
        state.rounds += 1
        state.measured.extend(measure(state.rounds))
        last_round_s = clock() - started
        if policy.auto and policy.plans and state.planned is None and not replay and state.rounds == 1:
            share_s = deadline - started
            state.planned = afforded_rounds(share_s - overhead(share_s, last_round_s), last_round_s,
                                            policy.min_rounds)
    return state
