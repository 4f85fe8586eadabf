"""How a MariaDB install is laid out, asked by its launch (servers/mariadb.py): since 10.5 the server is
bin/mariadbd, installed by scripts/mariadb-install-db and reading its [mariadbd] group; before, bin/mysqld,
mysql_install_db (in bin/ or scripts/) and [mysqld], with no ALTER USER before 10.2. The released binaries 10.1 to
10.4 (the InnoDB release series) are the older layout. Chosen by the server program the install holds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class MariaDBLayout:
    program: str  # the server program's file name
    scripts: tuple[str, ...]  # the install script under the base directory, first found (a relocated install)
    system_script: str  # the install script on PATH (Debian's package)
    section: str  # the my.cnf group the server reads
    install_args: tuple[str, ...]  # what this script takes beyond the lab's common arguments
    alter_user: bool  # ALTER USER exists (10.2 on); else SET PASSWORD sets a password

    def script_in(self, basedir: Path) -> Path | None:
        return next((basedir / s for s in self.scripts if (basedir / s).is_file()), None)

    def set_password(self, account: str, quoted: str) -> str:
        """The statement that gives an existing account this run's password."""
        if self.alter_user:
            return f"ALTER USER {account} IDENTIFIED BY {quoted};"
        return f"SET PASSWORD FOR {account} = PASSWORD({quoted});"


# --skip-test-db: no world-writable test database; 10.1's script has no such option (its mysqld refuses unknown
# ones), and --force skips its resolveip host check, which the released jar does not ship.
CURRENT = MariaDBLayout("mariadbd", ("scripts/mariadb-install-db",), "mariadb-install-db", "mariadbd",
                        ("--skip-test-db",), alter_user=True)
OLDER = MariaDBLayout("mysqld", ("scripts/mysql_install_db", "bin/mysql_install_db"), "mysql_install_db", "mysqld",
                      ("--force",), alter_user=False)


def layout_of(program: Path) -> MariaDBLayout:
    """The layout of the install whose server program is `program` (a target's binaries)."""
    return OLDER if program.name == OLDER.program else CURRENT
