"""Profiling one (target, benchmark): counters per query of the measured phase only, and the per-function split.

The driver runs a fixed number of events N, then 0 events, from the same freshly restored data; the difference is
what the N events cost, without connection setup, statement preparation or process start and exit. Simulated mode
runs both under cachegrind; hardware mode under `perf stat` (and `perf record` for the functions).
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dbperf.catalog.workload import Workload, compile_statements
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.explain.cachegrind import GEOMETRY, CachegrindProfile, run_under_cachegrind
from dbperf.explain.mode import CounterMode, detect_mode
from dbperf.explain.perfstat import STAT_EVENTS, perf_record_top, perf_stat
from dbperf.explain.server_profile import ServerProfiling, counting_of
from dbperf.host.driver import driver_path, run_job
from dbperf.records import DriverJob, Profile, RunResult, Slowdown, TopFunction
from dbperf.targets.sqlite_data import SqliteData

TOP_N = 15
KEEP_FUNCTIONS = 300  # per-function figures kept for diffs
# Cycle estimate of the CI tools: L1 hit 1, LL hit 5, RAM 35.
LL_HIT_CYCLES, RAM_CYCLES = 5, 35


def _valgrind_version() -> str:
    try:
        return subprocess.run(["valgrind", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return "valgrind"


def simulated_counters(events: Mapping[str, float]) -> dict[str, float]:
    """Cachegrind's events (of a process, or of one function) as the simulated counters every view names: the
    same figures per query and per function, so that a function's share of a counter's change adds up."""
    l1_misses = events["I1mr"] + events["D1mr"] + events["D1mw"]
    ll_misses = events["ILmr"] + events["DLmr"] + events["DLmw"]
    l1_hits = events["Ir"] + events["Dr"] + events["Dw"] - l1_misses
    ll_hits = l1_misses - ll_misses
    return {
        "instructions": events["Ir"],
        "i1_misses": events["I1mr"],
        "d1_misses": events["D1mr"] + events["D1mw"],
        "ll_misses": ll_misses,
        "branches": events["Bc"] + events["Bi"],
        "branch_mispredicts_simulated_predictor": events["Bcm"] + events["Bim"],
        "estimated_cycles": l1_hits + LL_HIT_CYCLES * ll_hits + RAM_CYCLES * ll_misses,
    }


def simulated_per_query(delta: CachegrindProfile, queries: int) -> dict[str, float]:
    c = {name: value / queries for name, value in simulated_counters(delta.total()).items()}
    pct = 100.0 * c["i1_misses"] / c["instructions"] if c["instructions"] else 0.0
    return {"instructions": c["instructions"], "i1_misses": c["i1_misses"], "i1_miss_pct_of_instructions": pct,
            "d1_misses": c["d1_misses"], "ll_misses": c["ll_misses"], "branches": c["branches"],
            "branch_mispredicts_simulated_predictor": c["branch_mispredicts_simulated_predictor"],
            "estimated_cycles": c["estimated_cycles"]}


def _top(functions: dict[str, dict[str, float]], key: str, n: int) -> list[TopFunction]:
    total = sum(max(f.get(key, 0), 0) for f in functions.values()) or 1
    ranked = sorted(functions.items(), key=lambda kv: -kv[1].get(key, 0))[:n]
    return [TopFunction(name, f.get(key, 0), f.get(key, 0) / total) for name, f in ranked if f.get(key, 0) > 0]


class Profiler:
    """Profiles cells of one experiment, loading each target's data once."""

    def __init__(self, e: Experiment, work: Path, queries: int | Callable[[Workload], int] = 20_000,
                 mode: CounterMode | None = None, native_timing: bool = True,
                 data: dict[str, SqliteData] | None = None, keep_functions: int | None = KEEP_FUNCTIONS) -> None:
        """`queries`: per profile, or a function of the benchmark; `native_timing` False: simulated mode skips the
        native run that only times the slowdown (the simulated tier wants the counts alone); `data`: SQLite targets'
        data already loaded (by the run), by target name; `keep_functions`: the per-function figures kept, the
        costliest by instructions first (None: every function, so that their changes add up to the total's)."""
        self.e = e
        self.work = work
        self.queries = queries
        self.mode = mode or detect_mode()
        self.native_timing = native_timing
        self.keep_functions = keep_functions
        self.data: dict[str, SqliteData] = dict(data or {})
        self.servers = ServerProfiling(e)
        self.counted: dict[str, Path] = {}

    def _events(self, benchmark: Workload) -> int:
        queries = self.queries(benchmark) if callable(self.queries) else self.queries
        return max(1, math.ceil(queries / benchmark.queries_per_event))

    def close(self) -> None:
        """Stops the servers started for profiling and removes the counted copies."""
        self.servers.close()
        for path in self.counted.values():
            shutil.rmtree(path.parent, ignore_errors=True)

    def _counted_copy(self, target: Target) -> Path:
        """Where cachegrind's runs read the target's data: a file whose path has the same length in every run
        and every `dbperf explain` on this host (a folder made by mkdtemp in the temporary folder). The driver and
        SQLite keep the path on the heap, so its length moves what follows and memcpy/memcmp's alignments with it:
        one cell counted 7,972 and 7,976 instructions per query from two path lengths (0.05%), 0.13% apart on CI."""
        if target.name not in self.counted:
            self.counted[target.name] = Path(tempfile.mkdtemp(prefix="dbperf-counted-")) / "work.db"
        return self.counted[target.name]

    def _data(self, target: Target) -> SqliteData:
        if target.name not in self.data:
            d = SqliteData(self.work, target, self.e)
            d.load()
            self.data[target.name] = d
        return self.data[target.name]

    def _jobs(self, target: Target, benchmark: Workload, database: Path | None = None) -> tuple[DriverJob, int]:
        data = self._data(target)
        events = self._events(benchmark)
        job = target.process.apply(data.job(database or data.working)).replace(
            mode="run", threads=1, time_s=1.0, warmup_s=0.0, seed=self.e.seed, events=events,
            workload=compile_statements(benchmark, self.e.table_size))
        return job, events

    def profile(self, target: Target, benchmark: Workload, mode: str | None = None) -> Profile:
        profile = self._profile(target, benchmark, mode)
        if target.tool:  # the cells ran with sysbench/pgbench; the counted queries came from the lab's driver
            profile.method += (f"; the queries were sent by dbperf-driver, not by the target's {target.tool} (the "
                               f"catalog's statements; the server's counters, {target.tool}'s own cost is not in them)")
        return profile

    def _profile(self, target: Target, benchmark: Workload, mode: str | None) -> Profile:
        mode = mode or self.mode.mode
        if target.is_server:
            if mode != "simulated":
                return self._server_hardware(target, benchmark)
            return self._server_simulated(target, benchmark)
        if mode == "simulated":
            return self._simulated(target, benchmark)
        return self._hardware(target, benchmark)

    def _server_simulated(self, target: Target, benchmark: Workload) -> Profile:
        """The server's N-event and 0-event windows under valgrind, counted as its process model says."""
        kind = target.descriptor
        counting = counting_of(kind)
        events = self._events(benchmark)
        started = time.monotonic()
        counted = counting.windows(self.servers, target, benchmark, events)
        simulated_s = time.monotonic() - started
        if counted.result.events != events or counted.result.errors:
            raise UserError(f"{target.name} {benchmark.name}: the profiled run did {counted.result.events} events "
                            f"with {counted.result.errors} errors, expected {events} clean ones")
        queries = events * benchmark.queries_per_event
        return self._simulated_profile(
            target, benchmark, counted.full.minus(counted.empty), events, queries,
            method=counting.method(kind.server_program, events, queries, counted),
            slowdown=Slowdown(native_s=None, simulated_s=round(simulated_s, 3), factor=None,
                              what=counting.slowdown(kind.server_program)),
            tool=counting.tool(_valgrind_version()))

    def _server_hardware(self, target: Target, benchmark: Workload) -> Profile:
        if self.mode.mode != "hardware":
            raise UserError(f"target {target.name!r}: hardware counters of the server's processes asked for, but "
                            f"{self.mode.reason}")
        events = self._events(benchmark)
        full, result_n = self.servers.hardware_window(target, benchmark, events)
        empty, _ = self.servers.hardware_window(target, benchmark, 0)
        if result_n.events != events or result_n.errors:
            raise UserError(f"{target.name} {benchmark.name}: the counted run did {result_n.events} events with "
                            f"{result_n.errors} errors, expected {events} clean ones")
        queries = events * benchmark.queries_per_event
        attached = target.descriptor.perf_attached
        counts = {k: (full.counts[k] - empty.counts.get(k, 0.0)) / queries for k in full.counts}
        per_query: dict[str, float] = {k.replace("-", "_"): v for k, v in counts.items()}
        cycles, instructions = counts.get("cycles"), counts.get("instructions")
        if cycles and instructions:
            per_query["ipc"] = instructions / cycles
        if instructions and "L1-icache-load-misses" in counts:
            per_query["l1i_miss_pct_of_instructions"] = 100 * counts["L1-icache-load-misses"] / instructions
        return Profile(
            mode="hardware", mode_reason=self.mode.reason, tool="perf stat -x, -p (attached to the server)",
            target=target.name, benchmark=benchmark.name, threads=1, events=events, queries=queries,
            method=f"perf stat attached to the server process ({attached}) during {events} events minus the same "
                   f"during 0 events, divided by {queries} queries; the server's other work in the window stays "
                   "in; no per-function split for servers",
            per_query=per_query, unsupported_events=sorted(set(full.unsupported)))

    def _simulated(self, target: Target, benchmark: Workload) -> Profile:
        database = self._counted_copy(target)
        job, events = self._jobs(target, benchmark, database)
        data = self._data(target)
        env = target.process.environment()
        native_s = None
        if self.native_timing:
            data.restore_to(database)
            native_started = time.monotonic()
            native = run_job(job, RunResult, 600, env=env)
            native_s = time.monotonic() - native_started
            if not native.ok or native.result is None:
                raise UserError(f"{target.name} {benchmark.name}: native run failed: {native.error}")
        data.restore_to(database)
        started = time.monotonic()
        counted = job.replace(deterministic=True)
        full, result_n = run_under_cachegrind(driver_path(), counted, env)
        simulated_s = time.monotonic() - started
        data.restore_to(database)
        empty, _ = run_under_cachegrind(driver_path(), counted.replace(events=0), env)
        for path in database.parent.iterdir():  # the copy is made again for the next profile
            path.unlink()
        if result_n.events != events or result_n.errors:
            raise UserError(f"{target.name} {benchmark.name}: the profiled run did {result_n.events} events with "
                            f"{result_n.errors} errors, expected {events} clean ones")
        queries = events * benchmark.queries_per_event
        return self._simulated_profile(
            target, benchmark, full.minus(empty), events, queries,
            method=f"cachegrind of {events} events minus cachegrind of 0 events, divided by {queries} queries",
            slowdown=Slowdown(native_s=round(native_s, 3), simulated_s=round(simulated_s, 3),
                              factor=round(simulated_s / native_s, 1) if native_s else None,
                              what="wall time of the driver process under cachegrind / natively, same job")
            if native_s is not None else
            Slowdown(native_s=None, simulated_s=round(simulated_s, 3), factor=None,
                     what="wall time of the driver process under cachegrind; not timed natively"))

    def _simulated_profile(self, target: Target, benchmark: Workload, delta: CachegrindProfile, events: int,
                           queries: int, method: str, slowdown: Slowdown, tool: str | None = None) -> Profile:
        per_function = {name: {e: v / queries for e, v in counts.items()} for name, counts in delta.functions.items()}
        ranked = sorted(per_function.items(), key=lambda kv: -abs(kv[1]["Ir"]))
        kept = dict(ranked if self.keep_functions is None else ranked[:self.keep_functions])
        return Profile(
            mode="simulated",
            mode_reason=self.mode.reason if self.mode.mode == "simulated" else "asked for simulated counters",
            tool=tool or f"{_valgrind_version()} cachegrind, {' '.join(GEOMETRY)}, ASLR off (setarch -R), "
                 "branch predictor simulated",
            target=target.name, benchmark=benchmark.name, threads=1, events=events, queries=queries,
            method=method, per_query=simulated_per_query(delta, queries),
            top_by_instructions=_top(per_function, "Ir", TOP_N),
            top_by_i1_misses=_top(per_function, "I1mr", TOP_N),
            functions={name: simulated_counters(f) for name, f in kept.items()},
            slowdown=slowdown)

    def _hardware(self, target: Target, benchmark: Workload) -> Profile:
        job, events = self._jobs(target, benchmark)
        data = self._data(target)
        env = target.process.environment()
        stats = []
        for n in (events, 0):
            data.restore()
            stat, _ = perf_stat(driver_path(), job.replace(events=n), ["-e", ",".join(STAT_EVENTS)], env)
            stats.append(stat)
        full, empty = stats
        queries = events * benchmark.queries_per_event
        counts = {k: (full.counts[k] - empty.counts.get(k, 0.0)) / queries for k in full.counts}
        per_query: dict[str, float] = {k.replace("-", "_"): v for k, v in counts.items()}
        unsupported = sorted(set(full.unsupported))
        cycles, instructions = counts.get("cycles"), counts.get("instructions")
        if cycles and instructions:
            per_query["ipc"] = instructions / cycles
        if instructions and "L1-icache-load-misses" in counts:
            per_query["l1i_misses_per_1000_instructions"] = 1000 * counts["L1-icache-load-misses"] / instructions
            per_query["l1i_miss_pct_of_instructions"] = 100 * counts["L1-icache-load-misses"] / instructions
        if instructions and "branch-misses" in counts:
            per_query["branch_misses_per_1000_instructions"] = 1000 * counts["branch-misses"] / instructions
        if cycles and "branch-misses" in counts:
            per_query["branch_miss_cost_estimate_pct"] = 100 * 20 * counts["branch-misses"] / cycles
        data.restore()
        topdown: dict[str, Any]
        try:
            td, _ = perf_stat(driver_path(), job, ["-M", "TopdownL1"], env)
            topdown = td.metrics or {"unavailable": "perf printed no TopdownL1 metrics"}
        except UserError as err:
            topdown = {"unavailable": str(err)}
        data.restore()
        top_cycles = perf_record_top(driver_path(), job, "cycles", env)
        data.restore()
        top_icache = [] if "L1-icache-load-misses" in unsupported else perf_record_top(
            driver_path(), job, "L1-icache-load-misses", env)
        cyc = cycles or 0.0
        return Profile(
            mode="hardware", mode_reason=self.mode.reason, tool="perf stat -x, / perf record",
            target=target.name, benchmark=benchmark.name, threads=1, events=events, queries=queries,
            method=f"perf stat of {events} events minus perf stat of 0 events, divided by {queries} queries",
            per_query=per_query, unsupported_events=unsupported, topdown_l1=topdown,
            top_by_cycles=[TopFunction(s, share * cyc, share) for s, share in top_cycles[:TOP_N]],
            top_by_i1_misses=[TopFunction(s, None, share) for s, share in top_icache[:TOP_N]],
            functions={s: {"cycles": share * cyc} for s, share in top_cycles[:KEEP_FUNCTIONS]},
        )
