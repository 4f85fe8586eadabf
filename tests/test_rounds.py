"""Rounds: the order of targets within a round, and the `repeats = "auto"` stopping rule with a fake measurement
source and a fake clock (no engine is run)."""

from __future__ import annotations

import random

import pytest

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.runner.rounds import MIN_ROUNDS, GroupState, Measured, RoundPolicy, round_order, run_rounds

pytestmark = pytest.mark.unit


def test_alternate_order_reverses_every_other_round():
    assert round_order("ABC", "alternate", 1, "point-query", 1, 1) == ["A", "B", "C"]
    assert round_order("ABC", "alternate", 1, "point-query", 1, 2) == ["C", "B", "A"]


def test_random_order_is_seeded_and_varies():
    orders = [round_order("ABCD", "random", 7, "point-query", 1, r) for r in range(1, 21)]
    assert orders == [round_order("ABCD", "random", 7, "point-query", 1, r) for r in range(1, 21)]
    assert len({tuple(o) for o in orders}) > 3 and all(sorted(o) == list("ABCD") for o in orders)
    assert orders != [round_order("ABCD", "random", 8, "point-query", 1, r) for r in range(1, 21)]


class FakeSource:
    """Measures each target once per round: QPS = true speed × a round factor (shared by both targets) × noise;
    every round takes `round_s` on the fake clock; `interfered` rounds are flagged."""

    def __init__(self, speeds: dict[str, float], noise: float, round_s: float = 10.0,
                 interfered: set[int] | None = None, seed: int = 1):
        self.speeds, self.noise, self.round_s = speeds, noise, round_s
        self.interfered = interfered or set()
        self.rng = random.Random(seed)
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def measure(self, round_: int) -> list[Measured]:
        self.now += self.round_s
        shared = 1 + self.rng.uniform(-0.2, 0.2)  # a slow round is slow for everyone
        return [Measured(t, round_, s * shared * (1 + self.rng.uniform(-self.noise, self.noise)),
                         interfered=round_ in self.interfered) for t, s in self.speeds.items()]


def _run(speeds: dict[str, float], noise: float, budget_s: float, **kwargs) -> GroupState:
    source = FakeSource(speeds, noise, **kwargs)
    state = GroupState("A", list(speeds), min_effect=0.02)
    return run_rounds(state, RoundPolicy(MIN_ROUNDS, budget_s=budget_s), source.measure, deadline=budget_s,
                      clock=source.clock)


def test_auto_stops_once_every_cell_is_decided():
    state = _run({"A": 1000.0, "B": 900.0, "C": 1000.0}, noise=0.002, budget_s=10_000)
    verdicts = state.verdicts()
    assert verdicts["B"].verdict == "slower" and verdicts["C"].verdict == "same"
    assert state.stop_reason == f"every cell decided after {state.rounds} rounds"
    assert 8 <= state.rounds < 30  # 8 rounds is the least any test at 1% can decide with


def test_auto_runs_the_minimum_then_stops_at_the_budget():
    state = _run({"A": 1000.0, "B": 1010.0}, noise=0.2, budget_s=30)  # 3 rounds' worth: the minimum runs anyway
    assert state.rounds == MIN_ROUNDS and state.stop_reason == f"budget spent after {MIN_ROUNDS} rounds"
    state = _run({"A": 1000.0, "B": 1010.0}, noise=0.2, budget_s=200)
    assert state.rounds == 20 and state.stop_reason.startswith("budget spent")
    assert not state.verdicts()["B"].decided


def test_interfered_rounds_are_run_again_within_the_budget():
    quiet = _run({"A": 1000.0, "B": 1000.0}, noise=0.001, budget_s=10_000)
    # decided as soon as the sequential rule can at 0.5% a metric: a round multiplies its wealth by less than 1.95
    assert quiet.rounds == 9 and quiet.verdicts()["B"].verdict == "same"
    # rounds 1-7 interfered: only 1 clean round at 8, so rounds go on to the cap of 5 extra
    busy = _run({"A": 1000.0, "B": 1000.0}, noise=0.001, budget_s=10_000, interfered=set(range(1, 8)))
    assert busy.rounds == 2 * MIN_ROUNDS and busy.stop_reason.startswith("every cell decided")
    assert busy.clean_rounds() == 3
    no_time = _run({"A": 1000.0, "B": 1000.0}, noise=0.001, budget_s=0, interfered=set(range(1, 8)))
    assert no_time.rounds == MIN_ROUNDS and no_time.stop_reason.startswith("budget spent")


def test_a_target_that_always_fails_does_not_hold_the_loop():
    source = FakeSource({"A": 1000.0, "B": 1000.0}, noise=0.001)
    measure = source.measure

    def failing_c(round_: int) -> list[Measured]:
        return [*measure(round_), Measured("C", round_, None)]

    state = run_rounds(GroupState("A", ["A", "B", "C"], 0.02), RoundPolicy(MIN_ROUNDS, budget_s=10_000), failing_c,
                       deadline=10_000, clock=source.clock)
    assert state.stop_reason.startswith("every cell decided") and state.verdicts()["C"] is None


def test_fixed_repeats_ignore_verdicts():
    source = FakeSource({"A": 1000.0, "B": 500.0}, noise=0.0)
    state = run_rounds(GroupState("A", ["A", "B"], 0.02), RoundPolicy(3), source.measure, deadline=0.0,
                       clock=source.clock)
    assert state.rounds == 3 and state.stop_reason == "3 repeats"


AUTO = """
[run]
benchmarks = ["point-query"]
repeats = "auto"
{extra}

[[target]]
name = "a"
"""


def test_auto_keys_parse(write_experiment):
    e = parse_experiment(write_experiment(AUTO.format(extra='budget = "2m"\norder = "random"\nmin_effect = "5%"')))
    assert e.budget_s == 120 and e.repeats == MIN_ROUNDS and e.order == "random" and e.min_effect == 0.05
    assert parse_experiment(write_experiment(AUTO.format(extra=""))).budget_s == 600


@pytest.mark.parametrize(("extra", "message"), [
    ('budget = "0s"', "budget: must be longer than 0"),
    ('order = "sideways"', "order: expected one of alternate, random"),
    ("min_effect = 2", "min_effect: expected a fraction"),
])
def test_bad_auto_keys(write_experiment, extra, message):
    with pytest.raises(UserError, match=message):
        parse_experiment(write_experiment(AUTO.format(extra=extra)))
    with pytest.raises(UserError, match="budget: only with repeats"):
        parse_experiment(write_experiment(AUTO.replace('"auto"', "3").format(extra='budget = "1m"')))


def test_aa_adds_a_copy_of_the_base(write_experiment):
    e = parse_experiment(write_experiment(AUTO.format(extra="aa = true") + '\n[[target]]\nname = "b"\n'))
    assert [t.name for t in e.targets] == ["a", "a-aa", "b"] and e.aa_target == "a-aa"
    assert e.targets[1].library == e.targets[0].library and e.base == "a"
    with pytest.raises(UserError, match="would be named 'a-aa', which is already a target"):
        parse_experiment(write_experiment(AUTO.format(extra="aa = true") + '\n[[target]]\nname = "a-aa"\n'))
