"""HTML: a plain self-contained page, no script, every name escaped (html_page.text). Views with charts (the run
report, a series, a comparison, the replication lab) render their own page (`View.own["html"]`) on html_page.Page."""

from __future__ import annotations

from dbperf.report.formats.format import Format
from dbperf.report.html_page import STYLE, text
from dbperf.report.model import Block, View


def block_html(block: Block) -> str:
    width = len(block.header)
    head = "".join(f'<th class="{"text" if block.is_text(i) else ""}">{text(h)}</th>'
                   for i, h in enumerate(block.header))
    rows = []
    for row in block.rows:
        if row.group:
            rows.append(f'<tr class="group"><td colspan="{width}">{text(row.cells[0])}</td></tr>')
        elif row.failed is not None:
            cells = "".join(f'<td class="text">{text(c)}</td>' for c in row.cells)
            rows.append(f'<tr>{cells}<td class="failed" colspan="{max(1, width - len(row.cells))}">failed: '
                        f"{text(row.failed)}</td></tr>")
        else:
            rows.append("<tr>" + "".join(f'<td class="{"text" if block.is_text(i) else ""}">{text(c)}</td>'
                                         for i, c in enumerate(row.cells)) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _notes(notes: tuple[str, ...]) -> list[str]:
    return [f'<p class="note">{text(n)}</p>'.replace("\n", "<br>") for n in notes]


def render(view: View) -> str:
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{text(view.title or view.name)}</title><style>{STYLE}</style></head><body>",
             f"<h1>{text(view.title or view.name)}</h1>"]
    if view.subtitle:
        parts.append(f'<p class="note">{text(view.subtitle)}</p>')
    if view.warning:
        parts.append(f'<p class="warning">{text(view.warning)}</p>')
    for s in view.sections:
        if s.title:
            parts.append(f"<h2>{text(s.title)}</h2>" + (f'<p class="note">{text(s.subtitle)}</p>' if s.subtitle
                                                         else ""))
        if s.warning:
            parts.append(f'<p class="warning">{text(s.warning)}</p>')
        parts += [f"<p>{text(t)}</p>" for t in s.text]
        if s.lines:
            parts.append("<pre>" + "\n".join(text(line) for line in s.lines) + "</pre>")
        if s.block is not None:
            parts.append(block_html(s.block))
        parts += _notes(s.notes)
    parts += _notes(view.notes)
    parts += ["</body></html>", ""]
    return "\n".join(parts)


FORMAT = Format("html", "html", render=render)
