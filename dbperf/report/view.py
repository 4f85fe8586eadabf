"""A report view as data, drawn by any document format: headings, text lines and tables (layout.py's Block) for
Markdown and HTML, flat rows for CSV, rows plus the view's own fields for JSON. The views that used to print only
to the terminal (`report --ladder`, `--intervals`, `--resources`) build a View, so `--format` and `-o` apply to
them as to the run report; their terminal tables stay as they were."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Any

from dbperf.report.escape import md
from dbperf.report.html import block_html
from dbperf.report.html_page import STYLE, text
from dbperf.report.model import Block
from dbperf.report.render import _markdown_block as markdown_block

DOCUMENT_FORMATS = ("markdown", "csv", "json", "html")


@dataclass(frozen=True)
class Section:
    title: str = ""
    subtitle: str = ""
    lines: tuple[str, ...] = ()  # text shown as written (sysbench's interval lines, notes)
    block: Block | None = None


@dataclass(frozen=True)
class View:
    name: str  # the JSON's "view"
    title: str
    sections: tuple[Section, ...]
    rows: tuple[dict[str, Any], ...]  # one flat record per figure row: CSV's lines, JSON's "rows"
    data: dict[str, Any] = field(default_factory=dict)  # JSON only: what does not fit flat rows
    notes: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()  # CSV's first columns, so that a view without rows still has its header


def render_view(view: View, fmt: str) -> str:
    """The view as a document in `fmt` (one of DOCUMENT_FORMATS)."""
    return {"markdown": _markdown, "csv": _csv, "json": _json, "html": _html}[fmt](view)


def _markdown(view: View) -> str:
    out = [f"## {md(view.title)}"]
    for s in view.sections:
        if s.title:
            out += ["", f"### {md(s.title)}" + (f" — {md(s.subtitle)}" if s.subtitle else "")]
        if s.lines:
            out += ["", *[f"    {line}" for line in s.lines]]  # a code block: shown as written
        if s.block is not None:
            out += ["", *markdown_block(s.block)]
    out += [x for n in view.notes for x in ("", md(n))]
    return "\n".join(out) + "\n"


def _csv(view: View) -> str:
    columns: dict[str, None] = dict.fromkeys(view.columns)
    for row in view.rows:
        columns.update(dict.fromkeys(row))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n", restval="")
    writer.writeheader()
    writer.writerows(view.rows)
    return buf.getvalue()


def _json(view: View) -> str:
    return json.dumps({"view": view.name, "title": view.title, **view.data, "rows": list(view.rows)}, indent=2,
                      default=str) + "\n"


def _html(view: View) -> str:
    """A plain page, no script: every name escaped."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{text(view.title)}</title><style>{STYLE}</style></head><body>", f"<h1>{text(view.title)}</h1>"]
    for s in view.sections:
        if s.title:
            parts.append(f"<h2>{text(s.title)}</h2>" + (f'<p class="note">{text(s.subtitle)}</p>' if s.subtitle
                                                         else ""))
        if s.lines:
            parts.append("<pre>" + "\n".join(text(line) for line in s.lines) + "</pre>")
        if s.block is not None:
            parts.append(block_html(s.block))
    parts += [f'<p class="note">{text(n)}</p>' for n in view.notes]
    parts += ["</body></html>", ""]
    return "\n".join(parts)
