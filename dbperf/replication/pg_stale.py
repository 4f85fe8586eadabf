"""The stale-read study on PostgreSQL streaming replication: a client writes a row on the primary and at once reads
it on a hot standby; without a wait, how often the read misses the write; with `synchronous_commit = remote_apply`
on the writing session (every standby listed in the primary's synchronous_standby_names, FIRST n), the commit
returns only once the standbys have replayed it, so that no read may be stale, and what that wait costs (the
commit's latency percentiles, against the commit under `local` without the wait), while background writers (under
`local`) keep the primary busy. The probe loop is dbperf-driver's (stale.rs and stale_pg.rs); this module prepares
the probe row and the standbys and runs stale_reads.py's study with it."""

from __future__ import annotations

import time
from collections.abc import Callable

from dbperf.experiment.model import Experiment
from dbperf.experiment.replication_section import ReplicationSpec
from dbperf.records import StaleReadsRecord
from dbperf.replication.pg_cluster import PgCluster
from dbperf.replication.replica_set import StudyFailed
from dbperf.replication.stale_reads import PROBE_TABLE, run_stale_study

SYNC_TIMEOUT_S = 60.0


def prepare(cluster: PgCluster, spec: ReplicationSpec) -> None:
    """The probe row on the primary, replayed by every standby; the standbys in the study's durability and mode,
    each streaming as a synchronous standby (remote_apply would otherwise not wait for it)."""
    cluster.set_durability(spec.stale_durability)
    cluster.set_mode(spec.modes[0])
    primary = cluster.primary
    primary.query(f"CREATE TABLE IF NOT EXISTS {PROBE_TABLE} (id INT PRIMARY KEY, v BIGINT NOT NULL)",
                  what="creating the probe table", database="sbtest")
    primary.query(f"INSERT INTO {PROBE_TABLE} VALUES (1, 0) ON CONFLICT (id) DO NOTHING", what="creating the probe row",
                  database="sbtest")
    cluster.all_caught_up()
    deadline = time.monotonic() + SYNC_TIMEOUT_S
    names = [r.role for r in cluster.replicas]
    while True:
        rows = primary.query("SELECT application_name, sync_state FROM pg_stat_replication "
                             "WHERE application_name = ANY(%s)", (names,), what="reading pg_stat_replication")
        states = {name: state for name, state in rows}
        if all(states.get(n) == "sync" for n in names):
            return
        dead = next((r for r in cluster.replicas if r.died()), None)
        if dead is not None:
            raise StudyFailed(f"{dead.target.name}: the standby died before the stale-read study", dead.log_tail())
        if time.monotonic() > deadline:
            raise StudyFailed(f"the standbys are not all synchronous within {SYNC_TIMEOUT_S:.0f} s "
                              f"(sync_state: {states or 'none streaming'})")
        time.sleep(0.1)


def run_pg_stale_study(cluster: PgCluster, e: Experiment, spec: ReplicationSpec,
                       write: Callable[[StaleReadsRecord], None], step: Callable[[str], None]) -> None:
    run_stale_study(cluster, e, spec, write, step, prepare_probe=prepare, wait_name="synchronous_commit = remote_apply")
