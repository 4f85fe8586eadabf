"""`from = "cell"`: one cell of an experiment step (target, benchmark, threads): its rQPS against the run's base (or
`base`, another of its targets, from the same rounds) with the lab's verdict under the run's own rule, or with
`field` a per-query figure of the cell (the median of its repeats, no verdict). `results_from`: the path in the
step's JSON of the results directory of a run the step made of its own (the layout check's A/B)."""

from __future__ import annotations

from typing import ClassVar

from dbperf.experiment.model import Experiment
from dbperf.studies.evidence import median_interval
from dbperf.studies.measured import (
    Measured,
    NotMeasured,
    builds_of,
    interval_or_why,
    run_verdict,
    verdict_interval,
)
from dbperf.studies.measures.base import Measure, MeasureChecking, Reading


class CellMeasure(Measure, frozen=True, tag="cell"):
    target: str = ""
    benchmark: str = ""
    threads: int = 1
    field: str = "rqps"
    base: str | None = None
    results_from: str | None = None
    reads_results: ClassVar[bool] = True

    def check(self, at: MeasureChecking) -> None:
        super().check(at)
        names = at.targets.get(self.step)
        if names is None:
            raise at.refuse("a cell measure names an experiment step")
        # A run the step makes of its own (results_from: the layout check's A/B) has targets the file does not.
        if not self.results_from and self.target not in names:
            raise at.refuse(f"target {self.target!r} is not in step {self.step!r}'s experiment")
        if self.base is not None and (self.results_from or self.base not in names):
            raise at.refuse(f"base {self.base!r} is not a target of step {self.step!r}'s experiment")
        if self.benchmark not in at.catalog:
            raise at.refuse(f"benchmark {self.benchmark!r} is not in the catalog")

    def run_step(self) -> str | None:
        return None if self.results_from else self.step

    def left_out_of(self, run: Experiment) -> str | None:
        if self.benchmark not in {b.name for b in run.benchmarks}:
            return self.benchmark
        names = {t.name for t in run.targets}
        gone = [n for n in (self.target, self.base) if n is not None and n not in names]
        return f"target {gone[0]}" if gone else None

    def read(self, reader: Reading) -> Measured:
        matrix = reader.matrix(self.step, self.results_from, self.base)
        meta = reader.meta(self.step, self.results_from, self.base)
        cell = matrix.cell(self.target, self.benchmark, self.threads)
        builds, problems = builds_of(meta, [self.target, self.base or matrix.base])
        if self.field != "rqps":  # a per-query figure of the cell (median of its repeats), no verdict
            value = cell.median_of(self.field) if cell is not None else None
            if value is None or cell is None:
                raise NotMeasured(f"cell {self.target} {self.benchmark} has no {self.field}")
            samples = {r.repeat: v for r, f in zip(cell.runs, cell.figures, strict=False)
                       if (v := f.get(self.field)) is not None}
            return Measured(value, samples=samples, builds=builds, problems=problems,
                            **interval_or_why(median_interval(list(samples.values()))))
        if cell is None or cell.rqps is None:
            raise NotMeasured(f"cell {self.target} {self.benchmark} has no rQPS")
        then, change = run_verdict(cell.verdict_detail, cell.cpu_verdict_detail, meta.started_at)
        said: str = then.verdict if then else "undecided"
        if change is not None:
            said += f" (a rule added after the run, {change.date}, calls it: {change.what})"
        elif then is not None and then.decided and not then.metric.headline:
            said += " on CPU time (the wall clock undecided)"
        wall, _ = run_verdict(cell.verdict_detail, None, meta.started_at)
        return Measured(cell.rqps, said, decided=bool(then and then.decided), builds=builds, problems=problems,
                        **interval_or_why(verdict_interval(wall)))


KIND = CellMeasure
