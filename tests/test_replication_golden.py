"""Golden files of the replication lab's report (issue 48): `dbperf report DIR` of four results directories the lab
wrote on 2026-11-27 (commit 53065b4; copied from the server tier's runs, logs left out) in every format the report
has: the terminal (120 columns, no colour), Markdown, CSV, JSON and HTML. Each must match its file under
tests/golden/replication-report/ byte for byte, so that results written by that main read unchanged.

- tests/fixtures/replication-mariadb: `dbperf study run replication --smoke`'s MariaDB step (apply, stale reads and
  the cross-engine study; binlog replicas);
- tests/fixtures/replication-postgres: its PostgreSQL step (two modes, the replay lag over time; streaming standbys);
- tests/fixtures/replication-mariadb-replica-killed, -postgres-standby-killed: a replica or standby killed during the
  apply study (a failed record with its server's log tail, then the stale reads).

Normalised, and only this: the HTML page's embedded plotly.js (the installed `plotly` package's payload and version)
is replaced by a placeholder. To regenerate after a deliberate change of the report (say which in the commit):
`DBPERF_REGEN_GOLDEN=1 .venv/bin/pytest -q tests/test_replication_golden.py`, then review `git diff tests/golden`."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from rich.console import Console

from dbperf.report import formats
from dbperf.usecases.report import report_view

pytestmark = pytest.mark.unit

TESTS = Path(__file__).parent
GOLDEN = TESTS / "golden" / "replication-report"
RUNS = ("replication-mariadb", "replication-postgres", "replication-mariadb-replica-killed",
        "replication-postgres-standby-killed")
DOCUMENTS = {"markdown": "md", "csv": "csv", "json": "json", "html": "html"}
REGENERATE = os.environ.get("DBPERF_REGEN_GOLDEN") == "1"


def normalise(fmt: str, out: str) -> str:
    if fmt != "html":
        return out
    out = re.sub(r'(<script id="dbperf-plotly" type="application/octet-stream">)[^<]*(</script>)',
                 r"\1PLOTLY-PAYLOAD\2", out)
    return re.sub(r"Charts drawn by plotly\.js [^,]*, embedded", "Charts drawn by plotly.js VERSION, embedded", out)


def check(name: str, out: str) -> None:
    path = GOLDEN / name
    if REGENERATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(out, encoding="utf-8")
    assert path.is_file(), f"{path}: no golden file (DBPERF_REGEN_GOLDEN=1 writes it)"
    assert out == path.read_text(encoding="utf-8"), f"{path}: the report differs from its golden file"


@pytest.mark.parametrize("run", RUNS)
def test_the_terminal_report_matches_its_golden_file(run):
    buf = io.StringIO()
    console = Console(file=buf, width=120, color_system=None, force_terminal=False, legacy_windows=False)
    formats.draw(report_view(TESTS / "fixtures" / run).view(), console)
    check(f"{run}.txt", buf.getvalue())


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("fmt", DOCUMENTS)
def test_each_document_matches_its_golden_file(run, fmt):
    check(f"{run}.{DOCUMENTS[fmt]}", normalise(fmt, formats.render(report_view(TESTS / "fixtures" / run).view(), fmt)))


def test_the_engines_own_tables_and_notes():
    """What each kind of replication shows of its own, in the golden files too: a guard against regenerating them
    from a report that lost a kind's table."""
    maria = (GOLDEN / "replication-mariadb.md").read_text(encoding="utf-8")
    assert "replica apply rate" in maria and "MASTER_GTID_WAIT" in maria and "cross-engine commits" in maria
    pg = (GOLDEN / "replication-postgres.md").read_text(encoding="utf-8")
    assert "standby apply rate" in pg and "replay lag over time" in pg and "remote_apply" in pg
    assert "1 (n/a)" in pg and "cross-engine" not in pg
    for run in RUNS[2:]:
        assert "FAILED apply" in (GOLDEN / f"{run}.md").read_text(encoding="utf-8")
