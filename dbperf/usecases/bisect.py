"""`dbperf bisect`: the first released version of a server whose verdict against the oldest of a range turns
slower (or, with --tree, the first commit of a checkout with more work: usecases/bisect_candidates.py lists either),
by a binary search (usecases/bisect_search.py) whose every step is judged by the chosen metric
(usecases/bisect_metrics.py: an A/B run, usecases/bisect_step.py, or simulated work per query). This module is the
use case: everything that can refuse the bisect looked at before anything is fetched or started, the folder claimed
and held while the search runs, the search cut short replayed, and the bisect's path returned (bisect.json,
storage/bisect_path.py; the CLI prints it through report/bisect_view.py).

The output directory is held as `dbperf run` holds its --out (storage/results.py's `hold`, by storage/out_folder.py's
rule): new or empty, or, with --resume, a folder of a bisect cut short (of the same settings and range:
`earlier_steps`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rich.console import Console

from dbperf import engines
from dbperf.errors import UserError
from dbperf.runner.interrupts import exit_code
from dbperf.storage.bisect_path import (
    BISECT,
    BisectPath,
    BisectResult,
    Step,
    StepSettings,
    read_path,
    write_path,
)
from dbperf.storage.out_folder import claim
from dbperf.storage.results import hold
from dbperf.usecases.bisect_candidates import candidates
from dbperf.usecases.bisect_metrics import require_tools, run_bisect
from dbperf.usecases.bisect_search import expected_steps
from dbperf.usecases.progress import PROGRESS, say


def earlier_steps(out: Path, settings: StepSettings, versions: list[str]) -> list[Step]:
    """The steps of the search cut short in `out` (its bisect.json), for `--resume`. Refused in one line: no
    bisect there, one that ended, or another bisection (other settings or another range: its path would not
    replay), named."""
    path = claim(out, BISECT, resume=True)
    assert isinstance(path, BisectPath)
    differences = path.differences(settings, versions)
    if differences:
        raise UserError(f"--out {out}: holds the bisect of {path.describe()}, run with other settings or another "
                        f"range of releases ({differences}); resume it with the same ones")
    return list(path.result.steps)


@dataclass(frozen=True)
class Bisected:
    """A bisect's answer: its path (as bisect.json holds it) and its steps had every step decided at once."""
    path: BisectPath
    expected_steps: int


def default_directory(engine: str) -> Path:
    return Path("results") / f"bisect-{engine}-{datetime.now():%Y%m%d-%H%M%S}"


def spread_warning(settings: StepSettings) -> str | None:
    """The warning for a work threshold within the spread measured between two counts of one engine's same code
    (Engine.count_spread), None when the threshold is above it or none was measured."""
    engine = engines.engine(settings.engine)
    spread = engine.count_spread
    if not settings.metric.work or spread is None or settings.threshold > spread:
        return None
    return (f"dbperf: warning: two counts of the same {engine.title} code, each in a server with its table loaded "
            f"anew, differed by {spread:.1%} per query here (docs/studies.md): at --threshold "
            f"{settings.threshold:.1%} a step can be named that changed nothing; give a threshold above {spread:.1%}")


def bisect(settings: StepSettings, first: str, last: str, out: Path | None, tries: int, resume: bool = False,
           yes: bool = False, err: Console = PROGRESS,
           on_step: Callable[[BisectResult], object] | None = None, confirm: bool = True) -> Bisected:
    """The whole bisect: every refusal before anything is fetched, built or started (the settings, the metric's
    tools, the folder, the range, the settings' names), then the search in the claimed folder. `confirm` False:
    the found step is not run by the wall clock (--no-confirm)."""
    kind = candidates(settings)
    kind.check()
    if tries < 1:
        raise UserError(f"--tries: expected at least 1, got {tries}")
    if resume and out is None:
        raise UserError("--resume goes on with a bisect cut short: give its directory with --out DIR")
    require_tools(settings)
    directory = (out or default_directory(settings.engine)).absolute()
    claim(directory, BISECT, resume)  # before anything is fetched or started
    versions = kind.span(first, last)
    with hold(directory, BISECT, resume):  # made, locked and looked at again: the folder is this bisect's
        earlier = earlier_steps(directory, settings, versions) if resume else []
        if not resume:  # the folder is this bisect's from now on: killed in its first step, it can be resumed
            write_path(directory, BisectPath(settings, BisectResult(versions, metric=settings.metric)))
        by = f" of {settings.metric.label} per query" if settings.metric.work else ""
        say(f"dbperf: bisect {settings.engine} {kind.word(versions[0])} .. {kind.word(versions[-1])}: "
            f"{len(versions)} {kind.noun} ({kind.how}), {settings.benchmark}, slower at {settings.threshold:.1%}{by} "
            f"or more; about {expected_steps(len(versions))} steps; results in {directory}", err)
        warning = spread_warning(settings)
        if warning:
            say(warning, err)
        try:
            result = run_bisect(settings, versions, directory, tries, yes, err, earlier=earlier, on_step=on_step,
                                confirm=confirm)
        except KeyboardInterrupt as interrupt:  # in a build, a count or between steps: said as it ended
            _ended_by(directory, interrupt, err)
            raise
    return Bisected(BisectPath(settings, result), expected_steps(len(versions)))


def _ended_by(directory: Path, interrupt: KeyboardInterrupt, err: Console) -> None:
    """bisect.json says the search was interrupted, with the command's exit code (128 + the signal), and how to
    go on with it: its steps so far are kept."""
    path = read_path(directory)
    if path is None:
        return
    path.result.outcome, path.result.exit_code = "interrupted", exit_code(interrupt)
    write_path(directory, path)
    say(f"dbperf: bisect interrupted after {len(path.result.steps)} step(s), kept in {directory}; go on with it: the "
        f"same command with --resume --out {directory}", err)
