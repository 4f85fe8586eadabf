"""Rounds: the order of targets within a round, and the `repeats = "auto"` stopping rule with a fake measurement
source and a fake clock (no engine is run)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.metrics import CPU, WALL
from dbperf.records import CellRecord, Latency, RunResult, Usage
from dbperf.runner.estimate import estimate
from dbperf.runner.rounds import (
    MIN_ROUNDS,
    GroupState,
    Measured,
    RoundPolicy,
    afforded_rounds,
    round_order,
    run_rounds,
)
from dbperf.stats.planned import look_rounds
from dbperf.stats.rqps_matrix import build_matrix, cpu_qps
from tests.synthetic import meta_of

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


def _run(speeds: dict[str, float], noise: float, budget_s: float, aa: str | None = None, replay: int = 0,
         **kwargs) -> GroupState:
    source = FakeSource(speeds, noise, **kwargs)
    state = GroupState("A", list(speeds), min_effect=0.02, aa=aa)
    return run_rounds(state, RoundPolicy(MIN_ROUNDS, budget_s=budget_s), source.measure, deadline=budget_s,
                      clock=source.clock, replay=replay)


def test_the_aa_copy_is_judged_but_does_not_hold_the_loop():
    """B is far slower and decided within a few rounds; the A/A copy's "same within 2%" at 8% noise would take
    many more. Without the A/A copy named as such, it keeps the rounds going to the budget."""
    speeds = {"A": 1000.0, "A-aa": 1000.0, "B": 500.0}
    state = _run(speeds, noise=0.08, budget_s=10_000, aa="A-aa")
    assert state.stop_reason == f"every cell decided after {state.rounds} rounds" and state.rounds < 20
    assert state.verdicts()["B"].verdict == "slower" and not state.verdicts()["A-aa"].decided  # judged, undecided
    held = _run(speeds, noise=0.08, budget_s=300)
    assert held.stop_reason.startswith("budget spent") and held.rounds > state.rounds
    alone = _run({"A": 1000.0, "A-aa": 1000.0}, noise=0.08, budget_s=300, aa="A-aa")  # the run is about the copy
    assert alone.stop_reason.startswith("budget spent") and alone.rounds > state.rounds


def test_the_rounds_measured_before_are_walked_again_whatever_the_rule_says():
    """A resumed or extended group replays its measured rounds (their cells exist) before the rule can stop it."""
    decided = _run({"A": 1000.0, "B": 900.0}, noise=0.002, budget_s=10_000)
    replayed = _run({"A": 1000.0, "B": 900.0}, noise=0.002, budget_s=10_000, replay=decided.rounds + 7)
    assert replayed.rounds == decided.rounds + 7
    assert replayed.stop_reason == f"every cell decided after {replayed.rounds} rounds"


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
    # rounds 1-7 interfered: 2 clean rounds at the minimum, so rounds go on until 9 are clean (round 16)
    some = _run({"A": 1000.0, "B": 1000.0}, noise=0.001, budget_s=10_000, interfered=set(range(1, 8)))
    assert some.rounds == 16 and some.clean_rounds() == MIN_ROUNDS and some.stop_reason.startswith("every cell")
    # rounds 1-12 interfered: the extra rounds stop at their cap, with 6 clean
    busy = _run({"A": 1000.0, "B": 1000.0}, noise=0.001, budget_s=10_000, interfered=set(range(1, 13)))
    assert busy.rounds == 2 * MIN_ROUNDS and busy.stop_reason.startswith("every cell decided")
    assert busy.clean_rounds() == 6
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


def _planned(speeds: dict[str, float], noise: float, budget_s: float, planned: int | None = None,
             replay: int = 0) -> GroupState:
    """Planned looks, the first round 15 s (a cold start) and the others 10 s."""
    source = FakeSource(speeds, noise)

    def measure(round_: int) -> list[Measured]:
        source.now += 5.0 if round_ == 1 else 0.0
        return source.measure(round_)

    state = GroupState("A", list(speeds), min_effect=0.02, planned=planned)
    return run_rounds(state, RoundPolicy(MIN_ROUNDS, budget_s=budget_s, plans=True), measure, deadline=budget_s,
                      clock=source.clock, replay=replay)


def test_planned_rounds_are_what_the_share_affords_and_the_group_stops_at_them():
    assert afforded_rounds(160, 10) == 16 and afforded_rounds(30, 10) == MIN_ROUNDS and afforded_rounds(5, 0) == 9
    # a change within the noise: undecided, so the group runs the 16 rounds its 240 s afford at its first round's
    # 15 s, and leaves the rest of its share (the later rounds took 10 s) to the groups after it
    state = _planned({"A": 1000.0, "B": 1010.0}, noise=0.2, budget_s=240)
    assert state.planned == 16 and state.rounds == 16
    assert state.stop_reason == "budget spent after 16 rounds, the 16 its share afforded"  # --extend reopens it
    assert state.verdicts()["B"].planned == 16 and not state.verdicts()["B"].decided
    # a clear change is decided at a look, not between looks
    clear = _planned({"A": 1000.0, "B": 800.0}, noise=0.01, budget_s=600)
    assert clear.planned == 40 and clear.stop_reason == f"every cell decided after {clear.rounds} rounds"
    assert clear.rounds in look_rounds(40)
    # without plans the same group is decided by the anytime-valid rule, after any round
    anytime = _run({"A": 1000.0, "B": 800.0}, noise=0.01, budget_s=600)
    assert anytime.planned is None and anytime.verdicts()["B"].planned is None


def test_an_extended_group_goes_past_its_plan_and_a_replayed_one_is_not_planned_again():
    # extended: 16 planned and replayed, rounds go on past the plan under the reserve's rule until the budget
    extended = _planned({"A": 1000.0, "B": 1010.0}, noise=0.2, budget_s=250, planned=16, replay=16)
    assert extended.planned == 16 and extended.rounds == 24 and extended.stop_reason.startswith("budget spent")
    # resumed without a kept plan: the anytime-valid rule, no new plan from a replayed round's time
    resumed = _planned({"A": 1000.0, "B": 1010.0}, noise=0.2, budget_s=250, replay=5)
    assert resumed.planned is None and resumed.rounds == 24


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


def test_a_budget_shorter_than_the_minimum_rounds_is_warned_of(write_experiment, tmp_path):
    # 9 rounds of 12.5 s (10 s + 2 s warm-up + overhead) are about 112 s: a budget of 1 minute decides nothing
    short = estimate(parse_experiment(write_experiment(AUTO.format(extra='budget = "1m"'))), tmp_path)
    assert short.short_budget == (MIN_ROUNDS, 60, pytest.approx(MIN_ROUNDS * 12.5))
    warning = short.warnings()
    assert len(warning) == 1 and "shorter than the 9 rounds the verdict needs" in warning[0]
    assert not estimate(parse_experiment(write_experiment(AUTO.format(extra='budget = "2m"'))), tmp_path).warnings()


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


def _record(m: Measured, cpu_us: float) -> CellRecord:
    """A cell line for a fake measurement: 1 s of QPS queries, `cpu_us` of driver CPU, the duet partner kept."""
    assert m.qps is not None
    queries = int(m.qps)
    result = RunResult(qps=m.qps, eps=m.qps, queries=queries, errors=0,
                       latency=Latency(p50_us=1.0, p99_us=2.0, max_us=3.0, p95_us=2.0),
                       client_usage=Usage(user_us=cpu_us * 0.7, system_us=cpu_us * 0.3, voluntary_cs=0,
                                          involuntary_cs=0),
                       duration_s=1.0, threads=1)
    return CellRecord(target=m.target, benchmark="point-query", threads=1, repeat=m.round, status="ok",
                      result=result, partner=m.partner)


def test_cpu_time_decides_where_the_wall_clock_cannot():
    # B does 10% more work per query (CPU time); its wall clock is drowned in 20% noise of its own
    rng = random.Random(3)
    records: list[CellRecord] = []
    clock = [0.0]

    def measure(round_: int) -> list[Measured]:
        clock[0] += 10.0
        out = []
        for t, work in (("A", 1.0), ("B", 1.1)):
            qps = 1000.0 * (1 + rng.uniform(-0.2, 0.2))
            record = _record(Measured(t, round_, qps), cpu_us=qps * work * 1000 * (1 + rng.uniform(-0.002, 0.002)))
            records.append(record)
            out.append(Measured(t, round_, qps, cpu_qps=cpu_qps(record)))
        return out

    state = run_rounds(GroupState("A", ["A", "B"], 0.02), RoundPolicy(MIN_ROUNDS, budget_s=10_000), measure,
                       deadline=10_000, clock=lambda: clock[0])
    deciding = state.deciding_verdicts()["B"]
    assert state.stop_reason.startswith("every cell decided") and state.rounds <= 12
    assert deciding is not None and deciding.metric is CPU and deciding.verdict == "slower"
    assert not state.verdicts(WALL)["B"].decided
    # the report applies the same rule to the same records: the same verdicts, metric by metric
    m = build_matrix(meta_of(_META), records)
    cell = m.cell("B", "point-query", 1)
    assert cell is not None and _called(cell.verdict_detail) == state.verdicts(WALL)["B"]
    assert _called(cell.cpu_verdict_detail) == state.verdicts(CPU)["B"]
    assert _called(cell.deciding_verdict) == deciding


_META = {"base": "A", "targets": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
         "benchmarks": [{"name": "point-query", "group": "point"}], "threads": [1]}


def test_duet_pairs_each_target_with_the_base_measured_beside_it():
    # every duet has its own moment (a host factor of up to +-30%), shared by the two sides of that duet only:
    # pairing a target with the base's run of another duet would drown a 10% difference
    rng = random.Random(4)
    records: list[CellRecord] = []
    clock = [0.0]

    def measure(round_: int) -> list[Measured]:
        clock[0] += 10.0
        out = []
        for t, speed in (("B", 0.9), ("C", 1.0)):
            moment = 1 + rng.uniform(-0.3, 0.3)
            pair = [Measured("A", round_, 1000.0 * moment * (1 + rng.uniform(-0.003, 0.003)), partner=t),
                    Measured(t, round_, 1000.0 * speed * moment * (1 + rng.uniform(-0.003, 0.003)))]
            records.extend(_record(m, cpu_us=1e6) for m in pair)
            out += pair
        return out

    state = run_rounds(GroupState("A", ["A", "B", "C"], 0.02), RoundPolicy(MIN_ROUNDS, budget_s=10_000), measure,
                       deadline=10_000, clock=lambda: clock[0])
    verdicts = state.verdicts()
    assert verdicts["B"].verdict == "slower" and verdicts["C"].verdict == "same" and state.rounds <= 12
    m = build_matrix(meta_of(_META), records)
    assert _called(m.cell("B", "point-query", 1).verdict_detail) == verdicts["B"]
    assert _called(m.cell("C", "point-query", 1).verdict_detail) == verdicts["C"]
    base = m.cell("A", "point-query", 1)
    assert base is not None and base.qps is not None and base.qps.n == 2 * state.rounds  # every base run counts


def test_a_level_shift_neither_decides_nor_stops():
    # B ran 30% fast for 5 rounds, then at A's speed: no verdict on the mixture, the budget ends the rounds
    rng = random.Random(5)

    def measure(round_: int) -> list[Measured]:
        source.now += 10.0
        b = 1300.0 if round_ <= 5 else 1000.0
        return [Measured("A", round_, 1000.0 * (1 + rng.uniform(-0.003, 0.003))),
                Measured("B", round_, b * (1 + rng.uniform(-0.003, 0.003)))]

    source = FakeSource({}, 0.0)
    state = run_rounds(GroupState("A", ["A", "B"], 0.02), RoundPolicy(MIN_ROUNDS, budget_s=200), measure,
                       deadline=200, clock=source.clock)
    v = state.verdicts()["B"]
    assert state.stop_reason.startswith("budget spent") and state.rounds == 20
    assert v.verdict == "undecided" and v.level_shift is not None
    assert v.level_shift.startswith("level shift after round 5: ratios 1.30 → 1.00")


def _called(v):
    """The report's verdict as the stopping loop computes it: every field but the descriptive unpaired view, which
    the loop leaves out (its randomization is most of a verdict's cost, and only reports show it)."""
    return None if v is None else dataclasses.replace(v, unpaired=None)
