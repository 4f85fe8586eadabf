"""A kind of replication the lab runs (sysbench's drv_ops_t, for replication): one object per kind, asked, never
branched on. It holds its `[replication]` section's rules (dbperf/experiment/*_rules.py), the cluster it starts,
its studies by name, what the apply study measures (written into meta.json, shown by the report) and what its
replicas are called. One module per kind: binlog.py (MariaDB's binlog replicas), streaming.py (PostgreSQL's hot
standbys); lab.KINDS lists them by the name an engine's descriptor gives (`Engine.replication`). The report's side
of a kind (its tables, notes and charts) is dbperf/report/binlog_view.py and streaming_view.py, by the same name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbperf.experiment.model import Experiment, Target
from dbperf.experiment.replication_rules import SectionRules
from dbperf.experiment.replication_section import ReplicationSpec
from dbperf.replication.replica_set import ReplicaSet
from dbperf.servers.runtime import RuntimeDir

# A study: run(cluster, experiment, spec, write(record), step(progress text)); a StudyFailed stops it.
Study = Callable[..., None]


@dataclass(frozen=True)
class ReplicationKind:
    name: str  # as engines' descriptors give it (Engine.replication)
    rules: SectionRules  # what its [replication] section may say, and its defaults
    # The cluster of the run (not started): its runtime folder, the folder for the servers' logs, the target, the
    # experiment and its [replication] section.
    cluster: Callable[[RuntimeDir, Path, Target, Experiment, ReplicationSpec], ReplicaSet[Any]]
    studies: dict[str, Study]  # by name, the section's `studies`
    apply_method: str  # how the apply study measures: meta.json's replication.apply_method, a note of the report
    replica: str  # what a replica is called in the progress line ("replica", "standby")
