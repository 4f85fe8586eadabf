"""Duet rounds (`order = "duet"`): a round is one duet per target other than the base, its two cells released
together on CPUs of their own (orders/duet_rounds.py: the pairing, the CPUs, the start barrier). A (benchmark, threads)
group where no duet can be formed runs interleaved rounds in alternating order instead, said in one line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbperf.catalog.workload import Workload
from dbperf.experiment.model import Experiment
from dbperf.records import CellRecord
from dbperf.runner.cell_plan import CellPlan
from dbperf.runner.cell_run import run_duet
from dbperf.runner.orders.base import CELL_OVERHEAD_S, Order, OrderKind
from dbperf.runner.orders.duet_rounds import DuetPlan, plan_duets, round_duets
from dbperf.runner.orders.interleaved import Interleaved
from dbperf.targets.lifecycle import TargetLifecycle


@dataclass(frozen=True)
class Duet(Order):
    experiment: Experiment
    duets: DuetPlan

    @property
    def fallback(self) -> Interleaved:
        """The way of a group where no duet is formed."""
        return Interleaved(self.experiment, "alternate")

    def round_cells(self, benchmark: Workload, threads: int, round_: int) -> list[list[CellPlan]]:
        """A duet's two cells, base first."""
        if not self.duets.formed(threads):
            return self.fallback.round_cells(benchmark, threads, round_)
        e = self.experiment
        base = next(t for t in e.targets if t.name == e.base)
        return [[CellPlan(benchmark, threads, round_, base, d.position, d.target.name, d.base_cpus),
                 CellPlan(benchmark, threads, round_, d.target, d.position, e.base, d.target_cpus)]
                for d in round_duets(e, self.duets, benchmark.name, threads, round_)]

    def cells_per_round(self, threads: int) -> int:
        """The base's cell beside each other target's."""
        if not self.duets.formed(threads):
            return self.fallback.cells_per_round(threads)
        return 2 * (len(self.experiment.targets) - 1)

    def round_s(self, threads: int, cell_s: float) -> float:
        """A duet's two cells run at the same moment: one cell's time per target other than the base."""
        if not self.duets.formed(threads):
            return self.fallback.round_s(threads, cell_s)
        return (len(self.experiment.targets) - 1) * (cell_s + CELL_OVERHEAD_S)

    def run(self, cells: list[CellPlan], data: dict[str, TargetLifecycle],
            load_failed: Mapping[str, str]) -> list[CellRecord]:
        if not self.duets.formed(cells[0].threads):
            return self.fallback.run(cells, data, load_failed)
        return run_duet(self.experiment, cells, data)

    def describe(self) -> dict[str, Any]:
        return {"duet": self.duets.describe(self.experiment.threads)}

    def note(self) -> str | None:
        return self.duets.note(self.experiment.threads)


KIND = OrderKind(("duet",), lambda e: Duet(e, plan_duets(e)))
