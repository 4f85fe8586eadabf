"""The terminal: a view's sections as Rich text and its Blocks as Rich tables (the one place a Block becomes a
Rich Table). Titles bold, notes dim, warnings yellow; what users named is escaped (escape.term). A view with a
glance (the run report) is drawn at a glance unless it was asked for in full."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dbperf.report.escape import term
from dbperf.report.formats.format import Format
from dbperf.report.model import Block, Section, View

FAILED_TEXT_WIDTH = 80


def block_table(block: Block) -> Table:
    t = Table(show_edge=False, pad_edge=False)
    for i, heading in enumerate(block.header):
        t.add_column(term(heading), justify="left" if block.is_text(i) else "right")
    width = len(block.header)
    for row in block.rows:
        if row.group:
            t.add_row(f"[dim]{term(row.cells[0])}[/dim]", *[""] * (width - 1))
        elif row.failed is not None:
            cells = [term(c) for c in row.cells]
            t.add_row(*cells, "[red]failed[/red]", term(row.failed[:FAILED_TEXT_WIDTH]),
                      *[""] * (width - len(cells) - 2))
        else:
            t.add_row(*[term(c) for c in row.cells])
    return t


def _say(console: Console, line: str, wrap: bool = False) -> None:
    console.print(line, markup=False, highlight=False, soft_wrap=not wrap)


def _title(console: Console, s: Section, first: bool) -> None:
    if s.rank == "part":
        console.print(f"\n[bold reverse] {term(s.title)} [/bold reverse]", highlight=False)
        return
    console.print(("" if first or s.rank == "caption" else "\n") + f"[bold]{term(s.title)}[/bold]"
                  + (f"  {term(s.subtitle)}" if s.subtitle else ""), highlight=False)


def _section(console: Console, s: Section, first: bool) -> None:
    if s.apart:
        console.print()
    if s.title:
        _title(console, s, first)
    for line in (*s.text, *s.lines):
        _say(console, line, s.wrap)
    if s.block is not None:
        console.print(block_table(s.block))
    for note in s.notes:
        console.print(f"[dim]{term(note)}[/dim]", highlight=False)
    if s.warning:
        console.print(f"[yellow]{term(s.warning)}[/yellow]", highlight=False)


def draw(view: View, console: Console) -> None:
    if view.title:
        console.print(f"[bold]{term(view.title)}[/bold]" + (f"  {term(view.subtitle)}" if view.subtitle else ""),
                      highlight=False)
    for i, s in enumerate(view.glance or view.sections):
        _section(console, s, first=not (i or view.title))
    for note in view.notes:
        console.print(f"[dim]{term(note)}[/dim]", highlight=False)
    if view.warning:
        console.print(f"[yellow]{term(view.warning)}[/yellow]", highlight=False)


FORMAT = Format("table", "txt", draw=draw)
