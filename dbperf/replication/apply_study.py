"""What the apply studies of both engines share (apply_rate.py: MariaDB's replicas, pg_apply.py: PostgreSQL's
standbys): the plan of measurements, the record of one, the write load on the primary, and the loop that writes each
record as it is produced and a failed one when the study cannot go on."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from dbperf.catalog.workload import Workload, compile_statements
from dbperf.experiment.model import Experiment
from dbperf.experiment.replication_section import ReplicationSpec
from dbperf.host.driver import DriverOutcome, run_job
from dbperf.records import ApplyRecord, RunResult
from dbperf.replication.replica_set import RoleServer, StudyFailed

LOAD_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class ApplyPlan:
    durability: str
    commit_wait_count: int
    benchmark: Workload
    client_threads: int
    repeat: int
    workers: int
    mode: str


def plan(e: Experiment, spec: ReplicationSpec) -> Iterator[ApplyPlan]:
    """Durability outermost (changing it restarts the replicas); within it, each repeat measures every commit wait
    (a SET GLOBAL on the primary), worker count and mode in turn, so that what a figure compares (the wait against
    none, workers against one SQL thread) was measured side by side, minutes apart, not hours."""
    for durability in spec.durability:
        for benchmark in e.benchmarks:
            for threads in e.threads:
                for repeat in range(1, spec.repeats + 1):
                    for count in spec.commit_wait_counts:
                        for workers in spec.workers:
                            for mode in ("serial",) if workers == 0 else spec.modes:
                                yield ApplyPlan(durability, count, benchmark, threads, repeat, workers, mode)


def apply_record(replica: str, p: ApplyPlan, status: str, commit_wait: tuple[int, int],
                 **fields: object) -> ApplyRecord:
    """The record of measurement `p` on `replica`; commit_wait is the primary's (binlog_commit_wait_count, _usec),
    (0, 0) where the engine has none."""
    return ApplyRecord(type="replication_apply", replica=replica, benchmark=p.benchmark.name,
                       client_threads=p.client_threads, workers=p.workers, mode=p.mode, durability=p.durability,
                       commit_wait_count=commit_wait[0], commit_wait_usec=commit_wait[1], repeat=p.repeat,
                       status=status, started_at=time.time(), **fields)  # type: ignore[arg-type]


def write_load(primary: RoleServer, e: Experiment, transactions: int, p: ApplyPlan,
               engine: str) -> tuple[float, DriverOutcome[RunResult]]:
    """dbperf-driver runs `transactions` events of the plan's write workload on the primary at its client threads;
    the seconds it took and the driver's outcome."""
    job = primary.working_job().replace(
        mode="run", threads=p.client_threads, events=math.ceil(transactions / p.client_threads),
        seed=e.seed + p.repeat, workload=compile_statements(p.benchmark, e.table_size, engine))
    started = time.perf_counter()
    outcome = run_job(job, RunResult, LOAD_TIMEOUT_S, env=primary.env())
    return round(time.perf_counter() - started, 4), outcome


def count_committed(primary: RoleServer, record: ApplyRecord, outcome: DriverOutcome[RunResult]) -> None:
    """The primary's rate, once the record holds the transactions the load committed; StudyFailed when none."""
    if record.transactions <= 0:
        samples = "; ".join(outcome.result.error_samples if outcome.result else []) or "no error reported"
        raise StudyFailed(f"{primary.target.name}: the write load committed no transaction ({samples})")
    record.primary_trx_per_s = round(record.transactions / record.primary_s, 1)


def run_plan(plans: Iterable[ApplyPlan], measure: Callable[[ApplyPlan], ApplyRecord],
             failed: Callable[[ApplyPlan, StudyFailed], ApplyRecord], write: Callable[[ApplyRecord], None]) -> None:
    """Every measurement of the plan, each record written as it is produced. A server that dies or replication
    that breaks ends the study with a failed record holding the error and the server's log tail (StudyFailed is
    raised again for the lab)."""
    current: ApplyPlan | None = None
    try:
        for p in plans:
            current = p
            write(measure(p))
    except StudyFailed as err:
        if current is not None:
            write(failed(current, err))
        raise
