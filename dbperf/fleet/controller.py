"""The controller of a fleet run: gives every host its part of the matrix (plan.py) as one task pinned to that host
(resource host-NAME), writes each record into the one results directory the moment it arrives (with its host), and
keeps the fleet's state in meta.json (`fleet.hosts`: each host's metadata, its targets as built there, its status).

Faults: a host whose worker is lost (killed, crashed, disconnected) fails the cell it was running with the reason,
its remaining cells are reported as not run, and the other hosts go on; `--resume` runs, into the same directory,
the cells that have no record yet and those a lost worker failed. Ctrl-C sets the run's cancel event: every host's
child stops its driver and servers and says so; then the run is recorded as interrupted."""

from __future__ import annotations

import contextlib
import json
import queue
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from distributed import Client, Event, Future, KilledWorker
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.fleet.cluster import connected_hosts, resource_of
from dbperf.fleet.messages import Done, FutureChanged, HostStarted, Message, MessageError, RecordLine, decode
from dbperf.fleet.plan import HostPart, split, with_host_cpus
from dbperf.fleet.probe import hosts_cpus
from dbperf.fleet.task import cancel_event_of, host_matrix, topic_of
from dbperf.records import CellRecord, RecordError, ResultsRecord, results_record
from dbperf.run_meta import FleetHostMeta, FleetMeta, HostMeta, RunMeta, meta_part, updated
from dbperf.runner.matrix import run_meta_of
from dbperf.runner.plan import RunPlan
from dbperf.runner.resume import CellKey, record_key
from dbperf.storage.results import ResultsWriter, read_results

LOST = "the host's worker was lost"  # the error of a cell a lost worker was running; --resume runs it again
JOIN_TIMEOUT_S = 60.0  # how long the hosts' workers may take to appear at the scheduler
CANCEL_GRACE_S = 90.0  # after Ctrl-C: how long the hosts get to stop their servers and report
DONE_GRACE_S = 15.0  # a task that finished but whose final report has not arrived yet


@dataclass
class HostRun:
    part: HostPart
    planned: list[CellKey]
    skip: set[CellKey]
    received: set[CellKey] = field(default_factory=set)
    future: Future | None = None
    status: str = "pending"  # running, complete, interrupted, failed, lost
    reason: str | None = None
    finished_at: float | None = None  # when its task ended without the final report (yet)
    worker: str | None = None  # the address of the worker that runs it

    @property
    def host(self) -> str:
        return self.part.host

    @property
    def active(self) -> bool:
        return self.status in ("pending", "running")

    def remaining(self) -> list[CellKey]:
        return [k for k in self.planned if k not in self.skip and k not in self.received]


@dataclass
class FleetOutcome:
    directory: Path
    cells_ok: int = 0
    cells_failed: int = 0
    hosts: dict[str, HostRun] = field(default_factory=dict)

    @property
    def not_run(self) -> dict[str, int]:
        return {h: len(r.remaining()) for h, r in self.hosts.items() if r.remaining()}


def _resume_state(directory: Path, e: Experiment) -> tuple[RunMeta, dict[str, set[CellKey]]]:
    """What an earlier run of this experiment into `directory` measured already, per host."""
    meta, records, _ = read_results(directory)
    if meta.fleet is None:
        raise UserError(f"{directory}: not a fleet run's results; --resume continues a dbperf fleet run")
    try:
        earlier = (directory / "experiment.toml").read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(f"{directory / 'experiment.toml'}: cannot read: {err.strerror}") from None
    if earlier != e.text:
        raise UserError(f"{directory}: was run with another experiment file than {e.path}; --resume needs the same")
    done: dict[str, set[CellKey]] = {}
    for r in records:
        if isinstance(r, CellRecord) and r.host and not (r.error or "").startswith(LOST):
            done.setdefault(r.host, set()).add(record_key(r))
    return meta, done


def _lost_worker_note(host: str, reason: str) -> str:
    return f"{LOST} ({host}: {reason}) while this cell ran or was being set up"


class Controller:
    def __init__(self, e: Experiment, client: Client, out: Path, console: Console, scheduler: str,
                 default_hosts: list[str], resume: bool = False, keep_data: bool = False,
                 fake_cell_s: float | None = None) -> None:
        self.e, self.client, self.console = e, client, console
        self.out = out.absolute()
        self.run_id = uuid.uuid4().hex[:12]
        self.keep_data, self.fake_cell_s = keep_data, fake_cell_s
        parts = split(e, default_hosts)
        done: dict[str, set[CellKey]] = {}
        if resume:
            self.meta, done = _resume_state(self.out, e)
        # cpus, and so the planned cells (a duet's), are not planned until run() asks each host (_plan_host_cpus)
        self.hosts = {p.host: HostRun(p, p.cells, done.get(p.host, set())) for p in parts}
        self.outcome = FleetOutcome(self.out, hosts=self.hosts)
        self.events: queue.Queue[Message | MessageError] = queue.Queue()
        self.scheduler = scheduler
        self.resume = resume

    # -- setting up ---------------------------------------------------------------------------------------------

    def _wait_for_hosts(self) -> None:
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while True:
            missing = [h for h in self.hosts if h not in connected_hosts(self.client)]
            if not missing:
                return
            if time.monotonic() > deadline:
                raise UserError(f"{self.scheduler}: no worker for host(s) {', '.join(missing)} after "
                                f"{JOIN_TIMEOUT_S:.0f} s (start `dbperf worker --scheduler {self.scheduler} --name "
                                f"{missing[0]}` there)")
            time.sleep(0.2)

    def _plan_host_cpus(self) -> None:
        """Every host's `[run].cpus` planned with the CPUs it may use, asked there (the controller's own do not
        count), and so its cells: a duet's depend on them."""
        cpus = hosts_cpus(self.client, list(self.hosts), self.run_id)
        for part in with_host_cpus([r.part for r in self.hosts.values()], cpus):
            run = self.hosts[part.host]
            run.part, run.planned = part, part.cells

    def _open_results(self) -> ResultsWriter:
        if self.resume:
            writer = ResultsWriter.reopen(self.out)
            self.meta.status = "running"
            self.meta.resumed_at = [*(self.meta.resumed_at or []), datetime.now(UTC).isoformat(timespec="seconds")]
            for name, run in self.hosts.items():
                hm = self._host_meta(name)
                hm.status, hm.cpus = "pending", run.part.experiment.cpus.describe()
            writer.update_meta(self.meta)
            return writer
        writer = ResultsWriter(self.out)
        e = self.e
        self.meta = run_meta_of(RunPlan.of(e), {t.name: [] for t in e.targets})
        self.meta.fleet = FleetMeta(
            scheduler=self.scheduler, run_id=self.run_id,
            note="meta.host is the controller's and meta.cpus says each host planned its own; each host's own "
                 "metadata, its cpus as planned there, and its targets as built and loaded there, are under "
                 "fleet.hosts",
            hosts={h: FleetHostMeta(status="pending", targets=[t.name for t in r.part.experiment.targets],
                                    cells=len(r.planned), cpus=r.part.experiment.cpus.describe())
                   for h, r in self.hosts.items()},
        )
        writer.write_meta(self.meta, e.text)
        return writer

    def _submit(self) -> None:
        self.client.subscribe_topic(topic_of(self.run_id), self._receive)
        for host, run in self.hosts.items():
            if not run.remaining():
                run.status = "complete"
                continue
            job = {"host": host, "experiment": run.part.experiment, "skip": run.skip, "keep_data": self.keep_data,
                   "fake_cell_s": self.fake_cell_s}
            run.future = self.client.submit(host_matrix, job, self.run_id, key=f"dbperf-{self.run_id}-{host}",
                                            resources={resource_of(host): 1}, pure=False, retries=0)
            run.status = "running"
            run.future.add_done_callback(lambda _f, host=host: self.events.put(FutureChanged(host=host)))

    # -- events -------------------------------------------------------------------------------------------------

    def _host_meta(self, host: str) -> FleetHostMeta:
        if self.meta.fleet is None:
            self.meta.fleet = FleetMeta()
        return self.meta.fleet.hosts.setdefault(host, FleetHostMeta())

    def _set_host_meta(self, host: str, hm: FleetHostMeta) -> None:
        assert self.meta.fleet is not None
        self.meta.fleet.hosts[host] = hm

    def _write(self, writer: ResultsWriter, record: CellRecord) -> None:
        run = self.hosts[record.host or ""]
        writer.append(record)
        run.received.add(record_key(record))
        if record.ok:
            self.outcome.cells_ok += 1
        else:
            self.outcome.cells_failed += 1

    def _end_host(self, writer: ResultsWriter, run: HostRun, status: str, reason: str | None) -> None:
        run.status, run.reason = status, reason
        if status == "lost":
            remaining = run.remaining()
            if remaining:
                target, benchmark, threads, repeat, partner = remaining[0]
                self._write(writer, CellRecord(target=target, benchmark=benchmark, threads=threads, repeat=repeat,
                                               partner=partner, status="failed", started_at=time.time(), host=run.host,
                                               error=_lost_worker_note(run.host, reason or "unknown")))
            if run.future is not None:
                self.client.cancel(run.future)  # never run again behind the lab's back if the worker returns
        hm = self._host_meta(run.host)
        hm.status, hm.not_run, hm.reason = status, len(run.remaining()), reason or None
        writer.update_meta(self.meta)

    def _receive(self, event: tuple[float, object]) -> None:
        """A host's task's event (Dask's subscription: `(time, message)`), decoded here once, in the client's
        thread; a message that is not one is passed on as its error."""
        try:
            self.events.put(decode(event[1]))
        except MessageError as err:
            self.events.put(err)

    def _handle(self, writer: ResultsWriter, msg: Message | MessageError) -> ResultsRecord | None:
        """One message acted on; a record it carried is returned (for the progress bar)."""
        if isinstance(msg, MessageError):
            self.console.print(f"dbperf: error: {msg}; ignored", markup=False, highlight=False, soft_wrap=True)
            return None
        run = self.hosts.get(msg.host)
        if run is None:
            return None
        match msg:
            case RecordLine():
                return self._on_record(writer, run, msg)
            case HostStarted():
                self._on_host(writer, run, msg)
            case Done() if run.active:
                self._on_done(writer, run, msg)
            case FutureChanged() if run.active and run.future is not None:
                self._on_future(writer, run, run.future)
        return None

    def _on_record(self, writer: ResultsWriter, run: HostRun, msg: RecordLine) -> ResultsRecord | None:
        """A results line a host's task wrote: its cells go into the run's results, marked with the host."""
        try:
            record = results_record(json.loads(msg.line))
        except (RecordError, json.JSONDecodeError) as err:
            self.console.print(f"dbperf: warning: {run.host} sent a record that is not one ({err})",
                               markup=False, highlight=False)
            return None
        if isinstance(record, CellRecord):
            record.host = run.host
            self._write(writer, record)
        return record

    def _on_host(self, writer: ResultsWriter, run: HostRun, msg: HostStarted) -> None:
        """The host's facts, sent when its task starts; a dbperf other than the controller's is warned about."""
        if run.worker is not None and run.worker != msg.worker:  # started again elsewhere: not ours
            return
        run.worker = msg.worker
        facts = meta_part(HostMeta, msg.metadata)
        hm = self._host_meta(run.host)
        hm.host, hm.worker = facts, run.worker
        mine = self.meta.host or HostMeta()
        ours = (mine.dbperf_version, mine.dbperf_commit)
        theirs = (facts.dbperf_version, facts.dbperf_commit)
        if theirs != ours:
            self.console.print(f"dbperf: warning: {run.host} runs dbperf {theirs[0]} ({theirs[1]}), the "
                               f"controller {ours[0]} ({ours[1]})", markup=False, highlight=False)
        writer.update_meta(self.meta)

    def _on_done(self, writer: ResultsWriter, run: HostRun, msg: Done) -> None:
        """The task's final report: the host's own metadata, and how its run ended."""
        child_meta = msg.meta or {}
        hm = self._host_meta(run.host)
        reported: dict[str, Any] = {key: child_meta[key] for key in ("driver", "targets", "runtime_dir", "started_at",
                                                                     "finished_at") if key in child_meta}
        if self.keep_data:
            reported["work_dir"] = msg.work_dir
        try:
            self._set_host_meta(run.host, updated(hm, **reported))
        except msgspec.ValidationError as err:
            self.console.print(f"dbperf: warning: {run.host} reported a meta.json that is not one ({err})",
                               markup=False, highlight=False)
        code = msg.exit_code
        if code == 0:
            self._end_host(writer, run, "complete", None)
        elif code in (129, 130, 143):
            self._end_host(writer, run, "interrupted", "cancelled from the controller")
        else:
            tail = msg.stderr_tail.strip().splitlines()
            self._end_host(writer, run, "failed", f"exit code {code}: {tail[-1] if tail else 'no output'}")

    def _on_future(self, writer: ResultsWriter, run: HostRun, future: Future) -> None:
        """The task's future changed state: an error ends the host; a finished task's final report is awaited."""
        if future.status == "error":
            failure = future.exception()
            # KilledWorker: the worker died under the task; anything else is the task's own failure
            status = "lost" if isinstance(failure, KilledWorker) else "failed"
            self._end_host(writer, run, status, f"{type(failure).__name__}: {failure}")
        elif future.status == "finished":
            run.finished_at = time.monotonic()  # the final report is on its way

    def _check_hosts(self, writer: ResultsWriter) -> None:
        """Workers that left the cluster while their task ran (a scheduler that would retry the task elsewhere, or
        wait for the worker to return, does not fail it by itself)."""
        present = connected_hosts(self.client)
        for run in self.hosts.values():
            if not run.active:
                continue
            if run.host not in present or (run.worker and present[run.host] != run.worker):
                self._end_host(writer, run, "lost", "its worker left the cluster (killed, crashed or disconnected)")
            elif run.finished_at and time.monotonic() - run.finished_at > DONE_GRACE_S:
                self._end_host(writer, run, "failed", "the task ended without its final report")

    def _drain(self, writer: ResultsWriter, progress: Progress, task: Any, until: float | None) -> None:
        last_check = time.monotonic()
        while any(r.active for r in self.hosts.values()):
            if until is not None and time.monotonic() > until:
                return
            try:
                msg = self.events.get(timeout=0.5)
            except queue.Empty:
                msg = None
            if msg is not None:
                before = self.outcome.cells_ok + self.outcome.cells_failed
                record = self._handle(writer, msg)
                if isinstance(msg, RecordLine):
                    progress.update(task, advance=self.outcome.cells_ok + self.outcome.cells_failed - before,
                                    description=f"{msg.host}: {getattr(record, 'benchmark', '')}")
            if time.monotonic() - last_check > 1.0:
                self._check_hosts(writer)
                last_check = time.monotonic()

    # -- the run ------------------------------------------------------------------------------------------------

    def run(self) -> FleetOutcome:
        self._wait_for_hosts()
        self._plan_host_cpus()
        writer = self._open_results()
        total = sum(len(r.remaining()) for r in self.hosts.values())
        try:
            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeRemainingColumn(), console=self.console, transient=True) as progress:
                task = progress.add_task(f"{len(self.hosts)} hosts", total=total)
                self._submit()
                try:
                    self._drain(writer, progress, task, None)
                except KeyboardInterrupt:
                    self.meta.status = "interrupted"
                    self._cancel(writer, progress, task)
                    raise
            statuses = {r.status for r in self.hosts.values()}
            self.meta.status = "complete" if statuses == {"complete"} else "incomplete"
        except KeyboardInterrupt:
            self.meta.status = "interrupted"
            raise
        except BaseException:
            self.meta.status = "failed"
            raise
        finally:
            for run in self.hosts.values():
                if run.active and run.future is not None:
                    self.client.cancel(run.future)
            with contextlib.suppress(Exception):
                self.client.unsubscribe_topic(topic_of(self.run_id))
            self.meta.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
            with contextlib.suppress(UserError):
                writer.update_meta(self.meta)
            writer.close()
        return self.outcome

    def _cancel(self, writer: ResultsWriter, progress: Progress, task: Any) -> None:
        """Ctrl-C: every host stops its driver and servers and reports what it measured; a second Ctrl-C stops
        waiting (the hosts still stop: the event stays set)."""
        self.console.print("dbperf: cancelling the fleet's cells (the hosts stop their servers)", highlight=False)
        with contextlib.suppress(Exception):
            Event(cancel_event_of(self.run_id), client=self.client).set()
        with contextlib.suppress(KeyboardInterrupt):
            self._drain(writer, progress, task, time.monotonic() + CANCEL_GRACE_S)
        for run in self.hosts.values():
            if run.active:
                self._end_host(writer, run, "interrupted", "cancelled from the controller; no final report")
