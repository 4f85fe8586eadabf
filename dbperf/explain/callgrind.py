"""Simulated counters of a long-running multi-threaded process (MariaDB's mariadbd): callgrind with cache and branch
simulation (the same pinned geometry as cachegrind), whose counters can be zeroed and dumped while the process runs
(`callgrind_control --zero / --dump`), where cachegrind writes only at exit.

The lab runs callgrind with --compress-strings=no and --compress-pos=no, so every cost line is plain; a function's
self cost is the sum of its cost lines, leaving out each `calls=` line's next line (the inclusive cost of a call).
With --separate-threads=yes a dump is one file per thread (`callgrind.out.PID.DUMP-THREAD`): the lab sums the threads
that served the client's connection (those that ran one of the engine's connection functions), since the background
threads' work (InnoDB's master thread, page cleaner, purge, timers) grows with the window's wall time, which valgrind
and the host's load stretch differently from one count to the next."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from dbperf.errors import UserError
from dbperf.explain.cachegrind import GEOMETRY, CachegrindProfile, parse_valgrind_out

CALLGRIND_OPTIONS = ["--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes", *GEOMETRY, "--compress-strings=no",
                     "--compress-pos=no", "--dump-instr=no", "--separate-threads=yes"]
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


def _complete(path: Path) -> bool:
    return any(f"\n{end}:" in path.read_text(errors="replace")[-4096:] for end in ("totals", "summary"))


def dump_files(out: Path, before: set[Path], timeout_s: float, settle_s: float = 1.0) -> list[Path]:
    """The files (one per thread) callgrind wrote after `before` was listed, once every one is complete and no new
    one has appeared for `settle_s`."""
    deadline = time.monotonic() + timeout_s
    seen: set[Path] = set()
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        new = set(out.glob("callgrind.out.*")) - before
        if new != seen:
            seen, quiet_since = new, time.monotonic()
        elif seen and time.monotonic() - quiet_since >= settle_s and all(_complete(p) for p in seen):
            return sorted(seen)
        time.sleep(0.2)
    raise UserError(f"callgrind wrote no complete dump under {out} within {timeout_s:.0f} s")


def _runs_any(profile: CachegrindProfile, functions: tuple[str, ...]) -> bool:
    """Whether a thread ran one of `functions` (callgrind names C++ functions with their signature: `f(THD*)`)."""
    wanted = set(functions)
    return any(re.split(r"[(<]", name, maxsplit=1)[0].rsplit("::", 1)[-1] in wanted and
               any(counts.values()) for name, counts in profile.functions.items())


def connection_threads(files: list[Path], functions: tuple[str, ...]) -> tuple[CachegrindProfile, int, int]:
    """The summed counts of the threads (one dump file each) that ran one of the connection `functions`; with how
    many threads were counted and how many the dump held."""
    total = CachegrindProfile(())
    counted = 0
    for path in files:
        thread = parse_callgrind_out(path.read_text(errors="replace"))
        if _runs_any(thread, functions):
            total, counted = total.plus(thread), counted + 1
    return total, counted, len(files)
