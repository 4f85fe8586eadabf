"""`dbperf report` and `dbperf import`: a results directory's report in a view and a format."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import FORMAT_OPTION, err_console, fail, show
from dbperf.tooldrivers.importer import import_outputs
from dbperf.usecases.report import check_aggregate, check_format, report_view

VERBOSE_OPTION = typer.Option("--verbose", help="the run report on the terminal: every tier in its own column (wall "
                                                "clock, CPU time, simulated, predicted) and the full legend (JSON, "
                                                "CSV, HTML and Markdown always have them)")
FORCE_OPTION = typer.Option("--force", help="replace the -o file if it exists (a regular file; never one a results "
                                            "directory holds)")


def report(
    directory: Annotated[Path, typer.Argument(help="results directory of a run")],
    format: Annotated[str, FORMAT_OPTION] = "table",
    aggregate: Annotated[Optional[str], typer.Option(help="median or trimmed (default: the run's)")] = None,
    as_ladder: Annotated[bool, typer.Option("--ladder", help="report the targets as a tuning ladder")] = False,
    output: Annotated[Optional[str], typer.Option("-o", "--output", help="write the report (any format but "
                                                   "table) to this file, or DIR/report.EXT for a directory")]
    = None,
    force: Annotated[bool, FORCE_OPTION] = False,
    resources: Annotated[bool, typer.Option("--resources", help="I/O and engine counters per query, database "
                                            "sizes")] = False,
    intervals: Annotated[bool, typer.Option("--intervals", help="each cell's time series as sysbench's interval "
                                            "lines, and per-statement latencies")] = False,
    verbose: Annotated[bool, VERBOSE_OPTION] = False,
) -> None:
    """Report a results directory, complete or partial."""
    check_format(format)
    check_aggregate(aggregate)
    if resources + intervals + as_ladder > 1:
        fail("--resources, --intervals and --ladder are views of their own: give one at a time")
    view = "resources" if resources else "intervals" if intervals else "ladder" if as_ladder else "run"
    show(report_view(directory, view, aggregate, verbose), format, output, force)


def import_command(
    files: Annotated[list[Path], typer.Argument(help="saved sysbench or pgbench output, one run per file")],
    tool: Annotated[str, typer.Option("--tool", help="sysbench or pgbench")],
    out: Annotated[Path, typer.Option("--out", help="a new or empty results directory")],
    target: Annotated[Optional[str], typer.Option("--target", help="the target's name (default: the tool)")] = None,
    queries_per_transaction: Annotated[int, typer.Option(help="pgbench: SQL commands per transaction")] = 1,
    verbose: Annotated[bool, VERBOSE_OPTION] = False,
) -> None:
    """Read saved sysbench/pgbench output into a results directory (benchmark = file name up to its first dot)."""
    count = import_outputs(files, tool, out, target, queries_per_transaction)
    err_console.print(f"dbperf: imported {count} {tool} run(s) into {out}", highlight=False)
    show(report_view(out, verbose=verbose), "table")
