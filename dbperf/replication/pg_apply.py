"""The apply study on PostgreSQL streaming replication: how fast a hot standby replays what the primary wrote,
against the replay's knob (recovery_prefetch, the `mode`) and durability settings, with the replay lag over time.

One measurement: replay is paused on every standby (`pg_wal_replay_pause()`; the walreceiver keeps receiving and
flushing the WAL); dbperf-driver runs `transactions` events of a catalog write workload on the primary at the chosen
client threads; then the primary commits a marker row (PgClusterServer.mark: under synchronous_commit = local, so
that the WAL is flushed and sent up to it); the lab waits until the measured standby has received the WAL up to the
primary's position (pg_last_wal_receive_lsn), calls `SELECT pg_wal_replay_resume()`, and times from that call
(PostgreSQL 14 and later replay at once; before 14 the pause loop notices a resume only within a second, so timing
starts when the replay position is seen moving; either way the delay to the first move is resume_delay_s) until the
marker row on the standby (polled every ~1 ms, on the same connection) shows the new
value, i.e. until the standby has replayed every commit of the load. transactions = xids the
primary assigned during the load (each writing transaction gets one), so failed or multi-statement events count
right; trx/s = transactions / that time. A thread samples the lag every 0.1 s on connections of its own: WAL bytes
not replayed and not received, and the primary's pg_stat_replication.replay_lag. The data is not restored between
measurements: writes accumulate, as in the MariaDB study.

Physical replay is one process (the startup process): PostgreSQL has no parallel-apply setting for it, so workers is
1 and says "not applicable" in the report; the real knobs are recovery_prefetch (PG 15+) and
maintenance_io_concurrency (its prefetch depth, settable in the target's config)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

from dbperf.experiment.model import Experiment
from dbperf.experiment.replication_section import ReplicationSpec
from dbperf.records import ApplyRecord, LagSample
from dbperf.replication.apply_study import ApplyPlan, apply_record, count_committed, plan, run_plan, write_load
from dbperf.replication.pg_cluster import PgCluster, PgClusterServer, lsn
from dbperf.replication.replica_set import StudyFailed

RECEIVE_TIMEOUT_S = 600.0
SAMPLE_S = 0.1
MAX_SAMPLES = 600  # a longer series is thinned evenly (the first and last samples kept)


class LagSampler(threading.Thread):
    """Samples the measured standby's lag every SAMPLE_S until stopped. A server that dies ends the sampling (the
    study reports the failure); a standby that dies while the primary's commits wait for it (primary-sync-commit)
    gets those sessions ended, so that the load fails instead of hanging. `switch` and `finish` take a sample at
    once."""

    def __init__(self, cluster: PgCluster, standby: PgClusterServer) -> None:
        super().__init__(daemon=True, name="pg-lag-sampler")
        self.cluster = cluster
        self.standby = standby
        self.phase = "load"
        self.samples: list[LagSample] = []
        self._halt = False
        self._wake = threading.Event()
        self._taken = threading.Event()  # set after every sample (switch waits for one)
        self._t0 = time.perf_counter()

    def switch(self, phase: str) -> None:
        """A new phase: first a sample of the state the old one ended in (the end of the load, replay still paused),
        then one of the new phase at once (the replay may take less than one interval)."""
        self._taken.clear()
        self._wake.set()
        self._taken.wait(timeout=5.0)
        self.phase = phase
        self._wake.set()

    def run(self) -> None:
        try:
            primary = self.cluster.primary.connect()
            standby = self.standby.connect()
        except StudyFailed:
            return
        with primary, standby:
            while True:
                last = self._halt
                if any(r.died() for r in self.cluster.replicas):
                    with contextlib.suppress(Exception):
                        primary.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                        "WHERE wait_event = 'SyncRep'")
                    return
                try:
                    row = primary.execute("SELECT pg_current_wal_lsn()::text, (SELECT extract(epoch FROM replay_lag) "
                                          "FROM pg_stat_replication WHERE application_name = %s)",
                                          (self.standby.role,)).fetchone()
                    mine = standby.execute("SELECT pg_last_wal_replay_lsn()::text, "
                                           "pg_last_wal_receive_lsn()::text").fetchone()
                except Exception:  # a server went away: the study reports it
                    return
                if row is None or mine is None:
                    return
                head = lsn(row[0])
                self.samples.append(LagSample(
                    t_s=round(time.perf_counter() - self._t0, 3), phase=self.phase,
                    replay_behind_bytes=max(0, head - lsn(mine[0])), receive_behind_bytes=max(0, head - lsn(mine[1])),
                    replay_lag_s=None if row[1] is None else round(float(row[1]), 4)))
                self._taken.set()
                if last:
                    return
                self._wake.wait(SAMPLE_S)
                self._wake.clear()

    def finish(self) -> list[LagSample]:
        """Stops after one last sample (the state at the end of the measurement); the samples."""
        self._halt = True
        self._wake.set()
        self.join(timeout=10)
        samples = self.samples
        if len(samples) > MAX_SAMPLES:
            step = (len(samples) - 1) / (MAX_SAMPLES - 1)
            samples = [samples[round(i * step)] for i in range(MAX_SAMPLES)]
        return samples


def pause(r: PgClusterServer) -> None:
    """Replay paused: pg_is_wal_replay_paused() is true once the pause is requested, and from then on no record is
    replayed (PG 14+ would say 'pause requested' until the next record arrives)."""
    r.query("SELECT pg_wal_replay_pause()", what="pausing the replay (pg_wal_replay_pause)")
    if not r.value("SELECT pg_is_wal_replay_paused()", what="checking the pause"):
        raise StudyFailed(f"{r.target.name}: pg_wal_replay_pause() did not pause the replay", r.log_tail())


def resume(r: PgClusterServer) -> None:
    r.query("SELECT pg_wal_replay_resume()", what="resuming the replay (pg_wal_replay_resume)")


def _wait_received(r: PgClusterServer, target: int) -> None:
    deadline = time.monotonic() + RECEIVE_TIMEOUT_S
    while True:
        received = r.receive_lsn()
        if received >= target:
            return
        if r.died():
            raise StudyFailed(f"{r.target.name}: died while receiving the WAL", r.log_tail())
        if time.monotonic() > deadline:
            raise StudyFailed(f"{r.target.name}: the walreceiver did not receive the primary's WAL within "
                              f"{RECEIVE_TIMEOUT_S:.0f} s ({target - received:,} bytes missing)", r.log_tail())
        time.sleep(0.02)


def _replay_started(r: PgClusterServer, paused_at: int) -> float:
    """The moment (perf_counter) replay is seen moving after the resume. PostgreSQL before 14 checks for the resume
    once a second (pg_usleep(1 s) in its pause loop; 14 and later wake at once): that wait is the pause's, not the
    replay's, so the apply time starts here and the delay is recorded apart (resume_delay_s)."""
    deadline = time.monotonic() + 30.0
    while True:
        if r.replay_lsn() > paused_at:
            return time.perf_counter()
        if r.died():
            raise StudyFailed(f"{r.target.name}: died when its replay was resumed", r.log_tail())
        if time.monotonic() > deadline:
            raise StudyFailed(f"{r.target.name}: replay did not resume within 30 s of pg_wal_replay_resume()",
                              r.log_tail())
        time.sleep(0.0005)


def _record(cluster: PgCluster, p: ApplyPlan, status: str, **fields: object) -> ApplyRecord:
    return apply_record(cluster.replicas[0].target.name, p, status, (0, 0), **fields)  # no binlog commit wait


def measure(cluster: PgCluster, e: Experiment, spec: ReplicationSpec, p: ApplyPlan) -> ApplyRecord:
    """One timed catch-up; a StudyFailed when a server dies or replication breaks."""
    primary, measured, others = cluster.primary, cluster.replicas[0], cluster.replicas[1:]
    record = _record(cluster, p, "failed")
    for r in cluster.replicas:
        pause(r)
    before_xid, before_lsn = primary.next_xid(), primary.current_lsn()
    sampler = LagSampler(cluster, measured)
    sampler.start()
    try:
        record.primary_s, outcome = write_load(primary, e, spec.transactions, p, "postgres")
        if not outcome.ok or outcome.result is None:
            dead = next((s for s in cluster.servers if s.died()), None)
            if dead is not None:
                raise StudyFailed(f"{dead.target.name} died during the write load ({outcome.error})", dead.log_tail())
            raise StudyFailed(f"{primary.target.name}: the write load failed: {outcome.error}", primary.log_tail())
        record.transactions = primary.next_xid() - before_xid
        mark = primary.mark()
        target = primary.current_lsn()
        record.wal_bytes = target - before_lsn
        count_committed(primary, record, outcome)
        _wait_received(measured, target)
        paused_at = measured.replay_lsn()
        wakes_at_once = int(measured.value("SELECT current_setting('server_version_num')::int",
                                           what="reading the server's version")) >= 140000
        sampler.switch("apply")
        resumed = time.perf_counter()
        resume(measured)
        moving = _replay_started(measured, paused_at)
        record.resume_delay_s = round(moving - resumed, 4)
        # 14 and later replay at once: timing from the resume call, since a short backlog can be replayed
        # before the polling sees it move. Before 14 the pause loop's 1 s sleep would count: from the move.
        t0 = resumed if wakes_at_once else moving
        cluster.wait_caught_up(measured, mark)
        record.apply_s = round(time.perf_counter() - t0, 4)
    finally:
        record.lag_series = sampler.finish()
    record.trx_per_s = round(record.transactions / record.apply_s, 1)
    record.status = "ok"
    for r in others:
        resume(r)
        cluster.wait_caught_up(r, mark, poll_s=0.02)
    return record


def run_pg_apply_study(cluster: PgCluster, e: Experiment, spec: ReplicationSpec,
                       write: Callable[[ApplyRecord], None], step: Callable[[str], None]) -> None:
    """Every measurement of the plan (apply_study.run_plan); the standbys replay again afterwards, whatever
    happened."""
    def one(p: ApplyPlan) -> ApplyRecord:
        step(f"apply: {p.durability} {p.benchmark.name} t={p.client_threads} {p.mode} #{p.repeat}")
        cluster.set_durability(p.durability)
        cluster.set_mode(p.mode)
        return measure(cluster, e, spec, p)

    try:
        run_plan(plan(e, spec), one,
                 lambda p, err: _record(cluster, p, "failed", error=str(err), server_log_tail=err.log_tail or None),
                 write)
    finally:
        for r in cluster.replicas:
            if not r.died():
                with contextlib.suppress(StudyFailed):
                    resume(r)
