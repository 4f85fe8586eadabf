"""PostgreSQL started by the lab: initdb with a SCRAM password, the lab's settings in an included dbperf.conf, the
postmaster as the postgres user (it refuses root), restore by CREATE DATABASE ... TEMPLATE."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from dbperf.errors import UserError
from dbperf.servers.lifecycle import READY_TIMEOUT_S, LabServer, pg_conf_value, run_setup
from dbperf.servers.process import ServerProcess

INCLUDE = "include_if_exists = 'dbperf.conf'"


class PostgresServer(LabServer):
    engine = "postgres"
    scheme = "postgresql"
    service_user = "postgres"
    apt_package = "postgresql"
    default_binaries = "/usr/lib/postgresql/15/bin"
    admin_database = "postgres"

    def launch(self, binaries: Path, user: pwd.struct_passwd, first: bool, port: int, password: str) -> None:
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
                run_setup([str(initdb), "-D", str(data), "-U", "dbperf", "--auth=scram-sha-256",
                           f"--pwfile={pwfile}", "-E", "UTF8", "--no-instructions"], self.log, user.pw_name, "initdb")
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
        self.server = ServerProcess([str(postgres), "-D", str(data)], self.log, user.pw_name,
                                    self.target.process.environment())
        self.server.start()
        self.server.wait_port(port, READY_TIMEOUT_S)

    def create_pristine_sql(self) -> list[str]:
        return ["DROP DATABASE IF EXISTS sbtest_pristine WITH (FORCE)", "CREATE DATABASE sbtest_pristine"]

    def restore_sql(self) -> list[str]:
        return ["DROP DATABASE IF EXISTS sbtest WITH (FORCE)", "CREATE DATABASE sbtest TEMPLATE sbtest_pristine"]
