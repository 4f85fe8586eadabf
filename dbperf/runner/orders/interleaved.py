"""Interleaved rounds (`order = "alternate"` or `"random"`, the default): every target's cell of a round one after
the other, each its own driver process, in an order reversed every other round or drawn from the seed
(runner/rounds.py), so that a drift within a round does not always favour the same target. The way a duet run
falls back to where no duet can be formed (orders/duet_rounds.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dbperf.catalog.workload import Workload
from dbperf.experiment.keys import ORDERS
from dbperf.experiment.model import Experiment
from dbperf.records import CellRecord
from dbperf.runner.cell_plan import CellPlan
from dbperf.runner.cell_run import HANG_GRACE_S, run_cell
from dbperf.runner.orders.base import CELL_OVERHEAD_S, Order, OrderKind
from dbperf.runner.rounds import round_order
from dbperf.targets.lifecycle import TargetLifecycle
from dbperf.tooldrivers.cell import run_tool_cell


@dataclass(frozen=True)
class Interleaved(Order):
    experiment: Experiment
    within: str  # the order of the targets within a round: "alternate" or "random" (rounds.py)

    def round_cells(self, benchmark: Workload, threads: int, round_: int) -> list[list[CellPlan]]:
        e = self.experiment
        turns = round_order(e.targets, self.within, e.seed, benchmark.name, threads, round_)
        return [[CellPlan(benchmark, threads, round_, target, position)] for position, target in enumerate(turns, 1)]

    def cells_per_round(self, threads: int) -> int:
        return len(self.experiment.targets)

    def round_s(self, threads: int, cell_s: float) -> float:
        return len(self.experiment.targets) * (cell_s + CELL_OVERHEAD_S)

    def run(self, cells: list[CellPlan], data: dict[str, TargetLifecycle],
            load_failed: Mapping[str, str]) -> list[CellRecord]:
        (cell,) = cells
        e, target = self.experiment, data[cell.target.name]
        return [run_tool_cell(e, cell, target, HANG_GRACE_S) if cell.target.tool else run_cell(e, cell, target)]


KIND = OrderKind(ORDERS, lambda e: Interleaved(e, e.order))
