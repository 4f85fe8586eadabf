"""Plain listings as a View: a table per titled part, every column text (the build caches, the key table)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dbperf.report.model import Block, Row, Section, View


def tables_view(name: str, tables: Iterable[tuple[str | None, Sequence[str], Iterable[Sequence[str]]]]) -> View:
    """`tables`: (title or None, column names, rows of text); CSV rows name their part `table`."""
    sections, flat = [], []
    for title, columns, rows in tables:
        cells = [tuple(str(c) for c in row) for row in rows]
        sections.append(Section(title=title or "", block=Block("", "", tuple(columns), tuple(Row(c) for c in cells),
                                                               text_columns=len(columns))))
        flat += [{"table": title or name, **dict(zip(columns, c, strict=True))} for c in cells]
    return View(name, "", tuple(sections), rows=tuple(flat))
