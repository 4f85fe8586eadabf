"""MariaDB's binlog replication as the cluster and studies speak it (binlog_dialect.py): GTIDs `domain-server-seq`
(gtid_binlog_pos, gtid_slave_pos), CHANGE MASTER ... MASTER_USE_GTID = slave_pos, SHOW SLAVE STATUS, MASTER_GTID_WAIT
(0 reached, -1 timed out), slave_parallel_threads × slave_parallel_mode, binlog_commit_wait_count/_usec."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dbperf.engines.mariadb import MARIADB
from dbperf.experiment.binlog_rules import CROSS_ENGINE_DURABILITY, DURABILITY
from dbperf.replication.binlog_dialect import BinlogDialect, Statement, set_global

# The primary generates the load fast (non-durable commits); the studies vary the replica's durability.
PRIMARY_SETTINGS = {"server_id": "1", "log_bin": "primary-bin", "sync_binlog": "0",
                    "innodb_flush_log_at_trx_commit": "2"}


def gtid_seq(pos: str, server_id: int = 1) -> int:
    """The sequence number of domain 0's GTID from server `server_id` in a GTID position ("0-1-1234,..."), 0 if
    none."""
    for part in pos.split(","):
        fields = part.strip().split("-")
        if len(fields) == 3 and fields[0] == "0" and fields[1] == str(server_id):
            return int(fields[2])
    return 0


def transactions(before: str, after: str, server_id: str) -> int:
    return gtid_seq(after, int(server_id)) - gtid_seq(before, int(server_id))


def start_from(pos: str) -> list[Statement]:
    return [Statement("SET GLOBAL gtid_slave_pos = %s", (pos,), "setting gtid_slave_pos")]


def io_fetched(status: Mapping[str, Any], pos: str) -> bool:
    return str(status.get("Gtid_IO_Pos", "")) == pos


def io_position(status: Mapping[str, Any]) -> str:
    return str(status.get("Gtid_IO_Pos"))


def parallel(workers: int, mode: str | None) -> list[Statement]:
    statements = [set_global("slave_parallel_threads", workers)]
    if mode is not None:
        statements.append(set_global("slave_parallel_mode", mode))
    return statements


def commit_wait(count: int, usec: int) -> list[Statement]:
    return [set_global("binlog_commit_wait_count", count), set_global("binlog_commit_wait_usec", usec)]


# The role settings whose values SHOW VARIABLES says as they are written in my.cnf (log_bin, a file name there, reads
# ON or OFF).
SHOWN = ("log_slave_updates", "sync_binlog", "innodb_flush_log_at_trx_commit", "rocksdb_flush_log_at_trx_commit",
         "gtid_pos_auto_engines")


def shown(settings: Mapping[str, str]) -> dict[str, str]:
    return {"log_bin": "ON" if "log_bin" in settings else "OFF", **{k: settings[k] for k in SHOWN if k in settings}}


def replica_settings(index: int, durability: str) -> dict[str, str]:
    return {"server_id": str(index + 2), "skip_slave_start": "ON", "relay_log": "relay-bin",
            **{**DURABILITY, **CROSS_ENGINE_DURABILITY}[durability]}


def root_client(binaries: str | None) -> Path | None:
    found = shutil.which("mariadb") or shutil.which("mysql")
    return Path(found) if found else None


# What closed each of the primary's binlog groups (MariaDB 10.0 on): the wait's count reached, its timeout, or the
# previous group's lock released; the report says them by these words.
GROUP_CLOSED = {"count": "Binlog_group_commit_trigger_count", "timeout": "Binlog_group_commit_trigger_timeout",
                "lock_wait": "Binlog_group_commit_trigger_lock_wait"}

DIALECT = BinlogDialect(
    engine=MARIADB.name,
    start="START SLAVE", stop="STOP SLAVE", start_io="START SLAVE IO_THREAD", start_sql="START SLAVE SQL_THREAD",
    stop_sql="STOP SLAVE SQL_THREAD", status="SHOW SLAVE STATUS",
    io_running="Slave_IO_Running", sql_running="Slave_SQL_Running", io_state="Slave_IO_State",
    change_source=("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %s, MASTER_USER = %s, "
                   "MASTER_PASSWORD = %s, MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1"),
    change_source_what="CHANGE MASTER TO",
    position_sql="SELECT @@GLOBAL.gtid_binlog_pos", position_what="reading gtid_binlog_pos",
    start_from=start_from,
    reset_own_binlog="RESET MASTER",
    source_sql=None,
    transactions=transactions,
    io_fetched=io_fetched, io_position=io_position,
    wait_sql="SELECT MASTER_GTID_WAIT(%s, %s)", wait_name="MASTER_GTID_WAIT", wait_timed_out=-1,
    stale_position="@@last_gtid",
    parallel=parallel, commit_wait=commit_wait,
    # Commits, the groups they were written in, and what closed each group: the wait's count reached, its time out,
    # or the previous group's lock released (MariaDB 10.0 on).
    group_commit_counters=("Binlog_commits", "Binlog_group_commits", *GROUP_CLOSED.values()),
    primary_settings=PRIMARY_SETTINGS, replica_settings=replica_settings, shown=shown,
    root_client=root_client, no_client="the mariadb client is not installed (apt install mariadb-client)",
)
