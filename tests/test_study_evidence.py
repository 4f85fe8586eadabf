"""The words a study record may use of a figure (studies/evidence.py), the intervals they stand on, and the verdict
rule's history (stats/rule_history.py): a call made by a rule added after the run is not counted as decided."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dbperf.stats.rule_history import RULE_CHANGES, under_run_rule
from dbperf.stats.verdict import CellVerdict
from dbperf.studies.evidence import Interval, median_interval, ratio_interval, said, spread_interval, word
from dbperf.studies.figures import Headline

pytestmark = pytest.mark.unit

RANGE = (1.1, 2.0)  # a published claim restated as a range: a gain of 10% or more


@pytest.mark.parametrize(("interval", "decided", "expected"), [
    ((1.2, 1.5), True, "holds"),           # inside, decided
    ((1.2, 1.5), False, "consistent"),     # inside but undecided: never holds
    ((1.2, 1.5), None, "holds"),           # inside, no verdict applies (a probe's range, a count)
    ((1.0, 1.5), True, "consistent"),      # straddles the range's edge, point inside
    ((1.0, 1.5), False, "consistent"),
    ((0.8, 1.05), True, "does not hold"),  # wholly outside
    ((0.8, 1.05), False, "does not hold"),
    ((2.1, 2.5), True, "does not hold"),   # outside above
])
def test_the_word_follows_the_interval_and_the_verdict(interval, decided, expected):
    lo, hi = interval
    value = (lo + hi) / 2
    assert word(RANGE, value, Interval(lo, hi, "test", coverage=0.95), decided) == expected


def test_a_point_outside_with_an_interval_reaching_in_is_inconclusive_and_no_interval_never_holds():
    assert word(RANGE, 1.05, Interval(0.9, 1.2, "test", coverage=0.95), True) == "inconclusive"
    assert word(RANGE, 1.3, None, True) == "consistent"
    assert word(RANGE, 1.0, None, True) == "inconclusive"
    assert word((None, 1.0), 0.5, Interval(0.4, 0.6, "t", coverage=0.95)) == "holds"  # an open range


def test_the_words_say_the_basis():
    assert said("consistent", "a gain", None, "one value") == "consistent: a gain (no interval: one value)"
    exact = Interval(0.9, 0.9, "simulated counts", exact=True)
    assert said("holds", "fewer misses", exact, None) == "holds: fewer misses (exact: simulated counts)"
    assert said("holds", "", Interval(1.2, 1.4, "the range of 5 repeats", coverage=0.94), None) == \
        "holds (interval 1.2–1.4, the range of 5 repeats)"
    assert said("consistent", "", Interval(1.2, 1.4, "min–max of 3 repeats", coverage=0.75), None) == \
        "consistent (interval 1.2–1.4, min–max of 3 repeats; below the 90% coverage a word needs)"


def test_no_word_rests_on_an_interval_covering_less_than_90_percent():
    """A min–max of 3 repeats covers their median with 75%, a ratio of two such ranges with 56%: inside or outside
    the published range, they give "consistent" or "inconclusive", never "holds" or "does not hold"; 5 repeats
    (93.8%) may; an interval whose coverage is not stated may not."""
    three, five = spread_interval(1.2, 1.5, 3), spread_interval(1.2, 1.5, 5)
    assert (three.coverage, five.coverage) == (0.75, 0.9375)
    assert word(RANGE, 1.35, three, None) == "consistent" and word(RANGE, 1.35, five, None) == "holds"
    assert word(RANGE, 0.9, spread_interval(0.8, 1.0, 3), None) == "inconclusive"
    assert word(RANGE, 0.9, spread_interval(0.8, 1.0, 6), None) == "does not hold"
    ratio = ratio_interval(spread_interval(2.4, 2.6, 3), spread_interval(1.0, 1.1, 3))
    assert ratio is not None and ratio.coverage == 0.5625 and "covers with 56.2%" in ratio.how
    assert word(RANGE, 2.4, ratio, None) == "inconclusive"
    assert word(RANGE, 1.35, Interval(1.2, 1.5, "unstated"), None) == "consistent"
    assert word(RANGE, 1.35, Interval(1.35, 1.35, "counts", exact=True), None) == "holds"


@pytest.mark.parametrize(("how", "coverage"), [
    ("min–max of 3 repeats (covers the median with 75.0%)", 0.75),
    ("ratio of two ranges (min–max of 3 repeats (covers the median with 75.0%))", 0.5625),
    ("ratio of two ranges (min–max of 3 repeats (covers the median with 75.0%); over min–max of 5 repeats (covers "
     "the median with 93.8%))", 0.75 * 0.9375),
    ("ratio of two ranges (a; over b; covers with 56.2%)", 0.562),
    ("96.9% interval of the median of 6 repeats (order statistics), of the per-round ratio", 0.969),
    ("the sequential rule's 99.0% anytime-valid interval of the wall clock's per-round ratio, 30 rounds", 0.99),
    ("Wilson's 95% interval of 3 in 10", 0.95),
    ("ratio of two ranges (96.9% interval of the median of 6 repeats; over min–max of the repeats)", None),
    ("the range of the repeats", None),
])
def test_a_records_interval_states_its_coverage_in_words(how, coverage):
    """Records written before the coverage was kept apart: read from the interval's description, once."""
    from dbperf.studies.evidence import coverage_said
    found = coverage_said(how)
    assert (found is None and coverage is None) or found == pytest.approx(coverage)


def test_the_interval_of_a_median_is_distribution_free_and_needs_six_values():
    too_few = median_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert isinstance(too_few, str) and "too few" in too_few
    found = median_interval([float(x) for x in range(1, 7)])
    assert isinstance(found, Interval) and (found.low, found.high) == (1.0, 6.0) and "96.9%" in found.how
    wide = median_interval([float(x) for x in range(1, 25)])
    assert isinstance(wide, Interval) and (wide.low, wide.high) == (7.0, 18.0)  # k = 7 of 24: 97.7% coverage


def test_ratios_of_ranges_are_conservative_and_of_exact_counts_exact():
    ratio = ratio_interval(Interval(2.0, 4.0, "a"), Interval(1.0, 2.0, "a"))
    assert ratio is not None and (ratio.low, ratio.high) == (1.0, 4.0) and not ratio.exact and ratio.coverage is None
    exact = ratio_interval(Interval(6.0, 6.0, "c", exact=True), Interval(3.0, 3.0, "c", exact=True))
    assert exact is not None and exact.exact and (exact.low, exact.high) == (2.0, 2.0)
    assert ratio_interval(Interval(1, 2, "a"), Interval(0, 1, "a")) is None
    assert "covers the median with 93.8%" in spread_interval(1.0, 2.0, 5).how


def _verdict(level_shift: str | None, verdict: str = "faster") -> CellVerdict:
    return CellVerdict(verdict, "paired", 0.1, 0.05, 0.02, None, None, "wall", "sequential", level_shift)


def test_a_call_a_later_rule_made_is_withdrawn_for_a_run_from_before_it():
    kept = _verdict("level shift at round 12 (+4% → +15%), both faster: called")
    change = RULE_CHANGES[0]
    before, by = under_run_rule(kept, "2026-11-25T16:57:00+00:00")
    assert before is not None and before.verdict == "undecided" and by is change
    after, none = under_run_rule(kept, "2026-11-27T10:00:00+00:00")
    assert after is kept and none is None
    plain, none = under_run_rule(_verdict(None), "2026-11-20T00:00:00+00:00")  # no level shift: the same call
    assert plain is not None and plain.verdict == "faster" and none is None
    assert under_run_rule(kept, None) == (kept, None)  # a run of unknown start: today's rule


def test_the_headline_says_how_each_cell_was_decided_and_what_a_later_rule_adds():
    h = Headline("pgo", 1.143, 12, 14, 0, 3, 12, by_later_rule=2, later_rule="2026-11-26: a level shift keeps a call")
    assert h.first_line("pgo-server") == "study pgo-server: geomean rQPS 1.143, decided 12 of 14, slower 0"
    assert h.decided_by() == (
        "Of the 12 decided, 9 on the wall clock (QPS) and 3 on CPU time only (queries per CPU second; their wall clock "
        "undecided); 2 undecided. 2 more cell(s) are called by a rule added after the run (2026-11-26: a level shift "
        "keeps a call); they are not counted as decided here.")
    assert h.breakdown() == ("decided 12 of 14 (9 on the wall clock, 3 on CPU time only): 0 slower, 12 faster; 2 more "
                             "called by a rule added after the run")
    none = replace(h, decided=0, on_cpu_time=0, by_later_rule=0, superseded="build k: its profile is empty")
    assert none.decided_by() == "None of the 14 cells was decided. Superseded: build k: its profile is empty."


def test_a_share_counted_has_wilsons_interval_inside_zero_and_one():
    from dbperf.studies.evidence import proportion_interval
    none = proportion_interval(0, 2000)
    assert none.low == 0.0 and none.high == pytest.approx(0.00192, abs=1e-5) and "0 in 2,000" in none.how
    assert word((None, 0.0), 0.0, none) == "consistent"  # "none stale" is not proven by a sample: never holds
    every = proportion_interval(2000, 2000)
    assert every.high == 1.0 and every.low < 1.0
    some = proportion_interval(1601, 2000)
    assert some.low == pytest.approx(0.7824, abs=1e-3) and some.high == pytest.approx(0.8174, abs=1e-3)
