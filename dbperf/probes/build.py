"""Compiling a probe at first use with the user's cc at -O2, cached by source and compiler. A family that times a
server's own functions is C++: its harness with the functions' text, read from the release (server_code.py), in an
extracted.h beside the binary."""

from __future__ import annotations

import hashlib
from pathlib import Path

from dbperf.buildlab.paths import cache_root
from dbperf.host.compiler import find_compiler
from dbperf.probes.catalog import SOURCE_DIR, ProbeFamily
from dbperf.probes.server_code import RELEASES, extracted
from dbperf.tools import run_tool

FLAGS = ["-O2", "-pthread"]
CXX_FLAGS = ["-std=c++17"]  # MySQL's InnoDB headers use [[nodiscard]] and nested namespaces


def probe_binary(family: ProbeFamily) -> tuple[Path, list[str]]:
    """(executable, compile command); compiled once per source, header, compiler and flags."""
    cc = find_compiler()
    source = SOURCE_DIR / family.source
    server_text = extracted(RELEASES[family.server])[0] if family.server else ""
    digest = hashlib.sha256()
    for part in (source.read_bytes(), (SOURCE_DIR / "probe.h").read_bytes(), cc.version.encode(),
                 " ".join(FLAGS).encode(), server_text.encode()):
        digest.update(part)
    out_dir = cache_root() / "probes" / digest.hexdigest()[:16]
    exe = out_dir / family.name
    if family.server:
        cmd = [cc.cxx, *FLAGS, *CXX_FLAGS, "-I", str(out_dir), "-o", str(exe), str(source)]
    else:
        cmd = [cc.path, *FLAGS, "-o", str(exe), str(source)]
    if not exe.is_file():
        out_dir.mkdir(parents=True, exist_ok=True)
        if family.server:
            (out_dir / "extracted.h").write_text(server_text)
        run_tool(cmd, f"compiling probe {family.name}")
    return exe, cmd
