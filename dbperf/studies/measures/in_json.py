"""`from = "json"`: a value in a step's JSON (its own file, or `file`) at a path such as
`replication.apply[workers=4,durability=binlog-crash-safe].vs_serial` (measured.walk). A bool or a string is a fact
shown as it is, a list counts; `empty`: what a null there means (a measured absence); `spread = [LOW, HIGH, RUNS]`:
the paths of its runs' range (its interval); `proportion = [COUNT, OF]`: of a share's count (Wilson's interval);
`measured_by`: the path of the run that measured it, where that is not the step's own."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dbperf.studies.evidence import Interval, proportion_interval, spread_interval
from dbperf.studies.measured import Measured, NotMeasured, Provenance, number, walk
from dbperf.studies.measures.base import Measure, MeasureChecking, Reading


class JsonMeasure(Measure, frozen=True, tag="json"):
    path: str = ""
    file: str | None = None
    empty: str | None = None
    spread: list[str] | None = None
    proportion: list[str] | None = None
    measured_by: str | None = None

    def check(self, at: MeasureChecking) -> None:
        super().check(at)
        if not self.path:
            raise at.refuse("a json measure needs a path (and optionally the step's file)")
        for paths, n, what in ((self.spread, 3, "spread is a list of 3 paths (lowest, highest, the runs)"),
                               (self.proportion, 2, "proportion is a list of 2 paths (the count, of how many)")):
            if paths is not None and len(paths) != n:
                raise at.refuse(f"a json measure's {what}")

    def read(self, reader: Reading) -> Measured:
        doc = reader.step_json(self.step, self.file)
        measured = self._value(reader, doc)
        try:  # an output written before it named the run (or null: this run measured it) names none
            by = walk(doc, self.measured_by) if self.measured_by else None
        except NotMeasured:
            by = None
        return replace(measured, run=Provenance.from_json(by)) if isinstance(by, dict) else measured

    def _value(self, reader: Reading, doc: Any) -> Measured:
        found = walk(doc, self.path)
        if isinstance(found, bool):
            return Measured(None, text="yes" if found else "no")
        if isinstance(found, str):
            return Measured(None, text=found)
        if isinstance(found, list):  # how many (findings, steps)
            return Measured(float(len(found)))
        if found is None:
            if self.empty is not None:  # a measured absence (a bisect that found no slower release)
                return Measured(None, text=self.empty)
            raise NotMeasured(f"{self.path} is empty in the results")
        value = number(found, self.path)
        exact = reader.exact(self.step)
        if exact:
            return Measured(value, interval=Interval(value, value, exact, exact=True, coverage=1.0))
        if self.spread is not None:  # the range of its runs, kept beside it
            low, high, runs = (walk(doc, p) for p in self.spread)
            if not isinstance(runs, list) or len(runs) < 2:
                return Measured(value, why_none="a single run: no range")
            return Measured(value, interval=spread_interval(number(low, self.spread[0]), number(high, self.spread[1]),
                                                            len(runs)))
        if self.proportion is not None:  # a share counted: how many of how many
            count, of = (int(number(walk(doc, p), p)) for p in self.proportion)
            if of > 0:
                return Measured(value, interval=proportion_interval(count, of))
        return Measured(value, why_none="one value from the step's JSON (no repeats kept with it)")


KIND = JsonMeasure
