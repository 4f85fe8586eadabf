"""Dynamic access counts: loads and stores per global object and per thread under a workload.

Simulated (every machine): valgrind's lackey traces every load and store (--trace-mem=yes) and, with
--trace-sched=yes, which thread runs (valgrind runs one thread at a time); a small C filter compiled with the user's cc
reads that stream from a pipe and keeps only the counts per (thread, address) inside the analysed objects. Counts
are exact for the traced run, but the run is slowed about a hundredfold and threads are serialised, so they say who
touches what, how often, not how long it took.

Hardware (a host with precise memory sampling): `perf mem record`; refused here with perf's own reason."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dbperf.errors import UserError
from dbperf.layout.build import trace_filter
from dbperf.layout.static_map import StaticMap
from dbperf.tools import tail


@dataclass
class Access:
    loads: int = 0
    stores: int = 0


@dataclass
class DynamicCounts:
    mode: str  # "simulated" or "sampled"
    tool: str
    command: list[str]
    seconds: float
    # object name -> thread id -> loads/stores
    per_object: dict[str, dict[int, Access]] = field(default_factory=dict)
    records: int = 0
    counted: int = 0
    threads: int = 0
    mode_reason: str = ""
    unattributed: int = 0  # accesses inside the objects' mappings but in no symbol (padding, unnamed statics)


def memory_sampling_available() -> tuple[bool, str]:
    """Whether `perf mem` can sample loads and stores with data addresses here, with perf's own words if not."""
    perf = shutil.which("perf")
    if perf is None:
        return False, "perf is not installed"
    with tempfile.TemporaryDirectory(prefix="dbperf-permem-") as tmp:
        proc = subprocess.run([perf, "mem", "record", "-o", f"{tmp}/perf.data", "--", "true"], capture_output=True,
                              text=True, timeout=60)
    if proc.returncode != 0:
        return False, f"perf mem record: {tail(proc.stderr, 2) or tail(proc.stdout, 2) or 'no output'}"
    return True, "perf mem records loads and stores with data addresses on this CPU"


def _runtime_to_link(static: StaticMap, maps: list[tuple[int, int, int]]) -> int | None:
    """The load bias of the object: runtime address minus link-time address, from its offset-0 mapping."""
    first = min(static.segments, key=lambda s: s[1]) if static.segments else None
    for start, _end, offset in maps:
        if offset == 0 and first is not None:
            return start - (first[0] - first[0] % 4096)
    return None


def parse_filter_output(text: str, static: StaticMap) -> tuple[dict[str, dict[int, Access]], dict[str, int]]:
    return parse_filter_output_many(text, [static])[0]


def parse_filter_output_many(text: str, statics: list[StaticMap]) \
        -> list[tuple[dict[str, dict[int, Access]], dict[str, int]]]:
    """The filter's output split by analysed object (its index on the filter's command line): per object symbol,
    per thread, loads and stores, and the totals."""
    maps: list[list[tuple[int, int, int]]] = [[] for _ in statics]
    counts: list[tuple[int, int, int, int]] = []
    run_totals = {"records": 0, "counted": 0, "switches": 0}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "MAP" and len(parts) == 5 and 0 <= int(parts[1]) < len(statics):
            maps[int(parts[1])].append((int(parts[2], 16), int(parts[3], 16), int(parts[4], 16)))
        elif parts[0] == "C" and len(parts) == 5:
            counts.append((int(parts[1]), int(parts[2], 16), int(parts[3]), int(parts[4])))
        elif parts[0] == "T" and len(parts) == 4:
            run_totals = {"records": int(parts[1]), "counted": int(parts[2]), "switches": int(parts[3])}
    ranges = [(start, end, i) for i, object_maps in enumerate(maps) for start, end, _ in object_maps]
    biases = [_runtime_to_link(static, m) for static, m in zip(statics, maps, strict=True)]
    out: list[tuple[dict[str, dict[int, Access]], dict[str, int]]] = []
    per_objects: list[dict[str, dict[int, Access]]] = [defaultdict(dict) for _ in statics]
    unattributed = [0 for _ in statics]
    counted = [0 for _ in statics]
    threads: list[set[int]] = [set() for _ in statics]
    for tid, address, loads, stores in counts:
        i = next((i for start, end, i in ranges if start <= address < end), None)
        bias = None if i is None else biases[i]
        if i is None or bias is None:
            continue
        threads[i].add(tid)
        counted[i] += loads + stores
        obj = statics[i].find(address - bias)
        if obj is None:
            unattributed[i] += loads + stores
            continue
        acc = per_objects[i][obj.name].setdefault(tid, Access())
        acc.loads += loads
        acc.stores += stores
    for i in range(len(statics)):
        totals = {**run_totals, "counted": counted[i] if len(statics) > 1 else run_totals["counted"],
                  "unattributed": unattributed[i], "threads": len(threads[i]), "mapped": len(maps[i])}
        out.append((dict(per_objects[i]), totals))
    return out


def count_simulated(static: StaticMap, command: Sequence[str], env: dict[str, str] | None = None,
                    timeout_s: float = 1800, cwd: Path | None = None) -> DynamicCounts:
    return count_simulated_many([static], command, env, timeout_s, cwd)[0]


def count_simulated_many(statics: list[StaticMap], command: Sequence[str], env: dict[str, str] | None = None,
                         timeout_s: float = 1800, cwd: Path | None = None) -> list[DynamicCounts]:
    """Runs COMMAND under lackey with ASLR off and counts the loads and stores of the static maps' objects (the
    binary and the shared libraries named with it)."""
    if shutil.which("valgrind") is None:
        raise UserError("valgrind not found: simulated access counts need it (apt install valgrind)")
    filter_exe = trace_filter()
    paths = [os.path.realpath(s.path) for s in statics]
    read_end, write_end = os.pipe()
    started = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        cmd = ["setarch", platform.machine(), "-R", "valgrind", "--tool=lackey", "--trace-mem=yes",
               "--trace-sched=yes", f"--log-fd={write_end}", *command]
        try:
            vg = subprocess.Popen(cmd, pass_fds=(write_end,), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                  env=env, cwd=cwd)
        except OSError as e:
            os.close(read_end)
            os.close(write_end)
            raise UserError(f"cannot start valgrind: {e.strerror}") from None
        os.close(write_end)
        flt = subprocess.Popen([str(filter_exe), str(vg.pid), *paths], stdin=read_end, stdout=subprocess.PIPE,
                               text=True)
        os.close(read_end)
        try:
            rc = vg.wait(timeout=timeout_s)
            text, _ = flt.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            vg.kill()
            flt.kill()
            vg.wait()
            flt.wait()
            raise UserError(f"workload under valgrind did not finish within {timeout_s:.0f} s: "
                            f"{' '.join(command)[:120]}") from None
        except BaseException:
            vg.kill()
            flt.kill()
            vg.wait()
            flt.wait()
            raise
        if rc != 0:
            err.seek(0)
            out.seek(0)
            said = tail(err.read().decode(errors="replace")) or tail(out.read().decode(errors="replace"))
            raise UserError(f"workload failed under valgrind (exit {rc}): {' '.join(command)[:120]}: "
                            f"{said or 'no output'}")
        if flt.returncode != 0:
            raise UserError(f"the trace filter failed (exit {flt.returncode})")
    seconds = round(time.monotonic() - started, 3)
    tool = (f"{_valgrind_version()} lackey --trace-mem=yes --trace-sched=yes, ASLR off; threads serialised by "
            "valgrind; exact counts of the traced run")
    results = []
    for path, (per_object, totals) in zip(paths, parse_filter_output_many(text, statics), strict=True):
        if totals["mapped"] == 0:
            raise UserError(f"{path} was never mapped by the workload: it does not run the analysed binary")
        results.append(DynamicCounts(
            mode="simulated", tool=tool, command=list(command), seconds=seconds, per_object=per_object,
            records=totals["records"], counted=totals["counted"], threads=totals["threads"],
            unattributed=totals["unattributed"]))
    return results


def _valgrind_version() -> str:
    try:
        return subprocess.run(["valgrind", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return "valgrind"
