"""The verdict with planned looks (stats/planned.py) on seeded synthetic rounds: its false-alarm rate for each planned
look schedule, whether the run goes to its plan's end, stops early, is extended past the plan or is cut short by
its budget; its boundaries' calibration; how much narrower than the anytime-valid rule it is at the same rounds;
and the run's rule read from its meta.json (stats/rule_history.py). Heavy tails (Student t, 3 df) and
round-correlated noise: tests/synthetic.py round_pairs, as tests/test_sequential.py."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.stats import norm

from dbperf.run_meta import RoundsMeta
from dbperf.stats.planned import RESERVE, look_rounds, planned_interval, t_boundaries
from dbperf.stats.rule_history import PLANNED_LOOKS, run_plans, under_run_rule
from dbperf.stats.sequential import GRID_STEP, call, confidence_sequence, log_wealth
from dbperf.stats.verdict import ALPHA, METRIC_ALPHA, verdict_on_rounds
from tests.synthetic import meta_of, round_pairs

pytestmark = pytest.mark.unit

MIN_EFFECT = 0.02
CELLS = 10_000


def _log_ratios(seed: int, sequences: int, rounds: int, diff: float = 0.0, noise: float = 0.05) -> np.ndarray:
    target, base = round_pairs(np.random.default_rng(seed), sequences, rounds, diff, noise)
    return np.log(target / base)


def _metrics(seed: int, rounds: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """Wall clock and CPU time of CELLS A/A cells: the CPU time's noise partly the wall clock's."""
    wall = _log_ratios(seed, CELLS, rounds, noise=noise)
    return wall, 0.6 * wall + 0.8 * _log_ratios(seed + 1, CELLS, rounds, noise=noise)


def _looks(x: np.ndarray, planned: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(lower, upper, estimate) per sequence at each planned look the rounds of x reach, as planned_interval
    computes them (every round paired), vectorised."""
    reached = tuple(n for n in look_rounds(planned) if n <= x.shape[1])
    bounds = t_boundaries(reached, planned, (1 - RESERVE) * METRIC_ALPHA, reached[-1] == planned)
    lower, upper, out = np.full(len(x), -np.inf), np.full(len(x), np.inf), []
    for n, c in zip(reached, bounds, strict=True):
        mean = x[:, :n].mean(axis=1)
        half = np.maximum(c * x[:, :n].std(axis=1, ddof=1) / math.sqrt(n), GRID_STEP / 2)
        lower, upper = np.maximum(lower, mean - half), np.minimum(upper, mean + half)
        out.append((lower, upper, mean))
    return out


def _alarms(x: np.ndarray, planned: int, stopped: np.ndarray | None = None) -> np.ndarray:
    """Per sequence: 0 left the rule's interval at a look it reached before `stopped` (the look index it stopped
    at, per sequence; None: it ran all of x's rounds), or, past the plan, the reserve's confidence sequence
    rejected 0. Calling faster or slower needs exactly that, so this bounds the false-alarm rate of every look."""
    alarms = np.zeros(len(x), dtype=bool)
    for k, (lower, upper, _) in enumerate(_looks(x, planned)):
        seen = np.ones(len(x), dtype=bool) if stopped is None else k <= stopped
        alarms |= seen & (lower < upper) & ((lower >= 0) | (upper <= 0))
    if x.shape[1] > planned:  # extended: the anytime-valid sequence at the reserve, every round (in chunks)
        reject = math.log(1 / (RESERVE * METRIC_ALPHA))
        alarms |= np.concatenate([log_wealth(chunk, 0.0).max(axis=1) >= reject for chunk in np.array_split(x, 10)])
    return alarms


def _first_decided(wall: np.ndarray, cpu: np.ndarray, planned: int) -> np.ndarray:
    """Per sequence, the first look at which either metric is decided (faster, slower or same): where a run whose
    every cell is decided stops. Past the last look: it ran to the plan's end."""
    m = math.log1p(MIN_EFFECT)
    first = np.full(len(wall), len(look_rounds(planned)))
    for x in (wall, cpu):
        for k, (lower, upper, mean) in enumerate(_looks(x, planned)):
            decided = (lower < upper) & (((lower >= 0) & (mean > m)) | ((upper <= 0) & (mean < -m))
                                         | ((lower >= -m) & (upper <= m)))
            first = np.where(decided & (first > k), k, first)
    return first


@pytest.mark.parametrize("planned, rounds, noise, stops_early", [
    (9, 9, 0.05, False),  # the minimum's plan
    (16, 16, 0.05, False),
    (24, 24, 0.05, False),
    (40, 40, 0.05, False),
    (16, 16, 0.005, True),  # quiet cells: decided "same" at an early look, where the run stops
    (16, 40, 0.05, False),  # extended past its plan (--extend): the reserve's anytime-valid rule from round 17 on
    (16, 13, 0.05, False),  # cut short by its budget after 13 rounds: its looks at 8 and 12 only
])
def test_aa_false_alarm_rate_stays_within_one_percent_a_cell(planned, rounds, noise, stops_early):
    wall, cpu = _metrics(1000 + planned + rounds, rounds, noise)
    stopped = _first_decided(wall, cpu, planned) if stops_early else None
    wall_alarm, cpu_alarm = _alarms(wall, planned, stopped), _alarms(cpu, planned, stopped)
    either = float(np.mean(wall_alarm | cpu_alarm))
    print(f"A/A, {CELLS:,} cells, {planned} planned, {rounds} run, noise {noise:.1%}"
          f"{', stopping at the first decided look' if stops_early else ''}: wall {wall_alarm.mean():.2%}, "
          f"cpu {cpu_alarm.mean():.2%}, either {either:.2%} ever called changed (bound {ALPHA:.0%})")
    assert either <= ALPHA and wall_alarm.mean() <= METRIC_ALPHA and cpu_alarm.mean() <= METRIC_ALPHA
    if stops_early:  # the schedule did stop early: most quiet A/A cells are "same" before the plan's end
        assert np.mean(stopped < len(look_rounds(planned)) - 1) > 0.5
    # the rule's own calls agree with the bound on a sample: a sequence whose interval never left 0 is never
    # called changed, at any round up to where it stopped
    for row, alarmed, stop in zip(wall[:100], wall_alarm[:100], stopped if stopped is not None else [None] * 100,
                                  strict=False):
        last = rounds if stop is None else look_rounds(planned)[min(int(stop), len(look_rounds(planned)) - 1)]
        calls = {call(planned_interval(list(range(1, n + 1)), row[:n], METRIC_ALPHA, planned), MIN_EFFECT)
                 for n in range(2, last + 1)}
        assert alarmed or not calls & {"faster", "slower"}


def test_boundaries_are_calibrated_on_normal_rounds():
    """With normal rounds (what the boundaries are set on), the rate of ever leaving 0 over the looks is the
    planned share of the metric's alpha: neither above it nor much below (a rule too wide wastes rounds)."""
    x = np.random.default_rng(11).standard_normal((200_000, 16))
    rate = float(np.mean(_alarms(x, 16)))
    print(f"normal rounds, 16 planned, 200,000 sequences: {rate:.3%} (planned {(1 - RESERVE) * METRIC_ALPHA:.3%})")
    assert 0.85 * (1 - RESERVE) * METRIC_ALPHA <= rate <= 1.1 * (1 - RESERVE) * METRIC_ALPHA


def test_looks_and_boundaries():
    assert look_rounds(16) == (8, 12, 16) and look_rounds(9) == (5, 7, 9) and look_rounds(3) == (3,)
    full = t_boundaries((8, 12, 16), 16, 0.0045, True)
    # a look's boundary depends on the looks before it only: the loop at round 12 and the report agree
    assert t_boundaries((8, 12), 16, 0.0045, False) == full[:2]
    assert full[0] > full[1] > full[2]  # O'Brien-Fleming: almost nothing spent early
    # the last look against a single look after 16 rounds that knew the noise (z at the metric's alpha)
    assert full[2] / norm.isf(METRIC_ALPHA / 2) < 1.25


def test_the_interval_moves_only_at_the_looks():
    logs = list(_log_ratios(7, 1, 20, diff=math.log(1.03), noise=0.02)[0])
    path = [planned_interval(list(range(1, n + 1)), logs[:n], METRIC_ALPHA, 16) for n in range(1, 21)]
    assert not any(p.bounded for p in path[:7]) and all(p.bounded for p in path[7:])
    assert all((p.lower, p.upper, p.estimate) == (path[7].lower, path[7].upper, path[7].estimate) for p in path[8:11])
    assert path[11].upper - path[11].lower < path[7].upper - path[7].lower  # narrower at the next look
    # past the plan the reserve's confidence sequence is intersected: never wider than the last look
    assert all(path[15].lower <= p.lower and p.upper <= path[15].upper for p in path[16:])
    # a failed round: the look at round 8 holds the 7 pairs up to it
    rounds = [r for r in range(1, 17) if r != 4]
    failed = planned_interval(rounds, [logs[r - 1] for r in rounds], METRIC_ALPHA, 16)
    assert failed.bounded and failed.n == 15


def test_narrower_than_the_anytime_valid_rule_at_the_same_rounds():
    """16 rounds planned and run, a 3% change at 2% noise: the planned rule's interval is narrower (most cells
    called faster), the anytime-valid rule's wider at the same 16 rounds."""
    x = _log_ratios(21, 200, 16, diff=math.log(1.03), noise=0.02)
    planned = [planned_interval(list(range(1, 17)), row, METRIC_ALPHA, 16) for row in x]
    anytime = [confidence_sequence(row, METRIC_ALPHA) for row in x]
    ratio = float(np.median([p.half_width / a.half_width for p, a in zip(planned, anytime, strict=True)]))
    called = np.mean([call(p, MIN_EFFECT) == "faster" for p in planned])
    called_anytime = np.mean([call(a, MIN_EFFECT) == "faster" for a in anytime])
    print(f"3% at 2% noise, 16 rounds: half-width planned / anytime-valid {ratio:.2f}; faster {called:.0%} against "
          f"{called_anytime:.0%}")
    assert ratio < 0.85 and called > called_anytime


def test_verdict_fields_with_a_plan():
    pairs = [(i + 1, 110.0 * (1 + 0.001 * (i % 3)), 100.0) for i in range(16)]
    sides = [t for _, t, _ in pairs], [b for _, _, b in pairs]
    v = verdict_on_rounds(pairs, *sides, MIN_EFFECT, planned=16)
    assert v is not None and v.verdict == "faster" and v.rule == "sequential" and v.planned == 16
    assert v.lower is not None and v.upper is not None and 0 < v.lower < v.diff < v.upper
    assert v.noise_threshold == pytest.approx(math.expm1((math.log1p(v.upper) - math.log1p(v.lower)) / 2))
    early = verdict_on_rounds(pairs[:4], sides[0][:4], sides[1][:4], MIN_EFFECT, planned=16)
    assert early is not None and early.verdict == "undecided" and early.min_detectable_effect is None
    assert verdict_on_rounds(pairs, *sides, MIN_EFFECT).planned is None  # no plan: the anytime-valid rule


def _meta(started: str, repeats: int | str, rounds: list[RoundsMeta] | None = None):
    return meta_of({"base": "A", "targets": [{"name": "A"}, {"name": "B"}], "started_at": started,
                    "benchmarks": [{"name": "point-query", "group": "point"}, {"name": "insert", "group": "write"}],
                    "threads": [1], "repeats": repeats, "rounds": rounds})


def test_the_run_is_read_under_its_own_rule():
    after, before = "2026-11-29T10:00:00+00:00", "2026-11-27T10:00:00+00:00"
    assert run_plans(_meta(after, 12)) == {("point-query", 1): 12, ("insert", 1): 12}
    recorded = [RoundsMeta(benchmark="point-query", threads=1, rounds=9, stopped="every cell decided", planned=16),
                RoundsMeta(benchmark="insert", threads=1, rounds=14, stopped="budget spent after 14 rounds")]
    assert run_plans(_meta(after, "auto", recorded)) == {("point-query", 1): 16}  # insert: no plan kept
    assert run_plans(_meta(before, 12)) == {} and run_plans(_meta(before, "auto", recorded)) == {}
    assert run_plans(_meta("2026-10-01", 12)) == {}  # a date alone: UTC
    # a call only the planned rule made is withdrawn from a run started before it (as a study record reads it)
    pairs = [(i + 1, 110.0 * (1 + 0.001 * (i % 3)), 100.0) for i in range(16)]
    v = verdict_on_rounds(pairs, [t for _, t, _ in pairs], [b for _, _, b in pairs], MIN_EFFECT, planned=16)
    assert under_run_rule(v, before) == (dataclasses.replace(v, verdict="undecided"), PLANNED_LOOKS)
    assert under_run_rule(v, after) == (v, None)
