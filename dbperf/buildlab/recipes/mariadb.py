"""MariaDB's recipe: cmake + ninja, a minimal plugin set."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from dbperf.buildlab.recipes.cmake_ninja import CmakeNinjaRecipe
from dbperf.engines.mariadb import MARIADB


class MariadbRecipe(CmakeNinjaRecipe):
    """cmake + ninja, a minimal plugin set: the server with InnoDB, Aria, MyISAM and the small storage engines and
    plugins MariaDB builds by default; not ColumnStore, RocksDB, Mroonga, Spider, Connect, TokuDB, OQGraph, S3 (each
    large, none used by the lab's benchmarks), nor Galera (wsrep), mariabackup, PAM/GSSAPI/HashiCorp/AWS plugins
    (which need more libraries), the embedded server or the unit tests. System zlib, OpenSSL, PCRE2 and libfmt (the
    bundled ones would be downloaded at build time). Release build type with its flags emptied, so the variants'
    flags are the only optimisation flags (NDEBUG and MariaDB's own DBUG_OFF stay). The standalone layout (bin/,
    scripts/, share/) is what the lab's MariaDB start-up knows from released binaries."""
    engine: ClassVar[str] = MARIADB.name
    build_time: ClassVar[str] = "about 10 minutes on 2 cores"
    tree_files: ClassVar[tuple[str, ...]] = ("CMakeLists.txt", "VERSION", "sql", "storage")
    options: ClassVar[tuple[str, ...]] = (
        "-GNinja", "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_C_FLAGS_RELEASE=-DNDEBUG",
        "-DCMAKE_CXX_FLAGS_RELEASE=-DNDEBUG", "-DINSTALL_LAYOUT=STANDALONE", "-DMYSQL_MAINTAINER_MODE=OFF",
        "-DPLUGIN_COLUMNSTORE=NO", "-DPLUGIN_ROCKSDB=NO", "-DPLUGIN_MROONGA=NO", "-DPLUGIN_SPIDER=NO",
        "-DPLUGIN_CONNECT=NO", "-DPLUGIN_TOKUDB=NO", "-DPLUGIN_OQGRAPH=NO", "-DPLUGIN_S3=NO",
        "-DPLUGIN_AUTH_PAM=NO", "-DPLUGIN_AUTH_GSSAPI=NO", "-DPLUGIN_HASHICORP_KEY_MANAGEMENT=NO",
        "-DPLUGIN_AWS_KEY_MANAGEMENT=NO", "-DWITH_WSREP=OFF", "-DWITH_MARIABACKUP=OFF",
        "-DWITH_EMBEDDED_SERVER=OFF", "-DWITH_UNIT_TESTS=OFF", "-DWITH_SSL=system", "-DWITH_ZLIB=system",
        "-DWITH_PCRE=system", "-DWITH_LIBFMT=system", "-DWITH_SYSTEMD=no", "-DWITH_NUMA=OFF",
        "-DCONC_WITH_UNITTEST=OFF", "-DIGNORE_AIO_CHECK=ON")
    SKIPPED = ("columnstore", "rocksdb", "mroonga", "spider", "connect", "oqgraph", "unittest", "test", "wsrep",
               "mariabackup", "libmysqld", "galera", "wolfssl", "pcre", "zlib", "extra/libfmt")
    tools: ClassVar[dict[str, str]] = {"cmake": "cmake", "ninja": "ninja-build", "bison": "bison", "c++": "g++"}
    # the system libraries `options` asks for, and ncurses for the client programs: cmake stops without them
    headers: ClassVar[dict[str, str]] = {"zlib.h": "zlib1g-dev", "openssl/ssl.h": "libssl-dev",
                                         "pcre2.h": "libpcre2-dev", "fmt/format.h": "libfmt-dev",
                                         "curses.h": "libncurses-dev"}
    # The query path a partial profile covers (`pgo_scope = "query-path"`, buildlab/profile_scope.py): MySQL's
    # directories, which MariaDB keeps under the same names (sql/ with its generated parser, storage/innobase/,
    # mysys/, strings/, vio/).
    profile_dirs: ClassVar[tuple[str, ...]] = ("sql", "storage/innobase", "mysys", "strings", "vio")

    def binaries(self, prefix: Path) -> Path:
        return prefix / "bin" / "mariadbd"  # what a MariaDB target's `binaries` names: the server binary

    def server_binary(self, prefix: Path) -> Path:
        return prefix / "bin" / "mariadbd"


RECIPE = MariadbRecipe()
