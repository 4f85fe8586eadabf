"""`dbperf layout --experiment`: the layout check of one target's library (or MariaDB server) on one benchmark of an
experiment, counted as the lab runs it (lab.py), and with --fix the A/B of the layout the findings suggest (fix.py):
for a target the lab builds, SQLite from its source or MariaDB from Debian's."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from dbperf.layout.check import render, result_json, write_json
from dbperf.layout.dynamic import TraceBudget, TraceInterrupted
from dbperf.layout.fix import checked_file, refuse_unbuildable, target_fix
from dbperf.layout.lab import count_target, lab_target


def experiment_layout(binary: Path | None, experiment: Path, target: str, benchmark: str, line: int | None,
                      json_file: Path | None, fix: bool, mode: str, out: Console, err: Console,
                      budget: TraceBudget | None = None) -> None:
    exp, t = lab_target(experiment, target, err)
    if fix:  # before the count, which takes minutes for a server
        refuse_unbuildable(t)
    library = binary or checked_file(t)
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
        data["fix"] = target_fix(experiment, exp, t, benchmark, found, static, line, mode, out, err, budget,
                                 json_file)
    if json_file is not None:
        write_json(json_file, data)
