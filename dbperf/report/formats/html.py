"""HTML: a plain self-contained page, no script, every name escaped (html_page.text); a view with charts (the run
report, a series, a comparison, the replication lab) gives a ChartPage (`View.page`), drawn here on html_page.Page
with Plotly embedded: its sections as every other format draws them, plus their figures and colour legends."""

from __future__ import annotations

from dbperf.report.formats.format import Format
from dbperf.report.html_page import STYLE, Page, legend_swatches, text
from dbperf.report.model import Block, ChartPage, Section, View


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


def _heading(page: Page, s: Section) -> None:
    """A section's title: a part or section with an anchor goes into the page's navigation (h2); a caption is an
    h3 (with its id when it has an anchor); any other title an h2 of its own."""
    if s.rank == "caption":
        if s.anchor:
            page.subsection(s.anchor, s.title)
        else:
            page.add(f"<h3>{text(s.title)}</h3>")
    elif s.anchor:
        page.section(s.anchor, s.title)
    else:
        page.add(f"<h2>{text(s.title)}</h2>")


def _lines(s: Section) -> str:
    """A section's lines: a legend read as prose (`wrap`) as a list in the page's font, wrapping at its width;
    lines shown as written (sysbench's interval lines) as preformatted text, scrolling when wider than the page."""
    if s.wrap:
        return '<ul class="legend">' + "".join(f"<li>{text(line)}</li>" for line in s.lines) + "</ul>"
    return "<pre>" + "\n".join(text(line) for line in s.lines) + "</pre>"


def chart_page(chart: ChartPage) -> str:
    """The page: each section's title, subtitle, warning, figures (side by side with `grid`), colour legend, lines,
    table, text and notes, in that order."""
    page = Page(chart.title)
    for s in chart.sections:
        if s.title:
            _heading(page, s)
        if s.subtitle:
            page.add(f'<p class="note">{text(s.subtitle)}</p>')
        if s.warning:
            page.add(f'<p class="warning">{text(s.warning)}</p>')
        figures = [page.figure(f) for f in s.figures]
        page.parts += [f'<div class="grid">{"".join(figures)}</div>'] if s.grid and figures else figures
        if s.swatches:
            page.add(legend_swatches({w.name: w.colour for w in s.swatches}, {w.name: w.meaning for w in s.swatches}))
        if s.lines:
            page.add(_lines(s))
        if s.block is not None:
            page.add(block_html(s.block))
        page.parts += [f"<p>{text(t)}</p>" for t in s.text]
        page.parts += _notes(s.notes)
    return page.render()


def render(view: View) -> str:
    if view.page is not None:
        return chart_page(view.page())
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
            parts.append(_lines(s))
        if s.block is not None:
            parts.append(block_html(s.block))
        parts += _notes(s.notes)
    parts += _notes(view.notes)
    parts += ["</body></html>", ""]
    return "\n".join(parts)


FORMAT = Format("html", "html", render=render)
