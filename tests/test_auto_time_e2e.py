"""One `time = "auto"` run on the system SQLite through the real driver: each group's pilot rounds are not kept, its
rounds run at the length chosen, and meta.json and the printed line say what was chosen and why."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.e2e

AUTO = """
[run]
benchmarks = ["point-query"]
table_size = 2000
time = "auto"
auto_time = { pilot = "0.4s", pilot_rounds = 2, shortest = "0.2s", longest = "0.8s" }
warmup = "0.1s"
repeats = 2
{order}
[[target]]
name = "a"
[[target]]
name = "b"

"""


@pytest.mark.parametrize("order", ["", 'order = "slices"'])
def test_time_auto_chooses_records_and_says(write_experiment, tmp_path, order):
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(AUTO.replace("{order}", order))), "--out", str(out))
    assert proc.returncode == 0, proc.stderr

    meta = json.loads((out / "meta.json").read_text())
    assert meta["time_s"] is None
    auto = meta["auto_time"]
    assert (auto["pilot_rounds"], auto["pilot_s"], auto["shortest_s"], auto["longest_s"]) == (2, 0.4, 0.2, 0.8)
    (chosen,) = auto["lengths"]
    assert (chosen["benchmark"], chosen["threads"]) == ("point-query", 1)
    assert 0.2 <= chosen["time_s"] <= 0.8 and chosen["overhead_s"] >= 0 and chosen["reason"]
    assert chosen["per_process"] is not None and chosen["per_second"] is not None

    line = next(x for x in proc.stderr.splitlines() if x.startswith("dbperf: time = \"auto\": point-query t=1:"))
    assert f"rounds of {chosen['time_s']:g} s" in line and chosen["reason"] in line
    assert "from 2 pilot rounds of 0.4 s, not kept" in line

    # the pilot's cells are not kept: the rounds kept are the two asked for, each measured for the length chosen
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    cells = [x for x in lines if "repeat" in x]
    assert sorted((x["target"], x["repeat"]) for x in cells) == [("a", 1), ("a", 2), ("b", 1), ("b", 2)]
    assert all(x["status"] == "ok" for x in cells)
    assert all(x["result"]["duration_s"] == pytest.approx(chosen["time_s"], abs=0.1) for x in cells)

    report = run_cli("report", str(out))
    assert report.returncode == 0, report.stderr
