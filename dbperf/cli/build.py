"""`dbperf build`: build an experiment's targets, list the caches, or list the versions that exist."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from dbperf.cli.common import fail, out_console
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
        for listing in cache_listings():
            table = Table(show_edge=False, pad_edge=False, title=listing.title)
            for title in listing.columns:
                table.add_column(title)
            for row in listing.rows:
                table.add_row(*row)
            out_console.print(table)
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
