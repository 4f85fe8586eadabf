"""Which decided calls of one cell contradict across runs (stats/contradiction.py): pure, no run."""

from __future__ import annotations

import pytest

from dbperf.stats.contradiction import RunCall, clash, contradictions

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("first", "second", "expected"), [
    ("faster", "slower", "decided faster in one run and slower in another"),
    ("same", "slower", "decided same (within the minimum effect) in one run and slower beyond it in another"),
    ("faster", "same", "decided same (within the minimum effect) in one run and faster beyond it in another"),
    ("faster", "faster", None), ("same", "same", None),
    ("faster", "undecided", None), ("slower", "unstable", None), ("undecided", "failed", None),
])
def test_only_two_decided_calls_that_disagree_clash(first, second, expected):
    assert clash(RunCall("A", first), RunCall("B", second)) == expected


def test_every_decided_call_of_a_contradicted_cell_is_named_in_run_order():
    key = ("b", "point-query", 1)
    runs = [[(key, RunCall("run 1", "faster", 1.06, "wall"))], [(key, RunCall("run 2", "undecided", 1.0))],
            [(key, RunCall("run 3", "same", 1.001, "cpu"))], [(("b", "read-only", 1), RunCall("run 3", "slower"))]]
    (found,) = contradictions(runs)
    assert (found.target, found.benchmark, found.threads) == key
    assert [c.run for c in found.calls] == ["run 1", "run 3"]
    assert found.line() == ("b point-query: decided same (within the minimum effect) in one run and faster beyond it "
                            "in another: faster (wall) 1.060 in run 1; same (cpu) 1.001 in run 3")
