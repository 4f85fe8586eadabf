"""Escaping what users named (targets, benchmarks, paths, settings) and what engines said (error texts, function
names) for each output format, so that none of it is read as markup. CSV and JSON are safe by construction."""

from __future__ import annotations

import html

from rich.markup import escape as rich_escape


def term(value: object) -> str:
    """For Rich markup: `[/red]` or a C++ `[abi:cxx11]` shows as text."""
    return rich_escape(str(value))


def md(value: object) -> str:
    """For a Markdown table cell or heading: no HTML, no column breaks, no code spans, one line."""
    text = html.escape(str(value), quote=False).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
    return " ".join(text.splitlines())
