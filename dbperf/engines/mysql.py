"""MySQL: a server the lab starts from a user's MySQL install (`binaries = PATH`: a basedir as Oracle's tarballs lay
it out, bin/mysqld and share/, or the mysqld program itself), or an external server (`dsn`). No registry this project
reaches serves a MySQL server binary, and Debian's own `mysqld` is a link to MariaDB's mariadbd: a MySQL target names
its install. The family's parts (protocol, option parser, InnoDB counters) are mysql_family.py's."""

from __future__ import annotations

from collections.abc import Mapping

from dbperf.engines.descriptor import Engine
from dbperf.engines.mysql_family import FAMILY_FIELDS, LAB_OWNED, client_argv_of
from dbperf.engines.owned_reasons import LISTEN, LOGINS, PORT, SOCKET, Owned

# The oldest MySQL the lab starts: 8.0 (caching_sha2_password, the data dictionary, `mysqld --initialize-insecure`
# as the lab runs it, CREATE USER IF NOT EXISTS).
MIN_VERSION = (8, 0)

# MySQL's own listeners besides the classic protocol's: the X Plugin (33060, every address by default: the lab turns
# it off) and the administrative interface.
MYSQL_OWNED: dict[str, Owned] = {
    **LAB_OWNED,
    "mysqlx": LISTEN, "mysqlx_bind_address": LISTEN, "mysqlx_port": PORT, "mysqlx_socket": SOCKET,
    "admin_address": LISTEN, "admin_port": PORT, "create_admin_listener_thread": LISTEN,
    "authentication_policy": LOGINS, "default_authentication_plugin": LOGINS,
}


def profiled_settings(config: Mapping[str, str]) -> dict[str, str]:
    """Under valgrind: valgrind does not see libaio completions, so InnoDB would wait for its first read forever."""
    return {"innodb_use_native_aio": "0"}


MYSQL = Engine(
    name="mysql", title="MySQL", server=True,
    # Measured on MySQL 9.7.2 (the lab's -O2 build of Debian's 9.7.2-4), 2026-11-28, `dbperf run --keep-data` at
    # table_size = 100000 (du of the data directory): 310 MB, of which 197 MB the initialised server (redo 105 MB,
    # undo 34 MB, mysql.ibd 27 MB, doublewrite 17 MB, ibdata1 13 MB), 64 MB the pristine and working tables and 49 MB
    # the binary log (on by default in MySQL 8.0+): 1,130 bytes per row. The load: 100,000 rows in 11.8 s and
    # 200,000 in 39.8 s (with a compile beside it at the lowest priority); MariaDB 10.11 beside it, 200,000 in 23.9 s.
    row_bytes=1_130, load_rows_per_s=8_000, empty_server_bytes=200_000_000,
    dsn_schemes=("mysql://",),
    lab_owned_reasons=MYSQL_OWNED,
    # Debian's mariadb-client answers as `mysql` too and speaks caching_sha2_password (libmariadb's plugin)
    client="mysql", client_argv=client_argv_of("mysql"),
    # No release of this host's carries MySQL: Debian's unstable suite serves 9.7 (checked 2026-11-26).
    debian_source_package="mysql-9.7", debian_source_suite="unstable",
    profiled_settings=profiled_settings,
    server_program="mysqld",
    # Binlog replication (FAMILY_FIELDS) needs MySQL 8.0.26+ (the REPLICA/SOURCE statements), WAIT_FOR_EXECUTED_GTID_SET
    # as the wait: dbperf/replication/mysql_binlog.py, its section's rules binlog_rules.MYSQL_RULES.
    **FAMILY_FIELDS,
)
