"""The harness's post-write step ([Callaghan, mytools]): after the writes and before the reads that follow them,
each target's engine is brought to a settled state, then the lab waits. PostgreSQL: VACUUM ANALYZE and CHECKPOINT;
MariaDB (InnoDB): dirty pages flushed (innodb_max_dirty_pages_pct set to 0 until Innodb_buffer_pool_pages_dirty reads 0,
then set back); SQLite: PRAGMA wal_checkpoint(TRUNCATE). What ran, how long it took and the wait are recorded in
meta.json (`targets[].post_write`)."""

from __future__ import annotations

import time
from itertools import pairwise
from typing import Any

from dbperf.catalog.workload import Workload
from dbperf.engines.descriptor import FlushStep
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.servers.lifecycle import ServerTarget
from dbperf.servers.sql_query import client_available, query
from dbperf.targets.lifecycle import TargetLifecycle
from dbperf.targets.sqlite_data import SqliteData

FLUSH_TIMEOUT_S = 600.0


def steps_before(benchmarks: tuple[Workload, ...] | list[Workload]) -> set[str]:
    """Names of the benchmarks that are the first read after one or more writes: the post-write step runs before
    their first cell on each target."""
    return {b.name for prev, b in pairwise(benchmarks)
            if b.phase == "read" and prev.phase != "read"}


def run_post_write(e: Experiment, target: Target, data: TargetLifecycle, before: str) -> dict[str, Any]:
    """The step on one target, then the wait; the record for meta.json. A failure is a UserError naming the
    target (the run cannot honestly go on measuring "after the post-write step")."""
    started = time.monotonic()
    record: dict[str, Any] = {"before": before, "engine": target.engine}
    kind = target.descriptor
    if isinstance(data, SqliteData) and data.failed:
        record["skipped"] = "the target's tables were not loaded"  # its cells fail with the load's error
    elif kind.post_write_statements:
        statements = list(kind.post_write_statements)
        record["statements"] = statements
        data.execute(statements, f"post-write step ({', '.join(statements)})")
    elif kind.post_write_flush is not None:
        if not isinstance(data, ServerTarget):
            raise UserError(f"target {target.name!r}: the post-write flush needs a server to query")
        record.update(_flush(data, target, kind.post_write_flush))
    record["step_s"] = round(time.monotonic() - started, 3)
    time.sleep(e.post_write_wait_s)
    record["wait_s"] = e.post_write_wait_s
    return record


def _flush(data: ServerTarget, target: Target, step: FlushStep) -> dict[str, Any]:
    """Dirty pages flushed the harness's way: the dirty-page targets set to 0, the page cleaner left to write
    them, the settings put back (the target's own values, else the server's defaults)."""
    configured = {k.replace("-", "_"): v for k, v in target.config.items()}
    low = [f"SET GLOBAL {name} = {value}" for name, value in step.lowered.items()]
    back = [f"SET GLOBAL {name} = {configured.get(name, 'DEFAULT')}" for name in reversed(list(step.lowered))]
    data.execute(low, f"post-write step ({step.what})")
    left: int | None = None
    try:
        if client_available(target.engine):
            deadline = time.monotonic() + FLUSH_TIMEOUT_S
            while True:
                rows = query(data, step.wait_sql)
                left = int(rows[0][1]) if rows else None
                if not left or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
    finally:
        data.execute(back, f"post-write step (restoring the settings lowered for {step.what})")
    return {"statements": [*low, f"(until {step.counter} = 0)", *back], "dirty_pages_left": left}


class PostWriteSteps:
    """Which cells a post-write step precedes, each (benchmark, target) once; what the matrix calls per cell."""

    def __init__(self, e: Experiment) -> None:
        self.e = e
        self.before = steps_before(e.benchmarks) if e.post_write else set()
        self.done: set[tuple[str, str]] = set()

    def before_cell(self, benchmark: Workload, target: Target, data: TargetLifecycle) -> dict[str, Any] | None:
        key = (benchmark.name, target.name)
        if benchmark.name not in self.before or key in self.done:
            return None
        self.done.add(key)
        return run_post_write(self.e, target, data, benchmark.name)


def meta_fields(e: Experiment) -> dict[str, Any]:
    """What meta.json says of the harness settings."""
    fields: dict[str, Any] = {"writes": e.writes, "post_write": e.post_write,
                              "post_write_wait_s": e.post_write_wait_s}
    if e.writes == "cumulative":
        fields["data_restore"] = "never: writes accumulate across the run (writes = \"cumulative\")"
    return fields
