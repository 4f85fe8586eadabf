"""MySQL started by the lab from a MySQL install the target names (`binaries`: a basedir laid out as Oracle's
tarballs, bin/mysqld and share/, or the mysqld program): `mysqld --initialize-insecure` into the target's private
data directory, then the family's my.cnf, init file and restore (servers/mysql_family.py), with MySQL's X Plugin off
(it would listen on every address, port 33060). The install is checked first, in one line each: not there, a MariaDB
install (Debian's /usr/sbin/mysqld is a link to mariadbd), or a MySQL older than the lab supports."""

from __future__ import annotations

import pwd
import re
from pathlib import Path

from dbperf.engines.mariadb import MARIADB
from dbperf.engines.mysql import MIN_VERSION, MYSQL
from dbperf.errors import UserError
from dbperf.servers.lifecycle import cnf_value, run_setup
from dbperf.servers.mysql_family import MySQLFamilyServer
from dbperf.servers.process import run_probe

VERSION = re.compile(r"Ver (\d+)\.(\d+)\.(\d+)(\S*)")
MARIADB_PROGRAMS = ("mariadbd", "mariadb-install-db")


def mysqld_of(binaries: Path) -> Path:
    """The mysqld program of a target's `binaries`: a basedir's bin/mysqld, or the program itself."""
    return binaries / "bin" / "mysqld" if binaries.is_dir() else binaries


def install_problem(binaries: Path) -> str | None:
    """Why `binaries` is not a MySQL install the lab can start, in one line, or None."""
    mysqld = mysqld_of(binaries)
    basedir = mysqld.parent.parent
    named = f"binaries = {str(binaries)!r}"
    if not binaries.exists():  # before the MariaDB look: a missing path's basedir would be / (Debian's /bin)
        return f"{named}: MySQL server not found: no {binaries} (a MySQL basedir holds bin/mysqld and share/)"
    if any((basedir / "bin" / p).exists() for p in MARIADB_PROGRAMS) or mysqld.resolve().name == "mariadbd":
        return (f"{named} is a MariaDB install ({mysqld} is MariaDB's server): give the target engine = \"mariadb\", "
                "or a MySQL basedir (bin/mysqld, share/)")
    if not mysqld.is_file():
        return f"{named}: no MySQL server there (no {mysqld}; a MySQL basedir holds bin/mysqld and share/)"
    try:  # as the service user, its profile (a PGO build's instrumented mysqld) kept out of the training's
        out = run_probe([mysqld, "--version"], MYSQL.service_user, f"{mysqld} --version")
    except UserError as e:
        return f"{named}: {mysqld} cannot run: {e}"
    m = VERSION.search(out)
    if m is None:
        return f"{named}: {mysqld} --version does not name a version ({out.strip()[:80]!r})"
    if MARIADB.name in (m.group(4) + out).lower():  # MariaDB's mysqld says "-MariaDB"
        return (f"{named} is a MariaDB install ({mysqld} says {m.group(0).removeprefix('Ver ')}): give the target "
                "engine = \"mariadb\", or a MySQL basedir")
    version = (int(m.group(1)), int(m.group(2)))
    if version < MIN_VERSION:
        return (f"{named}: MySQL {m.group(1)}.{m.group(2)}.{m.group(3)} is older than the lab supports (MySQL "
                f"{MIN_VERSION[0]}.{MIN_VERSION[1]} and later)")
    return None


class MySQLServer(MySQLFamilyServer):
    engine = "mysql"
    scheme = "mysql"
    service_user = MYSQL.service_user
    apt_package = "mariadb-server"  # Debian's package that creates the mysql user (MySQL itself is not packaged)
    default_binaries = ""  # none: Debian's mysqld is MariaDB's; a MySQL target names its install
    binaries_needed = ("a MySQL target names its install: binaries = PATH (a MySQL basedir, as Oracle's tarballs lay "
                       "it out) or dsn = \"mysql://...\" (Debian's mysqld is MariaDB's)")
    admin_database = None
    socket_name = "mysqld.sock"
    pid_name = "mysqld.pid"

    @classmethod
    def program_files(cls, binaries: Path) -> list[Path]:
        return [mysqld_of(binaries)]

    @classmethod
    def install_problem(cls, binaries: Path) -> str | None:
        return install_problem(binaries)

    def my_cnf(self, data: Path, port: int, user: pwd.struct_passwd, init_file: Path | None, basedir: Path) -> str:
        """The family's lines, the install's basedir (share/ for its messages and charsets), the X Plugin off, then
        the target's settings. `loose-`: a lean lab build has no X Plugin, and mysqld stops at an option it does not
        know; with the plugin, the option applies as without the prefix."""
        lines = [*self.cnf_lines("mysqld", data, port, user, init_file),
                 f"basedir = {cnf_value(str(basedir), 'the base directory')}", "loose-mysqlx = OFF"]
        return "\n".join([*lines, *self.setting_lines()]) + "\n"

    def launch(self, binaries: Path, user: pwd.struct_passwd, first: bool, port: int, password: str) -> None:
        if not self.target.binaries:
            raise UserError(f"target {self.target.name!r}: {self.binaries_needed}")
        problem = install_problem(binaries)
        if problem:
            raise UserError(f"target {self.target.name!r}: {problem}")
        mysqld = mysqld_of(binaries)
        basedir = mysqld.parent.parent
        data = self.dir / "data"
        tmpdir = self.private_tmpdir(user)
        initialise = first or not (data / "mysql").is_dir()
        if initialise:
            # root hands the new data directory to the service user (--user); a server that must run as that user
            # throughout (a PGO training) initialises it as that user
            run_setup([str(mysqld), "--no-defaults", "--initialize-insecure", f"--basedir={basedir}",
                       f"--datadir={data}", f"--tmpdir={tmpdir}",
                       *([] if self.run_as_service_user else [f"--user={user.pw_name}"])],
                      self.log, user.pw_name if self.run_as_service_user else None,
                      f"target {self.target.name!r}: mysqld --initialize-insecure")
        init_file = self.write_init_file(user, password, initialise)
        cnf = self.dir / "my.cnf"
        cnf.write_text(self.my_cnf(data, port, user, init_file, basedir))
        self.start_with(Path(mysqld), cnf, init_file, user, port)


SERVER = MySQLServer  # found by servers/registry.py
