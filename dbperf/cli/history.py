"""The history commands: `dbperf history add/list/show`, `dbperf series` and `dbperf regressions`
(usecases/history.py; the store and the series are dbperf/history/'s)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import FORCE_OPTION, FORMAT_OPTION, OUTPUT_OPTION, out_console, show
from dbperf.history.changepoints import PVALUE
from dbperf.metrics import named
from dbperf.report.history_view import runs_view, stored_run_view
from dbperf.report.series_view import regressions_view, series_view
from dbperf.usecases.history import add_runs, list_runs, query_series, stored_run
from dbperf.usecases.report import check_format

PVALUE_OPTION = typer.Option(help="E-divisive's permutation-test threshold for a change point (0.05 finds more "
                                  "steps in short series, and more false ones)")
ENGINE_OPTION = typer.Option(help="engine (sqlite, postgres, mariadb)")
BENCHMARK_OPTION = typer.Option(help="benchmarks (default: all stored)")
THREADS_OPTION = typer.Option(help="thread count")
HOST_OPTION = typer.Option(help="host name")
BUILD_OPTION = typer.Option(help="build, as `history show` prints it")
CONFIG_OPTION = typer.Option(help="config, as `history show` prints it")
TARGET_OPTION = typer.Option(help="target name")
JSON_OPTION = typer.Option("--json", help="as JSON")
METRIC_OPTION = typer.Option(help="wall: the stored runs' QPS (rQPS, Mann-Whitney of the repeats); simulated: their "
                                  "simulated instructions per query (runs with `simulated = true`), deterministic")

history_app = typer.Typer(no_args_is_help=True, help="The results store: every run, keyed by engine, version, build, "
                                                     "config, host, benchmark and threads.")


@history_app.command("add")
def history_add(directories: Annotated[list[Path], typer.Argument(help="results directories")]) -> None:
    """Record existing results directories (runs from before the store, or from another machine)."""
    for d, run_id, new in add_runs(directories):
        out_console.print(f"{d}: {'recorded as' if new else 'already recorded as'} run {run_id}", markup=False,
                          highlight=False)


@history_app.command("list")
def history_list(as_json: Annotated[bool, JSON_OPTION] = False) -> None:
    """The runs in the store."""
    show(runs_view(*list_runs()), "json" if as_json else "table")


@history_app.command("show")
def history_show(
    run: Annotated[Optional[int], typer.Argument(help="run id (default: the latest)")] = None,
    as_json: Annotated[bool, JSON_OPTION] = False,
) -> None:
    """One run's stored results: per target and benchmark, its key and figures."""
    stored = stored_run(run)
    show(stored_run_view(stored.id, stored.meta, stored.results), "json" if as_json else "table")


def series(
    engine: Annotated[Optional[str], ENGINE_OPTION] = None,
    benchmark: Annotated[Optional[list[str]], BENCHMARK_OPTION] = None,
    threads: Annotated[Optional[int], THREADS_OPTION] = None,
    host: Annotated[Optional[str], HOST_OPTION] = None,
    build: Annotated[Optional[str], BUILD_OPTION] = None,
    config: Annotated[Optional[str], CONFIG_OPTION] = None,
    target: Annotated[Optional[str], TARGET_OPTION] = None,
    by: Annotated[str, typer.Option(help="version: one column per engine version; run: per run and target")]
    = "version",
    format: Annotated[str, FORMAT_OPTION] = "table",
    output: Annotated[Optional[str], OUTPUT_OPTION] = None,
    force: Annotated[bool, FORCE_OPTION] = False,
    pvalue: Annotated[float, PVALUE_OPTION] = PVALUE,
    metric: Annotated[str, METRIC_OPTION] = "wall",
) -> None:
    """A version (or run) series from the history: rows benchmarks, columns versions, rQPS (or simulated work per
    query) against the first, verdicts, change points."""
    check_format(format)
    s = query_series(engine, benchmark, threads, host, build, config, target, by, pvalue,
                     named(metric, lambda m: m.series))
    show(series_view(s), format, output, force)


def regressions(
    engine: Annotated[Optional[str], ENGINE_OPTION] = None,
    benchmark: Annotated[Optional[list[str]], BENCHMARK_OPTION] = None,
    threads: Annotated[Optional[int], THREADS_OPTION] = None,
    host: Annotated[Optional[str], HOST_OPTION] = None,
    build: Annotated[Optional[str], BUILD_OPTION] = None,
    config: Annotated[Optional[str], CONFIG_OPTION] = None,
    target: Annotated[Optional[str], TARGET_OPTION] = None,
    by: Annotated[str, typer.Option(help="version or run")] = "version",
    show_all: Annotated[bool, typer.Option("--all", help="also steps up (improvements)")] = False,
    format: Annotated[str, FORMAT_OPTION] = "table",
    output: Annotated[Optional[str], OUTPUT_OPTION] = None,
    force: Annotated[bool, FORCE_OPTION] = False,
    pvalue: Annotated[float, PVALUE_OPTION] = PVALUE,
    metric: Annotated[str, METRIC_OPTION] = "wall",
) -> None:
    """Change points (E-divisive means) in every benchmark's series: each step's size, the two versions or runs
    it falls between, and its significance."""
    check_format(format)
    s = query_series(engine, benchmark, threads, host, build, config, target, by, pvalue,
                     named(metric, lambda m: m.series))
    show(regressions_view(s, show_all), format, output, force)
