"""What the lab's MariaDB and MySQL servers share (servers/mariadb.py, servers/mysql.py): the init file that
creates the lab's user `dbperf` (over TCP from 127.0.0.1 and over the Unix socket), the my.cnf lines every server
of the family gets (127.0.0.1 only, the files in the target's private directory), the socket's DSN, a setting the
server clamps at start-up failing the target, and restore by CREATE TABLE ... LIKE + INSERT ... SELECT."""

from __future__ import annotations

import os
import pwd
import re
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote

from dbperf.errors import UserError
from dbperf.servers.lifecycle import LabServer, cnf_value, sql_string
from dbperf.servers.process import ServerProcess

ADJUSTED = re.compile(r"option '([^']+)': .* adjusted to")


class MySQLFamilyServer(LabServer):
    socket_name: ClassVar[str]  # the socket's file name in the data directory
    pid_name: ClassVar[str]
    # The password the init file last set in this server's data directory, once logins worked with it
    _logins_set: str | None = None

    def socket_dsn(self, database: str | None) -> str:
        return (f"mysql://dbperf@localhost:{self.port}/{database or ''}"
                f"?socket={quote(str(self.dir / 'data' / self.socket_name), safe='')}")

    def write_init_file(self, user: pwd.struct_passwd, password: str, initialised: bool) -> Path | None:
        """The statements that create (or update) the lab's user with this run's password, in a file only the
        service user reads, in the target's private directory (0700), not in a shared /tmp. None on a restart of a
        data directory (not `initialised` by this launch) where this server already set this password: under
        lackey those six statements took minutes of mysqld 9.7.2's traced start (caching_sha2_password hashes each
        password with 5,000 rounds of SHA-256)."""
        if not initialised and self._logins_set == password:
            return None
        settings = {k.replace("-", "_"): v for k, v in self.settings}
        escapes = "NO_BACKSLASH_ESCAPES" not in settings.get("sql_mode", "").upper()
        quoted = sql_string(password, "the server password", escapes)
        init_file = self.dir / "init.sql"
        fd = os.open(init_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        # Over the Unix socket (socket = true) the same user connects as 'dbperf'@'localhost'.
        os.write(fd, "".join(f"CREATE USER IF NOT EXISTS {a} IDENTIFIED BY {quoted};\n{self.set_password(a, quoted)}\n"
                             f"GRANT ALL PRIVILEGES ON *.* TO {a};\n"
                             for a in ("'dbperf'@'127.0.0.1'", "'dbperf'@'localhost'")).encode())
        os.close(fd)
        os.chown(init_file, user.pw_uid, user.pw_gid)
        return init_file

    def set_password(self, account: str, quoted: str) -> str:
        """The statement that gives an existing account this run's password (a server without ALTER USER says its
        own)."""
        return f"ALTER USER {account} IDENTIFIED BY {quoted};"

    @property
    def tmpdir(self) -> Path:
        return self.dir / "tmp"

    def private_tmpdir(self, user: pwd.struct_passwd) -> Path:
        """The server's temporary folder (created) in its private directory: the family names its temporary tables and
        files after the process and thread, so two bootstraps sharing /tmp (two targets, two runs) collided
        ("Could not remove temporary table '/tmp/#sql-temptable-...'"), and /tmp is readable by others."""
        tmp = self.tmpdir
        tmp.mkdir(mode=0o700, exist_ok=True)
        os.chown(tmp, user.pw_uid, user.pw_gid)
        return tmp

    def cnf_lines(self, section: str, data: Path, port: int, user: pwd.struct_passwd,
                  init_file: Path | None) -> list[str]:
        """The lab's own lines of the server's my.cnf: its data, 127.0.0.1 and the port, the socket and pid file in
        the data directory, its private temporary folder, the service user, the init file."""
        return [f"[{section}]", f"datadir = {cnf_value(str(data), 'the data directory')}", f"port = {port}",
                "bind-address = 127.0.0.1", f"socket = {cnf_value(str(data / self.socket_name), 'the socket')}",
                f"pid-file = {cnf_value(str(data / self.pid_name), 'the pid file')}",
                f"tmpdir = {cnf_value(str(self.tmpdir), 'the temporary folder')}", f"user = {user.pw_name}",
                "skip-name-resolve",
                *([f"init-file = {cnf_value(str(init_file), 'the init file')}"] if init_file else [])]

    def setting_lines(self) -> list[str]:
        return [f"{k} = {cnf_value(v, f'config.{k}')}" for k, v in self.settings]

    def start_with(self, program: Path, cnf: Path, init_file: Path | None, user: pwd.struct_passwd,
                   port: int) -> None:
        """The server `program` started on its my.cnf, pinned to the server CPUs, waited for until logins work (the
        init file has run then, and is deleted), then its log read for settings it adjusted."""
        self.server = ServerProcess([*self.launch_prefix, str(program), f"--defaults-file={cnf}"], self.log,
                                    user.pw_name if self.run_as_service_user else None,
                                    self.process_environment())
        log_start = self.log.stat().st_size if self.log.exists() else 0
        try:
            self.server.cpus = self.e.cpus.server  # quiet cells (host/cpus.py)
            self.server.start()
            self.server.wait_port(port, self.ready_timeout_s)
            self._wait_sql(None)  # the init file has run once logins work
            if init_file:
                self._logins_set = self.password
        finally:
            if init_file:
                init_file.unlink(missing_ok=True)
        self.check_adjusted_settings(log_start)

    def check_adjusted_settings(self, log_start: int) -> None:
        """The family clamps an out-of-range value with a warning ("option 'x': unsigned value 7 adjusted to 3")
        and starts anyway: a setting that did not take as written fails the target, quoting the server's line."""
        try:
            with open(self.log, "rb") as f:
                f.seek(log_start)
                text = f.read().decode(errors="replace")
        except OSError:
            return
        names = {k.replace("-", "_") for k, _ in self.settings}
        for line in text.splitlines():
            m = ADJUSTED.search(line)
            if m and m.group(1).replace("-", "_") in names:
                self.stop()
                raise UserError(f"target {self.target.name!r}: the server did not take a setting as written: "
                                f"{line.strip()}")

    def create_pristine_sql(self) -> list[str]:
        return ["CREATE DATABASE IF NOT EXISTS sbtest_pristine"]

    def restore_sql(self) -> list[str]:
        statements = ["DROP DATABASE IF EXISTS sbtest", "CREATE DATABASE sbtest"]
        for t in range(1, self.e.tables + 1):
            statements += [f"CREATE TABLE sbtest.sbtest{t} LIKE sbtest_pristine.sbtest{t}",
                           f"INSERT INTO sbtest.sbtest{t} SELECT * FROM sbtest_pristine.sbtest{t}"]
        return statements
