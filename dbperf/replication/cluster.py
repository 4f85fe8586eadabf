"""A MariaDB primary and N replicas started by the lab on 127.0.0.1, with GTID replication.

Each server is a `MariaDBServer` of dbperf/servers (its own private directory in the run's runtime directory, a
free port, its log in DIR/logs, stopped TERM then KILL on every exit path and by the watchdog if the lab is killed
hard); this module adds the roles' settings and the replication itself. The lab's control statements (CHANGE
MASTER, SHOW SLAVE STATUS, MASTER_GTID_WAIT of the apply study) go through PyMySQL, one connection per server; the
measured loads run in dbperf-driver.

Passwords: the servers share the run's random lab password (the driver's DBPERF_PASSWORD, one for the cluster). The
replication user `repl` gets a second random password, created on the primary with sql_log_bin = 0 (so that it is
not in the binlog the replicas read) and handed to each replica by CHANGE MASTER, as a bound parameter of PyMySQL;
the replica keeps it in master.info in its private data directory (0700, removed at the end). Neither password is
written to a result, report or log, and error messages built here never quote a statement that holds one.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pymysql

from dbperf.errors import UserError
from dbperf.experiment.binlog_rules import CROSS_ENGINE_DURABILITY, DURABILITY
from dbperf.experiment.model import Experiment, Target
from dbperf.replication.replica_set import REPL_USER, ReplicaSet, RoleServer, StudyFailed, start_server
from dbperf.servers.lifecycle import sql_string
from dbperf.servers.mariadb import MariaDBServer
from dbperf.servers.process import server_environ
from dbperf.servers.runtime import RuntimeDir

CONNECT_TIMEOUT_S = 30
CATCH_UP_TIMEOUT_S = 1800.0
# The primary generates the load fast (non-durable commits); the studies vary the replica's durability.
PRIMARY_SETTINGS = {"server_id": "1", "log_bin": "primary-bin", "sync_binlog": "0",
                    "innodb_flush_log_at_trx_commit": "2"}


class ClusterServer(RoleServer, MariaDBServer):
    """A MariaDBServer with the role's settings after the target's own, and the lab's control connection."""

    _conn: pymysql.connections.Connection | None = None

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # a connection to a server that died cannot be closed politely
                self._conn.close()
            self._conn = None

    def connection(self) -> pymysql.connections.Connection:
        """The lab's control connection (autocommit), opened on first use. No read timeout: MASTER_GTID_WAIT has its
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

    def value(self, sql: str, args: Any = None, what: str = "") -> Any:
        rows = self.query(sql, args, what)
        return next(iter(rows[0].values())) if rows else None

    def gtid_binlog_pos(self) -> str:
        return str(self.value("SELECT @@GLOBAL.gtid_binlog_pos", what="reading gtid_binlog_pos") or "")

    def slave_status(self) -> dict[str, Any]:
        rows = self.query("SHOW SLAVE STATUS", what="SHOW SLAVE STATUS")
        return rows[0] if rows else {}


def _reason(err: pymysql.MySQLError) -> str:
    args: tuple[Any, ...] = tuple(getattr(err, "args", ()))
    if len(args) >= 2:
        return f"{args[1]} (error {args[0]})"
    return str(err) or type(err).__name__


def gtid_seq(pos: str, server_id: int = 1) -> int:
    """The sequence number of domain 0's GTID from server `server_id` in a GTID position ("0-1-1234,..."), 0 if
    none."""
    for part in pos.split(","):
        fields = part.strip().split("-")
        if len(fields) == 3 and fields[0] == "0" and fields[1] == str(server_id):
            return int(fields[2])
    return 0


class Cluster(ReplicaSet[ClusterServer]):
    """The primary and its replicas, in `runtime`'s target directories t1 (primary), t2... (replicas)."""

    def __init__(self, runtime: RuntimeDir, logs: Path, target: Target, e: Experiment, replicas: int,
                 durability: str, rocksdb: bool = False) -> None:
        if rocksdb:  # the cross-engine study: MyRocks loaded on every server
            target = replace(target, config={**target.config, "plugin_load_add": "ha_rocksdb"})
        self.primary = ClusterServer(runtime.target_dir(1), logs, target, e, "primary", PRIMARY_SETTINGS)
        self.replicas = [ClusterServer(runtime.target_dir(i + 2), logs, target, e, f"replica{i + 1}",
                                       self.replica_settings(i, durability)) for i in range(replicas)]
        for r in self.replicas:
            r.password = self.primary.password  # one lab password for the cluster (the driver's DBPERF_PASSWORD)
        self.repl_password = secrets.token_urlsafe(24)
        self.durability = durability

    @staticmethod
    def replica_settings(index: int, durability: str) -> dict[str, str]:
        return {"server_id": str(index + 2), "skip_slave_start": "ON", "relay_log": "relay-bin",
                **{**DURABILITY, **CROSS_ENGINE_DURABILITY}[durability]}

    def start(self) -> None:
        """Primary, then each replica, then replication; UserError naming the server and step, with its log line."""
        start_server(self.primary, "the primary")
        self._create_replication_user()
        for r in self.replicas:
            self.start_replica(r, first=True)

    def _create_replication_user(self) -> None:
        """`repl`, allowed REPLICATION SLAVE only, with a password of its own. The lab's `dbperf` user may not GRANT,
        so this runs as the server's root over its Unix socket (socket authentication: the lab runs as root, as it
        must to start servers as the mysql user), the SQL on standard input, never on a command line; with
        sql_log_bin = 0, so that the statement is not in the binlog the replicas read."""
        client = shutil.which("mariadb") or shutil.which("mysql")
        if client is None:
            raise UserError("the mariadb client is not installed (apt install mariadb-client)")
        socket = self.primary.dir / "data" / "mariadb.sock"
        user = f"'{REPL_USER}'@'127.0.0.1'"
        sql = ("SET SESSION sql_log_bin = 0;\n"
               f"CREATE USER IF NOT EXISTS {user};\n"
               f"ALTER USER {user} IDENTIFIED BY {sql_string(self.repl_password, 'the replication password')};\n"
               f"GRANT REPLICATION SLAVE ON *.* TO {user};\n")
        proc = subprocess.run([client, "--no-defaults", f"--socket={socket}", "--user=root", "--batch"], input=sql,
                              capture_output=True, text=True, timeout=120, env=server_environ(), cwd="/")
        if proc.returncode != 0:
            lines = proc.stderr.strip().splitlines()
            raise UserError(f"creating the replication user on {self.primary.target.name!r} (as root over its "
                            f"socket): {lines[-1] if lines else f'exit {proc.returncode}'}")

    def start_replica(self, r: ClusterServer, first: bool, slave_pos: str | None = None) -> None:
        start_server(r, "replica")
        try:
            if first:
                # The replica starts from the primary's current position: what the primary holds so far (the lab's
                # own user, the empty sbtest_pristine, which the replica created itself) is not replayed.
                if "log_bin" in r.role_settings:  # its own GTIDs would conflict with gtid_slave_pos
                    r.query("RESET MASTER", what="clearing the replica's own binlog")
                r.query("SET GLOBAL gtid_slave_pos = %s", (self.primary.gtid_binlog_pos(),),
                        what="setting gtid_slave_pos")
                r.query("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %s, MASTER_USER = %s, "
                        "MASTER_PASSWORD = %s, MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1",
                        (self.primary.port, REPL_USER, self.repl_password), what="CHANGE MASTER TO")
            if slave_pos is not None:
                r.query("SET GLOBAL gtid_slave_pos = %s", (slave_pos,), what="restoring gtid_slave_pos")
            r.query("START SLAVE", what="START SLAVE")
            self.wait_connected(r)
        except StudyFailed as err:
            raise UserError(f"setting up replica {r.target.name!r}: {err}") from None

    def wait_connected(self, r: ClusterServer, timeout_s: float = 60.0) -> None:
        """Until the replica's I/O thread is connected to the primary; a StudyFailed quoting its error otherwise."""
        deadline = time.monotonic() + timeout_s
        while True:
            status = r.slave_status()
            if status.get("Slave_IO_Running") == "Yes" and status.get("Slave_SQL_Running") == "Yes":
                return
            error = status.get("Last_IO_Error") or status.get("Last_SQL_Error")
            if error and status.get("Slave_IO_Running") == "No":
                raise StudyFailed(f"the replication thread did not start: {error}", r.log_tail())
            if time.monotonic() > deadline:
                raise StudyFailed(f"the replica did not connect to the primary within {timeout_s:.0f} s (I/O "
                                  f"thread: {status.get('Slave_IO_State') or status.get('Slave_IO_Running')}; "
                                  f"{error or 'no error reported'})", r.log_tail())
            time.sleep(0.1)

    def restart_replica(self, r: ClusterServer, durability: str, extra: dict[str, str] | None = None,
                        slave_pos: str | None = None) -> None:
        """The replica again with another durability (log_bin and log_slave_updates need a restart)."""
        index = self.replicas.index(r)
        r.stop()
        r.set_role_settings({**self.replica_settings(index, durability), **(extra or {})})
        self.start_replica(r, first=False, slave_pos=slave_pos)

    def set_durability(self, durability: str) -> None:
        if durability == self.durability:
            return
        for r in self.replicas:
            self.restart_replica(r, durability)
        self.durability = durability

    def revive_replica(self, r: ClusterServer) -> None:
        self.start_replica(r, first=False)

    def wait_caught_up(self, r: ClusterServer, pos: str, timeout_s: float = CATCH_UP_TIMEOUT_S) -> float:
        """MASTER_GTID_WAIT on the replica until it has applied `pos`; the seconds it took. StudyFailed if it times
        out, the replica dies or its SQL thread stops with an error."""
        started = time.perf_counter()
        waited = r.value("SELECT MASTER_GTID_WAIT(%s, %s)", (pos, timeout_s), what="waiting for the replica to "
                         "catch up (MASTER_GTID_WAIT)")
        elapsed = time.perf_counter() - started
        if waited != 0:
            status = r.slave_status()
            raise StudyFailed(f"{r.target.name}: did not reach {pos} within {timeout_s:.0f} s (SQL thread "
                              f"{status.get('Slave_SQL_Running')}: {status.get('Last_SQL_Error') or 'no error'})",
                              r.log_tail())
        return elapsed

    def all_caught_up(self) -> None:
        pos = self.primary.gtid_binlog_pos()
        for r in self.replicas:
            self.wait_caught_up(r, pos)
