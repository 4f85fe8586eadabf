"""Running a study end to end: each step into DIR/<step>/ (probes, the layout check, an experiment through the run
use case with its HTML and JSON reports, a bisect), then the figures read back, the Markdown summary (summary.md),
the same as an HTML page linking the steps' reports (summary.html), and the machine-readable study.json. A step
that fails is said in the summary and the next steps run; an interrupt stops the study and still writes the summary
of what was measured."""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from msgspec import UNSET
from rich.console import Console

from dbperf.errors import UserError
from dbperf.output_file import write_file
from dbperf.report import formats
from dbperf.report.escape import md
from dbperf.run_meta import MetaError
from dbperf.runner import interrupts
from dbperf.runner.preflight import require_targets
from dbperf.storage.out_folder import claim
from dbperf.storage.results import META, hold, read_meta
from dbperf.studies.definition import study_command
from dbperf.studies.figures import Headline, Provenance, Row, headline, rows, step_headlines
from dbperf.studies.model import Mode, Step, Study, load_study, mode_flag
from dbperf.studies.record import (
    DOCS_STUDIES,
    compare_with_record,
    recorded,
    recorded_results,
    shown_path,
    started_when,
    step_results,
)
from dbperf.studies.steps import step_kind
from dbperf.studies.steps.base import INCOMPLETE, INTERRUPTED, StepEnd, StepRun
from dbperf.studies.steps.experiment import experiment_file
from dbperf.studies.study_folder import SUMMARY, StudyFolder, resume_command, study_run_record
from dbperf.studies.study_record import (
    CATCHES,
    RUNNING,
    STUDY_JSON,
    StepEnded,
    StudyRecord,
    known,
    read_record,
    record_text,
)
from dbperf.studies.summary import RunFacts, html_summary, summary, this_host
from dbperf.usecases.compare import compare
from dbperf.usecases.progress import PROGRESS, say

__all__ = [
    "INCOMPLETE",
    "INTERRUPTED",
    "StepEnd",
    "StepRun",
    "experiment_file",
    "run_step",
    "run_study",
    "summarise",
]

SUMMARY_HTML = "summary.html"


@dataclass
class StudyEnd:
    directory: Path
    summary: str
    exit_code: int
    rows: list[Row]
    headline: Headline | None


def default_directory(study: Study) -> Path:
    return Path("results") / f"study-{study.name}-{datetime.now():%Y%m%d-%H%M%S}"


@dataclass(frozen=True)
class Limits:
    """What a user narrows a study run to: some of its steps (--step), a cap on each experiment's budget
    (--budget, seconds). Both are said in the summary's command line."""
    steps: tuple[str, ...] = ()
    budget_s: float | None = None

    def flags(self) -> list[str]:
        return [*(f"--step {s}" for s in self.steps), *([f"--budget {self.budget_s:g}s"] if self.budget_s else [])]

    def check(self, study: Study) -> None:
        names = [s.name for s in study.steps]
        for name in self.steps:
            if name not in names:
                raise UserError(f"--step {name}: study {study.name} has no such step (its steps: {', '.join(names)})")


def run_command(study: Study, mode: Mode, limits: Limits = Limits()) -> str:
    return study_command(study, mode, limits.flags())


def not_run(study: Study, found: list[Row], mode: Mode, why: dict[str, str]) -> list[Row]:
    """The figures of the steps this run left out (step -> the option that did: --step, or a mode's skip), said
    so; like the cells a quick run leaves out, they do not make the run incomplete."""
    out = []
    for f, r in zip(study.figures, found, strict=True):
        steps = sorted({m.step for m in f.measures(mode) if m is not None} & why.keys())
        out.append(Row(f.what, f.section, f.published, f"not measured: step {steps[0]} was not run ({why[steps[0]]})",
                       "–", left_out=True) if steps and not r.measured_anything else r)
    return out


def run_study(study: Study, out: Path | None, mode: Mode, yes: bool = False, err: Console = PROGRESS,
              limits: Limits = Limits(), resume: bool = False, extend_s: float = 0.0) -> StudyEnd:
    """Runs the study's steps into `out`, then its summary. `out` must be new or empty (claim_directory). `resume`:
    go on with the run of this study cut short in `out` (check_resumable): an experiment step that completed is
    kept, one cut short is resumed (runner/resume.py), as is a bisect cut short (its decided steps replayed); any
    other step that wrote its file is kept; the rest run, from their start (set_aside). `extend_s` (--extend, a
    resume too): an experiment step whose automatic rounds stopped on their budget with cells undecided goes on,
    with this much more budget (runner/resume.py)."""
    limits.check(study)
    if extend_s and out is None:
        raise UserError("--extend gives a study run's undecided cells more rounds: give its directory with --out DIR")
    resume = resume or bool(extend_s)
    if resume and out is None:
        raise UserError("--resume goes on with a study run cut short: give its directory with --out DIR")
    directory = (out or default_directory(study)).absolute()
    started = datetime.now(UTC)
    resumed_at: list[str] = []
    record = StudyRecord(study=study.name, title=study.title, mode=mode, quick=mode != "full",
                         smoke=mode == "smoke", checks=CATCHES)
    if resume:
        check_resumable(study, directory, mode)
        started, resumed_at = _earlier_start(directory, started)
    else:
        check_steps_targets(study, mode, limits)
        claim_directory(study, directory, record.replace(started=started.isoformat(timespec="seconds"),
                                                         directory=str(directory),
                                                         command=run_command(study, mode, limits), status=RUNNING))
    host = this_host()
    # The study's duration is the whole study's: a run narrowed by --step says which part of it it runs.
    steps = (f"{len(study.steps)} step(s), {study.duration}" if not limits.steps else
             f"step(s) {', '.join(s.name for s in study.steps if s.name in limits.steps)} of {len(study.steps)} "
             f"(--step; the whole study: {study.duration})")
    say(f"dbperf: study {study.name}{f' ({mode})' if mode != 'full' else ''}: {steps}; results in {directory}", err)
    sitting = _run_steps(StepRun(study, study.steps[0], mode, directory, yes, err, limits.budget_s, resume, extend_s),
                         limits)
    if resume and not sitting.ran and _ended(directory):
        # No sitting took place: its load average and start would misdate the run's measurements.
        say(f"dbperf: study {study.name}: every step was kept, nothing ran; the summary is written again from its "
            "results with the earlier sittings' host facts (as `dbperf study summary DIR`)", err)
        return summarise(directory, study)
    facts = RunFacts(host.ended(), started_when(started.isoformat(), resumed_at), run_command(study, mode, limits),
                     mode, headline(study, directory), sitting.ended, also=step_headlines(study, directory))
    record = record.replace(started=started.isoformat(timespec="seconds"),
                            ended=datetime.now(UTC).isoformat(timespec="seconds"), directory=str(directory),
                            command=facts.command, left_out=sitting.why, resumed_at=resumed_at or UNSET)
    # DIR was new or empty, or is this study's run: its summary files are the lab's own (the first study.json too).
    return write_summary(study, directory, facts, record, sitting.exit_code, force=True)


def check_steps_targets(study: Study, mode: Mode, limits: Limits) -> None:
    """Each experiment step this run will run, its targets looked at as `dbperf run` looks at them before it claims
    its folder (binaries there, the service user, a port free, an external server answering, the driver): a study
    that cannot run a step is told so in one line before its folder is claimed, not after hours of earlier steps."""
    for step in study.steps:
        if step.skipped(mode) or (limits.steps and step.name not in limits.steps):
            continue
        experiment = step_kind(step.kind).experiments(study, step, str(study.path)).get(mode)
        if experiment is None:
            continue
        try:
            require_targets(experiment)
        except UserError as e:
            raise UserError(f"study {study.name} step {step.name}: {e} (--step runs the others)") from None


@dataclass
class Sitting:
    """What one sitting of a study run did: each step's end (in words), the steps left out on purpose with the
    option that did, the worst exit code, and whether it ran any step (a resume may keep them all)."""
    ended: list[tuple[str, str]]
    why: dict[str, str]
    exit_code: int = 0
    ran: bool = False


def _run_steps(run: StepRun, limits: Limits) -> Sitting:
    """Runs the study's steps in order (`run`: the run's options, its step the first), each one's failure said and
    the next run; an interrupt stops the sitting."""
    study, directory, mode, err = run.study, run.directory, run.mode, run.err
    sitting = Sitting([], {})
    for step in study.steps:
        if limits.steps and step.name not in limits.steps:
            sitting.ended.append((step.name, "not run (--step)"))
            sitting.why[step.name] = "--step"
            continue
        if step.skipped(mode):
            sitting.ended.append((step.name, f"not run in the {mode_flag(mode)} run (its skip = true)"))
            sitting.why[step.name] = mode_flag(mode)
            continue
        kept = _kept_before(study, step, directory, bool(run.extend_s)) if run.resume else None
        if kept is not None:
            sitting.ended.append((step.name, kept))
            say(f"dbperf: study {study.name}: step {step.name}: {kept}", err)
            continue
        say(f"dbperf: study {study.name}: step {step.name} ({step.kind})", err)
        sitting.ran = True
        aside = None
        try:
            aside = set_aside(run, step) if run.resume else None
            end = step_kind(step.kind).run(replace(run, step=step))
        except UserError as e:  # this step's bad input or failure; the others may still measure
            end = StepEnd(f"failed: {e}", INCOMPLETE)
        except OSError as e:  # a write the step could not make (a full or read-only disk): said, not a traceback
            end = StepEnd(f"failed: {e.filename or directory}: {e.strerror or e}", INCOMPLETE)
        except KeyboardInterrupt as interrupt:
            end = StepEnd(f"interrupted ({interrupts.reason(interrupt)})", interrupts.exit_code(interrupt))
        if aside is not None:
            end = replace(end, how=f"{end.how} (run again from its start on --resume; what its cut-short sitting "
                                   f"wrote is kept in {aside.name}/)")
        sitting.ended.append((step.name, end.how))
        sitting.exit_code = max(sitting.exit_code, end.exit_code)  # 0 < INCOMPLETE < 128 + N
        if end.exit_code >= INTERRUPTED:
            break
    return sitting


def _ended(directory: Path) -> bool:
    """Whether DIR holds a study run that wrote its summary (its study.json is the whole record, not the claim)."""
    run = study_run_record(directory)
    return run is not None and not run.running


def claim_directory(study: Study, directory: Path, first: StudyRecord) -> None:
    """Takes a new or empty DIRECTORY for a new study run: its first study.json (`first`: the study, its mode, status
    running) created exclusively, so that two runs cannot both take it and a --resume knows whose run it is. A
    directory it could not take is left as it was (removed again if it made it)."""
    with hold(directory, StudyFolder(study.name)) as held:
        try:
            with open(directory / STUDY_JSON, "x", encoding="utf-8") as f:
                f.write(record_text(first))
            return
        except FileExistsError:
            raise UserError(f"--out {directory}: another study run took it meanwhile; choose another --out") from None
        except OSError as e:
            error = e
    if held.made:  # its lock let go: the folder it made removed again
        with contextlib.suppress(OSError):
            (directory / STUDY_JSON).unlink(missing_ok=True)
            directory.rmdir()
    raise UserError(f"--out {directory}: cannot write the study run there: {error.strerror or error}") from None


def check_resumable(study: Study, directory: Path, mode: Mode) -> None:
    """--resume (and --extend) go on only with a run of this study in this mode (studies/study_folder.py)."""
    claim(directory, StudyFolder(study.name, mode), resume=True)


def set_aside(run: StepRun, step: Step) -> Path | None:
    """On --resume, the folder DIR/<step>/ of a step that starts again (not _goes_on), moved aside to
    DIR/<step>.cut-short-N/ with the reports made from it: kept for whoever wants it, not deleted, and not read
    back as this sitting's results. None when there was none."""
    directory = run.directory
    own = directory / step.name
    kind = step_kind(step.kind)
    if not (own.exists() or own.is_symlink()) or kind.goes_on(replace(run, step=step)):
        return None
    n = 1
    while (directory / f"{step.name}.cut-short-{n}").exists():
        n += 1
    aside = directory / f"{step.name}.cut-short-{n}"
    try:
        own.rename(aside)
        for report in (f"{step.name}-report.html", f"{step.name}-report.json"):
            if aside.is_dir() and (directory / report).is_file():
                (directory / report).rename(aside / report)
    except OSError as e:
        raise UserError(f"{own}: cannot set the cut-short sitting's results aside: {e.strerror or e}") from None
    why = kind.aside_reason(aside)
    say(f"dbperf: study {run.study.name}: step {step.name}: {why}: it runs again from its start; what its cut-short "
        f"sitting wrote is kept in {aside}", run.err)
    return aside


def _earlier_start(directory: Path, now: datetime) -> tuple[datetime, list[str]]:
    """A resumed study run's start (the earlier run's, from its study.json when it got that far, else its steps'
    earliest meta.json), and when each resume began (this one last)."""
    earlier = study_run_record(directory)
    said = [known(earlier.started) if earlier is not None else None]
    for meta in directory.glob(f"*/{META}"):
        with contextlib.suppress(UserError):
            said.append(read_meta(meta.parent).started_at)
    starts = [now]
    for text in said:
        with contextlib.suppress(ValueError):
            if isinstance(text, str):
                starts.append(datetime.fromisoformat(text))
    resumed = (earlier.resumed_at or []) if earlier is not None else []
    return min(starts), [*resumed, now.isoformat(timespec="seconds")]


def _kept_before(study: Study, step: Step, directory: Path, extend: bool = False) -> str | None:
    """How a step of a resumed study run ended before the resume, when it is kept; None when it runs (again): its
    kind says (StepKind.kept_before). `extend`: --extend, which runs again what stopped on its budget."""
    return step_kind(step.kind).kept_before(study, step, directory, extend)


def write_summary(study: Study, directory: Path, facts: RunFacts, record: StudyRecord, exit_code: int,
                  force: bool) -> StudyEnd:
    """The figures read back from what the steps wrote in DIRECTORY, then summary.md, summary.html and study.json
    (`record` with the host, the steps, the figures and the headline added); the run's exit code, INCOMPLETE if a
    figure it should measure was not."""
    why = dict(record.left_out or {})
    found = with_provenance(not_run(study, rows(study, directory, facts.mode, record.held_to_catches), facts.mode, why),
                            Provenance(str(directory), facts.command, known(record.started), known(record.ended),
                                       facts.host.to_json()))
    # A smoke run's figures check the plumbing: set beside the record, they would read as a regression. A run is
    # not compared with itself (its summary written again after it was put on record).
    on_record = recorded(study.name)
    same = on_record is not None and on_record.directory == str(directory)
    against = None if facts.mode == "smoke" or same else compare_with_record(study.name, found, facts.host)
    if against is not None and on_record is not None:
        against += steps_against_record(study, on_record, directory, facts.mode, force)
    doc = summary(study, found, facts, against)
    write_file(directory / SUMMARY, doc, force=force, name=SUMMARY, option="--out")
    reports = [name for s in study.steps for name in (f"{s.name}-report.html", f"{s.name}-against-record.html")
               if (directory / name).is_file()]
    write_file(directory / SUMMARY_HTML, html_summary(study, found, facts, reports), force=force,
               name=SUMMARY_HTML, option="--out")
    if not exit_code and not all(r.answered for r in found):
        exit_code = INCOMPLETE
    # the exit code is kept when the summary is written again (128 + N: stopped by signal N)
    record = record.replace(host=facts.host.to_json(), steps=[StepEnded(n, h) for n, h in facts.steps],
                            figures=found, headline=facts.headline, also_headlines=facts.also,
                            rewritten=facts.rewritten or UNSET, exit_code=exit_code)
    write_file(directory / STUDY_JSON, record_text(record), force=force, name=STUDY_JSON, option="--out")
    return StudyEnd(directory, doc, exit_code, found, facts.headline)


def with_provenance(found: list[Row], run: Provenance) -> list[Row]:
    """Every figure this run measured names it (its folder, command, times and host); a figure kept from another
    run keeps that run's."""
    return [replace(r, run=run) if r.measured_anything and r.run is None and r.host is None else r for r in found]


def steps_against_record(study: Study, on_record: StudyRecord, directory: Path, mode: Mode, force: bool,
                         docs: Path = DOCS_STUDIES) -> list[str]:
    """Each step whose results the record keeps and this run has too, compared cell by cell with the recorded run
    (dbperf compare: the same verdict rules as one run), its HTML report written beside the summary as
    STEP-against-record.html: lines of the summary's section against the run on record. A run of another mode
    (shorter cells, fewer benchmarks) is not compared cell by cell."""
    lines = []
    for step, kept in recorded_results(on_record, docs).items():
        mine = step_results(directory, study.step(step)) if step in {s.name for s in study.steps} else None
        if mine is None:
            continue
        command = f"dbperf compare {shown_path(kept)} {mine}"
        if on_record.run_mode != mode:
            lines.append(f"- step {md(step)}: not compared cell by cell: this is a {md(mode)} run, the record a "
                         f"{md(on_record.run_mode)} one (other cells, other benchmarks); `{command}`")
            continue
        report = f"{step}-against-record.html"
        try:
            if (kept / META).read_bytes() == (mine / META).read_bytes():  # written again after it went on record
                lines.append(f"- step {md(step)}: the results kept on record are this run's own")
                continue
            view = compare(kept, mine, None, "html", None)
            write_file(directory / report, formats.render(view, "html"), force=force, name=report, option="--out")
        except (UserError, OSError, ValueError) as e:  # the end of a long run: its summary comes first
            lines.append(f"- step {md(step)}: not compared with the record ({md(str(e))}); `{command}`")
            continue
        if not view.rows:  # a replication step keeps apply records, not cells: its figures are the comparison
            lines.append(f"- step {md(step)}: no cell to compare with the record (its results hold no benchmark "
                         f"cells: the figures above compare it); `{command}`")
            continue
        verdicts = Counter(str(row["verdict"]) for row in view.rows)
        counts = ", ".join(f"{n} {word}" for word, n in verdicts.most_common())
        lines.append(f"- step {md(step)}, this run against the recorded one, cell by cell (each target against "
                     f"itself), {len(view.rows)} cells: {md(counts)}; report {md(report)}; `{command}`")
    return ["", *lines] if lines else []


# How a step's end was said (StepEnd.how) when it did not measure what it should: the exit code of a run whose
# study.json predates its "exit_code" is read from its steps' ends.
UNFINISHED = ("failed", "interrupted")


def summarise(directory: Path, study: Study | None = None) -> StudyEnd:
    """Writes the summary of the study run in DIRECTORY again from its results (summary.md, summary.html,
    study.json), with the figures as the study defines them now: a figure added to the study after the run is read
    back from what its steps wrote, without running them again. The run's facts (host, steps, command) are kept.
    `study`: the study the run is of, when the caller has it (else the one its study.json names)."""
    run = _ended_run(directory)
    study = study or load_study(run.study)
    mode = run.run_mode
    steps = run.step_ends
    if run.left_out is UNSET:  # written before study.json kept it: said in the steps' ends
        run = run.replace(left_out={n: ("--step" if h == "not run (--step)" else mode_flag(mode))
                                    for n, h in steps if h.startswith("not run")})
    command = run.command or _command_said(directory) or run_command(study, mode)
    when = started_when(run.started or "", known(run.resumed_at))
    facts = RunFacts(run.run_host, when, command, mode, headline(study, directory), steps,
                     also=step_headlines(study, directory), rewritten=f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    keep = run.replace(host=UNSET, steps=UNSET, figures=UNSET, headline=UNSET, also_headlines=UNSET,
                       rewritten=UNSET, exit_code=UNSET, command=command)
    exit_code = run.exit_code
    if not isinstance(exit_code, int) or exit_code < 0:
        exit_code = INCOMPLETE if any(h.startswith(UNFINISHED) for _, h in steps) else 0
    return write_summary(study, directory, facts, keep, exit_code, force=True)


def _ended_run(directory: Path) -> StudyRecord:
    """The study.json of a study run that ended (its mode said); one line when it is none, or still running."""
    try:
        run = read_record(directory / STUDY_JSON)
    except FileNotFoundError:
        raise UserError(f"{directory}: not a study run ({STUDY_JSON} missing; `dbperf study run` writes it)") \
            from None
    except MetaError:
        raise UserError(f"{directory}/{STUDY_JSON}: not a study run's record (no study name or mode)") from None
    except (OSError, ValueError) as e:
        raise UserError(f"{directory}: unreadable study run ({e})") from None
    if run.mode is UNSET:
        raise UserError(f"{directory}/{STUDY_JSON}: not a study run's record (no study name or mode)")
    if run.running:
        raise UserError(f"{directory}: the study run has not ended (it is running, or was stopped before its "
                        f"summary); `{resume_command(run.study, run.mode, directory)}` goes on with it")
    return run


def _command_said(directory: Path) -> str | None:
    """The command an older summary.md names (its study.json did not keep it)."""
    try:
        said = re.search(r"`(dbperf study run [^`]*)`", (directory / SUMMARY).read_text())
    except OSError:
        return None
    return said.group(1) if said else None


def run_step(study: Study, step: Step, directory: Path, mode: Mode, yes: bool, err: Console,
             budget_s: float | None = None, resume: bool = False, extend_s: float = 0.0) -> StepEnd:
    """Runs one step by its kind (steps/); returns how it ended."""
    return step_kind(step.kind).run(StepRun(study, step, mode, directory, yes, err, budget_s, resume, extend_s))
