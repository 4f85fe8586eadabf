"""The counting half of a server PGO build's deterministic guard (the build lab judges the counts,
buildlab/pgo_guard.py, and starts no server itself): the PGO build and its base each started as a lab server, the
training tables loaded, and the server's user-space instructions per query on the server training workload counted
under valgrind, N events minus 0 events, exactly as the counters steps count them (explain/profile.py's Profiler:
PostgreSQL's backends under cachegrind, mariadbd under callgrind). One connection, ASLR off: the same build, data,
seed and events give nearly the same count (PostgreSQL 15.18: four counts of one build within 0.16%; the backend's
waits for the client and its statistics flushes depend on timing), so one run of each build is enough.

Where valgrind cannot decode the build's instructions (-march=native on a CPU with AVX-512), the guard cannot count:
GuardCannotRun with valgrind's own reason, and the build lab records it as `not_run`."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dbperf.buildlab.pgo_guard import SEED, GuardCannotRun, GuardCounts
from dbperf.buildlab.training import TRAIN_TABLE_SIZE, TRAIN_TABLES, training_workloads
from dbperf.catalog.workload import Workload
from dbperf.errors import UserError
from dbperf.experiment.build_variants import SERVER_TRAINING
from dbperf.experiment.model import Experiment, Target
from dbperf.explain.mode import CounterMode
from dbperf.explain.profile import Profiler
from dbperf.explain.unhandled import unhandled_instruction

GUARD_EVENTS = 100  # per build and workload, as SQLite's guard: 1,000 train-mix queries
MODE = CounterMode("simulated", "the PGO guard (instructions per query, deterministic)")
BUILDS = ("pgo", "base")  # the targets' names, in the order they are counted


def _undecodable(profiler: Profiler, target: Target) -> str | None:
    """valgrind's refusal of an instruction of the target's server, when its log holds one."""
    started = profiler.servers.servers.get(target.name)
    if started is None:
        return None
    try:
        return unhandled_instruction(started[0].log.read_text(errors="replace"))
    except OSError:
        return None


def _per_query(profiler: Profiler, target: Target, w: Workload) -> tuple[float, str]:
    """The target's server instructions per query of `w`, and how they were counted."""
    try:
        profile = profiler.profile(target, w, "simulated")
    except UserError:
        said = _undecodable(profiler, target)
        if said:
            raise GuardCannotRun(said) from None
        raise
    return profile.per_query["instructions"], profile.method


def count_server_guard(engine: str, pgo: Path, base: Callable[[], Path]) -> GuardCounts:
    """Instructions per query of the server build at `pgo` (a build's `binaries`) and of its base, whose binaries
    `base` gives (from the cache, or built then), on the server training workload; GuardCannotRun where valgrind
    cannot run them (then the base is not asked for when it is the PGO build valgrind cannot run)."""
    workloads = training_workloads(SERVER_TRAINING)
    seconds = 0.0  # counting, without the base's build if it was built meanwhile
    queries = {w.name: GUARD_EVENTS * w.queries_per_event for w in workloads}
    counted: dict[str, list[tuple[float, str]]] = {}
    for name in BUILDS:  # one server under valgrind at a time
        binaries = pgo if name == "pgo" else base()
        started = time.monotonic()
        target = Target(name=name, engine=engine, library="", binaries=str(binaries))
        with tempfile.TemporaryDirectory(prefix="dbperf-pgo-guard-") as tmp:
            e = Experiment(path=Path(tmp) / "guard.toml", text="", benchmarks=tuple(workloads), targets=(target,),
                           base=target.name, tables=TRAIN_TABLES, table_size=TRAIN_TABLE_SIZE, seed=SEED)
            profiler = Profiler(e, Path(tmp), queries=lambda w: queries[w.name], mode=MODE, native_timing=False,
                                keep_functions=0)
            try:
                counted[target.name] = [_per_query(profiler, target, w) for w in workloads]
            finally:
                profiler.close()
        seconds += time.monotonic() - started
    pgo_ipq, base_ipq = (sum(c for c, _ in counted[name]) / len(workloads) for name in BUILDS)
    method = counted["pgo"][0][1]
    return GuardCounts(
        pgo=pgo_ipq, base=base_ipq, events=GUARD_EVENTS, queries=sum(queries.values()),
        workloads=tuple(w.name for w in workloads), seconds=seconds,
        method=f"the server's instructions (Ir) only: {method}; one connection, prepared statements, the "
               f"training's tables ({TRAIN_TABLES} × {TRAIN_TABLE_SIZE:,} rows) and seed; the mean over the "
               "training workloads")
