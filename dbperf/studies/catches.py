"""What `dbperf study check` catches in a record since its third round, each in one line:

1. a headline taken from a superseded build (a build found unfit since: its geomean is no finding);
2. a word ("holds", "consistent", "does not hold", "inconclusive", or the lab's "faster", "slower" ...) on a
   superseded figure;
3. a word on an interval that covers the true value less than MIN_COVERAGE (90%) of the time: a min–max of n runs
   covers their median with 1 - 2·0.5^n (3 runs: 75%), a ratio of two such ranges with the product (56%); the record
   keeps the coverage beside the interval (older ones in its description: evidence.coverage_said);
4. a substitute (a figure measured with a different setup than the published one: the figure's `substitute`) in
   the row of a published figure, or a substitute whose row does not say so;
5. a number in a notebook section not marked superseded that the record does not hold (notebook.py: "it quotes
   only figures the record holds"): a number with a decimal point, a thousands separator or a percent sign, outside
   code, links and comments, and not a date, a time, a version (an engine's, a release's
   own, or of three parts) or a table's rows;
6. a figure resting on a step run from a dirty tree (the lab's own, `-dirty` in its meta.json, or a target's source
   tree with uncommitted changes) without the diff of that tree kept beside the record (StudyRecord.diffs).

A record opts into them with `checks` (StudyRecord.held_to_catches): a study run writes it, and its words follow
them (figures.judged: `not judged` on a thin interval, no word on a superseded figure); a record written before
says nothing and is not held to them (`dbperf study check --catches` holds it to them all the same)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from dbperf.run_meta import RunMeta
from dbperf.studies.evidence import MIN_COVERAGE, WORDS, coverage_said
from dbperf.studies.figures import Headline, Row
from dbperf.studies.model import Figure, Study
from dbperf.studies.notebook import sections
from dbperf.studies.study_record import StudyRecord

LAB_WORDS = ("faster", "slower", "same", "unstable", "undecided", "decided")  # the lab's verdicts, first word


def opted_in(record: StudyRecord) -> bool:
    return record.held_to_catches


def words_said(verdict: str) -> list[str]:
    """The words a row's verdict column says: the claim's (evidence.WORDS) and the lab's verdicts."""
    found = []
    for part in verdict.split("; "):
        claim = next((w for w in sorted(WORDS, key=len, reverse=True)
                      if part == w or part.startswith((w + ":", w + " ("))), None)
        lab = part.split(" ", 1)[0] if part.split(" ", 1)[0] in LAB_WORDS else None
        if claim or lab:
            found.append(claim or str(lab))
    return found


def headline_defects(study: Study, record: StudyRecord) -> list[str]:
    """(1) A headline line taken from a superseded build."""
    lines = {study.headline.get("step", ""): record.headline} if study.headline else {}
    lines.update(record.also_headlines or {})
    return [f"headline of step {step}: taken from a superseded build ({line.superseded}): a geomean of a build found "
            "unfit is no headline" for step, line in lines.items()
            if isinstance(line, Headline) and line.superseded]


def superseded_word(r: Row) -> list[str]:
    """(2) A word on a superseded figure."""
    said = words_said(r.verdict)
    return [f"says {said[0]!r} of a superseded figure ({r.superseded})"] if r.superseded and said else []


def thin_interval_word(r: Row) -> list[str]:
    """(3) A word on an interval below MIN_COVERAGE (or of a coverage not stated)."""
    if r.low is None or r.high is None or r.low == r.high:  # no interval, or an exact count
        return []
    coverage = r.coverage if r.coverage is not None else coverage_said(r.interval or "")
    said = [w for w in words_said(r.verdict) if w in WORDS]
    if said and (coverage is None or coverage < MIN_COVERAGE - 1e-9):
        covers = "a coverage not stated" if coverage is None else f"covers {coverage:.1%}"
        return [f"says {said[0]!r} on an interval that {covers} (a word needs {MIN_COVERAGE:.0%}): "
                f"{r.interval or ''}"[:200]]
    return []


NO_PUBLISHED = ("", "–", "-")


def substitute_defects(figure: Figure | None, r: Row) -> list[str]:
    """(4) A substitute in a published figure's row, or one whose row does not say it is one."""
    if figure is not None and figure.substitute and not r.substitute:
        return [f"is measured with a different setup than the published one ({figure.substitute}) and its row does "
                "not say it is a substitute"]
    if r.substitute and r.published.strip() not in NO_PUBLISHED:
        return [f"a substitute ({r.substitute}) in the row of a published figure ({r.published[:60]!r}): it gets a "
                "row of its own"]
    return []


def row_defects(figure: Figure | None, r: Row) -> list[str]:
    return superseded_word(r) + thin_interval_word(r) + substitute_defects(figure, r)


# A number quoted as a figure: with a decimal point, a thousands separator or a percent sign.
NUMBER = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+(?=%))%?(?!\d)")
NOT_FIGURES = re.compile(r"`[^`]*`|<!--.*?-->|\]\([^)]*\)|\[[^\]]*\d{4}-\d{2}-\d{2}\]|\d{4}-\d{2}-\d{2}"
                         r"|\d{1,2}:\d{2}(?::\d{2})?|\d+(?:\.\d+){2,}|§\s*\d+(?:\.\d+)*"
                         r"|(?i:postgresql|postgres|mysql|mariadb|sqlite|percona|pg)[ @]?\d+(?:\.\d+)*"
                         r"|\d+(?:\.\d+)+'s\b|\d[\d,]* rows\b")


def quoted_numbers(text: str) -> Iterator[tuple[int, str]]:
    """(line number, number as written) of every number quoted as a figure in `text`, outside code, links,
    comments, dates, times and versions."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in NUMBER.finditer(NOT_FIGURES.sub(" ", line)):
            yield n, m.group(0)


def _numbers_in(value: Any) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value)
    elif isinstance(value, str):
        for m in re.finditer(r"\d[\d,]*(?:\.\d+)?", value):
            try:
                yield float(m.group(0).replace(",", ""))
            except ValueError:
                continue
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers_in(v)


def on_record(written: str, held: Iterable[float]) -> bool:
    """Whether a number as written (its decimals, a percent) is one the record holds, rounded as written."""
    percent = written.endswith("%")
    digits = written.rstrip("%").replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return any(f"{y:.{decimals}f}" == digits or (percent and f"{y * 100:.{decimals}f}" == digits) for y in held)


# A section's own list of the numbers it quotes that no record holds (a build's minutes from its log, a profile's
# object count), each said as written and why: `<!-- not on record: 77.5, 1,108 (the build's log) -->`.
NOT_ON_RECORD = re.compile(r"<!--\s*not on record:(.*?)-->", re.S)


def declared(text: str) -> set[str]:
    """The numbers a section declares not on record, as written."""
    return {m.group(0) for c in NOT_ON_RECORD.finditer(text) for m in NUMBER.finditer(c.group(1))}


def notebook_defects(path: Path, text: str, record: StudyRecord) -> list[str]:
    """(5) Every number a notebook section not marked superseded quotes that the record does not hold, unless the
    section declares it not on record (NOT_ON_RECORD): said, so it cannot pass for a figure of the record."""
    held = set(_numbers_in(msgspec.to_builtins(record)))
    head, found = sections(text)
    said, start = [], len(head)
    for s in found:
        if not s.marked and not s.why_superseded({}):
            exempt = declared(s.text)
            said += [f"{path}:{start + n}: {number} is not on record (a section quotes only the record's figures; "
                     "a measurement it does not hold is said in words, or listed in the section's "
                     "`<!-- not on record: ... -->`)"
                     for n, number in quoted_numbers(s.text) if number not in exempt and not on_record(number, held)]
        start += len(s.lines)
    return said


def dirty(meta: RunMeta) -> str | None:
    """Why a run's code is not a commit's: the lab's own tree, or a target's source tree, with uncommitted changes."""
    commit = meta.host.dbperf_commit if meta.host else None
    if commit and commit.endswith("-dirty"):
        return f"dbperf {commit}"
    for t in meta.targets:
        source = t.build.get("source") if isinstance(t.build, dict) else None
        if isinstance(source, dict) and source.get("dirty"):
            return f"target {t.name}'s tree {source.get('repository')} at {str(source.get('revision'))[:12]}"
    return None


def dirty_defects(steps: set[str], metas: dict[str, RunMeta], record: StudyRecord, docs: Path) -> list[str]:
    """(6) A figure resting on a step run from a dirty tree whose diff is not kept beside the record."""
    said = []
    for step in sorted(steps & metas.keys()):
        why = dirty(metas[step])
        kept = (record.diffs or {}).get(step)
        if why and not (kept and (docs / kept).is_file()):
            said.append(f"rests on step {step}, run from a dirty tree ({why}), and its diff is not kept beside the "
                        "record (diffs)")
    return said


def caught(study: Study, record: StudyRecord, metas: dict[str, RunMeta], docs: Path,
           notebook: Path | None = None) -> list[str]:
    """Every catch of this round in a record (its figures, headline lines, notebook), whether or not it opts in
    (`docs`: where the paths it keeps, its diffs, are relative to)."""
    said = headline_defects(study, record)
    for i, r in enumerate(record.figures or []):
        figure = next((f for f in study.figures if f.what == r.what), None)
        steps = {m.step for m in figure.all_measures()} if figure is not None else set()
        found = row_defects(figure, r) + (dirty_defects(steps, metas, record, docs) if r.measured_anything else [])
        said += [f"figure {i + 1} ({r.what}): {d}" for d in found]
    if notebook is not None and notebook.is_file():
        said += notebook_defects(notebook, notebook.read_text(encoding="utf-8"), record)
    return said
