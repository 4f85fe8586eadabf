"""A study's figures read back from what its steps wrote, each by its measure (measures/: a probe figure, a cell of
an experiment, a target's geomean, a value in a step's JSON), judged against the published claim (evidence.py). A
figure that was not measured says why; no number is ever made up."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import msgspec

from dbperf.errors import UserError
from dbperf.host.topology import HostShape
from dbperf.run_meta import RunMeta
from dbperf.stats.rqps_matrix import Matrix, build_matrix
from dbperf.storage.results import read_meta, read_results
from dbperf.studies.evidence import (
    NOT_REPRODUCIBLE,
    Interval,
    median_interval,
    not_reproducible,
    ratio_interval,
    said,
    unjudged,
    word,
)
from dbperf.studies.measured import Measured, NotMeasured, Provenance, builds_of, walk
from dbperf.studies.measures.base import Measure
from dbperf.studies.model import Figure, Mode, Study, left_out
from dbperf.studies.steps import step_kind
from dbperf.studies.tally import Headline, tallied

__all__ = ["Headline", "Measured", "NotMeasured", "Provenance", "Reader", "Row", "headline", "row", "rows",
           "step_headlines", "tallied", "walk"]

@dataclass(frozen=True)
class Row:
    what: str
    # As every run writes them; a hand-made study.json may leave them out (read as empty).
    section: str = ""
    published: str = ""
    measured: str = ""  # formatted, or "not measured: WHY"
    verdict: str = ""
    value: float | None = None
    text: str | None = None  # a measured fact that is not a number
    left_out: bool = False  # by design of a --quick or --smoke run (a benchmark or target it does not run)
    host: str | None = None  # measured elsewhere: kept from the run on record (studies/record.py), its host and date
    # The evidence behind the verdict word (evidence.py): the interval of `value` and how it was computed, or why
    # there is none; the builds it rests on and what was found wrong with them since (superseded: no word holds).
    low: float | None = None  # the interval of `checked`
    high: float | None = None
    interval: str | None = None
    coverage: float | None = None  # how often the interval holds the true value (evidence.Interval.coverage)
    checked: float | None = None  # what the word judges: the value, or after / before for a change
    decided: bool | None = None
    run: Provenance | None = None
    builds: list[str] | None = None
    superseded: str | None = None
    # A substitute: measured with a different setup than the published figure (what differs), in a row of its own.
    substitute: str | None = None

    @property
    def measured_anything(self) -> bool:
        return self.value is not None or self.text is not None

    @property
    def answered(self) -> bool:
        """Whether the run answered it: measured, left out by design of its mode, or not reproducible on this host
        (its reason is the answer)."""
        return self.measured_anything or self.left_out or self.verdict == NOT_REPRODUCIBLE

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Row:
        """A figure as study.json holds it (asdict)."""
        row = cls(**{f.name: doc[f.name] for f in fields(cls) if f.name in doc})
        return replace(row, run=Provenance.from_json(doc["run"])) if isinstance(doc.get("run"), dict) else row


def step_dir(directory: Path, step: str) -> Path:
    return directory / step


def json_file(directory: Path, study: Study, step_name: str, file: str | None) -> Path:
    """Where a step's JSON is: named by the figure, else the step kind's own file."""
    if file:
        return directory / file
    return step_kind(study.step(step_name).kind).own_file(directory, step_name)


class Reader:
    """Reads the measures of one study run, loading each file or matrix once."""

    def __init__(self, study: Study, directory: Path, kept: dict[str, Path] | None = None) -> None:
        """`kept`: a step's results directory where it is kept elsewhere (a record's copy, the layout A/B run's
        too), read instead of the folder the step wrote."""
        self.study, self.directory, self.kept = study, directory, kept or {}
        self._json: dict[Path, Any] = {}
        self._matrix: dict[str, Matrix] = {}
        self._meta: dict[str, RunMeta] = {}

    def load_json(self, path: Path) -> Any:
        if path not in self._json:
            try:
                self._json[path] = json.loads(path.read_text())
            except FileNotFoundError:
                raise NotMeasured(f"{path.name} was not written (did its step run?)") from None
            except (OSError, json.JSONDecodeError) as e:
                raise NotMeasured(f"{path.name}: unreadable ({e})") from None
        return self._json[path]

    def worst_cell(self, step: str, among: list[str] | None = None) -> tuple[str, str, str, float, str | None]:
        """(base, target, benchmark, rQPS, verdict) of an experiment step's worst cell against its base, one thread,
        the base's A/A copy left out: the lowest rQPS among the cells decided slower, or the lowest of all when none
        was decided slower (its verdict then says that the rQPS alone picked it). `among`: the step's own targets,
        where its results hold more (results kept from a run of several steps' targets at once)."""
        m = self.matrix(step)
        cells = [c for (t, _, _), c in m.cells.items()
                 if t != m.base and t != f"{m.base}-aa" and c.rqps is not None and c.threads == min(m.threads)
                 and (among is None or t in among)]
        if not cells:
            raise NotMeasured(f"step {step!r} has no compared cell")
        worst = min([c for c in cells if c.verdict == "slower"] or cells, key=lambda c: c.rqps or 0.0)
        return m.base, worst.target, worst.benchmark, worst.rqps or 0.0, worst.verdict

    def matrix(self, step: str, results_from: str | None = None, base: str | None = None) -> Matrix:
        """The rQPS matrix of an experiment step, or of the results directory a step's JSON names at the path
        `results_from` (the layout check's A/B run); with `base`, every cell against that target instead of the
        run's base, from the same rounds (the verdicts as the lab's rules give them on those rounds)."""
        key = f"{step}:{results_from or ''}:{base or ''}"
        if key not in self._matrix:
            where = step_dir(self.directory, step)
            if step in self.kept:
                where = self.kept[step]
            elif results_from:
                named = walk(self.load_json(json_file(self.directory, self.study, step, None)), results_from)
                if not isinstance(named, str):
                    raise NotMeasured(f"{results_from} names no results directory")
                where = Path(named)
            try:
                meta, records, _ = read_results(where)
            except UserError as e:
                raise NotMeasured(f"step {step!r} has no results ({e})") from None
            if base is not None and base not in meta.target_names:
                raise NotMeasured(f"step {step!r} has no target {base!r} to compare with")
            self._matrix[key] = build_matrix(meta if base is None else msgspec.structs.replace(meta, base=base),
                                             records)
            self._meta[key] = meta
        return self._matrix[key]

    def meta(self, step: str, results_from: str | None = None, base: str | None = None) -> RunMeta:
        """The meta.json of the run `matrix` read (the same arguments)."""
        self.matrix(step, results_from, base)
        return self._meta[f"{step}:{results_from or ''}:{base or ''}"]

    def host_shape(self, step: str) -> HostShape:
        """The host the step ran on, as its JSON describes it (vCPUs, cores, PMU, releases not served)."""
        doc = self.load_json(json_file(self.directory, self.study, step, None))
        shape = doc.get("host", {}).get("shape") if isinstance(doc, dict) else None
        if not isinstance(shape, dict):
            raise NotMeasured(f"step {step!r} kept no description of its host to check the figure's requirements")
        try:
            return HostShape.from_json(shape)
        except UserError as e:
            raise NotMeasured(f"step {step!r}: {e}") from None

    def run_vcpus(self, step: str) -> int:
        """The vCPUs of the host the step's run was made on (its meta.json's host)."""
        directory = step_dir(self.directory, step)
        if not (directory / "meta.json").is_file():
            raise NotMeasured(f"step {step!r} kept no meta.json naming its host's vCPUs")
        try:
            host = read_meta(directory).host
        except UserError as e:
            raise NotMeasured(f"step {step!r}: {e}") from None
        cores = host.cores if host is not None else None
        if cores is None or cores < 1:
            raise NotMeasured(f"step {step!r}: its meta.json names no vCPU count")
        return cores

    def step_json(self, step: str, file: str | None = None) -> Any:
        """A step's JSON: the file a figure names, else the step kind's own."""
        return self.load_json(json_file(self.directory, self.study, step, file))

    def exact(self, step: str) -> str | None:
        """Why the values the step's JSON holds are exact (its kind counts them), or None."""
        return step_kind(self.study.step(step).kind).exact(self.study.step(step).settings)

    def measure(self, m: Measure) -> Measured:
        """A figure's measure read from what its step wrote (each kind reads its own: measures/)."""
        return m.read(self)


def claim_check(figure: Figure, value: float, interval: Interval | None, decided: bool | None,
                why_none: str | None, catches: bool = False) -> str:
    """The figure's word against the published claim (evidence.py), with the claim and the interval's basis; "" when
    the figure has no claim to check, or is derived (arithmetic: no measurement to hold). `catches`: under the latest
    catches (catches.py), no word on an interval that covers less than a word needs."""
    if figure.expect is None or figure.derived:
        return ""
    if catches and interval is not None and not interval.enough:
        return unjudged(figure.claim, interval)
    return said(word(figure.expect, value, interval, decided), figure.claim, interval, why_none)


def not_a_floor(checked: float, interval: Interval | None) -> bool:
    """A ratio to a floor below 1: where there is an interval, wholly below 1."""
    return interval.high < 1 if interval is not None else checked < 1


def _combined(measured: Measured, other: Measured, op: str) -> tuple[Interval | None, str | None]:
    """The interval of measured / other: per repeat when both carry samples of the same rounds, else from both
    intervals; None with why when either has none."""
    if measured.samples and other.samples:
        common = sorted(set(measured.samples) & set(other.samples))
        ratios = [measured.samples[r] / other.samples[r] for r in common if other.samples[r]]
        found = median_interval(ratios)
        if isinstance(found, Interval):
            return Interval(found.low, found.high, f"{found.how}, of the per-round {op}",
                            coverage=found.coverage), None
        return None, found
    if measured.interval is not None and other.interval is not None:
        ratio = ratio_interval(measured.interval, other.interval)
        return (ratio, None) if ratio is not None else (None, "the reference's interval reaches 0")
    return None, measured.why_none or other.why_none or "no interval for one of its parts"


def row(reader: Reader, figure: Figure, mode: Mode = "full", catches: bool = False) -> Row:
    """The figure's row; a substitute's (measured with a different setup) in a row of its own, no published figure
    in it (what it stands in for is said beside what differs)."""
    return as_defined(_row(reader, figure, mode, catches), figure)


def unmet_row(reader: Reader, figure: Figure, measure: Measure) -> Row | None:
    """The figure's row when the host its step ran on does not meet its `requires` (the measured reason, no number),
    None when it does or requires nothing; NotMeasured when the step did not say what its host had."""
    unmet = figure.requires.unmet(measure.host_shape(reader)) if figure.requires is not None else None
    return Row(figure.what, figure.section, figure.published, not_reproducible(unmet), NOT_REPRODUCIBLE) \
        if unmet else None


def as_defined(found: Row, figure: Figure) -> Row:
    """The row as the figure's definition presents it: its section, and a substitute's published figure moved out
    of its row into what differs (a row recorded before it was marked one gets the mark too)."""
    if not figure.substitute:
        return replace(found, section=figure.section, published=figure.published)
    return replace(found, section=figure.section, published="–",
                   substitute=f"{figure.substitute} (in place of: {figure.published})")


def _row(reader: Reader, figure: Figure, mode: Mode = "full", catches: bool = False) -> Row:
    measure, per_measure = figure.measures(mode)
    try:
        unmet = unmet_row(reader, figure, measure)
        if unmet is not None:
            return unmet
        measured = reader.measure(measure)
        if measured.value is None:  # a fact, not a number
            text = measured.text or ""
            return Row(figure.what, figure.section, figure.published, text, SHOWN, text=text, run=measured.run)
        value, interval, why_none = measured.value, measured.interval, measured.why_none
        builds, problems = list(measured.builds), list(measured.problems)
        if per_measure is not None:
            per = reader.measure(per_measure)
            if not per.value:
                raise NotMeasured("the reference figure is 0 or not a number")
            value /= per.value
            interval, why_none = _combined(measured, per, "ratio")
            builds += per.builds
            problems += per.problems
        value *= figure.scale
        interval = interval.scaled(figure.scale) if interval is not None else None
        before = None
        if figure.before is not None:  # the value it changed from, read and scaled the same
            was = reader.measure(figure.before)
            if not was.value:
                raise NotMeasured("the value before is 0 or not a number")
            before = was.value * figure.scale
            interval, why_none = _combined(replace(measured, interval=interval), was, "after / before")
    except NotMeasured as why:
        return Row(figure.what, figure.section, figure.published, f"not measured: {why}", "–")
    found = judged(figure, value, before, interval, why_none, measured.verdict if per_measure is None else None,
                   measured.decided if per_measure is None else None, builds, problems, catches)
    return found if measured.run is None else replace(found, run=measured.run)


SHOWN = "shown beside the published one"


def judged(figure: Figure, value: float, before: float | None, interval: Interval | None, why_none: str | None,
           verdict: str | None, decided: bool | None, builds: list[str], problems: list[str],
           catches: bool = False) -> Row:
    """A measured figure's row: its text, its words (the lab's verdict for a compared cell, the claim's word by the
    evidence rule), its interval, the builds it rests on and what supersedes it; under the latest catches
    (`catches`), a superseded figure has no word at all."""
    checked = value / before if before is not None else value
    superseded = "; ".join(dict.fromkeys(problems)) or None
    claim = claim_check(figure, checked, interval, False if superseded else decided, why_none, catches)
    if catches and superseded:
        verdict, claim = None, ""
    if figure.floor and not_a_floor(checked, interval):
        claim = (f"not judged: the reference is not a floor (the measure / the reference = {checked:.3g}, "
                 f"{'interval below 1' if interval else 'below 1'}): it does more work than what it is the floor of")
    words = _words(figure, verdict, claim, checked if before is not None else None)
    text = ("" if before is None else f"{_formatted(figure, before)} → ") + _formatted(figure, value)
    return Row(figure.what, figure.section, figure.published, text, "; ".join(words) or SHOWN, value,
               low=interval.low if interval else None, high=interval.high if interval else None,
               interval=interval.how if interval else why_none, coverage=interval.coverage if interval else None,
               checked=checked, decided=decided,
               builds=list(dict.fromkeys(builds)) or None, superseded=superseded)


def _words(figure: Figure, verdict: str | None, claim: str, change: float | None) -> list[str]:
    """A row's words: the lab's verdict, the claim's word (with the change it judges), and why it is derived."""
    changed = f" (after / before {change:.3f})" if change is not None else ""
    return [w for w in (verdict, claim + changed if claim else "",
                        f"derived, not measured: {figure.derived}" if figure.derived else "") if w]


def _formatted(figure: Figure, value: float) -> str:
    return f"{value:,.{figure.digits}f}" + (figure.unit if figure.unit in ("×", "%") else
                                            f" {figure.unit}" if figure.unit else "")


def rows(study: Study, directory: Path, mode: Mode = "full", catches: bool = False) -> list[Row]:
    reader = Reader(study, directory)
    skipped = left_out(study, mode)
    return [Row(f.what, f.section, f.published, f"not measured: {skipped[i]}", "–", left_out=True) if i in skipped
            else row(reader, f, mode, catches) for i, f in enumerate(study.figures)]


def _tally(study: Study, directory: Path, step: str, kept: dict[str, Path] | None = None) -> Headline:
    target = study.headline["target"]
    reader = Reader(study, directory, kept)
    try:
        m = reader.matrix(step)
    except NotMeasured:
        return Headline(target, None, 0, 0, 0)
    meta = reader.meta(step)
    _, problems = builds_of(meta, [target, m.base])
    return replace(tallied(m, target, meta.started_at), superseded="; ".join(problems) or None)


def headline(study: Study, directory: Path, kept: dict[str, Path] | None = None) -> Headline | None:
    """The geomean rQPS of the headline target over its cells not trained on (held out), with how many of them
    the lab decided (under the run's rule) and how many it called slower."""
    if not study.headline:
        return None
    return _tally(study, directory, study.headline["step"], kept)


def step_headlines(study: Study, directory: Path, kept: dict[str, Path] | None = None) -> dict[str, Headline]:
    """The headline target's line for each of the study's other steps named in [headline] also."""
    return {step: _tally(study, directory, step, kept) for step in study.also_headlines}


