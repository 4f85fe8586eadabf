"""`dbperf bisect`'s answer through the format registry (report/bisect_view.py): the default text as it was (the
path, a row per step; the lead; how the search ended, one line) and `--format json`, which is the bisect's path
as bisect.json holds it. The command runs in process over a fake source of simulated work per query (no release is
fetched or counted), the search, the folder, the path file and the view being the real ones."""

from __future__ import annotations

import json

import pytest

from dbperf.cli import bisect as bisect_cli
from dbperf.records import Profile
from dbperf.report import formats
from dbperf.report.bisect_view import bisect_view
from dbperf.storage.bisect_path import BisectPath, BisectResult, Judgement, Step, StepSettings, read_path
from dbperf.usecases import bisect as bisect_usecase
from dbperf.usecases import bisect_candidates, bisect_metrics
from dbperf.usecases.bisect_work import Counted, SimulatedBisect

pytestmark = pytest.mark.unit

PUBLISHED = ["13.23.0", "14.0.0", "14.10.0", "16.4.0", "17.0.0"]
WORK = {"13.23": 1000.0, "14.0": 1001.0, "14.10": 1002.0, "16.4": 1100.0, "17.0": 1100.0}  # +10% from 16.4


def counted(version: str) -> Counted:
    functions = {"ExecScan": {"instructions": WORK[version] - 500.0}, "palloc": {"instructions": 500.0}}
    return Counted(Profile(mode="simulated", mode_reason="test", tool="cachegrind", target="t",
                           benchmark="point-query", events=100, queries=100, method="fake",
                           per_query={"instructions": WORK[version]}, functions=functions), f"/counts/{version}.json")


@pytest.fixture
def fake_releases(monkeypatch):
    """The releases' list and their counts faked; the tools' check skipped (valgrind need not be here)."""
    monkeypatch.setattr(bisect_candidates, "available_versions", lambda engine: PUBLISHED)
    monkeypatch.setattr(bisect_usecase, "require_tools", lambda settings: None)
    monkeypatch.setattr(bisect_metrics, "SimulatedBisect",
                        lambda s, out, yes, err: SimulatedBisect(s, out, yes, err, source=counted, confirm=False))


def run(tmp_path, fmt: str) -> None:
    bisect_cli.bisect(["postgres", "13", "17"], benchmark="point-query", metric_name="simulated",
                      out=tmp_path / fmt, format=fmt)


def test_format_json_prints_the_bisects_path_as_bisect_json_holds_it(tmp_path, capsys, fake_releases):
    run(tmp_path, "json")
    doc = json.loads(capsys.readouterr().out)
    assert doc == json.loads((tmp_path / "json" / "bisect.json").read_text())
    assert doc["dbperf_bisect"] == 1 and doc["outcome"] == "found" and doc["answer"] == "16.4"
    assert doc["settings"]["metric"] == "simulated" and doc["lead"][0]["function"] == "ExecScan"
    assert [s["version"] for s in doc["steps"]] == ["17.0", "14.10", "16.4"]


def test_format_csv_prints_a_line_per_step_and_how_it_ended(tmp_path, capsys, fake_releases):
    import csv
    import io
    run(tmp_path, "csv")
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["version"] for r in rows[:-1]] == ["17.0", "14.10", "16.4"] and rows[0]["verdict"] == "slower"
    assert (rows[-1]["outcome"], rows[-1]["answer"], rows[-1]["exit_code"]) == ("found", "16.4", "0")


def test_the_default_text_is_the_path_the_lead_and_how_it_ended(tmp_path, capsys, fake_releases):
    run(tmp_path, "table")
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "bisect path"
    assert "the step's lead: 14.10 → 16.4, per query" in out and "ExecScan" in out
    assert lines[-1].startswith("first release with more work: postgres 16.4, +10.0% work per query against 13.23")
    assert "3 step(s) over 5 releases (about 3 when every step decides)" in lines[-1]


def test_an_unknown_format_is_refused_before_anything_runs(tmp_path, fake_releases):
    with pytest.raises(Exception, match="--format: expected one of"):
        run(tmp_path, "yaml")
    assert not (tmp_path / "yaml").exists()


def test_the_view_of_a_path_read_back_is_the_view_of_the_path_written(tmp_path):
    settings = StepSettings("postgres", "point-query", 0.05, 5.0, 1.0, 120.0)
    result = BisectResult(["13.23", "14.0", "17.0"], [Step(1, "17.0", 1, Judgement("undecided", 0.97, -0.06, 0.01,
                                                                                    9))],
                          outcome="undecided", first_slower="17.0", last_not_slower="13.23")
    from dbperf.storage.bisect_path import write_path
    write_path(tmp_path, BisectPath(settings, result))
    read = read_path(tmp_path)
    assert read is not None and read.result == result and read.settings == settings
    text = formats.render(bisect_view(read, 2), "markdown")
    assert "[-6.0%, +1.0%]" in text and "stopped: a step stayed undecided after its last try" in text
    assert json.loads(formats.render(bisect_view(read, 2), "json"))["answer"] == (
        "after 13.23, at or before 17.0 (stopped: 17.0 undecided after 1 try)")
