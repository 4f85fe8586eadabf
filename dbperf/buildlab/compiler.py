"""The user's C compiler: which one, which version. The build lab and the probes compile with it."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache

from dbperf.errors import UserError


@dataclass(frozen=True)
class Compiler:
    path: str
    version: str  # first line of --version, e.g. "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"
    is_gcc: bool


@cache
def find_compiler() -> Compiler:
    name = os.environ.get("CC", "cc")
    path = shutil.which(name)
    if path is None:
        raise UserError(f"no C compiler: {name!r} not found (apt install gcc, or set CC)")
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    version = out.splitlines()[0].strip() if out.strip() else "unknown"
    is_gcc = "clang" not in out.lower() and ("gcc" in out.lower() or "free software foundation" in out.lower())
    return Compiler(path=path, version=version, is_gcc=is_gcc)
