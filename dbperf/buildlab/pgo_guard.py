"""The deterministic guard of a SQLite PGO build: on its own training workload, one thread, under
cachegrind, the build that used the profile must execute fewer instructions per query than its base (the same
flags without PGO). A profile can pass every check of profile_proof.py and still make the code worse (trained on
too little, or on what the build then mis-optimises); the guard is the last word before the build is cached.

Counts, not times: the same library, data, seed and events give the same instruction count on any machine, so one
run of each is enough. Each run is N events minus 0 events from a fresh copy of the same database (connection,
preparation, process start and exit cancel out), as the simulated tier counts (explain/profile.py); instructions
only (no cache simulation), ASLR off.

A server PGO build's guard is counted by the runner (runner/server_pgo_guard.py: the build lab starts no server) and
judged here, by the same rule (`refusal`) into the same manifest figures (`figures`).
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbperf.buildlab.training import TRAIN_TABLE_SIZE, TRAIN_TABLES
from dbperf.catalog.schema import sbtest
from dbperf.catalog.workload import Workload, compile_statements
from dbperf.engines.sqlite import SQLITE
from dbperf.errors import UserError
from dbperf.host.driver import driver_path, run_job
from dbperf.records import DriverJob, LoadResult, RunResult, driver_result, encode
from dbperf.tools import run_tool

GUARD_EVENTS = 100  # per workload and statement mode: thousands of queries, a few seconds under cachegrind
SEED = 7  # the training's
RUN_TIMEOUT_S = 1800


@dataclass(frozen=True)
class GuardCounts:
    """What a guard counted: instructions per query of the PGO build and of its base on the training workloads."""
    pgo: float
    base: float
    events: int  # per workload, statement mode and build (N of N minus 0)
    queries: int  # per statement mode and build, over every workload: the N events' queries
    workloads: tuple[str, ...]
    seconds: float
    method: str


class GuardCannotRun(Exception):
    """The guard cannot count on this host (valgrind cannot decode the build's instructions: -march=native on a CPU
    with AVX-512): said in the manifest's `guard.not_run` and on stderr, and the build is kept."""


def figures(c: GuardCounts) -> dict[str, Any]:
    """The manifest's `pgo.guard` figures of a guard that counted."""
    return {"pgo_instructions_per_query": round(c.pgo, 1), "base_instructions_per_query": round(c.base, 1),
            "ratio": round(c.pgo / c.base, 4) if c.base else None, "events": c.events, "queries": c.queries,
            "workloads": list(c.workloads), "seconds": round(c.seconds, 1), "method": c.method}


def refusal(label: str, c: GuardCounts) -> str | None:
    """The one line that refuses the build when the PGO build does not execute fewer instructions per query than
    its base; None when it does."""
    if c.pgo < c.base:
        return None
    ratio = f" (×{c.pgo / c.base:.3f})" if c.base else ""
    return (f"{label}: the PGO build is refused: on its own training workload it executes {c.pgo:,.0f} instructions "
            f"per query, its base without PGO {c.base:,.0f}{ratio}, not fewer")


def _load(library: Path, db: Path) -> DriverJob:
    base = DriverJob(mode="run", engine=SQLITE.name, library=str(library), database=str(db),
                     settings=[("journal_mode", "WAL")], tables=TRAIN_TABLES, table_size=TRAIN_TABLE_SIZE, seed=SEED)
    loaded = run_job(base.replace(mode="load", schema=sbtest(SQLITE.name)), LoadResult, 600)
    if not loaded.ok:
        raise UserError(f"PGO guard: loading the training tables failed: {loaded.error}")
    return base


def _copy_db(pristine: Path, into: Path) -> Path:
    into.mkdir()
    for f in pristine.parent.glob(pristine.name + "*"):
        shutil.copyfile(f, into / f.name)
    return into / pristine.name


def _instructions(job: DriverJob, scratch: Path) -> tuple[int, RunResult]:
    """The driver's instructions for `job` under cachegrind (ASLR off), and its result."""
    if shutil.which("valgrind") is None:
        raise UserError("valgrind not found: the PGO build's guard counts instructions with it (apt install valgrind)")
    job_file, out_file = scratch / "job.json", scratch / "cachegrind.out"
    job_file.write_bytes(encode(job))
    proc = run_tool(["setarch", platform.machine(), "-R", "valgrind", "--tool=cachegrind", "--cache-sim=no",
                     "--branch-sim=no", f"--cachegrind-out-file={out_file}", driver_path(), "run", str(job_file)],
                    "the PGO guard's cachegrind run", timeout=RUN_TIMEOUT_S, env={**os.environ, "LC_ALL": "C"})
    summary = next((line for line in out_file.read_text().splitlines() if line.startswith("summary:")), None)
    if summary is None:
        raise UserError(f"the PGO guard's cachegrind run left no summary in {out_file.name}")
    return int(summary.split()[1]), driver_result(RunResult, proc.stdout, "the PGO guard's cachegrind run")


def _per_query(library: Path, pristine: Path, base: DriverJob, w: Workload, prepared: bool, work: Path) -> float:
    """Instructions per query of `w` with `library`: N events minus 0 events, each from a fresh copy."""
    counts = []
    for events in (GUARD_EVENTS, 0):
        scratch = Path(tempfile.mkdtemp(prefix="run-", dir=work))
        db = _copy_db(pristine, scratch / "db")
        job = base.replace(mode="run", library=str(library), database=str(db), threads=1, time_s=1.0,
                           warmup_s=0.0, prepared=prepared, events=events, deterministic=True,
                           workload=compile_statements(w, TRAIN_TABLE_SIZE))
        instructions, result = _instructions(job, scratch)
        if result.events != events or result.errors:
            raise UserError(f"PGO guard: {w.name} with {library.name} did {result.events} events with "
                            f"{result.errors} errors, expected {events} clean ones")
        counts.append(instructions)
        shutil.rmtree(scratch)
    return (counts[0] - counts[1]) / (GUARD_EVENTS * w.queries_per_event)


def guard(label: str, pgo: Path, base_library: Path, workloads: list[Workload]) -> dict[str, Any]:
    """Instructions per query of the PGO build and of its base on the training workloads (each prepared and as SQL
    text, the mean); a UserError when the PGO build does not execute fewer."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dbperf-pgo-guard-") as tmp:
        work = Path(tmp)
        pristine = work / "pristine" / "train.db"
        pristine.parent.mkdir()
        base = _load(base_library, pristine)
        cases = [(lib, w, prepared) for lib in (pgo, base_library) for w in workloads for prepared in (True, False)]
        workers = max(1, min(len(cases), len(os.sched_getaffinity(0))))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dbperf-pgo-guard") as pool:
            per_query = list(pool.map(lambda c: _per_query(c[0], pristine, base, c[1], c[2], work), cases))
    half = len(cases) // 2
    counts = GuardCounts(
        pgo=sum(per_query[:half]) / half, base=sum(per_query[half:]) / half, events=GUARD_EVENTS,
        queries=sum(GUARD_EVENTS * w.queries_per_event for w in workloads),
        workloads=tuple(w.name for w in workloads), seconds=time.monotonic() - started,
        method="cachegrind (instructions, ASLR off) of the driver: events minus 0 events per workload, prepared and "
               "as SQL text, one thread, the training's tables and seed; the mean")
    refused = refusal(label, counts)
    if refused:
        raise UserError(refused)
    return figures(counts)
