"""MySQL in the replication lab (issue 51): the binlog kind on MySQL's servers, its SQL in one dialect per engine
(dbperf/replication/mariadb_binlog.py, mysql_binlog.py), MySQL's GTID sets counted and compared, the section's rules
on a MySQL target (no cross-engine study), the replication password kept out of the settings, my.cnf and the
statements' text; end to end against a MySQL when one is at hand (DBPERF_MYSQL_BINARIES: a MySQL basedir), skipped
with its reason otherwise."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path
from typing import Any

import pymysql
import pytest

from dbperf.errors import UserError
from dbperf.experiment import binlog_rules
from dbperf.experiment.model import Experiment, Target
from dbperf.experiment.replication_section import rules
from dbperf.experiment.spec import parse_experiment
from dbperf.records import StaleReadsRecord, StaleReadsResult, WaitLatency
from dbperf.replication import binlog, cluster, mariadb_binlog, mysql_binlog
from dbperf.replication.binlog_dialect import Statement
from dbperf.replication.gtid_set import is_subset, parse_gtid_set, transactions_between
from dbperf.replication.lab import kind_of
from dbperf.report.formats import render
from dbperf.report.replication_report import replication_view
from dbperf.report.replication_view import replication_summary
from tests.conftest import run_cli
from tests.synthetic import replication_meta
from tests.test_mysql import MYSQL_BINARIES, NO_MYSQL
from tests.test_replication import replication_experiment

MYSQL_TARGET = '[[target]]\nname = "my"\nengine = "mysql"\nbinaries = "/opt/mysql"\n'
A = "3E11FA47-71CA-11E1-9E33-C80AA9429562"
B = "4c2e7f10-71ca-11e1-9e33-c80aa9429562"


@pytest.mark.unit
def test_gtid_sets_parse_with_newlines_tags_and_either_case():
    text = f"{A}:1-5:7:9-10,\n{B}:1-3:fast:1-2"
    assert parse_gtid_set(text) == {(A.lower(), ""): [(1, 5), (7, 7), (9, 10)], (B, ""): [(1, 3)],
                                    (B, "fast"): [(1, 2)]}
    assert parse_gtid_set("") == {} and parse_gtid_set(f"{A}:1-2:3-4") == {(A.lower(), ""): [(1, 4)]}
    for bad in (f"{A}", f"{A}:5-2", f"{A}:x-1:", f"{A}:0", ":1-2"):
        with pytest.raises(ValueError):
            parse_gtid_set(bad)


@pytest.mark.unit
def test_the_primarys_transactions_between_two_sets_are_its_uuids_new_gtids():
    before = f"{A}:1-100,\n{B}:1-7"
    after = f"{A}:1-100:102-150,\n{B}:1-90"
    assert transactions_between(before, after, A) == 49  # 101 is not in `after`: never counted
    assert transactions_between(before, after, B.upper()) == 83
    assert transactions_between("", f"{A}:1-5:tag:1-3", A) == 8  # tagged GTIDs are the server's too
    assert transactions_between(after, after, A) == 0 and transactions_between(before, after, "other") == 0


@pytest.mark.unit
def test_a_set_is_fetched_when_the_retrieved_and_executed_sets_cover_it():
    assert is_subset(f"{A}:1-150", f"{A}:101-150", f"{A}:1-100")
    assert not is_subset(f"{A}:1-151", f"{A}:101-150", f"{A}:1-100")
    assert not is_subset(f"{A}:1-5,{B}:1", f"{A}:1-5")
    assert is_subset("", "") and is_subset(f"{A}:3", f"{A.lower()}:1-5")
    status = {"Retrieved_Gtid_Set": f"{A}:40-60", "Executed_Gtid_Set": f"{A}:1-39,\n{B}:1-2"}
    assert mysql_binlog.io_fetched(status, f"{A}:1-60") and not mysql_binlog.io_fetched(status, f"{A}:1-61")
    assert mariadb_binlog.io_fetched({"Gtid_IO_Pos": "0-1-60"}, "0-1-60")
    assert not mariadb_binlog.io_fetched({"Gtid_IO_Pos": "0-1-59"}, "0-1-60")


@pytest.mark.unit
def test_mariadbs_statements_are_as_they_were():
    d = mariadb_binlog.DIALECT
    assert (d.start, d.stop, d.start_io, d.start_sql, d.stop_sql, d.status) == (
        "START SLAVE", "STOP SLAVE", "START SLAVE IO_THREAD", "START SLAVE SQL_THREAD", "STOP SLAVE SQL_THREAD",
        "SHOW SLAVE STATUS")
    assert d.change_source == ("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %s, MASTER_USER = %s, "
                               "MASTER_PASSWORD = %s, MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1")
    assert d.position_sql == "SELECT @@GLOBAL.gtid_binlog_pos" and d.wait_sql == "SELECT MASTER_GTID_WAIT(%s, %s)"
    assert d.start_from("0-1-5") == [Statement("SET GLOBAL gtid_slave_pos = %s", ("0-1-5",), "setting gtid_slave_pos")]
    assert [s.sql for s in d.parallel(4, "optimistic")] == ["SET GLOBAL slave_parallel_threads = %s",
                                                           "SET GLOBAL slave_parallel_mode = %s"]
    assert d.parallel(0, None) == [Statement("SET GLOBAL slave_parallel_threads = %s", (0,),
                                             "setting slave_parallel_threads", "slave_parallel_threads")]
    assert d.commit_wait(12, 10000) == [
        Statement("SET GLOBAL binlog_commit_wait_count = %s", (12,), "setting binlog_commit_wait_count",
                  "binlog_commit_wait_count"),
        Statement("SET GLOBAL binlog_commit_wait_usec = %s", (10000,), "setting binlog_commit_wait_usec",
                  "binlog_commit_wait_usec")]
    assert d.transactions("0-1-100", "1-1-3,0-1-250", "1") == 150
    assert d.primary_settings == {"server_id": "1", "log_bin": "primary-bin", "sync_binlog": "0",
                                  "innodb_flush_log_at_trx_commit": "2"}
    assert d.replica_settings(0, "no-binlog-nondurable") == {
        "server_id": "2", "skip_slave_start": "ON", "relay_log": "relay-bin", "innodb_flush_log_at_trx_commit": "2"}
    assert d.replica_settings(1, "fsync")["rocksdb_flush_log_at_trx_commit"] == "1"  # the cross-engine study's
    assert cluster.gtid_seq("0-1-77") == 77


@pytest.mark.unit
def test_mysqls_statements():
    d = mysql_binlog.DIALECT
    assert (d.start, d.stop, d.start_io, d.start_sql, d.stop_sql, d.status) == (
        "START REPLICA", "STOP REPLICA", "START REPLICA IO_THREAD", "START REPLICA SQL_THREAD",
        "STOP REPLICA SQL_THREAD", "SHOW REPLICA STATUS")
    assert (d.io_running, d.sql_running) == ("Replica_IO_Running", "Replica_SQL_Running")
    assert d.change_source == (
        "CHANGE REPLICATION SOURCE TO SOURCE_HOST = '127.0.0.1', SOURCE_PORT = %s, SOURCE_USER = %s, "
        "SOURCE_PASSWORD = %s, SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 1, GET_SOURCE_PUBLIC_KEY = 1")
    assert d.position_sql == "SELECT @@GLOBAL.gtid_executed" and d.source_sql == "SELECT @@GLOBAL.server_uuid"
    assert d.wait_sql == "SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %s)"
    # 0 is reached for both engines; a timeout (MySQL 1, MariaDB -1) adds nothing to "did not reach"
    assert d.wait_failure(1) == "" and mariadb_binlog.DIALECT.wait_failure(-1) == ""
    assert d.wait_failure(None) == " (WAIT_FOR_EXECUTED_GTID_SET returned None)"
    assert d.start_from(f"{A}:1-3") == [Statement("SET GLOBAL gtid_purged = %s", (f"+{A}:1-3",),
                                                  "adding the primary's GTIDs to gtid_purged")]
    assert d.start_from("") == [] and d.reset_own_binlog is None
    assert d.parallel(4, "any-order") == [
        Statement("SET GLOBAL replica_parallel_workers = %s", (4,), "setting replica_parallel_workers",
                  "replica_parallel_workers"),
        Statement("SET GLOBAL replica_preserve_commit_order = %s", ("OFF",), "setting replica_preserve_commit_order",
                  "replica_preserve_commit_order")]
    assert [s.args for s in d.commit_wait(0, 10000)] == [(0,), (0,)]  # no wait at count 0
    assert [s.args for s in d.commit_wait(8, 5000)] == [(8,), (5000,)]
    assert set(mysql_binlog.COMMIT_ORDER) == set(binlog_rules.MYSQL_MODES)
    assert set(mysql_binlog.DURABILITY) == set(binlog_rules.DURABILITY)
    for i, durability in enumerate(binlog_rules.DURABILITY):
        settings = d.replica_settings(i, durability)
        assert settings["gtid_mode"] == settings["enforce_gtid_consistency"] == "ON"
        assert settings["server_id"] == str(i + 2) and settings["skip_replica_start"] == "ON"
    assert d.replica_settings(0, "no-binlog-nondurable")["skip-log-bin"] == "ON"
    assert {"gtid_mode": "ON", "enforce_gtid_consistency": "ON", "log_replica_updates": "ON",
            "server_id": "1"}.items() <= d.primary_settings.items()


@pytest.mark.unit
def test_a_mysql_target_gets_the_binlog_kind_with_mysqls_sql_and_rules(tmp_path):
    target = Target(name="my", engine="mysql", library="", binaries="/opt/mysql")
    assert kind_of(target) is binlog.KIND and binlog.DIALECTS["mysql"] is mysql_binlog.DIALECT
    assert binlog.DIALECTS["mariadb"] is mariadb_binlog.DIALECT
    assert rules("mysql") is binlog_rules.MYSQL_RULES and rules("mariadb") is binlog_rules.RULES
    spec = parse_experiment(replication_experiment(tmp_path, "workers = [1, 4]", target=MYSQL_TARGET)).replication
    assert spec is not None and spec.modes == ("commit-order",) and spec.workers == (1, 4)
    assert spec.studies == ("apply", "stale-reads")


@pytest.mark.unit
@pytest.mark.parametrize(("replication", "target", "message"), [
    ('studies = ["apply", "cross-engine"]', MYSQL_TARGET, "studies: the cross-engine study is MariaDB's"),
    ('modes = ["conservative"]', MYSQL_TARGET, "modes: unknown 'conservative' (known: commit-order, any-order)"),
    ('modes = ["commit-order"]', '[[target]]\nname = "m"\nengine = "mariadb"\n', "modes: unknown 'commit-order'"),
    ("binlog_commit_wait_usec = 2000000", MYSQL_TARGET, "at most 1000000 µs"),
    ("workers = [0, 2]", MYSQL_TARGET, "workers: MySQL has no single-threaded applier"),
    ("", MYSQL_TARGET[:-1] + '\nconfig = { gtid_mode = "OFF" }\n', "config.gtid_mode"),
    ("", MYSQL_TARGET[:-1] + '\nconfig = { "replica-parallel-workers" = 8 }\n', "config.replica-parallel-workers"),
])
def test_what_mysql_cannot_do_is_one_line(tmp_path, replication, target, message):
    with pytest.raises(UserError) as err:
        parse_experiment(replication_experiment(tmp_path, replication, target=target))
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.unit
def test_the_cli_refuses_cross_engine_on_mysql_in_one_line(tmp_path):
    proc = run_cli("run", str(replication_experiment(tmp_path, 'studies = ["cross-engine"]', target=MYSQL_TARGET)),
                   "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "the cross-engine study is MariaDB's" in proc.stderr.strip().splitlines()[-1]


class _Runtime:
    def __init__(self, path: Path) -> None:
        self.path = path

    def target_dir(self, index: int) -> Path:
        return self.path / f"t{index}"


def _cluster(tmp_path: Path, engine: str, durability: str = "binlog-crash-safe") -> cluster.Cluster:
    e = Experiment(path=tmp_path / "e.toml", text="", benchmarks=(), targets=(), base="t")
    target = Target(name="t", engine=engine, library="", binaries=str(tmp_path))
    return cluster.Cluster(_Runtime(tmp_path), tmp_path / "logs", target, e, 1, durability,  # type: ignore[arg-type]
                           binlog.DIALECTS[engine])


def _replica_setup(c: cluster.Cluster, monkeypatch: pytest.MonkeyPatch, position: str) -> list[tuple[Any, ...]]:
    """The statements a new replica is set up with, the servers not started (what it reads back, as the check)."""
    done: list[tuple[Any, ...]] = []
    monkeypatch.setattr(cluster, "start_server", lambda server, what: None)
    monkeypatch.setattr(cluster.Cluster, "wait_connected", lambda self, r: None)
    monkeypatch.setattr(cluster.ClusterServer, "gtid_position", lambda self: position)
    monkeypatch.setattr(cluster.ClusterServer, "query",
                        lambda self, sql, args=None, what="": done.append((sql, args, what)) or [])
    monkeypatch.setattr(cluster.ClusterServer, "check_variables",
                        lambda self, expected: (expected and done.append(("(read back)", dict(expected), ""))) or {})
    c.primary.port = 40001
    c.start_replica(c.replicas[0], first=True)
    return done


@pytest.mark.unit
def test_a_new_mysql_replica_skips_what_the_primary_held_and_auto_positions(tmp_path, monkeypatch):
    c = _cluster(tmp_path, "mysql")
    done = _replica_setup(c, monkeypatch, f"{A}:1-3")
    assert [(sql.split(" =")[0], args) for sql, args, _ in done] == [
        ("(read back)", {"log_bin": "ON", "log_replica_updates": "ON", "sync_binlog": "1",
                         "innodb_flush_log_at_trx_commit": "1"}),
        ("SET GLOBAL gtid_purged", (f"+{A}:1-3",)),
        ("CHANGE REPLICATION SOURCE TO SOURCE_HOST", (40001, "repl", c.repl_password)),
        ("START REPLICA", None)]
    assert all(c.repl_password not in sql + what for sql, _, what in done)


@pytest.mark.unit
def test_a_new_mariadb_replica_is_set_up_as_before(tmp_path, monkeypatch):
    c = _cluster(tmp_path, "mariadb")
    done = _replica_setup(c, monkeypatch, "0-1-9")
    assert [(sql.split(" =")[0], args, what) for sql, args, what in done] == [
        ("(read back)", {"log_bin": "ON", "log_slave_updates": "ON", "sync_binlog": "1",
                         "innodb_flush_log_at_trx_commit": "1"}, ""),
        ("RESET MASTER", None, "clearing the replica's own binlog"),
        ("SET GLOBAL gtid_slave_pos", ("0-1-9",), "setting gtid_slave_pos"),
        ("CHANGE MASTER TO MASTER_HOST", (40001, "repl", c.repl_password), "CHANGE MASTER TO"),
        ("START SLAVE", None, "START SLAVE")]


@pytest.mark.unit
def test_the_replication_password_is_in_no_setting_my_cnf_or_error(tmp_path, monkeypatch):
    c = _cluster(tmp_path, "mysql")
    secret = c.repl_password
    assert secret not in json.dumps(c.describe(), default=str)
    user = pwd.getpwuid(os.getuid())
    for server in c.servers:
        cnf = server.my_cnf(server.dir / "data", 40001, user, server.dir / "init.sql", tmp_path)
        assert secret not in cnf and "gtid_mode = ON" in cnf.splitlines()
    replica_cnf = c.replicas[0].my_cnf(tmp_path / "d", 40002, user, tmp_path / "i.sql", tmp_path).splitlines()
    assert "server_id = 2" in replica_cnf and "skip_replica_start = ON" in replica_cnf
    # Only root's statements on the client's standard input hold it, as a quoted literal
    assert f"IDENTIFIED BY '{secret}'" in c.replication_user_sql()
    assert "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'" in c.replication_user_sql()

    class Refusing:
        def cursor(self, *args: Any) -> Any:
            raise pymysql.err.OperationalError(1045, "Access denied")

    r = c.replicas[0]
    monkeypatch.setattr(r, "connection", lambda: Refusing())
    monkeypatch.setattr(r, "log_tail", lambda: "")
    with pytest.raises(cluster.StudyFailed) as err:
        r.query(c.dialect.change_source, (40001, "repl", secret), what=c.dialect.change_source_what)
    assert secret not in str(err.value) and "CHANGE REPLICATION SOURCE TO: Access denied" in str(err.value)


@pytest.mark.unit
def test_the_apply_study_counts_the_primarys_own_gtids(tmp_path, monkeypatch):
    c = _cluster(tmp_path, "mysql")
    monkeypatch.setattr(cluster.ClusterServer, "value", lambda self, sql, args=None, what="": A.lower())
    assert c.transactions(f"{A}:1-10,\n{B}:1-4", f"{A}:1-30,\n{B}:1-9") == 20
    m = _cluster(tmp_path / "m", "mariadb")
    assert m.transactions("0-1-10", "0-1-30,0-2-99") == 20  # server_id 1, as the primary's setting says


SMALL = """studies = ["apply", "stale-reads"]
transactions = 1500
workers = [1, 2]
modes = ["commit-order"]
durability = ["no-binlog-nondurable", "binlog-crash-safe"]
stale_reads = 150
background_threads = 1
repeats = 1
"""


@pytest.mark.server
@pytest.mark.skipif(not MYSQL_BINARIES, reason=NO_MYSQL)
def test_mysql_primary_and_replica_apply_rate_and_stale_reads(tmp_path):
    marker = "Pw-mysql-repl-marker-52cd"
    out = tmp_path / "out"
    target = (f'[[target]]\nname = "my"\nengine = "mysql"\nbinaries = "{MYSQL_BINARIES}"\n'
              'config = { innodb_buffer_pool_size = "64M" }\n')
    proc = run_cli("run", str(replication_experiment(tmp_path, SMALL, target=target)), "--out", str(out),
                   timeout=900, env={"DBPERF_SERVER_PASSWORD": marker})
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = run_cli("report", str(out), "--format", "json")
    assert report.returncode == 0, report.stderr
    r = json.loads(report.stdout)["replication"]
    assert {(a["workers"], a["durability"]) for a in r["apply"]} == {
        (w, d) for w in (1, 2) for d in ("no-binlog-nondurable", "binlog-crash-safe")}
    for a in r["apply"]:
        assert a["trx_per_s"] > 0 and a["transactions"] >= 1500 and a["mode"] == "commit-order"
    stale = r["stale_reads"]
    assert stale["with_wait"] == 0.0 and stale["wait_timeouts"] == 0  # WAIT_FOR_EXECUTED_GTID_SET: never stale
    assert r["failures"] == []
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["replication"]["engine"] == "mysql"
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert marker not in text and "SOURCE_PASSWORD" not in text, path
    assert marker not in proc.stdout + proc.stderr + report.stdout


@pytest.mark.unit
def test_the_report_names_each_engines_wait():
    lat = WaitLatency(p50_us=300.0, p95_us=800.0, p99_us=1200.0, max_us=5000.0, mean_us=350.0)
    records = [StaleReadsRecord(type="replication_stale_reads", wait=wait, reads=100, background_threads=1,
                                status="ok", result=StaleReadsResult(
                                    reads=100, stale=0 if wait else 40, wait_timeouts=0, write_latency=lat,
                                    read_latency=lat, background_transactions=50, background_trx_per_s=25.0,
                                    elapsed_s=2.0, wait_latency=lat if wait else None,
                                    gtid_fetch_latency=lat if wait else None)) for wait in (False, True)]
    for engine, wait, position in (("mysql", "WAIT_FOR_EXECUTED_GTID_SET", "@@GLOBAL.gtid_executed"),
                                   ("mariadb", "MASTER_GTID_WAIT", "@@last_gtid")):
        meta = replication_meta({"status": "complete", "replication": {"engine": engine, "cpus": 2}})
        assert replication_summary(meta, records)["stale_reads"]["wait"] == wait
        text = render(replication_view(meta, records, []), "markdown")
        assert f"| {wait} |" in text and f"SELECT {wait} on the replica (fetching {position}" in text
