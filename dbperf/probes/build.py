"""Compiling a probe at first use with the user's cc at -O2, cached by source and compiler."""

from __future__ import annotations

import hashlib
from pathlib import Path

from dbperf.buildlab.paths import cache_root
from dbperf.host.compiler import find_compiler
from dbperf.probes.catalog import SOURCE_DIR, ProbeFamily
from dbperf.tools import run_tool

FLAGS = ["-O2", "-pthread"]


def probe_binary(family: ProbeFamily) -> tuple[Path, list[str]]:
    """(executable, compile command); compiled once per source, header, compiler and flags."""
    cc = find_compiler()
    source = SOURCE_DIR / family.source
    digest = hashlib.sha256()
    for part in (source.read_bytes(), (SOURCE_DIR / "probe.h").read_bytes(), cc.version.encode(),
                 " ".join(FLAGS).encode()):
        digest.update(part)
    out_dir = cache_root() / "probes" / digest.hexdigest()[:16]
    exe = out_dir / family.name
    cmd = [cc.path, *FLAGS, "-o", str(exe), str(source)]
    if not exe.is_file():
        out_dir.mkdir(parents=True, exist_ok=True)
        run_tool(cmd, f"compiling probe {family.name}")
    return exe, cmd
