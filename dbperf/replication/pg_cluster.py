"""A PostgreSQL primary and N hot standbys started by the lab on 127.0.0.1, with physical streaming replication.

Each server is a `PostgresServer` of dbperf/servers (its own private directory in the run's runtime directory, a
free port, its log in DIR/logs, stopped TERM then KILL on every exit path and by the watchdog if the lab is killed
hard); this module adds the roles' settings and the replication itself:
- the primary: `wal_level = replica`, one physical replication slot per standby, `synchronous_standby_names` =
  FIRST n (every standby), with `synchronous_commit = off` as its default so that nothing waits for a standby unless
  a session asks (the stale-read probe's `remote_apply`, the `primary-sync-commit` durability);
- each standby: a copy of the primary's data directory made by `pg_basebackup` (the target's, or the lab's Debian
  PostgreSQL of the same major version) as the replication role over 127.0.0.1 with its slot, else — released
  binaries ship no pg_basebackup — a copy of the stopped primary's data directory; then `standby.signal`,
  `hot_standby = on`, `primary_conninfo` and `primary_slot_name` in the lab's dbperf.conf.

Passwords: the servers share the run's random lab password (the dbperf superuser, the driver's DBPERF_PASSWORD; the
standbys are copies of the primary). The replication role `repl` (REPLICATION LOGIN only) has a second random
password that never reaches a server as text: the primary gets its SCRAM-SHA-256 verifier (computed here), and
pg_basebackup and the standbys' walreceivers read it from a 0600 passfile in the standby's private directory
(`primary_conninfo` names the passfile, not the password). Neither password is written to a result, report or log.
The lab's control statements go through psycopg, one connection per server."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from dbperf.errors import UserError
from dbperf.experiment import streaming_rules
from dbperf.experiment.model import Experiment, Target
from dbperf.replication.replica_set import REPL_USER, ReplicaSet, RoleServer, StudyFailed, start_server
from dbperf.servers.postgres import PostgresServer, postgres_major
from dbperf.servers.process import last_error_line, server_environ
from dbperf.servers.runtime import RuntimeDir

MARKER_TABLE = "dbperf_replication_marker"
STREAMING_TIMEOUT_S = 120.0
SCRAM_ITERATIONS = 4096
CONNECT_TIMEOUT_S = 30
CATCH_UP_TIMEOUT_S = 1800.0
# The primary generates the load fast; nothing waits for a standby unless a session or a durability asks.
PRIMARY_SETTINGS = {"wal_level": "replica", "max_wal_senders": "10", "max_replication_slots": "10",
                    "synchronous_commit": "off"}
# Files of a running server that a cold copy leaves out (as pg_basebackup does).
COPY_EXCLUDES = ("postmaster.pid", "postmaster.opts", "pg_replslot", "standby.signal", "recovery.signal")


def scram_verifier(password: str, iterations: int = SCRAM_ITERATIONS) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802/7677; the password is ASCII, so SASLprep
    leaves it as it is): CREATE ROLE ... PASSWORD takes it as it is, and the plain password never reaches the
    server, its log or its catalog."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    b64 = base64.b64encode
    return f"SCRAM-SHA-256${iterations}:{b64(salt).decode()}${b64(stored_key).decode()}:{b64(server_key).decode()}"


def lsn(text: str | None) -> int:
    """An LSN ('16/B374D848') as a byte position; 0 for none."""
    if not text:
        return 0
    hi, lo = str(text).split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def _reason(err: psycopg.Error) -> str:
    diag = getattr(err, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    lines = str(err).strip().splitlines()
    text = primary or (lines[0] if lines else type(err).__name__)
    code = getattr(err, "sqlstate", None)
    return f"{text} ({code})" if code else text


class PgClusterServer(RoleServer, PostgresServer):
    """A PostgresServer with the role's settings after the target's own, and the lab's control connections; a
    standby's data directory is made by `clone` (set by the cluster) on its first start instead of initdb."""

    def __init__(self, directory: Path, logs: Path, target: Target, e: Experiment, role: str,
                 role_settings: dict[str, str]) -> None:
        super().__init__(directory, logs, target, e, role, role_settings)
        self.clone: Callable[[PgClusterServer, Path, pwd.struct_passwd], None] | None = None
        self._conns: dict[str, psycopg.Connection[Any]] = {}

    @property
    def standby(self) -> bool:
        return self.clone is not None

    def launch(self, binaries: Path, user: pwd.struct_passwd, first: bool, port: int, password: str) -> None:
        data = self.dir / "pgdata"
        if self.clone is not None:
            if not (data / "PG_VERSION").is_file():
                self.clone(self, binaries, user)
            signal_file = data / "standby.signal"
            signal_file.touch()
            os.chown(signal_file, user.pw_uid, user.pw_gid)
            first = False
        super().launch(binaries, user, first, port, password)

    def start(self) -> None:
        if self.standby:
            self._databases_created = True  # a standby is read-only: its databases come from the primary
        super().start()

    def close(self) -> None:
        for conn in self._conns.values():
            with contextlib.suppress(Exception):  # a connection to a server that died cannot be closed politely
                conn.close()
        self._conns.clear()

    def log_tail(self) -> str:
        """The server's log tail, and how its postmaster ended when it has (a SIGKILL leaves no line in the log)."""
        tail = super().log_tail()
        proc = self.server.proc if self.server is not None else None
        code = proc.poll() if proc is not None else None
        if code is None:
            return tail
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        return f"{tail}\n(dbperf: the postmaster of {self.target.name} ended: {how})".strip()

    def connect(self, database: str = "postgres") -> psycopg.Connection[Any]:
        assert self.port is not None and self.password is not None
        try:
            return psycopg.connect(host="127.0.0.1", port=self.port, user="dbperf", password=self.password,
                                   dbname=database, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                                   application_name="dbperf-lab",
                                   # the lab's own statements never wait for a standby (a dead one would hang them)
                                   options="-c synchronous_commit=local")
        except psycopg.Error as err:
            raise StudyFailed(f"{self.target.name}: connecting: {_reason(err)}", self.log_tail()) from None

    def connection(self, database: str = "postgres") -> psycopg.Connection[Any]:
        """The lab's control connection to `database` (autocommit), opened on first use."""
        conn = self._conns.get(database)
        if conn is None or conn.closed:
            conn = self._conns[database] = self.connect(database)
        return conn

    def query(self, statement: str | sql.Composed, args: Any = None, what: str = "",
              database: str = "postgres") -> list[tuple[Any, ...]]:
        """Rows of one statement, or StudyFailed naming the server and the step (never the statement)."""
        try:
            with self.connection(database).cursor() as cur:
                cur.execute(statement if isinstance(statement, sql.Composed) else sql.SQL(statement), args)
                return list(cur.fetchall()) if cur.description is not None else []
        except psycopg.Error as err:
            raise self.failed(what, _reason(err)) from None

    def value(self, statement: str, args: Any = None, what: str = "") -> Any:
        rows = self.query(statement, args, what)
        return rows[0][0] if rows else None

    def current_lsn(self) -> int:
        return lsn(self.value("SELECT pg_current_wal_lsn()::text", what="reading pg_current_wal_lsn"))

    def mark(self) -> int:
        """Commits the next value of the lab's marker row (MARKER_TABLE in database postgres) under
        synchronous_commit = local and returns it. The marker is how the lab knows that a standby has applied
        everything the primary committed before it: the primary commits its load with synchronous_commit = off (its
        last commits may still sit in WAL buffers, unsent), and a target LSN read from pg_current_wal_lsn() can lie
        a page header past the end of the last record, which replay reaches only with the next record (about 0.2 s
        later, measured). The marker's commit flushes the WAL up to itself, and its row is visible on a hot standby
        exactly when its commit record has been replayed. One xid."""
        self.query("BEGIN", what="committing the marker")
        try:
            self.query("SET LOCAL synchronous_commit = local", what="committing the marker")
            n = self.value(f"UPDATE {MARKER_TABLE} SET n = n + 1 RETURNING n", what="committing the marker")
        finally:
            if self._conns.get("postgres") is not None:
                self.query("COMMIT", what="committing the marker")
        return int(n)

    def marker(self) -> int:
        """The marker's value this (standby) server sees."""
        return int(self.value(f"SELECT n FROM {MARKER_TABLE}", what="reading the marker") or 0)

    def replay_lsn(self) -> int:
        return lsn(self.value("SELECT pg_last_wal_replay_lsn()::text", what="reading pg_last_wal_replay_lsn"))

    def receive_lsn(self) -> int:
        return lsn(self.value("SELECT pg_last_wal_receive_lsn()::text", what="reading pg_last_wal_receive_lsn"))

    def next_xid(self) -> int:
        """The next transaction id to be assigned: the difference of two readings counts the transactions that wrote
        (each gets an xid), as GTIDs count them on MariaDB."""
        return int(self.value("SELECT txid_snapshot_xmax(txid_current_snapshot())", what="reading the next xid"))


class PgCluster(ReplicaSet[PgClusterServer]):
    """The primary and its standbys, in `runtime`'s target directories t1 (primary), t2... (standbys)."""

    engine = "postgres"

    def __init__(self, runtime: RuntimeDir, logs: Path, target: Target, e: Experiment, replicas: int,
                 durability: str, mode: str = "physical") -> None:
        self.target = target
        self.names = [f"replica{i + 1}" for i in range(replicas)]
        self.durability = durability
        self.mode = mode
        self.major = 0  # of the binaries, read before the first start
        self.primary = PgClusterServer(runtime.target_dir(1), logs, target, e, "primary", self.primary_settings(None))
        self.replicas = [PgClusterServer(runtime.target_dir(i + 2), logs, target, e, name, {})
                         for i, name in enumerate(self.names)]
        for r in self.replicas:
            r.password = self.primary.password  # the standbys are copies: the lab's password is the primary's
            r.clone = self._clone
        self.repl_password = secrets.token_urlsafe(24)

    def primary_settings(self, durability: str | None) -> dict[str, str]:
        """None: the settings the primary starts with, before any standby exists (a durability that makes its
        commits wait for the standbys is applied once they stream)."""
        names = ", ".join(f'"{n}"' for n in self.names)
        return {**PRIMARY_SETTINGS, "synchronous_standby_names": f"FIRST {len(self.names)} ({names})",
                **(streaming_rules.DURABILITY[durability][0] if durability else {})}

    def standby_settings(self, r: PgClusterServer, durability: str, mode: str) -> dict[str, str]:
        assert self.primary.port is not None
        conninfo = (f"host=127.0.0.1 port={self.primary.port} user={REPL_USER} passfile={self._passfile(r)} "
                    f"application_name={r.role}")
        prefetch = streaming_rules.MODES[mode] if self.major >= 15 else {}
        return {"hot_standby": "on", "primary_conninfo": conninfo, "primary_slot_name": self._slot(r),
                **prefetch, **streaming_rules.DURABILITY[durability][1]}

    @staticmethod
    def _slot(r: PgClusterServer) -> str:
        return f"dbperf_{r.role}"

    @staticmethod
    def _passfile(r: PgClusterServer) -> Path:
        return r.dir / "repl.pgpass"

    def check_mode(self, mode: str) -> None:
        if mode != "physical" and self.major < 15:
            raise UserError(f"mode {mode!r} needs recovery_prefetch, PostgreSQL 15 or later (this is {self.major})")

    def start(self) -> None:
        """Primary, the replication role and slots, then each standby streaming; UserError naming the server and
        step, with its log line."""
        binaries = Path(self.target.binaries or PostgresServer.default_binaries)
        postgres = binaries / "postgres"
        if postgres.is_file():
            self.major = postgres_major(postgres)
            if self.major < 12:
                raise UserError(f"the replication lab needs PostgreSQL 12 or later (standby.signal); {postgres} is "
                                f"{self.major}")
            self.check_mode(self.mode)
        start_server(self.primary, "the primary")
        try:
            # A utility statement takes no bound parameter: the verifier is quoted here, client side.
            self.primary.query(sql.SQL("CREATE ROLE {} WITH REPLICATION LOGIN PASSWORD {}").format(
                sql.Identifier(REPL_USER), sql.Literal(scram_verifier(self.repl_password))),
                what="creating the replication role")
            for r in self.replicas:
                self.primary.query("SELECT pg_create_physical_replication_slot(%s, true)", (self._slot(r),),
                                   what=f"creating the replication slot of {r.role}")
            self.primary.query(f"CREATE TABLE {MARKER_TABLE} (n BIGINT NOT NULL)", what="creating the marker table")
            self.primary.query(f"INSERT INTO {MARKER_TABLE} VALUES (0)", what="creating the marker row")
        except StudyFailed as err:
            raise UserError(f"setting up the primary {self.primary.target.name!r}: {err}") from None
        for r in self.replicas:
            self.start_replica(r)
        # A cold copy restarts the primary, on another port: a standby started before it is pointed at the new one.
        for r in self.replicas:
            if r.role_settings != self.standby_settings(r, self.durability, self.mode):
                self.restart_replica(r)
        # The primary's own durability settings, now that the standbys stream.
        if streaming_rules.DURABILITY[self.durability][0]:
            wanted, self.durability = self.durability, ""
            try:
                self.set_durability(wanted)
            except StudyFailed as err:
                raise UserError(f"applying {wanted} to the primary: {err}") from None

    def _write_passfile(self, r: PgClusterServer, user: pwd.struct_passwd) -> None:
        """The replication role's password for pg_basebackup and the walreceiver (libpq's passfile, 0600, in the
        standby's private directory; any port: the primary keeps its port, but a restart must not depend on it)."""
        path = self._passfile(r)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, f"127.0.0.1:*:*:{REPL_USER}:{self.repl_password}\n".encode())
        finally:
            os.close(fd)
        os.chown(path, user.pw_uid, user.pw_gid)

    def _basebackup_tool(self, binaries: Path) -> Path | None:
        """The target's pg_basebackup, else Debian's of the same major version (a client older than the server
        refuses it); None when neither exists (released binaries ship only initdb, pg_ctl and postgres)."""
        for candidate in (binaries / "pg_basebackup", Path(f"/usr/lib/postgresql/{self.major}/bin/pg_basebackup")):
            if candidate.is_file():
                return candidate
        return None

    def _clone(self, r: PgClusterServer, binaries: Path, user: pwd.struct_passwd) -> None:
        """The standby's data directory, a copy of the primary's (PgClusterServer.launch calls it on first start)."""
        self._write_passfile(r, user)
        data = r.dir / "pgdata"
        tool = self._basebackup_tool(binaries)
        if tool is not None:
            r.log.parent.mkdir(parents=True, exist_ok=True)
            with open(r.log, "ab") as log:
                proc = subprocess.run([str(tool), "-D", str(data), "-h", "127.0.0.1", "-p", str(self.primary.port),
                                       "-U", REPL_USER, "--no-password", "-X", "stream", "-S", self._slot(r),
                                       "--checkpoint=fast"], stdout=log, stderr=subprocess.STDOUT, user=user.pw_name,
                                      cwd="/", timeout=1800, env=server_environ({"PGPASSFILE": str(self._passfile(r))}))
            if proc.returncode != 0:
                raise UserError(f"pg_basebackup from the primary failed: {last_error_line(r.log)}")
            return
        # A cold copy: the primary stopped cleanly, its data directory copied, the primary started again.
        self.primary.stop()
        try:
            shutil.copytree(self.primary.dir / "pgdata", data, symlinks=True,
                            ignore=shutil.ignore_patterns(*COPY_EXCLUDES))
            (data / "pg_replslot").mkdir(mode=0o700, exist_ok=True)
            for root, dirs, files in os.walk(data):
                for name in [*dirs, *files]:
                    os.lchown(os.path.join(root, name), user.pw_uid, user.pw_gid)
            os.chown(data, user.pw_uid, user.pw_gid)
            data.chmod(0o700)
        finally:
            self.primary.start()
        # On another port now: this standby's primary_conninfo (written by its launch, after this) follows it.
        r.set_role_settings(self.standby_settings(r, self.durability, self.mode))

    def start_replica(self, r: PgClusterServer) -> None:
        r.set_role_settings(self.standby_settings(r, self.durability, self.mode))
        start_server(r, "standby")
        try:
            self.wait_streaming(r)
        except StudyFailed as err:
            raise UserError(f"setting up standby {r.target.name!r}: {err}") from None

    def wait_streaming(self, r: PgClusterServer, timeout_s: float = STREAMING_TIMEOUT_S) -> None:
        """Until the primary's pg_stat_replication shows the standby streaming; a StudyFailed quoting the standby's
        log otherwise."""
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.primary.value("SELECT state FROM pg_stat_replication WHERE application_name = %s",
                                       (r.role,), what="reading pg_stat_replication")
            if state == "streaming":
                return
            if r.died():
                raise StudyFailed(f"{r.target.name}: the standby exited: {last_error_line(r.log)}", r.log_tail())
            if time.monotonic() > deadline:
                raise StudyFailed(f"{r.target.name}: the standby did not stream from the primary within "
                                  f"{timeout_s:.0f} s (state {state or 'not connected'}; its log: "
                                  f"{last_error_line(r.log)})", r.log_tail())
            time.sleep(0.1)

    def restart_replica(self, r: PgClusterServer) -> None:
        r.stop()
        self.start_replica(r)

    def set_durability(self, durability: str) -> None:
        """The primary's and the standbys' settings of `durability` (a restart of each: simple and certain)."""
        if durability == self.durability:
            return
        self.durability = durability
        for r in self.replicas:  # first, so that none is left streaming from the old primary's port
            r.stop()
        self.primary.stop()
        self.primary.set_role_settings(self.primary_settings(durability))
        try:
            self.primary.start()
        except UserError as err:
            raise StudyFailed(f"restarting the primary with {durability}: {err}", self.primary.log_tail()) from None
        for r in self.replicas:
            self._restart_study(r)

    def set_mode(self, mode: str) -> None:
        if mode == self.mode:
            return
        self.check_mode(mode)
        self.mode = mode
        for r in self.replicas:
            self._restart_study(r)

    def _restart_study(self, r: PgClusterServer) -> None:
        try:
            self.restart_replica(r)
        except UserError as err:
            raise StudyFailed(str(err), r.log_tail()) from None

    def revive_replica(self, r: PgClusterServer) -> None:
        """A standby that died resumes streaming from its slot."""
        r.stop()  # its process group: children of a killed postmaster may linger and hold its shared memory
        self.start_replica(r)

    def release_sync_waiters(self) -> None:
        """Backends of the primary stuck in a synchronous-commit wait for a standby that died are ended (their
        clients see the connection close), so that a study fails instead of hanging."""
        with contextlib.suppress(StudyFailed):
            self.primary.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
                               what="ending the sessions waiting for a dead standby")

    def wait_caught_up(self, r: PgClusterServer, mark: int, timeout_s: float = CATCH_UP_TIMEOUT_S,
                       poll_s: float = 0.001) -> float:
        """Polls the marker on the standby until it shows `mark` (PgClusterServer.mark: the standby has replayed
        everything committed before it); the seconds it took. StudyFailed if it times out or the standby dies."""
        started = time.perf_counter()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                seen = r.marker()
            except StudyFailed as err:
                raise StudyFailed(f"{r.target.name}: died while replaying the WAL ({err})", r.log_tail()) from None
            if seen >= mark:
                return time.perf_counter() - started
            if r.died():
                raise StudyFailed(f"{r.target.name}: died while replaying the WAL", r.log_tail())
            if time.monotonic() > deadline:
                raise StudyFailed(f"{r.target.name}: did not replay the primary's WAL within {timeout_s:.0f} s "
                                  f"({r.replay_lsn():,} of {self.primary.current_lsn():,})", r.log_tail())
            time.sleep(poll_s)

    def all_caught_up(self) -> None:
        mark = self.primary.mark()
        for r in self.replicas:
            self.wait_caught_up(r, mark, poll_s=0.02)
