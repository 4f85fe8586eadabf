"""A study run put on record in the documentation: docs/studies/<name>.md (the summary, dated, with the host and
where its results are) and docs/studies/<name>.json (its figures), so that a later run of the study compares its
figures with the recorded ones, and its experiment steps with `dbperf compare RECORDED_DIR NEW_DIR`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dbperf
from dbperf.errors import UserError
from dbperf.output_file import write_file
from dbperf.report.escape import md
from dbperf.studies.figures import Row

DOCS_STUDIES = Path(dbperf.__file__).resolve().parents[1] / "docs" / "studies"


def recorded(name: str, docs: Path = DOCS_STUDIES) -> dict[str, Any] | None:
    path = docs / f"{name}.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None  # a damaged record is not a reason to lose this run's summary


def compare_with_record(name: str, rows: list[Row], docs: Path = DOCS_STUDIES) -> list[str] | None:
    """Lines of the summary's "against the run on record" section, or None when the study has no record."""
    record = recorded(name, docs)
    if record is None:
        return None
    before = {f["what"]: f for f in record.get("figures", [])}
    host = record.get("host", {})
    lines = [f"Recorded {md(record.get('started', '?'))} on {md(host.get('cpu', '?'))}, {md(host.get('cores', '?'))} "
             f"cores ({'quick' if record.get('quick') else 'full'} run; results were in "
             f"`{md(record.get('directory', '?'))}`). Experiment steps: `dbperf compare "
             f"{md(record.get('directory', 'RECORDED'))}/STEP THIS_RUN/STEP` puts them side by side with the same "
             "verdict rules.", "", "| figure | on record | here now | now / on record |", "|---|---|---|---|"]
    for r in rows:
        old = before.get(r.what)
        ratio = (f"{r.value / old['value']:.3f}" if old and old.get("value") and r.value is not None else "–")
        lines.append(f"| {md(r.what)} | {md(old['measured']) if old else '–'} | {md(r.measured)} | {ratio} |")
    return lines


def record_study(name: str, directory: Path, docs: Path = DOCS_STUDIES, force: bool = False) -> list[Path]:
    """Writes the study run in `directory` (its summary.md and study.json) into the docs."""
    try:
        run = json.loads((directory / "study.json").read_text())
        text = (directory / "summary.md").read_text()
    except FileNotFoundError as e:
        raise UserError(f"{directory}: not a study run ({Path(e.filename).name} missing; `dbperf study run` "
                        "writes it)") from None
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(f"{directory}: unreadable study run ({e})") from None
    if run.get("study") != name:
        raise UserError(f"{directory}: holds a run of study {run.get('study')!r}, not {name!r}")
    if run.get("smoke") or run.get("mode") == "smoke":
        raise UserError(f"{directory}: a smoke run (--smoke) checks the study's plumbing, its figures are not "
                        "results: record a full or --quick run")
    host = run.get("host", {})
    load = " / ".join(f"{x:.2f}" for x in host.get("load_start") or [])
    note = (f"!!! note \"On record\"\n    Recorded from `{md(run.get('directory'))}`, run {md(run.get('started'))} "
            f"to {md(run.get('ended'))} on {md(host.get('cpu'))} ({md(host.get('cores'))} cores, load average "
            f"{md(load)} at the start){', quick mode' if run.get('quick') else ''}. A later `dbperf study run "
            f"{md(name)}` compares its figures with these.\n\n")
    body = text.splitlines()
    # The page's title first (a headline line, if any, follows it), so that the docs' navigation names the study.
    heading = next((i for i, line in enumerate(body) if line.startswith("# ")), None)
    if heading is not None:
        title = body.pop(heading)
        body = [title, "", note.rstrip("\n"), "", *body]
    docs.mkdir(parents=True, exist_ok=True)
    page = write_file(docs / f"{name}.md", "\n".join(body).rstrip("\n") + "\n", force, option="record")
    data = write_file(docs / f"{name}.json", json.dumps(run, indent=2) + "\n", force, option="record")
    return [page, data]
