"""The cross-engine study ([Nielsen 2017-05-12]): what a replica's apply costs when the replicated tables use one
storage engine (MyRocks, Debian's mariadb-plugin-rocksdb) and the replica's GTID state (mysql.gtid_slave_pos) another
(InnoDB, the default): every replicated commit then spans two engines. Three ways of keeping the state, as
[Nielsen 2017-05-12]'s three bars: `innodb` (cross-engine), `auto` (gtid_pos_auto_engines = innodb,rocksdb: a state
table per engine, MDEV-12179), `rocksdb` (mysql.gtid_slave_pos itself in MyRocks); each with and without fsync on commit
(binlog, InnoDB and MyRocks together). The apply is timed as in apply_rate.py, with one SQL thread (workers = 0), on the
experiment's first benchmark and thread count; the primary logs rows (MyRocks refuses statement-based logging).

Switching the state's engine: the replica's slave threads stopped, its @@gtid_slave_pos saved, the per-engine table
of an earlier `auto` dropped and mysql.gtid_slave_pos altered (sql_log_bin = 0, the replica's own business), the
replica restarted with the setting, the saved position set again before START SLAVE, so that nothing is applied
twice or skipped. The settings (SHOW VARIABLES) and the state table's engine are read back after the restart (one that
did not take fails the study); each way is then measured `repeats` times."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from dbperf.experiment.binlog_rules import CROSS_ENGINE_DURABILITY
from dbperf.experiment.model import Experiment
from dbperf.experiment.replication_section import ReplicationSpec
from dbperf.records import ApplyRecord
from dbperf.replication.apply_rate import measure
from dbperf.replication.apply_study import ApplyPlan, apply_record
from dbperf.replication.cluster import Cluster, ClusterServer
from dbperf.replication.replica_set import StudyFailed

STATES = ("innodb", "auto", "rocksdb")
TABLE_ENGINE = "rocksdb"


def configure(cluster: Cluster, r: ClusterServer, state: str, fsync: str) -> None:
    r.query("STOP SLAVE", what="STOP SLAVE")
    saved = str(r.value("SELECT @@GLOBAL.gtid_slave_pos", what="reading gtid_slave_pos") or "")
    r.query("SET SESSION sql_log_bin = 0", what="moving the GTID state")
    r.query("DROP TABLE IF EXISTS mysql.gtid_slave_pos_rocksdb, mysql.gtid_slave_pos_innodb",
            what="dropping the per-engine GTID state tables")
    r.query(f"ALTER TABLE mysql.gtid_slave_pos ENGINE = {'ROCKSDB' if state == 'rocksdb' else 'InnoDB'}",
            what=f"moving mysql.gtid_slave_pos to {state}")
    r.query("SET SESSION sql_log_bin = 1", what="moving the GTID state")
    extra = {"gtid_pos_auto_engines": "innodb,rocksdb"} if state == "auto" else {}
    cluster.restart_replica(r, fsync, extra, slave_pos=saved)  # reads its settings back
    cluster.durability = fsync
    engine = str(r.value("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'mysql' AND "
                         "TABLE_NAME = 'gtid_slave_pos'", what="reading mysql.gtid_slave_pos's engine") or "")
    if engine.lower() != ("rocksdb" if state == "rocksdb" else "innodb"):
        raise StudyFailed(f"{r.target.name}: mysql.gtid_slave_pos is in {engine or 'no engine'} after it was moved "
                          f"for the GTID state {state!r}: the move did not take", r.log_tail())


def run_cross_engine_study(cluster: Cluster, e: Experiment, spec: ReplicationSpec,
                           write: Callable[[ApplyRecord], None], step: Callable[[str], None]) -> None:
    primary, measured = cluster.primary, cluster.replicas[0]
    benchmark, threads = e.benchmarks[0], e.threads[0]
    current: ApplyPlan | None = None
    state = STATES[0]
    try:
        step("cross-engine: moving the sbtest tables to MyRocks (replicated)")
        binlog_format = primary.value("SELECT @@GLOBAL.binlog_format", what="reading binlog_format")
        primary.query("SET GLOBAL binlog_format = 'ROW'", what="setting binlog_format = ROW")
        for t in range(1, e.tables + 1):
            primary.query(f"ALTER TABLE sbtest.sbtest{t} ENGINE = ROCKSDB", what="moving the tables to MyRocks")
        cluster.all_caught_up()
        for fsync in CROSS_ENGINE_DURABILITY:
            for state in STATES:
                current = ApplyPlan(fsync, spec.commit_wait_counts[0], benchmark, threads, 1, 0, "serial")
                step(f"cross-engine: the replica restarted with its GTID state in {state}, {fsync}")
                configure(cluster, measured, state, fsync)
                for repeat in range(1, spec.repeats + 1):  # restarting the replica is the costly part: once
                    current = replace(current, repeat=repeat)
                    step(f"cross-engine: tables {TABLE_ENGINE}, GTID state {state}, {fsync} #{repeat}")
                    record = measure(cluster, e, spec, current)
                    record.state_engine, record.table_engine = state, TABLE_ENGINE
                    write(record)
        step("cross-engine: the sbtest tables back to InnoDB for the studies after this one")
        for t in range(1, e.tables + 1):
            primary.query(f"ALTER TABLE sbtest.sbtest{t} ENGINE = InnoDB", what="moving the tables back to InnoDB")
        primary.query("SET GLOBAL binlog_format = %s", (binlog_format,), what="restoring binlog_format")
        cluster.all_caught_up()
    except StudyFailed as err:
        failed = current or ApplyPlan("fsync", spec.commit_wait_counts[0], benchmark, threads, 1, 0, "serial")
        write(apply_record(measured.target.name, failed, "failed", (failed.commit_wait_count, spec.commit_wait_usec),
                           error=str(err), server_log_tail=err.log_tail or None, state_engine=state,
                           table_engine=TABLE_ENGINE))
        raise
