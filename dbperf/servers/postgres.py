"""PostgreSQL started by the lab: initdb with a SCRAM password, the lab's settings in an included dbperf.conf, the
postmaster as the postgres user (it refuses root), restore by CREATE DATABASE ... TEMPLATE."""

from __future__ import annotations

import os
import pwd
import re
from pathlib import Path
from urllib.parse import quote

from dbperf.engines.postgres import POSTGRES
from dbperf.errors import UserError
from dbperf.servers.lifecycle import READY_TIMEOUT_S, LabServer, pg_conf_value, run_setup
from dbperf.servers.process import ServerProcess, run_probe

INCLUDE = "include_if_exists = 'dbperf.conf'"


class PostgresServer(LabServer):
    engine = "postgres"
    scheme = "postgresql"
    service_user = POSTGRES.service_user
    apt_package = "postgresql"
    default_binaries = "/usr/lib/postgresql/15/bin"
    admin_database = "postgres"

    major = 15  # of the binaries launched; read from `postgres --version` before the first start

    @classmethod
    def program_files(cls, binaries: Path) -> list[Path]:
        return [binaries / "initdb", binaries / "postgres"]

    def launch(self, binaries: Path, user: pwd.struct_passwd, first: bool, port: int, password: str) -> None:
        initdb, postgres = self.program_files(binaries)
        missing = self.missing_programs(binaries)
        if missing:
            raise UserError(missing)
        self.major = postgres_major(postgres, user.pw_name)
        data = self.dir / "pgdata"
        if first or not (data / "PG_VERSION").is_file():
            # In the target's private directory (0700, the postgres user's), beside the data directory to be.
            pwfile = self.dir / "pwfile"
            try:
                fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.write(fd, password.encode() + b"\n")
                os.close(fd)
                os.chown(pwfile, user.pw_uid, user.pw_gid)
                # SCRAM from PostgreSQL 10 on (initdb then sets password_encryption to match); md5 before.
                auth = "scram-sha-256" if self.major >= 10 else "md5"
                run_setup([str(initdb), "-D", str(data), "-U", "dbperf", f"--auth={auth}",
                           f"--pwfile={pwfile}", "-E", "UTF8", *(["--no-instructions"] if self.major >= 14 else [])],
                          self.log, user.pw_name, f"target {self.target.name!r}: initdb")
            finally:
                pwfile.unlink(missing_ok=True)
        lines = ["listen_addresses = '127.0.0.1'", f"port = {port}",
                 f"unix_socket_directories = {pg_conf_value(str(data), 'the data directory')}",
                 "logging_collector = off"]
        lines += [f"{k} = {pg_conf_value(v, f'config.{k}')}" for k, v in self.settings]
        conf = data / "dbperf.conf"
        conf.write_text("# written by dbperf for this run\n" + "\n".join(lines) + "\n")
        os.chown(conf, user.pw_uid, user.pw_gid)
        main = data / "postgresql.conf"
        text = main.read_text()
        if INCLUDE not in text:
            main.write_text(text + f"\n{INCLUDE}\n")
        self.server = ServerProcess([*self.launch_prefix, str(postgres), "-D", str(data)], self.log, user.pw_name,
                                    self.process_environment())
        self.server.cpus = self.e.cpus.server  # quiet cells (host/cpus.py)
        self.server.start()
        self.server.wait_port(port, READY_TIMEOUT_S)

    def socket_dsn(self, database: str | None) -> str:
        # The host is the socket's directory, percent-encoded (libpq's URL form); the driver opens .s.PGSQL.PORT.
        return f"postgresql://dbperf@{quote(str(self.dir / 'pgdata'), safe='')}:{self.port}/{database or ''}"

    def _drop(self, database: str) -> list[str]:
        if self.major >= 13:
            return [f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"]
        # Before 13 there is no FORCE: end the sessions still attached (a driver that just exited) first.
        return [f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}' "
                "AND pid <> pg_backend_pid()", f"DROP DATABASE IF EXISTS {database}"]

    def create_pristine_sql(self) -> list[str]:
        return [*self._drop("sbtest_pristine"), "CREATE DATABASE sbtest_pristine"]

    def restore_sql(self) -> list[str]:
        return [*self._drop("sbtest"), "CREATE DATABASE sbtest TEMPLATE sbtest_pristine"]


def postgres_major(postgres: Path, user: str = POSTGRES.service_user) -> int:
    """10 and later: the first number of `postgres (PostgreSQL) 16.4`; 9.6 is 9. Asked of the binary as the user
    the server runs as (run_probe: an instrumented build's profile stays the trainer's)."""
    out = run_probe([postgres, "--version"], user, "reading the PostgreSQL version")
    m = re.search(r"\(PostgreSQL\) (\d+)", out)
    if not m:
        raise UserError(f"{postgres}: not a PostgreSQL server (`--version` printed {out.strip()[:80]!r})")
    return int(m.group(1))


SERVER = PostgresServer  # found by servers/registry.py
