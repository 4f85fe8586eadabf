"""MySQL's recipe: cmake + ninja, from Debian's unstable source package."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from dbperf.buildlab.recipes.cmake_ninja import CmakeNinjaRecipe
from dbperf.engines.mysql import MYSQL


class MysqlRecipe(CmakeNinjaRecipe):
    """MySQL from Debian's unstable source package (mysql-9.7; engines/mysql.py names the suite): cmake + ninja, the
    server with InnoDB and the plugins MySQL builds by default; not the router, NDB cluster, the unit tests, the LDAP,
    Kerberos, FIDO/WebAuthn authentication plugins (each needs libraries or devices the lab has no use for), nor curl
    (the telemetry and OCI keyring components only). OpenSSL from the system (MySQL bundles none); zlib, zstd, lz4,
    editline, ICU, protobuf, rapidjson and Boost from the copies the source carries (mysql-9.7 9.7.2-4's extra/), so
    that the build needs no other development package. Checked against Debian's debian/rules (which builds with
    the system's libraries and the DEB layout) on 9.7.2-4: cmake configures with these options and warns only that
    it found no SASL and no LDAP (their plugins are off) and that FIDO and telemetry are skipped. Release build type
    with its flags emptied, as MariaDB's recipe: the variants' flags are the only optimisation flags of the server's
    own code (MySQL's cmake compiles its bundled ICU and zstd at -O3 whatever is asked: 202 of 3,826 steps of
    9.7.2-4). MySQL's own PGO switches (FPROFILE_USE) stay off, so its cmake adds no -Wno-missing-profile to the
    server's objects: the lab's -Wmissing-profile count sees them (ICU's own -Wno-missing-profile hides only ICU's).
    The standalone layout (bin/mysqld, share/) is what the lab's MySQL start-up knows from Oracle's tarballs."""
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
    SKIPPED = ("router", "ndb", "unittest", "mysql-test", "/test", "ldap", "kerberos", "fido", "webauthn")
    tools: ClassVar[dict[str, str]] = {"cmake": "cmake", "ninja": "ninja-build", "bison": "bison", "c++": "g++",
                                       "pkg-config": "pkg-config"}
    headers: ClassVar[dict[str, str]] = {"openssl/ssl.h": "libssl-dev", "curses.h": "libncurses-dev"}

    def binaries(self, prefix: Path) -> Path:
        return prefix  # what a MySQL target's `binaries` names: the basedir, as an Oracle tarball's

    def server_binary(self, prefix: Path) -> Path:
        return prefix / "bin" / "mysqld"


RECIPE = MysqlRecipe()
