"""The verdict rules and the randomization thresholds on fixed samples whose answers are worked out by hand."""

import math

import pytest

from dbperf.metrics import CPU
from dbperf.stats.verdict import decide, deciding, pair_rounds, paired_threshold, unpaired_threshold, verdict_on_rounds

pytestmark = pytest.mark.unit


def test_unpaired_threshold_enumerates_every_relabeling():
    # pooled [2, 2, 1, 1], 6 relabelings: {2,2}|{1,1} and {1,1}|{2,2} differ by 1, the 4 mixed ones by 0;
    # the 99th percentile is 1, relative to the base's median 1.
    assert unpaired_threshold([2.0, 2.0], [1.0, 1.0]) == (1.0, False)


def test_three_repeats_a_side_can_never_be_called():
    # 20 relabelings: the two full separations are 10% of them, so the 99th percentile is the maximum.
    v = decide([130.0, 131.0, 132.0], [100.0, 101.0, 102.0])
    assert v is not None and v.verdict == "undecided" and not v.unpaired.can_decide
    assert v.min_detectable_effect is None


def test_medians_need_eight_repeats_a_side():
    # 7 a side: the median difference reaches its maximum whenever the top 4 and bottom 4 fall apart, 40 of 3432
    # relabelings (1.2%), so the 99th percentile is the maximum; 8 a side: 40 of 12870 (0.3%).
    seven = decide([110.0 + i for i in range(7)], [100.0 + i for i in range(7)])
    assert seven is not None and seven.verdict == "undecided" and not seven.unpaired.can_decide
    v = decide([110.0 + i for i in range(8)], [100.0 + i for i in range(8)])
    assert v is not None and v.verdict == "faster" and v.decided_by == "unpaired"
    assert v.diff == pytest.approx(113.5 / 103.5 - 1)
    assert v.unpaired.can_decide and v.noise_threshold < v.diff


def test_paired_sign_flip_threshold_by_hand():
    # 8 rounds, every log ratio log(1.05): |mean| under sign flips is |2k - 8| / 8 * L for k plus signs; the top 2
    # of 256 patterns are L, the next 16 are 0.75 L, so the 99th percentile ("higher") is 0.75 L.
    threshold, can_decide = paired_threshold([math.log(1.05)] * 8)
    assert can_decide and threshold == pytest.approx(1.05 ** 0.75 - 1)
    # 7 rounds: the two all-same patterns are 1.6% of 128, more than 1%: nothing can be called.
    assert paired_threshold([math.log(1.05)] * 7) == (pytest.approx(0.05), False)


def test_paired_view_decides_when_rounds_drift():
    base = [100.0, 120.0, 90.0, 110.0, 95.0, 130.0, 105.0, 115.0]  # a slow round is slow for both
    target = [b * 1.05 for b in base]
    v = decide(target, base, rounds=list(zip(target, base, strict=True)))
    assert v is not None and v.verdict == "faster" and v.decided_by == "paired"
    assert v.diff == pytest.approx(0.05) and v.noise_threshold == pytest.approx(1.05 ** 0.75 - 1)
    assert v.unpaired.threshold > 0.1  # the unpaired view drowns in the drift
    unpaired_only = decide(target, base)
    assert unpaired_only is not None and unpaired_only.verdict != "faster"


def test_a_tiny_real_difference_below_min_effect_is_same():
    base = [1000.0 + i for i in range(10)]
    target = [1015.0 + i for i in range(10)]  # +1.5%, fully separated, tight
    v = decide(target, base)
    assert v is not None and v.verdict == "same" and v.noise_threshold < 0.015
    assert decide(target, base, min_effect=0.01).verdict == "faster"


def test_identical_builds_are_same():
    base = [1000.0, 1004.0, 998.0, 1002.0, 1001.0, 999.0, 1003.0, 997.0, 1000.5, 1001.5]
    target = [1001.0, 999.0, 1003.0, 997.0, 1002.0, 1000.0, 998.5, 1004.0, 999.5, 1000.0]
    v = decide(target, base)
    assert v is not None and v.verdict == "same" and v.min_detectable_effect == pytest.approx(0.02)


def test_wide_noise_is_unstable_and_moderate_noise_undecided():
    base = [100.0, 150.0, 80.0, 130.0, 95.0, 70.0, 140.0, 110.0]
    target = [120.0, 85.0, 140.0, 100.0, 90.0, 160.0, 75.0, 105.0]
    v = decide(target, base)
    assert v is not None and v.verdict == "unstable" and v.noise_threshold > 0.12
    base = [100.0, 104.0, 97.0, 102.0, 99.0, 101.0, 96.0, 103.0, 98.0, 100.5]
    target = [101.0, 98.0, 103.0, 100.0, 96.0, 102.0, 104.0, 97.0, 99.5, 101.5]
    v = decide(target, base)
    assert v is not None and v.verdict == "undecided" and 0.02 < v.noise_threshold <= 0.12
    assert v.min_detectable_effect == pytest.approx(v.noise_threshold)


def test_slower_and_too_few():
    assert decide([90.0 + i / 4 for i in range(8)], [100.0 + i / 3 for i in range(8)]).verdict == "slower"
    assert decide([1.0], [1.0, 2.0]) is None


def test_large_samples_use_seeded_random_relabelings():
    base = [100.0 + (i % 7) for i in range(20)]
    target = [101.0 + (i % 5) for i in range(20)]
    assert unpaired_threshold(target, base) == unpaired_threshold(target, base)  # C(40, 20) > 10,000: seeded


def test_pair_rounds_prefers_the_duet_partner_then_the_round():
    # round 1: a duet (the base ran once beside B, once beside C); round 2: interleaved; round 3: B failed
    base = [(1, "B", 100.0), (1, "C", 200.0), (2, None, 300.0), (3, None, 400.0)]
    assert pair_rounds("B", [(2, 310.0), (1, 90.0), (3, None)], base) == [(1, 90.0, 100.0), (2, 310.0, 300.0)]
    assert pair_rounds("C", [(1, 210.0)], base) == [(1, 210.0, 200.0)]
    assert pair_rounds("D", [(1, 1.0)], base) == []  # a duet round without D's base run pairs with nothing


def test_the_deciding_metric():
    pairs = [(i + 1, 110.0 + i % 2, 100.0) for i in range(10)]
    sides = ([t for _, t, _ in pairs], [b for _, _, b in pairs])
    wall = verdict_on_rounds(pairs, *sides)
    cpu = verdict_on_rounds(pairs[:3], sides[0][:3], sides[1][:3], metric=CPU)
    assert wall is not None and cpu is not None and wall.decided and not cpu.decided
    assert deciding(wall, cpu) is wall and deciding(cpu, wall) is wall and deciding(None, cpu) is cpu
    assert deciding(None, None) is None


def test_without_round_pairs_the_one_look_randomization_verdict_decides():
    v = verdict_on_rounds([], [110.0 + i for i in range(8)], [100.0 + i for i in range(8)], metric=CPU)
    assert v is not None and v.rule == "randomization" and v.metric is CPU and v.verdict == "faster"
