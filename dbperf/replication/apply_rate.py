"""The apply-rate study ([Nielsen 2014-03-13]): how fast a replica applies what the primary wrote, against the
replica's workers × mode × durability, with the primary's binlog commit wait (MariaDB: slave_parallel_threads ×
slave_parallel_mode, binlog_commit_wait_count; MySQL: replica_parallel_workers × replica_preserve_commit_order,
binlog_group_commit_sync_delay: the cluster's dialect says them).

One measurement: the replicas' SQL threads are stopped (the measured replica keeps its I/O thread, so the relay log
fills as the primary writes); dbperf-driver runs `transactions` events of a catalog write workload on the primary at
the chosen client threads; the lab waits until the replica's I/O thread has fetched the primary's last GTID
(MariaDB's Gtid_IO_Pos; MySQL's Retrieved_Gtid_Set), then starts the SQL thread and times, on one connection, START
SLAVE / REPLICA SQL_THREAD and the GTID wait (MASTER_GTID_WAIT, WAIT_FOR_EXECUTED_GTID_SET) for the primary's
position until it returns. Before the load, every setting of the measurement (the replica's durability and parallel
apply, the primary's group-commit wait) is read back with SHOW VARIABLES and kept in the record; one that did not take
fails the study. transactions = the GTIDs the primary wrote (its position before and after), so failed
events and multi-statement events count right; trx/s = transactions / that time. The data is not restored between
measurements: writes accumulate, as in [Nielsen 2014-03-13]'s benchmark."""

from __future__ import annotations

import time
from collections.abc import Callable

from dbperf.experiment.model import Experiment
from dbperf.experiment.replication_section import ReplicationSpec
from dbperf.records import ApplyRecord
from dbperf.replication.apply_study import ApplyPlan, apply_record, count_committed, plan, run_plan, write_load
from dbperf.replication.cluster import Cluster, ClusterServer
from dbperf.replication.replica_set import StudyFailed

IO_CATCH_UP_TIMEOUT_S = 600.0


def _wait_io(r: ClusterServer, pos: str) -> None:
    """Until the replica's I/O thread has written `pos` to its relay log."""
    d = r.dialect
    deadline = time.monotonic() + IO_CATCH_UP_TIMEOUT_S
    while True:
        status = r.replica_status()
        if d.io_fetched(status, pos):
            return
        if status.get(d.io_running) == "No":
            raise StudyFailed(f"{r.target.name}: the replica's I/O thread stopped: "
                              f"{status.get('Last_IO_Error') or 'no error reported'}", r.log_tail())
        if time.monotonic() > deadline:
            raise StudyFailed(f"{r.target.name}: the I/O thread did not fetch {pos} within "
                              f"{IO_CATCH_UP_TIMEOUT_S:.0f} s (at {d.io_position(status)})", r.log_tail())
        time.sleep(0.02)


def measure(cluster: Cluster, e: Experiment, spec: ReplicationSpec, p: ApplyPlan) -> ApplyRecord:
    """One timed catch-up; a StudyFailed when a server dies or replication breaks."""
    primary, measured, others = cluster.primary, cluster.replicas[0], cluster.replicas[1:]
    d = cluster.dialect
    record = apply_record(measured.target.name, p, "failed", (p.commit_wait_count, spec.commit_wait_usec))
    measured.query(d.stop, what=d.stop)
    # Every setting of the measurement read back as the server has it (a StudyFailed if one did not take), and kept.
    replica = {**measured.check_variables(d.shown(measured.role_settings)),
               **measured.run(d.parallel(p.workers, p.mode if p.workers else None))}
    measured.query(d.start_io, what=d.start_io)
    for r in others:
        r.query(d.stop_sql, what=d.stop_sql)
    record.variables = {"primary": primary.run(d.commit_wait(p.commit_wait_count, spec.commit_wait_usec)),
                        "replica": replica}
    before = primary.gtid_position()
    counted = primary.status_counters(d.group_commit_counters)
    record.primary_s, outcome = write_load(primary, e, spec.transactions, p, primary.engine)
    if not outcome.ok or outcome.result is None:
        dead = " (the primary died)" if primary.died() else ""
        raise StudyFailed(f"{primary.target.name}: the write load failed{dead}: {outcome.error}", primary.log_tail())
    after = primary.gtid_position()
    if counted:
        now = primary.status_counters(d.group_commit_counters)
        record.primary_group_commit = {name: now[name] - counted[name] for name in counted}
    record.transactions = cluster.transactions(before, after)
    count_committed(primary, record, outcome)
    _wait_io(measured, after)
    t0 = time.perf_counter()
    measured.query(d.start_sql, what=d.start_sql)
    cluster.wait_caught_up(measured, after)
    record.apply_s = round(time.perf_counter() - t0, 4)
    record.trx_per_s = round(record.transactions / record.apply_s, 1)
    record.status = "ok"
    for r in others:
        r.query(d.start_sql, what=d.start_sql)
        cluster.wait_caught_up(r, after)
    return record


def run_apply_study(cluster: Cluster, e: Experiment, spec: ReplicationSpec, write: Callable[[ApplyRecord], None],
                    step: Callable[[str], None]) -> None:
    """Every measurement of the plan (apply_study.run_plan)."""
    def one(p: ApplyPlan) -> ApplyRecord:
        step(f"apply: {p.durability} wait={p.commit_wait_count} {p.benchmark.name} t={p.client_threads} "
             f"workers={p.workers} {p.mode} #{p.repeat}")
        cluster.set_durability(p.durability)
        return measure(cluster, e, spec, p)

    def failed(p: ApplyPlan, err: StudyFailed) -> ApplyRecord:
        return apply_record(cluster.replicas[0].target.name, p, "failed", (p.commit_wait_count, spec.commit_wait_usec),
                            error=str(err), server_log_tail=err.log_tail or None)

    run_plan(plan(e, spec), one, failed, write)
