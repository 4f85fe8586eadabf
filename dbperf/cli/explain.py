"""`dbperf profile`, `dbperf diff` and `dbperf check`: counters per query (usecases/explain.py); `dbperf explain`:
why a run's tiers disagree (usecases/explain_run.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import FORCE_OPTION, FORMAT_OPTION, OUTPUT_OPTION, check_output, err_console, fail, show
from dbperf.output_file import output_path, write_file
from dbperf.report import formats
from dbperf.report.explain_view import TOP
from dbperf.report.profile_view import diff_view, gate_view, profile_view
from dbperf.usecases.explain import diff_targets, instruction_gate, profile_one
from dbperf.usecases.explain_run import explain_directory

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
    view = profile_view(profile_one(experiment, target, benchmark, queries, mode))
    show(view, "table")
    if json_out:
        write_file(json_out, formats.render(view, "json"), force, "profile.json", "--json")


def diff(
    experiment: Annotated[Path, typer.Argument(help="experiment file")],
    a: Annotated[str, typer.Argument(help="target A (before)")],
    b: Annotated[str, typer.Argument(help="target B (after)")],
    benchmark: Annotated[str, typer.Option(help="benchmark name or workload file")],
    queries: Annotated[int, QUERIES_OPTION] = 20_000,
    mode: Annotated[str, MODE_OPTION] = "auto",
    top: Annotated[int, typer.Option(help="functions to show")] = 25,
    format: Annotated[str, FORMAT_OPTION] = "table",
    output: Annotated[Optional[str], OUTPUT_OPTION] = None,
    force: Annotated[bool, FORCE_OPTION] = False,
) -> None:
    """Per-function cost per query of B minus A on one benchmark, largest changes first."""
    check_output(format, output, force, "diff")  # before the profiles are measured, not after
    d = diff_targets(experiment, a, b, benchmark, queries, mode)
    show(diff_view(a, b, d.metric, d.rows, d.total_a, d.total_b, d.mode, top), format, output, force)


def check(
    experiment: Annotated[Path, typer.Argument(help="experiment file: every target against the base")],
    instructions: Annotated[bool, typer.Option("--instructions", help="gate on simulated instructions per query")]
    = False,
    max_regression: Annotated[str, typer.Option(help="allowed growth over the base, e.g. 1%")] = "1%",
    queries: Annotated[int, QUERIES_OPTION] = 20_000,
    format: Annotated[str, FORMAT_OPTION] = "table",
    output: Annotated[Optional[str], OUTPUT_OPTION] = None,
    force: Annotated[bool, FORCE_OPTION] = False,
) -> None:
    """Exit 1 when a target's simulated instructions per query exceed the base's by more than the threshold."""
    if not instructions:
        fail("check: say what to gate on (--instructions)")
    check_output(format, output, force, "check")
    gate = instruction_gate(experiment, max_regression, queries)
    show(gate_view(gate.threshold, gate.base, [(r.benchmark, r.target, r.instructions, r.change, r.regression)
                                               for r in gate.rows]), format, output, force)
    if gate.failures:
        err_console.print(f"dbperf: check failed: {'; '.join(gate.failures)}", highlight=False)
        raise typer.Exit(1)


def explain(
    directory: Annotated[Path, typer.Argument(help="a run's results directory (with the simulated tier)")],
    cell: Annotated[Optional[str], typer.Option("--cell", help="TARGET:BENCHMARK: explain this cell, whether its "
                                                "tiers disagree or not")] = None,
    top: Annotated[int, typer.Option(help="leads shown per cell (explain.json keeps every one)")] = TOP,
    format: Annotated[str, FORMAT_OPTION] = "table",
    output: Annotated[Optional[str], OUTPUT_OPTION] = None,
    force: Annotated[bool, FORCE_OPTION] = False,
) -> None:
    """Why a run's tiers disagree: per disagreeing cell, the per-function diff of every simulated counter of the base
    and that target, and its leads (also written to DIR/explain.json)."""
    check_output(format, output, force, "explain")  # before the profiles are measured, not after
    show(explain_directory(directory, cell, top), format, output, force)
