"""The replication lab at [Nielsen 2014-03-13]'s settings: the [replication] section's group-commit wait, four
durability settings, client counts and repeats (unit); every setting read back from the servers with SHOW VARIABLES,
a setting that did not take an error (unit), end to end on the Debian MariaDB (server); and every figure of repeated
runs given with its range, in the report's JSON and in the study's figures (unit)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from dbperf.experiment import binlog_rules
from dbperf.experiment.spec import parse_experiment
from dbperf.records import ApplyRecord, ResultsRecord, StaleReadsRecord, StaleReadsResult, WaitLatency
from dbperf.replication import mariadb_binlog, mysql_binlog
from dbperf.replication.binlog_dialect import set_global
from dbperf.replication.cluster import ClusterServer, same_setting
from dbperf.replication.replica_set import StudyFailed
from dbperf.report.binlog_view import commit_wait, primary_load
from dbperf.report.formats import render
from dbperf.report.replication_report import replication_view
from dbperf.report.replication_view import replication_summary
from dbperf.run_meta import meta_dict
from dbperf.studies.figures import rows
from dbperf.studies.model import load_study
from tests.conftest import NEEDS_SERVERS, run_cli
from tests.synthetic import replication_meta
from tests.test_replication import replication_experiment

# --- the section -------------------------------------------------------------------------------------------------


@pytest.mark.unit
def test_the_section_asks_for_the_published_settings(tmp_path):
    path = replication_experiment(tmp_path, "binlog_commit_wait_count = [0, 12]\nbinlog_commit_wait_usec = 10000\n")
    path.write_text(path.read_text().replace("threads = [2]", "threads = [1, 4]"))  # a 1-client primary beside 4
    e = parse_experiment(path)
    r = e.replication
    assert r is not None and e.threads == (1, 4)
    assert r.commit_wait_counts == (0, 12) and r.commit_wait_usec == 10_000
    assert r.durability == ("binlog-crash-safe", "no-binlog-durable", "no-binlog-nondurable", "binlog-non-crash-safe")
    assert r.repeats == 3  # every figure has a range by default
    # 3 repeats × 4 durability settings × 2 waits × 2 client counts × (serial + 2 worker counts in one mode)
    assert r.apply_measurements(benchmarks=1, thread_counts=2) == 3 * 4 * 2 * 2 * 3


@pytest.mark.unit
@pytest.mark.parametrize("dialect", [mariadb_binlog.DIALECT, mysql_binlog.DIALECT], ids=lambda d: d.engine)
def test_each_durability_setting_is_what_it_is_named(dialect):
    """The binary log on or off × InnoDB's flush at commit, sync_binlog to match, as SHOW VARIABLES must read them
    back: [Nielsen 2014-03-13]'s values, flush 1 where durable, 2 without a binary log, 0 with one not crash-safe."""
    for name in binlog_rules.DURABILITY:
        shown = dialect.shown(dialect.replica_settings(0, name))
        binlog, durable = name.startswith("binlog-"), name in ("binlog-crash-safe", "no-binlog-durable")
        assert shown["log_bin"] == ("ON" if binlog else "OFF"), name
        assert shown["innodb_flush_log_at_trx_commit"] == ("1" if durable else "0" if binlog else "2"), name
        assert shown.get("sync_binlog") == (("1" if durable else "0") if binlog else None), name
    primary = dialect.shown(dialect.primary_settings)
    assert primary["log_bin"] == "ON" and primary["sync_binlog"] == "0"


@pytest.mark.unit
def test_the_cross_engine_settings_are_read_back_too():
    shown = mariadb_binlog.shown({**mariadb_binlog.replica_settings(0, "fsync"),
                                  "gtid_pos_auto_engines": "innodb,rocksdb"})
    assert shown["rocksdb_flush_log_at_trx_commit"] == "1" and shown["gtid_pos_auto_engines"] == "innodb,rocksdb"


# --- read back: SHOW VARIABLES against what was set ----------------------------------------------------------------


def _server(variables: dict[str, str]) -> Any:
    """A ClusterServer's read-back, its statements answered from `variables` (SET GLOBAL changes nothing: a
    setting that does not take)."""
    sent: list[tuple[str, Any]] = []

    def query(sql: str, args: Any = None, what: str = "") -> list[dict[str, str]]:
        sent.append((sql, args))
        if sql.startswith("SHOW GLOBAL VARIABLES"):
            return [{"Variable_name": k, "Value": v} for k, v in variables.items() if k in args]
        return []

    server = SimpleNamespace(target=SimpleNamespace(name="m-replica1"), query=query, log_tail=lambda: "[Note] up",
                             sent=sent)
    server.check_variables = lambda expected: ClusterServer.check_variables(server, expected)
    return server


@pytest.mark.unit
def test_settings_are_read_back_and_one_that_did_not_take_is_an_error():
    server = _server({"slave_parallel_threads": "4", "slave_parallel_mode": "optimistic",
                      "gtid_pos_auto_engines": "InnoDB,ROCKSDB", "log_bin": "OFF"})
    read = ClusterServer.run(server, mariadb_binlog.parallel(4, "optimistic"))
    assert read == {"slave_parallel_threads": "4", "slave_parallel_mode": "optimistic"}
    assert server.sent[0] == ("SET GLOBAL slave_parallel_threads = %s", (4,))
    assert server.sent[-1][1] == ("slave_parallel_threads", "slave_parallel_mode")  # one SHOW VARIABLES, bound names
    # the server's spelling of a list of engines is the one set
    assert server.check_variables({"gtid_pos_auto_engines": "innodb,rocksdb"}) == {
        "gtid_pos_auto_engines": "InnoDB,ROCKSDB"}
    with pytest.raises(StudyFailed) as err:
        ClusterServer.run(server, mariadb_binlog.commit_wait(12, 10000))
    assert "binlog_commit_wait_count is None after it was set to '12'" in str(err.value)
    assert "did not take" in str(err.value) and err.value.log_tail == "[Note] up"
    with pytest.raises(StudyFailed, match="log_bin is 'OFF' after it was set to 'ON'"):
        server.check_variables(mariadb_binlog.shown(mariadb_binlog.replica_settings(0, "binlog-crash-safe")))


@pytest.mark.unit
def test_what_counts_as_the_same_setting():
    assert same_setting("ON", "on") and same_setting("InnoDB,ROCKSDB", "rocksdb, innodb")
    assert not same_setting("1", "2") and not same_setting("innodb", "innodb,rocksdb")
    statement = set_global("binlog_commit_wait_usec", 10000)
    assert statement.variable == "binlog_commit_wait_usec" and statement.args == (10000,)


# --- every figure with its range -------------------------------------------------------------------------------------

LAT = WaitLatency(p50_us=300.0, p95_us=800.0, p99_us=1200.0, max_us=5000.0, mean_us=350.0)


def _apply(durability: str, count: int, threads: int, workers: int, repeat: int, **fields: Any) -> ApplyRecord:
    rate = (1000.0 + 500.0 * workers - 200.0 * count / 12) * (1 + 0.25 * (repeat - 2))  # exact in binary
    return ApplyRecord(type="replication_apply", replica="m-replica1", benchmark="update-index", client_threads=threads,
                       workers=workers, mode="serial" if workers == 0 else "conservative", durability=durability,
                       commit_wait_count=count, commit_wait_usec=10000, repeat=repeat, status="ok", transactions=1000,
                       apply_s=round(1000 / rate, 4), trx_per_s=rate, primary_s=0.5, primary_trx_per_s=2000.0,
                       primary_group_commit={"Binlog_commits": 1000, "Binlog_group_commits": 100 if count else 900},
                       **fields)


def _stale(wait: bool, repeat: int) -> StaleReadsRecord:
    wait_latency = WaitLatency(p50_us=300.0 * repeat, p95_us=800.0, p99_us=1000.0 + repeat, max_us=5000.0,
                               mean_us=350.0) if wait else None
    return StaleReadsRecord(
        type="replication_stale_reads", wait=wait, reads=100, background_threads=1, status="ok", repeat=repeat,
        result=StaleReadsResult(reads=100, stale=0 if wait else 90 + repeat, wait_timeouts=0, write_latency=LAT,
                                read_latency=LAT, background_transactions=500, background_trx_per_s=200.0 + repeat,
                                elapsed_s=1.0, wait_latency=wait_latency, gtid_fetch_latency=LAT if wait else None))


def _records(durability: tuple[str, ...], counts: tuple[int, ...], threads: int, workers: tuple[int, ...],
             others: bool) -> list[ResultsRecord]:
    records: list[ResultsRecord] = [
        _apply(d, c, threads, w, rep, variables={"primary": {"binlog_commit_wait_count": str(c)},
                                                 "replica": {"slave_parallel_threads": str(w)}})
        for d in durability for c in counts for rep in (1, 2, 3) for w in workers]
    if others:  # the stale reads and the cross-engine study, as the main step runs them
        records += [_stale(wait, rep) for rep in (1, 2, 3) for wait in (False, True)]
        for fsync in ("fsync", "no-fsync"):
            for i, state in enumerate(("innodb", "auto", "rocksdb")):
                for rep in (1, 2, 3):
                    r = _apply(fsync, 0, threads, 0, rep)
                    r.trx_per_s, r.state_engine, r.table_engine = 100.0 * (i + 1) + rep, state, "rocksdb"
                    records.append(r)
    return records


STEPS = {  # each MariaDB step of the study, as its experiment file sweeps
    "mariadb": (tuple(binlog_rules.DURABILITY), (0,), 4, (0, 2, 4), True),
    "mariadb-oltp": (tuple(binlog_rules.DURABILITY), (0, 12), 16, (0, 4), False),
    "mariadb-one-client": (("binlog-crash-safe", "no-binlog-nondurable"), (0,), 1, (0, 4), False),
}


def _meta() -> Any:
    return replication_meta({"status": "complete", "replication": {
        "cpus": 2, "engine": "mariadb", "fdatasync_runs": [120.0, 100.0, 140.0], "fdatasync_per_s": 120.0}})


@pytest.mark.unit
def test_the_summary_gives_every_figure_the_range_of_its_runs():
    s = replication_summary(_meta(), _records(*STEPS["mariadb"]))
    assert "min-max of n runs" in s["intervals"]
    row = next(a for a in s["apply"] if a["workers"] == 4 and a["durability"] == "binlog-crash-safe")
    assert row["n"] == 3 and row["trx_per_s_runs"] == [2250.0, 3000.0, 3750.0]
    assert (row["trx_per_s_min"], row["trx_per_s"], row["trx_per_s_max"]) == (2250.0, 3000.0, 3750.0)
    assert row["variables"] == {"primary": {"binlog_commit_wait_count": "0"},
                                "replica": {"slave_parallel_threads": "4"}}
    st = s["stale_reads"]
    assert st["reads_without_wait"] == 300 and st["stale_without_wait"] == 91 + 92 + 93 and st["runs_with_wait"] == 3
    assert st["without_wait"] == pytest.approx(276 / 300) and st["with_wait"] == 0.0
    assert (st["wait_p50_us"], st["wait_p50_us_min"], st["wait_p50_us_max"]) == (600.0, 300.0, 900.0)
    assert st["wait_p99_us_runs"] == [1001.0, 1002.0, 1003.0] and st["wait_latency_us"]["p50_us"] == 600.0
    assert st["background_trx_per_s_with_wait"] == 202.0
    cross = {(c["durability"], c["state_engine"]): c for c in s["cross_engine"]}
    innodb = cross[("fsync", "innodb")]
    assert len(cross) == 6 and innodb["trx_per_s_runs"] == [101.0, 102.0, 103.0] and innodb["n"] == 3
    assert innodb["vs_single_engine"] == round(102 / 302, 3)
    assert (s["fdatasync_per_s"], s["fdatasync_per_s_min"], s["fdatasync_per_s_max"]) == (120.0, 100.0, 140.0)
    text = render(replication_view(_meta(), _records(*STEPS["mariadb"]), []), "markdown")
    assert "3 runs each, the reads pooled" in text and "median of 3 runs of 2 s, 100–140" in text


@pytest.mark.unit
def test_a_run_from_before_the_ranges_reads_as_it_did():
    """Results written before runs were repeated (one stale run, one fdatasync value) keep their figures."""
    meta = replication_meta({"replication": {"cpus": 2, "fdatasync_per_s": 150.0}})
    s = replication_summary(meta, [_stale(False, 1), _stale(True, 1)])
    assert s["fdatasync_per_s"] == 150.0 and "fdatasync_per_s_min" not in s
    assert s["stale_reads"]["wait_latency_us"]["p50_us"] == 300.0 and s["stale_reads"]["stale_without_wait"] == 91


@pytest.mark.unit
def test_the_apply_table_says_what_each_column_is():
    assert commit_wait({"commit_wait_count": 0, "commit_wait_usec": 10000}) == "none"
    assert commit_wait({"commit_wait_count": 12, "commit_wait_usec": 10000}) == "12 commits or 10,000 µs"
    assert primary_load({"benchmark": "update-index", "client_threads": 1}) == "update-index, 1 client"
    assert primary_load({"benchmark": "update-index", "client_threads": 4}) == "update-index, 4 clients"


@pytest.mark.unit
def test_every_mariadb_figure_of_the_study_has_an_interval(tmp_path):
    """The study's figures read from what its MariaDB steps' reports hold: each a value with an interval (the min–max
    of its 3 runs, a ratio of two of them, or Wilson's for a share), none without; a figure this host cannot
    reproduce (the post's 12 workers, on the 2 vCPUs its run's meta.json names) its reason instead."""
    study = load_study("replication")
    for step, sweep in STEPS.items():
        view = replication_view(_meta(), _records(*sweep), [])
        (tmp_path / f"{step}-report.json").write_text(render(view, "json"))
        (tmp_path / step).mkdir()
        (tmp_path / step / "meta.json").write_text(json.dumps(meta_dict(replication_meta({"host": {"cores": 2}}))))
    checked = 0
    for figure, row in zip(study.figures, rows(study, tmp_path), strict=True):
        if not figure.measure.step.startswith("mariadb"):
            continue
        checked += 1
        if figure.requires is not None:
            assert row.measured == "not reproducible here: 12 threads need 12 vCPUs; this host has 2", figure.what
            continue
        assert row.value is not None and row.low is not None and row.high is not None, (figure.what, row.measured)
        assert row.low <= row.value <= row.high, figure.what
        assert "min–max of 3 repeats" in (row.interval or "") or "Wilson" in (row.interval or ""), row.interval
    assert checked == 23


# --- end to end on the Debian MariaDB ------------------------------------------------------------------------------


@pytest.mark.server
@NEEDS_SERVERS
def test_the_settings_reach_the_servers_read_back_with_show_variables(tmp_path):
    out = tmp_path / "out"
    exp = replication_experiment(tmp_path, 'studies = ["apply"]\ntransactions = 200\nworkers = [2]\n'
                                           'modes = ["optimistic"]\n'
                                           'durability = ["no-binlog-durable", "binlog-non-crash-safe"]\n'
                                           "binlog_commit_wait_count = [0, 3]\nbinlog_commit_wait_usec = 2000\n"
                                           "repeats = 1\n")
    proc = run_cli("run", str(exp), "--out", str(out), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    apply = [x for x in lines if x["type"] == "replication_apply"]
    assert len(apply) == 4 and all(x["status"] == "ok" for x in apply), apply
    for x in apply:
        replica, primary = x["variables"]["replica"], x["variables"]["primary"]
        binlog = x["durability"] == "binlog-non-crash-safe"
        assert replica["log_bin"] == ("ON" if binlog else "OFF"), x
        assert replica["innodb_flush_log_at_trx_commit"] == ("0" if binlog else "1"), x
        if binlog:
            assert replica["sync_binlog"] == "0" and replica["log_slave_updates"] == "ON", x
        assert replica["slave_parallel_threads"] == "2" and replica["slave_parallel_mode"] == "optimistic", x
        assert primary == {"binlog_commit_wait_count": str(x["commit_wait_count"]),
                           "binlog_commit_wait_usec": "2000"}, x
    report = json.loads(run_cli("report", str(out), "--format", "json").stdout)["replication"]
    assert {a["variables"]["primary"]["binlog_commit_wait_count"] for a in report["apply"]} == {"0", "3"}
    assert len(report["fdatasync_per_s_runs"]) == 1 and report["fdatasync_per_s"] > 0
