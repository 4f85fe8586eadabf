"""Sampled access counts on a host with precise memory sampling: `perf mem record` (Intel mem-loads/mem-stores,
AMD IBS), then `perf script` with the data addresses, the data-source field (load or store) and the mmap events.
The perf output is turned into the trace filter's format (MAP and C records) so that one parser maps addresses
back to symbols. The counts are samples, not every access: the findings' thresholds are lower accordingly.

Not exercised on real memory samples here (this VM has no PMU); the conversion is tested on perf's own output of
`perf record -d` (software page faults carry data addresses and the same mmap events)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from dbperf.errors import UserError
from dbperf.layout.dynamic import (
    STOP_GRACE_S,
    DynamicCounts,
    TraceBudget,
    TraceExtent,
    parse_filter_output_many,
)
from dbperf.layout.static_map import StaticMap
from dbperf.tools import run_tool, tail

MMAP = re.compile(r"PERF_RECORD_MMAP2? (\d+)/(\d+): \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (0x[0-9a-f]+|\d+)"
                  r"[^\]]*\]: (\S+) (.*)$")
# The file offset given to the anonymous mapping after an object's last one (its .bss): any value but 0, which
# marks the mapping the load bias is computed from.
ANON = 1
SAMPLE = re.compile(r"^\s*(\d+)\s+(\S+):\s+([0-9a-f]+)\s*(.*)$")


def _kind(event: str, data_src: str) -> str | None:
    if "OP LOAD" in data_src:
        return "load"
    if "OP STORE" in data_src:
        return "store"
    name = event.lower()
    if "load" in name:
        return "load"
    if "store" in name:
        return "store"
    return None


def perf_script_to_filter(text: str, paths: list[str]) -> tuple[str, dict[str, int]]:
    """perf script lines (`-F tid,event,addr,data_src --show-mmap-events`) as the trace filter would have printed
    them: the mappings of the named objects (and the anonymous mapping right after one, its .bss), and samples
    per (thread, address)."""
    index = {p: i for i, p in enumerate(paths)}
    maps: list[tuple[int, int, int, int]] = []
    counts: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    last: tuple[int, int] | None = None  # (object, end) of the last mapping of a named object
    stats = {"samples": 0, "unclassified": 0}
    for line in text.splitlines():
        m = MMAP.search(line)
        if m:
            start, length = int(m.group(3), 16), int(m.group(4), 16)
            offset = int(m.group(5), 0)
            path = m.group(7).strip()
            obj = index.get(os.path.realpath(path)) if path.startswith("/") else None
            if obj is None and path == "//anon" and last is not None and last[1] == start:
                obj, offset = last[0], ANON
            if obj is not None:
                maps.append((obj, start, start + length, offset))
                last = (obj, start + length)
            continue
        s = SAMPLE.match(line)
        if s is None:
            continue
        stats["samples"] += 1
        kind = _kind(s.group(2), s.group(4))
        if kind is None:
            stats["unclassified"] += 1
            continue
        counts[(int(s.group(1)), int(s.group(3), 16))][0 if kind == "load" else 1] += 1
    out = [f"MAP {o} {a:x} {b:x} {off:x}" for o, a, b, off in maps]
    out += [f"C {tid} {addr:x} {ls[0]} {ls[1]}" for (tid, addr), ls in counts.items()]
    out.append(f"T {stats['samples']} {sum(sum(v) for v in counts.values())} 0")
    return "\n".join(out) + "\n", stats


def run_bounded(cmd: list[str], seconds: float, stop: signal.Signals, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> tuple[int, bool, float, str]:
    """CMD in a session of its own for at most SECONDS, then sent STOP (then SIGKILL to its group after a grace
    period); nothing of its group is left running however this ends. Exit code, whether the budget stopped it,
    seconds, the tail of its output."""
    started = time.monotonic()
    stopped = False
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                cwd=cwd, start_new_session=True)
        try:
            try:
                proc.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                stopped = True
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, stop)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=STOP_GRACE_S)
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.seek(0)
        said = tail(log.read().decode(errors="replace"))
    return proc.returncode, stopped, round(time.monotonic() - started, 3), said


def count_sampled_many(statics: list[StaticMap], command: Sequence[str], env: dict[str, str] | None = None,
                       timeout_s: float = 1800, cwd: Path | None = None,
                       budget: TraceBudget | None = None) -> list[DynamicCounts]:
    perf = shutil.which("perf")
    if perf is None:
        raise UserError("perf not found: sampled access counts need it")
    paths = [os.path.realpath(s.path) for s in statics]
    budget = budget or TraceBudget()
    with tempfile.TemporaryDirectory(prefix="dbperf-perfmem-") as tmp:
        data = f"{tmp}/perf.data"
        # SIGINT is perf record's own way to end: it stops the workload (SIGTERM) and writes what it sampled.
        code, stopped, seconds, said = run_bounded([perf, "mem", "record", "-o", data, "--", *command],
                                                   budget.seconds, signal.SIGINT, env=env, cwd=cwd)
        if code != 0 and not stopped:
            raise UserError(f"workload failed under perf mem record (exit {code}): "
                            f"{' '.join(command)[:120]}: {said or 'no output'}")
        text = run_tool([perf, "script", "-i", data, "-F", "tid,event,addr,data_src", "--show-mmap-events"],
                        "perf script", timeout=timeout_s).stdout
    converted, stats = perf_script_to_filter(text, paths)
    results = []
    for path, (per_object, totals) in zip(paths, parse_filter_output_many(converted, statics), strict=True):
        if totals.mapped == 0:
            raise UserError(f"{path} was never mapped by the workload: it does not run the analysed binary")
        results.append(DynamicCounts(
            mode="sampled", tool=f"perf mem record / perf script: {stats['samples']:,} samples "
                                 f"({stats['unclassified']:,} neither load nor store); counts are samples",
            command=list(command), seconds=seconds, per_object=per_object, records=totals.records,
            counted=totals.counted, threads=totals.threads, unattributed=totals.unattributed,
            unattributed_by_section=totals.unattributed_by_section,
            trace=TraceExtent(whole_run=not stopped, stopped_by="time" if stopped else None, seconds=seconds,
                              accesses=stats["samples"], budget_seconds=budget.seconds, unit="samples")))
    return results
