"""The terminal: a view's sections as Rich text and its Blocks as Rich tables (the one place a Block becomes a
Rich Table). Titles bold, notes dim; what users named is escaped (escape.term)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dbperf.report.escape import term
from dbperf.report.formats.format import Format
from dbperf.report.model import Block, View

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


def _say(console: Console, line: str) -> None:
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def draw(view: View, console: Console) -> None:
    if view.draw is not None:  # the run report draws itself (render.py)
        view.draw(console)
        return
    if view.title:
        console.print(f"[bold]{term(view.title)}[/bold]" + (f"  {term(view.subtitle)}" if view.subtitle else ""),
                      highlight=False)
    for i, s in enumerate(view.sections):
        if s.title:
            console.print(("\n" if i or view.title else "") + f"[bold]{term(s.title)}[/bold]"
                          + (f"  {term(s.subtitle)}" if s.subtitle else ""), highlight=False)
        for line in (*s.text, *s.lines):
            _say(console, line)
        if s.block is not None:
            console.print(block_table(s.block))
        for note in s.notes:
            console.print(f"[dim]{term(note)}[/dim]", highlight=False)
    for note in view.notes:
        console.print(f"[dim]{term(note)}[/dim]", highlight=False)
    if view.warning:
        console.print(f"[yellow]{term(view.warning)}[/yellow]", highlight=False)


FORMAT = Format("table", "txt", draw=draw)
