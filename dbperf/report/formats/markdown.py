"""Markdown: a GitHub comment or pull request. Titles bold (a part's a heading, a caption plain), lines shown as
written in a code block, Blocks as pipe tables (figures right-aligned), collapsed sections in <details>, warnings
bold; what users named is escaped (escape.md)."""

from __future__ import annotations

from dbperf.report.escape import md
from dbperf.report.formats.format import Format
from dbperf.report.model import Block, Section, View


def markdown_block(block: Block) -> list[str]:
    width = len(block.header)
    out = ["| " + " | ".join(md(h) for h in block.header) + " |",
           "|" + "".join("---|" if block.is_text(i) else "---:|" for i in range(width))]
    for row in block.rows:
        if row.group:
            out.append(f"| **{md(row.cells[0])}** |" + " |" * (width - 1))
        elif row.failed is not None:
            cells = " | ".join(md(c) for c in row.cells)
            out.append(f"| {cells} | failed: {md(row.failed)} |" + " |" * (width - len(row.cells) - 1))
        else:
            out.append("| " + " | ".join(md(c) for c in row.cells) + " |")
    return out


def _body(s: Section) -> list[str]:
    body: list[str] = [x for t in s.text for x in ("", md(t))]
    if s.lines:
        body += ["", *[f"    {line}" for line in s.lines]]  # a code block: shown as written
    if s.block is not None:
        body += ["", *markdown_block(s.block)]
    body += [x for n in s.notes for x in ("", md(n))]
    return body + (["", f"**{md(s.warning)}**"] if s.warning else [])


def _section(s: Section) -> list[str]:
    subtitle = f" {md(s.subtitle)}" if s.subtitle else ""
    if s.collapsed:
        return ["", f"<details><summary><b>{md(s.title)}</b>{subtitle}</summary>", *_body(s), "", "</details>"]
    if not s.title:
        return _body(s)
    title = {"part": f"## {md(s.title)}", "caption": md(s.title)}.get(s.rank, f"**{md(s.title)}**")
    return ["", title + subtitle, *_body(s)]


def render(view: View) -> str:
    out = [f"## {md(view.title)}"] if view.title else []
    if view.subtitle:
        out += ["", md(view.subtitle)]
    for s in view.sections:
        out += _section(s)
    out += [x for n in view.notes for x in ("", md(n))]
    if view.warning:
        out += ["", f"**{md(view.warning)}**"]
    while out and out[0] == "":
        out.pop(0)
    return "\n".join(out) + "\n"


FORMAT = Format("markdown", "md", render=render)
