"""The matrix's entry for a cell whose target is driven by sysbench or pgbench (tooldrivers/run.py)."""

from __future__ import annotations

import time
from typing import Any

from dbperf.records import CellRecord
from dbperf.targets.lifecycle import TargetLifecycle
from dbperf.tooldrivers.run import ToolCell


def run_tool_cell(e: Any, cell: Any, data: TargetLifecycle, grace_s: float) -> CellRecord:
    """`cell` is a runner.cell_plan.CellPlan; the data is restored before write cells under the same rule as the
    lab's driver (`writes = "restore"`)."""
    if cell.benchmark.phase != "read" and e.writes == "restore":
        data.restore()
    started = time.time()
    tool = ToolCell(e, cell.target, data, grace_s)
    result, error, output_tail = tool.run(cell.benchmark, cell.threads, e.seed + cell.repeat)
    record = CellRecord(target=cell.target.name, benchmark=cell.benchmark.name, threads=cell.threads,
                        repeat=cell.repeat, status="failed", started_at=started,
                        wall_s=round(time.time() - started, 3), queries_per_event=cell.benchmark.queries_per_event
                        or 1, result=result, error=error, stderr_tail=output_tail if error else None,
                        tool=tool.tool, resources=tool.resources)
    if data.died():
        record.error = f"the server died during the cell ({error or 'the tool finished'})"
        record.server_log_tail = data.log_tail()
    elif result is not None and result.events == 0:
        record.error = "no event completed in the measured time"
    elif result is not None:
        record.status = "ok"
    return record
