"""Dynamic access counts: loads and stores per global object and per thread under a workload.

Simulated (every machine): valgrind's lackey traces every load and store (--trace-mem=yes) and, with
--trace-sched=yes, which thread runs (valgrind runs one thread at a time); a small C filter compiled with the user's cc
reads that stream from a pipe and keeps only the counts per (thread, address) inside the analysed objects. Counts
are exact for the traced run, but the run is slowed about a hundredfold and threads are serialised, so they say who
touches what, how often, not how long it took. The trace is bounded (TraceBudget: 60 s by default, and optionally a
number of accesses): at the budget the program is stopped and the counts so far are analysed, and the report says
whether the whole run was traced.

Hardware (a host with precise memory sampling): `perf mem record`; refused here with perf's own reason."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn

from dbperf.errors import UserError
from dbperf.experiment.durations import parse_duration
from dbperf.explain.unhandled import unhandled_instruction
from dbperf.layout.build import trace_filter
from dbperf.layout.static_map import StaticMap
from dbperf.servers.watchdog import Watchdog
from dbperf.tools import tail

# The trace's default budget: lackey slows a program a hundred to ten thousand times (a two-thread loop of
# 20 M iterations each: about 0.1 s natively, 803 s traced), so a long run (a server, a long test) would take hours;
# a minute holds millions of accesses, enough for a hot loop's pattern.
DEFAULT_TRACE_SECONDS = 60.0
PROGRESS_EVERY_S = 1.0
# Without a terminal (a log, CI), a plain progress line this often instead of the live one.
PLAIN_PROGRESS_EVERY_S = 15.0
# From SIGTERM to SIGKILL: valgrind stops the program and flushes its trace in about a second.
STOP_GRACE_S = 10.0
# The filter reads what is left in the pipe (64 KiB) and prints its counts: well under a second, even loaded.
FILTER_DRAIN_S = 30.0


@dataclass(frozen=True)
class TraceBudget:
    """How much of the program's run is traced: this long (wall-clock, under valgrind), and at most this many
    memory accesses when given; the program is stopped at the first one reached."""
    seconds: float = DEFAULT_TRACE_SECONDS
    accesses: int | None = None


COUNT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKMG]?)\s*$")
SCALE = {"": 1, "k": 1_000, "K": 1_000, "M": 1_000_000, "G": 1_000_000_000}


def parse_budget(seconds: str | None, accesses: str | None) -> TraceBudget:
    """--trace-seconds (a duration: 90, 90s, 2m) and --trace-accesses (a count: 5000000, 5M), or a UserError."""
    limit = DEFAULT_TRACE_SECONDS if seconds is None else parse_duration(seconds, "--trace-seconds")
    if limit <= 0:
        raise UserError(f"--trace-seconds: must be more than 0, got {seconds!r}")
    count = None
    if accesses is not None:
        m = COUNT.match(accesses)
        if m is None:
            raise UserError(f"--trace-accesses: expected a count of memory accesses (e.g. 5000000 or 5M), "
                            f"got {accesses!r}")
        count = int(float(m.group(1)) * SCALE[m.group(2)])
        if count <= 0:
            raise UserError(f"--trace-accesses: must be more than 0, got {accesses!r}")
    return TraceBudget(limit, count)


@dataclass
class TraceExtent:
    """How much of the program's run the counts cover."""
    whole_run: bool
    stopped_by: str | None  # "time" or "accesses" (the budget), "interrupt", None: the program ended by itself
    seconds: float
    accesses: int
    budget_seconds: float
    budget_accesses: int | None = None
    unit: str = "memory accesses"  # what `accesses` counts ("samples" for perf mem)

    def summary(self) -> str:
        if self.whole_run:
            return f"traced the whole run ({self.seconds:.1f} s, {self.accesses:,} {self.unit})"
        if self.stopped_by == "interrupt":
            return (f"traced {self.seconds:.1f} s ({self.accesses:,} {self.unit}), stopped by an interrupt: the "
                    "program had not finished, the counts cover the start of its run only")
        budget = (f"--trace-seconds {self.budget_seconds:g}" if self.stopped_by == "time"
                  else f"--trace-accesses {self.budget_accesses:,}")
        return (f"traced {self.seconds:.1f} s ({self.accesses:,} {self.unit}), stopped at the budget ({budget}): "
                "the program had not finished, the counts cover the start of its run only")

    def as_json(self) -> dict[str, object]:
        return {"whole_run": self.whole_run, "stopped_by": self.stopped_by, "seconds": self.seconds,
                "traced": self.accesses, "traced_unit": self.unit, "budget_seconds": self.budget_seconds,
                "budget_accesses": self.budget_accesses, "summary": self.summary()}


def progress_text(records: int, counted: int, elapsed: float, budget: TraceBudget) -> str:
    of = f" of {budget.accesses:,}" if budget.accesses is not None else ""
    return (f"tracing under lackey: {elapsed:.0f} s of {budget.seconds:g} s, {records:,}{of} memory accesses, "
            f"{counted:,} in the analysed objects")


@contextlib.contextmanager
def _progress(err: Console | None, budget: TraceBudget) -> Iterator[Callable[[int, int, float], None]]:
    """A live status line on a terminal, updated every second; a plain line every PLAIN_PROGRESS_EVERY_S
    elsewhere."""
    if err is None:
        yield lambda records, counted, elapsed: None
        return
    if not err.is_interactive:
        last = [0.0]

        def plain(records: int, counted: int, elapsed: float) -> None:
            if elapsed - last[0] >= PLAIN_PROGRESS_EVERY_S:
                last[0] = elapsed
                err.print(f"dbperf: {progress_text(records, counted, elapsed, budget)}", markup=False,
                          highlight=False, soft_wrap=True)
        yield plain
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), console=err,
                  transient=True) as bar:
        task = bar.add_task(progress_text(0, 0, 0.0, budget), total=budget.seconds)

        def live(records: int, counted: int, elapsed: float) -> None:
            bar.update(task, completed=min(elapsed, budget.seconds),
                       description=progress_text(records, counted, elapsed, budget))
        yield live


# glibc's memset and memcpy use `rep stosb` / `rep movsb` above a few kilobytes, and valgrind runs such an instruction
# one byte at a time: lackey traced each byte as an access. mysqld 9.7.2's start-up made 811 M data accesses under
# cachegrind, 348 M of them byte stores of memset (performance_schema's tables zeroed); with these thresholds out of
# reach glibc uses 32-byte vector stores and the start-up makes 404 M (2026-11-28). Under lackey only; a traced
# window's counts of an object memset there are then in vector stores, as the hardware does them, not bytes.
LACKEY_TUNABLES = ("glibc.cpu.x86_rep_stosb_threshold=0x7fffffffffffffff",
                   "glibc.cpu.x86_rep_movsb_threshold=0x7fffffffffffffff")


def lackey_options() -> list[str]:
    """Every load and store, and which thread runs (valgrind runs one at a time). --fair-sched: threads take turns
    (a ticket lock); without it one thread can re-take valgrind's lock hundreds of times in a row on a loaded
    machine, and a bounded trace would see that thread only."""
    return ["--tool=lackey", "--trace-mem=yes", "--trace-sched=yes", "--fair-sched=try"]


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
    unattributed: int = 0  # accesses inside the objects' mappings but in no symbol (GOT, string literals, padding)
    # those accesses by the section they fall in (.got, .rodata, ...; NO_SECTION between sections), most first
    unattributed_by_section: dict[str, int] = field(default_factory=dict)
    trace: TraceExtent | None = None  # how much of the run was traced (None: counts made elsewhere, e.g. in tests)


NO_SECTION = "(no section)"


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


@dataclass
class FilterTotals:
    """What the trace filter counted for one analysed object."""
    records: int  # loads and stores of the whole traced run
    counted: int  # of those, in the object's mappings
    unattributed: int  # in the mappings but in no symbol
    unattributed_by_section: dict[str, int]  # those by section, most first
    threads: int  # threads that touched the object
    mapped: int  # mappings of the object seen (0: the workload never ran it)


def parse_filter_output(text: str, static: StaticMap) -> tuple[dict[str, dict[int, Access]], FilterTotals]:
    return parse_filter_output_many(text, [static])[0]


@dataclass
class _ObjectTally:
    """One analysed object's counts while the filter's output is read."""
    per_object: dict[str, dict[int, Access]] = field(default_factory=lambda: defaultdict(dict))
    unattributed: int = 0
    by_section: Counter[str] = field(default_factory=Counter)
    counted: int = 0
    threads: set[int] = field(default_factory=set)

    def add(self, static: StaticMap, link_address: int, tid: int, loads: int, stores: int) -> None:
        self.threads.add(tid)
        self.counted += loads + stores
        obj = static.find(link_address)
        if obj is None:
            self.unattributed += loads + stores
            self.by_section[static.section_at(link_address) or NO_SECTION] += loads + stores
            return
        acc = self.per_object[obj.name].setdefault(tid, Access())
        acc.loads += loads
        acc.stores += stores


def _filter_lines(text: str, objects: int) \
        -> tuple[list[list[tuple[int, int, int]]], list[tuple[int, int, int, int]], int, int]:
    """The filter's lines: each object's mappings (MAP), the counts by thread and address (C), and the run's
    totals (T: records, counted)."""
    maps: list[list[tuple[int, int, int]]] = [[] for _ in range(objects)]
    counts: list[tuple[int, int, int, int]] = []
    records = counted_in_run = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "MAP" and len(parts) == 5 and 0 <= int(parts[1]) < objects:
            maps[int(parts[1])].append((int(parts[2], 16), int(parts[3], 16), int(parts[4], 16)))
        elif parts[0] == "C" and len(parts) == 5:
            counts.append((int(parts[1]), int(parts[2], 16), int(parts[3]), int(parts[4])))
        elif parts[0] == "T" and len(parts) == 4:
            records, counted_in_run = int(parts[1]), int(parts[2])  # the third: thread switches, not used
    return maps, counts, records, counted_in_run


def parse_filter_output_many(text: str, statics: list[StaticMap]) \
        -> list[tuple[dict[str, dict[int, Access]], FilterTotals]]:
    """The filter's output split by analysed object (its index on the filter's command line): per object symbol,
    per thread, loads and stores, and the totals."""
    maps, counts, records, counted_in_run = _filter_lines(text, len(statics))
    ranges = [(start, end, i) for i, object_maps in enumerate(maps) for start, end, _ in object_maps]
    biases = [_runtime_to_link(static, m) for static, m in zip(statics, maps, strict=True)]
    tallies = [_ObjectTally() for _ in statics]
    for tid, address, loads, stores in counts:
        i = next((i for start, end, i in ranges if start <= address < end), None)
        bias = None if i is None else biases[i]
        if i is None or bias is None:
            continue
        tallies[i].add(statics[i], address - bias, tid, loads, stores)
    out: list[tuple[dict[str, dict[int, Access]], FilterTotals]] = []
    for i, tally in enumerate(tallies):
        totals = FilterTotals(records, tally.counted if len(statics) > 1 else counted_in_run, tally.unattributed,
                              dict(tally.by_section.most_common()), len(tally.threads), len(maps[i]))
        out.append((dict(tally.per_object), totals))
    return out


def count_simulated(static: StaticMap, command: Sequence[str], env: dict[str, str] | None = None,
                    budget: TraceBudget | None = None, cwd: Path | None = None,
                    err: Console | None = None) -> DynamicCounts:
    return count_simulated_many([static], command, env, budget, cwd, err)[0]


def count_simulated_many(statics: list[StaticMap], command: Sequence[str], env: dict[str, str] | None = None,
                         budget: TraceBudget | None = None, cwd: Path | None = None,
                         err: Console | None = None) -> list[DynamicCounts]:
    """Runs COMMAND under lackey with ASLR off and counts the loads and stores of the static maps' objects (the
    binary and the shared libraries named with it), until the program ends or the budget is spent."""
    if shutil.which("valgrind") is None:
        raise UserError("valgrind not found: simulated access counts need it (apt install valgrind)")
    budget = budget or TraceBudget()
    filter_exe = trace_filter()
    paths = [os.path.realpath(s.path) for s in statics]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as vg_err, tempfile.TemporaryFile() as counts:
        trace = _Trace()
        try:
            trace.start(command, filter_exe, paths, out, vg_err, counts, env, cwd, budget.accesses)
            end = trace.run(budget, err)
        finally:
            trace.stop()
        if end.exit_code != 0 and end.stopped_by is None:
            vg_err.seek(0)
            out.seek(0)
            said_vg = vg_err.read().decode(errors="replace")
            said = (unhandled_instruction(said_vg) or tail(said_vg)
                    or tail(out.read().decode(errors="replace")))
            raise UserError(f"workload failed under valgrind (exit {end.exit_code}): {' '.join(command)[:120]}: "
                            f"{said or 'no output'}")
        if trace.filter_failure:
            raise UserError(f"the trace filter failed: {trace.filter_failure}")
        counts.seek(0)
        text = counts.read().decode(errors="replace")
    tool = (f"{valgrind_version()} lackey --trace-mem=yes --trace-sched=yes --fair-sched=try, ASLR off; threads "
            "serialised by valgrind, taking turns; exact counts of the traced run")
    results = []
    for path, (per_object, totals) in zip(paths, parse_filter_output_many(text, statics), strict=True):
        if totals.mapped == 0 and end.interrupt is not None:
            raise end.interrupt
        if totals.mapped == 0 and end.stopped_by is not None:
            raise UserError(f"the trace budget ended the trace before {path} was mapped: give a larger "
                            f"--trace-seconds or --trace-accesses")
        if totals.mapped == 0:
            raise UserError(f"{path} was never mapped by the workload: it does not run the analysed binary")
        results.append(DynamicCounts(
            mode="simulated", tool=tool, command=list(command), seconds=end.seconds, per_object=per_object,
            records=totals.records, counted=totals.counted, threads=totals.threads,
            unattributed=totals.unattributed, unattributed_by_section=totals.unattributed_by_section,
            trace=end.trace(budget, totals.records)))
    if end.interrupt is not None:
        raise TraceInterrupted(getattr(end.interrupt, "signum", signal.SIGINT), results) from None
    return results


class TraceInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM, SIGHUP) while tracing: the trace was stopped as at the budget, and COUNTS hold what was
    counted so far, for the command to report before it exits as interrupted (nothing counted is lost)."""

    def __init__(self, signum: int, counts: list[DynamicCounts]) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.counts = counts
        self.checked: list[Any] = []  # the counts' findings, when the caller computes them


@dataclass
class _TraceEnd:
    exit_code: int | None
    stopped_by: str | None  # "time", "accesses" (the budget), "interrupt"; None: the program ended
    seconds: float
    interrupt: KeyboardInterrupt | None = None

    def trace(self, budget: TraceBudget, records: int) -> TraceExtent:
        return TraceExtent(whole_run=self.stopped_by is None, stopped_by=self.stopped_by, seconds=self.seconds,
                           accesses=records, budget_seconds=budget.seconds, budget_accesses=budget.accesses)


class _Trace:
    """Valgrind (in a session of its own, so that its process group holds the traced program and whatever it
    starts) writing its trace into a pipe read by the filter (in a session of its own too: a Ctrl-C at the
    terminal reaches the lab only, which stops both in order, so that the filter still prints its counts)."""

    def __init__(self) -> None:
        self.records = 0
        self.counted = 0
        self.filter_failure = ""
        self.vg: subprocess.Popen[bytes] | None = None
        self.flt: subprocess.Popen[bytes] | None = None
        self.watchdog: Watchdog | None = None
        self._filter_said: list[str] = []
        self._reader: threading.Thread | None = None
        self.started = time.monotonic()

    def start(self, command: Sequence[str], filter_exe: Path, paths: list[str], out: IO[bytes], vg_err: IO[bytes],
              counts: IO[bytes], env: dict[str, str] | None, cwd: Path | None, limit: int | None) -> None:
        read_end, write_end = os.pipe()
        try:
            cmd = ["setarch", platform.machine(), "-R", "valgrind", *lackey_options(), f"--log-fd={write_end}",
                   *command]
            try:
                self.vg = subprocess.Popen(cmd, pass_fds=(write_end,), stdout=out, stderr=vg_err,
                                           stdin=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True)
            except OSError as e:
                raise UserError(f"cannot start valgrind: {e.strerror}") from None
            self.watchdog = Watchdog.get()
            self.watchdog.watch_group(self.vg.pid)
            os.close(write_end)
            write_end = -1
            try:
                limit_args = [] if limit is None else ["-n", str(limit)]
                self.flt = subprocess.Popen([str(filter_exe), *limit_args, str(self.vg.pid), *paths], stdin=read_end,
                                            stdout=counts, stderr=subprocess.PIPE, start_new_session=True)
            except OSError as e:
                raise UserError(f"cannot start the trace filter {filter_exe}: {e.strerror}") from None
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)
        self._reader = threading.Thread(target=self._read_progress, daemon=True)
        self._reader.start()
        self.started = time.monotonic()

    def _read_progress(self) -> None:
        assert self.flt is not None and self.flt.stderr is not None
        for raw in self.flt.stderr:
            parts = raw.decode(errors="replace").split()
            if len(parts) == 3 and parts[0] == "P" and parts[1].isdigit() and parts[2].isdigit():
                self.records, self.counted = int(parts[1]), int(parts[2])
            elif parts:
                self._filter_said = [*self._filter_said[-4:], " ".join(parts)]

    def run(self, budget: TraceBudget, err: Console | None) -> _TraceEnd:
        """Waits for the program's end or the budget's, showing progress, then stops valgrind cleanly (SIGTERM:
        the program ends by it and valgrind flushes its trace) and lets the filter finish."""
        assert self.vg is not None
        stopped_by: str | None = None
        interrupt: KeyboardInterrupt | None = None
        with _progress(err, budget) as show:
            try:
                while True:
                    elapsed = time.monotonic() - self.started
                    try:
                        self.vg.wait(timeout=max(0.0, min(PROGRESS_EVERY_S, budget.seconds - elapsed)))
                        break
                    except subprocess.TimeoutExpired:
                        pass
                    elapsed = time.monotonic() - self.started
                    show(self.records, self.counted, elapsed)
                    if elapsed >= budget.seconds:
                        stopped_by = "time"
                    elif budget.accesses is not None and self.records >= budget.accesses:
                        stopped_by = "accesses"
                    if stopped_by is not None and self.vg.poll() is None:
                        break
                    stopped_by = None
            except KeyboardInterrupt as e:  # stopped like at the budget; a second one ends it at once (stop())
                stopped_by, interrupt = "interrupt", e
        seconds = round(time.monotonic() - self.started, 3)
        if stopped_by is not None:
            self._end_valgrind()
        self._end_filter()
        return _TraceEnd(self.vg.returncode, stopped_by, seconds, interrupt)

    def _end_valgrind(self) -> None:
        assert self.vg is not None
        if self.vg.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.vg.pid, signal.SIGTERM)
            try:
                self.vg.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self._kill_group()
                self.vg.wait()
        # Whatever the program started and left behind (it would also hold the trace pipe open).
        self._kill_group()

    def _kill_group(self) -> None:
        assert self.vg is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.vg.pid, signal.SIGKILL)

    def _end_filter(self) -> None:
        """The filter ends at the pipe's end of file; if something escaped the group and holds the pipe, SIGTERM
        makes it print what it has."""
        assert self.flt is not None and self.vg is not None
        self._kill_group()
        try:
            self.flt.wait(timeout=FILTER_DRAIN_S)
        except subprocess.TimeoutExpired:
            self.flt.terminate()
            try:
                self.flt.wait(timeout=FILTER_DRAIN_S)
            except subprocess.TimeoutExpired:
                self.flt.kill()
                self.flt.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)
        if self.flt.returncode != 0:
            said = "; ".join(self._filter_said) or "no output"
            self.filter_failure = f"exit {self.flt.returncode}: {said}"

    def stop(self) -> None:
        """Nothing is left running, however the trace ended (the program's end, the budget, Ctrl-C, an error): on
        the normal paths valgrind and the filter have already ended in order; this is the sweep, SIGKILL at once,
        so that a second Ctrl-C cannot cut it short."""
        if self.vg is not None:
            self._kill_group()
            self.vg.wait()
            if self.watchdog is not None:
                self.watchdog.forget_group(self.vg.pid)
        if self.flt is not None and self.flt.poll() is None:
            self.flt.kill()
            self.flt.wait()


def valgrind_version() -> str:
    try:
        return subprocess.run(["valgrind", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return "valgrind"
