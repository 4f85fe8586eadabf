"""The history commands: `dbperf history add/list/show`, `dbperf series` and `dbperf regressions`
(usecases/history.py; the store and the series are dbperf/history/'s)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from dbperf.cli.common import FORCE_OPTION, FORMAT_OPTION, OUTPUT_OPTION, out_console, show
from dbperf.history.changepoints import PVALUE
from dbperf.history.store import Result
from dbperf.report.escape import term
from dbperf.usecases.history import add_runs, list_runs, query_series, regressions_report, series_report, stored_run
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
    path, runs = list_runs()
    if as_json:
        sys.stdout.write(json.dumps([r.__dict__ for r in runs], indent=2) + "\n")
        return
    t = Table(show_edge=False, pad_edge=False, title=f"history: {path}", title_justify="left")
    for title in ("run", "started", "host", "status", "targets", "benchmarks", "results", "experiment",
                  "directory"):
        t.add_column(title, justify="right" if title in ("run", "targets", "benchmarks", "results") else "left")
    for r in runs:
        t.add_row(str(r.id), term(r.started_at or "-"), term(r.host), term(r.status or "-"), str(r.targets),
                  str(r.benchmarks), str(r.rows), term(r.experiment or "-"), term(r.directory))
    out_console.print(t)


@history_app.command("show")
def history_show(
    run: Annotated[Optional[int], typer.Argument(help="run id (default: the latest)")] = None,
    as_json: Annotated[bool, JSON_OPTION] = False,
) -> None:
    """One run's stored results: per target and benchmark, its key and figures."""
    stored = stored_run(run)
    if as_json:
        sys.stdout.write(json.dumps({"run": stored.id, "results": [r.__dict__ for r in stored.results]}, indent=2)
                         + "\n")
        return
    meta = stored.meta
    out_console.print(f"[bold]run {stored.id}[/bold]  {term(meta.started_at or '-')}  host "
                      f"{term((meta.host.hostname if meta.host else None) or '-')}  status {term(meta.status or '-')}")
    _results_table(stored.results)


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
) -> None:
    """A version (or run) series from the history: rows benchmarks, columns versions, rQPS against the first,
    verdicts, change points."""
    check_format(format)
    s = query_series(engine, benchmark, threads, host, build, config, target, by, pvalue)
    show(series_report(s), format, output, force)


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
) -> None:
    """Change points (E-divisive means) in every benchmark's series: each step's size, the two versions or runs
    it falls between, and its significance."""
    check_format(format)
    s = query_series(engine, benchmark, threads, host, build, config, target, by, pvalue)
    show(regressions_report(s, show_all), format, output, force)


def _results_table(results: list[Result]) -> None:
    t = Table(show_edge=False, pad_edge=False)
    for title in ("target", "engine", "version", "build", "config", "benchmark", "threads", "QPS", "n", "rQPS",
                  "verdict"):
        t.add_column(title, justify="right" if title in ("threads", "QPS", "n", "rQPS") else "left")
    for r in results:
        row: list[Any] = [r.target, r.engine, r.version, r.build, r.config, r.benchmark, r.threads,
                          "-" if r.qps_center is None else f"{r.qps_center:,.0f}", r.n,
                          "-" if r.rqps is None else f"{r.rqps:.2f}", r.verdict or "-"]
        t.add_row(*[term(v) for v in row])
    out_console.print(t)
