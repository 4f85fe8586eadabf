"""The report model every view returns (hyperfine's export/ idea): Blocks of Rows, plain text in cells, in the
Sections of a View, drawn by one module per format (dbperf/report/formats/: terminal, markdown, csv, json, html).
A view knows what to say, never how a format draws it. The run report's layout (matrix_layout.py) is a Report of Blocks,
which report/run_view.py turns into a View."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal


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
    left: tuple[int, ...] = ()  # text columns after the figures began (a verdict, a list of steps), by index

    def is_text(self, column: int) -> bool:
        return column < self.text_columns or column in self.left


Figure = dict[str, Any]  # a Plotly figure as plain data: {"data": [...], "layout": {...}}


@dataclass(frozen=True)
class Swatch:
    """One entry of a colour legend: what a colour in the charts and tables means."""
    name: str
    colour: str
    meaning: str


@dataclass(frozen=True)
class Report:
    """The run report: a legend before the matrix (blocks[0]); after it, `findings` (said as they are: the cells
    whose tiers disagree) and `matrix_notes` (how to read it); then the other blocks, then `notes`."""
    heading: str
    legend: tuple[str, ...]
    blocks: tuple[Block, ...]
    notes: tuple[str, ...]
    warning: str | None  # a partial run says so
    findings: tuple[str, ...] = ()
    matrix_notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Section:
    """A part of a view: a title, prose, lines shown as written (sysbench's interval lines, a legend), a table, notes
    after it and a warning last. `collapsed`: Markdown folds it in <details>, as a GitHub comment or pull request
    shows it. `rank` sets the title: a `part` of the view (a host of a fleet run: a bar on the terminal, a heading in
    Markdown), a `section`, or a table's `caption` (bold on the terminal, plain in Markdown, no blank line before
    it). `wrap`: the terminal wraps its text and lines at words (a legend read as prose) rather than showing them as
    written. `apart`: the terminal sets it apart with a blank line (Markdown sets every part apart already)."""
    title: str = ""
    subtitle: str = ""
    text: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()
    block: Block | None = None
    notes: tuple[str, ...] = ()
    collapsed: bool = False
    rank: Literal["part", "section", "caption"] = "section"
    wrap: bool = False
    apart: bool = False
    warning: str | None = None
    # A page with charts (ChartPage, drawn by the HTML format only; the other formats never see these fields):
    anchor: str = ""  # the section's id, listed in the page's navigation when its rank is "section" or "part"
    figures: tuple[Figure, ...] = ()  # charts, drawn after the title
    grid: bool = False  # the figures side by side
    swatches: tuple[Swatch, ...] = ()  # a colour legend, after the figures


@dataclass(frozen=True)
class ChartPage:
    """What the HTML format draws instead of a view's sections: a page of sections with charts (the run report,
    a series, a comparison, the replication lab), titled `title`, with Plotly embedded."""
    title: str
    sections: tuple[Section, ...]


@dataclass(frozen=True)
class View:
    """What a report view says, as data: any format of dbperf/report/formats/ draws it.

    `rows` are the view's flat records (CSV's lines; `columns` names CSV's first columns, so that a view without rows
    still has its header); JSON writes `document` when the view has a document of its own (its field names are a
    published interface), else the view's name, title, `data` and rows. `page`, when given, is what HTML draws: a
    ChartPage of sections with charts (the run report, a series, a comparison, the replication lab); every other
    format is drawn from the sections, and no view renders a format itself. `glance`, when given, is what the
    terminal draws instead of the sections (the run report at a glance; `--verbose` and the documents have every
    section). `formats`, when given, are the only formats the view can be drawn in (any other is refused).
    `stderr_after` are notes said on stderr after the view, never in it (a comparison's skipped lines of
    results.jsonl: usecases/report.py)."""
    name: str  # the JSON's "view", and the file's stem when -o names a directory
    title: str
    sections: tuple[Section, ...] = ()
    subtitle: str = ""
    rows: tuple[dict[str, Any], ...] = ()
    columns: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)
    document: Any = None
    notes: tuple[str, ...] = ()
    warning: str | None = None
    glance: tuple[Section, ...] = ()
    page: Callable[[], ChartPage] | None = None  # HTML's page with charts, built only when HTML is asked for
    formats: tuple[str, ...] = ()
    stderr_after: tuple[str, ...] = ()
