"""Server targets: a private data directory, initialised and configured by the lab, a free port on 127.0.0.1,
start, readiness, the sbtest data (a pristine copy that write cells restore from), and stop on every exit path.
External targets (`dsn`) have no lifecycle: their tables are reloaded before each write cell.

The password of the lab's servers is generated per run and reaches the driver through its environment only; it is
never written to a result, report or log.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dbperf.catalog.schema import sbtest
from dbperf.errors import UserError
from dbperf.experiment.spec import Experiment, Target
from dbperf.runner.driver import run_job
from dbperf.servers.process import ServerProcess, check_port_free, free_port, last_error_line, log_tail

READY_TIMEOUT_S = 120.0
LOAD_TIMEOUT_S = 3600.0
PASSWORD_ENV = "DBPERF_PASSWORD"
DEFAULT_BINARIES = {"postgres": "/usr/lib/postgresql/15/bin", "mariadb": "/usr/sbin/mariadbd"}
APT_PACKAGE = {"postgres": "postgresql", "mariadb": "mariadb-server"}
SERVICE_USER = {"postgres": "postgres", "mariadb": "mysql"}


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
        proc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, user=user, cwd="/", timeout=600)
    if proc.returncode != 0:
        raise UserError(f"{what} failed: {last_error_line(log)}")


class ServerTarget:
    """One server target of an experiment, from data directory to stop."""

    def __init__(self, root: Path, logs: Path, target: Target, e: Experiment) -> None:
        self.target = target
        self.e = e
        self.engine = target.engine
        self.dir = root / target.name
        self.log = logs / f"{target.name}.log"
        self.settings = list(target.config.items())
        self.server: ServerProcess | None = None
        self.port: int | None = None
        self.restarts = 0
        self.external = target.dsn is not None
        # Lab servers get a fresh random password per run unless the user sets one (DBPERF_SERVER_PASSWORD).
        self.password = target.password() if self.external else (
            os.environ.get("DBPERF_SERVER_PASSWORD") or secrets.token_urlsafe(24))
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
        self.port = self.target.port or free_port()
        first = not self.dir.exists()
        self.dir.parent.mkdir(parents=True, exist_ok=True)
        self.dir.parent.chmod(0o711)  # traversable by the service user, not listable
        if not _reachable_by(self.dir, user.pw_uid, user.pw_gid):
            raise UserError(f"the server runs as user {user_name}, who cannot reach {self.dir} (a parent directory "
                            "is not searchable); choose another --out")
        _private_dir(self.dir, user)
        if self.engine == "postgres":
            self._start_postgres(binaries, user, first)
        else:
            self._start_mariadb(binaries, user, first)

    def _start_postgres(self, binaries: Path, user: pwd.struct_passwd, first: bool) -> None:
        initdb, postgres = binaries / "initdb", binaries / "postgres"
        if not (initdb.is_file() and postgres.is_file()):
            raise UserError(f"PostgreSQL binaries not found in {binaries} (apt install postgresql)")
        data = self.dir / "pgdata"
        if first or not (data / "PG_VERSION").is_file():
            fd, pwfile = tempfile.mkstemp(prefix="dbperf-pw-")
            try:
                os.write(fd, self.password.encode() + b"\n")
                os.close(fd)
                os.chown(pwfile, user.pw_uid, user.pw_gid)
                _run_setup([str(initdb), "-D", str(data), "-U", "dbperf", "--auth=scram-sha-256",
                            f"--pwfile={pwfile}", "-E", "UTF8", "--no-instructions"], self.log, user.pw_name,
                           "initdb")
            finally:
                Path(pwfile).unlink(missing_ok=True)
        lines = ["listen_addresses = '127.0.0.1'", f"port = {self.port}",
                 f"unix_socket_directories = '{data}'", "logging_collector = off"]
        lines += [f"{k} = '{v}'" for k, v in self.settings]
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
        self.server.wait_port(self.port, READY_TIMEOUT_S)
        self._wait_sql("postgres")
        if not self._databases_created:
            self._exec("postgres", ["DROP DATABASE IF EXISTS sbtest_pristine WITH (FORCE)",
                                    "CREATE DATABASE sbtest_pristine"], "creating the database")
            self._databases_created = True

    def _start_mariadb(self, mariadbd: Path, user: pwd.struct_passwd, first: bool) -> None:
        install = shutil.which("mariadb-install-db") or str(mariadbd.parent.parent / "bin" / "mariadb-install-db")
        if not mariadbd.is_file() or not Path(install).is_file():
            raise UserError(f"MariaDB server not found at {mariadbd} (apt install mariadb-server)")
        data = self.dir / "data"
        if first or not (data / "mysql").is_dir():
            _run_setup([install, "--no-defaults", f"--datadir={data}", f"--user={user.pw_name}", "--skip-test-db",
                        "--auth-root-authentication-method=socket"], self.log, None, "mariadb-install-db")
        fd, init_file = tempfile.mkstemp(prefix="dbperf-init-", suffix=".sql")
        quoted = self.password.replace("'", "''")
        os.write(fd, (f"CREATE USER IF NOT EXISTS 'dbperf'@'127.0.0.1' IDENTIFIED BY '{quoted}';\n"
                      f"ALTER USER 'dbperf'@'127.0.0.1' IDENTIFIED BY '{quoted}';\n"
                      "GRANT ALL PRIVILEGES ON *.* TO 'dbperf'@'127.0.0.1';\n").encode())
        os.close(fd)
        os.chown(init_file, user.pw_uid, user.pw_gid)
        cnf = self.dir / "my.cnf"
        lines = ["[mariadbd]", f"datadir = {data}", f"port = {self.port}", "bind-address = 127.0.0.1",
                 f"socket = {data / 'mariadb.sock'}", f"pid-file = {data / 'mariadb.pid'}", f"user = {user.pw_name}",
                 "skip-name-resolve", f"init-file = {init_file}"]
        lines += [f"{k} = {v}" for k, v in self.settings]
        cnf.write_text("\n".join(lines) + "\n")
        self.server = ServerProcess([str(mariadbd), f"--defaults-file={cnf}"], self.log, None,
                                    self.target.process.environment())
        try:
            self.server.start()
            self.server.wait_port(self.port, READY_TIMEOUT_S)
            self._wait_sql(None)
        finally:
            Path(init_file).unlink(missing_ok=True)
        if not self._databases_created:
            self._exec(None, ["CREATE DATABASE IF NOT EXISTS sbtest_pristine"], "creating the database")
            self._databases_created = True

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
