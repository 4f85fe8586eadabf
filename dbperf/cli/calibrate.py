"""`dbperf calibrate`: the host's cost model, measured, fitted, validated and stored (usecases/calibrate.py);
`--show` prints the current one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import YES_OPTION, out_console
from dbperf.experiment.durations import parse_duration
from dbperf.usecases.calibrate import calibration_lines, none_line, run_calibration, show_current
from dbperf.usecases.progress import say


def _print(lines: list[str]) -> None:
    for line in lines:
        out_console.print(line, markup=False, highlight=False, soft_wrap=True)


def calibrate(
    out: Annotated[Optional[Path], typer.Option("--out", help="the calibration run's results directory, new or "
                                                              "empty (default: under the cost models' directory, "
                                                              "runs/HOST/TIME)")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="5 builds × 8 benchmarks and a 10-minute budget instead of "
                                                        "9 × 16 and 30 minutes: fewer cells, a weaker "
                                                        "validation")] = False,
    budget: Annotated[Optional[str], typer.Option("--budget", help="the measured rounds' budget (default 30m; "
                                                                   "--quick: 10m)")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="go on with the calibration cut short in --out DIR (by "
                                                          "default the host's newest); a complete one is fitted "
                                                          "again")] = False,
    yes: Annotated[bool, YES_OPTION] = False,
    show: Annotated[bool, typer.Option("--show", help="print this host's current cost model and exit (1: it has "
                                                      "none)")] = False,
) -> None:
    """Calibrate this host's cost model: CPU per query of SQLite builds × in-process benchmarks against their
    simulated counters, fitted (ns per event) and validated by leaving one build out at a time."""
    if show:
        lines = show_current()
        if lines is None:
            say(f"dbperf: {none_line()}")
            raise typer.Exit(1)
        _print(lines)
        return
    budget_s = parse_duration(budget, "--budget", positive=True) if budget is not None else None
    end = run_calibration(out, quick, budget_s, resume, yes)
    if end.calibrated is not None:
        _print(calibration_lines(end.calibrated))
    if end.exit_code:
        raise typer.Exit(end.exit_code)
