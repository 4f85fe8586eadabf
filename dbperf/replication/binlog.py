"""MariaDB's and MySQL's binlog replicas as a kind of replication (kind.py): GTID replication from a primary to N
replicas that apply in parallel (cluster.py), its apply-rate study (apply_rate.py), stale reads against the engine's
GTID wait (stale_reads.py) and, on MariaDB, the cross-engine commits of [Nielsen 2017-05-12] (cross_engine.py,
MyRocks loaded on every server). Each engine's SQL is its dialect (mariadb_binlog.py, mysql_binlog.py), picked here
by the target's engine. Its section's rules: dbperf/experiment/binlog_rules.py."""

from __future__ import annotations

from pathlib import Path

from dbperf.errors import UserError
from dbperf.experiment import binlog_rules
from dbperf.experiment.model import Experiment, Target
from dbperf.experiment.replication_section import ReplicationSpec
from dbperf.replication import mariadb_binlog, mysql_binlog
from dbperf.replication.apply_rate import run_apply_study
from dbperf.replication.binlog_dialect import BinlogDialect
from dbperf.replication.cluster import Cluster
from dbperf.replication.cross_engine import run_cross_engine_study
from dbperf.replication.kind import ReplicationKind
from dbperf.replication.stale_reads import run_stale_study
from dbperf.servers.runtime import RuntimeDir

# The binlog kind's engines' SQL, by the engine's name (Engine.replication names this kind).
DIALECTS: dict[str, BinlogDialect] = {d.engine: d for d in (mariadb_binlog.DIALECT, mysql_binlog.DIALECT)}
APPLY_NOTE = ("apply: the replica's SQL thread stopped while the primary wrote (its I/O thread fetched the "
              "events), then START SLAVE SQL_THREAD + MASTER_GTID_WAIT(primary's last GTID) timed on one connection "
              "(MySQL: START REPLICA SQL_THREAD + WAIT_FOR_EXECUTED_GTID_SET(primary's gtid_executed)); "
              "trx/s = GTIDs the primary wrote / that time. The primary commits non-durably "
              "(innodb_flush_log_at_trx_commit = 2, sync_binlog = 0) so that it generates the load fast.")


def check_rocksdb(target: Target) -> None:
    """MyRocks is a plugin of its own Debian package; where the server's plugins are is its package's layout."""
    binaries = Path(target.binaries or "/usr/sbin/mariadbd")
    candidates = [Path("/usr/lib/mysql/plugin"), binaries.parent.parent / "lib" / "plugin"]
    if not any((d / "ha_rocksdb.so").is_file() for d in candidates):
        raise UserError(f"the cross-engine study needs MyRocks (ha_rocksdb.so not found in "
                        f"{' or '.join(str(d) for d in candidates)}; apt install mariadb-plugin-rocksdb)")


def cluster(runtime: RuntimeDir, logs: Path, target: Target, e: Experiment, spec: ReplicationSpec) -> Cluster:
    """The cross-engine study loads MyRocks on every server: refused at once when it is not installed."""
    rocksdb = "cross-engine" in spec.studies
    if rocksdb:
        check_rocksdb(target)
    return Cluster(runtime, logs, target, e, spec.replicas, spec.durability[0], DIALECTS[target.engine],
                   rocksdb=rocksdb)


KIND = ReplicationKind(
    name=binlog_rules.RULES.name, rules=binlog_rules.RULES, cluster=cluster,
    studies={"apply": run_apply_study, "stale-reads": run_stale_study, "cross-engine": run_cross_engine_study},
    apply_method=APPLY_NOTE, replica="replica")
