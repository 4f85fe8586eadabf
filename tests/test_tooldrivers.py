"""sysbench and pgbench as drivers (tooldrivers/): parsing their real output (saved from sysbench 1.0.20 and
pgbench 15 runs against a lab PostgreSQL, tests/data/), the scripts written from the catalog, the experiment-file
checks, and `dbperf import`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbperf.catalog.registry import builtin
from dbperf.catalog.tool_commands import check_options, pgbench_script
from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.tooldrivers.parse import parse_pgbench, parse_sysbench, percentile, script_queries
from tests.conftest import run_cli

DATA = Path(__file__).parent / "data"
PG = '[[target]]\nname = "pg"\nengine = "postgres"\n'


@pytest.mark.unit
def test_sysbench_report_and_histogram():
    out = parse_sysbench((DATA / "sysbench-read-only-10.txt").read_text())
    text = (DATA / "sysbench-read-only-10.txt").read_text()
    assert f"total number of events:              {out.events}" in text
    assert out.queries == out.events * 16  # BEGIN, 10 point selects, 4 ranges, COMMIT
    assert 0 < out.latency.min_us <= out.latency.p50_us <= out.latency.p95_us <= out.latency.p99_us
    assert out.latency.p99_us <= out.latency.max_us and out.engine_version == "sysbench 1.0.20"
    point = parse_sysbench((DATA / "sysbench-point-query.txt").read_text())
    assert point.queries == point.events and point.errors == 0 and 0.9 < point.duration_s < 1.5


@pytest.mark.unit
def test_pgbench_summary_and_percentile():
    out = parse_pgbench((DATA / "pgbench-point-query.txt").read_text(), queries_per_transaction=1)
    assert out.events == 15360 and out.queries == 15360 and out.errors == 0
    assert out.latency.mean_us == pytest.approx(121.0)
    assert out.duration_s == pytest.approx(15360 / 16572.976122)
    assert out.engine_version == "pgbench 15.18"
    assert percentile([(1.0, 98), (5.0, 1), (9.0, 1)], 99) == 5.0
    with pytest.raises(UserError, match="pgbench output: no 'tps ='"):
        parse_pgbench("number of transactions actually processed: 3\n")


@pytest.mark.unit
def test_pgbench_scripts_from_the_catalog():
    script = pgbench_script(builtin()["read-only-10"], 1000, 1)
    lines = script.splitlines()
    assert lines[0] == "BEGIN;" and lines[-1] == "COMMIT;"
    assert lines.count("\\set id random(1, 1000)") == 10
    assert "\\set r_hi :r_lo + 9" in lines
    assert "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN :r_lo AND :r_hi ORDER BY c;" in lines
    assert script_queries(script) == 16 == builtin()["read-only-10"].queries_per_event
    hot = pgbench_script(builtin()["hot-points"], 1000, 1)
    assert "WHERE id IN (500, 501," in hot
    with pytest.raises(UserError, match="pgbench cannot draw 'digits'"):
        pgbench_script(builtin()["update-nonindex"], 1000, 1)
    with pytest.raises(UserError, match="tables = 1"):
        pgbench_script(builtin()["point-query"], 1000, 2)


@pytest.mark.unit
def test_experiment_checks(write_experiment, tmp_path: Path):
    def refused(body: str, match: str) -> None:
        with pytest.raises(UserError, match=match):
            parse_experiment(write_experiment(body))

    refused('[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "s"\ndriver = "sysbench"\n',
            "drives server engines only")
    refused('[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "m"\nengine = "mariadb"\ndriver = "pgbench"\n',
            "pgbench does not drive mariadb")
    refused(f'[run]\nbenchmarks = ["hot-points"]\n{PG}driver = "sysbench"\n', "no sysbench equivalent")
    refused(f'[run]\nbenchmarks = ["point-query"]\n{PG}driver = "sysbench"\ndriver_options = ["--pgsql-password=x"]\n',
            "is the lab's to set")
    (tmp_path / "mine.lua").write_text("function event() end\n")
    refused(f'[run]\nbenchmarks = ["mine.lua"]\n{PG}', "is a tool script")
    refused(f'[run]\nbenchmarks = ["mine.lua"]\n{PG}driver = "pgbench"\n', "a script for another tool")
    e = parse_experiment(write_experiment(f'[run]\nbenchmarks = ["point-query", "mine.lua"]\n{PG}'
                                          'driver = "sysbench"\ndriver_options = ["--report-interval=1"]\n'))
    assert e.targets[0].tool == "sysbench" and e.targets[0].tool_options == ("--report-interval=1",)
    assert [b.name for b in e.benchmarks] == ["point-query", "mine"]
    assert check_options(["--progress=1", "-r"], "x") == ("--progress=1", "-r")
    with pytest.raises(UserError, match="lab's to set"):
        check_options(["-T5"], "x")


@pytest.mark.e2e
def test_import_saved_output(tmp_path: Path):
    files = [tmp_path / "point.1.txt", tmp_path / "point.2.txt"]
    for f in files:
        f.write_text((DATA / "sysbench-point-query.txt").read_text())
    out = tmp_path / "out"
    proc = run_cli("import", *map(str, files), "--tool", "sysbench", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    [cell] = doc["cells"]
    assert cell["benchmark"] == "point" and len(cell["qps_runs"]) == 2
    assert cell["cpu_us_per_query"] is None  # nobody measured the tool's CPU
    bad = tmp_path / "bad.txt"
    bad.write_text("FATAL: no such script\n")
    proc = run_cli("import", str(bad), "--tool", "sysbench", "--out", str(tmp_path / "out2"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "bad.txt: sysbench output: no 'total number of events'" in proc.stderr
    proc = run_cli("import", str(bad), "--tool", "hammerdb", "--out", str(tmp_path / "out3"))
    assert proc.returncode == 2 and "expected one of sysbench, pgbench" in proc.stderr


@pytest.mark.unit
def test_a_profile_of_a_tool_driven_target_says_whose_queries_it_counted(write_experiment, tmp_path: Path,
                                                                          monkeypatch):
    """`run --profile` counts the server under the lab's driver even when sysbench ran the cells: the method says so."""
    from dbperf.explain import profile as profile_module
    from dbperf.records import Profile
    e = parse_experiment(write_experiment(f'[run]\nbenchmarks = ["point-query"]\n{PG}driver = "sysbench"\n'))
    counted = Profile(mode="simulated", mode_reason="no PMU", tool="cachegrind", target="pg",
                      benchmark="point-query", events=1, queries=1, method="cachegrind of the server", per_query={})
    monkeypatch.setattr(profile_module.Profiler, "_profile", lambda self, target, benchmark, mode: counted)
    profiler = profile_module.Profiler(e, tmp_path)
    method = profiler.profile(e.targets[0], e.benchmarks[0]).method
    assert method.startswith("cachegrind of the server; the queries were sent by dbperf-driver, not by the target's "
                             "sysbench")
