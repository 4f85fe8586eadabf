"""The run's plan (runner/plan.py), built once before the run: duets decided once, the groups and their cells in the
order they run, the budget's shares (a pure function), and what a resume or an extension keeps (the replay)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import msgspec
import pytest

from dbperf.experiment.spec import parse_experiment
from dbperf.host.cpus import CpuPlan
from dbperf.runner import plan as plan_module
from dbperf.runner.plan import RunPlan, share_deadline
from dbperf.runner.resume import Earlier
from tests.synthetic import _cell, meta_of

pytestmark = pytest.mark.unit

TWO_CPUS = CpuPlan(frozenset({0}), frozenset({1}), "auto")
RUN = """
[run]
benchmarks = ["point-query", "update-index"]
threads = [1, 2]
table_size = 1000
time = "0.3s"
warmup = "0.1s"
repeats = {repeats}
{extra}

[[target]]
name = "a"

[[target]]
name = "b"
config = {{ cache_size = -4000 }}

[[target]]
name = "c"
config = {{ cache_size = -8000 }}
"""


def _experiment(write_experiment: Any, repeats: str = "2", extra: str = "", cpus: CpuPlan | None = None) -> Any:
    e = parse_experiment(write_experiment(RUN.format(repeats=repeats, extra=extra)))
    return replace(e, cpus=cpus) if cpus is not None else e


def test_duets_are_planned_once_and_pair_the_base_with_each_other_target(write_experiment, monkeypatch):
    calls = []
    real = plan_module.order_of
    monkeypatch.setattr(plan_module, "order_of", lambda e: calls.append(e) or real(e))
    plan = RunPlan.of(_experiment(write_experiment, extra='order = "duet"', cpus=TWO_CPUS))
    cells = list(plan.cells())
    assert plan.cell_count() == len(cells) and plan.order.note() is not None  # threads = 2 needs 2 CPUs a side
    assert len(calls) == 1, "the duets are decided once, whatever asks the plan"
    one_thread = [c for c in cells if c.threads == 1]
    assert len(one_thread) == 2 * 2 * 2 * 2  # benchmarks × rounds × duets × sides
    for base, other in zip(one_thread[::2], one_thread[1::2], strict=True):
        assert base.target.name == "a" and base.partner == other.target.name and other.partner == "a"
        assert base.cpus != other.cpus
    two_threads = [c for c in cells if c.threads == 2]  # fell back: interleaved, every target once a round
    assert all(c.partner is None for c in two_threads) and len(two_threads) == 2 * 2 * 3
    assert plan.order.cells_per_round(1) == 4 and plan.order.cells_per_round(2) == 3


def test_groups_run_benchmark_major_and_the_progress_counts_cells_or_groups(write_experiment):
    fixed = RunPlan.of(_experiment(write_experiment))
    assert [g.key for g in fixed.groups] == [("point-query", 1), ("point-query", 2), ("update-index", 1),
                                              ("update-index", 2)]
    assert fixed.group_order() == {g.key: i for i, g in enumerate(fixed.groups)}
    assert fixed.progress_total() == fixed.cell_count() == 2 * 2 * 2 * 3
    assert not any(g.stopped or g.before or g.spent_s for g in fixed.groups) and all(g.shares for g in fixed.groups)
    auto = RunPlan.of(_experiment(write_experiment, repeats='"auto"', extra='budget = "1m"'))
    assert auto.policy.auto and auto.progress_total() == 4
    first = [(c.target.name, c.position) for c in fixed.cells()][:6]
    assert first == [("a", 1), ("b", 2), ("c", 3), ("c", 1), ("b", 2), ("a", 3)]  # alternating rounds


def test_the_budget_is_shared_equally_among_the_groups_left_and_a_group_cut_short_is_owed_less():
    assert share_deadline(100.0, 160.0, 0.0, 3) == pytest.approx(120.0)
    assert share_deadline(100.0, 160.0, 0.0, 0) == pytest.approx(160.0)  # the last group (or none sharing): all
    assert share_deadline(100.0, 160.0, 10.0, 2) == pytest.approx(125.0)  # (60 + 10) / 2 - 10
    assert share_deadline(100.0, 90.0, 0.0, 2) == 100.0  # spent: the minimum rounds only


def test_a_resume_keeps_the_stopped_groups_and_replays_the_one_cut_short(write_experiment):
    e = _experiment(write_experiment, repeats='"auto"', extra='budget = "1h"')
    stopped = {"benchmark": "point-query", "threads": 1, "rounds": 3, "stopped": "every cell decided after 3 rounds"}
    records = [_cell(t, "point-query", r, 1000.0, False) for r in (1, 2, 3) for t in "abc"]
    records += [msgspec.structs.replace(_cell(t, "point-query", r, 900.0, False), threads=2) for r in (1, 2)
                for t in "abc"]
    earlier = Earlier(meta_of({"base": "a", "targets": [{"name": t} for t in "abc"], "rounds": [stopped]}), records)
    plan = RunPlan.of(e, earlier)
    groups = {g.key: g for g in plan.groups}
    assert groups[("point-query", 1)].stopped and not groups[("point-query", 1)].shares
    cut = groups[("point-query", 2)]
    assert not cut.stopped and cut.shares and cut.replay == 2 and len(cut.before) == 6
    assert not groups[("update-index", 1)].before and groups[("update-index", 1)].shares
    assert plan.replay.goes_on and plan.replay.counts() == (15, 0)
    assert len(plan.replay.skip) == 15 and ("a", "point-query", 2, 2, None) in plan.replay.skip
    assert plan.replay.budget_s(e) == pytest.approx(3600.0 * 3 / 4)  # the stopped group took its share


def test_the_fleet_skips_what_it_was_told_and_a_new_run_keeps_nothing(write_experiment):
    e = _experiment(write_experiment)
    skip = {("a", "point-query", 1, 1, None)}
    assert RunPlan.of(e, skip=skip).replay.skip == frozenset(skip)
    fresh = RunPlan.of(e)
    assert not fresh.replay.goes_on and fresh.replay.counts() == (0, 0) and fresh.replay.budget_s(e) == 0.0


def test_the_targets_are_inspected_once_and_their_builds_kept(write_experiment, monkeypatch):
    calls = []

    def inspect(e: Any) -> dict[str, dict[str, Any]]:
        calls.append(e)
        return {t.name: {"engine_version": "3.0"} for t in e.targets}

    monkeypatch.setattr(plan_module, "inspect_targets", inspect)
    e = _experiment(write_experiment)
    plan = RunPlan.inspected(e, {"b": {"pgo": {"training_set": ["point-query"]}}})
    assert len(calls) == 1
    assert plan.facts["b"]["trained_on"] == ["point-query"] and plan.facts["b"]["build"]["pgo"]
    assert plan.facts["a"]["engine_version"] == "3.0" and "process_variant" in plan.facts["c"]
    assert RunPlan.of(e).facts == {}  # the pure plan reads nothing
