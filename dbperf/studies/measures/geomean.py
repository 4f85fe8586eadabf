"""`from = "geomean"`: one target of an experiment step over every benchmark it was not trained on, as a headline
counts it: its geomean rQPS (against the run's base, or `base`) and how many cells the lab decided slower and
faster. It reads the step's own results (no results_from)."""

from __future__ import annotations

from typing import ClassVar

from dbperf.experiment.model import Experiment
from dbperf.studies.measured import Measured, NotMeasured, builds_of
from dbperf.studies.measures.base import Measure, MeasureChecking, Reading
from dbperf.studies.tally import tallied


class GeomeanMeasure(Measure, frozen=True, tag="geomean"):
    target: str = ""
    base: str | None = None
    reads_results: ClassVar[bool] = True

    def check(self, at: MeasureChecking) -> None:
        super().check(at)
        names = at.targets.get(self.step)
        if names is None:
            raise at.refuse("a geomean measure names an experiment step")
        if self.target not in names:
            raise at.refuse(f"target {self.target!r} is not in step {self.step!r}'s experiment")
        if self.base is not None and self.base not in names:
            raise at.refuse(f"base {self.base!r} is not a target of step {self.step!r}'s experiment")

    def run_step(self) -> str | None:
        return self.step

    def left_out_of(self, run: Experiment) -> str | None:
        names = {t.name for t in run.targets}
        gone = [n for n in (self.target, self.base) if n is not None and n not in names]
        return f"target {gone[0]}" if gone else None

    def read(self, reader: Reading) -> Measured:
        matrix = reader.matrix(self.step, base=self.base)
        meta = reader.meta(self.step, base=self.base)
        if not any(t == self.target for t, _, _ in matrix.cells):
            raise NotMeasured(f"step {self.step!r} ran no target {self.target} (a run from before the study had it?)")
        t = tallied(matrix, self.target, meta.started_at)
        if t.geomean is None:
            raise NotMeasured(f"target {self.target} has no compared cell")
        held_out = {b for _, b, _ in matrix.rows() if not matrix.was_trained_on(self.target, b)}
        short = (f"; over {t.compared} of {len(held_out)} benchmarks, the others without rQPS"
                 if t.compared < len(held_out) else "")
        builds, problems = builds_of(meta, [self.target, self.base or matrix.base])
        return Measured(t.geomean, f"{t.breakdown()}{short}", builds=builds, problems=problems,
                        why_none="a geomean over cells, each with its own verdict (counted beside it)",
                        decided=False)


KIND = GeomeanMeasure
