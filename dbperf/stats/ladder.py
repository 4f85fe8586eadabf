"""The tuning ladder ([Ronström 2008-03-25]): targets are cumulative steps; each step's gain over the previous step
and over the base, per benchmark and as a geometric mean over benchmarks. A step whose geometric mean gain over the
previous step is below 1 loses and is flagged, as is every benchmark that a step made significantly slower."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dbperf.stats.rqps_matrix import Matrix
from dbperf.stats.summary import significance


@dataclass
class StepBenchmark:
    benchmark: str
    threads: int
    qps: float | None
    vs_previous: float | None
    vs_base: float | None
    significant: bool | None  # of the difference to the previous step


@dataclass
class Step:
    index: int
    target: str
    geomean_vs_previous: float | None
    geomean_vs_base: float | None
    benchmarks: list[StepBenchmark] = field(default_factory=list)

    @property
    def loses(self) -> bool:
        return self.geomean_vs_previous is not None and self.geomean_vs_previous < 1.0

    def losing_benchmarks(self) -> list[StepBenchmark]:
        return [b for b in self.benchmarks if b.vs_previous is not None and b.vs_previous < 1.0 and b.significant]


def geomean(values: list[float | None]) -> float | None:
    """Of the values that exist; None when none does."""
    present = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in present) / len(present)) if present else None


def _step_benchmark(m: Matrix, target: str, previous: str | None, base: str, benchmark: str,
                    threads: int) -> StepBenchmark:
    """One benchmark of a step: its QPS, its gain over the previous step and over the base."""
    cell = m.cell(target, benchmark, threads)
    qps = cell.qps.center if cell and cell.qps else None
    prev_cell = m.cell(previous, benchmark, threads) if previous else None
    base_cell = m.cell(base, benchmark, threads)
    prev_qps = prev_cell.qps.center if prev_cell and prev_cell.qps else None
    base_qps = base_cell.qps.center if base_cell and base_cell.qps else None
    sig = None
    if cell and cell.qps and prev_cell and prev_cell.qps:
        sig, _ = significance(cell.per_run("qps"), prev_cell.per_run("qps"))
    return StepBenchmark(
        benchmark, threads, qps,
        vs_previous=qps / prev_qps if qps and prev_qps else None,
        vs_base=qps / base_qps if qps and base_qps else None,
        significant=sig)


def ladder(m: Matrix) -> list[Step]:
    steps: list[Step] = []
    base = m.targets[0]
    for i, target in enumerate(m.targets):
        previous = m.targets[i - 1] if i else None
        rows = [_step_benchmark(m, target, previous, base, benchmark, threads) for _, benchmark, threads in m.rows()]
        steps.append(Step(i, target,
                          geomean_vs_previous=geomean([r.vs_previous for r in rows]) if previous else None,
                          geomean_vs_base=geomean([r.vs_base for r in rows]), benchmarks=rows))
    return steps
