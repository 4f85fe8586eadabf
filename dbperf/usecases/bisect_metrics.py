"""What decides a step of `dbperf bisect` (`--metric`): the wall clock's sequential verdicts (usecases/bisect.py's
WallBisect, the default) or the server's simulated work per query (usecases/bisect_work.py's SimulatedBisect). A
new metric is a new entry here and a file of its own."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rich.console import Console

from dbperf.errors import UserError
from dbperf.usecases.bisect import BisectResult, Judge, Step, StepSettings, WallBisect, search, write_path
from dbperf.usecases.bisect_work import SimulatedBisect
from dbperf.usecases.progress import PROGRESS


class Bisection(Protocol):
    def judge(self) -> Judge: ...

    def finish(self, result: BisectResult, written: Callable[[BisectResult], object]) -> None: ...


# (settings, out, yes, err, earlier) -> the metric's judge and finish
Factory = Callable[[StepSettings, Path, bool, Console, Sequence[Step]], Bisection]


@dataclass(frozen=True)
class Metric:
    name: str
    threshold: str  # the default --threshold
    one_try: bool  # a count that does not vary needs one try a step
    help: str
    make: Factory


METRICS = {m.name: m for m in (
    Metric("wall", "5%", False, "each step an A/B run decided by the sequential verdicts (default)",
           lambda s, out, yes, err, earlier: WallBisect(s, out, yes, err, earlier)),
    # a count kept on disk (out/simulated/) replays a search cut short: no `earlier` needed
    Metric("simulated", "2%", True, "each step decided on the server's simulated instructions per query, counted "
                                    "once per release under valgrind; the found step then confirmed once by the wall "
                                    "clock", lambda s, out, yes, err, earlier: SimulatedBisect(s, out, yes, err)),
)}


def metric(name: str) -> Metric:
    """The metric named `name`, or one line naming the known ones."""
    if name not in METRICS:
        raise UserError(f"--metric: expected one of {', '.join(METRICS)}, got {name!r}")
    return METRICS[name]


def bisection(settings: StepSettings, out: Path, yes: bool = False, err: Console = PROGRESS,
              earlier: Sequence[Step] = ()) -> Bisection:
    """The search's judge and finish for `settings.metric`."""
    return metric(settings.metric).make(settings, out, yes, err, earlier)


def run_bisect(settings: StepSettings, versions: list[str], out: Path, tries: int, yes: bool = False,
               err: Console = PROGRESS, earlier: Sequence[Step] = (),
               on_step: Callable[[BisectResult], object] | None = None) -> BisectResult:
    """The search over `versions` decided by the settings' metric, its path written to out/bisect.json after every
    step and at the end (with the simulated metric's lead and confirmation once known)."""
    chosen = bisection(settings, out, yes, err, earlier)

    def step_done(so_far: BisectResult) -> None:
        so_far.metric = settings.metric
        if on_step is not None:
            on_step(so_far)
        write_path(out, so_far, settings)

    started = time.monotonic()
    result = search(versions, chosen.judge(), 1 if metric(settings.metric).one_try else tries, on_step=step_done)
    result.metric, result.search_s = settings.metric, round(time.monotonic() - started, 1)
    write_path(out, result, settings)
    chosen.finish(result, lambda r: write_path(out, r, settings))
    result.total_s = round(time.monotonic() - started, 1)
    write_path(out, result, settings)
    return result
