"""The report model every view returns (hyperfine's export/ idea): a Report of Blocks of Rows, plain text in cells,
rendered by one renderer per format (terminal, markdown, csv, json, html). A view knows what to say, never how a
format draws it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    cells: tuple[str, ...]
    group: bool = False  # a section header (point, range, write)
    failed: str | None = None  # a failed cell: its error; cells hold the row label only


@dataclass(frozen=True)
class Block:
    title: str
    subtitle: str
    header: tuple[str, ...]
    rows: tuple[Row, ...]
    text_columns: int = 1  # left-aligned columns; the rest are figures


@dataclass(frozen=True)
class Report:
    heading: str
    legend: tuple[str, ...]
    blocks: tuple[Block, ...]
    notes: tuple[str, ...]
    warning: str | None  # a partial run says so
