"""`dbperf study check NAME|DIR`: a study record (docs/studies/NAME.md and .json) or a study run's folder read as a
reviewer would, every defect said in one line:

- the page is what its JSON gives (record_page.py renders it again; the first line that differs is said);
- every word is the one the rule gives (evidence.py, on the figure's value, interval and verdict as kept);
- every figure measured names the run that measured it (folder, times, CPU and generation, vCPUs, load, or why
  the load is not known); where the step's results are kept, their meta.json agrees (the same CPU, a start within
  the run); no figure rests on steps measured on two CPUs;
- no figure rests on a build found unfit (builds.py) without being marked superseded;
- the headline's counts are those of the kept results, under the run's rule;
- no internal vocabulary (vocabulary.py) in the page, the JSON or the notebook;
- in a record that opts into them (its `checks`), the catches of catches.py: a headline of a superseded build, a
  word on a superseded figure or on an interval below 90% coverage, a substitute in a published figure's row, a
  notebook number not on record, a figure from a dirty tree without its kept diff."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from dbperf.errors import UserError
from dbperf.run_meta import HostMeta, RunMeta
from dbperf.storage.results import META, read_meta
from dbperf.studies.builds import build_problems, problems_by_key
from dbperf.studies.catches import caught, opted_in
from dbperf.studies.evidence import NOT_REPRODUCIBLE, WORDS, Interval, coverage_said, word
from dbperf.studies.figures import Headline, NotMeasured, Provenance, Reader, Row, not_a_floor, row, tallied
from dbperf.studies.model import Figure, Study, load_study, study_names
from dbperf.studies.notebook import unmarked
from dbperf.studies.record_page import notebook_path, record_page
from dbperf.studies.sources import load_sources, section_keys
from dbperf.studies.study_record import STUDY_JSON, StudyRecord, read_record, shown_path
from dbperf.studies.vocabulary import internal_words


@dataclass(frozen=True)
class Checked:
    what: str  # "docs/studies/NAME" or the run's folder
    figures: int
    defects: list[str]


def check_records(names: list[str], docs: Path, catches: bool = False) -> list[Checked]:
    return [check_record(name, docs, catches) for name in names]


def all_records(docs: Path) -> list[str]:
    return [n for n in study_names() if (docs / f"{n}.json").is_file()]


def check_record(name: str, docs: Path, catches: bool = False) -> Checked:
    """The record of study `name` in `docs` (docs/studies); `catches`: held to catches.py's whether or not it opts
    into them."""
    study = load_study(name)
    record = _read(docs / f"{name}.json")
    page_path = docs / f"{name}.md"
    defects = []
    try:
        page = page_path.read_text(encoding="utf-8")
    except OSError as e:
        page = ""
        defects.append(f"{page_path}: unreadable ({e.strerror or e})")
    notebook = notebook_path(docs, name)
    if page:
        defects += _page_differs(page_path, page, record_page(study, record, notebook.is_file()))
    kept = {step: docs / rel for step, rel in (record.results or {}).items()}
    defects += check_figures(study, record, kept)
    defects += [f"step {step}: its results kept beside the record ({shown_path(where)}) are missing"
                for step, where in kept.items() if not (where / META).is_file()]
    defects += [f"step {step}: its output kept beside the record ({shown_path(docs / rel)}) is missing"
                for step, rel in (record.outputs or {}).items() if not (docs / rel).is_file()]
    defects += output_defects(study, record, docs / name, kept, record)
    texts = [(page_path, page), (docs / f"{name}.json", (docs / f"{name}.json").read_text(encoding="utf-8"))]
    if notebook.is_file():
        texts.append((notebook, notebook.read_text(encoding="utf-8")))
        problems = problems_by_key(t.build for m in _metas(kept).values() for t in m.targets)
        defects += [f"{notebook}: section {h[3:]!r} rests on a build found unfit and carries no Superseded banner "
                    f"(dbperf study record {name} --again puts it)" for h in unmarked(texts[-1][1], problems)]
    defects += _vocabulary(texts)
    if catches or opted_in(record):
        defects += caught(study, record, _metas(kept), docs, notebook)
    return Checked(f"docs/studies/{name}", len(record.figures or []), defects)


def check_run(directory: Path, catches: bool = False) -> Checked:
    """A study run's folder (its study.json, summary.md and steps' results); `catches` as check_record's."""
    record = _read(directory / STUDY_JSON)
    study = load_study(record.study)
    kept = {s.name: directory / s.name for s in study.steps if (directory / s.name / META).is_file()}
    defects = check_figures(study, record, kept, directory) + output_defects(study, record, directory, kept)
    texts = [(directory / STUDY_JSON, (directory / STUDY_JSON).read_text(encoding="utf-8"))]
    if (directory / "summary.md").is_file():
        texts.append((directory / "summary.md", (directory / "summary.md").read_text(encoding="utf-8")))
    defects += _vocabulary(texts)
    if catches or opted_in(record):
        defects += caught(study, record, _metas(kept), directory)
    return Checked(str(directory), len(record.figures or []), defects)


def _read(path: Path) -> StudyRecord:
    try:
        return read_record(path)
    except FileNotFoundError:
        raise UserError(f"{path}: no such record (`dbperf study record` writes it)") from None
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: unreadable study record ({e})") from None


def _page_differs(path: Path, page: str, expected: str) -> list[str]:
    if page == expected:
        return []
    have, want = page.splitlines(), expected.splitlines()
    n = next((i for i, (a, b) in enumerate(zip(have, want, strict=False)) if a != b), min(len(have), len(want)))
    line = have[n] if n < len(have) else "(the page ends)"
    return [f"{path}:{n + 1}: the page is not what its JSON gives (dbperf study record writes it): {line[:120]!r}"]


def check_figures(study: Study, record: StudyRecord, kept: dict[str, Path], run_dir: Path | None = None) -> list[str]:
    """The words, provenance and builds of every figure, and the headline, against what is kept."""
    metas = _metas(kept)
    defects = []
    for i, r in enumerate(record.figures or []):
        where = f"figure {i + 1} ({r.what})"
        figure = next((f for f in study.figures if f.what == r.what), None)
        if figure is None:
            defects.append(f"{where}: not a figure of study {study.name} (renamed or removed since)")
            continue
        defects += [f"{where}: {d}" for d in _word_defects(figure.expect, bool(figure.derived), r, figure.floor,
                                                           record.held_to_catches)
                    + _status_defects(figure.requires is not None, r)]
        untraced = [k for k in section_keys(r.section) if k in load_sources() and not load_sources()[k].traced]
        if untraced and any(c.isdigit() for c in r.published):
            defects.append(f"{where}: prints a figure as published whose source is not traced ({untraced[0]})")
        if r.measured_anything:
            steps = figure_steps(figure)
            defects += [f"{where}: {d}" for d in _provenance_defects(r, {s: metas[s] for s in steps if s in metas},
                                                                     run_dir)]
    return defects + _headline_defects(study, record, kept)


def output_defects(study: Study, record: StudyRecord, outputs: Path, kept: dict[str, Path] | None = None,
                   expected: StudyRecord | None = None) -> list[str]:
    """Every measured figure read back from what is kept of its steps (the results directories beside the record or
    in a run's folder, `kept`; the steps' JSON and probe outputs in `outputs`), as the record would be written again:
    the record says what they give. `expected`: the record whose `results` and `outputs` say what evidence it keeps
    (None: every step's, as in a run's folder); a figure whose evidence is listed there and no longer gives it (a
    deleted output) is a defect, one whose evidence was never kept (recorded before outputs were kept beside the
    record, or a step's JSON not kept with its results) is not read back."""
    said = []
    reader = Reader(study, outputs, kept)
    for i, r in enumerate(record.figures or []):
        figure = next((f for f in study.figures if f.what == r.what), None)
        if figure is None or not r.measured_anything or r.superseded:
            continue
        again = row(reader, figure, record.run_mode)
        if again.measured_anything and (again.measured != r.measured or again.value != r.value):
            said.append(f"figure {i + 1} ({r.what}): the record says {r.measured!r}, what is kept of its steps "
                        f"gives {again.measured!r}")
        elif not again.measured_anything and (expected is None or _evidence_listed(figure, expected)):
            said.append(f"figure {i + 1} ({r.what}): the record says {r.measured!r}, but its kept evidence is "
                        f"missing or unreadable ({again.measured})")
    return said


def _evidence_listed(figure: Figure, record: StudyRecord) -> bool:
    """Whether the record lists as kept what each of the figure's measures reads: an experiment step's results for
    a cell or a geomean, the step's own output for the rest."""
    return all(m.evidence_kept(record.results or {}, record.outputs or {}) for m in figure.all_measures())


def figure_steps(figure: Figure) -> set[str]:
    """The steps a figure's measures read."""
    return {m.step for m in figure.all_measures()}


def _status_defects(requires: bool, r: Row) -> list[str]:
    """`not reproducible here` only of a figure that declares what it requires, with the measured reason and no
    number."""
    if not r.measured.startswith(NOT_REPRODUCIBLE):
        return []
    said = []
    if not requires:
        said.append(f"says {NOT_REPRODUCIBLE!r} of a figure that requires nothing of the host")
    if not r.measured[len(NOT_REPRODUCIBLE):].lstrip(": ").strip():
        said.append(f"says {NOT_REPRODUCIBLE!r} without the measured reason")
    if r.measured_anything:
        said.append(f"says {NOT_REPRODUCIBLE!r} and keeps a number")
    return said


def _word_of(verdict: str) -> str | None:
    for part in verdict.split("; "):
        for w in sorted(WORDS, key=len, reverse=True):
            if part.startswith(w + ":") or part.startswith(w + " (") or part == w:
                return w
    return None


def _kept_interval(r: Row) -> Interval | None:
    """The interval a row keeps, its coverage as kept (or as its description states it, in an older record)."""
    if r.low is None or r.high is None:
        return None
    return Interval(r.low, r.high, r.interval or "",
                    coverage=r.coverage if r.coverage is not None else coverage_said(r.interval or ""))


def _word_defects(expect: tuple[float | None, float | None] | None, derived: bool, r: Row,
                  floor: bool = False, catches: bool = False) -> list[str]:
    """The word a row says against the one its evidence gives (`catches`: a record held to the latest catches,
    where a superseded figure and an interval covering less than a word needs get none, which catches.py checks)."""
    said = _word_of(r.verdict)
    interval = _kept_interval(r)
    if floor and r.checked is not None and not_a_floor(r.checked, interval):
        return [f"says {said!r} of a ratio to a reference that is not a floor"] if said else []
    if expect is None or derived or r.value is None:
        return [f"says {said!r} of a figure with no claim to check"] if said and r.value is not None else []
    if r.checked is None:
        return ["keeps no value its word judges (recorded before words followed the evidence: record it again)"]
    if interval is None and not r.interval:
        return ["has neither an interval nor why it has none"]
    if catches and (r.superseded or (interval is not None and not interval.enough)):
        return []  # no word is due: one said is the catches' to say (catches.py)
    want = word(expect, r.checked, interval, False if r.superseded else r.decided)
    return [] if said == want else [f"says {said!r} where its evidence gives {want!r}"]


def _when(iso: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(iso))
    except ValueError:
        return None


def _provenance_defects(r: Row, metas: dict[str, RunMeta], run_dir: Path | None) -> list[str]:
    if r.run is None:
        return [f"names no run that measured it ({r.host or 'no host'})"]
    said = _run_defects(r.run, run_dir)
    cpus = {(str(_host(m).cpu_model), str(_host(m).cpu_id)) for m in metas.values()}
    if len(cpus) > 1:
        said.append(f"rests on steps measured on {len(cpus)} CPUs ({'; '.join(', '.join(c) for c in sorted(cpus))})")
    for step, meta in metas.items():
        said += _kept_defects(r, r.run, step, meta)
    return said


def _run_defects(run: Provenance, run_dir: Path | None) -> list[str]:
    """What the run a figure names lacks: its CPU and generation, vCPUs, start, folder, load (or why not)."""
    said = []
    lacking = [k for k in ("cpu", "cpu_id", "cores") if not run.host.get(k)]
    lacking += [k for k in ("started", "directory") if not getattr(run, k)]
    if lacking:
        said.append(f"its run lacks {', '.join(lacking)}")
    if not (run.host.get("load_start") and run.host.get("load_end")) and not run.note:
        said.append("its run's load at start and end is not recorded, nor why")
    # a run established from results kept beside the record (a diff's worst cell) is not this run, and says so
    if run_dir is not None and run.directory != str(run_dir) and run.note is None:
        said.append(f"names the run {run.directory}, not this one")
    return said


def _kept_defects(r: Row, run: Provenance, step: str, meta: RunMeta) -> list[str]:
    """Where a step's results are kept: the same CPU as the run named, a start inside it, its builds fit or the
    figure marked superseded."""
    said = []
    kept, host = _host(meta), run.host
    if kept.cpu_id != host.get("cpu_id") or kept.cpu_model != host.get("cpu"):
        said.append(f"its run's CPU ({host.get('cpu')}, {host.get('cpu_id')}) is not step {step}'s kept results' "
                    f"({kept.cpu_model}, {kept.cpu_id})")
    start, begun, ended = _when(meta.started_at), _when(run.started), _when(run.ended)
    if start is None or begun is None or start < begun or (ended is not None and start > ended):
        said.append(f"step {step}'s kept results started {meta.started_at}, outside its run "
                    f"({run.started} to {run.ended})")
    problems = [p for t in meta.targets if t.build and str(t.build.get("key")) in (r.builds or [])
                for p in build_problems(t.build)]
    if problems and not r.superseded:
        said.append(f"rests on an unfit build and is not marked superseded: {problems[0]}")
    return said


def _host(meta: RunMeta) -> HostMeta:
    return meta.host or HostMeta()


def _metas(kept: dict[str, Path]) -> dict[str, RunMeta]:
    out = {}
    for step, path in kept.items():
        try:
            out[step] = read_meta(path)
        except UserError:
            continue
    return out


def _headline_defects(study: Study, record: StudyRecord, kept: dict[str, Path]) -> list[str]:
    said = []
    lines = {study.headline.get("step", ""): record.headline} if study.headline else {}
    lines.update(record.also_headlines or {})
    for step, kept_line in lines.items():
        if step not in kept or not isinstance(kept_line, Headline):
            continue
        reader = Reader(study, kept[step].parent)
        try:
            again = tallied(reader.matrix(step), study.headline["target"], reader.meta(step).started_at)
        except (NotMeasured, UserError, OSError, ValueError) as e:
            said.append(f"headline of step {step}: its kept results cannot be read ({e})")
            continue
        if (again.decided, again.compared, again.slower, again.by_later_rule) != (
                kept_line.decided, kept_line.compared, kept_line.slower, kept_line.by_later_rule):
            said.append(f"headline of step {step}: says decided {kept_line.decided} of {kept_line.compared}, slower "
                        f"{kept_line.slower}; its kept results give {again.decided} of {again.compared}, slower "
                        f"{again.slower} ({again.by_later_rule} more by a later rule) under the run's rule")
    return said


def _vocabulary(texts: list[tuple[Path, str]]) -> list[str]:
    return [f"{path}:{n}: {found!r}: {why}" for path, text in texts for n, found, why in internal_words(text)]
