"""The experiment-file side of sysbench and pgbench targets: `driver` and `driver_options` of a [[target]], and
which benchmarks such a target can run (checked when the experiment is read, so that a run never starts with a cell
it cannot run)."""

from __future__ import annotations

from typing import Any

from dbperf.catalog.tool_commands import TOOL_ENGINES, check_options, check_runnable
from dbperf.errors import UserError


def tool_fields(raw: dict[str, Any], engine: str, twhere: str) -> dict[str, Any]:
    """Target fields `tool`, `tool_options` of a server target (the key table checked `driver`'s value)."""
    tool = raw.get("driver", "dbperf")
    if tool == "dbperf":
        if "driver_options" in raw:
            raise UserError(f"{twhere}: driver_options are for driver = \"sysbench\" or \"pgbench\"")
        return {}
    if engine not in TOOL_ENGINES[tool]:
        raise UserError(f"{twhere}: {tool} does not drive {engine} (it drives {', '.join(TOOL_ENGINES[tool])})")
    return {"tool": tool, "tool_options": check_options(raw.get("driver_options", []), f"{twhere}.driver_options")}


def check_tool_benchmarks(benchmarks: list[Any], targets: list[Any], tables: int, where: str) -> None:
    for w in benchmarks:
        script = not w.statements
        for t in targets:
            if t.tool:
                check_runnable(w, t.tool, tables, f"{where}.benchmarks (target {t.name!r})")
            elif script:
                raise UserError(f"{where}.benchmarks: {w.name!r} is a tool script ({w.source}); target {t.name!r} "
                                "runs the lab's driver (give it driver = \"sysbench\" or \"pgbench\")")
