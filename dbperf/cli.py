"""The dbperf command line. Bad input is one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from dbperf import __version__
from dbperf.buildlab.builder import cached_builds
from dbperf.buildlab.sqlite_source import CRATE, scan_versions
from dbperf.catalog.registry import GROUP_NAMES, builtin, expand_group
from dbperf.errors import UserError
from dbperf.experiment.spec import AGGREGATES, parse_experiment
from dbperf.report.ladder import render_ladder
from dbperf.report.render import render_table, to_csv, to_json, to_markdown
from dbperf.runner.matrix import run_matrix
from dbperf.runner.targets import build_targets, inspect_targets
from dbperf.stats.ladder import ladder as ladder_steps
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import read_results

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="dbperf: a performance lab for database engines.")
# Reports are wide; when piped (no terminal width to respect) do not wrap them at 80 columns.
out_console = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)
FORMATS = ("table", "markdown", "csv", "json")


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"dbperf: error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _check_aggregate(aggregate: str | None) -> None:
    if aggregate is not None and aggregate not in AGGREGATES:
        fail(f"--aggregate: expected one of {', '.join(AGGREGATES)}, got {aggregate!r}")


def print_report(directory: Path, fmt: str, aggregate: str | None) -> None:
    meta, records = read_results(directory)
    matrix = build_matrix(meta, records, aggregate)
    if fmt == "table":
        render_table(matrix, meta, out_console)
    else:
        render = {"markdown": to_markdown, "csv": to_csv, "json": to_json}[fmt]
        sys.stdout.write(render(matrix, meta))


def run_experiment(experiment: Path, out: Path | None, keep_data: bool) -> tuple[Path, bool]:
    """Builds what the targets need, runs the matrix; (results directory, whether it was interrupted)."""
    exp, builds = build_targets(parse_experiment(experiment), err_console)
    inspect_targets(exp)
    directory = out or Path("results") / f"{experiment.stem}-{datetime.now():%Y%m%d-%H%M%S}"
    err_console.print(f"dbperf: {len(exp.benchmarks)} benchmarks × {len(exp.threads)} thread counts × "
                      f"{exp.repeats} repeats × {len(exp.targets)} targets, results in {directory}",
                      highlight=False)
    try:
        run_matrix(exp, directory, err_console, keep_data=keep_data, builds=builds)
    except KeyboardInterrupt:
        err_console.print(f"dbperf: interrupted; what was measured is in {directory}", highlight=False)
        return directory, True
    return directory, False


OUT_OPTION = typer.Option("--out", help="results directory (default results/NAME-TIME)")


@app.command()
def run(
    experiment: Annotated[Path, typer.Argument(help="experiment file (TOML)")],
    out: Annotated[Optional[Path], OUT_OPTION] = None,
    aggregate: Annotated[Optional[str], typer.Option(help="median (default) or trimmed")] = None,
    keep_data: Annotated[bool, typer.Option(help="keep the loaded databases under DIR/.data")] = False,
) -> None:
    """Run an experiment's matrix and print the rQPS table."""
    _check_aggregate(aggregate)
    directory, interrupted = run_experiment(experiment, out, keep_data)
    print_report(directory, "table", aggregate)
    if interrupted:
        raise typer.Exit(130)


@app.command()
def ladder(
    experiment: Annotated[Path, typer.Argument(help="experiment file: its targets are cumulative tuning steps")],
    out: Annotated[Optional[Path], OUT_OPTION] = None,
    aggregate: Annotated[Optional[str], typer.Option(help="median (default) or trimmed")] = None,
) -> None:
    """Run the targets as a tuning ladder and report each step's gain over the previous step and the base."""
    _check_aggregate(aggregate)
    directory, interrupted = run_experiment(experiment, out, keep_data=False)
    print_ladder(directory, aggregate)
    if interrupted:
        raise typer.Exit(130)


def print_ladder(directory: Path, aggregate: str | None) -> None:
    meta, records = read_results(directory)
    render_ladder(ladder_steps(build_matrix(meta, records, aggregate)), out_console)


@app.command()
def build(
    experiment: Annotated[Optional[Path], typer.Argument(help="build every `source` target of this experiment")] = None,
    list_cache: Annotated[bool, typer.Option("--list", help="show the build cache")] = False,
    versions: Annotated[bool, typer.Option("--versions", help="which SQLite versions crates.io bundles")] = False,
    scan: Annotated[int, typer.Option(help="with --versions: how many newest crate releases to map")] = 8,
) -> None:
    """Build SQLite variants without running anything, list the build cache, or list available versions."""
    if list_cache:
        table = Table(show_edge=False, pad_edge=False)
        for title in ("key", "sqlite", "variants / cflags", "PGO training", "built", "seconds", "library"):
            table.add_column(title)
        for m in cached_builds():
            pgo = m.get("pgo") or {}
            table.add_row(m["key"], m["source"]["sqlite_version"], " ".join(m["variants"] + m["cflags"]),
                          ", ".join(pgo.get("training_set", [])) or "-", m["built_at"], str(m["build_seconds"]),
                          m["library"])
        out_console.print(table)
        return
    if versions:
        mapping = scan_versions(scan)
        out_console.print(f"SQLite versions bundled by the newest {len(mapping)} {CRATE} releases on crates.io "
                          "(read from each amalgamation's SQLITE_VERSION):", highlight=False)
        for crate_version, sqlite_version in mapping.items():
            out_console.print(f"  sqlite@{sqlite_version}   ({CRATE} {crate_version})", highlight=False)
        return
    if experiment is None:
        fail("build: give an experiment file, --list or --versions")
    _, builds = build_targets(parse_experiment(experiment), err_console)
    if not builds:
        fail(f"{experiment}: no target has a 'source' to build")
    for name, manifest in builds.items():
        how = "cached" if manifest["cached"] else f"built in {manifest['build_seconds']} s"
        out_console.print(f"{name}: {manifest['label']} -> {manifest['library']} ({how})", highlight=False)


@app.command()
def report(
    directory: Annotated[Path, typer.Argument(help="results directory of a run")],
    format: Annotated[str, typer.Option("--format", help="table, markdown, csv or json")] = "table",
    aggregate: Annotated[Optional[str], typer.Option(help="median or trimmed (default: the run's)")] = None,
    as_ladder: Annotated[bool, typer.Option("--ladder", help="report the targets as a tuning ladder")] = False,
) -> None:
    """Report a results directory, complete or partial."""
    if format not in FORMATS:
        fail(f"--format: expected one of {', '.join(FORMATS)}, got {format!r}")
    _check_aggregate(aggregate)
    if as_ladder:
        print_ladder(directory, aggregate)
    else:
        print_report(directory, format, aggregate)


@app.command("list")
def list_benchmarks(
    sql: Annotated[bool, typer.Option("--sql/--no-sql", help="show each benchmark's SQL")] = True,
) -> None:
    """List the catalog's benchmarks and groups."""
    for group in GROUP_NAMES:
        if group == "all":
            names = "reads, writes (update-*, write-only, read-write-*), the reads again as NAME@after-writes, " \
                    "then delete, insert"
        else:
            names = " ".join(w.name for w in expand_group(group))
        out_console.print(f"[bold]group {group}[/bold]: {names}", highlight=False)
    for w in builtin().values():
        out_console.print(f"\n[bold]{w.name}[/bold]  [dim]{w.group}/{w.phase}, {w.queries_per_event} "
                          f"queries per event[/dim]\n  {w.description}", highlight=False)
        if sql:
            for line in w.display_sql():
                out_console.print(f"    {line}", markup=False, highlight=False)


@app.command()
def version() -> None:
    """Print dbperf's version."""
    out_console.print(f"dbperf {__version__}")


def main() -> None:
    try:
        app()
    except UserError as e:
        err_console.print(f"dbperf: error: {e}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
