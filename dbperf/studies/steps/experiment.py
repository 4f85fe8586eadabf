"""An experiment step: an experiment file (with the step's overrides and target subset) run through the run use
case into DIR/<step>/, its HTML and JSON reports beside it (DIR/<step>-report.html, .json)."""

from __future__ import annotations

from pathlib import Path

from dbperf.errors import UserError
from dbperf.experiment import toml_text
from dbperf.experiment.durations import parse_duration
from dbperf.experiment.model import Experiment
from dbperf.experiment.spec import parse_experiment
from dbperf.output_file import write_file
from dbperf.report import formats
from dbperf.runner.resume import stopped_on_budget
from dbperf.storage.results import META, read_meta
from dbperf.studies.definition import MODES, Mode, Step, Study, experiment_doc, parsed_experiment, study_command
from dbperf.studies.steps.base import INCOMPLETE, INTERRUPTED, StepEnd, StepKind, StepRun
from dbperf.usecases.report import report_view
from dbperf.usecases.run import run_experiment


def experiment_file(study: Study, step: Step, mode: Mode, directory: Path, budget_s: float | None = None) -> Path:
    """The step's experiment as it runs (definition.experiment_doc), written as DIR/<step>.toml; `budget_s` caps
    the budget of its automatic repeats (a file with a fixed number of repeats has none)."""
    doc = experiment_doc(study, step, mode)
    run = doc.setdefault("run", {})
    if budget_s is not None and run.get("repeats", "auto") == "auto":
        own = parse_duration(run["budget"], "budget", positive=True) if "budget" in run else None
        run["budget"] = f"{min(own, budget_s) if own is not None else budget_s:g}s"
    path = directory / f"{step.name}.toml"
    path.write_text(f"# {step.effective(mode)['experiment']} as run by `{study_command(study, mode)}`"
                    f"{f' (budget capped at {budget_s:g} s)' if budget_s is not None else ''}\n"
                    + toml_text.document(doc))
    return path


class ExperimentKind(StepKind):
    name = "experiment"
    keys = ("experiment", "aa", "run", "replication", "targets")
    has_cells = True

    def experiments(self, study: Study, step: Step, where: str) -> dict[Mode, Experiment]:
        return {mode: parsed_experiment(study, step, mode) for mode in MODES}

    def own_file(self, directory: Path, step: str) -> Path:
        return directory / f"{step}-report.json"

    def kept_before(self, study: Study, step: Step, directory: Path, extend: bool) -> str | None:
        """Kept when its run completed; resumed when cut short; with --extend, run again when it stopped on its
        budget share with cells undecided."""
        meta = directory / step.name / META
        if not meta.is_file():
            return None
        if extend and stopped_on_budget(meta.parent):
            return None  # its undecided cells get more rounds
        try:
            complete = read_meta(meta.parent).status == "complete"
        except UserError:
            return None  # unreadable: run again (resumed, or said why not)
        return f"complete before the resume, results in {step.name}/" if complete else None  # cut short: resumed

    def goes_on(self, run: StepRun) -> bool:
        """A matrix run goes on from its measured cells; a replication lab's starts again."""
        return ((run.directory / run.step.name / META).is_file()
                and not experiment_doc(run.study, run.step, run.mode).get("replication"))

    def aside_reason(self, aside: Path) -> str:
        return ("a replication lab's run does not go on from its measurements" if (aside / META).is_file() else
                f"its run was cut short before it wrote {META}")

    def run(self, run: StepRun) -> StepEnd:
        s, step, directory = run.settings, run.step, run.directory
        file = experiment_file(run.study, step, run.mode, directory, run.budget_s)
        spec = parse_experiment(file)
        # A matrix run goes on from its measured cells; a replication lab's starts again (set_aside moved it away).
        resume = run.resume and (directory / step.name / META).is_file() and spec.replication is None
        # --extend reaches a step whose rounds are automatic; one with a fixed number is only resumed
        extend_s = run.extend_s if resume and spec.budget_s is not None else 0.0
        end = run_experiment(file, directory / step.name, keep_data=False, yes=run.yes, aa=bool(s.get("aa")),
                             err=run.err, resume=resume, extend_s=extend_s)
        reports = _reports(end.directory, directory, step.name, resume)
        if end.exit_code >= INTERRUPTED:
            return StepEnd(f"interrupted; what was measured is in {end.directory.name}/", end.exit_code)
        if end.exit_code:
            return StepEnd(f"failed: no cell succeeded (exit {end.exit_code}); errors in {end.directory.name}/"
                           "results.jsonl", INCOMPLETE)
        return StepEnd(f"experiment {s['experiment']}, results in {end.directory.name}/, reports "
                       f"{', '.join(reports)}")


def _reports(results: Path, directory: Path, step: str, resume: bool) -> list[str]:
    """The run's HTML and JSON reports beside it (DIR/<step>-report.html, .json), when it wrote its meta.json."""
    reports: list[str] = []
    if (results / META).is_file():
        view = report_view(results)
        for fmt in ("html", "json"):
            write_file(directory / f"{step}-report.{fmt}", formats.render(view.view(), fmt), force=resume,
                       option="--out")
            reports.append(f"{step}-report.{fmt}")
    return reports


KIND = ExperimentKind()
