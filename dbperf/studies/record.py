"""A study run put on record in the documentation: docs/studies/<name>.md (the summary, dated, with the host and
where its results are), docs/studies/<name>.json (its figures) and docs/studies/<name>/<step>/ (a copy of each of
its steps' results directories: an experiment step's, a layout --fix's A/B run), so that a later run of the study
compares its figures with the recorded ones, and its steps' runs with the recorded ones (`dbperf compare
docs/studies/<name>/<step> NEW_DIR/<step>`) on any clone, not only on the host that ran it."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

from msgspec import UNSET
from rich.console import Console

from dbperf.errors import UserError
from dbperf.host.cpu_identity import cpu_caveat
from dbperf.output_file import write_file
from dbperf.report.escape import md
from dbperf.stats.compare import load_side, own_contradictions
from dbperf.storage.results import keep_results
from dbperf.studies.figures import Headline, Provenance, Row
from dbperf.studies.model import Step, Study, load_study
from dbperf.studies.record_page import notebook_path, record_page, started_when
from dbperf.studies.steps import step_kind
from dbperf.studies.study_record import (
    DOCS_STUDIES,
    STUDY_JSON,
    KeptFrom,
    StepEnded,
    StudyRecord,
    known,
    read_record,
    record_text,
    recorded,
    recorded_results,
    shown_path,
)
from dbperf.studies.summary import Host
from dbperf.usecases.progress import PROGRESS, say

# Older record pages held prose written by hand below this line: recording the study again moves it to the study's
# notebook (record_page.py), since the page is now generated whole from the record.
BY_HAND = "<!-- written by hand below: kept when the study is recorded again -->"
NOTEBOOK_INTRO = ("Dated analyses written by hand beside [the record](../{name}.md), which is generated from its JSON. "
                  "Each names its date and the run it read; a figure quoted here that the record does not hold is a "
                  "note, not a finding, and a section on a build found invalid later is marked superseded.")


def compare_with_record(name: str, rows: list[Row], host: Host, docs: Path = DOCS_STUDIES) -> list[str] | None:
    """Lines of the summary's "against the run on record" section, or None when the study has no record."""
    record = recorded(name, docs)
    if record is None:
        return None
    before = {f.what: f for f in record.figures or []}
    then = record.run_host
    caveat = cpu_caveat(then.identity, host.identity, "on record", "here")
    kept = recorded_results(record, docs)
    if kept:
        step, path = next(iter(kept.items()))
        where = ", ".join(f"`{md(shown_path(p))}`" for p in kept.values())
        steps = (f"Its steps' results are kept beside the record ({where}): `dbperf compare "
                 f"{md(shown_path(path))} THIS_RUN/{md(step)}` puts a step side by side with this run's, with "
                 "the same verdict rules.")
    else:
        steps = (f"Its results were in `{md(record.directory or '?')}` on the host that ran it (they were not "
                 "kept beside the record then): there, `dbperf compare RECORDED/STEP THIS_RUN/STEP` puts a step side "
                 "by side with this run's.")
    partial = f", partial: {record.partial}" if record.partial else ""
    lines = [f"Recorded {md(record.started or '?')} on {md(then.described)} "
             f"({record.run_mode} run{md(str(partial))}). {steps}" + (f" {md(caveat)}" if caveat else ""),
             "", "| figure | on record | here now | now / on record |", "|---|---|---|---|"]
    for r in rows:
        old = before.get(r.what)
        ratio = f"{r.value / old.value:.3f}" if old and old.value and r.value is not None else "–"
        lines.append(f"| {md(r.what)} | {md(old.measured) if old else '–'} | {md(r.measured)} | {ratio} |")
    return lines


def _read_run(name: str, directory: Path) -> StudyRecord:
    """The study run in `directory` (its study.json, and its summary.md written: it ended); one line when it is none,
    or another study's."""
    try:
        run = read_record(directory / STUDY_JSON)
        if run.running:  # the claim, not a record
            raise UserError(f"{directory}: the study run has not ended (it is running, or was stopped before its "
                            f"summary); `dbperf study run {name} --resume --out {directory}` goes on with it")
        if not (directory / "summary.md").is_file():
            raise FileNotFoundError(2, "missing", str(directory / "summary.md"))
    except FileNotFoundError as e:
        raise UserError(f"{directory}: not a study run ({Path(e.filename).name} missing; `dbperf study run` "
                        "writes it)") from None
    except (OSError, ValueError) as e:  # ValueError: not JSON, or not a study run's (MetaError)
        raise UserError(f"{directory}: unreadable study run ({e})") from None
    if run.study != name:
        raise UserError(f"{directory}: holds a run of study {run.study!r}, not {name!r}")
    return run


def unfinished(run: StudyRecord) -> str | None:
    """How a study run did not measure all it set out to (a step interrupted or failed, a figure not measured), in
    words; None when it ended whole (steps left out on purpose, by --step or a mode's skip, do not count)."""
    steps = [f"step {n} {h.split(' ', 1)[0].rstrip(':;,')}" for n, h in run.step_ends
             if h.startswith(("failed", "interrupted"))]
    figures = [f for f in run.figures or [] if f.value is None and not f.text and not f.left_out
               and f.measured.startswith("not measured")]
    # a run from before study.json kept its exit code: its steps say
    code = run.exit_code if isinstance(run.exit_code, int) else 1 if steps else 0
    if not code and not steps:
        return None
    interrupted = code >= 128 or any(s.endswith("interrupted") for s in steps)
    said = steps + ([f"{len(figures)} figure(s) not measured"] if figures else [])
    return ("an interrupted run" if interrupted else "an incomplete run") + \
        (f" ({', '.join(said)})" if said else f" (exit {code})")


def record_study(name: str, directory: Path, docs: Path = DOCS_STUDIES, force: bool = False, partial: bool = False,
                 err: Console = PROGRESS, contradicted: bool = False) -> list[Path]:
    """Writes the study run in `directory` (its summary.md and study.json) into the docs. A run cut short or
    incomplete goes on record only with `partial`, and the record then says so; a --quick one is said on `err`. A
    run whose decided verdicts the record's kept runs of the same steps contradict goes on record only with
    `contradicted`, and the record then names the cells."""
    run = _read_run(name, directory)
    cut_short = _recordable(name, directory, run, partial)
    if cut_short is not None:
        run = run.replace(partial=cut_short)
    on_record = recorded(name, docs)
    study = load_study(name)
    run, kept = _on_top_of_record(study, run, on_record, directory)
    # The steps' results directories go beside the record; a step left out keeps the record's copy.
    sources = {s.name: found for s in study.steps if s.name not in kept and (found := step_results(directory, s))}
    run = _said_contradictions(run, directory, docs / name, sources if on_record is not None else {}, contradicted)
    record_results = (on_record.results or {}) if kept and on_record is not None else {}
    results = {s.name: f"{name}/{s.name}" if s.name not in kept else record_results.get(s.name)
               for s in study.steps if s.name in sources or s.name in kept}
    run = run.replace(results={step: rel for step, rel in results.items() if rel},
                      outputs=step_outputs(study, directory, docs, kept, on_record))
    _docs_directory(docs)
    hand_text_to_notebook(name, docs)
    page_text = record_page(study, run, notebook_path(docs, name).is_file())
    # The copies are made aside first: a copy that fails (a full disk) leaves the record as it was.
    staged = staged_step_results(study, docs, sources)
    try:
        page = write_file(docs / f"{name}.md", page_text, force, option="record")
        put_step_results(study, docs, staged, kept)
        put_step_outputs(study, directory, docs, kept)
    finally:
        for aside in staged.values():
            shutil.rmtree(aside, ignore_errors=True)
    data = write_file(docs / f"{name}.json", record_text(run), force, option="record")
    if cut_short is not None:
        say(f"dbperf: note: {cut_short} went on record (--partial); the record says so", err)
    if run.run_mode == "quick":
        say("dbperf: note: a --quick run went on record (fewer versions, smaller tables, shorter cells: a check that "
            "the study runs, not the published method); the record says so, and a full run recorded later "
            "replaces it", err)
    return [page, data]


def _said_contradictions(run: StudyRecord, directory: Path, recorded_dir: Path, sources: dict[str, Path],
                         contradicted: bool) -> StudyRecord:
    """The run with the cells its steps decided against the record's kept runs (contradicted_cells) named, when
    `contradicted`; refused in one line when there are any and it is not."""
    clashes = contradicted_cells(recorded_dir, sources)
    if clashes and not contradicted:
        raise UserError(f"{directory}: {len(clashes)} cell(s) decided against the run on record before it "
                        f"({clashes[0]}{'; ...' if len(clashes) > 1 else ''}): neither verdict speaks of the builds "
                        "alone; run the study again, or add --contradicted to put it on record with the cells named")
    return run.replace(contradictions=clashes) if clashes else run


def contradicted_cells(recorded_dir: Path, sources: dict[str, Path]) -> list[str]:
    """Per step with results both in this run (`sources`) and beside the record (`recorded_dir`/<step>): the cells
    each run decided against its own base that the two decided differently (stats/contradiction.py), one line each,
    the step named."""
    out = []
    for step, new in sources.items():
        old = recorded_dir / step
        if not (old / "meta.json").is_file():
            continue
        a, b = load_side(old, "the record"), load_side(new, "this run")
        targets = [t for t in a.run_meta.target_names if t in b.run_meta.target_names]
        out += [f"{step}: {c.line()}" for c in own_contradictions(a, b, targets)]
    return out


def _recordable(name: str, directory: Path, run: StudyRecord, partial: bool) -> str | None:
    """Refuses a smoke run, and one cut short or incomplete unless `partial`; how it was cut short (None: whole)."""
    if run.smoke or run.mode == "smoke":
        raise UserError(f"{directory}: a smoke run (--smoke) checks the study's plumbing, its figures are not "
                        "results: record a full or --quick run")
    cut_short = unfinished(run)
    if cut_short is not None and not partial:
        raise UserError(f"{directory}: {cut_short}: its figures are not the whole study's; go on with it "
                        f"(`dbperf study run {name}{' --quick' if run.run_mode == 'quick' else ''} --resume --out "
                        f"{directory}`), or add --partial to put it on record as it is, said so")
    return cut_short


def _on_top_of_record(study: Study, run: StudyRecord, on_record: StudyRecord | None,
                      directory: Path) -> tuple[StudyRecord, list[str]]:
    """A run narrowed by --step goes on top of the record (kept_from_record): the merged run, and the steps kept from
    the record. A full run replaces a --quick record (a check that the study runs) even when
    narrowed by --step: nothing of a quick run goes into a full record."""
    narrowed = sorted(step for step, why in (run.left_out or {}).items() if why == "--step")
    if not narrowed or on_record is None or (on_record.run_mode == "quick" and run.run_mode == "full"):
        return run, []
    return kept_from_record(study, run, on_record, narrowed, directory), narrowed


def hand_text_to_notebook(name: str, docs: Path) -> None:
    """Prose written by hand below an older record page's summary moves to the study's notebook (appended, dated by
    its own headings), so that the page can be generated whole and nothing written is lost."""
    try:
        before = (docs / f"{name}.md").read_text()
    except OSError:
        return
    if BY_HAND not in before:
        return
    hand = before[before.index(BY_HAND) + len(BY_HAND):].strip("\n")
    if not hand:
        return
    # the notebook is one folder down: its relative links go one further up
    hand = re.sub(r"\]\((?!https?:|#|/)", "](../", hand)
    notebook = notebook_path(docs, name)
    try:
        notebook.parent.mkdir(parents=True, exist_ok=True)
        old = (notebook.read_text() if notebook.is_file()
               else f"# Notebook: {name}\n\n{NOTEBOOK_INTRO.format(name=name)}\n")
        notebook.write_text(old.rstrip("\n") + "\n\n" + hand + "\n")
    except OSError as e:
        raise UserError(f"{notebook}: cannot keep the hand-written text of the old page: {e.strerror or e}") from None


def _docs_directory(docs: Path) -> None:
    """The record's directory (--docs), made if missing; one line when it is a file or cannot be made."""
    if docs.exists() and not docs.is_dir():
        raise UserError(f"--docs {docs}: not a directory (the records go into a directory: docs/studies)")
    try:
        docs.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"--docs {docs}: cannot create the directory: {e.strerror or e}") from None


def staged_step_results(study: Study, docs: Path, sources: dict[str, Path]) -> dict[str, Path]:
    """Each step's results directory (`sources`, by step) copied (storage's keep_results: results.jsonl compressed)
    beside its place in the record, docs/studies/<name>/.<step>.new, by step; any failure removes them all (one
    line)."""
    staged: dict[str, Path] = {}
    try:
        for step, source in sources.items():
            staged[step] = docs / study.name / f".{step}.new"
            keep_results(source, staged[step])
    except UserError:
        for aside in staged.values():
            shutil.rmtree(aside, ignore_errors=True)
        raise
    return staged


def put_step_results(study: Study, docs: Path, staged: dict[str, Path], kept: list[str]) -> None:
    """The staged copies in their places (docs/studies/<name>/<step>); a step whose figures are kept from the record
    keeps the record's copy, and any other step with none in this run loses the older one, not this record's."""
    for step in study.steps:
        dest = docs / study.name / step.name
        if step.name in kept:
            continue
        try:
            if dest.is_dir():
                shutil.rmtree(dest)
            if step.name in staged:
                staged[step.name].rename(dest)
        except OSError as e:
            raise UserError(f"{dest}: cannot put the step's results on record: {e.strerror or e}") from None


def step_outputs(study: Study, directory: Path, docs: Path, kept: list[str], on_record: StudyRecord | None
                 ) -> dict[str, str]:
    """Where put_step_outputs keeps each step's JSON beside the record (relative to `docs`), by step: this run's,
    and for a step kept from the record the record's."""
    before = (on_record.outputs or {}) if on_record is not None else {}
    said = {}
    for step in study.steps:
        kind = step_kind(step.kind)
        if step.name in kept:
            if step.name in before:
                said[step.name] = before[step.name]
        elif kind.results(directory, step.name) is None and kind.own_file(directory, step.name).is_file():
            said[step.name] = str(kind.own_file(docs / study.name, step.name).relative_to(docs))
    return said


def put_step_outputs(study: Study, directory: Path, docs: Path, kept: list[str]) -> None:
    """The JSON of each step of this run that has no results directory (a diff, a bisect's path, a probe's timings)
    beside the record, where its kind reads it (docs/studies/<name>/...), so that `dbperf study check` reads its
    figures back from it; a step kept from the record keeps the record's copy, any other loses an older one."""
    for step in study.steps:
        kind = step_kind(step.kind)
        if step.name in kept or kind.results(directory, step.name) is not None:
            continue
        source, dest = kind.own_file(directory, step.name), kind.own_file(docs / study.name, step.name)
        try:
            if source.is_file():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, dest)
            elif dest.is_file():
                dest.unlink()
        except OSError as e:
            raise UserError(f"{dest}: cannot put the step's output on record: {e.strerror or e}") from None


def step_results(directory: Path, step: Step) -> Path | None:
    """A step's results directory in a study run, when it has one: an experiment step's DIR/<step>/, a layout
    --fix's A/B run (DIR/<step>-ab-*/results, beside the step's JSON; the newest when a rerun left several)."""
    return step_kind(step.kind).results(directory, step.name)


def kept_from_record(study: Study, run: StudyRecord, on_record: StudyRecord, narrowed: list[str],
                     directory: Path) -> StudyRecord:
    """A run narrowed by --step, put on record on top of the record: the figures, steps and headline of the steps
    it left out are the record's, each keeping the run that measured it, so that a study too long for one sitting can
    be put on record step by step without losing what is on record (its page is generated from the merged record:
    record_page.py); the run's own directory is left as it was."""
    mode = run.run_mode
    if on_record.run_mode != mode:
        raise UserError(f"{directory}: a {mode} run narrowed by --step ({', '.join(narrowed)} left out) cannot be "
                        f"put on top of a {on_record.run_mode} record; run the whole study, or the same mode")
    source = f"{on_record.run_host.short}; run of {started_when(known(on_record.started))}"
    ran_on_record = {n for n, ended in on_record.step_ends if not ended.startswith("not run")}
    figures = _figures_kept(study, run, on_record, narrowed, ran_on_record)
    steps = _steps_kept(run, on_record, narrowed, source, ran_on_record)
    headline = run.headline
    if study.headline and study.headline["step"] in narrowed:
        headline = on_record.headline
    headline = headline if isinstance(headline, Headline) else None
    also = _also_merged(study, run, on_record, narrowed)
    # held to the latest catches only if both are: the figures kept from the record were judged under its rules
    return run.replace(figures=figures, steps=[StepEnded(n, h) for n, h in steps], headline=headline,
                         also_headlines=also, checks=run.checks if on_record.held_to_catches else UNSET,
                         kept_from_record=KeptFrom(narrowed, known(on_record.started), known(on_record.ended),
                                                   known(on_record.directory), known(on_record.command),
                                                   known(on_record.host)))


def _figures_kept(study: Study, run: StudyRecord, on_record: StudyRecord, narrowed: list[str],
                  ran_on_record: set[str]) -> list[Row]:
    """The run's figures, the record's where the run left their step out (its number, or why the run that ran the
    step did not measure it: a target added to the study since). A step neither run ran stays this run's "not run",
    with no run to its name."""
    steps_of = {f.what: {m.step for m in f.measures(run.run_mode) if m is not None}
                for f in study.figures}
    old_figures = {f.what: f for f in on_record.figures or []}
    figures = []
    for row in run.figures or []:
        old = old_figures.get(row.what)
        # A figure the record's own run measured names that run; one the record had kept from an earlier run keeps
        # its own (its provenance, or the host said when it was kept).
        kept_row = (old if old is None or old.run is not None or old.host or not old.measured_anything
                    else replace(old, run=record_provenance(on_record)))
        its_steps = steps_of.get(row.what, set())
        if kept_row and its_steps & set(narrowed) and not row.measured_anything and \
                (kept_row.measured_anything or its_steps <= ran_on_record):
            row = kept_row
        figures.append(row)
    return figures


def record_provenance(record: StudyRecord) -> Provenance:
    """The run a record holds (its own figures' provenance)."""
    return Provenance(known(record.directory), known(record.command), known(record.started), known(record.ended),
                      dict(record.host or {}))


def _steps_kept(run: StudyRecord, on_record: StudyRecord, narrowed: list[str], source: str,
                ran_on_record: set[str]) -> list[tuple[str, str]]:
    """How each step ended: the record's (said so) for a step the run left out and the record ran."""
    old_steps = dict(on_record.step_ends)
    steps = []
    for name, ended in run.step_ends:
        if name in narrowed and name in ran_on_record:
            was = old_steps[name]
            ended = was if was.startswith("kept from the run on record") else \
                f"kept from the run on record ({source}): {was}"
        steps.append((name, ended))
    return steps


def _also_merged(study: Study, run: StudyRecord, on_record: StudyRecord, narrowed: list[str]) -> dict[str, Headline]:
    """The [headline] also lines of a run narrowed by --step on top of the record: a step this run left out keeps
    the record's line."""
    lines = {**(run.also_headlines or {})}
    lines.update({s: h for s, h in (on_record.also_headlines or {}).items() if s in narrowed})
    return {s: lines[s] for s in study.also_headlines if s in lines}
