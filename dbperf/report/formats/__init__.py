"""The format registry (hyperfine's src/export/: one module per format): every View is drawn by the format
`--format` names, through `render` (a document) or `draw` (the terminal), here and nowhere else. A new format is
one module with a FORMAT, registered below; a new view is one module returning a View."""

from __future__ import annotations

from rich.console import Console

from dbperf.errors import UserError
from dbperf.report.formats import csv, html, json, markdown, terminal
from dbperf.report.formats.format import Format
from dbperf.report.model import View

FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    FORMATS[fmt.name] = fmt
    return fmt


for _module in (terminal, markdown, csv, json, html):
    register(_module.FORMAT)


def format_named(name: str) -> Format:
    """The format `--format NAME` names; one line (UserError) for a name no format has."""
    if name not in FORMATS:
        raise UserError(f"--format: expected one of {', '.join(FORMATS)}, got {name!r}")
    return FORMATS[name]


def check(view: View, name: str) -> Format:
    """The format, when this view can be drawn in it; else one line (UserError)."""
    fmt = format_named(name)
    if view.formats and name not in view.formats:
        raise UserError(f"--format {name}: the {view.name} view is drawn in {', '.join(view.formats)} only")
    return fmt


def render(view: View, name: str) -> str:
    """The view as a document in the format `name` (not the terminal's)."""
    fmt = check(view, name)
    if fmt.render is None:
        raise UserError(f"--format {name}: drawn on the terminal only, not written as a document")
    return fmt.render(view)


def draw(view: View, console: Console, name: str = terminal.FORMAT.name) -> None:
    """The view on a terminal."""
    fmt = check(view, name)
    if fmt.draw is None:
        raise UserError(f"--format {name}: a document, not a terminal drawing")
    fmt.draw(view, console)


__all__ = ["FORMATS", "Format", "check", "draw", "format_named", "register", "render"]
