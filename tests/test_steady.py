"""Steady-state warm-ups (`[run] steady`): the option, the driver's result parsed into records, the window pipe,
reports flagging a cell that never settled, and its round run again under `repeats = "auto"`. The rule itself is
tested in Rust on fixed sample sequences (driver/src/steady.rs); the run on real SQLite is in test_steady_e2e.py."""

from __future__ import annotations

import csv
import io
import json
import os
import time

import msgspec
import pytest
from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.host.window_opens import WindowOpens
from dbperf.records import CellRecord, DriverJob, RunResult, decode, encode, results_record
from dbperf.runner.resume import interfered
from dbperf.runner.rounds import GroupState, Measured, RoundPolicy, run_rounds
from dbperf.stats.rqps_matrix import build_matrix
from tests.report_formats import render_table, to_csv, to_json, to_markdown
from tests.synthetic import meta_of

pytestmark = pytest.mark.unit

RUN = """
[run]
benchmarks = ["point-query"]
warmup = "1s"
{steady}

[[target]]
name = "a"
"""


def experiment(write_experiment, steady: str):
    return parse_experiment(write_experiment(RUN.replace("{steady}", steady)))


def test_the_option_defaults_and_settings(write_experiment):
    assert experiment(write_experiment, "").steady is None
    assert experiment(write_experiment, "steady = false").steady is None
    on = experiment(write_experiment, "steady = true").steady
    assert on is not None and (on.tolerance, on.window, on.interval_s, on.max_warmup_s) == (0.05, 3, 1.0, 30.0)
    e = experiment(write_experiment,
                   'steady = { tolerance = 0.1, window = 4, interval = "500ms", max_warmup = "1m" }')
    assert e.steady is not None
    assert e.steady.job() == msgspec.convert(
        {"tolerance": 0.1, "window": 4, "interval_s": 0.5, "max_warmup_s": 60.0}, type(e.steady.job()))
    assert e.steady.least_warmup_s(e.warmup_s) == 2.0  # 4 samples of 0.5 s, above warmup = 1 s


@pytest.mark.parametrize("steady, message", [
    ("steady = 3", "expected true, false or a table"),
    ("steady = { tolerance = 0 }", r"steady\.tolerance: expected a fraction"),
    ("steady = { tolerance = 1.5 }", r"steady\.tolerance"),
    ("steady = { window = 1 }", r"steady\.window: expected an integer from 2"),
    ("steady = { interval = \"10ms\" }", r"steady\.interval: must be at least 50ms"),
    ("steady = { max_warmup = \"2s\" }", r"steady\.max_warmup: 2 s is shorter than the least warm-up \(3 s"),
    ("steady = { max_warmup = \"eventually\" }", r"steady\.max_warmup: cannot parse duration"),
    ("steady = { tolerence = 0.1 }", r"unknown setting 'tolerence'"),
])
def test_bad_settings_are_one_line_naming_the_key(write_experiment, steady, message):
    with pytest.raises(UserError, match=message) as err:
        experiment(write_experiment, steady)
    assert "\n" not in str(err.value) and "exp.toml [run]" in str(err.value)


def test_the_job_carries_the_rule_as_the_driver_reads_it(write_experiment):
    e = experiment(write_experiment, 'steady = { window = 2, max_warmup = "5s" }')
    assert e.steady is not None
    job = DriverJob(mode="run", engine="sqlite", tables=1, table_size=10, steady=e.steady.job(), window_fd=7)
    sent = json.loads(encode(job))
    assert sent["steady"] == {"tolerance": 0.05, "window": 2, "interval_s": 1.0, "max_warmup_s": 5.0}
    assert sent["window_fd"] == 7
    assert "steady" not in json.loads(encode(DriverJob(mode="run", engine="sqlite", tables=1, table_size=10)))


RESULT = {"qps": 1000.0, "eps": 1000.0, "queries": 1000, "errors": 0,
          "latency": {"p50_us": 10.0, "p99_us": 40.0, "max_us": 90.0},
          "client_usage": {"user_us": 1.0, "system_us": 1.0, "voluntary_cs": 0, "involuntary_cs": 0}}


def steady_result(settled: bool, warmup_s: float = 3.0, qps: float = 1000.0) -> dict:
    return {**RESULT, "qps": qps, "eps": qps, "warmup_s": warmup_s,
            "steady": {"settled": settled, "spread": 0.02 if settled else 0.3, "tolerance": 0.05, "window": 3,
                       "interval_s": 1.0, "max_warmup_s": 30.0, "samples_eps": [500.0, 990.0, 1000.0, 1010.0]}}


def test_the_drivers_result_is_parsed_once_into_records():
    r = decode(RunResult, json.dumps(steady_result(False, 30.2)))
    assert r.warmup_s == 30.2 and r.steady is not None and not r.steady.settled and r.unsettled
    assert r.steady.samples_eps[-1] == 1010.0
    settled = decode(RunResult, json.dumps(steady_result(True)))
    assert not settled.unsettled
    old = decode(RunResult, json.dumps(RESULT))  # a driver from before steady state: still reads
    assert old.warmup_s is None and old.steady is None and not old.unsettled
    record = results_record({"target": "a", "benchmark": "b", "threads": 1, "repeat": 1, "status": "ok",
                             "result": steady_result(False)})
    assert isinstance(record, CellRecord) and interfered(record)
    with pytest.raises(Exception, match="settled"):
        decode(RunResult, json.dumps({**RESULT, "steady": {"spread": 0.1}}))


def test_the_window_pipe_gives_the_drivers_instant_or_none():
    opens = WindowOpens()
    heard = []
    opens.on_open(lambda: heard.append(True))
    os.write(opens.driver_fd, f"open {time.monotonic() - 0.5:.9f}\n".encode())
    assert opens.wait(timeout=30) is not None and heard == [True]
    assert opens.at is not None and opens.at <= time.monotonic() - 0.5
    os.close(opens.driver_fd)
    opens.join()
    late = []
    opens.on_open(lambda: late.append(True))  # registered after the fact: runs at once
    assert late == [True]

    never = WindowOpens()
    os.close(never.driver_fd)  # the driver died before its window opened
    assert never.wait(timeout=30) is None
    never.join()


def records(unsettled_new: int) -> list:
    """Two targets, 3 repeats of point-query; `unsettled_new` of new's repeats never settled."""
    lines = []
    for r in range(1, 4):
        for target, qps in (("old", 1000.0), ("new", 1100.0)):
            settled = not (target == "new" and r <= unsettled_new)
            lines.append(results_record({"target": target, "benchmark": "point-query", "threads": 1, "repeat": r,
                                         "status": "ok", "result": steady_result(settled, 3.0 + r, qps + r)}))
    return lines


META = {"base": "old", "aggregate": "median", "threads": [1], "status": "complete",
        "targets": [{"name": "old", "engine": "sqlite"}, {"name": "new", "engine": "sqlite"}],
        "benchmarks": [{"name": "point-query", "group": "point"}],
        "steady": {"rule": "...", "tolerance": 0.05, "window": 3, "interval_s": 1.0, "max_warmup_s": 30.0}}


def test_reports_flag_a_cell_that_never_settled():
    m = build_matrix(meta_of(META), records(unsettled_new=2))
    console = Console(record=True, width=250)
    render_table(m, meta_of(META), console)  # the glance: the mark, said in its one legend line
    glance = console.export_text()
    assert "w warm-up never settled" in glance
    matrix = glance[glance.index("rQPS relative"):]  # the verdict table, last (each target's table before it)
    assert next(line for line in matrix.splitlines() if line.startswith("point-query")).rstrip().endswith(" w")
    console = Console(record=True, width=250)
    render_table(m, meta_of(META), console, verbose=True)  # the full legend: the rule and the cells, by name
    text = console.export_text()
    assert "steady state: warm-up until 3 samples of 1 s agree within 5% ((max - min) / mean), at most 30 s" in text
    assert "warm-ups took 4.0–6.0 s (median 5.0 s); 2 of 6 repeats never settled (w): new point-query t=1 (2 of 3)" \
        in text
    row = next(line for line in text.splitlines() if line.startswith("point-query"))
    cols = [c.strip() for c in row.split("│")]  # benchmark, col-1, col-2 (wall), then the CPU-time verdict's column
    assert cols[2].endswith("w") and row.count("w") == 1  # new's wall-clock column only
    assert "w : in at least one repeat the steady-state warm-up reached max_warmup" in " ".join(text.split())

    md = to_markdown(m, meta_of(META))
    assert "new point-query t=1 (2 of 3)" in md and "w |" in md

    doc = json.loads(to_json(m, meta_of(META)))
    cells = {c["target"]: c for c in doc["cells"]}
    assert cells["new"]["unsettled_runs"] == 2 and cells["old"]["unsettled_runs"] == 0
    assert cells["new"]["warmup_s_median"] == 5.0 and cells["new"]["warmup_s_max"] == 6.0
    assert [s["settled"] for s in cells["new"]["steady"]] == [False, False, True]
    assert "max_warmup" in doc["significance"]
    rows = list(csv.DictReader(io.StringIO(to_csv(m, meta_of(META)))))
    assert {r["target"]: r["unsettled_runs"] for r in rows} == {"old": "0", "new": "2"}


def test_a_run_without_steady_state_says_nothing_of_it():
    lines = [results_record({"target": t, "benchmark": "point-query", "threads": 1, "repeat": r, "status": "ok",
                             "result": {**RESULT, "warmup_s": 2.0}}) for r in (1, 2) for t in ("old", "new")]
    meta = meta_of({k: v for k, v in META.items() if k != "steady"})
    m = build_matrix(meta, lines)
    console = Console(record=True, width=250)
    render_table(m, meta, console)
    assert "steady state:" not in console.export_text()
    cell = next(c for c in json.loads(to_json(m, meta))["cells"] if c["target"] == "new")
    assert cell["unsettled_runs"] is None and cell["steady"] is None and cell["warmup_s_median"] == 2.0


def test_under_auto_an_unsettled_round_is_run_again_like_an_interfered_one():
    """matrix.py passes `interfered or unsettled` to the stopping rule: a round with a cell that never settled
    does not count toward the minimum of clean rounds."""
    unsettled_rounds = {2, 3}

    def measure(round_: int) -> list[Measured]:
        records = [CellRecord(target=t, benchmark="b", threads=1, repeat=round_, status="ok",
                              result=decode(RunResult, json.dumps(steady_result(
                                  not (t == "new" and round_ in unsettled_rounds), qps=1000.0 + round_))))
                   for t in ("old", "new")]
        return [Measured(r.target, round_, r.result.qps if r.result else None, interfered=interfered(r))
                for r in records]

    clock = iter(range(1000))
    state = run_rounds(GroupState("old", ["old", "new"], 0.02), RoundPolicy(5, budget_s=1000.0), measure,
                       deadline=1e9, clock=lambda: float(next(clock)))
    assert state.clean_rounds() >= 5 and state.rounds >= 7


def test_the_intervals_view_starts_with_the_warmup():
    from dbperf.report.steady_view import warmup_lines
    assert warmup_lines(decode(RunResult, json.dumps(steady_result(False, 30.2)))) == [
        "warm-up 30.20 s, never settled (spread 30.0% at max_warmup 30 s); samples of 1 s, events/s: "
        "500 990 1,000 1,010"]
    assert warmup_lines(decode(RunResult, json.dumps(steady_result(True, 4.0))))[0].startswith(
        "warm-up 4.00 s, settled (spread 2.0% <= 5.0%)")
    assert warmup_lines(decode(RunResult, json.dumps(RESULT))) == []
