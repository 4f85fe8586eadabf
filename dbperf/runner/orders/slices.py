"""Slices rounds (`order = "slices"`): a round is one driver process in which every target takes turns every `slice`
(orders/slice_rounds.py: the process, its job and its records), its targets in alternating order, so that the one with
slice 0 alternates from round to round. Before the first round, each SQLite target that shares its library file
gets a copy of its own (dlopen maps one file once)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from dbperf.catalog.workload import Workload
from dbperf.experiment.model import Experiment
from dbperf.records import CellRecord
from dbperf.runner.cell_plan import CellPlan
from dbperf.runner.orders.base import CELL_OVERHEAD_S, Order, OrderKind
from dbperf.runner.orders.slice_rounds import describe, own_libraries, run_slices
from dbperf.runner.rounds import round_order
from dbperf.targets.lifecycle import TargetLifecycle


@dataclass(frozen=True)
class Slices(Order):
    experiment: Experiment
    libraries: Mapping[str, str] | None = None  # the library file each target's side loads (None: not opened)

    lost_load: ClassVar[str] = ("with order = \"slices\" a round's targets share one driver process, so it takes "
                                "every round down: every cell is recorded as failed, with this cause")

    def round_cells(self, benchmark: Workload, threads: int, round_: int) -> list[list[CellPlan]]:
        e = self.experiment
        turns = round_order(e.targets, "alternate", e.seed, benchmark.name, threads, round_)
        return [[CellPlan(benchmark, threads, round_, target, position) for position, target in enumerate(turns, 1)]]

    def cells_per_round(self, threads: int) -> int:
        return len(self.experiment.targets)

    def round_s(self, threads: int, cell_s: float) -> float:
        """One process, in which every target has its warm-up and time."""
        return len(self.experiment.targets) * cell_s + CELL_OVERHEAD_S

    def run(self, cells: list[CellPlan], data: dict[str, TargetLifecycle],
            load_failed: Mapping[str, str]) -> list[CellRecord]:
        assert self.libraries is not None, "opened before its first round"
        records = run_slices(self.experiment, cells, data, self.libraries)
        taken_down(cells, records, load_failed)
        return records

    def opened(self, data_root: Path) -> Slices:
        return replace(self, libraries=own_libraries(self.experiment.targets, data_root))

    def describe(self) -> dict[str, Any]:
        return {} if self.libraries is None else {"slices": describe(self.experiment, self.libraries)}

    def note(self) -> str | None:
        if not self.experiment.turn_checkpoint:
            return None
        return ("turn_checkpoint: in the write cells each target's WAL is checkpointed at the start of each of its "
                "turns, SQLite's auto-checkpoint off (docs/verdicts.md)")


def taken_down(cells: list[CellPlan], records: list[CellRecord], load_failed: Mapping[str, str]) -> None:
    """A round with a target whose data failed to load: its one process fails, and every failed side records that
    load failure, not the driver's own error on the side that found no tables."""
    why = next((load_failed[c.target.name] for c in cells if c.target.name in load_failed), None)
    if why is None:
        return
    for record in records:
        if record.status != "ok":
            record.error = load_failed.get(record.target) or (
                f"{why} (its round's one driver process, order = \"slices\", failed with it)")


KIND = OrderKind(("slices",), Slices)
