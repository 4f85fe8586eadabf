"""`from = "probe"`: one figure of a probe step's probes.json, by family, group, name and what else tells it from
its neighbours (x, offset, pair, threads...); `field` picks which of its numbers (ns_per_op unless said)."""

from __future__ import annotations

from typing import Any, ClassVar

from dbperf.host.topology import HostShape
from dbperf.studies.evidence import spread_interval
from dbperf.studies.measured import Measured, NotMeasured, number
from dbperf.studies.measures.base import Measure, MeasureChecking, Reading

Identity = int | float | str | None


class ProbeMeasure(Measure, frozen=True, tag="probe"):
    family: str = ""
    group: str = ""
    name: str = ""
    field: str = "ns_per_op"
    x: Identity = None
    offset: Identity = None
    flag_offset: Identity = None
    n: Identity = None
    multiplier: Identity = None
    pair: Identity = None
    threads: Identity = None
    describes_host: ClassVar[bool] = True
    times_the_cpu: ClassVar[bool] = True

    IDENTITY: ClassVar[tuple[str, ...]] = ("x", "offset", "flag_offset", "n", "multiplier", "pair", "threads")

    def host_shape(self, reader: Reading) -> HostShape:
        return reader.host_shape(self.step)  # the probe step's own description: topology, PMU, releases served

    def check(self, at: MeasureChecking) -> None:
        super().check(at)
        if self.family not in at.families.get(self.step, ()):
            raise at.refuse("a probe measure names a family its probe step runs")
        if not self.group or not self.name:
            raise at.refuse("a probe measure needs the figure's group and name")

    def _is(self, f: dict[str, Any]) -> bool:
        return f.get("group") == self.group and f.get("name") == self.name and all(
            f.get(k) == getattr(self, k) for k in self.IDENTITY if getattr(self, k) is not None)

    def read(self, reader: Reading) -> Measured:
        doc = reader.step_json(self.step)
        family = doc.get("families", {}).get(self.family, {}) if isinstance(doc, dict) else {}
        if "skipped" in family:
            raise NotMeasured(f"probe {self.family} skipped: {family['skipped']}")
        found = next((f for f in family.get("figures", []) if self._is(f)), None)
        if found is None:
            raise NotMeasured(f"probe figure {self.group}: {self.name} not in the results")
        value = found.get(self.field)
        if isinstance(value, dict):  # median, min and max of the repeats
            median = number(value.get("median"), self.name)
            if isinstance(value.get("min"), (int, float)) and isinstance(value.get("max"), (int, float)):
                return Measured(median, interval=spread_interval(value["min"], value["max"], found.get("repeats")))
            return Measured(median, why_none="the probe kept its median only")
        return Measured(number(value, self.name), why_none="the probe kept its median only")


KIND = ProbeMeasure
