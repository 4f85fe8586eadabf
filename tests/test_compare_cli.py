"""`dbperf compare` at the CLI: a run with no results on either side is refused in one line, in `dbperf report`'s
words, rather than compared as a run where every cell is missing. Synthetic runs only: no engine is run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.refusal import assert_refused
from tests.synthetic import write_run

pytestmark = pytest.mark.unit


def _runs(where: Path) -> tuple[Path, Path]:
    return (write_run(where / "a", ["a", "b"], ["point-query"], 3),
            write_run(where / "b", ["a", "b"], ["point-query"], 3, seed=2))


@pytest.mark.parametrize(("content", "what"), [(None, "the file is missing"), ("", "the file is empty")])
@pytest.mark.parametrize("side", ["a", "b"])
def test_a_run_with_no_results_is_refused_as_report_refuses_it(tmp_path, content, what, side):
    a, b = _runs(tmp_path)
    empty = a if side == "a" else b
    if content is None:
        (empty / "results.jsonl").unlink()
    else:
        (empty / "results.jsonl").write_text(content)
    for fmt in ("table", "json"):
        line = assert_refused(run_cli("compare", str(a), str(b), "--format", fmt), 2,
                              f"{empty / 'results.jsonl'}: no results to compare: {what}; yet meta.json says the run "
                              "is complete")
        reported = assert_refused(run_cli("report", str(empty)), 2, "no results to report")
        assert line.replace("to compare", "to report") == reported  # the same words, from one function


def test_an_interrupted_run_that_measured_nothing_is_refused_too(tmp_path):
    """`dbperf report` shows it with a note (its status explains it); a comparison with it would say nothing."""
    a, _ = _runs(tmp_path)
    b = write_run(tmp_path / "cut", ["a", "b"], ["point-query"], 0, meta_extra={"status": "interrupted"})
    assert_refused(run_cli("compare", str(a), str(b)), 2,
                   f"{b / 'results.jsonl'}: no results to compare: the file is empty; the run's status: interrupted")


def test_two_runs_with_results_are_compared(tmp_path):
    a, b = _runs(tmp_path)
    proc = run_cli("compare", str(a), str(b), "--format", "json")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert json.loads(proc.stdout)["skipped_lines"] == {"a": [], "b": []}


def test_a_cell_decided_one_way_in_each_run_is_marked_contradicted(tmp_path):
    """Each run decides b against its own base a: faster in one, slower in the other. compare says so under its
    summary, in JSON and per row in CSV; a cell both runs decided the same way is not marked."""
    a = write_run(tmp_path / "a", ["a", "b"], ["point-query", "read-only"], 20, noise=0.01,
                  speed={"b": 1.15})
    b = write_run(tmp_path / "b", ["a", "b"], ["point-query", "read-only"], 20, noise=0.01, seed=2,
                  speed={"b": 0.85})
    same = write_run(tmp_path / "c", ["a", "b"], ["point-query", "read-only"], 20, noise=0.01, seed=3,
                     speed={"b": 1.15})
    proc = run_cli("compare", str(a), str(b), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    clashes = json.loads(proc.stdout)["contradictions"]
    assert {(c["target"], c["benchmark"]) for c in clashes} == {("b", "point-query"), ("b", "read-only")}
    assert all(c["why"] == "decided faster in one run and slower in another" for c in clashes)
    assert [c["verdict"] for c in clashes[0]["calls"]] == ["faster", "slower"]
    table = run_cli("compare", str(a), str(b))
    assert "Contradicted:" in table.stdout and "b point-query: decided faster in one run" in table.stdout
    csv = run_cli("compare", str(a), str(b), "--format", "csv")
    assert csv.stdout.count("decided faster in one run and slower in another") == 2
    agreeing = run_cli("compare", str(a), str(same), "--format", "json")
    assert json.loads(agreeing.stdout)["contradictions"] == []
    assert "Contradicted:" not in run_cli("compare", str(a), str(same)).stdout
