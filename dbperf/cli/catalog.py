"""`dbperf list`, `dbperf keys` and `dbperf version`: what the lab knows, printed."""

from __future__ import annotations

from typing import Annotated

import typer

from dbperf import __version__
from dbperf.catalog.harness import DESCRIPTIONS as HARNESS_GROUPS
from dbperf.catalog.registry import GROUP_NAMES, builtin, expand_group
from dbperf.cli.common import FORMAT_OPTION, out_console, show
from dbperf.experiment import keys as key_table
from dbperf.report.escape import term
from dbperf.report.tables_view import tables_view


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


def keys(format: Annotated[str, FORMAT_OPTION] = "table") -> None:
    r"""Every key of an experiment's \[run] and \[\[target]] and of a workload file: type, default, unit, meaning."""
    show(tables_view("keys", [(section, ("key", "type", "default", "unit", "meaning"),
                               [(k.name, k.kind, k.default, k.unit, k.doc) for k in declared])
                              for section, declared in key_table.SECTIONS.items()]), format)


def version() -> None:
    """Print dbperf's version."""
    out_console.print(f"dbperf {__version__}")
