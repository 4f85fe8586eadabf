"""MariaDB started by the lab: mariadb-install-db, a my.cnf of the lab's, the dbperf user created by an init file,
restore by CREATE TABLE ... LIKE + INSERT ... SELECT. A setting MariaDB clamps at start-up fails the target."""

from __future__ import annotations

import os
import pwd
import re
import shutil
from pathlib import Path
from urllib.parse import quote

from dbperf.engines.mariadb import MARIADB
from dbperf.errors import UserError
from dbperf.servers.lifecycle import LabServer, cnf_value, run_setup, sql_string
from dbperf.servers.process import ServerProcess

ADJUSTED = re.compile(r"option '([^']+)': .* adjusted to")


class MariaDBServer(LabServer):
    engine = "mariadb"
    scheme = "mysql"
    service_user = MARIADB.service_user
    apt_package = "mariadb-server"
    default_binaries = "/usr/sbin/mariadbd"
    admin_database = None

    def socket_dsn(self, database: str | None) -> str:
        return (f"mysql://dbperf@localhost:{self.port}/{database or ''}"
                f"?socket={quote(str(self.dir / 'data' / 'mariadb.sock'), safe='')}")

    def launch(self, mariadbd: Path, user: pwd.struct_passwd, first: bool, port: int, password: str) -> None:
        # A release (or a build) keeps everything under one base directory: bin/mariadbd, scripts/, share/.
        basedir = mariadbd.parent.parent
        own_install = basedir / "scripts" / "mariadb-install-db"
        relocated = own_install.is_file()
        install = str(own_install) if relocated else shutil.which("mariadb-install-db") or str(
            basedir / "bin" / "mariadb-install-db")
        missing = self.missing_programs(mariadbd)
        if missing:
            raise UserError(missing)
        if not Path(install).is_file():
            raise UserError(f"MariaDB's install script not found: no {install} (beside {mariadbd}, or Debian's "
                            "mariadb-server package)")
        data = self.dir / "data"
        if first or not (data / "mysql").is_dir():
            # Run by root, the script hands the data directory and the bootstrap server to the mysql user itself
            # (--user), but the build's own tools it runs first (my_print_defaults) stay root's: where every program
            # must run as the service user (a PGO training, whose profile files must stay the trainer's: issue
            # 46), the whole script runs as that user, and names it as the socket-authenticated user --user named.
            as_user = [f"--auth-root-socket-user={user.pw_name}"] if self.run_as_service_user else [
                f"--user={user.pw_name}"]
            run_setup([install, "--no-defaults", *([f"--basedir={basedir}"] if relocated else []),
                       f"--datadir={data}", *as_user, "--skip-test-db",
                       "--auth-root-authentication-method=socket"], self.log,
                      user.pw_name if self.run_as_service_user else None,
                      f"target {self.target.name!r}: mariadb-install-db")
        settings = {k.replace("-", "_"): v for k, v in self.settings}
        escapes = "NO_BACKSLASH_ESCAPES" not in settings.get("sql_mode", "").upper()
        quoted = sql_string(password, "the server password", escapes)
        # The init file lives in the target's private directory (0700, the mysql user's), not in a shared /tmp.
        init_file = self.dir / "init.sql"
        fd = os.open(init_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, (f"CREATE USER IF NOT EXISTS 'dbperf'@'127.0.0.1' IDENTIFIED BY {quoted};\n"
                      f"ALTER USER 'dbperf'@'127.0.0.1' IDENTIFIED BY {quoted};\n"
                      "GRANT ALL PRIVILEGES ON *.* TO 'dbperf'@'127.0.0.1';\n"
                      # Over the Unix socket (socket = true) the same user connects as 'dbperf'@'localhost'.
                      f"CREATE USER IF NOT EXISTS 'dbperf'@'localhost' IDENTIFIED BY {quoted};\n"
                      f"ALTER USER 'dbperf'@'localhost' IDENTIFIED BY {quoted};\n"
                      "GRANT ALL PRIVILEGES ON *.* TO 'dbperf'@'localhost';\n").encode())
        os.close(fd)
        os.chown(init_file, user.pw_uid, user.pw_gid)
        cnf = self.dir / "my.cnf"
        lines = ["[mariadbd]", f"datadir = {cnf_value(str(data), 'the data directory')}", f"port = {port}",
                 "bind-address = 127.0.0.1", f"socket = {cnf_value(str(data / 'mariadb.sock'), 'the socket')}",
                 f"pid-file = {cnf_value(str(data / 'mariadb.pid'), 'the pid file')}", f"user = {user.pw_name}",
                 "skip-name-resolve", f"init-file = {cnf_value(str(init_file), 'the init file')}"]
        if relocated:
            lines.append(f"basedir = {cnf_value(str(basedir), 'the base directory')}")
        lines += [f"{k} = {cnf_value(v, f'config.{k}')}" for k, v in self.settings]
        cnf.write_text("\n".join(lines) + "\n")
        self.server = ServerProcess([*self.launch_prefix, str(mariadbd), f"--defaults-file={cnf}"], self.log,
                                    user.pw_name if self.run_as_service_user else None,
                                    self.target.process.environment())
        log_start = self.log.stat().st_size if self.log.exists() else 0
        try:
            self.server.cpus = self.e.cpus.server  # quiet cells (host/cpus.py)
            self.server.start()
            self.server.wait_port(port, self.ready_timeout_s)
            self._wait_sql(None)  # the init file has run once logins work
        finally:
            init_file.unlink(missing_ok=True)
        self._check_adjusted_settings(log_start)

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
