import pytest

from dbperf.stats.summary import median_ci, significance, summarize, trimmed_mean

pytestmark = pytest.mark.unit


def test_median_ci_needs_six_samples_for_95_percent():
    assert median_ci([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # [min, max] covers only 93.75%
    assert median_ci([6.0, 1.0, 5.0, 2.0, 4.0, 3.0]) == (1.0, 6.0)  # 96.9%
    # n = 10: [x_(2), x_(9)] covers 97.9%, [x_(3), x_(8)] only 89%
    assert median_ci([float(x) for x in range(1, 11)]) == (2.0, 9.0)


def test_trimmed_drops_best_and_worst():
    assert trimmed_mean([1.0, 100.0, 10.0, 12.0, 11.0]) == pytest.approx(11.0)
    s = summarize([1.0, 100.0, 10.0, 12.0, 11.0], "trimmed")
    assert s.center == pytest.approx(11.0) and s.median == 11.0 and s.minimum == 1.0 and s.maximum == 100.0


def test_spread_flags_noise_over_ten_percent():
    assert not summarize([100.0, 104.0, 109.0]).noisy
    assert summarize([100.0, 105.0, 112.0]).noisy


def test_significance_requires_four_repeats_a_side():
    assert significance([1.0, 2.0, 3.0], [10.0, 11.0, 12.0]) == (None, None)


def test_clear_difference_is_significant_and_overlap_is_not():
    sig, p = significance([100.0, 101.0, 102.0, 103.0], [90.0, 91.0, 92.0, 93.0])
    assert sig is True and p == pytest.approx(2 / 70 * 1, rel=1e-6)  # exact two-sided p of a full separation
    sig, p = significance([100.0, 91.0, 102.0, 93.0], [90.0, 101.0, 92.0, 103.0])
    assert sig is False and p > 0.05


def test_identical_samples_are_not_significant():
    assert significance([5.0] * 4, [5.0] * 4) == (False, 1.0)
