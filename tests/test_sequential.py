"""The anytime-valid verdict (stats/sequential.py) on seeded synthetic rounds: its false-alarm bound however many
rounds are looked at, its rounds to a decision against a fixed-n test, and the level-shift guard
(stats/level_shift.py). Heavy tails (Student t, 3 df) and round-correlated noise (tests/synthetic.py round_pairs:
a per-round factor both sides share, an AR(1) host drift that moves on within a round too)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dbperf.experiment.keys import MIN_ROUNDS
from dbperf.metrics import CPU, WALL
from dbperf.stats.level_shift import find_level_shift
from dbperf.stats.sequential import call, confidence_path, confidence_sequence, log_wealth
from dbperf.stats.verdict import ALPHA, METRIC_ALPHA, verdict_on_rounds
from tests.synthetic import round_pairs

pytestmark = pytest.mark.unit

MIN_EFFECT = 0.02
ROUNDS = 60


def _log_ratios(seed: int, sequences: int, diff: float, noise: float, rounds: int = ROUNDS) -> np.ndarray:
    target, base = round_pairs(np.random.default_rng(seed), sequences, rounds, diff, noise)
    return np.log(target / base)


def _ever_rejects_zero(x: np.ndarray) -> np.ndarray:
    """Per sequence: the rule's wealth against "no change" reached 1/alpha at some round. Calling faster or slower
    at any look needs exactly that (0 must leave the confidence sequence), so this bounds the false-alarm rate of
    every look from the first to the last at once. In chunks: the prefix estimates are (S, n + 1, n)."""
    return np.concatenate([log_wealth(chunk, 0.0).max(axis=1) >= math.log(1 / METRIC_ALPHA)
                           for chunk in np.array_split(x, 10)])


def test_aa_false_alarm_rate_stays_within_one_percent_at_every_look():
    # 10,000 A/A cells, 60 rounds each, two metrics whose noise is partly shared (CPU time moves with the wall
    # clock): "changed by either metric at any look" must stay within the cell's 1%.
    wall = _log_ratios(101, 10_000, 0.0, 0.05)
    cpu = 0.6 * wall + 0.8 * _log_ratios(102, 10_000, 0.0, 0.05)
    wall_alarm, cpu_alarm = _ever_rejects_zero(wall), _ever_rejects_zero(cpu)
    either = float(np.mean(wall_alarm | cpu_alarm))
    print(f"A/A, 10,000 cells x {ROUNDS} rounds: wall {wall_alarm.mean():.2%}, cpu {cpu_alarm.mean():.2%}, "
          f"either {either:.2%} ever called changed (bound {ALPHA:.0%})")
    assert either <= ALPHA
    # the rule's own calls agree with the bound on a sample: a sequence never rejecting 0 is never called changed
    for row, alarmed in zip(wall[:200], wall_alarm[:200], strict=True):
        calls = {call(c, MIN_EFFECT) for c in confidence_path(row, METRIC_ALPHA)[MIN_ROUNDS - 1:]}
        assert alarmed or not calls & {"faster", "slower"}


def _rounds_to(x: np.ndarray, want: str, alpha: float = METRIC_ALPHA) -> np.ndarray:
    """Per sequence, the first round whose look calls `want` (ROUNDS + 1: never within ROUNDS)."""
    out = []
    for row in x:
        calls = [call(c, MIN_EFFECT) for c in confidence_path(row, alpha)]
        looks = [i + 1 for i, c in enumerate(calls) if c == want and i + 1 >= MIN_ROUNDS]
        out.append(looks[0] if looks else ROUNDS + 1)
    return np.asarray(out)


def _fixed_n_for_power(x: np.ndarray, alpha: float, power: float = 0.8) -> int:
    """The fixed test: the paired view of stats/verdict.py (|mean log ratio| beyond the (1 - alpha) quantile of
    its sign-flip randomization distribution, "higher", and beyond min_effect), looked at once after n rounds. The
    smallest n at which it calls the change in `power` of the sequences."""
    rng = np.random.default_rng(7)
    for n in range(8, ROUNDS + 1):
        signs = np.where(rng.random((2000, n)) < 0.5, -1.0, 1.0)
        xs = x[:, :n]
        null = np.abs(xs @ signs.T) / n
        threshold = np.quantile(null, 1 - alpha, axis=1, method="higher")
        mean = np.abs(xs.mean(axis=1))
        if np.mean((mean > threshold) & (mean > math.log1p(MIN_EFFECT))) >= power:
            return n
    return ROUNDS + 1


def test_a_five_percent_change_at_five_percent_noise_is_called_sooner_than_a_fixed_test_could():
    x = _log_ratios(201, 250, math.log(1.05), 0.05)
    rounds = _rounds_to(x, "faster")
    assert np.mean(rounds <= ROUNDS) > 0.95  # and nothing calls it slower
    assert not any(call(c, MIN_EFFECT) == "slower" for row in x[:50] for c in confidence_path(row, METRIC_ALPHA))
    at_one_percent = _rounds_to(x, "faster", alpha=0.01)
    fresh = _log_ratios(202, 1000, math.log(1.05), 0.05)
    fixed_half_percent = _fixed_n_for_power(fresh, METRIC_ALPHA)
    fixed_today = _fixed_n_for_power(fresh, 0.01)
    median, median_at_one = float(np.median(rounds)), float(np.median(at_one_percent))
    print(f"5% change at 5% noise: the sequential rule decides in a median of {median:.0f} rounds at "
          f"{METRIC_ALPHA:.1%} a metric (80% by {np.percentile(rounds, 80):.0f}), {median_at_one:.0f} at 1%; the "
          f"fixed paired randomization test needs {fixed_half_percent} rounds for 80% power at {METRIC_ALPHA:.1%}, "
          f"{fixed_today} at 1%")
    # At the same error rate the rule needs fewer rounds than the fixed test, at 0.5% (the rule's share of a cell's
    # 1% per metric) and at 1% (today's test, which holds its 1% only if looked at once, and for one metric). The
    # split of the 1% between two metrics costs the rule about two rounds: measured 16 against today's 15.
    assert median < fixed_half_percent and median_at_one < fixed_today
    assert median <= fixed_today + 1


def test_quiet_pairs_decide_within_ten_rounds():
    # duet-like noise (2%): a 5% change; and no change at 0.5% and 1% noise is called same within +-2%
    duet = float(np.median(_rounds_to(_log_ratios(301, 100, math.log(1.05), 0.02), "faster")))
    same_quiet = _rounds_to(_log_ratios(302, 100, 0.0, 0.005), "same")
    same_noisier = _rounds_to(_log_ratios(303, 100, 0.0, 0.01), "same")
    print(f"5% change at 2% noise: faster in a median of {duet:.0f} rounds; no change: same in a median of "
          f"{np.median(same_quiet):.0f} rounds at 0.5% noise, "
          f"{np.median(same_noisier):.0f} at 1%")
    assert duet <= 10 and np.median(same_quiet) <= 10 and np.median(same_noisier) <= 12


def test_a_real_change_beyond_min_effect_is_not_called_same():
    # 3% change, min_effect 2%: "same" would need the interval inside +-2%, which excludes the truth
    x = _log_ratios(401, 300, math.log(1.03), 0.02)
    assert not any(call(c, MIN_EFFECT) == "same" for row in x for c in confidence_path(row, METRIC_ALPHA))


def test_confidence_sequence_fields():
    few = confidence_sequence([0.01, -0.02], METRIC_ALPHA)
    assert not few.bounded and call(few, MIN_EFFECT) == "undecided"
    seq = confidence_sequence([math.log(1.1)] * 12, METRIC_ALPHA)
    assert seq.bounded and 0 < seq.lower < math.log(1.1) < seq.upper and call(seq, MIN_EFFECT) == "faster"
    # tight around a clean change: round 1's prior bet (towards 0) costs candidates near 0 at most half their wealth
    assert seq.upper - seq.lower < 0.02


def test_verdict_fields_of_the_sequential_rule():
    pairs = [(i + 1, 110.0 * (1 + 0.001 * (i % 3)), 100.0) for i in range(12)]
    v = verdict_on_rounds(pairs, [t for _, t, _ in pairs], [b for _, _, b in pairs], MIN_EFFECT)
    assert v is not None and v.verdict == "faster" and v.rule == "sequential" and v.metric is WALL
    assert v.decided_by == "paired" and v.alpha == METRIC_ALPHA and v.level_shift is None
    assert v.lower is not None and v.upper is not None and 0 < v.lower < v.diff < v.upper
    assert v.noise_threshold == pytest.approx(math.expm1((math.log1p(v.upper) - math.log1p(v.lower)) / 2))
    assert v.paired is not None and v.paired.n == 12 and v.unpaired.n == 12
    early = verdict_on_rounds(pairs[:3], [t for _, t, _ in pairs[:3]], [b for _, _, b in pairs[:3]], MIN_EFFECT)
    assert early is not None and early.verdict == "undecided" and early.min_detectable_effect is None
    cpu = verdict_on_rounds(pairs, [t for _, t, _ in pairs], [b for _, _, b in pairs], MIN_EFFECT, CPU)
    assert cpu is not None and cpu.metric is CPU


def test_a_level_shift_is_found_and_not_decided_on():
    # the demo's point-query on a quiet host: the base ran slow for 5 rounds, then at the targets' speed
    ratios = [1.33, 1.35, 1.31, 1.34, 1.32, 1.0, 1.01, 0.99, 1.0, 1.02]
    shift = find_level_shift([math.log(r) for r in ratios], MIN_EFFECT)
    assert shift is not None and shift.after_round == 5
    assert shift.describe() == "level shift after round 5: ratios 1.33 → 1.00"
    pairs = [(i + 1, r * 200_000, 200_000.0) for i, r in enumerate(ratios)]
    v = verdict_on_rounds(pairs, [t for _, t, _ in pairs], [b for _, _, b in pairs], MIN_EFFECT)
    assert v is not None and v.verdict == "undecided" and v.level_shift == shift.describe()
    # round 3 failed: the rounds are numbered as run
    numbered = [(r + (r >= 3), t, b) for r, t, b in pairs]
    v = verdict_on_rounds(numbered, [t for _, t, _ in pairs], [b for _, _, b in pairs], MIN_EFFECT)
    assert v is not None and v.level_shift == "level shift after round 6: ratios 1.33 → 1.00"
    # one level with noise: no shift; a shift smaller than 2 min_effects is not worth withholding a verdict for
    assert find_level_shift([0.01, -0.01, 0.02, 0.0, -0.02, 0.01, 0.0, -0.01, 0.02, 0.01], MIN_EFFECT) is None
    assert find_level_shift([0.0] * 5 + [0.03] * 5, MIN_EFFECT) is None


def test_a_call_that_holds_at_both_levels_is_kept_and_says_so():
    """pgo-server's range-covered-si on the AMD VM (2026-11-26): 1.06 for 6 rounds, then 1.17. Both levels faster
    by more than the minimum effect: the rule's call on the whole run stands, with the shift named. Across the
    minimum effect (1.06 then 1.00, or 0.90 then 1.05) the call is withheld."""
    rng = np.random.default_rng(7)

    def verdict(first: float, then: float, rounds: int = 40):
        ratios = [(first if i < 6 else then) * math.exp(rng.normal(0, 0.01)) for i in range(rounds)]
        pairs = [(i + 1, r * 1000.0, 1000.0) for i, r in enumerate(ratios)]
        return verdict_on_rounds(pairs, [t for _, t, _ in pairs], [b for _, _, b in pairs], MIN_EFFECT)

    both = verdict(1.06, 1.17)
    assert both is not None and both.verdict == "faster"
    assert both.level_shift == "level shift after round 6: ratios 1.06 → 1.17, both faster: called"
    slower = verdict(0.85, 0.93)
    assert slower is not None and slower.verdict == "slower" and slower.level_shift.endswith("both slower: called")
    for first, then in ((1.06, 1.00), (0.90, 1.05), (1.00, 1.10)):
        v = verdict(first, then)
        assert v is not None and v.verdict == "undecided" and not v.level_shift.endswith("called"), (first, then)


def test_level_shift_flags_are_rare_on_one_level():
    x = _log_ratios(501, 200, 0.0, 0.05, rounds=20)
    flagged = np.mean([find_level_shift(list(row), MIN_EFFECT) is not None for row in x])
    print(f"A/A at 5% noise, 20 rounds: level shift flagged in {flagged:.1%}")
    assert flagged <= 0.08


@pytest.mark.parametrize("ratio, want", [(0.5, "slower"), (1.5, "faster"), (1.0, "same")])
def test_the_auto_minimum_is_the_first_round_the_rule_can_call(ratio, want):
    # The clearest data there can be (a change of any size, noise of 0.1%): nothing is called before MIN_ROUNDS,
    # and the call comes at MIN_ROUNDS. So `repeats = "auto"` never stops on its budget at a round count where no
    # cell could have been decided (experiment/keys.py).
    logs = [math.log(ratio) + 0.001 * (-1) ** i for i in range(2 * MIN_ROUNDS)]
    calls = [call(c, MIN_EFFECT) for c in confidence_path(logs, METRIC_ALPHA)]
    assert set(calls[:MIN_ROUNDS - 1]) == {"undecided"} and calls[MIN_ROUNDS - 1] == want
