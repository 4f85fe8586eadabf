"""How a step of `dbperf bisect` is decided by its metric (`--metric`, dbperf/metrics/): the wall clock's sequential
verdicts (usecases/bisect_step.py's WallBisect, the default) or the server's simulated work per query
(usecases/bisect_work.py's SimulatedBisect). A new metric that bisects is a file in dbperf/metrics/, a file of its
own here and a Way."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rich.console import Console

from dbperf import engines
from dbperf.errors import UserError
from dbperf.metrics import SIMULATED, WALL, Metric, among, named
from dbperf.runner.preflight import Check, counting_checks, driver_check, require_service_user
from dbperf.storage.bisect_path import FAILED, BisectPath, BisectResult, Step, StepSettings, write_path
from dbperf.usecases.bisect_candidates import candidates
from dbperf.usecases.bisect_search import Judge, search
from dbperf.usecases.bisect_step import WallBisect
from dbperf.usecases.bisect_work import SimulatedBisect
from dbperf.usecases.progress import PROGRESS


class Bisection(Protocol):
    def judge(self) -> Judge: ...

    def finish(self, result: BisectResult, written: Callable[[BisectResult], object],
               confirm: bool = True) -> None: ...


# (settings, out, yes, err, earlier) -> the metric's judge and finish
Factory = Callable[[StepSettings, Path, bool, Console, Sequence[Step]], Bisection]


def _no_tools(s: StepSettings) -> list[Check]:
    return []  # each step is a run, which checks what it needs before it starts


def _counting_tools(s: StepSettings) -> list[Check]:
    return counting_checks([s.engine], "bisect --metric simulated",
                           "each step counts the server's work per query under it")


@dataclass(frozen=True)
class Way:
    """How a bisect decided by one metric runs: its judge and finish, and the tools it counts with."""
    make: Factory
    tools: Callable[[StepSettings], list[Check]] = _no_tools  # looked at before anything


WAYS: dict[Metric, Way] = {
    WALL: Way(lambda s, out, yes, err, earlier: WallBisect(s, out, yes, err, earlier)),
    # a count kept on disk (out/simulated/) replays a search cut short: no `earlier` needed
    SIMULATED: Way(lambda s, out, yes, err, earlier: SimulatedBisect(s, out, yes, err), _counting_tools),
}


def metric(name: str | None, tree: bool = False) -> Metric:
    """The metric named `name` among those a bisect is decided by, or one line naming them; no name: the first
    that decides (a tree's commits with `tree`): the wall clock; simulated work with --tree."""
    if name is not None:
        return named(name, lambda m: m.bisects)
    return among(lambda m: m.bisects and (m.trees or not tree))[0]


def require_tools(settings: StepSettings) -> None:
    """The tools the metric counts with (runner/preflight.py, as `dbperf run` looks at its tiers' tools), the
    driver and the servers' service user, before the folder is claimed or a release fetched: the first missing, in
    one line (a step's run would find the last two only once the bisect's folder is made)."""
    for check in WAYS[settings.metric].tools(settings):
        if check.problem:
            raise UserError(f"--metric {settings.metric.name}: {check.problem}")
    driver = driver_check()
    if driver.problem:
        raise UserError(driver.line())
    if engines.engine(settings.engine).server:
        require_service_user(settings.engine)


def bisection(settings: StepSettings, out: Path, yes: bool = False, err: Console = PROGRESS,
              earlier: Sequence[Step] = ()) -> Bisection:
    """The search's judge and finish for `settings.metric`."""
    return WAYS[settings.metric].make(settings, out, yes, err, earlier)


def run_bisect(settings: StepSettings, versions: list[str], out: Path, tries: int, yes: bool = False,
               err: Console = PROGRESS, earlier: Sequence[Step] = (),
               on_step: Callable[[BisectResult], object] | None = None, confirm: bool = True) -> BisectResult:
    """The search over `versions` (releases or commits, oldest first) decided by the settings' metric, its path
    written to out/bisect.json after every step and at the end (with the simulated metric's lead and, unless
    `confirm` is False, its confirmation once known)."""
    chosen = bisection(settings, out, yes, err, earlier)

    latest = BisectResult(versions, metric=settings.metric)  # the path so far, for a failure's record

    def step_done(so_far: BisectResult) -> None:
        nonlocal latest
        so_far.metric, latest = settings.metric, so_far
        if on_step is not None:
            on_step(so_far)
        write_path(out, BisectPath(settings, so_far))

    started = time.monotonic()
    try:
        result = search(versions, chosen.judge(), 1 if settings.metric.deterministic else tries, on_step=step_done)
    except Exception as e:
        # a step that could not run (a release not fetched, a tool that failed) ends the bisect, and its path says
        # so: "running" would have the folder taken for a bisect cut short (killed), and refused as one
        # the command's own exit code: bad input (a UserError, a candidate that cannot be used) is 2, else 1
        latest.outcome, latest.error = FAILED, str(e) or type(e).__name__
        latest.exit_code = 2 if isinstance(e, UserError) else 1
        write_path(out, BisectPath(settings, latest))
        raise
    result.metric, result.search_s = settings.metric, round(time.monotonic() - started, 1)
    if result.outcome == "found" and result.first_slower:
        result.found = candidates(settings).facts(result.first_slower)
    write_path(out, BisectPath(settings, result))
    chosen.finish(result, lambda r: write_path(out, BisectPath(settings, r)), confirm)
    result.total_s = round(time.monotonic() - started, 1)
    write_path(out, BisectPath(settings, result))
    return result
