"""`dbperf report` of a run with nothing to report (issue 45): results.jsonl missing, empty, blank or every line of it
unusable. A run that says it is complete is damaged: one error line, exit 2. A run whose status explains it (still
running, interrupted, the lab died) is reported as it is, said in one note. Synthetic runs only: no engine is run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.synthetic import write_run

pytestmark = pytest.mark.unit


def _empty_run(where: Path, status: str = "complete") -> Path:
    """A run's directory whose results.jsonl the writer created and nothing was written to."""
    return write_run(where / "run", ["a", "b"], ["point-query"], 0, meta_extra={"status": status})


def _error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dbperf: error: "), proc.stderr
    return lines[0]


@pytest.mark.parametrize(("content", "what"), [
    (None, "the file is missing"),
    ("", "the file is empty"),
    ("\n  \n\n", "the file is empty"),
    ("{not json\n[1, 2]\n", "none of its 2 line(s) can be used (line 1: not JSON, line 2: not a JSON object)"),
])
def test_a_complete_run_with_no_results_is_one_error_line(tmp_path, content, what):
    run = _empty_run(tmp_path)
    if content is None:
        (run / "results.jsonl").unlink()
    else:
        (run / "results.jsonl").write_text(content)
    expected = (f"dbperf: error: {run / 'results.jsonl'}: no results to report: {what}; yet meta.json says the "
                "run is complete (its results were lost, moved or emptied)")
    for how in (["--format", "table"], ["--format", "json"], ["--ladder"]):
        assert _error(run_cli("report", str(run), *how)) == expected


@pytest.mark.parametrize(("status", "why"), [
    ("running", "the run goes on and has measured nothing yet"),
    ("interrupted", "the run's status: interrupted"),
    ("failed", "the run's status: failed"),
])
def test_a_run_that_measured_nothing_yet_is_reported_with_a_note(tmp_path, status, why):
    run = _empty_run(tmp_path, status)
    note = f"dbperf: note: {run / 'results.jsonl'}: no results to report: the file is empty; {why}"
    proc = run_cli("report", str(run))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [note]
    proc = run_cli("report", str(run), "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["status"] == status
    assert proc.stderr.strip().splitlines() == [note]


def test_a_run_whose_lab_died_before_its_first_result_says_both(tmp_path):
    run = _empty_run(tmp_path, "running")
    (run / ".lock").write_text("4242\n")  # left by a lab that died: nobody holds it
    proc = run_cli("report", str(run))
    assert proc.returncode == 0 and "run status: died" in proc.stdout, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"dbperf: note: {run}: the lab died while running (killed?)",
        f"dbperf: note: {run / 'results.jsonl'}: no results to report: the file is empty; the lab died before it "
        "wrote a result"]


def test_a_run_with_one_result_is_reported_without_a_word(tmp_path):
    run = write_run(tmp_path / "run", ["a", "b"], ["point-query"], 1, meta_extra={"status": "interrupted"})
    proc = run_cli("report", str(run))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
