"""MySQL's binlog replication as the cluster and studies speak it (binlog_dialect.py), MySQL 8.0.26 or later (the
REPLICA/SOURCE statements and settings): GTID sets `server_uuid:1-N` (gtid_executed), CHANGE REPLICATION SOURCE TO
... SOURCE_AUTO_POSITION = 1, SHOW REPLICA STATUS, WAIT_FOR_EXECUTED_GTID_SET (0 reached, 1 timed out),
replica_parallel_workers × replica_preserve_commit_order, the group commit's binlog_group_commit_sync_delay."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dbperf.engines.mysql import MYSQL
from dbperf.replication.binlog_dialect import BinlogDialect, Statement, set_global
from dbperf.replication.gtid_set import is_subset, transactions_between
from dbperf.servers.mysql import mysqld_of

GTIDS = {"gtid_mode": "ON", "enforce_gtid_consistency": "ON"}  # on every server: auto-positioning needs GTIDs
# The primary generates the load fast (non-durable commits); the studies vary the replica's durability.
PRIMARY_SETTINGS = {"server_id": "1", "log_bin": "primary-bin", "log_replica_updates": "ON", "sync_binlog": "0",
                    "innodb_flush_log_at_trx_commit": "2", **GTIDS}
# [Nielsen 2014-03-13]'s four durability settings (binlog_rules.DURABILITY) in MySQL's names. MySQL writes a binlog
# unless told not to: `skip-log-bin` (my_getopt's skip- prefix disables whatever value follows it).
DURABILITY: dict[str, dict[str, str]] = {
    "binlog-crash-safe": {"log_bin": "replica-bin", "log_replica_updates": "ON", "sync_binlog": "1",
                          "innodb_flush_log_at_trx_commit": "1"},
    "no-binlog-durable": {"skip-log-bin": "ON", "innodb_flush_log_at_trx_commit": "1"},
    "no-binlog-nondurable": {"skip-log-bin": "ON", "innodb_flush_log_at_trx_commit": "2"},
    "binlog-non-crash-safe": {"log_bin": "replica-bin", "log_replica_updates": "ON", "sync_binlog": "0",
                              "innodb_flush_log_at_trx_commit": "0"},
}
# The section's modes (binlog_rules.MYSQL_MODES) as replica_preserve_commit_order: whether the workers commit in the
# primary's order (MySQL's default) or as they finish.
COMMIT_ORDER = {"commit-order": "ON", "any-order": "OFF"}


def start_from(pos: str) -> list[Statement]:
    """The primary's GTIDs added to the replica's gtid_purged (`+`: beside its own, which are the replica's uuid's
    and never overlap), so that auto-positioning does not ask for them."""
    if not pos:
        return []
    return [Statement("SET GLOBAL gtid_purged = %s", ("+" + pos,), "adding the primary's GTIDs to gtid_purged")]


def io_fetched(status: Mapping[str, Any], pos: str) -> bool:
    """Retrieved_Gtid_Set holds what the I/O thread fetched since it started; what the replica applied before (its
    gtid_purged among it) is in Executed_Gtid_Set."""
    return is_subset(pos, str(status.get("Retrieved_Gtid_Set") or ""), str(status.get("Executed_Gtid_Set") or ""))


def io_position(status: Mapping[str, Any]) -> str:
    return "".join(str(status.get("Retrieved_Gtid_Set")).split())


def parallel(workers: int, mode: str | None) -> list[Statement]:
    statements = [set_global("replica_parallel_workers", workers)]
    if mode is not None:
        statements.append(set_global("replica_preserve_commit_order", COMMIT_ORDER[mode]))
    return statements


def commit_wait(count: int, usec: int) -> list[Statement]:
    """MariaDB's binlog_commit_wait (wait up to usec for count commits) as MySQL's group commit: the binlog's sync
    delayed up to binlog_group_commit_sync_delay µs, or until binlog_group_commit_sync_no_delay_count commits; no
    delay at count 0, as MariaDB."""
    return [set_global("binlog_group_commit_sync_no_delay_count", count),
            set_global("binlog_group_commit_sync_delay", usec if count else 0)]


# The role settings whose values SHOW VARIABLES says as they are written in my.cnf (log_bin, a file name there, reads
# ON, or OFF under skip-log-bin).
SHOWN = ("log_replica_updates", "sync_binlog", "innodb_flush_log_at_trx_commit")


def shown(settings: Mapping[str, str]) -> dict[str, str]:
    return {"log_bin": "OFF" if "skip-log-bin" in settings else "ON",
            **{k: settings[k] for k in SHOWN if k in settings}}


def replica_settings(index: int, durability: str) -> dict[str, str]:
    return {"server_id": str(index + 2), "skip_replica_start": "ON", "relay_log": "relay-bin", **GTIDS,
            **DURABILITY[durability]}


def root_client(binaries: str | None) -> Path | None:
    """The install's own client beside its mysqld (it speaks every authentication MySQL's root may use), else one
    on the PATH."""
    if binaries:
        own = mysqld_of(Path(binaries)).parent / "mysql"
        if own.is_file():
            return own
    found = shutil.which("mysql") or shutil.which("mariadb")
    return Path(found) if found else None


DIALECT = BinlogDialect(
    engine=MYSQL.name,
    start="START REPLICA", stop="STOP REPLICA", start_io="START REPLICA IO_THREAD",
    start_sql="START REPLICA SQL_THREAD", stop_sql="STOP REPLICA SQL_THREAD", status="SHOW REPLICA STATUS",
    io_running="Replica_IO_Running", sql_running="Replica_SQL_Running", io_state="Replica_IO_State",
    # caching_sha2_password over TCP without TLS sends the password RSA-encrypted: the replica asks for the key.
    change_source=("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '127.0.0.1', SOURCE_PORT = %s, SOURCE_USER = %s, "
                   "SOURCE_PASSWORD = %s, SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 1, "
                   "GET_SOURCE_PUBLIC_KEY = 1"),
    change_source_what="CHANGE REPLICATION SOURCE TO",
    position_sql="SELECT @@GLOBAL.gtid_executed", position_what="reading gtid_executed",
    start_from=start_from,
    reset_own_binlog=None,
    source_sql="SELECT @@GLOBAL.server_uuid",
    transactions=transactions_between,
    io_fetched=io_fetched, io_position=io_position,
    wait_sql="SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %s)", wait_name="WAIT_FOR_EXECUTED_GTID_SET", wait_timed_out=1,
    stale_position="@@GLOBAL.gtid_executed",
    parallel=parallel, commit_wait=commit_wait,
    group_commit_counters=(),  # MySQL keeps no counter of its binlog's groups
    primary_settings=PRIMARY_SETTINGS, replica_settings=replica_settings, shown=shown,
    root_client=root_client, no_client="no mysql client found (beside the target's mysqld, or on the PATH)",
)
