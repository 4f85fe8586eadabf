"""`dbperf study record NAME --again`: a record written again under today's rules from what it keeps, without
running anything: each figure whose steps' results are kept beside the record is read back from them (its value,
interval, verdict under the run's own rule, builds); any other figure keeps its value and gets the word its
evidence gives (no interval but what the step's kind makes exact). Each figure names the run that measured it: the
record's own run where that run measured it (its kept results started inside it, on its CPU), else the run its kept
results' meta.json describes (said so: a results directory keeps no load average). A figure whose run cannot be
established (kept from an earlier run the record does not name) is withdrawn, with why, never shown unsourced."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from msgspec import UNSET

from dbperf.errors import UserError
from dbperf.run_meta import HostMeta, RunMeta
from dbperf.storage.results import read_meta
from dbperf.studies.builds import problems_by_key
from dbperf.studies.definition import Figure
from dbperf.studies.evidence import MIN_COVERAGE, Interval, coverage_said
from dbperf.studies.figures import (
    Provenance,
    Reader,
    Row,
    as_defined,
    claim_check,
    headline,
    row,
    step_headlines,
    unmet_row,
)
from dbperf.studies.measured import NotMeasured
from dbperf.studies.model import Study, load_study
from dbperf.studies.notebook import with_banners
from dbperf.studies.record import hand_text_to_notebook, record_provenance
from dbperf.studies.record_page import notebook_path, record_page
from dbperf.studies.steps import step_kind
from dbperf.studies.study_record import CATCHES, DOCS_STUDIES, StudyRecord, read_record, record_text, recorded_results

CHANGE = re.compile(r"after / before ([0-9.]+)\)")


def rerecord(name: str, docs: Path = DOCS_STUDIES) -> list[Path]:
    """Writes docs/NAME.json and docs/NAME.md again (module docstring); the hand-written text of an older page goes
    to the study's notebook."""
    study = load_study(name)
    try:
        record = read_record(docs / f"{name}.json")
    except (OSError, ValueError) as e:
        raise UserError(f"{docs / name}.json: no readable record to write again ({e})") from None
    kept = recorded_results(record, docs)
    metas = {step: read_meta(path) for step, path in kept.items()}
    own = record_provenance(record)
    reader = Reader(study, docs / name, kept)
    old = {r.what: r for r in record.figures or []}
    catches = True  # today's rules are the latest catches': the record written again opts into them (checks)
    figures = [_figure_again(study, f, old.get(f.what), reader, metas, own, catches) for f in study.figures]
    head = headline(study, docs / name, kept) if study.headline and study.headline["step"] in kept else None
    also = step_headlines(study, docs / name, kept) if all(s in kept for s in study.also_headlines) else None
    again = record.replace(figures=figures, kept_from_record=UNSET, outputs=kept_outputs(study, record, docs),
                           checks=CATCHES,
                           headline=head if head is not None else record.headline,
                           also_headlines=also if also is not None else record.also_headlines,
                           rewritten=f"{datetime.now().astimezone():%Y-%m-%d %H:%M %Z}")
    hand_text_to_notebook(name, docs)
    notebook = notebook_path(docs, name)
    if notebook.is_file():  # sections on builds found unfit since get their banner
        problems = problems_by_key(t.build for m in metas.values() for t in m.targets)
        notebook.write_text(with_banners(notebook.read_text(encoding="utf-8"), problems))
    (docs / f"{name}.json").write_text(record_text(again))
    (docs / f"{name}.md").write_text(record_page(study, again, notebook_path(docs, name).is_file()))
    return [docs / f"{name}.md", docs / f"{name}.json"]


def kept_outputs(study: Study, record: StudyRecord, docs: Path) -> dict[str, str]:
    """The steps' JSON kept beside the record, by step: as the record says, or, for a record written before it said
    so, what lies beside it now (from then on a deleted one is told from one never kept)."""
    if record.outputs is not UNSET:
        return dict(record.outputs)
    found = {s.name: step_kind(s.kind).own_file(docs / study.name, s.name) for s in study.steps
             if s.name not in (record.results or {})}
    return {step: str(path.relative_to(docs)) for step, path in found.items() if path.is_file()}


def _steps(f: Figure) -> set[str]:
    return {m.step for m in f.all_measures()}


def _figure_again(study: Study, f: Figure, old: Row | None, reader: Reader, metas: dict[str, RunMeta],
                  own: Provenance, catches: bool = False) -> Row:
    """The figure as the record has it, written again under today's rules (the latest catches' too, `catches`,
    where the record opts into them)."""
    steps = _steps(f)
    unmet = _unmet_again(f, reader, metas, own)
    if unmet is not None:
        return unmet
    if all(m.reread(metas.keys()) for m in f.all_measures()):  # read back from the kept results
        again = _from_kept(f, old, reader, {s: m for s, m in metas.items() if s in steps}, own, catches)
        if again is not None:
            return again
        # the kept results do not give it back (a figure added since): the record's value, judged again
    if old is None or not old.measured_anything:
        why = old.measured if old is not None else "not measured: not in the record"
        return Row(f.what, f.section, f.published, why, "–", left_out=bool(old and old.left_out))
    if old.run is None and old.host:
        return Row(f.what, f.section, f.published,
                   f"withdrawn: measured by a run the record does not name ({old.host}; its results were not "
                   "kept): with no run to check it against, its value is not shown", "–")
    if _kept_as_is(old, catches):
        return as_defined(old, f)  # recorded with its evidence: kept as it is
    return _judged_again(study, f, old, own if old.run is None else old.run, catches)


def _kept_as_is(old: Row, catches: bool) -> bool:
    """Whether a kept figure was recorded with its evidence (what it judged, its run, its interval's coverage) that
    today's rules still take: not superseded nor thin where the record opts into the catches."""
    evidenced = old.checked is not None and old.run is not None and (old.coverage is not None or old.low is None)
    return evidenced and not (catches and (old.superseded or _thin(old)))


def _unmet_again(f: Figure, reader: Reader, metas: dict[str, RunMeta], own: Provenance) -> Row | None:
    """The figure's row when the host its kept run's meta.json names does not meet its `requires` (its reason, no
    number), naming that run; None when it does, requires nothing, or the run does not say."""
    try:
        unmet = unmet_row(reader, f, f.measure)
    except NotMeasured:
        return None
    if unmet is None:
        return None
    return replace(unmet, run=_run_of(metas[f.measure.step], own) if f.measure.step in metas else None)


def _thin(old: Row) -> bool:
    """Whether a kept figure's interval covers less than a word needs (the latest catches judge it again)."""
    return old.coverage is not None and old.coverage < MIN_COVERAGE - 1e-9


def _from_kept(f: Figure, old: Row | None, reader: Reader, metas: dict[str, RunMeta],
               own: Provenance, catches: bool = False) -> Row | None:
    """The figure read back from its steps' kept results, naming their run; None when they do not give back a figure
    the record measured."""
    cpus = {(_host(m).cpu_model, _host(m).cpu_id) for m in metas.values()}
    if len(cpus) > 1:
        return Row(f.what, f.section, f.published, "not measured: its parts were measured on two CPUs "
                   f"({'; '.join(f'{c}, {i}' for c, i in sorted(cpus, key=str))})", "–")
    new = row(reader, f, catches=catches)
    if new.measured_anything or old is None or not old.measured_anything:
        run = _run_of(metas[sorted(metas)[0]], own, old.run if old is not None else None)
        return replace(new, run=run if new.measured_anything else None)
    return None


def _host(meta: RunMeta) -> HostMeta:
    return meta.host or HostMeta()


def _run_of(meta: RunMeta, own: Provenance, was: Provenance | None = None) -> Provenance:
    """The record's own run when its kept results started inside it on its CPU, else the run the figure named
    before when they did (`was`: what it knew, its load average and command, is kept), else the run meta.json
    describes."""
    def when(iso: object) -> datetime | None:
        try:
            return datetime.fromisoformat(str(iso))
        except ValueError:
            return None
    start, h = when(meta.started_at), _host(meta)
    for run in (own, was):
        if run is None:
            continue
        begun, ended = when(run.started), when(run.ended)
        same_cpu = (h.cpu_model, h.cpu_id) == (run.host.get("cpu"), run.host.get("cpu_id"))
        if same_cpu and start and begun and ended and begun <= start <= ended:
            return run
    return Provenance.of_results(meta, str(Path(meta.experiment).parent) if meta.experiment else None)


def _evidence_again(study: Study, f: Figure, old: Row) -> tuple[float | None, Interval | None, str | None]:
    """(what the word judges, its interval, why none) of a kept figure: exact where its steps count, else the
    interval recorded with it (its coverage as its description states it, for a record from before the coverage
    was kept apart), else none."""
    checked = old.value
    change = CHANGE.search(old.verdict)
    if f.before is not None:
        checked = float(change.group(1)) if change else None
    exact = [step_kind(study.step(s).kind).exact(study.step(s).settings) for s in _steps(f)]
    if checked is not None and exact and all(exact):
        return checked, Interval(checked, checked, str(exact[0]), exact=True, coverage=1.0), None
    if old.low is not None and old.high is not None and old.checked is not None:
        how = old.interval or ""
        return old.checked, Interval(old.low, old.high, how, coverage=coverage_said(how)), None
    return checked, None, "recorded before the lab kept an interval with the figure; its step's files were not kept"


def _judged_again(study: Study, f: Figure, old: Row, run: Provenance, catches: bool = False) -> Row:
    """A kept figure (its step's files not kept) judged again by the evidence rule from its value as recorded; one
    recorded with its evidence already (its interval, its run) keeps it (the caller's)."""
    checked, interval, why = _evidence_again(study, f, old)
    lab = [p for p in old.verdict.split("; ") if p.split(" ", 1)[0] in ("faster", "slower", "same", "undecided",
                                                                       "unstable", "decided")]
    decided = False if old.superseded else old.decided
    claim = claim_check(f, checked, interval, decided, why, catches) if checked is not None else ""
    if catches and old.superseded:  # no word at all on a superseded figure
        lab, claim = [], ""
    words = [*lab, claim + (f" (after / before {checked:.3f})" if f.before is not None and claim else "")]
    if f.derived:
        words.append(f"derived, not measured: {f.derived}")
    verdict = "; ".join(w for w in words if w) or "shown beside the published one"
    return replace(as_defined(old, f), verdict=verdict, host=None, run=run,
                   checked=checked,
                   low=interval.low if interval else None, high=interval.high if interval else None,
                   interval=interval.how if interval else why, coverage=interval.coverage if interval else None)
