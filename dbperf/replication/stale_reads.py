"""The stale-read study ([Nielsen 2014-02-10]): a client writes a row on the primary and at once reads it on a
replica; how often the read misses the write, and, with the engine's GTID wait on the replica before the read
(MariaDB: MASTER_GTID_WAIT(@@last_gtid of the write, timeout); MySQL: WAIT_FOR_EXECUTED_GTID_SET(the primary's
gtid_executed after the write, timeout)), that no read is stale and what the wait costs (its latency percentiles),
while background writers keep the primary busy.

The probe loop is native (`dbperf-driver stale-reads`, driver/src/stale/), not Python: the stale fraction depends
on the gap between the write's commit and the read, and an interpreter's tens of microseconds per round trip would
widen that gap and hide stale reads; the wait's latency would carry the interpreter's cost too."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from dbperf.experiment.model import Experiment
from dbperf.experiment.replication_section import ReplicationSpec
from dbperf.host.driver import driver_environ, driver_path
from dbperf.records import RecordError, StaleReadsRecord, StaleReadsResult, decode
from dbperf.replication.cluster import Cluster
from dbperf.replication.replica_set import StudyFailed
from dbperf.servers.lifecycle import PASSWORD_ENV

PROBE_TABLE = "stale_probe"
RUN_TIMEOUT_S = 3600.0
WATCH_S = 0.2


def prepare(cluster: Cluster, spec: ReplicationSpec) -> None:
    """The probe row on the primary, replicated; the replicas applying with the study's settings."""
    cluster.set_durability(spec.stale_durability)
    cluster.primary.query(f"CREATE TABLE IF NOT EXISTS sbtest.{PROBE_TABLE} (id INT PRIMARY KEY, v BIGINT NOT NULL) "
                          "ENGINE = InnoDB", what="creating the probe table")
    cluster.primary.query(f"INSERT INTO sbtest.{PROBE_TABLE} VALUES (1, 0) ON DUPLICATE KEY UPDATE v = v",
                          what="creating the probe row")
    workers, mode, d = spec.workers[-1], spec.modes[0], cluster.dialect
    for r in cluster.replicas:
        r.query(d.stop, what=d.stop)
        r.run(d.parallel(workers, mode))
        r.query(d.start, what=d.start)
    cluster.all_caught_up()


def _run_probe(cluster: Any, job: dict[str, Any], password: str) -> subprocess.CompletedProcess[str]:
    """The driver's run, watched: a server that dies meanwhile ends it (a probe write waiting for a dead standby
    would otherwise wait for ever) and fails the study with that server's log tail."""
    proc = subprocess.Popen([driver_path(), "stale-reads", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=driver_environ({PASSWORD_ENV: password}),
                            start_new_session=True)
    result: dict[str, str] = {}

    def talk() -> None:
        result["out"], result["err"] = proc.communicate(json.dumps(job))

    talker = threading.Thread(target=talk, daemon=True)
    talker.start()
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while talker.is_alive():
            talker.join(WATCH_S)
            dead = next((s for s in cluster.servers if s.died()), None)
            if dead is not None and talker.is_alive():
                if hasattr(cluster, "release_sync_waiters"):
                    cluster.release_sync_waiters()
                raise StudyFailed(f"{dead.target.name} died during the stale-read study", dead.log_tail())
            if time.monotonic() > deadline:
                raise StudyFailed(f"dbperf-driver stale-reads hung past {RUN_TIMEOUT_S:.0f} s and was killed")
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        talker.join()
    return subprocess.CompletedProcess(proc.args, proc.returncode, result.get("out", ""), result.get("err", ""))


def probe(cluster: Any, e: Experiment, spec: ReplicationSpec, wait: bool, repeat: int = 1) -> StaleReadsRecord:
    """One run of the native probe (Cluster or PgCluster); a StudyFailed when a server dies or the driver fails."""
    record = StaleReadsRecord(type="replication_stale_reads", wait=wait, reads=spec.stale_reads, repeat=repeat,
                              background_threads=spec.background_threads, status="failed", started_at=time.time(),
                              background_rate=spec.background_rate, durability=cluster.durability,
                              workers=spec.workers[-1], mode=spec.modes[0] if spec.workers[-1] else "serial")
    job = {"engine": cluster.primary.engine, "primary_dsn": cluster.primary.dsn("sbtest"),
           "replica_dsns": [r.dsn("sbtest") for r in cluster.replicas], "probe_table": PROBE_TABLE,
           "reads": spec.stale_reads, "wait": wait, "wait_timeout_s": spec.wait_timeout_s,
           "background_threads": spec.background_threads, "background_rate": spec.background_rate,
           "table_size": e.table_size, "seed": e.seed}
    proc = _run_probe(cluster, job, cluster.primary.password or "")
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        reason = lines[-1].removeprefix("dbperf-driver: ") if lines else f"driver exited {proc.returncode}"
        dead = [s for s in cluster.servers if s.died()]
        if dead:
            raise StudyFailed(f"{dead[0].target.name} died during the stale-read study ({reason})", dead[0].log_tail())
        raise StudyFailed(f"dbperf-driver stale-reads: {reason}")
    try:
        record.result = decode(StaleReadsResult, proc.stdout)
    except RecordError as err:
        raise StudyFailed(f"dbperf-driver stale-reads printed an unexpected result: {err}") from None
    record.status = "ok"
    return record


def run_stale_study(cluster: Any, e: Experiment, spec: ReplicationSpec,
                    write: Callable[[StaleReadsRecord], None], step: Callable[[str], None],
                    prepare_probe: Callable[[Any, ReplicationSpec], None] = prepare,
                    wait_name: str | None = None) -> None:
    """Without the wait, then with it, `repeats` times (so that the stale fractions and the wait's percentiles have
    the range of their runs); each record written as it is produced. A server that dies ends the study with a failed
    record and its log tail (StudyFailed is raised again for the lab). `prepare_probe` is the engine's (this module's
    for the binlog kind, pg_stale.py's for PostgreSQL); `wait_name` names the wait in the progress line (the binlog
    cluster's dialect names its own)."""
    wait_name = wait_name or cluster.dialect.wait_name
    wait, repeat = False, 1
    try:
        step("stale reads: preparing the probe row")
        prepare_probe(cluster, spec)
        for repeat in range(1, spec.repeats + 1):
            for wait in (False, True):
                step(f"stale reads: {spec.stale_reads} probes {'with' if wait else 'without'} {wait_name} "
                     f"#{repeat}")
                write(probe(cluster, e, spec, wait, repeat))
    except StudyFailed as err:
        write(StaleReadsRecord(type="replication_stale_reads", wait=wait, reads=spec.stale_reads,
                               background_threads=spec.background_threads, status="failed", error=str(err),
                               server_log_tail=err.log_tail or None, started_at=time.time(), repeat=repeat))
        raise
