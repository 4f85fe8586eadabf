"""The matrix run: every (benchmark, threads, repeat, target) cell, a round's cells run as the plan's way says
(runner/orders/: repeats interleaved across targets, A B C A B C ..., so that drift hits every target alike; duets
with the base; every round's targets taking turns in one driver process), each result written the moment it is
measured.

The plan (plan.py) is built once before the run; the lab run (lab_run.py) owns what the run starts and writes and
finishes it on every exit path. The matrix carries the plan out in phases: open (the targets set up and meta.json
written), load, the plan's groups one after another (rounds.py decides how many rounds), the targets' sizes, then
the tiers the run asks for (counters per cell with --profile, the simulated tier), each a phase of its own."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress, TaskID

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.explain.profile import Profiler
from dbperf.host.driver import driver_version
from dbperf.host.facts import host_metadata
from dbperf.host.noise import HEAVY_FOREIGN_CPU, HEAVY_STEAL
from dbperf.records import CellRecord, CountersRecord, to_builtins
from dbperf.run_meta import AutoTimeMeta, BenchmarkMeta, HostMeta, RoundsMeta, RunMeta, TargetMeta, meta_part
from dbperf.runner.cell_plan import CellPlan
from dbperf.runner.lab_run import LabRun, RunOutcome
from dbperf.runner.orders.base import Order
from dbperf.runner.pilot import (
    PilotRound,
    choose,
    length_line,
    length_meta,
    measured_per_second,
    pilot_experiment,
    pilot_length,
    round_budget,
)
from dbperf.runner.plan import Group, RunPlan, share_deadline
from dbperf.runner.post_write import PostWriteSteps, meta_fields
from dbperf.runner.process_blocks import ProcessBlocks
from dbperf.runner.resume import interfered
from dbperf.runner.rounds import GroupState, Measured, run_rounds
from dbperf.runner.simulated_tier import measure_simulated
from dbperf.servers.registry import server_target
from dbperf.stats.process_level import ProcessChoice
from dbperf.stats.rqps_matrix import cpu_qps
from dbperf.targets.lifecycle import TargetLifecycle
from dbperf.targets.resources import database_bytes
from dbperf.targets.sqlite_data import SqliteData, TargetLoadFailed

__all__ = ["RunOutcome", "RunPlan", "run_plan", "started_meta"]


def run_meta_of(plan: RunPlan, settings: dict[str, list]) -> RunMeta:
    """The matrix run's first meta.json: the plan's settings, what its way of running rounds says of itself (a
    duet's CPUs, a slices run's library copies), and each target as declared, inspected and set up (`settings`: what
    the lab applies to it)."""
    e = plan.experiment
    return started_meta(
        e,
        base=e.base,
        time_s=None if e.auto_time else e.time_s,
        auto_time=AutoTimeMeta(**e.auto_time.describe()) if e.auto_time else None,
        warmup_s=e.warmup_s,
        repeats="auto" if e.budget_s is not None else e.repeats,
        prepared=e.prepared,
        min_effect=e.min_effect,
        order=e.order,
        **plan.order.describe(),
        order_seed=e.seed,
        budget_s=e.budget_s,
        cpus=e.cpus.describe(),
        aa_target=e.aa_target,
        processes=e.processes.fixed if e.processes.fixed and e.processes.fixed > 1 else None,
        noise_thresholds={"steal": HEAVY_STEAL, "foreign_cpu": HEAVY_FOREIGN_CPU},
        steady=e.steady.describe() if e.steady else None,
        load_model=e.load.describe(),
        targets=[meta_part(TargetMeta, {**asdict(t), "settings": settings[t.name], **plan.facts.get(t.name, {})})
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


def run_plan(plan: RunPlan, out: Path, console: Console, *, keep_data: bool = False, profile: bool = False,
             on_record: Callable[[CellRecord], None] | None = None, in_history: bool = True,
             on_claimed: Callable[[], None] | None = None) -> RunOutcome:
    """Carries the plan out into `out`. Interrupts propagate after the run's status is recorded; a results file
    that cannot be written (disk full, read-only) is a ResultsWriteError naming the path, the run's status
    `failed`, with everything written so far kept. The fleet (dbperf/fleet) sees each cell's record as it is
    written (`on_record`); `in_history=False`: meta.json says that the run is kept out of the history (so that a
    resume or an extension keeps it out); `on_claimed` is called once `out` is the run's (the banner naming it)."""
    lab = LabRun(out, console, keep_data=keep_data, servers=plan.starts_servers, on_record=on_record)
    if plan.replay.goes_on:
        shutil.rmtree(lab.data_root, ignore_errors=True)  # the lab's own SQLite files, left by a run killed hard
    with lab:
        # Everything that can refuse the run (a password variable not set, an --out that is not empty) before
        # anything is written, so that a refused run leaves nothing behind.
        data = open_targets(plan, lab)
        lab.claim(reopen=plan.replay.goes_on)
        lab.own(*data.values())
        if on_claimed:
            on_claimed()
        lab.outcome.cells_ok, lab.outcome.cells_failed = plan.replay.counts()
        run = MatrixRun(plan, lab, data, profile)
        run.open(in_history)
        for phase in run.phases():
            phase()
    return lab.outcome


def open_targets(plan: RunPlan, lab: LabRun) -> dict[str, TargetLifecycle]:
    """Each target's lifecycle, nothing started yet: a server the lab starts in the runtime folder, an external
    one's scratch files and every SQLite target's data in the lab's own folder of the results directory."""
    e = plan.experiment
    data: dict[str, TargetLifecycle] = {}
    for i, t in enumerate(e.targets, 1):
        if t.is_server:
            directory = lab.runtime.target_dir(i) if lab.runtime else lab.data_root / t.name
            data[t.name] = server_target(directory, lab.out / "logs", t, e)
        else:
            data[t.name] = SqliteData(lab.data_root, t, e)
    return data


@dataclass(frozen=True)
class Tier:
    """A phase after the timed rounds, run when the run asks for it."""
    name: str
    wanted: Callable[[MatrixRun], bool]
    run: Callable[[MatrixRun], None]


@dataclass
class MatrixRun:
    """The plan being carried out: its targets' lifecycles, the lab run that owns them, and the phases."""
    plan: RunPlan
    lab: LabRun
    data: dict[str, TargetLifecycle]
    profile: bool = False
    post_write: PostWriteSteps = field(init=False)
    task: TaskID | None = None
    load_failed: dict[str, str] = field(default_factory=dict)  # target name -> why its data failed to load
    blocks: ProcessBlocks = field(init=False)
    # the clock its rounds, budget shares and pilot rounds are timed by (a test's scripted Order moves one of its own)
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self.post_write = PostWriteSteps(self.plan.experiment)
        self.blocks = ProcessBlocks(self.plan.experiment.processes, self.data, self._new_processes,
                                    self._processes_chosen)

    def _new_processes(self, names: list[str], block: int) -> None:
        """Said and recorded when the servers are started again for a new block."""
        chosen = f"{self.blocks.processes}" + (", chosen" if self.e.processes.auto else "")
        self.lab.say(f"dbperf: process block {block}: started {', '.join(names)} again (processes = {chosen})")
        for name in names:
            self.lab.set_target(name, **{k: v for k, v in self.data[name].describe().items()
                                         if k in ("processes", "server_pids", "server_pid", "port")})

    def _processes_chosen(self, choice: ProcessChoice) -> None:
        """`processes = "auto"`: the count said and kept in meta.json before the next round."""
        self.meta.processes, self.meta.processes_chosen = choice.count, choice.reason
        self.lab.save()
        self.lab.say(f"dbperf: processes = \"auto\": {choice.reason}")

    @property
    def e(self) -> Experiment:
        return self.plan.experiment

    @property
    def meta(self) -> RunMeta:
        assert self.lab.meta is not None
        return self.lab.meta

    @property
    def progress(self) -> Progress:
        assert self.lab.progress is not None
        return self.lab.progress

    def phases(self) -> list[Callable[[], None]]:
        return [self.load, self.run_groups, self.measure_sizes,
                *(partial(tier.run, self) for tier in TIERS if tier.wanted(self))]

    def open(self, in_history: bool) -> None:
        """The plan's way of running rounds set up (a slices run's library copies made), meta.json begun (a resumed
        run's: its earlier sittings kept), the way's line said (where duets fall back)."""
        self.plan = replace(self.plan, order=self.plan.order.opened(self.lab.data_root))
        meta = run_meta_of(self.plan, {name: d.settings for name, d in self.data.items()})
        meta.in_history = None if in_history else False
        earlier = self.plan.replay.earlier
        if earlier is not None:
            meta = earlier.resumed_meta(meta)
            self.blocks.resumed(meta.processes)
        note = self.plan.order.note()
        if note:
            self.lab.say(f"dbperf: {note}")
        self.lab.start(meta, self.e.text)

    # -- load

    def load(self) -> None:
        """Every target started and loaded; a SQLite target whose load failed has its cells fail, the others run."""
        targets = self.e.targets
        task = self.progress.add_task("loading", total=len(targets))
        failed: list[str] = []
        for t in targets:
            why = self._load(t, task)
            if why is None:
                continue
            failed.append(why)
            self.load_failed[t.name] = why
            if len(failed) == len(targets):  # none left to measure: one line, as it always was
                raise TargetLoadFailed(failed[0])
        self.lab.save()
        self.progress.remove_task(task)
        for why in failed:
            self.lab.say(f"dbperf: {why}; {self.plan.order.lost_load}")

    def _load(self, t: Target, task: TaskID) -> str | None:
        data = self.data[t.name]
        self.progress.update(task, description=f"starting {t.name}" if t.is_server else "")
        data.start()
        self.progress.update(task, description=f"loading {self.e.tables}×{self.e.table_size:,} rows for {t.name}")
        try:
            loaded = data.load()
        except TargetLoadFailed as err:
            self.meta.set_target(t.name, error=str(err))
            return str(err)
        self.blocks.loaded(t.name)
        server = {"engine_version": loaded.engine_version} if t.is_server else {}
        self.lab.set_target(t.name, **{"load": to_builtins(loaded), **data.describe(), **server,
                                       "db_bytes_after_load": database_bytes(t, data)})
        self.progress.advance(task)
        return None

    # -- the groups

    def run_groups(self) -> None:
        """The plan's groups in order, each its rounds; with automatic repeats each takes its share of the budget
        (share_deadline) and a resumed one goes on from its earlier rounds."""
        plan = self.plan
        self.task = self.progress.add_task("cells", total=plan.progress_total())
        budget_end = self.clock() + plan.replay.budget_s(self.e)
        # resumed: the groups that had stopped keep their rounds (a reopened one until its new rounds stop)
        self.meta.start_rounds(keep=plan.replay.goes_on and plan.policy.auto)
        order = plan.group_order()
        for i, group in enumerate(plan.groups):
            if group.stopped:  # resumed: its rounds had stopped; they are not run again
                self.progress.advance(self.task)
                continue
            sharing = sum(1 for g in plan.groups[i:] if g.shares)
            deadline = share_deadline(self.clock(), budget_end, group.spent_s, sharing)
            state = GroupState(self.e.base, [t.name for t in self.e.targets], self.e.min_effect,
                               aa=self.e.aa_target, planned=group.planned, processes=self.blocks.processes)
            way = self.sized(group, deadline if plan.policy.auto else None)
            run_rounds(state, plan.policy, partial(self.measure, group, way, state), deadline, self.clock,
                       replay=group.replay, overhead=partial(self._restarts_s, state))
            self.meta.end_rounds(RoundsMeta(benchmark=group.benchmark.name, threads=group.threads,
                                            rounds=state.rounds, stopped=state.stop_reason,
                                            planned=state.planned), order)
            self.lab.save()
            if plan.policy.auto:
                self.progress.advance(self.task)

    def _restarts_s(self, state: GroupState, share_s: float, round_s: float) -> float:
        """The group's restarts' time, kept out of its plan (under "auto" the first group's chooses the count,
        which its state then judges on)."""
        spent = self.blocks.overhead_s(share_s, round_s)
        state.processes = self.blocks.processes
        return spent

    def sized(self, group: Group, deadline: float | None) -> Order:
        """The way a group's rounds run: the plan's, and under `time = "auto"` at the group's round length, chosen
        from its pilot rounds (runner/pilot.py) or by an earlier sitting, recorded and said before its rounds. With
        a budget (`deadline`: when the group's share ends) the pilot is paid from the share and sized to it, and the
        length chosen is one whose rounds fit in what it left."""
        auto, lengths = self.e.auto_time, self.meta.auto_time
        if auto is None or lengths is None:
            return self.plan.order
        chosen = lengths.length(group.benchmark.name, group.threads)
        if chosen is None:
            measured = measured_per_second(self.plan.order, group.threads)
            share = deadline - self.clock() if deadline is not None else None
            length = pilot_length(auto, share, measured)
            way = self.plan.order.running(pilot_experiment(self.e, auto, length))
            rounds = [self._pilot_round(way, group, r) for r in range(1, auto.pilot_rounds + 1)]
            budget = (round_budget(deadline - self.clock(), measured, self.plan.policy.min_rounds)
                      if deadline is not None else None)
            chosen = length_meta(group.benchmark.name, group.threads,
                                 choose(self.e.base, rounds, auto, measured, budget, length), length)
            lengths.chose(chosen)
            self.lab.save()
            self.lab.say(length_line(chosen, auto))
        return self.plan.order.running(replace(self.e, time_s=chosen.time_s))

    def _pilot_round(self, way: Order, group: Group, round_: int) -> PilotRound:
        """One pilot round of a group, its cells run as the group's are but not kept."""
        started = self.clock()
        records: list[CellRecord] = []
        for cells in way.round_cells(group.benchmark, group.threads, round_):
            if self.task is not None:
                self.progress.update(self.task, description=f"{group.benchmark.name} t={group.threads} pilot "
                                                            f"#{round_} (time = \"auto\")")
            for cell in cells:
                self._ready(cell)
            records.extend(way.run(cells, self.data, self.load_failed))
        return PilotRound(records, self.clock() - started)

    def measure(self, group: Group, order: Order, state: GroupState, round_: int) -> list[Measured]:
        """One round of a group: its earlier repeats (resumed), and the cells not measured before; with `processes`
        above 1, the servers started again first where the round begins a block (runner/process_blocks.py)."""
        block = self.blocks.before_round((group.benchmark.name, group.threads), state.planned, round_,
                                         replayed=round_ <= group.replay)
        measured = [m for m in group.before if m.round == round_]
        for cells in order.round_cells(group.benchmark, group.threads, round_):
            measured.extend(self._run_cells(order, cells, round_, block))
        return measured

    def _run_cells(self, order: Order, cells: list[CellPlan], round_: int, block: int | None = None
                   ) -> list[Measured]:
        """Cells measured together (one, a duet's two, a slices round's every one), run by the group's way and kept
        (a side measured before is not kept again)."""
        skip = self.plan.replay.skip
        if all(cell.key in skip for cell in cells):  # resumed: measured before
            self._advance(len(cells))
            return []
        of = "" if self.plan.policy.auto else f"/{self.e.repeats}"
        names = " + ".join(cell.target.name for cell in cells)
        first = cells[0]
        if self.task is not None:
            self.progress.update(self.task, description=f"{first.benchmark.name} t={first.threads} #{round_}{of} "
                                                        f"{names}")
        restarted = [self._ready(cell) for cell in cells]
        records = order.run(cells, self.data, self.load_failed)
        # A warm-up that never settled counts like interference: its round is run again (auto). In a duet (or a
        # slices process) the cells measured together are the unit: interference on either side spoils all.
        spoiled = any(interfered(r) for r in records)
        measured = []
        for cell, record, was_restarted in zip(cells, records, restarted, strict=True):
            if cell.key in skip:  # resumed duet: only the side not measured before is kept
                self._advance(1)
                continue
            record.process = block
            self._keep(cell, record, was_restarted)
            measured.append(Measured(
                cell.target.name, round_, record.result.qps if record.ok and record.result else None,
                interfered=spoiled if len(cells) > 1 else interfered(record), cpu_qps=cpu_qps(record),
                partner=cell.partner, process=block))
        return measured

    def _ready(self, cell: CellPlan) -> bool:
        """The cell's target running (started again if its server died: True) and its post-write step run."""
        data = self.data[cell.target.name]
        restarted = data.ensure_running()
        if restarted:
            # Said when it happens, not only as `restarts` in meta.json: the figures after it are not like the ones
            # before.
            self.lab.say(restart_line(cell, data.describe().get("restarts")))
        step = self.post_write.before_cell(cell.benchmark, cell.target, data)
        if step:
            part = self.meta.target(cell.target.name)
            assert part is not None
            self.lab.set_target(cell.target.name, post_write=[*part.post_write, step])
        return restarted

    def _keep(self, cell: CellPlan, record: CellRecord, restarted: bool) -> None:
        """A measured cell's record written the moment it is measured."""
        if restarted:
            record.server_restarted_before = True
            self.lab.set_target(cell.target.name, restarts=self.data[cell.target.name].describe()["restarts"])
        self.lab.keep(record, record.ok)
        self._advance(1)

    def _advance(self, cells: int) -> None:
        if not self.plan.policy.auto and self.task is not None:  # auto: the bar counts groups
            self.progress.advance(self.task, cells)

    # -- after the rounds

    def measure_sizes(self) -> None:
        """Each target's database size at the end (written with the run's status)."""
        for t in self.e.targets:
            self.meta.set_target(t.name, db_bytes_at_end=database_bytes(t, self.data[t.name]))


def restart_line(cell: CellPlan, restarts: int | None) -> str:
    """What a restart of a lab server between cells means for the cells after it."""
    return (f"dbperf: target {cell.target.name}: its server had died and was started again (restart "
            f"{restarts or 1}) before {cell.benchmark.name} t={cell.threads} #{cell.repeat}: this cell and the "
            "ones after it run on a cold buffer pool (the server's caches emptied)")


def profile_cells(run: MatrixRun) -> None:
    """Counters per (target, benchmark) after the timed cells, one thread, written as `counters` records."""
    e, progress = run.e, run.progress
    profiler = Profiler(e, run.lab.data_root / "profile")
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
            run.lab.append(record)
            progress.advance(task)
    finally:
        profiler.close()


def simulated_tier(run: MatrixRun) -> None:
    """The deterministic (simulated) tier, after the timed rounds (simulated_tier.py)."""
    measure_simulated(run.e, run.lab.data_root / "simulated", run.data, run.lab.append, run.progress,
                      results=run.lab.out)


# The tiers after the timed rounds, in the order they run: counters per cell (`dbperf run --profile`), the simulated
# tier (`simulated = true`).
TIERS = (Tier("counters", lambda run: run.profile, profile_cells),
         Tier("simulated", lambda run: run.e.simulated, simulated_tier))
