"""A MariaDB or MySQL primary and N replicas started by the lab on 127.0.0.1, with GTID replication.

Each server is the engine's lab server of dbperf/servers (its own private directory in the run's runtime directory,
a free port, its log in DIR/logs, stopped TERM then KILL on every exit path and by the watchdog if the lab is killed
hard); this module adds the roles' settings and the replication itself, in the engine's SQL (its BinlogDialect:
mariadb_binlog.py, mysql_binlog.py). The lab's control statements (CHANGE MASTER / CHANGE REPLICATION SOURCE, SHOW
SLAVE / REPLICA STATUS, the apply study's GTID wait) go through PyMySQL, one connection per server; the measured
loads run in dbperf-driver.

Passwords: the servers share the run's random lab password (the driver's DBPERF_PASSWORD, one for the cluster). The
replication user `repl` gets a second random password, created on the primary with sql_log_bin = 0 (so that it is
not in the binlog the replicas read) and handed to each replica by CHANGE ... TO, as a bound parameter of PyMySQL;
the replica keeps it in its replication metadata in its private data directory (0700, removed at the end). Neither
password is written to a result, report or log, and error messages built here never quote a statement that holds
one.
"""

from __future__ import annotations

import contextlib
import secrets
import subprocess
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pymysql

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.replication.binlog_dialect import BinlogDialect, Statement
from dbperf.replication.mariadb_binlog import gtid_seq
from dbperf.replication.replica_set import REPL_USER, ReplicaSet, RoleServer, StudyFailed, start_server
from dbperf.servers.lifecycle import sql_string
from dbperf.servers.mariadb import MariaDBServer
from dbperf.servers.mysql import MySQLServer
from dbperf.servers.mysql_family import MySQLFamilyServer
from dbperf.servers.process import server_environ
from dbperf.servers.runtime import RuntimeDir

__all__ = ["Cluster", "ClusterServer", "gtid_seq"]

CONNECT_TIMEOUT_S = 30
CATCH_UP_TIMEOUT_S = 1800.0


class ClusterServer(RoleServer, MySQLFamilyServer):
    """The engine's lab server (a subclass below) with the role's settings after the target's own, the lab's
    control connection, and the engine's replication SQL (`dialect`)."""

    _conn: pymysql.connections.Connection | None = None

    def __init__(self, directory: Path, logs: Path, target: Target, e: Experiment, role: str,
                 role_settings: dict[str, str], dialect: BinlogDialect) -> None:
        super().__init__(directory, logs, target, e, role, role_settings)
        self.dialect = dialect

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # a connection to a server that died cannot be closed politely
                self._conn.close()
            self._conn = None

    def connection(self) -> pymysql.connections.Connection:
        """The lab's control connection (autocommit), opened on first use. No read timeout: the GTID wait has its
        own, and a server that dies closes the socket."""
        if self._conn is None:
            assert self.port is not None and self.password is not None
            try:
                self._conn = pymysql.connect(host="127.0.0.1", port=self.port, user="dbperf", password=self.password,
                                             autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
            except pymysql.MySQLError as err:
                raise StudyFailed(f"{self.target.name}: connecting: {_reason(err)}", self.log_tail()) from None
        return self._conn

    def query(self, sql: str, args: Any = None, what: str = "") -> list[Any]:
        """Rows of one statement, or StudyFailed naming the server and the step (never the statement: it may hold
        a password)."""
        try:
            with self.connection().cursor(pymysql.cursors.DictCursor) as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())
        except pymysql.MySQLError as err:
            raise self.failed(what, _reason(err)) from None

    def run(self, statements: list[Statement]) -> dict[str, str]:
        """Runs the statements; the global variables they set, read back (check_variables)."""
        for s in statements:
            self.query(s.sql, s.args, what=s.what)
        return self.check_variables({s.variable: str((s.args or ("",))[0]) for s in statements if s.variable})

    def check_variables(self, expected: Mapping[str, str]) -> dict[str, str]:
        """What SHOW GLOBAL VARIABLES says of each expected variable; a StudyFailed naming the first that is not as
        expected (a setting that did not take is an error, never ignored)."""
        if not expected:
            return {}
        marks = ", ".join(["%s"] * len(expected))
        rows = self.query(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({marks})", tuple(expected),
                          what="reading the settings back (SHOW VARIABLES)")
        shown = {str(r["Variable_name"]).lower(): str(r["Value"]) for r in rows}
        for name, want in expected.items():
            got = shown.get(name.lower())
            if got is None or not same_setting(got, want):
                raise StudyFailed(f"{self.target.name}: {name} is {got!r} after it was set to {want!r} (SHOW "
                                  "VARIABLES): the setting did not take", self.log_tail())
        return {name: shown[name.lower()] for name in expected}

    def value(self, sql: str, args: Any = None, what: str = "") -> Any:
        rows = self.query(sql, args, what)
        return next(iter(rows[0].values())) if rows else None

    def status_counters(self, names: tuple[str, ...]) -> dict[str, int]:
        """SHOW GLOBAL STATUS of `names` (the lab's own), as integers; a StudyFailed naming the first missing."""
        if not names:
            return {}
        marks = ", ".join(["%s"] * len(names))
        rows = self.query(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({marks})", names,
                          what="reading the status counters (SHOW STATUS)")
        shown = {str(r["Variable_name"]).lower(): str(r["Value"]) for r in rows}
        missing = [n for n in names if not shown.get(n.lower(), "").isdigit()]
        if missing:
            raise StudyFailed(f"{self.target.name}: SHOW GLOBAL STATUS has no counter {missing[0]}", self.log_tail())
        return {n: int(shown[n.lower()]) for n in names}

    def gtid_position(self) -> str:
        """All the server has written or applied, as its engine's GTID position (whitespace removed: MySQL breaks
        long sets with newlines)."""
        return "".join(str(self.value(self.dialect.position_sql, what=self.dialect.position_what) or "").split())

    def replica_status(self) -> dict[str, Any]:
        rows = self.query(self.dialect.status, what=self.dialect.status)
        return rows[0] if rows else {}


class MariaDBClusterServer(ClusterServer, MariaDBServer):
    pass


class MySQLClusterServer(ClusterServer, MySQLServer):
    pass


# The cluster's server class of each engine the binlog kind replicates, by the engine's name.
CLUSTER_SERVERS: dict[str, type[ClusterServer]] = {cls.engine: cls for cls in (MariaDBClusterServer,
                                                                                MySQLClusterServer)}


def same_setting(shown: str, wanted: str) -> bool:
    """Whether SHOW VARIABLES' value is the one set: case aside (ON, InnoDB), and a list as a set (the engines of
    gtid_pos_auto_engines)."""
    return _parts(shown) == _parts(wanted)


def _parts(value: str) -> frozenset[str]:
    return frozenset(p.strip().lower() for p in value.split(","))


def _reason(err: pymysql.MySQLError) -> str:
    args: tuple[Any, ...] = tuple(getattr(err, "args", ()))
    if len(args) >= 2:
        return f"{args[1]} (error {args[0]})"
    return str(err) or type(err).__name__


class Cluster(ReplicaSet[ClusterServer]):
    """The primary and its replicas, in `runtime`'s target directories t1 (primary), t2... (replicas)."""

    def __init__(self, runtime: RuntimeDir, logs: Path, target: Target, e: Experiment, replicas: int,
                 durability: str, dialect: BinlogDialect, rocksdb: bool = False) -> None:
        if rocksdb:  # the cross-engine study: MyRocks loaded on every server
            target = replace(target, config={**target.config, "plugin_load_add": "ha_rocksdb"})
        self.dialect = dialect
        server = CLUSTER_SERVERS[target.engine]
        self.primary = server(runtime.target_dir(1), logs, target, e, "primary", dict(dialect.primary_settings),
                              dialect)
        self.replicas = [server(runtime.target_dir(i + 2), logs, target, e, f"replica{i + 1}",
                                dialect.replica_settings(i, durability), dialect) for i in range(replicas)]
        for r in self.replicas:
            r.password = self.primary.password  # one lab password for the cluster (the driver's DBPERF_PASSWORD)
        self.repl_password = secrets.token_urlsafe(24)
        self.durability = durability
        self._source: str | None = None

    def start(self) -> None:
        """Primary, then each replica, then replication; UserError naming the server and step, with its log line.
        Each server's role settings are read back (SHOW VARIABLES): one that did not take is a StudyFailed."""
        start_server(self.primary, "the primary")
        self.primary.check_variables(self.dialect.shown(self.primary.role_settings))
        self._create_replication_user()
        for r in self.replicas:
            self.start_replica(r, first=True)

    def replication_user_sql(self) -> str:
        """`repl`, allowed REPLICATION SLAVE only (MySQL keeps the privilege's name), with a password of its own;
        with sql_log_bin = 0, so that the statements are not in the binlog the replicas read."""
        user = f"'{REPL_USER}'@'127.0.0.1'"
        return ("SET SESSION sql_log_bin = 0;\n"
                f"CREATE USER IF NOT EXISTS {user};\n"
                f"ALTER USER {user} IDENTIFIED BY {sql_string(self.repl_password, 'the replication password')};\n"
                f"GRANT REPLICATION SLAVE ON *.* TO {user};\n")

    def _create_replication_user(self) -> None:
        """The lab's `dbperf` user may not GRANT, so this runs as the server's root over its Unix socket (socket
        authentication on MariaDB; MySQL's root has no password after --initialize-insecure, and the socket is
        the lab's, in a 0700 directory), the SQL on standard input, never on a command line."""
        client = self.dialect.root_client(self.primary.target.binaries)
        if client is None:
            raise UserError(self.dialect.no_client)
        socket = self.primary.dir / "data" / self.primary.socket_name
        proc = subprocess.run([str(client), "--no-defaults", f"--socket={socket}", "--user=root", "--batch"],
                              input=self.replication_user_sql(), capture_output=True, text=True, timeout=120,
                              env=server_environ(), cwd="/")
        if proc.returncode != 0:
            lines = proc.stderr.strip().splitlines()
            raise UserError(f"creating the replication user on {self.primary.target.name!r} (as root over its "
                            f"socket): {lines[-1] if lines else f'exit {proc.returncode}'}")

    def start_replica(self, r: ClusterServer, first: bool, slave_pos: str | None = None) -> None:
        start_server(r, "replica")
        d = self.dialect
        try:
            r.check_variables(d.shown(r.role_settings))  # the durability (and cross-engine) settings took
            if first:
                # The replica starts from the primary's current position: what the primary holds so far (the lab's
                # own user, the empty sbtest_pristine, which the replica created itself) is not replayed.
                if d.reset_own_binlog and "log_bin" in r.role_settings:  # its own GTIDs would conflict
                    r.query(d.reset_own_binlog, what="clearing the replica's own binlog")
                r.run(d.start_from(self.primary.gtid_position()))
                r.query(d.change_source, (self.primary.port, REPL_USER, self.repl_password),
                        what=d.change_source_what)
            if slave_pos is not None:  # the cross-engine study (MariaDB's)
                r.query("SET GLOBAL gtid_slave_pos = %s", (slave_pos,), what="restoring gtid_slave_pos")
            r.query(d.start, what=d.start)
            self.wait_connected(r)
        except StudyFailed as err:
            raise UserError(f"setting up replica {r.target.name!r}: {err}") from None

    def wait_connected(self, r: ClusterServer, timeout_s: float = 60.0) -> None:
        """Until the replica's I/O thread is connected to the primary; a StudyFailed quoting its error otherwise."""
        d = self.dialect
        deadline = time.monotonic() + timeout_s
        while True:
            status = r.replica_status()
            if status.get(d.io_running) == "Yes" and status.get(d.sql_running) == "Yes":
                return
            error = status.get("Last_IO_Error") or status.get("Last_SQL_Error")
            if error and status.get(d.io_running) == "No":
                raise StudyFailed(f"the replication thread did not start: {error}", r.log_tail())
            if time.monotonic() > deadline:
                raise StudyFailed(f"the replica did not connect to the primary within {timeout_s:.0f} s (I/O "
                                  f"thread: {status.get(d.io_state) or status.get(d.io_running)}; "
                                  f"{error or 'no error reported'})", r.log_tail())
            time.sleep(0.1)

    def restart_replica(self, r: ClusterServer, durability: str, extra: dict[str, str] | None = None,
                        slave_pos: str | None = None) -> None:
        """The replica again with another durability (the binlog and logging the replica's updates need a
        restart)."""
        index = self.replicas.index(r)
        r.stop()
        r.set_role_settings({**self.dialect.replica_settings(index, durability), **(extra or {})})
        self.start_replica(r, first=False, slave_pos=slave_pos)

    def set_durability(self, durability: str) -> None:
        if durability == self.durability:
            return
        for r in self.replicas:
            self.restart_replica(r, durability)
        self.durability = durability

    def revive_replica(self, r: ClusterServer) -> None:
        self.start_replica(r, first=False)

    def transactions(self, before: str, after: str) -> int:
        """The transactions the primary wrote between two of its positions (its own GTIDs: MariaDB's server_id in
        domain 0, MySQL's server_uuid)."""
        if self._source is None:
            sql = self.dialect.source_sql
            self._source = (str(self.primary.value(sql, what="reading the primary's GTID source")) if sql
                            else self.primary.role_settings["server_id"])
        return self.dialect.transactions(before, after, self._source)

    def wait_caught_up(self, r: ClusterServer, pos: str, timeout_s: float = CATCH_UP_TIMEOUT_S) -> float:
        """The engine's GTID wait on the replica until it has applied `pos`; the seconds it took. StudyFailed if it
        times out, the replica dies or its SQL thread stops with an error."""
        d = self.dialect
        started = time.perf_counter()
        waited = r.value(d.wait_sql, (pos, timeout_s), what=f"waiting for the replica to catch up ({d.wait_name})")
        elapsed = time.perf_counter() - started
        if waited != 0:
            status = r.replica_status()
            raise StudyFailed(f"{r.target.name}: did not reach {pos} within {timeout_s:.0f} s"
                              f"{d.wait_failure(waited)} (SQL thread {status.get(d.sql_running)}: "
                              f"{status.get('Last_SQL_Error') or 'no error'})", r.log_tail())
        return elapsed

    def all_caught_up(self) -> None:
        pos = self.primary.gtid_position()
        for r in self.replicas:
            self.wait_caught_up(r, pos)
