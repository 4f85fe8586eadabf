"""System calls of a client process and its threads, counted by `strace -f -c` (where a client's system time goes).
The counts are exact; strace's ptrace stops slow the client down many times, so the run that counts is never the run
that is timed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from dbperf.errors import UserError
from dbperf.tools import run_tool

ROW = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$")


def parse_strace_summary(text: str) -> dict[str, int]:
    """Calls per system call name from `strace -c` output (the `total` row left out)."""
    calls = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m and m.group(2) != "total":
            calls[m.group(2)] = int(m.group(1))
    return calls


def count_syscalls(argv: list[str], env: dict[str, str] | None = None) -> tuple[str, dict[str, int]]:
    """(the client's output, calls per system call) of `argv` run to its end under `strace -f -c`."""
    strace = shutil.which("strace")
    if strace is None:
        raise UserError("strace not found (apt install strace)")
    with tempfile.TemporaryDirectory(prefix="dbperf-strace-") as tmp:
        summary = Path(tmp) / "summary"
        proc = run_tool([strace, "-f", "-c", "-o", str(summary), "--", *argv], f"{Path(argv[0]).name} under strace",
                        env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)
        return proc.stdout + proc.stderr, parse_strace_summary(summary.read_text())


def per_query_text(calls: dict[str, int], queries: int, top: int = 4) -> tuple[float, str]:
    """(system calls per query, the most frequent ones per query as text)."""
    total = sum(calls.values()) / max(queries, 1)
    ranked = sorted(calls.items(), key=lambda kv: -kv[1])[:top]
    return total, ", ".join(f"{name} {n / max(queries, 1):.2f}" for name, n in ranked)
