"""A study's record page, docs/studies/NAME.md, generated whole from its docs/studies/NAME.json: nothing on it is
written by hand, so that `dbperf study check` can render it again and find every difference. Analyses written by
hand live in the study's notebook (docs/studies/notebooks/NAME.md), which the page links; the notebook restates no
figure the record does not hold."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from dbperf.report.escape import md
from dbperf.studies.figures import Headline, Row
from dbperf.studies.model import Study
from dbperf.studies.study_record import StudyRecord, known
from dbperf.studies.summary import RunFacts, summary

NOTEBOOKS = "notebooks"


def notebook_path(docs: Path, name: str) -> Path:
    return docs / NOTEBOOKS / f"{name}.md"


def started_when(started: object, resumed: object = None) -> str:
    """A run's start (study.json's ISO time) as its summary says it, and when it was resumed (or extended): the
    figures of a resumed run come from more than one sitting."""
    def when(iso: object) -> str:
        try:
            return f"{datetime.fromisoformat(str(iso)):%Y-%m-%d %H:%M} UTC"
        except ValueError:
            return str(iso)

    again = resumed if isinstance(resumed, list) else []
    return when(started) + (f" (resumed {', '.join(when(r) for r in again)})" if again else "")


def hosts_note(rows: list[Row]) -> str | None:
    """When the record's figures were measured on more than one host (CPU and generation) or run, say so: each
    figure names its own run, and no figure divides values of two."""
    hosts = {(str(r.run.host.get("cpu")), str(r.run.host.get("cpu_id") or "generation not recorded"))
             for r in rows if r.run is not None}
    runs = {r.run.started for r in rows if r.run is not None}
    if len(runs) <= 1:
        return None
    said = f"The figures come from {len(runs)} runs"
    if len(hosts) > 1:
        said += (f" on {len(hosts)} CPUs ({'; '.join(f'{c}, {i}' for c, i in sorted(hosts))}): compare shapes "
                 "across them, not figures")
    return said + ". The host column names the run that measured each figure; no figure divides values of two runs."


def kept_note(record: StudyRecord, rows: list[Row]) -> str | None:
    kept = known(record.kept_from_record)
    unknown = [r.what for r in rows if r.measured_anything and r.run is None]
    said = []
    if kept is not None:
        said.append(f"The figures of step(s) {', '.join(kept.steps)}, which the last run left out (--step), were kept "
                    "from the record before it.")
    if unknown:
        said.append(f"{len(unknown)} figure(s) name no run that can be checked (kept before the lab recorded each "
                    "figure's run): the host column says what was known.")
    note = hosts_note(rows)
    return " ".join(said + ([note] if note else [])) or None


def _contradicted(record: StudyRecord) -> str:
    """The cells the record's run decided against the run on record before it (put on record with --contradicted):
    neither verdict speaks of the builds alone."""
    found = known(record.contradictions) or []
    if not found:
        return ""
    return (f" **Contradicted** (put on record with --contradicted): {len(found)} cell(s) this run decided one way "
            "and the record's run before it the other: " + "; ".join(md(line) for line in found) + ".")


def record_page(study: Study, record: StudyRecord, has_notebook: bool) -> str:
    """The record page of `record` (a study.json put on record): a note on the record, then the study's summary as
    the JSON holds it (headline lines, figures with their words, intervals and runs, steps, how the host differs)."""
    rows = list(record.figures or [])
    headline = record.headline if isinstance(record.headline, Headline) else None
    facts = RunFacts(record.run_host, started_when(known(record.started), known(record.resumed_at)),
                     str(record.command or "?"), record.run_mode, headline, record.step_ends,
                     also=dict(record.also_headlines or {}), kept=kept_note(record, rows))
    body = summary(study, rows, facts).splitlines()
    host = record.host or {}
    load = " / ".join(f"{x:.2f}" for x in host.get("load_start") or []) or "not recorded"
    where = f" Its steps' results are kept in `docs/studies/{md(study.name)}/`." if record.results else ""
    notebook = (f" Analyses written by hand: [the notebook]({NOTEBOOKS}/{md(study.name)}.md) (dated; it restates "
                "no figure this page does not hold)." if has_notebook else "")
    note = (f"!!! note \"On record\"\n    Generated from `docs/studies/{md(study.name)}.json` (`dbperf study check "
            f"{md(study.name)}` verifies it). The last run: `{md(known(record.directory))}`, "
            f"{md(known(record.started))} to {md(known(record.ended))} on {md(host.get('cpu'))} "
            f"({md(host.get('cores'))} cores, load average {md(load)} at the start)"
            f"{', quick mode' if record.run_mode == 'quick' else ''}.{where}{notebook}"
            + (f" **A partial run** (put on record with --partial): {md(record.partial)}." if record.partial else "")
            + _contradicted(record))
    heading = next((i for i, line in enumerate(body) if line.startswith("# ")), None)
    if heading is not None:
        title = body.pop(heading)
        body = [title, "", note, "", *body]
    return "\n".join(body).rstrip("\n") + "\n"
