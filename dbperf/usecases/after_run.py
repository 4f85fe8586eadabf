"""What runs after a run's matrix has ended complete, each a phase of its own (new post-run work is a new
entry here, not a branch in usecases/run.py). A phase says whether the experiment asks for it, why the run (and its
dry run) is refused when it asks for something the run will not give it, and runs on the finished results folder; the
run's results stay as they are whatever a phase does (a failure is a warning, an interrupt its exit code)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.usecases.explain_run import explain_after_run


class AfterRun(Protocol):
    @property
    def name(self) -> str: ...

    def wanted(self, e: Experiment) -> bool:
        """The experiment asks for this phase and the run gives it what it needs."""
        ...

    def refusal(self, e: Experiment) -> str | None:
        """Why the run is refused before anything is done, with the fix: the experiment asks for this phase but
        the run would give it nothing."""
        ...

    def run(self, directory: Path, err: Console) -> int | None:
        """On the complete run in `directory`: an interrupt's exit code, else None."""
        ...


@dataclass(frozen=True)
class ExplainDisagreements:
    """`explain = "disagreements"`: the simulated tier's disagreements with the wall clock explained
    (usecases/explain_run.py), the leads on stderr and DIR/explain.json."""
    name: str = "explain disagreements"

    def wanted(self, e: Experiment) -> bool:
        return e.simulated and e.explain == "disagreements"

    def refusal(self, e: Experiment) -> str | None:
        if e.explain == "disagreements" and not e.simulated:
            return (f"{e.path}: explain = \"disagreements\" explains where the simulated tier disagrees with the "
                    "measured ones, and this run has no simulated tier: nothing would be explained; add simulated = "
                    "true (or --simulated), or drop explain")
        return None

    def run(self, directory: Path, err: Console) -> int | None:
        return explain_after_run(directory, err)


PHASES: tuple[AfterRun, ...] = (ExplainDisagreements(),)


def require_phases(e: Experiment) -> None:
    """The first phase the experiment asks for that the run would give nothing, refused in one line."""
    for phase in PHASES:
        refusal = phase.refusal(e)
        if refusal is not None:
            raise UserError(refusal)


def run_after(e: Experiment, directory: Path, err: Console) -> int | None:
    """Every phase the experiment asks for, in order; the first interrupt's exit code stops them."""
    for phase in PHASES:
        if phase.wanted(e):
            interrupted = phase.run(directory, err)
            if interrupted is not None:
                return interrupted
    return None
