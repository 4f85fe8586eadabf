"""Steady-state warm-ups on the real system SQLite through the real driver: a cell reports how long its warm-up
took and whether it settled, the lab's noise and resource samples wait for the driver's window, and a cell that
cannot settle is flagged. Bounds are generous: the host may be loaded."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.e2e

RUN = """
[run]
benchmarks = ["point-query"]
table_size = 2000
time = "0.5s"
warmup = "0.2s"
repeats = 1
threads = {threads}
steady = {steady}

[[target]]
name = "sys"
"""


def run(write_experiment, tmp_path, threads: str, steady: str) -> tuple[list[dict], dict, str]:
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(RUN.format(threads=threads, steady=steady))), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    return lines, doc, run_cli("report", str(out), "--format", "markdown").stdout


def test_a_cell_reports_its_warmup_and_whether_it_settled(write_experiment, tmp_path):
    lines, doc, _ = run(write_experiment, tmp_path, "[1]",
                        '{ tolerance = 0.5, window = 2, interval = "0.25s", max_warmup = "4s" }')
    assert doc["meta"]["steady"]["tolerance"] == 0.5
    (line,) = lines
    assert line["status"] == "ok"
    result, steady = line["result"], line["result"]["steady"]
    # At least two samples of 0.25 s; at most max_warmup plus thread 0's last warm-up event (a few µs here).
    assert 0.5 <= result["warmup_s"] <= 4.0 + 5.0
    assert len(steady["samples_eps"]) >= 2 and all(s >= 0 for s in steady["samples_eps"])
    assert isinstance(steady["settled"], bool)
    if steady["settled"]:
        assert steady["spread"] <= 0.5
    else:
        assert result["warmup_s"] >= 4.0
    # The measured window is `time` long, after the warm-up; the noise window follows the driver's, not launch +
    # warmup (which would add the steady part of the warm-up to it).
    assert result["duration_s"] == 0.5 and result["events"] > 0
    assert 0 < line["noise"]["window_s"] < 0.5 + 5.0
    assert line.get("resources") is None or "steady-state warm-up" in line["resources"]["method"]  # absent when None
    (cell,) = doc["cells"]
    assert cell["warmup_s_median"] == result["warmup_s"]
    assert cell["unsettled_runs"] == (0 if steady["settled"] else 1)


def test_a_cell_that_cannot_settle_ends_its_warmup_at_max_warmup_and_is_flagged(write_experiment, tmp_path):
    # (max - min) / mean within 1e-6 of ~100k events per sample cannot happen in a closed loop.
    lines, doc, text = run(write_experiment, tmp_path, "[2]",
                           '{ tolerance = 0.000001, window = 2, interval = "0.25s", max_warmup = "1s" }')
    (line,) = lines
    assert line["status"] == "ok" and line["threads"] == 2
    result = line["result"]
    assert result["steady"]["settled"] is False and result["steady"]["spread"] > 0.000001
    assert 1.0 <= result["warmup_s"] <= 1.0 + 5.0
    assert len(result["steady"]["samples_eps"]) >= 4
    assert "1 of 1 repeats never settled (w): sys point-query t=2 (1 of 1)" in text
    assert next(x for x in text.splitlines() if x.startswith("| point-query")).endswith("w |")
    (cell,) = doc["cells"]
    assert cell["unsettled_runs"] == 1 and cell["steady"][0]["settled"] is False
