"""The load model: time series, histograms and chosen percentiles, per-statement latencies, open-loop rates and
weighted mixes, measured by the real driver on Debian's SQLite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dbperf.catalog.registry import builtin
from dbperf.catalog.schema import sbtest
from dbperf.catalog.workload import compile_statements
from dbperf.errors import UserError
from dbperf.experiment.model import default_sqlite_library
from dbperf.experiment.spec import parse_experiment
from dbperf.host.driver import run_job
from dbperf.records import DriverJob, LoadResult, RunResult, decode
from dbperf.report.histogram import decode as decode_histogram
from tests.conftest import run_cli

ROWS = 2000


def _experiment(tmp_path: Path, run_extra: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(f'[run]\nbenchmarks = ["point-query"]\n{run_extra}\n[[target]]\nname = "a"\n')
    return path


@pytest.mark.unit
@pytest.mark.parametrize(("extra", "fragment"), [
    ("percentiles = [50, 101]", "unknown percentile 101"),
    ("percentiles = [50, \"p99\"]", "unknown percentile 'p99'"),
    ("percentiles = []", "expected a list of percentiles"),
    ("percentiles = [99, 99]", "listed twice"),
    ("rate = 0", "positive number of events per second"),
    ("rate = 100\narrivals = \"bursty\"", "expected one of uniform, poisson"),
    ("arrivals = \"poisson\"", "set rate = N"),
    ("rate = 100\nlatency_limit = \"0s\"", "latency_limit: must be longer than 0"),
    ("interval = \"fast\"", "cannot parse duration"),
])
def test_bad_load_model_keys_are_one_line_errors(tmp_path, extra, fragment):
    with pytest.raises(UserError, match=fragment.replace("[", r"\[").replace("(", r"\(")):
        parse_experiment(_experiment(tmp_path, extra))


@pytest.mark.unit
def test_load_model_keys_reach_the_job(tmp_path):
    e = parse_experiment(_experiment(tmp_path, 'rate = 500\narrivals = "poisson"\nlatency_limit = "50ms"\n'
                                               'interval = "500ms"\npercentiles = [90, 99.99]'))
    assert e.load.job_fields() == {"interval_s": 0.5, "percentiles": (90.0, 99.99), "rate": 500.0,
                                   "arrivals": "poisson", "latency_limit_s": 0.05}
    closed = parse_experiment(_experiment(tmp_path, ""))
    assert closed.load.rate is None and not closed.load.open_loop


@pytest.mark.unit
def test_results_written_before_the_load_model_still_read():
    old = {"qps": 1.0, "eps": 1.0, "queries": 1, "errors": 0,
           "latency": {"p50_us": 1.0, "p99_us": 2.0, "max_us": 3.0},
           "client_usage": {"user_us": 1.0, "system_us": 0.0, "voluntary_cs": 0, "involuntary_cs": 0}}
    r = decode(RunResult, json.dumps(old))
    assert r.intervals == [] and r.histogram is None and r.open_loop is None and r.latency.percentiles == []


@pytest.mark.unit
def test_an_unknown_percentile_on_the_command_line_is_exit_2(tmp_path):
    proc = run_cli("run", str(_experiment(tmp_path, "percentiles = [50, 100.5]")), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "unknown percentile 100.5" in proc.stderr


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> str:
    db = str(tmp_path_factory.mktemp("load-model") / "sbtest.db")
    job = DriverJob(mode="load", engine="sqlite", library=default_sqlite_library(), database=db, tables=1,
                    table_size=ROWS, schema=sbtest("sqlite"))
    outcome = run_job(job, LoadResult, 120)
    assert outcome.ok, outcome.error
    return db


def _run(database: str, workload: dict[str, Any], **fields: Any) -> RunResult:
    job = DriverJob(mode="run", engine="sqlite", library=default_sqlite_library(), database=database, tables=1,
                    table_size=ROWS, settings=[("journal_mode", "WAL"), ("synchronous", "OFF")],
                    workload=workload, **{"time_s": 1.5, "warmup_s": 0.1, **fields})
    outcome = run_job(job, RunResult, 120)
    assert outcome.ok and outcome.result is not None, (outcome.error, outcome.stderr_tail)
    return outcome.result


def _workload(name: str) -> dict[str, Any]:
    return compile_statements(builtin()[name], ROWS, "sqlite")


@pytest.mark.e2e
def test_closed_loop_time_series_histogram_and_percentiles(database):
    r = _run(database, _workload("point-query"), interval_s=0.5, percentiles=(50.0, 99.9), threads=2)
    assert [round(i.t_s, 3) for i in r.intervals] == [0.5, 1.0, 1.5]
    assert sum(i.events for i in r.intervals) == r.events > 0
    assert sum(i.queries for i in r.intervals) == r.queries
    assert all(i.p50_us <= i.p99_us <= i.max_us for i in r.intervals if i.events)
    assert [p.p for p in r.latency.percentiles] == [50.0, 99.9]
    assert r.histogram is not None
    buckets = decode_histogram(r.histogram)
    assert buckets.total == r.events
    # The stored histogram gives the same percentiles the driver reported (values in ns, reported in µs).
    assert buckets.percentile(99.9) / 1000 == pytest.approx(r.latency.at(99.9), rel=1e-6)
    assert r.open_loop is None and r.statements == []  # one statement: its latency is the event's


@pytest.mark.e2e
def test_no_time_series_when_interval_is_zero(database):
    r = _run(database, _workload("point-query"), interval_s=0.0, time_s=0.5)
    assert r.intervals == [] and r.events > 0


@pytest.mark.e2e
def test_multi_statement_events_report_each_statement(database):
    r = _run(database, _workload("read-only-10"), time_s=0.5)
    sqls = [s.sql for s in r.statements]
    assert sqls[0] == "BEGIN" and sqls[-1] == "COMMIT" and len(sqls) == 2 + len(builtin()["read-only-10"].statements)
    point = next(s for s in r.statements if "WHERE id = ?" in s.sql)
    assert point.executions == 10 * r.events  # repeat = 10, counted events only
    assert all(s.mean_us <= s.max_us for s in r.statements)


@pytest.mark.e2e
def test_open_loop_keeps_a_rate_it_can_sustain(database):
    r = _run(database, _workload("point-query"), rate=400.0, arrivals="poisson", time_s=2.0)
    o = r.open_loop
    assert o is not None and o.rate_asked == 400.0 and o.arrivals == "poisson"
    # Poisson arrivals over 2 s at 400/s: about 800 ± 28 events; a loaded machine may fall a little behind.
    assert 600 <= r.events + o.backlog_events + o.skipped <= 1000, (r.events, o)
    assert o.sustained, o
    assert all(i.lag_max_us is not None for i in r.intervals)


@pytest.mark.e2e
def test_a_rate_the_target_cannot_sustain_is_reported_as_such(database):
    r = _run(database, _workload("read-only-10"), rate=5_000_000.0, time_s=1.0, latency_limit_s=0.002)
    o = r.open_loop
    assert o is not None and not o.sustained
    assert o.rate_achieved < o.rate_asked / 10
    assert o.backlog_events + o.skipped > 1_000_000  # the queue it left, not a silently lower rate
    assert o.skipped > 0  # events already past latency_limit when due are skipped and counted


@pytest.mark.e2e
def test_a_weighted_mix_draws_its_kinds_by_weight(database):
    point, update = _workload("point-query"), _workload("update-index")
    mix = {"name": "mix", "transaction": False, "writes": True, "statements": [], "slots": 0,
           "mix": [{**point, "weight": 3.0}, {**update, "weight": 1.0}]}
    r = _run(database, mix, time_s=1.0)
    counts = {m.event: m.events for m in r.mix}
    assert counts["point-query"] + counts["update-index"] == r.events
    assert 2.0 < counts["point-query"] / counts["update-index"] < 4.5, counts


@pytest.mark.e2e
def test_a_weight_of_zero_is_refused_by_the_driver(database):
    mix = {"name": "mix", "transaction": False, "writes": False, "statements": [], "slots": 0,
           "mix": [{**_workload("point-query"), "weight": 0.0}]}
    job = DriverJob(mode="run", engine="sqlite", library=default_sqlite_library(), database=database, tables=1,
                    table_size=ROWS, workload=mix, time_s=0.2)
    outcome = run_job(job, RunResult, 60)
    assert not outcome.ok and "weight must be positive" in (outcome.error or "")


@pytest.mark.e2e
@pytest.mark.parametrize("rate", [1e-300, 0.5])
def test_a_rate_below_one_event_in_the_window_is_refused_by_the_driver(database, rate):
    # A job written by hand or by the fleet reaches the driver without the lab's parse-time check.
    job = DriverJob(mode="run", engine="sqlite", library=default_sqlite_library(), database=database, tables=1,
                    table_size=ROWS, workload=_workload("point-query"), time_s=1.0, rate=rate)
    outcome = run_job(job, RunResult, 60)
    assert not outcome.ok and "less than one event" in (outcome.error or ""), outcome


@pytest.mark.e2e
def test_report_prints_interval_lines_and_the_open_loop_block(tmp_path):
    exp = _experiment(tmp_path, 'time = "2s"\nwarmup = "0.1s"\nrepeats = 1\ntable_size = 1000\nrate = 300\n'
                                'percentiles = [50, 99.9]')
    out = tmp_path / "o"
    proc = run_cli("run", str(exp), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "asked/s" in proc.stdout and "p99.9 µs" in proc.stdout
    proc = run_cli("report", str(out), "--intervals")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("[ ")]
    assert len(lines) == 2 and lines[0].startswith("[ 1s ] thds: 1 tps: ") and "lat (ms,95%): " in lines[0]
    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    cell = doc["cells"][0]
    assert set(cell["latency_percentiles_us"]) == {"p50", "p99.9"}
    assert cell["open_loop"]["rate_asked"] == 300


MIX = """name = "read-mostly"
group = "write"
phase = "write"

[[event]]
name = "read"
weight = {w}
[[event.statement]]
sql = "SELECT c FROM sbtest{{table}} WHERE id = {{id}}"
params.id = {{ gen = "uniform" }}

[[event]]
name = "update"
transaction = true
[[event.statement]]
sql = "UPDATE sbtest{{table}} SET k = k + 1 WHERE id = {{id}}"
params.id = {{ gen = "uniform" }}
"""


@pytest.mark.unit
def test_a_workload_file_of_weighted_events_compiles_to_a_mix(tmp_path):
    from dbperf.catalog.workload import parse_workload_file
    path = tmp_path / "mix.toml"
    path.write_text(MIX.format(w=9))
    [w] = parse_workload_file(path)
    assert [(weight, k.name) for weight, k in w.mix] == [(9.0, "read-mostly.read"), (1.0, "read-mostly.update")]
    assert w.writes and w.queries_per_event == 1  # (9 × 1 + 1 × 3) / 10, rounded
    job = compile_statements(w, 100, "sqlite")
    assert [(m["name"], m["weight"], m["transaction"]) for m in job["mix"]] == [
        ("read-mostly.read", 9.0, False), ("read-mostly.update", 1.0, True)]
    assert job["statements"] == []


@pytest.mark.unit
@pytest.mark.parametrize("weight", ["0", "-1", "\"a\""])
def test_a_weight_that_is_not_positive_is_refused(tmp_path, weight):
    from dbperf.catalog.workload import parse_workload_file
    path = tmp_path / "mix.toml"
    path.write_text(MIX.format(w=weight))
    with pytest.raises(UserError, match=r"event 1 \(read\)\.weight: must be a positive number"):
        parse_workload_file(path)


@pytest.mark.server
def test_both_servers_over_unix_sockets_in_an_open_loop(where):
    from tests.conftest import NEEDS_SERVERS
    from tests.test_servers import experiment
    if NEEDS_SERVERS.args[0]:
        pytest.skip(NEEDS_SERVERS.kwargs["reason"])
    targets = ('[[target]]\nname = "pg"\nengine = "postgres"\nsocket = true\n\n'
               '[[target]]\nname = "maria"\nengine = "mariadb"\nsocket = true\n')
    out = where / "out"
    proc = run_cli("run", str(experiment(where, targets, '"point-query", "read-write-10"',
                                         'rate = 200\narrivals = "poisson"')), "--out", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    dsns = {t["name"]: t["dsn"] for t in meta["targets"]}
    assert "@%2F" in dsns["pg"] and "socket=%2F" in dsns["maria"], dsns
    cells = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    failed = [(c["target"], c["benchmark"], c.get("error")) for c in cells if c["status"] != "ok"]
    assert len(cells) == 4 and not failed, failed
    for c in cells:
        assert c["result"]["open_loop"]["rate_asked"] == 200 and c["result"]["intervals"]
        assert c["result"]["server_usage"] is not None  # the server's processes are measured as over TCP
    rw = [c for c in cells if c["benchmark"] == "read-write-10"]
    assert all(c["result"]["statements"][0]["sql"] == "BEGIN" for c in rw)


@pytest.mark.unit
def test_socket_is_for_lab_servers(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text('[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\nsocket = true\n')
    with pytest.raises(UserError, match="'socket' is for server engines"):
        parse_experiment(path)
    path.write_text('[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\nengine = "postgres"\n'
                    'dsn = "postgresql://u@127.0.0.1/db"\nsocket = true\n')
    with pytest.raises(UserError, match="'socket' is for servers the lab starts"):
        parse_experiment(path)
