"""MySQL's recipes: cmake + ninja, from Debian's unstable source package; the default one, and a leaner one
(`lean = true`) that takes the libraries Debian 12 has from the system and leaves out the NDB engine and the X
plugin: the same server code on the query path the lab measures, 37% fewer compile steps."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from dbperf.buildlab.recipes.base import Departure, Recipe, with_options
from dbperf.buildlab.recipes.cmake_ninja import CmakeNinjaRecipe
from dbperf.engines.mysql import MYSQL


class MysqlRecipe(CmakeNinjaRecipe):
    """MySQL from Debian's unstable source package (mysql-9.7; engines/mysql.py names the suite): cmake + ninja, the
    server with InnoDB and the plugins MySQL builds by default; not the router, the unit tests, the LDAP,
    Kerberos, FIDO/WebAuthn authentication plugins (each needs libraries or devices the lab has no use for), nor curl
    (the telemetry and OCI keyring components only). OpenSSL from the system (MySQL bundles none); zlib, zstd, lz4,
    editline, ICU, protobuf, rapidjson and Boost from the copies the source carries (mysql-9.7 9.7.2-4's extra/), so
    that the build needs no other development package. Checked against Debian's debian/rules (which builds with
    the system's libraries and the DEB layout) on 9.7.2-4: cmake configures with these options and warns only that
    it found no SASL and no LDAP (their plugins are off) and that FIDO and telemetry are skipped. Release build type
    with its flags emptied, as MariaDB's recipe: the variants' flags are the only optimisation flags of the server's
    own code (MySQL's cmake compiles its bundled ICU and zstd at -O3 whatever is asked: 202 of 3,826 steps of
    9.7.2-4). MySQL's own PGO switches (FPROFILE_USE) stay off; its cmake still gives -Wno-missing-profile to a few
    targets whatever they are (InnoDB's innodb_zipdecompress, sql/'s binlog_reader.cc and gen_lex_token.cc). A
    partial scope's launcher appends the lab's profile flags after cmake's, so gcc's last word, -Wmissing-profile,
    holds (the query-path build counted 22 of the server's own objects without a profile, all innodb_zipdecompress's);
    a whole-program build's flags are CMAKE_CXX_FLAGS, before the targets' own, so those three go uncounted there.
    ICU's own -Wno-missing-profile hides only ICU's.
    The standalone layout (bin/mysqld, share/) is what the lab's MySQL start-up knows from Oracle's tarballs.
    -DWITH_NDB=OFF leaves out the NDB cluster's programs but not its storage engine plugin: MySQL 9.7's top-level
    CMakeLists.txt unsets WITH_NDBCLUSTER and the plugin is a DEFAULT one, so storage/ndb's ndbcluster and its
    NDB API (322 compile steps) are in this build, as in Debian's; the lean recipe leaves them out."""
    engine: ClassVar[str] = MYSQL.name
    # measured 2026-11-28: 3,653 s wall, 7,147 s of CPU for -O2 (docs/engines.md, MySQL)
    build_time: ClassVar[str] = "about an hour on 2 cores"
    tree_files: ClassVar[tuple[str, ...]] = ("CMakeLists.txt", "MYSQL_VERSION", "sql", "storage")
    options: ClassVar[tuple[str, ...]] = (
        "-GNinja", "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_C_FLAGS_RELEASE=-DNDEBUG",
        "-DCMAKE_CXX_FLAGS_RELEASE=-DNDEBUG", "-DINSTALL_LAYOUT=STANDALONE", "-DMYSQL_MAINTAINER_MODE=OFF",
        "-DWITH_ROUTER=OFF", "-DWITH_NDB=OFF", "-DWITH_NDBCLUSTER=OFF", "-DWITH_UNIT_TESTS=OFF",
        "-DWITH_AUTHENTICATION_LDAP=OFF", "-DWITH_AUTHENTICATION_KERBEROS=OFF",
        "-DWITH_AUTHENTICATION_WEBAUTHN=OFF", "-DWITH_FIDO=none", "-DWITH_CURL=none", "-DWITH_SSL=system",
        "-DWITH_ZLIB=bundled", "-DWITH_ZSTD=bundled", "-DWITH_LZ4=bundled", "-DWITH_EDITLINE=bundled",
        "-DWITH_ICU=bundled", "-DWITH_PROTOBUF=bundled", "-DWITH_RAPIDJSON=bundled", "-DWITH_SYSTEMD=OFF",
        "-DWITH_NUMA=OFF")
    SKIPPED: ClassVar[tuple[str, ...]] = ("router", "ndb", "unittest", "mysql-test", "/test", "ldap", "kerberos",
                                          "fido", "webauthn")
    tools: ClassVar[dict[str, str]] = {"cmake": "cmake", "ninja": "ninja-build", "bison": "bison", "c++": "g++",
                                       "pkg-config": "pkg-config"}
    headers: ClassVar[dict[str, str]] = {"openssl/ssl.h": "libssl-dev", "curses.h": "libncurses-dev"}
    # The query path a partial profile covers (`pgo_scope = "query-path"`, buildlab/profile_scope.py): the SQL layer
    # (its parser, generated into lab-build/sql/, included), InnoDB, mysys, the character sets and the network I/O.
    # A directory a full profile shows hot belongs here too; the engine's ProfileProof.objects must lie within.
    profile_dirs: ClassVar[tuple[str, ...]] = ("sql", "storage/innobase", "mysys", "strings", "vio")
    # 425 sources with 99.99% of the arc counts of the query-path build's training profile (2026-11-29: 44.3% of
    # those directories' instrumented compile seconds; docs/build-lab.md).
    hot_sources: ClassVar[str | None] = "mysql-9.7.2-hot-sources.json"
    data_sections: ClassVar[str | None] = (
        "MySQL's cmake prepends -ffunction-sections -fdata-sections to CMAKE_<LANG>_FLAGS_RELEASE "
        "(cmake/build_configurations/compiler_options.cmake, SECTIONS_FLAG), which the recipe's Release build "
        "keeps: every one of the 2,182 compile commands of the lean -O2 build of 9.7.2-4 carries it (its "
        "build.ninja, counted 2026-11-29)")

    def binaries(self, prefix: Path) -> Path:
        return prefix  # what a MySQL target's `binaries` names: the basedir, as an Oracle tarball's

    def server_binary(self, prefix: Path) -> Path:
        return prefix / "bin" / "mysqld"

    def lean(self) -> Recipe:
        return LEAN


# Counted on 9.7.2-4 with cmake configure alone (build.ninja's C and C++ compile edges, not timed; docs/build-lab.md):
# 3,405 steps with the default options, 2,135 with all of these; each saving is the default's count less the count
# with that one departure, and the seven add up to the 1,270.
LEANER = (
    Departure("ICU", ("-DWITH_ICU=system",), "Debian 12's ICU 72 instead of the bundled 77 (MySQL 9.7 needs 55 or "
              "later): the regular expression functions' library, which no catalog benchmark calls; the bundled "
              "copy is compiled at -O3 whatever the variant", 453),
    Departure("zstd", ("-DWITH_ZSTD=system",), "Debian 12's zstd 1.5.4 instead of 1.5.7 (9.7 needs 1.2.0 or later): "
              "the protocol's and the binary log's transaction compression, which the lab leaves off", 30),
    Departure("lz4", ("-DWITH_LZ4=system",), "Debian 12's lz4 1.9.4 instead of 1.10.0: InnoDB's page compression "
              "(COMPRESSION='lz4'), which no catalog table asks for", 4),
    Departure("zlib", ("-DWITH_ZLIB=system",), "Debian 12's zlib 1.2.13 instead of 1.3.2, as Debian's own build "
              "(WITH_ZLIB=system): compressed tables, COMPRESS() and the protocol's compression, none used", 15),
    Departure("protobuf", ("-DWITH_PROTOBUF=system",), "Debian 12's protobuf 3.21 instead of the bundled 24.4 and "
              "its abseil (9.7 needs 3.5 or later; past 3.21 it needs abseil too): mysqld links protobuf-lite only "
              "for the replication failover configuration that group replication propagates (sql/protobuf)", 293),
    Departure("NDB engine", ("-DWITHOUT_NDBCLUSTER=ON",), "the NDB cluster storage engine, which WITH_NDB=OFF "
              "leaves in (MySQL 9.7's CMakeLists.txt unsets WITH_NDBCLUSTER; the plugin is a DEFAULT one): the "
              "lab's tables are InnoDB on one server", 322),
    Departure("X plugin", ("-DWITH_MYSQLX=OFF",), "the X protocol's server plugin (port 33060), which the lab "
              "turns off at start-up anyway (loose-mysqlx = OFF) and its driver never speaks; its client library "
              "and messages are still built (36 steps)", 153),
)


class LeanMysqlRecipe(MysqlRecipe):
    """The default recipe with LEANER's departures: the same server, sql/, InnoDB, the performance schema and the
    plugins the lab loads built from the same sources with the same flags; the libraries Debian 12 has linked from
    the system, the NDB engine and the X plugin left out. Its options differ, so its builds have keys of their own,
    and a base and its variants (O2, pgo, bolt) asked with `lean = true` are all built alike."""
    # measured 2026-11-29 from an empty cache: 2,954 s wall, 5,761 s of CPU for -O2 (docs/build-lab.md)
    build_time: ClassVar[str] = "about 50 minutes on 2 cores"
    options: ClassVar[tuple[str, ...]] = with_options(MysqlRecipe.options, LEANER)
    departures: ClassVar[tuple[Departure, ...]] = LEANER
    SKIPPED: ClassVar[tuple[str, ...]] = (*MysqlRecipe.SKIPPED, "extra/icu", "extra/zstd", "extra/lz4",
                                          "extra/zlib", "extra/protobuf", "extra/abseil", "plugin/x")
    tools: ClassVar[dict[str, str]] = {**MysqlRecipe.tools, "protoc": "protobuf-compiler"}
    headers: ClassVar[dict[str, str]] = {
        **MysqlRecipe.headers, "unicode/uversion.h": "libicu-dev", "zstd.h": "libzstd-dev", "lz4.h": "liblz4-dev",
        "zlib.h": "zlib1g-dev", "google/protobuf/message.h": "libprotobuf-dev",
        "google/protobuf/compiler/importer.h": "libprotoc-dev"}

    def lean(self) -> Recipe:
        return self


RECIPE = MysqlRecipe()
LEAN = LeanMysqlRecipe()
