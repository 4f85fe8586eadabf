"""A way a round runs (`order` in `[run]`), as an object that is asked (sysbench's drv_ops_t, for rounds): it forms a
round's cells, counts them, says how long a round takes (the estimate asks it, so that it never plans again), runs
the cells measured together and says what it did (its part of meta.json, its line before the rounds). One module
per way, each with a `KIND` (OrderKind), found by import (orders/__init__.py): interleaved.py (one cell at a time,
alternating or seeded random order), duet.py (the base beside each other target at the same moment), slices.py
(every target taking turns in one driver process)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from dbperf.catalog.workload import Workload
from dbperf.experiment.model import Experiment
from dbperf.records import CellRecord
from dbperf.runner.cell_plan import CellPlan
from dbperf.targets.lifecycle import TargetLifecycle

CELL_OVERHEAD_S = 0.5  # the lab's own time per driver process (its start, restoring the data): for the estimate


class Order(ABC):
    """A way a round runs, planned for one experiment (by its kind); a run carries out the one `opened` returns."""

    # What a target whose data failed to load means for the run's other cells (said once per such target).
    lost_load: ClassVar[str] = "its cells are recorded as failed, the other targets are measured"

    @abstractmethod
    def round_cells(self, benchmark: Workload, threads: int, round_: int) -> list[list[CellPlan]]:
        """One round's cells in the order they run, each list the cells measured together."""

    @abstractmethod
    def cells_per_round(self, threads: int) -> int:
        """How many cells (records) a round of a (benchmark, threads) group has."""

    @abstractmethod
    def round_s(self, threads: int, cell_s: float) -> float:
        """Roughly how long a round of a (benchmark, threads) group takes, `cell_s` being a cell's warm-up and
        time (runner/estimate.py)."""

    @abstractmethod
    def run(self, cells: list[CellPlan], data: dict[str, TargetLifecycle],
            load_failed: Mapping[str, str]) -> list[CellRecord]:
        """Cells measured together (one list of `round_cells`), each target ready: a record per cell, in their
        order. `load_failed`: target -> why its data failed to load."""

    def opened(self, data_root: Path) -> Order:
        """The way as a run whose data lives in `data_root` carries it out (what it sets up before any round)."""
        return self

    def running(self, e: Experiment) -> Order:
        """The same way (opened as it is) whose cells run as `e` says: the experiment with a group's round length
        under `time = "auto"` (runner/pilot.py). Every way is a frozen dataclass whose `experiment` its cells read."""
        way: Any = self
        running: Order = replace(way, experiment=e)
        return running

    def describe(self) -> dict[str, Any]:
        """What it did, as meta.json's fields of its own (beside `order`, which names it)."""
        return {}

    def note(self) -> str | None:
        """The one line the run prints before its rounds (None: nothing to say)."""
        return None


@dataclass(frozen=True)
class OrderKind:
    """A way, found by its module's `KIND`: the `order` values it runs, and its plan of an experiment's rounds."""
    names: tuple[str, ...]
    planned: Callable[[Experiment], Order]
