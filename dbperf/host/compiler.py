"""The user's C compiler: which one, which version. The build lab and the probes compile with it.

Server builds may name another compiler (`compiler = "clang-16"`, Debian's clang-16); the default is the user's
(CC, else cc: gcc 12 on Debian 12)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache

from dbperf.errors import UserError

# A make the lab was started from (`make test`, a user's Makefile) exports these; inherited by a build's own make,
# MAKELEVEL > 0 makes PostgreSQL's top-level make believe it is a sub-make and skip its generated headers.
CALLER_MAKE_STATE = ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKE_TERMOUT", "MAKE_TERMERR")


def build_environment() -> dict[str, str]:
    """The environment of a build's tools: the user's, without the calling make's state, in the C locale (the
    build's output is parsed)."""
    env = {k: v for k, v in os.environ.items() if k not in CALLER_MAKE_STATE}
    env["LC_ALL"] = "C"
    return env


# compiler name -> (C compiler, C++ compiler, Debian package)
NAMED_COMPILERS = {"clang-16": ("clang-16", "clang++-16", "clang-16")}


@dataclass(frozen=True)
class Compiler:
    path: str
    version: str  # first line of --version, e.g. "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"
    is_gcc: bool
    cxx: str = "c++"  # the matching C++ compiler (MariaDB is C++)
    name: str = ""  # the name the target gave (`compiler = "clang-16"`); "" for the user's default
    launcher: str = ""  # a program every compile goes through (ccache, in a kept build tree); "" for none

    @property
    def command(self) -> str:
        """The C compiler as configure's CC takes it: the launcher, if any, before it."""
        return f"{self.launcher} {self.path}" if self.launcher else self.path


@cache
def find_compiler(named: str | None = None) -> Compiler:
    if named is not None:
        if named not in NAMED_COMPILERS:
            raise UserError(f"compiler: unknown compiler {named!r} (known: {', '.join(NAMED_COMPILERS)}; the "
                            "default is the user's CC)")
        cc_name, cxx_name, package = NAMED_COMPILERS[named]
        if shutil.which(cc_name) is None or shutil.which(cxx_name) is None:
            raise UserError(f"compiler {named!r}: {cc_name} not found (apt install {package})")
    else:
        cc_name, cxx_name = os.environ.get("CC", "cc"), os.environ.get("CXX", "c++")
    path = shutil.which(cc_name)
    if path is None:
        raise UserError(f"no C compiler: {cc_name!r} not found (apt install gcc, or set CC)")
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    version = out.splitlines()[0].strip() if out.strip() else "unknown"
    is_gcc = "clang" not in out.lower() and ("gcc" in out.lower() or "free software foundation" in out.lower())
    return Compiler(path=path, version=version, is_gcc=is_gcc, cxx=shutil.which(cxx_name) or cxx_name,
                    name=named or "")


def missing_headers(cc: Compiler, headers: dict[str, str], language: str = "c") -> list[str]:
    """The Debian packages of the headers in `headers` (header -> package) that the compiler cannot find on its own
    search path, as a build would (not a guess at /usr/include). `__has_include` looks the header up without
    compiling it: some refuse to be included bare (pcre2.h wants PCRE2_CODE_UNIT_WIDTH)."""
    compiler = cc.cxx if language == "c++" else cc.path
    missing = []
    for header, package in headers.items():
        probe = f"#if !__has_include(<{header}>)\n#error missing\n#endif\n"
        proc = subprocess.run([compiler, "-E", "-x", language, "-o", os.devnull, "-"], input=probe,
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0 and package not in missing:
            missing.append(package)
    return missing
