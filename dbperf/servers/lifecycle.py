"""Server targets: a private data directory (in the lab's runtime directory, see runtime.py, never under the
user's --out), initialised and configured by the lab, a free port on 127.0.0.1, start, readiness, the sbtest data
(a pristine copy that write cells restore from), and stop on every exit path. External targets (`dsn`) have no
lifecycle: their tables are reloaded before each write cell.

Every value the lab writes into postgresql.conf, my.cnf or MariaDB's init file is quoted for that format, or
refused. The password of the lab's servers is generated per run (or DBPERF_SERVER_PASSWORD) and reaches the driver
through its environment only; it is never written to a result, report or log, nor passed on to a server.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import stat
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dbperf.catalog.schema import sbtest
from dbperf.errors import UserError
from dbperf.experiment.spec import Experiment, Target
from dbperf.runner.driver import run_job
from dbperf.servers.process import (
    SECRET_ENV,
    ServerProcess,
    check_port_free,
    free_port,
    last_error_line,
    log_tail,
    server_environ,
)

READY_TIMEOUT_S = 120.0
LOAD_TIMEOUT_S = 3600.0
PASSWORD_ENV = "DBPERF_PASSWORD"
DEFAULT_BINARIES = {"postgres": "/usr/lib/postgresql/15/bin", "mariadb": "/usr/sbin/mariadbd"}
APT_PACKAGE = {"postgres": "postgresql", "mariadb": "mariadb-server"}
SERVICE_USER = {"postgres": "postgres", "mariadb": "mysql"}
# my.cnf has its own escapes (\\, \s, ...) and comments (#): only values made of these characters are written there.
CNF_VALUE = re.compile(r"^[A-Za-z0-9_.+:/,-]+$")


def _no_control_characters(value: str, what: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise UserError(f"{what} holds a control character (newline, tab, ...); refused")
    return value


def pg_conf_value(value: str, what: str) -> str:
    """A quoted postgresql.conf string: quotes doubled, backslashes escaped, no line breaks."""
    _no_control_characters(value, what)
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def cnf_value(value: str, what: str) -> str:
    if not CNF_VALUE.match(value):
        raise UserError(f"{what}: {value!r} cannot be written to my.cnf safely (letters, digits and _ . + : / , - "
                        "only)")
    return value


def sql_string(value: str, what: str, backslash_escapes: bool = True) -> str:
    """A MariaDB string literal, one line; backslashes are escapes unless sql_mode has NO_BACKSLASH_ESCAPES."""
    _no_control_characters(value, what)
    if backslash_escapes:
        value = value.replace("\\", "\\\\")
    return "'" + value.replace("'", "''") + "'"


def lab_password() -> str:
    """DBPERF_SERVER_PASSWORD if set, else a fresh random one for this run."""
    value = os.environ.get("DBPERF_SERVER_PASSWORD")
    if value is None:
        return secrets.token_urlsafe(24)
    if not value:
        raise UserError("DBPERF_SERVER_PASSWORD is set but empty")
    return _no_control_characters(value, "DBPERF_SERVER_PASSWORD")


def _reachable_by(path: Path, uid: int, gid: int) -> bool:
    """Whether a user can traverse every directory above `path`."""
    for parent in reversed(path.parents):
        st = parent.stat()
        if st.st_uid == uid:
            need = stat.S_IXUSR
        elif st.st_gid == gid:
            need = stat.S_IXGRP
        else:
            need = stat.S_IXOTH
        if not st.st_mode & need and os.geteuid() != uid:
            return False
    return True


def _private_dir(path: Path, owner: pwd.struct_passwd) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, owner.pw_uid, owner.pw_gid)
        path.chmod(0o700)
    except OSError as e:
        raise UserError(f"cannot create data directory {path}: {e.strerror}") from None


def _run_setup(argv: list[str], log: Path, user: str | None, what: str) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as f:
        proc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, user=user, cwd="/", timeout=600,
                              env=server_environ())
    if proc.returncode != 0:
        raise UserError(f"{what} failed: {last_error_line(log)}")


class ServerTarget:
    """One server target of an experiment, from data directory to stop. `directory` is the target's own data
    directory, in the lab's runtime directory; logs go to `logs` (in the results directory)."""

    def __init__(self, directory: Path, logs: Path, target: Target, e: Experiment) -> None:
        self.target = target
        self.e = e
        self.engine = target.engine
        self.dir = directory
        self.log = logs / f"{target.name}.log"
        self.settings = list(target.config.items())
        self.server: ServerProcess | None = None
        self.port: int | None = None
        self.restarts = 0
        self.external = target.dsn is not None
        if target.password_env:
            SECRET_ENV.add(target.password_env)  # no server the lab starts inherits another target's password
        # Lab servers get a fresh random password per run unless the user sets one (DBPERF_SERVER_PASSWORD).
        self.password = target.password() if self.external else lab_password()
        self._databases_created = False
        self._loaded_once = False  # external targets: the first restore follows the load itself

    # --- connection strings (never with the password) ---
    def dsn(self, database: str | None) -> str:
        if self.external:
            assert self.target.dsn is not None
            return self.target.dsn
        scheme = "postgresql" if self.engine == "postgres" else "mysql"
        return f"{scheme}://dbperf@127.0.0.1:{self.port}/{database or ''}"

    work_db = "sbtest"  # cells run here; sbtest_pristine is what it is restored from

    def env(self) -> dict[str, str]:
        return {PASSWORD_ENV: self.password} if self.password else {}

    def job(self, database: str | None = None) -> dict[str, Any]:
        e = self.e
        job: dict[str, Any] = {"engine": self.engine, "dsn": self.dsn(database), "tables": e.tables,
                               "table_size": e.table_size, "seed": e.seed, "prepared": e.prepared}
        if self.server is not None:
            job["server_pid"] = self.server.pid
        return job

    def _exec(self, database: str | None, statements: list[str], what: str) -> dict[str, Any]:
        outcome = run_job("exec", {**self.job(database), "mode": "exec", "statements": statements}, 600, env=self.env())
        if not outcome.ok or outcome.result is None:
            raise UserError(f"target {self.target.name!r}: {what}: {outcome.error}")
        return outcome.result

    # --- lifecycle ---
    def start(self) -> None:
        if self.external:
            self._exec(None, [], "connecting")
            return
        binaries = Path(self.target.binaries or DEFAULT_BINARIES[self.engine])
        user_name = SERVICE_USER[self.engine]
        try:
            user = pwd.getpwnam(user_name)
        except KeyError:
            raise UserError(f"user {user_name} not found (apt install {APT_PACKAGE[self.engine]})") from None
        if self.target.port:
            check_port_free(self.target.port)
        port = self.port = self.target.port or free_port()
        password = self.password
        assert password is not None  # lab servers always have one: lab_password()
        first = not self.dir.exists()
        if not _reachable_by(self.dir, user.pw_uid, user.pw_gid):
            raise UserError(f"the server runs as user {user_name}, who cannot reach {self.dir} (a parent directory "
                            "is not searchable)")
        _private_dir(self.dir, user)
        if self.engine == "postgres":
            self._start_postgres(binaries, user, first, port, password)
        else:
            self._start_mariadb(binaries, user, first, port, password)

    def _start_postgres(self, binaries: Path, user: pwd.struct_passwd, first: bool, port: int, password: str) -> None:
        initdb, postgres = binaries / "initdb", binaries / "postgres"
        if not (initdb.is_file() and postgres.is_file()):
            raise UserError(f"PostgreSQL binaries not found in {binaries} (apt install postgresql)")
        data = self.dir / "pgdata"
        if first or not (data / "PG_VERSION").is_file():
            # In the target's private directory (0700, the postgres user's), beside the data directory to be.
            pwfile = self.dir / "pwfile"
            try:
                fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.write(fd, password.encode() + b"\n")
                os.close(fd)
                os.chown(pwfile, user.pw_uid, user.pw_gid)
                _run_setup([str(initdb), "-D", str(data), "-U", "dbperf", "--auth=scram-sha-256",
                            f"--pwfile={pwfile}", "-E", "UTF8", "--no-instructions"], self.log, user.pw_name,
                           "initdb")
            finally:
                Path(pwfile).unlink(missing_ok=True)
        lines = ["listen_addresses = '127.0.0.1'", f"port = {port}",
                 f"unix_socket_directories = {pg_conf_value(str(data), 'the data directory')}",
                 "logging_collector = off"]
        lines += [f"{k} = {pg_conf_value(v, f'config.{k}')}" for k, v in self.settings]
        conf = data / "dbperf.conf"
        conf.write_text("# written by dbperf for this run\n" + "\n".join(lines) + "\n")
        os.chown(conf, user.pw_uid, user.pw_gid)
        main = data / "postgresql.conf"
        text = main.read_text()
        if "include_if_exists = 'dbperf.conf'" not in text:
            main.write_text(text + "\ninclude_if_exists = 'dbperf.conf'\n")
        self.server = ServerProcess([str(postgres), "-D", str(data)], self.log, user.pw_name,
                                    self.target.process.environment())
        self.server.start()
        self.server.wait_port(port, READY_TIMEOUT_S)
        self._wait_sql("postgres")
        if not self._databases_created:
            self._exec("postgres", ["DROP DATABASE IF EXISTS sbtest_pristine WITH (FORCE)",
                                    "CREATE DATABASE sbtest_pristine"], "creating the database")
            self._databases_created = True

    def _start_mariadb(self, mariadbd: Path, user: pwd.struct_passwd, first: bool, port: int, password: str) -> None:
        install = shutil.which("mariadb-install-db") or str(mariadbd.parent.parent / "bin" / "mariadb-install-db")
        if not mariadbd.is_file() or not Path(install).is_file():
            raise UserError(f"MariaDB server not found at {mariadbd} (apt install mariadb-server)")
        data = self.dir / "data"
        if first or not (data / "mysql").is_dir():
            _run_setup([install, "--no-defaults", f"--datadir={data}", f"--user={user.pw_name}", "--skip-test-db",
                        "--auth-root-authentication-method=socket"], self.log, None, "mariadb-install-db")
        sql_mode = dict(self.settings).get("sql_mode", dict(self.settings).get("sql-mode", ""))
        quoted = sql_string(password, "the server password", "NO_BACKSLASH_ESCAPES" not in sql_mode.upper())
        # The init file lives in the target's private directory (0700, the mysql user's), not in a shared /tmp.
        init_file = self.dir / "init.sql"
        fd = os.open(init_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, (f"CREATE USER IF NOT EXISTS 'dbperf'@'127.0.0.1' IDENTIFIED BY {quoted};\n"
                      f"ALTER USER 'dbperf'@'127.0.0.1' IDENTIFIED BY {quoted};\n"
                      "GRANT ALL PRIVILEGES ON *.* TO 'dbperf'@'127.0.0.1';\n").encode())
        os.close(fd)
        os.chown(init_file, user.pw_uid, user.pw_gid)
        cnf = self.dir / "my.cnf"
        lines = ["[mariadbd]", f"datadir = {cnf_value(str(data), 'the data directory')}", f"port = {port}",
                 "bind-address = 127.0.0.1", f"socket = {cnf_value(str(data / 'mariadb.sock'), 'the socket')}",
                 f"pid-file = {cnf_value(str(data / 'mariadb.pid'), 'the pid file')}", f"user = {user.pw_name}",
                 "skip-name-resolve", f"init-file = {cnf_value(str(init_file), 'the init file')}"]
        lines += [f"{k} = {cnf_value(v, f'config.{k}')}" for k, v in self.settings]
        cnf.write_text("\n".join(lines) + "\n")
        self.server = ServerProcess([str(mariadbd), f"--defaults-file={cnf}"], self.log, None,
                                    self.target.process.environment())
        log_start = self.log.stat().st_size if self.log.exists() else 0
        try:
            self.server.start()
            self.server.wait_port(port, READY_TIMEOUT_S)
            self._wait_sql(None)
        finally:
            init_file.unlink(missing_ok=True)
        self._check_adjusted_settings(log_start)
        if not self._databases_created:
            self._exec(None, ["CREATE DATABASE IF NOT EXISTS sbtest_pristine"], "creating the database")
            self._databases_created = True

    def _check_adjusted_settings(self, log_start: int) -> None:
        """MariaDB clamps an out-of-range value with a warning ("option 'x': unsigned value 7 adjusted to 3") and
        starts anyway: a setting that did not take as written fails the target, quoting the server's line."""
        try:
            with open(self.log, "rb") as f:
                f.seek(log_start)
                text = f.read().decode(errors="replace")
        except OSError:
            return
        names = {k.replace("-", "_") for k, _ in self.settings}
        for line in text.splitlines():
            m = re.search(r"option '([^']+)': .* adjusted to", line)
            if m and m.group(1).replace("-", "_") in names:
                self.stop()
                raise UserError(f"target {self.target.name!r}: the server did not take a setting as written: "
                                f"{line.strip()}")

    def _wait_sql(self, database: str | None) -> None:
        """The port opens before the server takes logins (PostgreSQL recovery, MariaDB's init-file)."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            outcome = run_job("exec", {**self.job(database), "mode": "exec", "statements": []}, 60, env=self.env())
            if outcome.ok:
                return
            if time.monotonic() > deadline or not (self.server and self.server.alive()):
                raise UserError(f"target {self.target.name!r}: server not ready: {outcome.error}")
            time.sleep(0.3)

    def ensure_running(self) -> bool:
        """Starts the server again if it died; True when it had to."""
        if self.external or (self.server and self.server.alive()):
            return False
        self.restarts += 1
        self.start()
        return True

    def died(self) -> bool:
        return not self.external and not (self.server and self.server.alive())

    def log_tail(self) -> str:
        return log_tail(self.log)

    def stop(self) -> None:
        if self.server:
            self.server.stop()

    # --- data ---
    def load(self) -> dict[str, Any]:
        database = None if self.external else "sbtest_pristine"
        job = {**self.job(database), "mode": "load", "schema": sbtest(self.engine)}
        outcome = run_job("load", job, LOAD_TIMEOUT_S, env=self.env())
        if not outcome.ok or outcome.result is None:
            raise UserError(f"target {self.target.name!r}: loading the tables failed: {outcome.error}")
        self.restore()
        return outcome.result

    def restore(self) -> None:
        """Write cells start from the loaded data: a copy of the pristine database (external targets: a reload)."""
        if self.external:
            if self._loaded_once:
                job = {**self.job(None), "mode": "load", "schema": sbtest(self.engine)}
                outcome = run_job("load", job, LOAD_TIMEOUT_S, env=self.env())
                if not outcome.ok:
                    raise UserError(f"target {self.target.name!r}: reloading failed: {outcome.error}")
            self._loaded_once = True
            return
        if self.engine == "postgres":
            self._exec("postgres", ["DROP DATABASE IF EXISTS sbtest WITH (FORCE)",
                                    "CREATE DATABASE sbtest TEMPLATE sbtest_pristine"], "restoring the data")
        else:
            statements = ["DROP DATABASE IF EXISTS sbtest", "CREATE DATABASE sbtest"]
            for t in range(1, self.e.tables + 1):
                statements += [f"CREATE TABLE sbtest.sbtest{t} LIKE sbtest_pristine.sbtest{t}",
                               f"INSERT INTO sbtest.sbtest{t} SELECT * FROM sbtest_pristine.sbtest{t}"]
            self._exec(None, statements, "restoring the data")

    def working_job(self) -> dict[str, Any]:
        return self.job(self.work_db)  # an external target's DSN names its own database

    def describe(self) -> dict[str, Any]:
        return {"dsn": self.dsn(self.work_db) if not self.external else _without_password(self.target.dsn or ""),
                "external": self.external, "port": self.port, "server_pid": self.server.pid if self.server else None,
                "log": str(self.log), "data_dir": str(self.dir), "restarts": self.restarts}


def _without_password(dsn: str) -> str:
    parts = urlsplit(dsn)
    if parts.password:
        return dsn.replace(f":{parts.password}@", "@")
    return dsn
