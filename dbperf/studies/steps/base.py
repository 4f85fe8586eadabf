"""What a study step kind is (sysbench's driver table, asv's plugins): one object per kind that says the keys its
step takes, checks them against the lab's tables, caps its --smoke run, names the file it writes, says what a
resumed run keeps of it, and runs it. Each kind is a module of this package with a `KIND` (steps/__init__.py finds
them): a new kind is a new file, asked by the study's loader and runner, never branched on by name."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.storage.results import META
from dbperf.studies.definition import Mode, Step, Study

INCOMPLETE = 1  # a step failed or a figure the run should measure was not: the summary says which
INTERRUPTED = 128  # and above: 128 + the signal's number


@dataclass(frozen=True)
class StepEnd:
    how: str  # in words, for the summary
    exit_code: int = 0  # 0, INCOMPLETE when it failed, 128 + N when interrupted


@dataclass(frozen=True)
class StepRun:
    """One step as it runs: its study, its settings in this mode (the step's overrides applied), where it writes,
    and the run's options that reach it."""
    study: Study
    step: Step
    mode: Mode
    directory: Path
    yes: bool
    err: Console
    budget_s: float | None = None  # caps an experiment step's budget (--budget)
    resume: bool = False  # an experiment step goes on with its run cut short (--resume)
    extend_s: float = 0.0  # an experiment step's undecided groups get this much more budget (--extend)

    @property
    def name(self) -> str:
        return self.step.name

    @property
    def settings(self) -> dict[str, Any]:
        return self.step.effective(self.mode)


@dataclass(frozen=True)
class Checking:
    """What a kind's check of one step's settings may ask: the study, the step, where it is said (for messages),
    the catalog's benchmarks and the experiment steps before it (what `of` may name)."""
    study: Study
    step: Step
    where: str
    catalog: dict[str, Any]
    earlier_experiments: tuple[str, ...] = ()


@dataclass
class Over:
    """What a step's --smoke run would exceed (`limits`: at most this much, by key), each said in words."""
    limits: dict[str, float]
    said: list[str] = field(default_factory=list)

    def __call__(self, value: float | None, key: str, what: str) -> None:
        if value is not None and value > self.limits[key]:
            self.said.append(f"{what} {value:g} (at most {self.limits[key]:g})")


def read_json(path: Path) -> Any:
    """A step's JSON as it wrote it; None when it is missing or unreadable (a step cut short)."""
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_text(encoding="utf-8"))
    return None


class StepKind:
    """A kind of study step. The defaults are a step that writes DIR/<step>.json, checks nothing beyond its keys,
    has no smoke limits, and on --resume is kept once it wrote its file and runs again from its start otherwise."""
    name: ClassVar[str]
    # The keys its step takes (besides name, kind, quick, smoke); a step's `quick` and `smoke` override some.
    keys: ClassVar[tuple[str, ...]]
    # Its DIR/<step>/ is an experiment's run (a matrix of cells): cell and geomean measures, headlines, and the
    # `of` of a diff or counters step read it.
    has_cells: ClassVar[bool] = False
    # What its --smoke run may do, besides an experiment's own limits (model.EXPERIMENT_LIMITS).
    smoke_limits: ClassVar[dict[str, float]] = {}

    def exact(self, s: dict[str, Any]) -> str | None:
        """Why the values its JSON holds are exact (deterministic counts: their interval has no width), or None when
        they are measurements with noise (`s`: the step's settings)."""
        return None

    def check(self, s: dict[str, Any], at: Checking) -> None:
        """Refuses settings (`s`: the step's in one mode) naming what does not exist; one line, UserError."""

    def experiments(self, study: Study, step: Step, where: str) -> dict[Mode, Experiment]:
        """The experiment the step runs or reads in each mode (parsed and checked), when it has one."""
        return {}

    def smoke(self, s: dict[str, Any], over: Over, where: str) -> None:
        """Says (`over`) what of its --smoke settings `s` would run long."""

    def families(self, settings: dict[str, Any]) -> tuple[str, ...]:
        """The probe families it runs, which a probe measure may name."""
        return ()

    def own_file(self, directory: Path, step: str) -> Path:
        """The JSON it writes, which a figure's json measure reads unless it names another file."""
        return directory / f"{step}.json"

    def results(self, directory: Path, step: str) -> Path | None:
        """Its results directory in a study run (what goes on record beside the study's page), when it has one."""
        own = directory / step
        return own if (own / META).is_file() else None

    def kept_before(self, study: Study, step: Step, directory: Path, extend: bool) -> str | None:
        """How the step ended before a resume, when the resume keeps it; None when it runs (again). `extend`:
        --extend, which gives a run stopped on its budget more rounds."""
        written = self.own_file(directory, step.name)
        return f"kept from before the resume ({written.relative_to(directory)})" if written.is_file() else None

    def goes_on(self, run: StepRun) -> bool:
        """Whether the step run again on --resume goes on from what its cut-short sitting wrote (else that is set
        aside and it starts again)."""
        return False

    def aside_reason(self, aside: Path) -> str:
        """Why what a cut-short sitting wrote (now in `aside`) is set aside, in words."""
        return f"a cut-short {self.name} step does not go on from what it wrote"

    def run(self, run: StepRun) -> StepEnd:
        raise NotImplementedError


def of_steps(s: dict[str, Any]) -> list[str]:
    """The earlier experiment steps a step reads (`of`): one name, or a list of them (a study whose experiment is cut
    into steps of about two hours each, so that no figure needs two runs)."""
    of = s.get("of")
    return [str(o) for o in of] if isinstance(of, list) else [str(of)]


def check_of(s: dict[str, Any], at: Checking, many: bool = False) -> None:
    """A step that reads an earlier experiment step (diff, counters) names one in `of` (several, with `many`)."""
    named = of_steps(s)
    if (isinstance(s.get("of"), list) and (not many or not named)) or any(
            o not in at.earlier_experiments for o in named):
        raise UserError(f"{at.where}: 'of' must name {'experiment steps' if many else 'an experiment step'} before "
                        f"it ({', '.join(at.earlier_experiments)})")
