"""What differs between MariaDB's and MySQL's binlog replication, in one typed object per engine (mariadb_binlog.py,
mysql_binlog.py): the statements, the status columns, the GTID position's form and how transactions are counted in
it, the wait, and the servers' settings. The binlog kind's cluster (cluster.py) and studies (apply_rate.py,
stale_reads.py) ask their cluster's dialect instead of branching on the engine.

A statement is (SQL, its bound arguments, what it does for an error message, the global variable it sets if it is a
SET GLOBAL, read back after it); an error message never quotes the SQL, which may hold a password (CHANGE ... TO)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple


class Statement(NamedTuple):
    sql: str
    args: tuple[Any, ...] | None
    what: str
    variable: str | None = None  # the global variable it sets, read back with SHOW VARIABLES after it (cluster.py)


def set_global(name: str, value: Any) -> Statement:
    """SET GLOBAL `name` (the lab's own variable names, never a user's) to `value`, read back after it."""
    return Statement(f"SET GLOBAL {name} = %s", (value,), f"setting {name}", name)


@dataclass(frozen=True)
class BinlogDialect:
    engine: str  # the engine's name, as its descriptor gives it
    # Replication threads: all, the I/O thread alone, the SQL (applier) thread alone, and their status.
    start: str  # START SLAVE / START REPLICA
    stop: str
    start_io: str
    start_sql: str
    stop_sql: str
    status: str  # SHOW SLAVE STATUS / SHOW REPLICA STATUS: one row, or none before replication is set up
    io_running: str  # the status columns: "Yes" while the thread runs
    sql_running: str
    io_state: str
    # Pointing a replica at the primary: the statement with (port, user, password) bound, and its name for messages.
    change_source: str
    change_source_what: str
    # The server's GTID position (all it has written or applied), read on the primary, and what is waited for.
    position_sql: str
    position_what: str
    # Statements that make a new replica take everything in the primary's position `pos` as applied, so that what
    # the primary held before replication (the lab's user, the empty sbtest_pristine the replica made itself) is not
    # replayed.
    start_from: Callable[[str], list[Statement]]
    # Run on a new replica that writes a binlog before `start_from`, where its own GTIDs would conflict; None: none.
    reset_own_binlog: str | None
    # The primary's own GTID source: SQL that reads it, or None where it is the primary's server_id setting.
    source_sql: str | None
    # Transactions the primary (of source id) wrote between two positions.
    transactions: Callable[[str, str, str], int]
    # The apply study: whether a replica's I/O thread has fetched `pos`, from its status row; what it has fetched.
    io_fetched: Callable[[Mapping[str, Any], str], bool]
    io_position: Callable[[Mapping[str, Any]], str]
    # The wait for a position on a replica: SQL with (position, timeout in seconds) bound; 0 is reached, and
    # wait_timed_out what it returns when the timeout passed first.
    wait_sql: str
    wait_name: str
    wait_timed_out: int
    stale_position: str  # what the stale-read probe waits for after its write (driver/src/stale/), for the report
    # The apply study's settings on a stopped replica: its workers and, unless None (one SQL thread), its mode.
    parallel: Callable[[int, str | None], list[Statement]]
    # The primary's group-commit wait (binlog_commit_wait_count and _usec of the [replication] section).
    commit_wait: Callable[[int, int], list[Statement]]
    # The primary's counters (SHOW GLOBAL STATUS) of its binlog group commit, read before and after each load, so
    # that a record says how large the groups were and what closed them; () where the engine has none.
    group_commit_counters: tuple[str, ...]
    # Servers' settings: the primary's, and a replica's (its index from 0, its durability variant).
    primary_settings: Mapping[str, str]
    replica_settings: Callable[[int, str], dict[str, str]]
    # What SHOW GLOBAL VARIABLES must say on a server started with these role settings (its durability, the
    # cross-engine study's settings): checked after every start, a setting that did not take is an error.
    shown: Callable[[Mapping[str, str]], dict[str, str]]
    # The command-line client that runs root's statements over the primary's socket, given the target's binaries
    # (None: the engine's default); None when there is none.
    root_client: Callable[[str | None], Path | None]
    no_client: str  # the error when root_client finds none

    def wait_failure(self, value: Any) -> str:
        """What a wait that did not return 0 adds to the message: nothing for a timeout, else what it returned."""
        return "" if value == self.wait_timed_out else f" ({self.wait_name} returned {value!r})"
