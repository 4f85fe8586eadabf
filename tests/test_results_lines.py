"""Lines of results.jsonl that cannot be used (issue 45): a line nested deeper than Python recurses, a rate or a
time that is negative, NaN or infinite, skipped with the reason by `report` and by `compare` alike, in the same
words; a meta.json nested as deep is one error line. Synthetic runs only (tests/synthetic.py): no engine is run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.synthetic import write_run

pytestmark = pytest.mark.unit

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 100_000 + "1" + "}" * 100_000


def _run(where: Path, name: str = "run", seed: int = 1) -> Path:
    return write_run(where / name, ["a", "b"], ["point-query", "update-index"], 3, seed=seed)


def _append(directory: Path, *lines: str) -> int:
    """Lines added to results.jsonl; the number of the first."""
    path = directory / "results.jsonl"
    first = len(path.read_text().splitlines()) + 1
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))
    return first


def _note(proc: subprocess.CompletedProcess[str], directory: Path) -> str:
    """The one note that says which lines of `directory`'s results.jsonl were skipped."""
    assert "Traceback" not in proc.stderr, proc.stderr
    notes = [x for x in proc.stderr.splitlines() if x.startswith(f"dbperf: note: {directory / 'results.jsonl'}: ")]
    assert len(notes) == 1, proc.stderr
    return notes[0]


def _good_line(directory: Path) -> dict:
    return json.loads((directory / "results.jsonl").read_text().splitlines()[0])


def test_a_deeply_nested_line_is_skipped_by_report(tmp_path):
    run = _run(tmp_path)
    line = _append(run, DEEP, DEEP_OBJECT)
    for how in (["--format", "table"], ["--format", "json"], ["--format", "csv"], ["--format", "markdown"],
                ["--ladder"], ["--resources"], ["--intervals"]):
        proc = run_cli("report", str(run), *how)
        assert proc.returncode == 0, proc.stderr
        note = _note(proc, run)
        assert f"2 line(s) skipped (line {line}: nested too deeply to be a record, line {line + 1}: nested too " \
               "deeply to be a record)" in note, note


def test_a_deeply_nested_line_is_skipped_by_compare(tmp_path):
    a, b = _run(tmp_path, "a"), _run(tmp_path, "b", seed=2)
    line = _append(b, DEEP)
    for fmt in ("table", "json", "html"):
        proc = run_cli("compare", str(a), str(b), "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        assert f"line {line}: nested too deeply to be a record" in _note(proc, b)
        assert not [x for x in proc.stderr.splitlines() if str(a) in x]  # nothing skipped in A: nothing said


def test_compare_says_the_skipped_lines_of_both_runs_as_report_does(tmp_path):
    a, b = _run(tmp_path, "a"), _run(tmp_path, "b", seed=2)
    _append(a, "{not json", "42")
    _append(b, json.dumps({"target": "a"}), '{"target": "b", "bench')  # the last one torn: no newline after it
    (b / "results.jsonl").write_text((b / "results.jsonl").read_text().removesuffix("\n"))
    compared = run_cli("compare", str(a), str(b))
    assert compared.returncode == 0, compared.stderr
    for run in (a, b):
        reported = run_cli("report", str(run))
        assert _note(compared, run) == _note(reported, run)  # the same words, from one function
    assert "2 line(s) skipped" in _note(compared, a) and "not JSON" in _note(compared, a)
    assert "torn last line" in _note(compared, b)
    doc = json.loads(run_cli("compare", str(a), str(b), "--format", "json").stdout)
    assert [s["line"] for s in doc["skipped_lines"]["a"]] == [13, 14]
    assert [s["line"] for s in doc["skipped_lines"]["b"]] == [13, 14]
    assert doc["skipped_lines"]["b"][1]["reason"].startswith("torn last line")


def test_compare_of_two_clean_runs_says_nothing_skipped(tmp_path):
    a, b = _run(tmp_path, "a"), _run(tmp_path, "b", seed=2)
    proc = run_cli("compare", str(a), str(b), "--format", "json")
    assert proc.returncode == 0 and "skipped" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["skipped_lines"] == {"a": [], "b": []}


def _with(line: dict, path: str, value: str) -> str:
    """`line` as JSON text with the field at `path` (dots) set to `value`, written as it is (NaN, 1e999, -1)."""
    *parents, last = path.split(".")
    marker = "__VALUE__"
    edited = json.loads(json.dumps(line))
    place = edited
    for key in parents:
        place = place[key]
    place[last] = marker
    return json.dumps(edited).replace(f'"{marker}"', value)


BAD_FIGURES = [  # (field, value as written, the reason the line is skipped)
    ("result.qps", "NaN", "Expected a finite number, got nan - at `$.result.qps`"),
    ("result.qps", "Infinity", "Expected a finite number, got inf - at `$.result.qps`"),
    ("result.qps", "-Infinity", "Expected a finite number, got -inf - at `$.result.qps`"),
    ("result.qps", "1e999", "Expected a finite number, got inf - at `$.result.qps`"),
    ("result.qps", "-1", "Expected `float` >= 0.0 - at `$.result.qps`"),
    ("result.qps", "-0.5", "Expected `float` >= 0.0 - at `$.result.qps`"),
    ("result.eps", "-3", "Expected `float` >= 0.0 - at `$.result.eps`"),
    ("result.duration_s", "-1", "Expected `float` >= 0.0 - at `$.result.duration_s`"),
    ("result.queries", "-100", "Expected `int` >= 0 - at `$.result.queries`"),
    ("result.latency.p99_us", "-2.5", "Expected `float` >= 0.0 - at `$.result.latency.p99_us`"),
    ("result.latency.p50_us", "NaN", "Expected a finite number, got nan - at `$.result.latency.p50_us`"),
    ("result.client_usage.user_us", "Infinity",
     "Expected a finite number, got inf - at `$.result.client_usage.user_us`"),
    ("wall_s", "-7", "Expected `float` >= 0.0 - at `$.wall_s`"),
]


def test_a_negative_or_non_finite_figure_is_a_bad_line(tmp_path):
    """Each edited line is skipped with its reason, by report and compare; the figures are the good lines'."""
    run = _run(tmp_path)
    good = _good_line(run)
    first = _append(run, *(_with(good, path, value) for path, value, _ in BAD_FIGURES))
    expected = [{"line": first + i, "reason": reason} for i, (_, _, reason) in enumerate(BAD_FIGURES)]
    proc = run_cli("report", str(run), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["skipped_lines"] == expected
    assert all(len(c["qps_runs"]) == 3 for c in doc["cells"]), doc["cells"]  # three repeats a cell, all good
    note = _note(proc, run)
    assert note.startswith(f"dbperf: note: {run / 'results.jsonl'}: {len(BAD_FIGURES)} line(s) skipped (line "
                           f"{first}: {BAD_FIGURES[0][2]}, line {first + 1}: {BAD_FIGURES[1][2]}, "), note
    compared = run_cli("compare", str(_run(tmp_path, "other", seed=2)), str(run), "--format", "json")
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)["skipped_lines"]["b"] == expected
    assert _note(compared, run) == note


def test_a_zero_rate_is_a_measurement_not_a_bad_line(tmp_path):
    """0 QPS (a cell that completed nothing) is a figure to report, not a damaged line."""
    run = _run(tmp_path)
    _append(run, _with(_good_line(run), "result.qps", "0"))
    proc = run_cli("report", str(run), "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["skipped_lines"] == [], proc.stderr


def test_a_deeply_nested_meta_json_is_one_error_line(tmp_path):
    run = _run(tmp_path)
    other = _run(tmp_path, "other")
    for meta, command in ((DEEP, ["report", str(run)]), (DEEP_OBJECT, ["report", str(run), "--format", "json"]),
                          ('{"targets": ' + DEEP + "}", ["compare", str(other), str(run)])):
        (run / "meta.json").write_text(meta)
        proc = run_cli(*command)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.strip().splitlines() == [
            f"dbperf: error: {run / 'meta.json'}: unreadable: nested too deeply"]


def test_a_line_of_nul_bytes_is_not_json_where_it_is_never_a_torn_last_line(tmp_path):
    """A crash can leave NUL bytes where lines were; a line of them, in the middle or last with its newline, is said
    as not JSON at its place. Only a last line written without its newline is torn."""
    run = _run(tmp_path, "a")
    middle = _append(run, "\0" * 40, json.dumps({"target": "a"}))
    last = _append(run, "\0" * 40)
    doc = json.loads(run_cli("report", str(run), "--format", "json").stdout)
    reasons = {s["line"]: s["reason"] for s in doc["skipped_lines"]}
    assert reasons[middle].startswith("not JSON") and reasons[last].startswith("not JSON")
    assert not any("torn" in r for r in reasons.values())
