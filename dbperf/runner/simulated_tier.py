"""The simulated tier (`simulated = true` in `[run]`): after the timed rounds, instructions and estimated cycles per
query of every (target, benchmark), one thread, under cachegrind (explain/profile.py's Profiler in simulated mode:
N events minus 0 events). The counts do not depend on the host's load, so each (target, benchmark) is measured once,
two at a time where there are two CPUs, and a target identical to one already measured (the A/A copy: same library,
settings and process variant) reuses its profile instead of measuring it again. Each figure is written to
results.jsonl as a `simulated` record the moment it is known; a failed one carries its error and no number.

Before the first figure, the host's calibrated cost model (`dbperf calibrate`, storage/cost_models.py), when it has
one, is copied into results.jsonl as a `cost_model` record, once per run (a resumed run that recorded it keeps that
one): the report then predicts with the model the run was measured under, on any machine and after any
recalibration."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path

from rich.progress import Progress, TaskID

from dbperf.catalog.workload import Workload
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.explain.mode import CounterMode
from dbperf.explain.profile import Profiler
from dbperf.host.facts import host_metadata, sha256_of
from dbperf.host.procfs import own_children
from dbperf.records import CostModelRecord, Profile, RecordError, SimulatedRecord, results_line
from dbperf.stats.simulated import TIER
from dbperf.storage.cost_models import load_current
from dbperf.storage.results import RESULTS
from dbperf.targets.lifecycle import TargetLifecycle
from dbperf.targets.sqlite_data import SqliteData

# Deterministic counts need no long run: a repeat of the same profile gives the same instructions per query to far
# more than 4 digits (tests/test_simulated_tier.py). A benchmark's queries: ROW_BUDGET rows read or written, at least
# MIN_QUERIES and at most QUERIES: point queries get 3,000, 100-row IN lists and ranges 300, a full scan 10. A
# function of the workload and table_size only, so every target and every run counts a benchmark over the same
# queries.
QUERIES = 3_000
MIN_QUERIES = 10
ROW_BUDGET = 30_000
MAX_AT_ONCE = 2  # cachegrind profiles at once, at most one per CPU (the counts do not depend on load)
MODE = CounterMode("simulated", "the simulated tier (`simulated = true`)")


def identity(target: Target) -> str:
    """What makes two targets' simulated counts the same: everything but the name (library file, settings, build,
    process variant), and the library's contents (a path rebuilt in place is not the same library)."""
    digest = sha256_of(target.library) if target.library and Path(target.library).is_file() else ""
    return repr(replace(target, name="", host=None)) + digest


def rows_per_query(w: Workload, table_size: int) -> float:
    """Rows a query of `w` reads or writes, from its definition: an IN list's count, a range's size, the table for a
    scan, else one; a mix: the weighted mean of its kinds."""
    if w.mix:
        total = sum(weight for weight, _ in w.mix)
        return sum(weight * rows_per_query(kind, table_size) for weight, kind in w.mix) / total
    if w.rows_per_event == "table_size":
        return max(1.0, table_size / w.queries_per_event)
    rows = 0
    for s in w.statements:
        sizes = [v for spec in s.params.values() for k in ("count", "size")
                 if isinstance(v := spec.get(k), int) and not isinstance(v, bool)]
        rows += s.repeat * max([1, *sizes])
    return max(1.0, rows / w.queries_per_event)


def queries_for(table_size: int, row_budget: int = ROW_BUDGET, most: int = QUERIES) -> Callable[[Workload], int]:
    """The profiled queries of a benchmark (see ROW_BUDGET): `row_budget` rows, at least MIN_QUERIES queries and
    at most `most`."""
    def queries(w: Workload) -> int:
        return max(MIN_QUERIES, min(most, round(row_budget / rows_per_query(w, table_size))))
    return queries


# Wall time of one counted (target, benchmark), both cachegrind runs: 4-15 s measured on the 2-vCPU VM under load
# (the demo's 8 benchmarks, 100,000 rows); for the run's estimate only.
PAIR_S = 8.0


def estimated_seconds(e: Experiment) -> float:
    """A rough bound for the run's estimate (runner/estimate.py): the A/A copy is reused, the rest counted."""
    counted = len(e.targets) - (1 if e.aa_target else 0)
    return len(e.benchmarks) * counted * PAIR_S / at_once()


def at_once() -> int:
    return max(1, min(MAX_AT_ONCE, len(os.sched_getaffinity(0))))


def _record(target: Target, benchmark: Workload, profile: Profile | None, error: str | None,
            seconds: float) -> SimulatedRecord:
    if profile is None:
        return SimulatedRecord(type="simulated", target=target.name, benchmark=benchmark.name, tier=TIER,
                               error=error, seconds=round(seconds, 3))
    return SimulatedRecord(type="simulated", target=target.name, benchmark=benchmark.name, tier=TIER,
                           per_query=profile.per_query, queries=profile.queries, method=profile.method,
                           seconds=round(seconds, 3))


def recorded_models(results: Path) -> int:
    """How many `cost_model` records the run's results.jsonl holds already (0 when there is none)."""
    try:
        text = (results / RESULTS).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    count = 0
    for line in text.splitlines():
        if '"cost_model"' not in line:  # a cheap look first: a long run's file holds thousands of cells
            continue
        try:
            count += isinstance(results_line(line), CostModelRecord)
        except RecordError:
            continue
    return count


def record_cost_model(write: Callable[[CostModelRecord], None], results: Path | None,
                      progress: Progress | None = None) -> CostModelRecord | None:
    """Writes the host's current cost model as a `cost_model` record, unless the run recorded one before (a resumed
    run, `results`: its directory). Nothing when the host has none (the report says so and how to make one); a
    model file that cannot be read is said in one line and not recorded: the run goes on."""
    if results is not None and recorded_models(results):
        return None
    try:
        model = load_current(host_metadata())
    except UserError as err:
        if progress is not None:
            progress.console.print(f"dbperf: warning: {err}; the run records no cost model", markup=False,
                                   highlight=False, soft_wrap=True)
        return None
    if model is not None:
        write(model)
    return model


def measure_simulated(e: Experiment, work: Path, data: dict[str, TargetLifecycle],
                      write: Callable[[SimulatedRecord | CostModelRecord], None], progress: Progress | None = None,
                      queries: int | Callable[[Workload], int] | None = None, results: Path | None = None) -> None:
    """Measures every (target, benchmark) once, writing each `simulated` record as it is known. `data`: the run's
    loaded targets; SQLite ones are profiled from their pristine copy (no second load), servers by the profiler's
    own server (explain/server_profile.py), one at a time. First the host's cost model, once per run (`results`:
    the run's directory, read for a model recorded in an earlier sitting), when a target is in-process SQLite (the
    model was calibrated on it)."""
    if any(not t.is_server for t in e.targets):
        record_cost_model(write, results, progress)
    loaded = {name: d for name, d in data.items() if isinstance(d, SqliteData)}
    profiler = Profiler(e, work, queries=queries or queries_for(e.table_size), mode=MODE, native_timing=False,
                        data=loaded)
    measured, copies = reuse_plan(e)
    task = progress.add_task(TIER, total=len(e.benchmarks) * len(e.targets)) if progress else None
    tier = _Tier(profiler, write, copies, progress, task)
    try:
        # SQLite pairs run `at_once()` at a time, never two of one target together (they share its working file).
        tier.run_local([(t, b) for t, b in measured if not t.is_server])
        for target, benchmark in measured:  # the profiler's server is one at a time
            if target.is_server:
                tier.describe(target, benchmark)
                tier.done(target, benchmark, tier.one(target, benchmark))
    finally:
        profiler.close()
        if progress and task is not None:
            progress.remove_task(task)


Pair = tuple[Target, Workload]


def reuse_plan(e: Experiment) -> tuple[list[Pair], dict[tuple[str, str], list[Target]]]:
    """The (target, benchmark) pairs measured, benchmark-major: the first target of each identity; and for each,
    the identical targets that reuse its figures."""
    keys = {t.name: identity(t) for t in e.targets}
    first: dict[str, Target] = {}  # identity -> the target measured for it
    for t in e.targets:
        first.setdefault(keys[t.name], t)
    measured = [(t, b) for b in e.benchmarks for t in e.targets if first[keys[t.name]] is t]
    copies = {(src.name, b.name): [t for t in e.targets if t is not src and keys[t.name] == keys[src.name]]
              for src, b in measured}
    return measured, copies


class _Tier:
    """The tier's profiles being measured: each written (and copied to its identical targets) as it is known."""

    def __init__(self, profiler: Profiler, write: Callable[[SimulatedRecord | CostModelRecord], None],
                 copies: dict[tuple[str, str], list[Target]], progress: Progress | None, task: TaskID | None) -> None:
        self.profiler, self.write, self.copies = profiler, write, copies
        self.progress, self.task = progress, task

    def describe(self, target: Target, benchmark: Workload) -> None:
        if self.progress and self.task is not None:
            self.progress.update(self.task, description=f"{TIER}: {benchmark.name} {target.name}")

    def one(self, target: Target, benchmark: Workload) -> SimulatedRecord:
        started = time.monotonic()
        try:
            profile = self.profiler.profile(target, benchmark)
            return _record(target, benchmark, profile, None, time.monotonic() - started)
        except (UserError, OSError, ValueError, subprocess.SubprocessError) as err:  # no figure, its reason kept
            return _record(target, benchmark, None, str(err), time.monotonic() - started)

    def done(self, target: Target, benchmark: Workload, record: SimulatedRecord) -> None:
        copies = self.copies[(target.name, benchmark.name)]
        self.write(record)
        for copy in copies:
            self.write(replace_target(record, copy.name, target.name))
        if self.progress and self.task is not None:
            self.progress.advance(self.task, 1 + len(copies))

    def run_local(self, pending: list[Pair]) -> None:
        """SQLite pairs, `at_once()` at a time, never two of one target together."""
        with ThreadPoolExecutor(max_workers=at_once(), thread_name_prefix="dbperf-sim") as pool:
            running: dict[Future[SimulatedRecord], Pair] = {}
            before = own_children()
            try:
                while pending or running:
                    self._submit(pool, pending, running)
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        self.done(*running.pop(future), future.result())
            except BaseException:
                # Ctrl-C, SIGTERM: the workers' cachegrind runs are this process's children started since `before`;
                # killed by their ids, so that the pool's shutdown does not wait for them to finish.
                for pid in own_children() - before:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                raise
            finally:
                for future in running:
                    future.cancel()

    def _submit(self, pool: ThreadPoolExecutor, pending: list[Pair], running: dict[Future[SimulatedRecord], Pair],
                ) -> None:
        busy = {t.name for t, _ in running.values()}
        while len(running) < at_once():
            pick = next(((t, b) for t, b in pending if t.name not in busy), None)
            if pick is None:
                return
            pending.remove(pick)
            busy.add(pick[0].name)
            self.describe(*pick)
            running[pool.submit(self.one, *pick)] = pick


def replace_target(record: SimulatedRecord, target: str, source: str) -> SimulatedRecord:
    """`record` for an identical target: the same figures (or error), marked as reused from `source`."""
    return SimulatedRecord(type="simulated", target=target, benchmark=record.benchmark, tier=record.tier,
                           per_query=dict(record.per_query), queries=record.queries, method=record.method,
                           seconds=0.0, reused_from=source, error=record.error)
