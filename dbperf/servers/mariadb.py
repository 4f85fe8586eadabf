"""MariaDB started by the lab: mariadb-install-db, then the family's my.cnf, init file and restore
(servers/mysql_family.py). A setting MariaDB clamps at start-up fails the target."""

from __future__ import annotations

import pwd
import shutil
from pathlib import Path

from dbperf.engines.mariadb import MARIADB
from dbperf.errors import UserError
from dbperf.servers.lifecycle import cnf_value, run_setup
from dbperf.servers.mariadb_layout import CURRENT, layout_of
from dbperf.servers.mysql_family import MySQLFamilyServer


class MariaDBServer(MySQLFamilyServer):
    engine = "mariadb"
    scheme = "mysql"
    service_user = MARIADB.service_user
    apt_package = "mariadb-server"
    default_binaries = "/usr/sbin/mariadbd"
    admin_database = None
    socket_name = "mariadb.sock"
    pid_name = "mariadb.pid"
    layout = CURRENT  # the install's, once launched (servers/mariadb_layout.py)

    def launch(self, mariadbd: Path, user: pwd.struct_passwd, first: bool, port: int, password: str) -> None:
        # A release (or a build) keeps everything under one base directory: bin/mariadbd, scripts/, share/.
        basedir = mariadbd.parent.parent
        self.layout = layout_of(mariadbd)
        own_install = self.layout.script_in(basedir)
        relocated = own_install is not None
        install = str(own_install) if own_install else shutil.which(self.layout.system_script) or str(
            basedir / "bin" / self.layout.system_script)
        missing = self.missing_programs(mariadbd)
        if missing:
            raise UserError(missing)
        if not Path(install).is_file():
            raise UserError(f"MariaDB's install script not found: no {install} (beside {mariadbd}, or Debian's "
                            "mariadb-server package)")
        data = self.dir / "data"
        tmpdir = self.private_tmpdir(user)
        initialise = first or not (data / "mysql").is_dir()
        if initialise:
            # Run by root, the script hands the data directory and the bootstrap server to the mysql user itself
            # (--user), but the build's own tools it runs first (my_print_defaults) stay root's: where every program
            # must run as the service user (a PGO training, whose profile files must stay the trainer's: issue
            # 46), the whole script runs as that user, and names it as the socket-authenticated user --user named.
            as_user = [f"--auth-root-socket-user={user.pw_name}"] if self.run_as_service_user else [
                f"--user={user.pw_name}"]
            run_setup([install, "--no-defaults", *([f"--basedir={basedir}"] if relocated else []),
                       f"--datadir={data}", *as_user, *self.layout.install_args,
                       "--auth-root-authentication-method=socket"], self.log,
                      user.pw_name if self.run_as_service_user else None,
                      f"target {self.target.name!r}: {Path(install).name}", tmpdir)
        init_file = self.write_init_file(user, password, initialise)
        cnf = self.dir / "my.cnf"
        lines = self.cnf_lines(self.layout.section, data, port, user, init_file)
        if relocated:
            lines.append(f"basedir = {cnf_value(str(basedir), 'the base directory')}")
        cnf.write_text("\n".join([*lines, *self.setting_lines()]) + "\n")
        self.start_with(Path(mariadbd), cnf, init_file, user, port)

    def set_password(self, account: str, quoted: str) -> str:
        return self.layout.set_password(account, quoted)


SERVER = MariaDBServer  # found by servers/registry.py
