"""Running an experiment's `[replication]` section: the cluster started and loaded, the studies run in order, each
record written to results.jsonl the moment it is produced, and every server stopped on every exit path (errors,
Ctrl-C, TERM and HUP; the watchdog when the lab is killed hard). A study that fails (a replica died, replication
broke) is recorded with the error and the server's log tail; dead replicas are started again for the next study."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from dbperf import engines
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.records import ApplyRecord, StaleReadsRecord, to_builtins
from dbperf.replication.apply_rate import run_apply_study
from dbperf.replication.cluster import Cluster
from dbperf.replication.cross_engine import run_cross_engine_study
from dbperf.replication.fsync_rate import fdatasync_rate
from dbperf.replication.pg_apply import run_pg_apply_study
from dbperf.replication.pg_cluster import PgCluster
from dbperf.replication.pg_stale import run_pg_stale_study
from dbperf.replication.replica_set import StudyFailed
from dbperf.replication.stale_reads import run_stale_study
from dbperf.run_meta import ReplicationMeta, RunMeta, TargetMeta, meta_part, updated
from dbperf.runner.matrix import RunOutcome, started_meta
from dbperf.servers.runtime import RuntimeDir
from dbperf.servers.watchdog import Watchdog
from dbperf.storage.results import ResultsWriter, close_run, recorded_status

APPLY_NOTE = ("apply: the replica's SQL thread stopped while the primary wrote (its I/O thread fetched the "
              "events), then START SLAVE SQL_THREAD + MASTER_GTID_WAIT(primary's last GTID) timed on one connection; "
              "trx/s = GTIDs the primary wrote / that time. The primary commits non-durably "
              "(innodb_flush_log_at_trx_commit = 2, sync_binlog = 0) so that it generates the load fast.")
PG_APPLY_NOTE = ("apply: replay paused on the standbys (pg_wal_replay_pause; the walreceiver kept receiving) while "
                 "the primary wrote, then committed a marker row; once the measured standby had received all the "
                 "WAL, pg_wal_replay_resume(), then the time from replay seen moving (before PG 14 the pause loop "
                 "notices a resume only within 1 s: that delay is recorded apart, resume_delay_s) until the marker "
                 "row on the standby (polled ~1 ms) showed the new value, on one connection; trx/s = xids the "
                 "primary assigned / that time. The primary commits with synchronous_commit = off (unless the "
                 "durability says otherwise) so that it generates the load fast. workers = 1 is not a setting: "
                 "PostgreSQL replays physical WAL in one process (the startup process) and has no parallel-apply "
                 "knob for it (not applicable); the mode is recovery_prefetch. The polling resolves about a "
                 "millisecond: a replay much shorter than 0.1 s carries a few percent of timing error.")
# Which studies each kind of replication runs, by name (the engine's descriptor says its kind; the cross-engine study
# is MariaDB's binlog replicas' only: experiment/replication_section.py refuses it otherwise).
STUDIES: dict[str, dict[str, Callable[..., None]]] = {
    "binlog": {"apply": run_apply_study, "stale-reads": run_stale_study, "cross-engine": run_cross_engine_study},
    "streaming": {"apply": run_pg_apply_study, "stale-reads": run_pg_stale_study},
}



def _meta(e: Experiment, builds: dict[str, dict[str, Any]]) -> RunMeta:
    spec = e.replication
    assert spec is not None
    (target,) = e.targets
    return started_meta(
        e,
        base=target.name,
        targets=[meta_part(TargetMeta, {**asdict(target),
                                        **({"build": builds[target.name]} if target.name in builds else {})})],
        replication=meta_part(ReplicationMeta, {
            **asdict(spec), "engine": target.engine,
            "apply_method": PG_APPLY_NOTE if engines.streaming_replication(target.engine) else APPLY_NOTE,
            "cpus": _cpus()}),
    )


def check_rocksdb(target: Target) -> None:
    """MyRocks is a plugin of its own Debian package; where the server's plugins are is its package's layout."""
    binaries = Path(target.binaries or "/usr/sbin/mariadbd")
    candidates = [Path("/usr/lib/mysql/plugin"), binaries.parent.parent / "lib" / "plugin"]
    if not any((d / "ha_rocksdb.so").is_file() for d in candidates):
        raise UserError(f"the cross-engine study needs MyRocks (ha_rocksdb.so not found in "
                        f"{' or '.join(str(d) for d in candidates)}; apt install mariadb-plugin-rocksdb)")


def _cpus() -> int:
    return len(os.sched_getaffinity(0))


def run_replication(e: Experiment, out: Path, console: Console, keep_data: bool = False,
                    builds: dict[str, dict[str, Any]] | None = None) -> RunOutcome:
    """Runs the replication studies into `out`; counts of ok and failed records in the outcome (cells_*)."""
    spec = e.replication
    assert spec is not None
    out = out.absolute()
    (target,) = e.targets
    runtime = RuntimeDir()
    try:
        rocksdb = "cross-engine" in spec.studies
        if rocksdb:
            check_rocksdb(target)
        cluster: Cluster | PgCluster
        if engines.streaming_replication(target.engine):
            cluster = PgCluster(runtime, out / "logs", target, e, spec.replicas, spec.durability[0], spec.modes[0])
        else:
            cluster = Cluster(runtime, out / "logs", target, e, spec.replicas, spec.durability[0], rocksdb=rocksdb)
        writer = ResultsWriter(out)
    except BaseException:
        runtime.remove()
        raise
    if not keep_data:
        Watchdog.get().watch_dir(runtime.path)
    outcome = RunOutcome(out, runtime_dir=runtime.path)
    meta = _meta(e, builds or {})
    meta.runtime_dir = str(runtime.path)
    replication = meta.replication
    assert replication is not None

    def write(record: ApplyRecord | StaleReadsRecord) -> None:
        writer.append(record)
        if record.status == "ok":
            outcome.cells_ok += 1
        else:
            outcome.cells_failed += 1

    try:
        with recorded_status(meta, out):
            writer.write_meta(meta, e.text)
            with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                          transient=True) as progress:
                task = progress.add_task("fdatasync rate of the data directory's device")

                def step(text: str) -> None:
                    progress.update(task, description=text)

                replication.fdatasync_per_s = round(fdatasync_rate(runtime.path), 1)
                kind = "standby" if engines.streaming_replication(target.engine) else "replica"
                step(f"starting the primary and {spec.replicas} {kind}(s)")
                try:
                    cluster.start()
                except StudyFailed as err:
                    raise UserError(f"setting up replication: {err}") from None
                step(f"loading {e.tables}×{e.table_size:,} rows on the primary (replicated)")
                loaded = cluster.primary.load()
                try:
                    cluster.all_caught_up()
                except StudyFailed as err:
                    raise UserError(f"replicating the loaded tables: {err}") from None
                meta.targets[0] = updated(meta.targets[0], load=to_builtins(loaded),
                                          engine_version=loaded.engine_version)
                replication.servers = cluster.describe()
                writer.update_meta(meta)
                for name in spec.studies:
                    revived = cluster.revive()
                    if revived:
                        console.print(f"dbperf: started {', '.join(revived)} again after it died", markup=False,
                                      highlight=False)
                        replication.servers = cluster.describe()
                        writer.update_meta(meta)
                    started = time.time()
                    try:
                        STUDIES[str(engines.engine(target.engine).replication)][name](cluster, e, spec, write, step)
                    except StudyFailed as err:
                        console.print(f"dbperf: the {name} study failed: {err}", markup=False, highlight=False)
                        if cluster.primary.died():
                            break
                    replication.study_seconds[name] = round(time.time() - started, 1)
                    writer.update_meta(meta)
    finally:
        cluster.stop()
        if not keep_data:
            runtime.remove()
            Watchdog.get().forget_dir(runtime.path)
        close_run(meta, writer)
    return outcome
