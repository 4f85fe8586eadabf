"""Golden files of the run report (issue 48): `dbperf report DIR` of two committed results directories
(tests/fixtures/golden-run: three targets, three groups, verdicts, the simulated tier, failed repeats and a failed
cell, names with markup in them; tests/fixtures/golden-fleet: the same on two hosts of a fleet) in every format the
report has: the terminal's table (at a glance and `--verbose`, drawn 120 columns wide, without colour and with
Rich's truecolor escapes: `.ansi`), Markdown, CSV, JSON and HTML (documents do not change with `--verbose`: checked
too). Each must match its file under tests/golden/run-report/ byte for byte.

Normalised, and only this: the HTML page's embedded plotly.js (its base64 payload and its version, which are the
installed `plotly` package's, not the report's) is replaced by a placeholder before comparing and storing.

To regenerate after a deliberate change of the report (say which in the commit):
`DBPERF_REGEN_GOLDEN=1 .venv/bin/pytest -q tests/test_report_golden.py`, then review `git diff tests/golden`.
The fixtures' provenance is tests/fixtures/make_golden_runs.py."""

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
GOLDEN = TESTS / "golden" / "run-report"
RUNS = ("golden-run", "golden-fleet")
DOCUMENTS = {"markdown": "md", "csv": "csv", "json": "json", "html": "html"}
REGENERATE = os.environ.get("DBPERF_REGEN_GOLDEN") == "1"


def normalise(fmt: str, out: str) -> str:
    if fmt != "html":
        return out
    out = re.sub(r'(<script id="dbperf-plotly" type="application/octet-stream">)[^<]*(</script>)',
                 r"\1PLOTLY-PAYLOAD\2", out)
    return re.sub(r"Charts drawn by plotly\.js [^,]*, embedded", "Charts drawn by plotly.js VERSION, embedded", out)


def drawn(run: str, verbose: bool, colour: bool = False) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=120, color_system="truecolor" if colour else None, force_terminal=colour,
                      legacy_windows=False)
    formats.draw(report_view(TESTS / "fixtures" / run, "run", None, verbose).view(), console)
    return buf.getvalue()


def rendered(run: str, fmt: str, verbose: bool = False) -> str:
    return normalise(fmt, formats.render(report_view(TESTS / "fixtures" / run, "run", None, verbose).view(), fmt))


def check(name: str, out: str) -> None:
    path = GOLDEN / name
    if REGENERATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(out, encoding="utf-8")
    assert path.is_file(), f"{path}: no golden file (DBPERF_REGEN_GOLDEN=1 writes it)"
    expected = path.read_text(encoding="utf-8")
    assert out == expected, f"{path}: the report differs from its golden file (see this test's docstring)"


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("verbose", [False, True], ids=["glance", "verbose"])
def test_the_terminal_report_matches_its_golden_file(run, verbose):
    check(f"{run}.{'verbose.' if verbose else ''}txt", drawn(run, verbose))


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("verbose", [False, True], ids=["glance", "verbose"])
def test_the_terminal_report_in_colour_matches_its_golden_file(run, verbose):
    check(f"{run}.{'verbose.' if verbose else ''}ansi", drawn(run, verbose, colour=True))


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("fmt", DOCUMENTS)
def test_each_document_matches_its_golden_file(run, fmt):
    check(f"{run}.{DOCUMENTS[fmt]}", rendered(run, fmt))


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("fmt", DOCUMENTS)
def test_verbose_changes_no_document(run, fmt):
    check(f"{run}.{DOCUMENTS[fmt]}", rendered(run, fmt, verbose=True))


@pytest.mark.parametrize("run", RUNS)
def test_the_run_view_renders_nothing_of_its_own(run):
    """Issue 48's bar: the terminal, Markdown, CSV and JSON draw the run view's sections, document and rows, and HTML
    its ChartPage: the formats draw everything, the view renders nothing."""
    view = report_view(TESTS / "fixtures" / run, "run").view()
    assert not hasattr(view, "own") and view.sections and view.glance and view.document and view.rows
    assert view.page is not None and any(s.figures for s in view.page().sections)
