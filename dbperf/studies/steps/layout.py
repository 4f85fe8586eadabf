"""A layout step: the layout check (dbperf layout) of a binary, a run or an experiment's target, optionally its
--fix A/B; its report in DIR/<step>.txt, its JSON in DIR/<step>.json, the A/B's results in DIR/<step>-ab-*/."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.durations import parse_duration
from dbperf.experiment.model import Experiment
from dbperf.experiment.spec import parse_experiment
from dbperf.layout.command import layout_command
from dbperf.layout.fix import extend_fix_ab, fix_ab_to_extend
from dbperf.storage.results import META
from dbperf.studies.definition import MODES, Mode, Step, Study
from dbperf.studies.steps.base import INCOMPLETE, INTERRUPTED, Checking, Over, StepEnd, StepKind, StepRun


class LayoutKind(StepKind):
    name = "layout"
    keys = ("demo", "binary", "run", "experiment", "target", "benchmark", "fix", "trace_seconds")
    smoke_limits: ClassVar[dict[str, float]] = {"trace_seconds": 5.0}

    def check(self, s: dict[str, Any], at: Checking) -> None:
        if s.get("benchmark") is not None and s["benchmark"] not in at.catalog:
            raise UserError(f"{at.where}: benchmark {s['benchmark']!r} is not in the catalog")

    def experiments(self, study: Study, step: Step, where: str) -> dict[Mode, Experiment]:
        """The experiment whose target it checks (and its quick and smoke ones)."""
        if "experiment" not in step.settings:
            return {}
        out = {}
        for mode in MODES:
            path = study.experiment_path(step, mode)
            out[mode] = parse_experiment(path)
            if step.settings.get("target") not in {t.name for t in out[mode].targets}:
                raise UserError(f"{where}: target {step.settings.get('target')!r} is not in {path.name}")
        return out

    def smoke(self, s: dict[str, Any], over: Over, where: str) -> None:
        if s.get("experiment") or s.get("run"):
            over(parse_duration(s.get("trace_seconds", "60"), f"{where} trace_seconds"), "trace_seconds",
                 "seconds traced")

    def results(self, directory: Path, step: str) -> Path | None:
        """Its --fix A/B run (DIR/<step>-ab-*/results, beside the step's JSON; the newest when a rerun left
        several)."""
        own = super().results(directory, step)
        if own is not None:
            return own
        runs = [p for p in directory.glob(f"{step}-ab-*/results") if (p / META).is_file()]
        return max(runs, key=lambda p: (p / META).stat().st_mtime) if runs else None

    def kept_before(self, study: Study, step: Step, directory: Path, extend: bool) -> str | None:
        if extend and fix_ab_to_extend(self.own_file(directory, step.name)) is not None:
            return None  # its --fix A/B's undecided cells get more rounds (the check itself is kept)
        return super().kept_before(study, step, directory, extend)

    def run(self, run: StepRun) -> StepEnd:
        name, s, directory = run.name, run.settings, run.directory
        log = directory / f"{name}.txt"
        if run.extend_s and (ab := fix_ab_to_extend(directory / f"{name}.json")) is not None:
            return _extended(run, log, ab)
        experiment = run.study.experiment_path(run.step, run.mode) if s.get("experiment") else None
        binary = Path(s["binary"]) if s.get("binary") else None
        if binary is not None and not binary.exists():
            raise UserError(f"{binary}: not found (the step checks an installed binary)")
        with log.open("w") as f:
            code = layout_command(binary, s.get("run"), experiment, s.get("target"), s.get("benchmark"), None,
                                  directory / f"{name}.json", bool(s.get("fix")), bool(s.get("demo")), "auto",
                                  Console(file=f, width=160, color_system=None), run.err,
                                  trace_seconds=s.get("trace_seconds"))
        if code:
            return StepEnd(f"interrupted (exit {code}); the report so far is in {log.name}", code)
        return StepEnd(f"layout check, report in {log.name}, JSON in {name}.json")


def _extended(run: StepRun, log: Path, ab: Path) -> StepEnd:
    """--extend: the check and the rebuild are kept; only the A/B's undecided cells get more rounds."""
    with log.open("a") as f:
        code = extend_fix_ab(run.directory / f"{run.name}.json", run.extend_s,
                             Console(file=f, width=160, color_system=None), run.err, run.yes)
    if code >= INTERRUPTED:
        return StepEnd(f"interrupted while its A/B was extended; what was measured is in {ab}", code)
    if code:
        return StepEnd(f"failed: its A/B's extension measured no cell (exit {code}); errors in {ab}", INCOMPLETE)
    return StepEnd(f"layout check kept; its --fix A/B extended by {run.extend_s:g} s (--extend), results in "
                   f"{ab}, report appended to {log.name}")


KIND = LayoutKind()
