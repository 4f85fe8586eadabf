"""The server's simulated work: instructions per query counted under valgrind (the simulated tier). Work, not speed:
deterministic, so one count a build decides, and more of it is the regression."""

from __future__ import annotations

from dbperf.metrics.metric import Metric, Stored

INSTRUCTIONS = "instructions"  # the simulated tier's count per query, as stored results hold it


class Simulated(Metric):
    def stored(self, result: Stored) -> float | None:
        return (result.simulated or {}).get(INSTRUCTIONS) or None


SIMULATED = Simulated(
    "simulated", "simulated work", "instructions per query", work=True, deterministic=True, bisects=True,
    trees=True, series=True, threshold="2%",
    help="each step decided on the server's simulated instructions per query, counted once per release (or commit) "
         "under valgrind; the found step then confirmed once by the wall clock")
