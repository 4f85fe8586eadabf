"""Running an experiment's `[replication]` section: the cluster started and loaded, the studies run in order, each
record written to results.jsonl the moment it is produced, and every server stopped on every exit path (errors,
Ctrl-C, TERM and HUP; the watchdog when the lab is killed hard). A study that fails (a replica died, replication
broke) is recorded with the error and the server's log tail; dead replicas are started again for the next study.
The run's scaffolding (runtime folder, watchdog, results writer, status, the finish) is runner/lab_run.py's LabRun."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

from dbperf import engines
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.records import ApplyRecord, StaleReadsRecord, to_builtins
from dbperf.replication import binlog, streaming
from dbperf.replication.fsync_rate import fdatasync_rate
from dbperf.replication.kind import ReplicationKind
from dbperf.replication.replica_set import ReplicaSet, StudyFailed
from dbperf.run_meta import ReplicationMeta, RunMeta, TargetMeta, meta_part, updated
from dbperf.runner.lab_run import LabRun, RunOutcome
from dbperf.runner.matrix import started_meta

# The kinds of replication the lab runs, by the name an engine's descriptor gives (Engine.replication).
KINDS: dict[str, ReplicationKind] = {k.name: k for k in (binlog.KIND, streaming.KIND)}


def kind_of(target: Target) -> ReplicationKind:
    """The kind of replication of the target's engine (the section's check refused an engine without one)."""
    return KINDS[str(engines.replication_of(target.engine))]


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
            **asdict(spec), "engine": target.engine, "apply_method": kind_of(target).apply_method, "cpus": _cpus()}),
    )


def _cpus() -> int:
    return len(os.sched_getaffinity(0))


def _start(cluster: ReplicaSet[Any], e: Experiment, lab: LabRun, step: Callable[[str], None]) -> None:
    """The cluster started and the tables loaded on the primary and replicated; what was loaded and the servers in
    meta.json."""
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
    meta = lab.meta
    assert meta is not None and meta.replication is not None
    meta.targets[0] = updated(meta.targets[0], load=to_builtins(loaded), engine_version=loaded.engine_version)
    meta.replication.servers = cluster.describe()
    lab.save()


def _run_studies(kind: ReplicationKind, cluster: ReplicaSet[Any], e: Experiment, lab: LabRun,
                 step: Callable[[str], None]) -> None:
    """The section's studies in order, replicas that died started again before each; a failed study is said and
    the next one runs, unless the primary died."""
    spec = e.replication
    assert spec is not None and lab.meta is not None
    replication = lab.meta.replication
    assert replication is not None

    def write(record: ApplyRecord | StaleReadsRecord) -> None:
        lab.keep(record, ok=record.status == "ok")

    for name in spec.studies:
        revived = cluster.revive()
        if revived:
            lab.console.print(f"dbperf: started {', '.join(revived)} again after it died", markup=False,
                              highlight=False)
            replication.servers = cluster.describe()
            lab.save()
        started = time.time()
        try:
            kind.studies[name](cluster, e, spec, write, step)
        except StudyFailed as err:
            lab.console.print(f"dbperf: the {name} study failed: {err}", markup=False, highlight=False)
            if cluster.primary.died():
                break
        replication.study_seconds[name] = round(time.time() - started, 1)
        lab.save()


def run_replication(e: Experiment, out: Path, console: Console, keep_data: bool = False,
                    builds: dict[str, dict[str, Any]] | None = None) -> RunOutcome:
    """Runs the replication studies into `out`; counts of ok and failed records in the outcome (cells_*). The run's
    scaffolding (runtime folder, watchdog, results writer, status, the finish on every exit path) is a LabRun's."""
    spec = e.replication
    assert spec is not None
    (target,) = e.targets
    kind = kind_of(target)
    with LabRun(out, console, keep_data=keep_data, servers=True) as lab:
        assert lab.runtime is not None
        cluster = kind.cluster(lab.runtime, lab.out / "logs", target, e, spec)
        lab.claim()
        lab.own(cluster)
        meta = _meta(e, builds or {})
        assert meta.replication is not None
        progress = lab.start(meta, e.text, columns=(SpinnerColumn(), TextColumn("{task.description}"),
                                                    TimeElapsedColumn()))
        task = progress.add_task("fdatasync rate of the data directory's device")

        def step(text: str) -> None:
            progress.update(task, description=text)

        # The device's fdatasync rate bounds durable commits: measured `repeats` times, its median and runs kept.
        runs = [round(fdatasync_rate(lab.runtime.path), 1) for _ in range(spec.repeats)]
        meta.replication.fdatasync_runs = runs
        meta.replication.fdatasync_per_s = statistics.median(runs)
        step(f"starting the primary and {spec.replicas} {kind.replica}(s)")
        _start(cluster, e, lab, step)
        _run_studies(kind, cluster, e, lab, step)
    return lab.outcome
