"""`dbperf run` and `dbperf ladder`: run an experiment to its end (usecases/run.py), then its report."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import OUT_OPTION, YES_OPTION, show
from dbperf.cli.report import VERBOSE_OPTION
from dbperf.errors import UserError
from dbperf.experiment.durations import parse_duration
from dbperf.usecases.dry_run import DryRun
from dbperf.usecases.dry_run import dry_run as plan_run
from dbperf.usecases.report import check_aggregate, report_view
from dbperf.usecases.run import RunEnd, run_experiment


def report_after_run(end: RunEnd, view: str = "run", aggregate: str | None = None,
                     verbose: bool = False) -> None:
    """The (partial) report of a run that ended, then the run's exit status; a terminal that went away (SIGHUP)
    does not turn into a traceback. `verbose`: every tier's column and the full legend."""
    report_when_written(end, lambda d: show(report_view(d, view, aggregate, verbose), "table"))


def report_when_written(end: RunEnd, report: Callable[[Path], None]) -> None:
    if (end.directory / "meta.json").is_file():
        with contextlib.suppress(OSError):
            report(end.directory)
    if end.exit_code:
        raise typer.Exit(end.exit_code)


def show_dry_run(experiment: Path, plan: DryRun) -> None:
    """The plan and each check on stdout; a check that would stop the run is the one error line (exit 2)."""
    for line in plan.lines:
        typer.echo(line)
    typer.echo("checks:")
    for check in plan.checks:
        typer.echo(f"  {'FAILS' if check.problem else 'ok':5}  {check.line()}")
    problems = plan.problems
    if problems:
        more = f" (and {len(problems) - 1} more, listed above)" if len(problems) > 1 else ""
        raise UserError(f"{experiment}: the run would stop: {problems[0].line()}{more}")


def run(
    experiment: Annotated[Path, typer.Argument(help="experiment file (TOML)")],
    out: Annotated[Optional[Path], OUT_OPTION] = None,
    aggregate: Annotated[Optional[str], typer.Option(help="median (default) or trimmed")] = None,
    keep_data: Annotated[bool, typer.Option(help="keep the loaded databases (SQLite: DIR/.data; servers: the "
                                                   "runtime directory named in meta.json)")] = False,
    profile: Annotated[bool, typer.Option("--profile", help="also measure counters per (target, benchmark)")] = False,
    yes: Annotated[bool, YES_OPTION] = False,
    aa: Annotated[bool, typer.Option("--aa", help="also run the base against itself: how many A/A cells are called "
                                                  "changed")] = False,
    simulated: Annotated[bool, typer.Option("--simulated", help="also measure simulated instructions and estimated "
                                                                "cycles per query (cachegrind), as `simulated = "
                                                                "true`")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="go on with the run cut short in --out DIR: the cells it "
                                                          "measured are kept, the rest are run (same experiment "
                                                          "file and options)")] = False,
    extend: Annotated[Optional[str], typer.Option("--extend", help="give the automatic run in --out DIR (complete "
                                                                   "or cut short) this much more budget (e.g. 1h) "
                                                                   "for the cells its budget left undecided")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="check the experiment, its targets and the tools the "
                                                            "run needs, print the plan (cells, rounds, budget, "
                                                            "estimate, disk) and exit: nothing is built, measured "
                                                            "or written")] = False,
    verbose: Annotated[bool, VERBOSE_OPTION] = False,
) -> None:
    """Run an experiment's matrix and print the rQPS table."""
    check_aggregate(aggregate)
    extend_s = parse_duration(extend, "--extend", positive=True) if extend else 0.0
    if dry_run:
        show_dry_run(experiment, plan_run(experiment, out, profile, yes, aa, simulated, resume, extend_s))
        return
    end = run_experiment(experiment, out, keep_data, profile, yes, aa, simulated, resume=resume, extend_s=extend_s)
    report_after_run(end, "run", aggregate, verbose)


def ladder(
    experiment: Annotated[Path, typer.Argument(help="experiment file: its targets are cumulative tuning steps")],
    out: Annotated[Optional[Path], OUT_OPTION] = None,
    aggregate: Annotated[Optional[str], typer.Option(help="median (default) or trimmed")] = None,
    yes: Annotated[bool, YES_OPTION] = False,
) -> None:
    """Run the targets as a tuning ladder and report each step's gain over the previous step and the base."""
    check_aggregate(aggregate)
    end = run_experiment(experiment, out, keep_data=False, yes=yes)
    report_after_run(end, "ladder", aggregate)
