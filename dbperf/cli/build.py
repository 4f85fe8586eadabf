"""`dbperf build`: build an experiment's targets, list the caches, or list the versions that exist."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import fail, out_console, show
from dbperf.report.tables_view import tables_view
from dbperf.usecases.build import build_experiment, cache_listings, upstream_versions


def build(
    experiment: Annotated[Optional[Path], typer.Argument(help="build every `source` target of this experiment")] = None,
    list_cache: Annotated[bool, typer.Option("--list", help="show the build cache")] = False,
    versions: Annotated[Optional[str], typer.Option(
        "--versions", help="which versions exist: sqlite (crates.io), postgres or mariadb (released binaries)")]
    = None,
    scan: Annotated[int, typer.Option(help="with --versions sqlite: how many newest crate releases to map")] = 8,
) -> None:
    """Build SQLite variants or fetch server releases without running anything, list the caches, or list the
    versions that exist."""
    if list_cache:
        show(tables_view("builds", [(listing.title, listing.columns, listing.rows) for listing in cache_listings()]),
             "table")
        return
    if versions is not None and versions != "":
        found = upstream_versions(versions, scan)
        for line in (found.heading, *found.lines):
            out_console.print(line, highlight=False, markup=False)
        return
    if versions is not None:
        fail(f"--versions: expected sqlite, postgres or mariadb, got {versions!r}")
    if experiment is None:
        fail("build: give an experiment file, --list or --versions")
    for line in build_experiment(experiment):
        out_console.print(line, highlight=False, markup=False)
