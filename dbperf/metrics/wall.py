"""The wall clock: queries per second over the measured window, the headline verdict and bisect's default."""

from __future__ import annotations

from dbperf.metrics.metric import Metric, Rates, Stored


class Wall(Metric):
    def rate(self, measured: Rates) -> float | None:
        return measured.qps

    def stored(self, result: Stored) -> float | None:
        return result.qps_center


WALL = Wall("wall", "wall clock", "QPS", headline=True, bisects=True, series=True, threshold="5%",
            help="each step an A/B run decided by the sequential verdicts (default)")
