"""The replication lab: the [replication] section's checks and the report (unit), and a real MariaDB primary with a
replica started, replicated, measured and stopped by the lab through the real CLI (server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.records import ApplyRecord, StaleReadsRecord, StaleReadsResult, WaitLatency, encode, results_record
from dbperf.replication.cluster import gtid_seq
from dbperf.report.formats import render
from dbperf.report.replication_report import replication_view
from dbperf.report.replication_view import replication_summary
from tests.conftest import DBPERF, NEEDS_SERVERS, REPO, run_cli
from tests.synthetic import replication_meta

TARGET = '[[target]]\nname = "maria"\nengine = "mariadb"\nconfig = { innodb_buffer_pool_size = "64M" }\n'


def replication_experiment(where: Path, replication: str, run: str = "", target: str = TARGET) -> Path:
    path = where / "exp.toml"
    path.write_text(f'[run]\nbenchmarks = ["update-index"]\ntable_size = 2000\nthreads = [2]\n{run}\n'
                    f"[replication]\n{replication}\n{target}")
    return path


@pytest.mark.unit
def test_section_parses_with_defaults_and_sweeps(tmp_path):
    e = parse_experiment(replication_experiment(tmp_path, 'workers = [0, 4]\nbinlog_commit_wait_count = [0, 12]\n'
                                                          'durability = "binlog-crash-safe"'))
    r = e.replication
    assert r is not None
    assert r.workers == (0, 4) and r.commit_wait_counts == (0, 12) and r.durability == ("binlog-crash-safe",)
    assert r.studies == ("apply", "stale-reads") and r.transactions == 20_000 and r.modes == ("conservative",)
    # workers = 0 is measured once (serial), the others once per mode; each 3 times (the default repeats)
    assert r.apply_measurements(benchmarks=1, thread_counts=1) == 3 * 2 * 2
    assert parse_experiment(replication_experiment(tmp_path, "")).replication.durability == (
        "binlog-crash-safe", "no-binlog-durable", "no-binlog-nondurable", "binlog-non-crash-safe")


@pytest.mark.unit
@pytest.mark.parametrize(("replication", "run", "target", "message"), [
    ("workers = [0, 0]", "", TARGET, "workers: 0 is listed twice"),
    ("workers = [-1]", "", TARGET, "workers: expected an integer from 0"),
    ('modes = ["fast"]', "", TARGET, "modes: unknown 'fast'"),
    ('durability = ["safe"]', "", TARGET, "durability: unknown 'safe'"),
    ('studies = ["apply", "apply"]', "", TARGET, "'apply' is listed twice"),
    ("replicas = 9", "", TARGET, "replicas: expected an integer from 1 to 4"),
    ("bogus = 1", "", TARGET, "unknown key 'bogus'"),
    ('wait_timeout = "soon"', "", TARGET, "wait_timeout"),
    ('studies = ["cross-engine"]', "", '[[target]]\nname = "p"\nengine = "postgres"\n',
     "the cross-engine study is MariaDB-only"),
    ("workers = [0, 2]", "", '[[target]]\nname = "p"\nengine = "postgres"\n', "no parallel-apply setting"),
    ('durability = ["binlog-crash-safe"]', "", '[[target]]\nname = "p"\nengine = "postgres"\n',
     "durability: unknown 'binlog-crash-safe'"),
    ("binlog_commit_wait_count = 4", "", '[[target]]\nname = "p"\nengine = "postgres"\n', "no binlog"),
    ("", "", '[[target]]\nname = "p"\nengine = "postgres"\nconfig = { fsync = "off" }\n', "config.fsync"),
    ("", "", '[[target]]\nname = "s"\nengine = "sqlite"\n', "MariaDB, MySQL or PostgreSQL"),
    ("", "", TARGET + '\n[[target]]\nname = "m2"\nengine = "mariadb"\n', "exactly one [[target]]"),
    ("", "", '[[target]]\nname = "m"\nengine = "mariadb"\nconfig = { sync_binlog = 1 }\n', "config.sync_binlog"),
    ("", "", '[[target]]\nname = "m"\nengine = "mariadb"\ndsn = "mysql://u@10.0.0.1/x"\n', "dsn"),
])
def test_bad_sections_are_one_line(tmp_path, replication, run, target, message):
    with pytest.raises(UserError) as err:
        parse_experiment(replication_experiment(tmp_path, replication, run, target))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.unit
def test_each_repeat_measures_the_wait_and_the_workers_side_by_side(tmp_path):
    """Durability outermost (a change restarts the replicas); within it each repeat takes every commit wait and
    worker count in turn, so the wait and no wait of one repeat are measured minutes apart."""
    from dbperf.replication.apply_study import plan

    e = parse_experiment(replication_experiment(tmp_path, 'workers = [0, 4]\nbinlog_commit_wait_count = [0, 12]\n'
                                                          'durability = ["binlog-crash-safe", "no-binlog-durable"]\n'
                                                          "repeats = 2"))
    assert e.replication is not None
    got = [(p.durability, p.repeat, p.commit_wait_count, p.workers) for p in plan(e, e.replication)]
    assert got == [(d, r, c, w) for d in ("binlog-crash-safe", "no-binlog-durable") for r in (1, 2)
                   for c in (0, 12) for w in (0, 4)]


@pytest.mark.unit
def test_read_workloads_are_refused_for_the_apply_study(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text('[run]\nbenchmarks = ["point-query"]\n[replication]\n' + TARGET)
    with pytest.raises(UserError, match="'point-query' does not write"):
        parse_experiment(path)
    path.write_text('[run]\nbenchmarks = ["point-query"]\n[replication]\nstudies = ["stale-reads"]\n' + TARGET)
    assert parse_experiment(path).replication.studies == ("stale-reads",)


@pytest.mark.unit
def test_cli_refuses_a_bad_section_with_exit_2(tmp_path):
    proc = run_cli("run", str(replication_experiment(tmp_path, "workers = 3.5")), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "workers" in proc.stderr and not (tmp_path / "o").exists()


@pytest.mark.unit
def test_gtid_positions():
    assert gtid_seq("0-1-1234") == 1234
    assert gtid_seq("1-1-5,0-1-77") == 77
    assert gtid_seq("0-2-9") == 0 and gtid_seq("") == 0


def _apply(workers: int, rate: float, durability: str = "binlog-crash-safe", status: str = "ok") -> ApplyRecord:
    return ApplyRecord(type="replication_apply", replica="m-replica1", benchmark="update-index", client_threads=2,
                       workers=workers, mode="serial" if workers == 0 else "conservative", durability=durability,
                       commit_wait_count=0, commit_wait_usec=10000, repeat=1, status=status, transactions=1000,
                       apply_s=1000 / rate if rate else 0, trx_per_s=rate,
                       error=None if status == "ok" else "m-replica1: the server died",
                       server_log_tail=None if status == "ok" else "[ERROR] something")


@pytest.mark.unit
def test_summary_medians_speedup_cores_and_stale_fractions():
    lat = WaitLatency(p50_us=300.0, p95_us=800.0, p99_us=1200.0, max_us=5000.0, mean_us=350.0)
    records = [
        _apply(0, 1000.0), _apply(4, 1500.0), _apply(4, 1700.0), _apply(4, 1600.0), _apply(2, 0, status="failed"),
        StaleReadsRecord(type="replication_stale_reads", wait=False, reads=1000, background_threads=1, status="ok",
                         result=StaleReadsResult(reads=1000, stale=400, wait_timeouts=0, write_latency=lat,
                                                 read_latency=lat, background_transactions=5000,
                                                 background_trx_per_s=2500.0, elapsed_s=2.0)),
        StaleReadsRecord(type="replication_stale_reads", wait=True, reads=1000, background_threads=1, status="ok",
                         result=StaleReadsResult(reads=1000, stale=0, wait_timeouts=0, write_latency=lat,
                                                 read_latency=lat, background_transactions=5000,
                                                 background_trx_per_s=2500.0, elapsed_s=2.0, wait_latency=lat,
                                                 gtid_fetch_latency=lat)),
    ]
    # Records survive results.jsonl as their own types
    records = [results_record(json.loads(encode(r))) for r in records]
    meta = replication_meta({"status": "complete", "replication": {"cpus": 2, "fdatasync_per_s": 900.0}})
    s = replication_summary(meta, records)
    by_workers = {row["workers"]: row for row in s["apply"]}
    assert by_workers[4]["trx_per_s"] == 1600.0 and by_workers[4]["n"] == 3
    assert by_workers[4]["vs_serial"] == 1.6 and by_workers[4]["workers_exceed_cpus"] is True
    assert by_workers[0]["workers_exceed_cpus"] is False and 2 not in by_workers
    assert s["failures"][0]["server_log_tail"] == "[ERROR] something"
    assert s["stale_reads"]["without_wait"] == 0.4 and s["stale_reads"]["with_wait"] == 0.0
    assert s["stale_reads"]["wait_latency_us"]["p99_us"] == 1200.0
    text = render(replication_view(meta, records, []), "markdown")
    assert "4‡" in text and "cannot run more than 2 transactions" in text and "40.00%" in text
    assert "FAILED apply" in text
    assert "commits_per_group" not in by_workers[4]  # records from before the counters were kept: none shown


@pytest.mark.unit
def test_the_primarys_groups_are_their_commits_over_their_groups_and_what_closed_them():
    """A 12-commit wait that a load's clients fill: each run's mean group, their median and range in the row, and
    the groups closed by the count against the timeout, summed over the runs."""
    runs = []
    for repeat, (commits, groups, by_count) in enumerate([(1200, 100, 100), (1200, 120, 90), (1210, 110, 95)], 1):
        r = _apply(4, 1500.0)
        r.repeat, r.commit_wait_count = repeat, 12
        r.primary_group_commit = {"Binlog_commits": commits, "Binlog_group_commits": groups,
                                  "Binlog_group_commit_trigger_count": by_count,
                                  "Binlog_group_commit_trigger_timeout": groups - by_count,
                                  "Binlog_group_commit_trigger_lock_wait": 0}
        runs.append(r)
    assert [r.commits_per_group for r in runs] == [12.0, 10.0, 11.0]
    meta = replication_meta({"status": "complete", "replication": {"cpus": 2}})
    row = replication_summary(meta, runs)["apply"][0]
    assert (row["commits_per_group"], row["commits_per_group_min"], row["commits_per_group_max"]) == (11.0, 10.0, 12.0)
    assert row["groups_closed_by"] == {"count": 285, "timeout": 45, "lock_wait": 0}
    assert "11.0 (10.0–12.0)" in render(replication_view(meta, runs, []), "markdown")


# --- server tier: real MariaDB ----------------------------------------------------------------------------------

SMALL = """studies = ["apply", "stale-reads"]
transactions = 1500
workers = [0, 2]
durability = ["no-binlog-nondurable", "binlog-crash-safe"]
stale_reads = 300
background_threads = 1
repeats = 1
"""


def _servers_of(runtime_dir: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if runtime_dir in line and "mariadbd" in line]


@pytest.mark.server
@NEEDS_SERVERS
def test_primary_and_replica_apply_rate_and_stale_reads(tmp_path):
    marker = "Pw-repl-marker-91ab"
    out = tmp_path / "out"
    proc = run_cli("run", str(replication_experiment(tmp_path, SMALL)), "--out", str(out), timeout=900,
                   env={"DBPERF_SERVER_PASSWORD": marker})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "replica apply rate" in proc.stdout and "stale reads" in proc.stdout
    report = run_cli("report", str(out), "--format", "json")
    assert report.returncode == 0, report.stderr
    r = json.loads(report.stdout)["replication"]
    assert {(a["workers"], a["durability"]) for a in r["apply"]} == {
        (w, d) for w in (0, 2) for d in ("no-binlog-nondurable", "binlog-crash-safe")}
    for a in r["apply"]:
        assert a["trx_per_s"] > 0 and a["transactions"] >= 1500 and a["mode"] in ("serial", "conservative")
        # The primary's binlog groups over the load, from its counters: every commit in one group, none closed by
        # a wait's count (no wait is set), and its own rate with the range of its runs.
        assert 1.0 <= a["commits_per_group_min"] <= a["commits_per_group"] <= a["commits_per_group_max"]
        assert a["groups_closed_by"]["count"] == 0 and a["primary_trx_per_s_min"] > 0
    stale = r["stale_reads"]
    assert 0.0 <= stale["without_wait"] <= 1.0
    assert stale["with_wait"] == 0.0  # MASTER_GTID_WAIT before every read: never stale
    assert stale["wait_latency_us"]["p50_us"] > 0 and stale["wait_timeouts"] == 0
    assert r["failures"] == [] and r["cpus"] >= 1 and r["fdatasync_per_s"] > 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete"
    assert {s["role"] for s in meta["replication"]["servers"]} == {"primary", "replica1"}
    assert sorted(p.name for p in (out / "logs").iterdir()) == ["maria-primary.log", "maria-replica1.log"]
    # Neither the lab's password nor the replication user's statement reaches a result, report or log.
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert marker not in text and "MASTER_PASSWORD" not in text, path
    assert marker not in proc.stdout + proc.stderr + report.stdout
    assert not Path(meta["runtime_dir"]).exists() and _servers_of(meta["runtime_dir"]) == []
    md = run_cli("report", str(out), "--format", "markdown")
    assert md.returncode == 0 and "| durability |" in md.stdout


@pytest.mark.server
@NEEDS_SERVERS
def test_replica_killed_mid_study_fails_it_with_its_log_and_stops_everything(tmp_path):
    out = tmp_path / "out"
    exp = replication_experiment(tmp_path, 'transactions = 20000\nworkers = [0, 2]\n'
                                           'durability = ["no-binlog-nondurable"]\nstale_reads = 200\nrepeats = 1\n')
    proc = subprocess.Popen([*DBPERF, "run", str(exp), "--out", str(out)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    killed: list[int] = []

    def kill_replica_during_apply() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            meta_path = out / "meta.json"
            if meta_path.is_file():
                servers = json.loads(meta_path.read_text()).get("replication", {}).get("servers")
                if servers:
                    time.sleep(2.0)  # the first measurement: the primary writes, then the replica applies
                    pid = next(s["server_pid"] for s in servers if s["role"] == "replica1")
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_replica_during_apply)
    killer.start()
    _, stderr = proc.communicate(timeout=900)
    killer.join()
    assert killed, stderr
    assert "Traceback" not in stderr
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    apply = [x for x in lines if x["type"] == "replication_apply"]
    assert apply[-1]["status"] == "failed" and "replica1" in apply[-1]["error"]
    assert apply[-1]["server_log_tail"]
    # The replica was started again for the next study, which ran.
    stale = [x for x in lines if x["type"] == "replication_stale_reads"]
    assert stale and all(x["status"] == "ok" for x in stale), stale
    assert proc.returncode == 0, stderr
    meta = json.loads((out / "meta.json").read_text())
    assert next(s for s in meta["replication"]["servers"] if s["role"] == "replica1")["restarts"] == 1
    assert _servers_of(meta["runtime_dir"]) == [] and not Path(meta["runtime_dir"]).exists()
    report = run_cli("report", str(out))
    assert "FAILED apply" in report.stdout


@pytest.mark.server
@NEEDS_SERVERS
def test_a_server_that_fails_to_start_names_the_step_and_quotes_its_log(tmp_path):
    target = '[[target]]\nname = "m"\nengine = "mariadb"\nconfig = { no_such_variable = "1" }\n'
    proc = run_cli("run", str(replication_experiment(tmp_path, "", target=target)), "--out", str(tmp_path / "o"),
                   timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line = next(x for x in proc.stderr.splitlines() if x.startswith("dbperf: error:"))
    assert "m-primary" in line and ("no_such_variable" in line or "no-such-variable" in line)
    meta = json.loads((tmp_path / "o" / "meta.json").read_text())
    assert meta["status"] == "failed" and _servers_of(meta["runtime_dir"]) == []


@pytest.mark.unit
def test_cross_engine_rows_are_their_own_table():
    def rec(state: str, durability: str, rate: float) -> ApplyRecord:
        r = _apply(0, rate, durability=durability)
        r.state_engine, r.table_engine = state, "rocksdb"
        return r

    records = [rec("innodb", "fsync", 50.0), rec("auto", "fsync", 100.0), rec("rocksdb", "fsync", 100.0),
               _apply(0, 900.0)]
    records = [results_record(json.loads(encode(r))) for r in records]
    s = replication_summary(replication_meta({"replication": {"cpus": 2}}), records)
    assert len(s["apply"]) == 1  # the apply study's own row only
    cross = {c["state_engine"]: c for c in s["cross_engine"]}
    assert cross["innodb"]["vs_single_engine"] == 0.5 and cross["auto"]["vs_single_engine"] == 1.0
    cpus = replication_meta({"replication": {"cpus": 2}})
    assert "cross-engine commits" in render(replication_view(cpus, records, []), "markdown")


@pytest.mark.server
@NEEDS_SERVERS
@pytest.mark.skipif(not Path("/usr/lib/mysql/plugin/ha_rocksdb.so").exists(),
                    reason="mariadb-plugin-rocksdb is installed by make setup")
def test_cross_engine_study_on_myrocks(tmp_path):
    out = tmp_path / "out"
    exp = replication_experiment(tmp_path, 'studies = ["cross-engine"]\ntransactions = 300\nrepeats = 2\n')
    exp.write_text(exp.read_text().replace('benchmarks = ["update-index"]', 'benchmarks = ["write-only"]'))
    proc = run_cli("run", str(exp), "--out", str(out), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(run_cli("report", str(out), "--format", "json").stdout)["replication"]
    assert r["failures"] == []
    assert {(c["durability"], c["state_engine"]) for c in r["cross_engine"]} == {
        (d, s) for d in ("fsync", "no-fsync") for s in ("innodb", "auto", "rocksdb")}
    # write-only on 2 threads: an event that loses a lock conflict is not committed, so up to 300 transactions
    assert all(c["trx_per_s"] > 0 and 0 < c["transactions"] <= 300 for c in r["cross_engine"])
    # each way measured twice, its range kept; the settings read back from the replica
    for c in r["cross_engine"]:
        assert c["n"] == 2 and c["trx_per_s_min"] <= c["trx_per_s"] <= c["trx_per_s_max"], c
        replica = c["variables"]["replica"]
        assert replica["rocksdb_flush_log_at_trx_commit"] == ("1" if c["durability"] == "fsync" else "2")
        assert ("gtid_pos_auto_engines" in replica) == (c["state_engine"] == "auto")
