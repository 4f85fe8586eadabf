"""`dbperf calibrate`: the host's cost model, measured, fitted, validated and stored (usecases/calibrate.py);
`--show` prints the current one (report/calibration_view.py, through the format registry)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import FORMAT_OPTION, YES_OPTION, show
from dbperf.experiment.durations import parse_duration
from dbperf.report import formats
from dbperf.report.calibration_view import calibration_view, model_view
from dbperf.usecases.calibrate import none_line, run_calibration, show_current
from dbperf.usecases.progress import say


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
    show_model: Annotated[bool, typer.Option("--show", help="print this host's current cost model and exit (1: it "
                                                            "has none)")] = False,
    format: Annotated[str, FORMAT_OPTION] = "table",
) -> None:
    """Calibrate this host's cost model: CPU per query of SQLite builds × in-process benchmarks against their
    simulated counters, fitted (ns per event) and validated by leaving one build out at a time."""
    formats.format_named(format)  # before an hour of measuring, not after
    if show_model:
        current = show_current()
        if current is None:
            say(f"dbperf: {none_line()}")
            raise typer.Exit(1)
        show(model_view(current.model, current.stored, current.versions), format)
        return
    budget_s = parse_duration(budget, "--budget", positive=True) if budget is not None else None
    end = run_calibration(out, quick, budget_s, resume, yes)
    done = end.calibrated
    if done is not None:
        show(calibration_view(done.calibration, done.model, done.stored, done.version), format)
    if end.exit_code:
        raise typer.Exit(end.exit_code)
