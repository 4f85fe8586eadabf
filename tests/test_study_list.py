"""`dbperf study list` and a study run's summary cite a study's public sources (its `sources`: author, title, date),
not the lab's private notes (`brief`, `seeds`: still read, never shown); a bad `sources` is one line."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.study_cli import TINY, study_cli, write_studies

SOURCES_LINE = next(line for line in TINY.splitlines() if line.startswith("sources = "))
SOURCE = 'Daniel Black, "MySQL bug #97777: separate global variables (from hot variables) using linker script (ELF)" ' \
         '(2019-11-26)'


@pytest.mark.unit
def test_study_list_has_a_source_column_and_no_brief(tmp_path):
    bare = TINY.replace('name = "tiny"', 'name = "bare"').replace(SOURCES_LINE + "\n", "")
    studies = write_studies(tmp_path / "studies", tiny=TINY, bare=bare)
    proc = study_cli(studies, "study", "list")
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[1]
    assert "source" in header and "BRIEF" not in proc.stdout
    assert "§6" not in proc.stdout and "002" not in proc.stdout  # the private citations are not shown
    tiny = next(line for line in proc.stdout.splitlines() if line.startswith("tiny"))
    assert SOURCE in tiny
    bare = next(line for line in proc.stdout.splitlines() if line.startswith("bare"))
    assert "│ –" in bare  # no sources yet: said as none


@pytest.mark.unit
def test_the_real_study_list_has_no_brief_column():
    proc = run_cli("study", "list", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "BRIEF" not in proc.stdout and "source" in proc.stdout


@pytest.mark.unit
@pytest.mark.parametrize("sources", ['"Nielsen 2014-01-20"', '["Nielsen", 3]', '[""]'])
def test_sources_that_are_not_a_list_of_citations_are_one_line(tmp_path, sources):
    studies = write_studies(tmp_path / "studies", tiny=TINY.replace(SOURCES_LINE, f"sources = {sources}"))
    proc = study_cli(studies, "study", "list")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "'sources' must be a list of citations" in proc.stderr


@pytest.mark.unit
def test_a_study_runs_summary_cites_its_sources_not_the_private_notes(tmp_path):
    out = tmp_path / "run"
    proc = study_cli(write_studies(tmp_path / "studies"), "study", "run", "tiny", "--out", str(out))
    assert proc.returncode == 1, proc.stderr  # its one step fails at once
    for page in ("summary.md", "summary.html"):
        text = (out / page).read_text()
        assert "BRIEF" not in text and "seed 002" not in text, page
    assert f"Sources: {SOURCE}. a layout check" in (out / "summary.md").read_text().replace("\\", "")
    assert json.loads((out / "study.json").read_text())["study"] == "tiny"
