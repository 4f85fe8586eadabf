"""CPU time: queries per CPU second (the driver's, plus a lab-started server's), the verdict that decides a cell
the wall clock left undecided."""

from __future__ import annotations

from dbperf.metrics.metric import Metric, Rates


class Cpu(Metric):
    def rate(self, measured: Rates) -> float | None:
        return measured.cpu_qps


CPU = Cpu("cpu", "CPU time", "queries per CPU second")
