"""`dbperf profile`, `dbperf diff` and `dbperf check`: counters per query (usecases/explain.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from dbperf.cli.common import err_console, fail, out_console
from dbperf.output_file import output_path, write_file
from dbperf.records import to_builtins
from dbperf.report.profile_view import render_diff, render_profile
from dbperf.usecases.explain import diff_targets, instruction_gate, profile_one

QUERIES_OPTION = typer.Option(help="queries in the profiled phase")
MODE_OPTION = typer.Option(help="auto, simulated or hardware")


def profile(
    experiment: Annotated[Path, typer.Argument(help="experiment file")],
    target: Annotated[str, typer.Option(help="target name")],
    benchmark: Annotated[str, typer.Option(help="benchmark name or workload file")],
    queries: Annotated[int, QUERIES_OPTION] = 20_000,
    mode: Annotated[str, MODE_OPTION] = "auto",
    json_out: Annotated[Optional[str], typer.Option("--json", help="also write the profile as JSON here")] = None,
    force: Annotated[bool, typer.Option("--force", help="replace the --json file if it exists")] = False,
) -> None:
    """Counters per query and the top functions of one target on one benchmark."""
    if json_out is not None:  # refused before the profile is measured, not after
        output_path(json_out, force, "profile.json", "--json")
    p = profile_one(experiment, target, benchmark, queries, mode)
    render_profile(p, out_console)
    if json_out:
        write_file(json_out, json.dumps(to_builtins(p), indent=2) + "\n", force, "profile.json", "--json")


def diff(
    experiment: Annotated[Path, typer.Argument(help="experiment file")],
    a: Annotated[str, typer.Argument(help="target A (before)")],
    b: Annotated[str, typer.Argument(help="target B (after)")],
    benchmark: Annotated[str, typer.Option(help="benchmark name or workload file")],
    queries: Annotated[int, QUERIES_OPTION] = 20_000,
    mode: Annotated[str, MODE_OPTION] = "auto",
    top: Annotated[int, typer.Option(help="functions to show")] = 25,
) -> None:
    """Per-function cost per query of B minus A on one benchmark, largest changes first."""
    d = diff_targets(experiment, a, b, benchmark, queries, mode)
    render_diff(a, b, d.metric, d.rows, d.total_a, d.total_b, d.mode, out_console, top)


def check(
    experiment: Annotated[Path, typer.Argument(help="experiment file: every target against the base")],
    instructions: Annotated[bool, typer.Option("--instructions", help="gate on simulated instructions per query")]
    = False,
    max_regression: Annotated[str, typer.Option(help="allowed growth over the base, e.g. 1%")] = "1%",
    queries: Annotated[int, QUERIES_OPTION] = 20_000,
) -> None:
    """Exit 1 when a target's simulated instructions per query exceed the base's by more than the threshold."""
    if not instructions:
        fail("check: say what to gate on (--instructions)")
    gate = instruction_gate(experiment, max_regression, queries)
    table = Table(show_edge=False, pad_edge=False,
                  title=f"simulated instructions per query (cachegrind), threshold +{gate.threshold:.2%}")
    for title in ("benchmark", "target", "instructions/query", f"vs {gate.base}", "verdict"):
        table.add_column(title, justify="left" if title in ("benchmark", "target", "verdict") else "right")
    for row in gate.rows:
        if row.change is None:
            table.add_row(row.benchmark, row.target, f"{row.instructions:,.1f}", "base", "")
        else:
            table.add_row(row.benchmark, row.target, f"{row.instructions:,.1f}", f"{row.change:+.3%}",
                          "[red]REGRESSION[/red]" if row.regression else "ok")
    out_console.print(table)
    if gate.failures:
        err_console.print(f"dbperf: check failed: {'; '.join(gate.failures)}", highlight=False)
        raise typer.Exit(1)
