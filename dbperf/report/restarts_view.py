"""A lab server that died and was started again between cells (`restarts` in meta.json, `server_restarted_before`
on the first cell after each restart): the report says so beside the matrix, as the cells from a restart on ran on
a cold buffer pool and are not like the ones before it."""

from __future__ import annotations

from dbperf.records import CellRecord
from dbperf.run_meta import RunMeta
from dbperf.stats.rqps_matrix import Matrix


def _first_cells(m: Matrix, target: str) -> list[CellRecord]:
    """The cells measured first after each restart of `target`'s server, in the order they ran."""
    records = [r for (t, _, _), c in m.cells.items() if t == target for r in (*c.runs, *c.failures)
               if r.server_restarted_before]
    return sorted(records, key=lambda r: r.started_at)


def restart_lines(m: Matrix, meta: RunMeta) -> list[str]:
    lines = []
    for t in meta.targets:
        if not t.restarts:
            continue
        cells = ", ".join(f"{r.benchmark} t={r.threads} #{r.repeat}" for r in _first_cells(m, t.name))
        times = "once" if t.restarts == 1 else f"{t.restarts} times"
        lines.append(f"restarts: target {t.name}: its server died and the lab started it again {times}"
                     + (f" (before {cells})" if cells else "")
                     + ": the cells from each restart on ran on a cold buffer pool (the server's caches emptied)")
    return lines
