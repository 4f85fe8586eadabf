"""Simulated counters: the driver under valgrind's cachegrind with pinned cache geometry and ASLR off, so the same
binary, inputs and environment give the same counts on any machine (as [SQLite]
and [iai-callgrind] measure: docs/sources.md)."""

from __future__ import annotations

import platform
import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from dbperf.errors import UserError
from dbperf.explain.unhandled import unhandled_instruction
from dbperf.records import DriverJob, RunResult, driver_result, encode
from dbperf.tools import run_tool

# The geometry CI tools pin: I1 32K/8-way/64B, D1 32K/8-way/64B, LL 8M/16-way/64B.
GEOMETRY = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"]
EVENTS = ("Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw", "Bc", "Bcm", "Bi", "Bim")


@dataclass
class CachegrindProfile:
    """Event counts per function (and in total) of one process."""
    events: tuple[str, ...]
    functions: dict[str, dict[str, int]] = field(default_factory=dict)

    def total(self) -> dict[str, int]:
        out = {e: 0 for e in self.events}
        for counts in self.functions.values():
            for e, v in counts.items():
                out[e] += v
        return out

    def plus(self, other: CachegrindProfile) -> CachegrindProfile:
        """Two processes' counts together (an empty profile adds nothing)."""
        events = self.events or other.events
        names = set(self.functions) | set(other.functions)
        zero = {e: 0 for e in events}
        return CachegrindProfile(events, {
            n: {e: self.functions.get(n, zero).get(e, 0) + other.functions.get(n, zero).get(e, 0) for e in events}
            for n in names})

    def minus(self, other: CachegrindProfile) -> CachegrindProfile:
        names = set(self.functions) | set(other.functions)
        zero = {e: 0 for e in self.events}
        return CachegrindProfile(self.events, {
            n: {e: self.functions.get(n, zero)[e] - other.functions.get(n, zero).get(e, 0) for e in self.events}
            for n in names})


def parse_valgrind_out(text: str, tool: str = "cachegrind") -> CachegrindProfile:
    """Self cost per function (`fn=`) of a cachegrind.out or (uncompressed) callgrind dump, whatever the source file
    and summed over every thread a dump holds. A `calls=` line (callgrind's) says the next cost line is the call's
    inclusive cost, not the function's own: it is left out. Callgrind's cost lines may start with a relative
    position (+N, -N, *); trailing zero counts may be omitted."""
    events: tuple[str, ...] = ()
    functions: dict[str, dict[str, int]] = defaultdict(dict)
    current: dict[str, int] | None = None
    skip_next = False
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("events:"):
            events = tuple(line.split(":", 1)[1].split())
        elif line.startswith("fn="):
            current = functions[line[3:]]
            for e in events:
                current.setdefault(e, 0)
        elif line.startswith("calls="):
            skip_next = True
        elif (line[0].isdigit() or line[0] in "+-*") and current is not None:
            if skip_next:
                skip_next = False
                continue
            for e, v in zip(events, line.split()[1:], strict=False):
                current[e] += int(v)
    if not events:
        raise ValueError(f"not a {tool} output file (no events: line)")
    return CachegrindProfile(events, dict(functions))


def parse_cachegrind_out(text: str) -> CachegrindProfile:
    """Sums the per-line counts of a cachegrind.out file by function (`fn=`), whatever the source file."""
    return parse_valgrind_out(text, "cachegrind")


def valgrind_available() -> None:
    if shutil.which("valgrind") is None:
        raise UserError("valgrind not found: simulated counters need it (apt install valgrind)")


def profile_command(argv: list[str], env: dict[str, str] | None = None, timeout_s: float = 1800,
                    jit: bool = False) -> tuple[CachegrindProfile, str]:
    """`argv` run to its end under cachegrind (the profiler's cache geometry, ASLR off): its counts and its output.
    `jit`: the program writes code as it runs (sysbench's LuaJIT), so valgrind checks every store against the code
    it has translated."""
    valgrind_available()
    with tempfile.TemporaryDirectory(prefix="dbperf-cg-") as tmp:
        out_file = Path(tmp) / "cachegrind.out"
        cmd = ["setarch", platform.machine(), "-R", "valgrind", "--tool=cachegrind", "--cache-sim=yes",
               "--branch-sim=yes", *GEOMETRY, *(["--smc-check=all"] if jit else []),
               f"--cachegrind-out-file={out_file}", *argv]
        proc = run_tool(cmd, f"cachegrind run of {Path(argv[0]).name}", timeout=timeout_s,
                        explain=unhandled_instruction, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", **(env or {})})
        return parse_cachegrind_out(out_file.read_text()), proc.stdout


def run_under_cachegrind(driver: str, job: DriverJob, env: dict[str, str] | None = None,
                         timeout_s: float = 1800) -> tuple[CachegrindProfile, RunResult]:
    """Runs `driver run JOB` under cachegrind with ASLR off; returns the profile and the driver's result."""
    with tempfile.TemporaryDirectory(prefix="dbperf-cg-job-") as tmp:
        job_file = Path(tmp) / "job.json"
        job_file.write_bytes(encode(job))
        profile, out = profile_command([driver, "run", str(job_file)], env, timeout_s)
        return profile, driver_result(RunResult, out, "cachegrind run")
