"""One cell of a run's plan: a (benchmark, threads, repeat, target), its place in its round, and, in a duet, its
partner and CPUs. The plan (plan.py) lists them; a round's way (runner/orders/) forms and runs them."""

from __future__ import annotations

from dataclasses import dataclass

from dbperf.catalog.workload import Workload
from dbperf.experiment.model import Target
from dbperf.runner.resume import CellKey


@dataclass(frozen=True)
class CellPlan:
    benchmark: Workload
    threads: int
    repeat: int
    target: Target
    position: int = 1  # place of the target within its round (rounds.py: alternating or seeded random order)
    partner: str | None = None  # duet: the target measured at the same moment (orders/duet_rounds.py)
    cpus: frozenset[int] | None = None  # duet: this side's CPUs (else the experiment's `cpus` decide)

    @property
    def key(self) -> CellKey:
        return (self.target.name, self.benchmark.name, self.threads, self.repeat, self.partner)
