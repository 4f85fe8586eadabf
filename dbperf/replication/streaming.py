"""PostgreSQL's streaming standbys as a kind of replication (kind.py): a primary and N hot standbys replaying its
WAL (pg_cluster.py), the apply study with replay paused and resumed and the lag over time (pg_apply.py), stale reads
against synchronous_commit = remote_apply (pg_stale.py). Its section's rules: dbperf/experiment/streaming_rules.py."""

from __future__ import annotations

from pathlib import Path

from dbperf.experiment import streaming_rules
from dbperf.experiment.model import Experiment, Target
from dbperf.experiment.replication_section import ReplicationSpec
from dbperf.replication.kind import ReplicationKind
from dbperf.replication.pg_apply import run_pg_apply_study
from dbperf.replication.pg_cluster import PgCluster
from dbperf.replication.pg_stale import run_pg_stale_study
from dbperf.servers.runtime import RuntimeDir

APPLY_NOTE = ("apply: replay paused on the standbys (pg_wal_replay_pause; the walreceiver kept receiving) while "
              "the primary wrote, then committed a marker row; once the measured standby had received all the "
              "WAL, pg_wal_replay_resume(), then the time from replay seen moving (before PG 14 the pause loop "
              "notices a resume only within 1 s: that delay is recorded apart, resume_delay_s) until the marker "
              "row on the standby (polled ~1 ms) showed the new value, on one connection; trx/s = xids the "
              "primary assigned / that time. The primary commits with synchronous_commit = off (unless the "
              "durability says otherwise) so that it generates the load fast. workers = 1 is not a setting: "
              "PostgreSQL replays physical WAL in one process (the startup process) and has no parallel-apply "
              "knob for it (not applicable); the mode is recovery_prefetch. The polling resolves about a "
              "millisecond: a replay much shorter than 0.1 s carries a few percent of timing error.")


def cluster(runtime: RuntimeDir, logs: Path, target: Target, e: Experiment, spec: ReplicationSpec) -> PgCluster:
    return PgCluster(runtime, logs, target, e, spec.replicas, spec.durability[0], spec.modes[0])


KIND = ReplicationKind(
    name=streaming_rules.RULES.name, rules=streaming_rules.RULES, cluster=cluster,
    studies={"apply": run_pg_apply_study, "stale-reads": run_pg_stale_study},
    apply_method=APPLY_NOTE, replica="standby")
