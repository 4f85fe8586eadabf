"""Compiling the layout check's C programs (the lackey trace filter, the demo) with the user's cc, cached by source,
compiler and flags."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from dbperf.buildlab.paths import cache_root
from dbperf.host.compiler import find_compiler
from dbperf.tools import run_tool

SOURCE_DIR = Path(__file__).parent / "c"
FILTER_FLAGS = ["-O2"]
# -g for the DWARF source lines in the report; -fno-toplevel-reorder keeps the variables in source order.
DEMO_FLAGS = ["-O2", "-g", "-pthread", "-fno-toplevel-reorder"]


def compile_c(source: str, name: str, flags: list[str], out_dir: Path | None = None) -> Path:
    """The executable of dbperf/layout/c/SOURCE built with FLAGS; cached unless OUT_DIR is given."""
    cc = find_compiler()
    path = SOURCE_DIR / source
    if out_dir is None:
        digest = hashlib.sha256()
        for part in (path.read_bytes(), cc.version.encode(), " ".join(flags).encode()):
            digest.update(part)
        out_dir = cache_root() / "layout" / digest.hexdigest()[:16]
    exe = out_dir / name
    if not exe.is_file():
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = out_dir / f".{name}.{os.getpid()}"
        run_tool([cc.path, *flags, "-o", str(tmp), str(path)], f"compiling {source}")
        tmp.replace(exe)  # atomic: a concurrent run never sees half a binary
    return exe


def trace_filter() -> Path:
    return compile_c("trace_filter.c", "trace_filter", FILTER_FLAGS)


def demo(extra_flags: list[str] | None = None, out_dir: Path | None = None) -> Path:
    return compile_c("demo.c", "demo", [*DEMO_FLAGS, *(extra_flags or [])], out_dir)


def demo_object(extra_flags: list[str], out_dir: Path) -> Path:
    """The demo compiled to an object (out_dir/demo.o), for links that differ by their flags alone (--fix)."""
    obj = out_dir / "demo.o"
    out_dir.mkdir(parents=True, exist_ok=True)
    run_tool([find_compiler().path, *DEMO_FLAGS, *extra_flags, "-c", "-o", str(obj), str(SOURCE_DIR / "demo.c")],
             "compiling demo.c")
    return obj


def demo_link(obj: Path, extra_flags: list[str], exe: Path) -> Path:
    """The demo's object linked into `exe` with the demo's flags and `extra_flags`."""
    run_tool([find_compiler().path, *DEMO_FLAGS, *extra_flags, "-o", str(exe), str(obj)], f"linking {exe.name}")
    return exe
