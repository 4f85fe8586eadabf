"""The ways a round runs (runner/orders/): each way's cells of a round, their count and a round's time as the
estimate asks it, for interleaved, duet and slices rounds; the kinds found by their files and named as the key
table names them; what each says of itself. Their real runs are the e2e tests of test_e2e.py (interleaved),
test_duet.py and test_slices.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.experiment.keys import RUN_ORDERS
from dbperf.host.cpus import CpuPlan
from dbperf.records import CellRecord
from dbperf.runner.estimate import estimate
from dbperf.runner.orders import order_kinds, order_of
from dbperf.runner.orders.base import CELL_OVERHEAD_S
from dbperf.runner.orders.duet import Duet
from dbperf.runner.orders.interleaved import Interleaved
from dbperf.runner.orders.slices import Slices, taken_down
from dbperf.runner.plan import RunPlan
from tests.test_run_plan import TWO_CPUS
from tests.test_run_plan import _experiment as experiment

pytestmark = pytest.mark.unit

CELL_S = 0.4  # a cell's warm-up and time


def _experiment(write_experiment, order: str):
    """Three targets (a, the base; b; c), two benchmarks, threads 1 and 2, two rounds; a duet's sides 1 CPU each."""
    return experiment(write_experiment, extra=f'order = "{order}"', cpus=TWO_CPUS if order == "duet" else None)


def _round(order, round_: int, threads: int = 1) -> list[list[tuple[str, int, str | None]]]:
    """A round's cells as (target, position, partner), each list measured together."""
    units = order.round_cells(order.experiment.benchmarks[0], threads, round_)
    assert all(c.repeat == round_ and c.threads == threads for unit in units for c in unit)
    return [[(c.target.name, c.position, c.partner) for c in unit] for unit in units]


def test_every_order_of_the_key_table_is_a_way_found_by_its_file():
    assert set(order_kinds()) == set(RUN_ORDERS)


@pytest.mark.parametrize(("name", "way"), [("alternate", Interleaved), ("random", Interleaved), ("duet", Duet),
                                           ("slices", Slices)])
def test_the_experiments_order_is_planned_as_its_way(write_experiment, name, way):
    order = RunPlan.of(_experiment(write_experiment, name)).order
    assert type(order) is way
    assert order.experiment.order == name


def test_an_order_no_way_runs_is_one_line(write_experiment):
    e = replace(_experiment(write_experiment, "alternate"), order="zigzag")
    with pytest.raises(UserError) as err:
        order_of(e)
    assert "\n" not in str(err.value) and "zigzag" in str(err.value) and "alternate, random" in str(err.value)


def test_interleaved_rounds_run_every_target_alone_reversed_every_other_round(write_experiment):
    order = RunPlan.of(_experiment(write_experiment, "alternate")).order
    assert _round(order, 1) == [[("a", 1, None)], [("b", 2, None)], [("c", 3, None)]]
    assert _round(order, 2) == [[("c", 1, None)], [("b", 2, None)], [("a", 3, None)]]
    assert order.cells_per_round(1) == order.cells_per_round(2) == 3
    assert order.round_s(1, CELL_S) == pytest.approx(3 * (CELL_S + CELL_OVERHEAD_S))
    assert order.describe() == {} and order.note() is None


def test_random_rounds_draw_each_rounds_order_from_the_seed(write_experiment):
    e = _experiment(write_experiment, "random")
    order = RunPlan.of(e).order
    rounds = [_round(order, r) for r in range(1, 9)]
    assert rounds == [_round(RunPlan.of(e).order, r) for r in range(1, 9)], "a rerun draws the same orders"
    assert all(sorted(unit[0][0] for unit in units) == ["a", "b", "c"] for units in rounds)
    assert len({tuple(unit[0][0] for unit in units) for units in rounds}) > 2, "not merely alternating"
    other_seed = RunPlan.of(replace(e, seed=e.seed + 1)).order
    assert [_round(other_seed, r) for r in range(1, 9)] != rounds
    assert order.cells_per_round(1) == 3 and order.round_s(2, CELL_S) == pytest.approx(3 * (CELL_S + CELL_OVERHEAD_S))


def test_duet_rounds_pair_the_base_with_each_target_and_fall_back_where_a_side_lacks_cpus(write_experiment):
    order = RunPlan.of(_experiment(write_experiment, "duet")).order
    assert _round(order, 1) == [[("a", 1, "b"), ("b", 1, "a")], [("a", 2, "c"), ("c", 2, "a")]]
    assert _round(order, 2) == [[("a", 1, "c"), ("c", 1, "a")], [("a", 2, "b"), ("b", 2, "a")]]
    sides = order.round_cells(order.experiment.benchmarks[0], 1, 1)[0]
    assert sides[0].cpus and sides[1].cpus and not sides[0].cpus & sides[1].cpus
    assert order.cells_per_round(1) == 4  # the base beside each of the two others
    assert order.round_s(1, CELL_S) == pytest.approx(2 * (CELL_S + CELL_OVERHEAD_S)), "a duet takes one cell's time"
    # 2 client threads need 2 CPUs a side: that group runs interleaved rounds in alternating order
    assert _round(order, 1, threads=2) == [[("a", 1, None)], [("b", 2, None)], [("c", 3, None)]]
    assert order.cells_per_round(2) == 3
    assert order.round_s(2, CELL_S) == pytest.approx(3 * (CELL_S + CELL_OVERHEAD_S))
    assert order.describe()["duet"]["interleaved_threads"] == [2]
    assert "threads=2" in (order.note() or "") and "\n" not in (order.note() or "")


def test_duet_rounds_where_no_duet_can_be_formed_are_interleaved_rounds(write_experiment):
    e = replace(_experiment(write_experiment, "duet"), cpus=CpuPlan(None, None, "off"))
    order, interleaved = RunPlan.of(e).order, Interleaved(e, "alternate")
    for threads in (1, 2):
        assert _round(order, 1, threads) == _round(interleaved, 1, threads)
        assert order.cells_per_round(threads) == interleaved.cells_per_round(threads)
        assert order.round_s(threads, CELL_S) == interleaved.round_s(threads, CELL_S)
    assert order.describe()["duet"]["used"] is False and 'cpus = "off"' in (order.note() or "")


def test_a_slices_round_is_one_process_of_every_target_whose_first_alternates(write_experiment, tmp_path):
    order = RunPlan.of(_experiment(write_experiment, "slices")).order
    assert _round(order, 1) == [[("a", 1, None), ("b", 2, None), ("c", 3, None)]]
    assert _round(order, 2) == [[("c", 1, None), ("b", 2, None), ("a", 3, None)]]
    assert order.cells_per_round(1) == 3, "a record per side"
    assert order.round_s(1, CELL_S) == pytest.approx(3 * CELL_S + CELL_OVERHEAD_S), "one process's overhead"
    assert order.describe() == {}, "says nothing of library copies before it made any"
    opened = order.opened(tmp_path / "data")
    assert opened.describe() == {"slices": {"slice_s": 0.02, "library_copies": {
        t.name: str(tmp_path / "data" / ".libraries" / t.name / Path(t.library).name)
        for t in order.experiment.targets}}}, "three targets of one library: each loads a copy"
    assert "every round" in order.lost_load and "other targets are measured" in Interleaved.lost_load


def test_a_slices_round_whose_target_failed_to_load_names_that_failure_on_every_failed_side(write_experiment):
    order = RunPlan.of(_experiment(write_experiment, "slices")).order
    (cells,) = order.round_cells(order.experiment.benchmarks[0], 1, 1)
    records = [CellRecord(target=c.target.name, benchmark="point-query", threads=1, repeat=1, status="failed",
                          error="no such table") for c in cells]
    taken_down(cells, records, {"b": "target b: its data failed to load"})
    assert [r.error for r in records] == [
        "target b: its data failed to load (its round's one driver process, order = \"slices\", failed with it)",
        "target b: its data failed to load",
        "target b: its data failed to load (its round's one driver process, order = \"slices\", failed with it)"]
    untouched = [CellRecord(target="a", benchmark="point-query", threads=1, repeat=1, status="failed", error="x")]
    taken_down(cells[:1], untouched, {})
    assert untouched[0].error == "x"


@pytest.mark.parametrize("name", ["alternate", "duet", "slices"])
def test_the_estimate_asks_the_way_how_long_a_round_takes(write_experiment, tmp_path, monkeypatch, name):
    e = _experiment(write_experiment, name)
    plan = RunPlan.of(e)
    way = type(plan.order)
    before, planned_s = estimate(e, tmp_path).seconds, plan.rounds_s(e.time_s + e.warmup_s)
    rounds = len(e.benchmarks) * e.repeats
    asked = []

    def round_s(self, threads: int, cell_s: float) -> float:
        asked.append((threads, cell_s))
        return 100.0

    monkeypatch.setattr(way, "round_s", round_s)
    after = estimate(e, tmp_path).seconds
    assert sorted(set(asked)) == [(1, e.time_s + e.warmup_s), (2, e.time_s + e.warmup_s)]
    assert after - before == pytest.approx(rounds * 2 * 100.0 - planned_s)  # two thread counts
