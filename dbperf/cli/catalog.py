"""`dbperf list`, `dbperf keys` and `dbperf version`: what the lab knows, printed."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from dbperf import __version__
from dbperf.catalog.harness import DESCRIPTIONS as HARNESS_GROUPS
from dbperf.catalog.registry import GROUP_NAMES, builtin, expand_group
from dbperf.cli.common import out_console
from dbperf.experiment import keys as key_table
from dbperf.report.escape import term


def list_benchmarks(
    sql: Annotated[bool, typer.Option("--sql/--no-sql", help="show each benchmark's SQL")] = True,
) -> None:
    """List the catalog's benchmarks and groups."""
    for group in GROUP_NAMES:
        names = HARNESS_GROUPS.get(group) or " ".join(w.name for w in expand_group(group))
        out_console.print(f"[bold]group {group}[/bold]: {names}", highlight=False)
    for w in builtin().values():
        out_console.print(f"\n[bold]{term(w.name)}[/bold]  [dim]{w.group}/{w.phase}, {w.queries_per_event} "
                          f"queries per event[/dim]\n  {term(w.description)}", highlight=False)
        if sql:
            for line in w.display_sql():
                out_console.print(f"    {line}", markup=False, highlight=False)


def keys() -> None:
    r"""Every key of an experiment's \[run] and \[\[target]] and of a workload file: type, default, unit, meaning."""
    for section, declared in key_table.SECTIONS.items():
        table = Table(title=term(section), title_justify="left", show_edge=False, pad_edge=False)
        for title in ("key", "type", "default", "unit", "meaning"):
            table.add_column(title)
        for k in declared:
            table.add_row(term(k.name), term(k.kind), term(k.default), term(k.unit), term(k.doc))
        out_console.print(table)
        out_console.print()


def version() -> None:
    """Print dbperf's version."""
    out_console.print(f"dbperf {__version__}")
