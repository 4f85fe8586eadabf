"""One cell run by the driver, or a duet's two cells released together (orders/duet_rounds.py): its job prepared (the
data restored before a write cell, the process variant applied, CPUs chosen), the lab's noise sensors and resource
samples over its window, and its record, failed with the reason when the cell (or its server) failed. A slices
round (orders/slice_rounds.py) prepares and records each of its sides the same way."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from dbperf.catalog.workload import compile_statements
from dbperf.experiment.model import Experiment
from dbperf.host.driver import DriverOutcome, run_job
from dbperf.host.noise import NoiseWindow
from dbperf.host.process_variants import mapped_allocators
from dbperf.host.remedies import AppliedRemedies, CellPlace, apply_remedies, not_taken, observed
from dbperf.host.window_opens import WindowOpens
from dbperf.records import CellRecord, DriverJob, NoiseSensors, Resources, RunResult
from dbperf.runner.cell_plan import CellPlan
from dbperf.runner.orders.duet_rounds import Side, run_together
from dbperf.targets.lifecycle import TargetLifecycle
from dbperf.targets.resources import CellSampler

# A driver still running this long after its cell's warmup + time is hung. Tests shorten it through the environment.
HANG_GRACE_S = float(os.environ.get("DBPERF_HANG_GRACE_S", "30"))


@dataclass
class CellRun:
    """One cell's driver job and the lab's samplers of its window, ready to launch."""
    cell: CellPlan
    job: DriverJob
    env: dict[str, str]
    cpus: frozenset[int] | None
    remedies: AppliedRemedies  # host/remedies/: the driver's start as they change it, and what they did
    watched: set[int] | None  # the CPUs the noise sensors watch (None: all the lab may use)
    sampler: CellSampler | None
    timeout_s: float


def prepare_cell(e: Experiment, cell: CellPlan, data: TargetLifecycle) -> CellRun:
    restored = cell.benchmark.phase != "read" and e.writes == "restore"
    if restored:
        data.restore()
    variant = cell.target.process
    job = variant.apply(data.working_job()).replace(
        mode="run", threads=cell.threads, time_s=e.time_s, warmup_s=e.warmup_s, seed=e.seed + cell.repeat,
        workload=compile_statements(cell.benchmark, e.table_size, cell.target.engine), **e.load.job_fields())
    # The allocator and huge pages go to the process that runs the engine: the driver, or the server.
    env = data.env() if cell.target.is_server else {**variant.environment(), **data.env()}
    cpus = cell.cpus or e.cpus.for_driver(not cell.target.is_server, cell.threads)
    remedies = apply_remedies(cell.target.remedies, CellPlace(
        Path(job.database) if job.database else None, data.restore, cpus, frozenset(os.sched_getaffinity(0)),
        tuple(job.settings), cell.threads, restored))
    env, cpus, job = {**env, **remedies.environment}, remedies.cpus, job.replace(**remedies.job_fields)
    # The noise sensors watch the CPUs the cell's processes run on: the driver's and a lab-started server's (all
    # CPUs where either is not pinned; an external server runs elsewhere). A duet's side watches its own CPUs only,
    # so that its partner, on the other CPUs, is not counted as foreign.
    watched: set[int] | None = set(cpus) if cpus else None
    if watched is not None and cell.target.is_server and cell.target.dsn is None:
        watched = watched | set(e.cpus.server) if e.cpus.server else None
    sampler = CellSampler(e, cell.target, data) if e.resources else None
    longest_warmup = e.steady.max_warmup_s if e.steady else e.warmup_s
    return CellRun(cell, job, env, cpus, remedies, watched, sampler, e.time_s + longest_warmup + HANG_GRACE_S)


def run_cell(e: Experiment, cell: CellPlan, data: TargetLifecycle) -> CellRecord:
    run = prepare_cell(e, cell, data)
    job = run.job
    started = time.time()
    # Steady state: the driver ends its own warm-up and says when (window_opens.py); the lab's samples wait for it.
    # Nothing between the pipe's creation and run_job (which closes the driver's end) can fail.
    opens = WindowOpens() if e.steady else None
    if opens and e.steady:
        job = job.replace(steady=e.steady.job(), window_fd=opens.driver_fd)
    window = NoiseWindow(e.warmup_s, run.watched, opens)
    if run.sampler:
        run.sampler.start(opens=opens)
    outcome = run_job(job, RunResult, run.timeout_s, env=run.env, cpus=run.cpus,
                      pass_fds=(opens.driver_fd,) if opens else (), prefix=run.remedies.prefix)
    if opens:
        opens.join()
    resources = run.sampler.finish(outcome.result) if run.sampler else None
    return cell_record(run, data, outcome, window.finish(outcome.result), resources, started)


def run_duet(e: Experiment, group: list[CellPlan], data: dict[str, TargetLifecycle]) -> list[CellRecord]:
    """The two cells of a duet (orders/duet_rounds.py), each side's data restored first, released together; the noise
    sensors and resource samples of each side start at the release."""
    runs = [prepare_cell(e, cell, data[cell.target.name]) for cell in group]
    started = time.time()
    release = _Release(e.warmup_s, runs)
    sides = [Side(run.job, run.env, run.cpus or frozenset(), run.timeout_s, run.remedies.prefix) for run in runs]
    outcomes = run_together(sides, release, ready_timeout_s=HANG_GRACE_S)
    records = []
    for run, window, outcome in zip(runs, release.windows, outcomes, strict=True):
        resources = run.sampler.finish(outcome.result) if run.sampler and window else None
        noise = window.finish(outcome.result) if window else None
        records.append(cell_record(run, data[run.cell.target.name], outcome, noise, resources, started))
    return records


@dataclass
class _Release:
    """What a duet's release starts on each side released (a pid; None: it failed or hung before it was ready):
    its noise window and its resource sampler."""
    warmup_s: float
    runs: list[CellRun]
    windows: list[NoiseWindow | None] = field(init=False)

    def __post_init__(self) -> None:
        self.windows = [None] * len(self.runs)

    def __call__(self, pids: list[int | None]) -> None:
        for i, (run, pid) in enumerate(zip(self.runs, pids, strict=True)):
            if pid is None:
                continue
            self.windows[i] = NoiseWindow(self.warmup_s, run.watched)
            if run.sampler:
                run.sampler.client_pid = pid  # two drivers run: the sampler cannot find its own by name
                run.sampler.start()


def cell_record(run: CellRun, data: TargetLifecycle, outcome: DriverOutcome[RunResult], noise: NoiseSensors | None,
            resources: Resources | None, started: float) -> CellRecord:
    cell = run.cell
    record = CellRecord(
        target=cell.target.name, benchmark=cell.benchmark.name, threads=cell.threads, repeat=cell.repeat,
        position=cell.position, noise=noise, status="failed", started_at=started,
        wall_s=round(time.time() - started, 3),
        queries_per_event=cell.benchmark.queries_per_event,
        rows_per_event=run.job.table_size if cell.benchmark.rows_per_event == "table_size" else None,
        result=outcome.result, resources=resources, partner=cell.partner,
        cpus=sorted(run.cpus) if run.cpus else None,
        remedies=observed(cell.target.remedies, outcome.result, run.remedies.evidence) or None)
    result = outcome.result
    if data.died():
        # A server that died mid-cell fails the cell even if some events completed before it went.
        failed_events = result.errors if result else 0
        why = outcome.error or f"the driver finished with {failed_events} failed events"
        record.error = f"the server died during the cell ({why})"
        record.server_log_tail, record.stderr_tail = data.log_tail(), outcome.stderr_tail
    elif result is None:
        record.error, record.stderr_tail = outcome.error, outcome.stderr_tail
    elif result.events == 0:
        record.error = "; ".join(result.error_samples) or "no event completed in the measured time"
    else:
        pid = data.describe().get("server_pid")
        mapped = mapped_allocators(pid) if cell.target.is_server and pid else result.process.allocators_mapped
        record.error = cell.target.process.check(mapped) or not_taken(cell.target.remedies, result)
        record.status = "failed" if record.error else "ok"
    return record


