"""Simulated counters of a long-running multi-threaded process (MariaDB's mariadbd): callgrind with cache and branch
simulation (the same pinned geometry as cachegrind), whose counters can be zeroed and dumped while the process runs
(`callgrind_control --zero / --dump`), where cachegrind writes only at exit.

The lab runs callgrind with --compress-strings=no and --compress-pos=no, so every cost line is plain; a function's
self cost is the sum of its cost lines, leaving out each `calls=` line's next line (the inclusive cost of a call)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from dbperf.errors import UserError
from dbperf.explain.cachegrind import GEOMETRY, CachegrindProfile, parse_valgrind_out

CALLGRIND_OPTIONS = ["--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes", *GEOMETRY, "--compress-strings=no",
                     "--compress-pos=no", "--dump-instr=no"]
CONTROL_TIMEOUT_S = 600.0


def parse_callgrind_out(text: str) -> CachegrindProfile:
    """Self cost per function (`fn=`) of one callgrind dump, summed over every thread it holds."""
    return parse_valgrind_out(text, "callgrind")


def callgrind_control(pid: int, action: str, user: str) -> None:
    """`callgrind_control --zero PID` or `--dump PID`: sent to the running process through valgrind's gdbserver,
    as the user the process runs as (vgdb cannot reach another user's process, not even as root)."""
    try:
        proc = subprocess.run(["callgrind_control", f"--{action}", str(pid)], capture_output=True, text=True,
                              timeout=CONTROL_TIMEOUT_S, user=user, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UserError(f"callgrind_control --{action} {pid}: {e}") from None
    if proc.returncode != 0 or "Error" in proc.stdout:
        out = (proc.stdout + proc.stderr).strip().splitlines()
        raise UserError(f"callgrind_control --{action} {pid} failed: {' | '.join(out[-3:])}")


def newest_dump(out: Path, before: set[Path], timeout_s: float) -> Path:
    """The dump file callgrind wrote after `before` was listed, once it is complete (its totals written)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        new = sorted(set(out.glob("callgrind.out.*")) - before, key=lambda p: p.stat().st_mtime)
        if new and any(f"\n{end}:" in new[-1].read_text(errors="replace")[-4096:] for end in ("totals", "summary")):
            return new[-1]
        time.sleep(0.2)
    raise UserError(f"callgrind wrote no complete dump under {out} within {timeout_s:.0f} s")
