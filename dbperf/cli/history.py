"""The history commands: `dbperf history add/list/show`, `dbperf series`, `dbperf regressions`, and recording a run
at the end of `dbperf run`. Registered on the main Typer app by `register` (cli.py), so cli.py only adds them."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, Optional

import typer
from rich.console import Console
from rich.table import Table

from dbperf.errors import UserError
from dbperf.experiment.keys import AGGREGATES
from dbperf.history.changepoints import PVALUE
from dbperf.history.series import BY, Series, build_series
from dbperf.history.store import Result, Store, history_path, open_store
from dbperf.report.compare_view import compare_csv, compare_html, compare_json, compare_markdown, compare_table
from dbperf.report.escape import term
from dbperf.report.series_view import (
    regressions_render,
    series_csv,
    series_html,
    series_json,
    series_markdown,
    series_table,
)
from dbperf.stats.compare import load_side, pair_matrices, side_labels

SERIES_FORMATS = ("table", "markdown", "csv", "json", "html")
PVALUE_OPTION = typer.Option(help="E-divisive's permutation-test threshold for a change point (0.05 finds more "
                                  "steps in short series, and more false ones)")


def record_run(directory: Path, err: Console) -> None:
    """At the end of `dbperf run`: the run goes into the history. A store that cannot be written is a warning: the
    run's own results are already safe in its directory."""
    try:
        path = history_path()
        if path is None or not (directory / "meta.json").is_file():
            return
        store = Store(path)
        try:
            run_id, _ = store.add_run(directory)
        finally:
            store.close()
    except UserError as e:
        err.print(f"dbperf: warning: not recorded in the history: {e}", markup=False, highlight=False)
        return
    err.print(f"dbperf: recorded in the history as run {run_id} ({path})", markup=False, highlight=False)


# cli.show: (format, -o, --force, default file stem, draw the table, the document in a format)
Show = Callable[[str, Optional[str], bool, str, Callable[[], object], Callable[[str], str]], None]
OUTPUT_OPTION = typer.Option("-o", "--output", help="write to this file (or DIR/NAME.EXT for a directory)")
FORCE_OPTION = typer.Option("--force", help="replace the -o file if it exists")


def register(app: typer.Typer, out: Console, err: Console, fail: Callable[[str], NoReturn], show: Show) -> None:
    history = typer.Typer(no_args_is_help=True, help="The results store: every run, keyed by engine, version, build, "
                                                     "config, host, benchmark and threads.")
    app.add_typer(history, name="history")

    @history.command("add")
    def history_add(directories: Annotated[list[Path], typer.Argument(help="results directories")]) -> None:
        """Record existing results directories (runs from before the store, or from another machine)."""
        store = open_store()
        try:
            for d in directories:
                run_id, new = store.add_run(d)
                out.print(f"{d}: {'recorded as' if new else 'already recorded as'} run {run_id}", markup=False,
                          highlight=False)
        finally:
            store.close()

    @history.command("list")
    def history_list(as_json: Annotated[bool, typer.Option("--json", help="as JSON")] = False) -> None:
        """The runs in the store."""
        store = open_store()
        try:
            runs = store.runs()
        finally:
            store.close()
        if as_json:
            sys.stdout.write(json.dumps([r.__dict__ for r in runs], indent=2) + "\n")
            return
        t = Table(show_edge=False, pad_edge=False, title=f"history: {history_path()}", title_justify="left")
        for title in ("run", "started", "host", "status", "targets", "benchmarks", "results", "experiment",
                      "directory"):
            t.add_column(title, justify="right" if title in ("run", "targets", "benchmarks", "results") else "left")
        for r in runs:
            t.add_row(str(r.id), term(r.started_at or "-"), term(r.host), term(r.status or "-"), str(r.targets),
                      str(r.benchmarks), str(r.rows), term(r.experiment or "-"), term(r.directory))
        out.print(t)

    @history.command("show")
    def history_show(
        run: Annotated[Optional[int], typer.Argument(help="run id (default: the latest)")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="as JSON")] = False,
    ) -> None:
        """One run's stored results: per target and benchmark, its key and figures."""
        store = open_store()
        try:
            runs = store.runs()
            if not runs:
                fail(f"{store.path}: the history is empty (dbperf history add DIR records a results directory)")
            run_id = run if run is not None else runs[-1].id
            meta = store.meta(run_id)
            results = store.results(run_id)
        finally:
            store.close()
        if as_json:
            sys.stdout.write(json.dumps({"run": run_id, "results": [r.__dict__ for r in results]}, indent=2) + "\n")
            return
        out.print(f"[bold]run {run_id}[/bold]  {term(meta.get('started_at') or '-')}  host "
                  f"{term((meta.get('host') or {}).get('hostname') or '-')}  status {term(meta.get('status') or '-')}")
        _results_table(results, out)

    @app.command()
    def series(
        engine: Annotated[Optional[str], typer.Option(help="engine (sqlite, postgres, mariadb)")] = None,
        benchmark: Annotated[Optional[list[str]], typer.Option(help="benchmarks (default: all stored)")] = None,
        threads: Annotated[Optional[int], typer.Option(help="thread count")] = None,
        host: Annotated[Optional[str], typer.Option(help="host name")] = None,
        build: Annotated[Optional[str], typer.Option(help="build, as `history show` prints it")] = None,
        config: Annotated[Optional[str], typer.Option(help="config, as `history show` prints it")] = None,
        target: Annotated[Optional[str], typer.Option(help="target name")] = None,
        by: Annotated[str, typer.Option(help="version: one column per engine version; run: per run and target")]
        = "version",
        format: Annotated[str, typer.Option("--format", help="table, markdown, csv, json or html")] = "table",
        output: Annotated[Optional[str], OUTPUT_OPTION] = None,
        force: Annotated[bool, FORCE_OPTION] = False,
        pvalue: Annotated[float, PVALUE_OPTION] = PVALUE,
    ) -> None:
        """A version (or run) series from the history: rows benchmarks, columns versions, rQPS against the first,
        verdicts, change points."""
        s = _series(fail, engine, benchmark, threads, host, build, config, target, by, format, pvalue)
        render = {"markdown": series_markdown, "csv": series_csv, "json": series_json, "html": series_html}
        show(format, output, force, "series", lambda: series_table(s, out), lambda f: render[f](s))

    @app.command()
    def compare(
        dir_a: Annotated[Path, typer.Argument(help="results directory A (the reference)")],
        dir_b: Annotated[Path, typer.Argument(help="results directory B")],
        target: Annotated[Optional[list[str]], typer.Option(help="target(s) to compare (default: every target "
                                                                 "name both runs have)")] = None,
        format: Annotated[str, typer.Option("--format", help="table, markdown, csv, json or html")] = "table",
        aggregate: Annotated[Optional[str], typer.Option(help="median or trimmed (default: A's)")] = None,
        output: Annotated[Optional[str], OUTPUT_OPTION] = None,
        force: Annotated[bool, FORCE_OPTION] = False,
    ) -> None:
        """The same target(s) from two runs (two hosts, two days) side by side, with the same verdict rules."""
        if format not in SERIES_FORMATS:
            fail(f"--format: expected one of {', '.join(SERIES_FORMATS)}, got {format!r}")
        if aggregate is not None and aggregate not in AGGREGATES:
            fail(f"--aggregate: expected one of {', '.join(AGGREGATES)}, got {aggregate!r}")
        label_a, label_b = side_labels(dir_a, dir_b)
        a, b = load_side(dir_a, label_a), load_side(dir_b, label_b)
        pairs = pair_matrices(a, b, target, aggregate)
        render = {"markdown": compare_markdown, "csv": compare_csv, "json": compare_json, "html": compare_html}
        show(format, output, force, "compare", lambda: compare_table(a, b, pairs, out),
             lambda f: render[f](a, b, pairs))

    @app.command()
    def regressions(
        engine: Annotated[Optional[str], typer.Option(help="engine (sqlite, postgres, mariadb)")] = None,
        benchmark: Annotated[Optional[list[str]], typer.Option(help="benchmarks (default: all stored)")] = None,
        threads: Annotated[Optional[int], typer.Option(help="thread count")] = None,
        host: Annotated[Optional[str], typer.Option(help="host name")] = None,
        build: Annotated[Optional[str], typer.Option(help="build, as `history show` prints it")] = None,
        config: Annotated[Optional[str], typer.Option(help="config, as `history show` prints it")] = None,
        target: Annotated[Optional[str], typer.Option(help="target name")] = None,
        by: Annotated[str, typer.Option(help="version or run")] = "version",
        show_all: Annotated[bool, typer.Option("--all", help="also steps up (improvements)")] = False,
        format: Annotated[str, typer.Option("--format", help="table, markdown, csv, json or html")] = "table",
        output: Annotated[Optional[str], OUTPUT_OPTION] = None,
        force: Annotated[bool, FORCE_OPTION] = False,
        pvalue: Annotated[float, PVALUE_OPTION] = PVALUE,
    ) -> None:
        """Change points (E-divisive means) in every benchmark's series: each step's size, the two versions or runs
        it falls between, and its significance."""
        s = _series(fail, engine, benchmark, threads, host, build, config, target, by, format, pvalue)
        show(format, output, force, "regressions", lambda: regressions_render(s, "table", out, show_all),
             lambda f: regressions_render(s, f, out, show_all) or "")


def _series(fail: Callable[[str], NoReturn], engine: str | None, benchmarks: list[str] | None, threads: int | None,
            host: str | None, build: str | None, config: str | None, target: str | None, by: str,
            fmt: str, pvalue: float) -> Series:
    if fmt not in SERIES_FORMATS:
        fail(f"--format: expected one of {', '.join(SERIES_FORMATS)}, got {fmt!r}")
    if by not in BY:
        fail(f"--by: expected one of {', '.join(BY)}, got {by!r}")
    if not 0 < pvalue < 1:
        fail(f"--pvalue: expected a probability between 0 and 1, got {pvalue}")
    store = open_store()
    try:
        results = store.results(engine=engine, threads=threads, host=host, build=build, config=config,
                                target=target)
    finally:
        store.close()
    if benchmarks:
        unknown = set(benchmarks) - {r.benchmark for r in results}
        if unknown:
            fail(f"--benchmark: nothing stored for {', '.join(sorted(unknown))}")
        results = [r for r in results if r.benchmark in benchmarks]
    return build_series(results, by, pvalue=pvalue)


def _results_table(results: list[Result], out: Console) -> None:
    t = Table(show_edge=False, pad_edge=False)
    for title in ("target", "engine", "version", "build", "config", "benchmark", "threads", "QPS", "n", "rQPS",
                  "verdict"):
        t.add_column(title, justify="right" if title in ("threads", "QPS", "n", "rQPS") else "left")
    for r in results:
        row: list[Any] = [r.target, r.engine, r.version, r.build, r.config, r.benchmark, r.threads,
                          "-" if r.qps_center is None else f"{r.qps_center:,.0f}", r.n,
                          "-" if r.rqps is None else f"{r.rqps:.2f}", r.verdict or "-"]
        t.add_row(*[term(v) for v in row])
    out.print(t)
