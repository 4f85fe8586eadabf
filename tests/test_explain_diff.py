"""The per-function diff (explain/diff.py) on made-up per-function tables: a C++ function whose parameter list
changed between the two builds is one row, named by B and said "(signature changed)", in `dbperf diff`'s deltas
and in the counters diff the bisect and the explanation read; overloads, C names and functions that only came or
went stay rows of their own."""

from __future__ import annotations

import pytest

from dbperf.explain.diff import (
    SIGNATURE_CHANGED,
    counters_diff,
    profile_diff,
    signature_changes,
    without_parameters,
)
from dbperf.records import Profile
from dbperf.report import formats
from dbperf.report.profile_view import diff_view

pytestmark = pytest.mark.unit

# MariaDB's rec_get_offsets_func, whose offsets lost a parameter type between two releases (the shape of it)
OLD = ("rec_get_offsets_func(unsigned char const*, dict_index_t const*, unsigned short*, bool, unsigned long, "
       "mem_block_info_t**)")
NEW = ("rec_get_offsets_func(unsigned char const*, dict_index_t const*, unsigned short*, rec_leaf_format, "
       "unsigned long, mem_block_info_t**)")


def _profile(target: str, instructions: dict[str, float], mispredicts: float = 0.0) -> Profile:
    functions = {n: {"instructions": v, "branch_mispredicts": mispredicts} for n, v in instructions.items()}
    return Profile(mode="simulated", mode_reason="made up", tool="cachegrind", target=target,
                   benchmark="point-query", events=100, queries=100, method="made up",
                   per_query={"instructions": sum(instructions.values())}, functions=functions)


@pytest.mark.parametrize(("name", "base"), [
    (NEW, "rec_get_offsets_func"),
    ("ns::Page::get(int) const", "ns::Page::get"),
    ("f(int) [clone .isra.0] [clone .cold]", "f [clone .isra.0] [clone .cold]"),
    ("Item::operator()(THD*) &&", "Item::operator()"),
    ("(anonymous namespace)::scan(void (*)(int), int)", "(anonymous namespace)::scan"),
    ("std::vector<int, std::allocator<int> >::push_back(int&&)", "std::vector<int, std::allocator<int> >::push_back"),
    ("sqlite3VdbeExec", None),  # C: no parameter list in its name
    ("???", None),
])
def test_a_name_without_its_parameters(name: str, base: str | None):
    assert without_parameters(name) == base


def test_a_function_whose_parameters_changed_is_one_row_named_by_b_and_said_so():
    a = _profile("a", {OLD: 100.0, "sqlite3VdbeExec": 50.0, "old_c_name": 10.0})
    b = _profile("b", {NEW: 130.0, "sqlite3VdbeExec": 50.0, "new_c_name": 12.0})
    metric, rows, total_a, total_b = profile_diff(a, b)
    by_name = {r.function: (r.a, r.b) for r in rows}
    assert metric == "instructions" and (total_a, total_b) == (160.0, 192.0)
    assert by_name == {NEW + SIGNATURE_CHANGED: (100.0, 130.0), "sqlite3VdbeExec": (50.0, 50.0),
                       "old_c_name": (10.0, 0.0), "new_c_name": (0.0, 12.0)}  # a C rename: two rows
    assert rows[0].function == NEW + SIGNATURE_CHANGED and rows[0].delta == 30.0
    # the rows still sum to each side's total: nothing counted twice, nothing lost
    assert sum(r.a for r in rows) == total_a and sum(r.b for r in rows) == total_b
    shown = formats.render(diff_view("a", "b", metric, rows, total_a, total_b, "simulated", 10), "markdown")
    (line,) = (line for line in shown.splitlines() if "rec_get_offsets_func" in line)
    assert "(signature changed)" in line and "+30.0" in line


def test_overloads_and_two_candidates_are_never_guessed_between():
    # A holds two overloads of f: which one became f(short) cannot be told
    a = {"f(int)": 1.0, "f(long)": 1.0, "g(int)": 1.0, "h(int)": 1.0}
    b = {"f(int)": 1.0, "f(short)": 1.0, "g(long)": 1.0, "g(short)": 1.0, "h(int)": 1.0, "k(int)": 1.0}
    assert signature_changes(a, b) == {}
    # g(int) gone, g(long) new, each the only g: matched; a function that only came stays new
    assert signature_changes({**a, "k(int)": 2.0}, {"g(long)": 1.0, "k(char)": 1.0, "m(int)": 1.0}) == {
        "g(long)": "g(int)", "k(char)": "k(int)"}


def test_the_counters_diff_matches_as_the_deltas_do():
    a = _profile("a", {OLD: 100.0, "steady(int)": 40.0}, mispredicts=2.0)
    b = _profile("b", {NEW: 90.0, "steady(int)": 40.0}, mispredicts=5.0)
    rows, kept = counters_diff(a, b)
    assert set(kept) == {"instructions", "branch_mispredicts"}
    (changed,) = (r for r in rows if r.function.endswith(SIGNATURE_CHANGED))
    assert changed.function == NEW + SIGNATURE_CHANGED and changed.a == {"instructions": 100.0,
                                                                        "branch_mispredicts": 2.0}
    assert changed.b == {"instructions": 90.0, "branch_mispredicts": 5.0} and len(rows) == 2
