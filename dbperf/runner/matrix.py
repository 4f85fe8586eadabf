"""The matrix run: every (benchmark, threads, repeat, target) cell, repeats interleaved across targets
(A B C A B C ...) so that drift hits every target alike, or run in duets with the base (runner/duet.py), each result
written the moment it is measured."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Container, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from dbperf.catalog.workload import Workload, compile_statements
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.explain.profile import Profiler
from dbperf.host.driver import DriverOutcome, driver_version, run_job
from dbperf.host.facts import host_metadata
from dbperf.host.noise import HEAVY_FOREIGN_CPU, HEAVY_STEAL, NoiseWindow
from dbperf.host.process_variants import mapped_allocators
from dbperf.host.window_opens import WindowOpens
from dbperf.records import CellRecord, CountersRecord, DriverJob, NoiseSensors, Resources, RunResult, to_builtins
from dbperf.run_meta import BenchmarkMeta, HostMeta, RoundsMeta, RunMeta, TargetMeta, meta_part, updated
from dbperf.runner.duet import DuetPlan, Side, plan_duets, round_duets, run_together
from dbperf.runner.post_write import PostWriteSteps, meta_fields
from dbperf.runner.resume import CellKey, Earlier, interfered
from dbperf.runner.rounds import GroupState, Measured, RoundPolicy, round_order, run_rounds
from dbperf.runner.simulated_tier import measure_simulated
from dbperf.runner.targets import inspect_targets
from dbperf.servers.engines import server_target
from dbperf.servers.runtime import RuntimeDir
from dbperf.servers.watchdog import Watchdog
from dbperf.stats.rqps_matrix import cpu_qps
from dbperf.storage.results import ResultsWriter, close_run, recorded_status
from dbperf.targets.lifecycle import TargetLifecycle
from dbperf.targets.resources import CellSampler, database_bytes
from dbperf.targets.sqlite_data import SqliteData, TargetLoadFailed
from dbperf.tooldrivers.cell import run_tool_cell

# A driver still running this long after its cell's warmup + time is hung. Tests shorten it through the environment.
HANG_GRACE_S = float(os.environ.get("DBPERF_HANG_GRACE_S", "30"))


@dataclass(frozen=True)
class CellPlan:
    benchmark: Workload
    threads: int
    repeat: int
    target: Target
    position: int = 1  # place of the target within its round (rounds.py: alternating or seeded random order)
    partner: str | None = None  # duet: the target measured at the same moment (runner/duet.py)
    cpus: frozenset[int] | None = None  # duet: this side's CPUs (else the experiment's `cpus` decide)

    @property
    def key(self) -> CellKey:
        return (self.target.name, self.benchmark.name, self.threads, self.repeat, self.partner)


def plan_cells(e: Experiment) -> Iterator[CellPlan]:
    """Benchmark-major, then threads, then repeat (a round), with targets innermost in the round's order:
    interleaved repeats. Lazy, so that a huge matrix costs no memory before it runs (its size is `cell_count`).
    With `repeats = "auto"` this is the minimum; the run adds rounds (rounds.py)."""
    duets = plan_duets(e)
    for b in e.benchmarks:
        for t in e.threads:
            for r in range(1, e.repeats + 1):
                for group in round_cells(e, duets, b, t, r):
                    yield from group


def round_cells(e: Experiment, duets: DuetPlan | None, benchmark: Workload, threads: int,
                round_: int) -> list[list[CellPlan]]:
    """One round's cells, in the order they run: a duet's two cells (base first) run together, any other cell alone.
    A group where no duet can be formed runs in alternating order (duet.py says why)."""
    if duets is not None and duets.formed(threads):
        base = next(t for t in e.targets if t.name == e.base)
        return [[CellPlan(benchmark, threads, round_, base, d.position, d.target.name, d.base_cpus),
                 CellPlan(benchmark, threads, round_, d.target, d.position, e.base, d.target_cpus)]
                for d in round_duets(e, duets, benchmark.name, threads, round_)]
    order = "alternate" if e.order == "duet" else e.order
    return [[CellPlan(benchmark, threads, round_, target, position)]
            for position, target in enumerate(round_order(e.targets, order, e.seed, benchmark.name, threads,
                                                          round_), 1)]


def cell_count(e: Experiment) -> int:
    duets = plan_duets(e)
    per_round = sum(2 * (len(e.targets) - 1) if duets and duets.formed(t) else len(e.targets) for t in e.threads)
    return len(e.benchmarks) * e.repeats * per_round


@dataclass
class RunOutcome:
    directory: Path
    cells_ok: int = 0
    cells_failed: int = 0
    runtime_dir: Path | None = None  # where the servers' data directories were (kept with --keep-data)


def _meta(e: Experiment, infos: dict[str, dict[str, Any]], settings: dict[str, list]) -> RunMeta:
    return started_meta(
        e,
        base=e.base,
        time_s=e.time_s,
        warmup_s=e.warmup_s,
        repeats="auto" if e.budget_s is not None else e.repeats,
        prepared=e.prepared,
        min_effect=e.min_effect,
        order=e.order,
        duet=duets.describe(e.threads) if (duets := plan_duets(e)) else None,
        order_seed=e.seed,
        budget_s=e.budget_s,
        cpus=e.cpus.describe(),
        aa_target=e.aa_target,
        noise_thresholds={"steal": HEAVY_STEAL, "foreign_cpu": HEAVY_FOREIGN_CPU},
        steady=e.steady.describe() if e.steady else None,
        load_model=e.load.describe(),
        targets=[meta_part(TargetMeta, {**asdict(t), "settings": settings[t.name], **infos[t.name]})
                 for t in e.targets],
        # the harness settings (runner/post_write.py): cumulative writes say that the data is never restored
        **{"data_restore": "before each write cell: SQLite targets copy their pristine loaded file; servers the lab "
                           "started recreate the working database from a pristine one; external servers reload",
           **meta_fields(e)},
    )


def started_meta(e: Experiment, **fields: Any) -> RunMeta:
    """What every run's meta.json says first (the matrix's and the replication lab's), and `fields` of its own."""
    return RunMeta(status="running", started_at=datetime.now(UTC).isoformat(timespec="seconds"),
                   experiment=str(e.path), host=meta_part(HostMeta, host_metadata()), driver=driver_version(),
                   aggregate=e.aggregate, tables=e.tables, table_size=e.table_size, threads=list(e.threads),
                   seed=e.seed, benchmarks=benchmarks_meta(e), **fields)


def benchmarks_meta(e: Experiment) -> list[BenchmarkMeta]:
    return [BenchmarkMeta(name=b.name, group=b.group, phase=b.phase, source=b.source,
                          queries_per_event=b.queries_per_event, sql=b.display_sql()) for b in e.benchmarks]


def run_matrix(e: Experiment, out: Path, console: Console, keep_data: bool = False,
               builds: dict[str, dict[str, Any]] | None = None, profile: bool = False,
               on_record: Callable[[CellRecord], None] | None = None,
               skip: Container[CellKey] = (), earlier: Earlier | None = None,
               in_history: bool = True, on_claimed: Callable[[], None] | None = None) -> RunOutcome:
    """Runs the experiment (its targets already built, see targets.py) into `out`. Interrupts propagate after the
    run's status is recorded; a results file that cannot be written (disk full, read-only) is a ResultsWriteError
    naming the path, the run's status `failed`, with everything written so far kept. The fleet (dbperf/fleet) sees
    each cell's record as it is written (`on_record`) and resumes a run by skipping the cells already measured;
    `earlier` is the run cut short in `out` that this one goes on with (runner/resume.py); `in_history=False`:
    meta.json says that the run is kept out of the history (so that a resume or an extension keeps it out);
    `on_claimed` is called once `out` is the run's (the banner naming it)."""
    out = out.absolute()  # servers and tools run with another working directory
    if earlier is not None:
        skip = earlier.keys()
        shutil.rmtree(out / ".data", ignore_errors=True)  # the lab's own SQLite files, left by a run killed hard
    infos = inspect_targets(e)
    for name, manifest in (builds or {}).items():
        infos[name]["build"] = manifest
        infos[name]["trained_on"] = (manifest.get("pgo") or {}).get("training_set", [])
    for t in e.targets:
        infos[t.name]["process_variant"] = t.process.describe()
    data_root = out / ".data"  # SQLite files; the lab created `out`, so this is the lab's to remove
    started_servers = [t for t in e.targets if t.is_server and t.dsn is None]
    runtime = RuntimeDir() if started_servers else None
    try:
        # Everything that can refuse the run (a password variable not set, an --out that is not empty) before
        # anything is written, so that a refused run leaves nothing behind.
        data: dict[str, TargetLifecycle] = {}
        for i, t in enumerate(e.targets, 1):
            if t.is_server:
                directory = runtime.target_dir(i) if runtime else data_root / t.name
                data[t.name] = server_target(directory, out / "logs", t, e)
            else:
                data[t.name] = SqliteData(data_root, t, e)
        writer = ResultsWriter.reopen(out) if earlier is not None else ResultsWriter(out)
    except BaseException:
        if runtime:
            runtime.remove()
        raise
    if on_claimed:
        on_claimed()
    outcome = RunOutcome(out, runtime_dir=runtime.path if runtime else None)
    if earlier is not None:
        outcome.cells_ok, outcome.cells_failed = earlier.cells_ok(), earlier.cells_failed()
    if runtime and not keep_data:
        Watchdog.get().watch_dir(runtime.path)  # removed even if the lab is killed hard
    meta = _meta(e, infos, {name: d.settings for name, d in data.items()})
    meta.in_history = None if in_history else False
    if earlier is not None:
        meta = earlier.resumed_meta(meta)
    duets = plan_duets(e)
    note = duets.note(e.threads) if duets else None
    if note:
        console.print(f"dbperf: {note}", markup=False, highlight=False, soft_wrap=True)
    if runtime:
        meta.runtime_dir = str(runtime.path)
    total = len(e.benchmarks) * len(e.threads) if e.budget_s is not None else cell_count(e)
    index = {t.name: i for i, t in enumerate(e.targets)}

    def target_meta(name: str) -> TargetMeta:
        return meta.targets[index[name]]

    post_write = PostWriteSteps(e)
    try:
        with recorded_status(meta, out):
            writer.write_meta(meta, e.text)
            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                          console=console, transient=True) as progress:
                loading = progress.add_task("loading", total=len(e.targets))
                failed: list[str] = []  # SQLite targets whose load failed: their cells fail, the others run
                for t in e.targets:
                    progress.update(loading, description=f"starting {t.name}" if t.is_server else "")
                    data[t.name].start()
                    progress.update(loading, description=f"loading {e.tables}×{e.table_size:,} rows for {t.name}")
                    try:
                        loaded = data[t.name].load()
                    except TargetLoadFailed as err:
                        failed.append(str(err))
                        target_meta(t.name).error = str(err)
                        if len(failed) == len(e.targets):  # none left to measure: one line, as it always was
                            raise TargetLoadFailed(failed[0]) from None
                        continue
                    meta.targets[index[t.name]] = tm = updated(target_meta(t.name), load=to_builtins(loaded),
                                                               **data[t.name].describe())
                    if t.is_server:
                        tm.engine_version = loaded.engine_version
                    tm.db_bytes_after_load = database_bytes(t, data[t.name])
                    writer.update_meta(meta)
                    progress.advance(loading)
                writer.update_meta(meta)
                progress.remove_task(loading)
                for why in failed:
                    console.print(f"dbperf: {why}; its cells are recorded as failed, the other targets are measured",
                                  markup=False, highlight=False, soft_wrap=True)
                task = progress.add_task("cells", total=total)
                policy = RoundPolicy(e.repeats, e.budget_s)
                groups = [(b, t) for b in e.benchmarks for t in e.threads]
                order = {(b.name, t): i for i, (b, t) in enumerate(groups)}  # meta.json lists groups as they run
                budget_end = time.monotonic() + (earlier.budget_s(e) if earlier else e.budget_s or 0.0)
                # resumed: the groups that had stopped keep their rounds (a reopened one until its new rounds stop)
                meta.rounds = rounds = list(meta.rounds or []) if earlier and policy.auto else []

                def keep(cell: CellPlan, record: CellRecord, restarted: bool) -> None:
                    """Writes a measured cell's record the moment it is measured."""
                    if restarted:
                        record.server_restarted_before = True
                        target_meta(cell.target.name).restarts = data[cell.target.name].describe()["restarts"]
                        writer.update_meta(meta)
                    writer.append(record)
                    if on_record:
                        on_record(record)
                    if record.ok:
                        outcome.cells_ok += 1
                    else:
                        outcome.cells_failed += 1
                    if not policy.auto:
                        progress.advance(task)

                def measure(benchmark: Workload, threads: int, before: list[Measured], round_: int) -> list[Measured]:
                    measured = [m for m in before if m.round == round_]
                    for group in round_cells(e, duets, benchmark, threads, round_):
                        if all(cell.key in skip for cell in group):  # resumed: measured before
                            if not policy.auto:
                                progress.advance(task, len(group))
                            continue
                        of = "" if policy.auto else f"/{e.repeats}"
                        names = " + ".join(cell.target.name for cell in group)
                        progress.update(task, description=f"{benchmark.name} t={threads} #{round_}{of} {names}")
                        restarted = []
                        for cell in group:
                            target_data = data[cell.target.name]
                            restarted.append(target_data.ensure_running())
                            if restarted[-1]:
                                _say_restart(console, cell, target_data.describe().get("restarts"))
                            step = post_write.before_cell(benchmark, cell.target, target_data)
                            if step:
                                target_meta(cell.target.name).post_write.append(step)
                                writer.update_meta(meta)
                        if len(group) == 2:
                            records = _run_duet(e, group, data)
                        else:
                            (cell,) = group
                            records = [run_tool_cell(e, cell, data[cell.target.name], HANG_GRACE_S)
                                       if cell.target.tool else _run_cell(e, cell, data[cell.target.name])]
                        # A warm-up that never settled counts like interference: its round is run again (auto).
                        # In a duet the pair is the unit: interference on either side spoils both.
                        spoiled = any(interfered(r) for r in records)
                        for cell, record, was_restarted in zip(group, records, restarted, strict=True):
                            if cell.key in skip:  # resumed duet: only the side not measured before is kept
                                if not policy.auto:
                                    progress.advance(task)
                                continue
                            keep(cell, record, was_restarted)
                            measured.append(Measured(
                                cell.target.name, round_, record.result.qps if record.ok and record.result else None,
                                interfered=spoiled if len(group) == 2 else interfered(record),
                                cpu_qps=cpu_qps(record), partner=cell.partner))
                    return measured

                stopped = [bool(earlier and policy.auto and earlier.stopped(b.name, t)) for b, t in groups]
                # extended: a reopened group its earlier rounds decide stops on its replay and needs no share
                sharing = [not s and not (earlier and earlier.ended(b.name, t) and earlier.decided(e, b.name, t))
                           for s, (b, t) in zip(stopped, groups, strict=True)]
                for i, (benchmark, threads) in enumerate(groups):
                    if stopped[i]:  # resumed: its rounds had stopped; they are not run again
                        progress.advance(task)
                        continue
                    # auto: each (benchmark, threads) gets an equal share of what is left of the budget, so that time
                    # one group did not need goes to the next ones; a group cut short before has spent some of its
                    # share (the budget left was made short of it too: Earlier.budget_s).
                    spent = earlier.spent_s(benchmark.name, threads) if earlier else 0.0
                    now = time.monotonic()
                    deadline = now + max((budget_end - now + spent) / max(sharing[i:].count(True), 1) - spent, 0.0)
                    state = GroupState(e.base, [t.name for t in e.targets], e.min_effect, aa=e.aa_target)
                    # resumed: its rounds are walked again, each with its earlier repeats, measuring only the cells
                    # not measured before, so that the stopping rule sees what it would have seen
                    before = earlier.measured(benchmark.name, threads) if earlier else []
                    run_rounds(state, policy, partial(measure, benchmark, threads, before), deadline,
                               replay=max((m.round for m in before), default=0))
                    ended = RoundsMeta(benchmark=benchmark.name, threads=threads, rounds=state.rounds,
                                       stopped=state.stop_reason)
                    rounds[:] = [r for r in rounds if (r.benchmark, r.threads) != (benchmark.name, threads)] + [ended]
                    rounds.sort(key=lambda r: order.get((r.benchmark, r.threads), len(order)))
                    writer.update_meta(meta)
                    if policy.auto:
                        progress.advance(task)
                for t in e.targets:
                    target_meta(t.name).db_bytes_at_end = database_bytes(t, data[t.name])
                if profile:
                    _profile_cells(e, data_root / "profile", writer, progress)
                if e.simulated:  # issue 25's deterministic tier, after the timed rounds
                    measure_simulated(e, data_root / "simulated", data, writer.append, progress, results=out)
    finally:
        _finish(data, meta, writer, data_root, runtime, keep_data)
    return outcome


def restart_line(cell: CellPlan, restarts: int | None) -> str:
    """What a restart of a lab server between cells means for the cells after it."""
    return (f"dbperf: target {cell.target.name}: its server had died and was started again (restart "
            f"{restarts or 1}) before {cell.benchmark.name} t={cell.threads} #{cell.repeat}: this cell and the "
            "ones after it run on a cold buffer pool (the server's caches emptied)")


def _say_restart(console: Console, cell: CellPlan, restarts: int | None) -> None:
    # Said when it happens, not only as `restarts` in meta.json: the figures after it are not like the ones before.
    console.print(restart_line(cell, restarts), markup=False, highlight=False, soft_wrap=True)


def _finish(data: dict[str, TargetLifecycle], meta: RunMeta, writer: ResultsWriter, data_root: Path,
            runtime: RuntimeDir | None, keep_data: bool) -> None:
    """On every exit path: stop every server the lab started, remove the loaded data (first: on a full disk that
    frees the space the last meta.json needs), record the status."""
    for d in data.values():
        d.stop()
    if not keep_data:
        shutil.rmtree(data_root, ignore_errors=True)
        if runtime:
            runtime.remove()
            Watchdog.get().forget_dir(runtime.path)
    close_run(meta, writer)


def _profile_cells(e: Experiment, work: Path, writer: ResultsWriter, progress: Progress) -> None:
    """Counters per (target, benchmark) after the timed cells, one thread, written as `counters` records."""
    profiler = Profiler(e, work)
    pairs = [(t, b) for b in e.benchmarks for t in e.targets]
    task = progress.add_task("profiling", total=len(pairs))
    try:
        for target, benchmark in pairs:
            progress.update(task, description=f"profiling ({profiler.mode.mode}) {benchmark.name} {target.name}")
            record = CountersRecord(type="counters", target=target.name, benchmark=benchmark.name)
            try:
                record.counters = profiler.profile(target, benchmark)
            except UserError as err:
                record.error = str(err)
            writer.append(record)
            progress.advance(task)
    finally:
        profiler.close()


@dataclass
class _CellRun:
    """One cell's driver job and the lab's samplers of its window, ready to launch."""
    cell: CellPlan
    job: DriverJob
    env: dict[str, str]
    cpus: frozenset[int] | None
    watched: set[int] | None  # the CPUs the noise sensors watch (None: all the lab may use)
    sampler: CellSampler | None
    timeout_s: float


def _prepare_cell(e: Experiment, cell: CellPlan, data: TargetLifecycle) -> _CellRun:
    if cell.benchmark.phase != "read" and e.writes == "restore":
        data.restore()
    variant = cell.target.process
    job = variant.apply(data.working_job()).replace(
        mode="run", threads=cell.threads, time_s=e.time_s, warmup_s=e.warmup_s, seed=e.seed + cell.repeat,
        workload=compile_statements(cell.benchmark, e.table_size, cell.target.engine), **e.load.job_fields())
    # The allocator and huge pages go to the process that runs the engine: the driver, or the server.
    env = data.env() if cell.target.is_server else {**variant.environment(), **data.env()}
    cpus = cell.cpus or e.cpus.for_driver(not cell.target.is_server, cell.threads)
    # The noise sensors watch the CPUs the cell's processes run on: the driver's and a lab-started server's (all
    # CPUs where either is not pinned; an external server runs elsewhere). A duet's side watches its own CPUs only,
    # so that its partner, on the other CPUs, is not counted as foreign.
    watched: set[int] | None = set(cpus) if cpus else None
    if watched is not None and cell.target.is_server and cell.target.dsn is None:
        watched = watched | set(e.cpus.server) if e.cpus.server else None
    sampler = CellSampler(e, cell.target, data) if e.resources else None
    longest_warmup = e.steady.max_warmup_s if e.steady else e.warmup_s
    return _CellRun(cell, job, env, cpus, watched, sampler, e.time_s + longest_warmup + HANG_GRACE_S)


def _run_cell(e: Experiment, cell: CellPlan, data: TargetLifecycle) -> CellRecord:
    run = _prepare_cell(e, cell, data)
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
                      pass_fds=(opens.driver_fd,) if opens else ())
    if opens:
        opens.join()
    resources = run.sampler.finish(outcome.result) if run.sampler else None
    return _record(run, data, outcome, window.finish(outcome.result), resources, started)


def _run_duet(e: Experiment, group: list[CellPlan], data: dict[str, TargetLifecycle]) -> list[CellRecord]:
    """The two cells of a duet (runner/duet.py), each side's data restored first, released together; the noise
    sensors and resource samples of each side start at the release."""
    runs = [_prepare_cell(e, cell, data[cell.target.name]) for cell in group]
    started = time.time()
    windows: list[NoiseWindow | None] = [None] * len(runs)

    def released(pids: list[int | None]) -> None:
        for i, (run, pid) in enumerate(zip(runs, pids, strict=True)):
            if pid is None:
                continue
            windows[i] = NoiseWindow(e.warmup_s, run.watched)
            if run.sampler:
                run.sampler.client_pid = pid  # two drivers run: the sampler cannot find its own by name
                run.sampler.start()

    sides = [Side(run.job, run.env, run.cpus or frozenset(), run.timeout_s) for run in runs]
    outcomes = run_together(sides, released, ready_timeout_s=HANG_GRACE_S)
    records = []
    for run, window, outcome in zip(runs, windows, outcomes, strict=True):
        resources = run.sampler.finish(outcome.result) if run.sampler and window else None
        noise = window.finish(outcome.result) if window else None
        records.append(_record(run, data[run.cell.target.name], outcome, noise, resources, started))
    return records


def _record(run: _CellRun, data: TargetLifecycle, outcome: DriverOutcome[RunResult], noise: NoiseSensors | None,
            resources: Resources | None, started: float) -> CellRecord:
    cell = run.cell
    record = CellRecord(
        target=cell.target.name, benchmark=cell.benchmark.name, threads=cell.threads, repeat=cell.repeat,
        position=cell.position, noise=noise, status="failed", started_at=started,
        wall_s=round(time.time() - started, 3),
        queries_per_event=cell.benchmark.queries_per_event,
        rows_per_event=run.job.table_size if cell.benchmark.rows_per_event == "table_size" else None,
        result=outcome.result, resources=resources, partner=cell.partner,
        cpus=sorted(run.cpus) if run.cpus else None)
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
        record.error = cell.target.process.check(mapped)
        record.status = "failed" if record.error else "ok"
    return record


