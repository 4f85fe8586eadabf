"""`dbperf layout --experiment`: the layout check of one target's library on one benchmark of an experiment, counted
as the lab runs it (lab.py), and with --fix the A/B of the layout the findings suggest (fix.py)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from dbperf.errors import UserError
from dbperf.layout.check import render, result_json, write_json
from dbperf.layout.dynamic import TraceBudget, TraceInterrupted
from dbperf.layout.fix import sqlite_fix
from dbperf.layout.lab import count_target, lab_target
from dbperf.layout.server_trace import traced_binary


def experiment_layout(binary: Path | None, experiment: Path, target: str, benchmark: str, line: int | None,
                      json_file: Path | None, fix: bool, mode: str, out: Console, err: Console,
                      budget: TraceBudget | None = None) -> None:
    exp, t = lab_target(experiment, target, err)
    if fix and t.is_server:
        raise UserError(f"target {target!r} is a server: --fix rebuilds SQLite's library with its read-mostly "
                        "objects moved; the server's findings are reported without it")
    library = binary or (traced_binary(t) if t.is_server else Path(t.library))
    try:
        static, counts, found, cell = count_target(exp, t, benchmark, library, line, mode, err, budget)
    except TraceInterrupted as interrupted:  # what was counted before the interrupt is reported; no --fix
        if interrupted.checked:
            static, counts, found, cell = interrupted.checked[0]
            render(static, counts, found, out)
            if json_file is not None:
                write_json(json_file, result_json(static, counts, found, {"cell": cell}))
        raise
    render(static, counts, found, out)
    data = result_json(static, counts, found, {"cell": cell})
    if fix:
        data["fix"] = sqlite_fix(experiment, exp, t, benchmark, found, static, line, mode, out, err, budget)
    if json_file is not None:
        write_json(json_file, data)
