"""The one self-contained HTML page every HTML view is drawn on: styles, escaped text, Plotly figures as JSON.

Plotly's JavaScript (plotly_bundle.py: npm's cartesian bundle, else the `plotly` Python package's full one) is
embedded in the page, gzip-compressed and base64-encoded (the cartesian bundle: about 0.6 MB so), and unpacked in
the browser with the standard DecompressionStream: the file needs no network and stays small. Views give figures
as plain dicts (`{"data": [...], "layout": {...}}`), which the page draws with Plotly.newPlot; `data-charts` on
<body> says `rendered` when every figure was drawn, or the error when one was not, so a browser test can read it.

Escaping: text of the page goes through `text()` (html.escape); strings inside figures through `label()`, since
Plotly reads a subset of HTML in labels and turns `&lt;` back into `<` when it draws; the figures' JSON sits in a
<script type="application/json"> with `<`, `>` and `&` written as \\u escapes, so no string can close it.
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import json
from collections.abc import Iterable
from typing import Any

from dbperf.report.plotly_bundle import bundle

Figure = dict[str, Any]

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em; color: #222; max-width: 1400px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1em; margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.85em; }
th, td { padding: 2px 8px; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
th { background: #f6f6f6; } td.text, th.text { text-align: left; }
tr.group td { font-weight: bold; color: #666; text-align: left; background: #fafafa; }
td.failed { color: #b00; text-align: left; white-space: normal; }
.note { color: #555; font-size: 0.85em; max-width: 100ch; }
.warning { color: #a60; font-weight: bold; }
.chart { width: 100%; min-height: 300px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(440px, 1fr)); gap: 0.5em; }
.swatch { display: inline-block; width: 1em; height: 1em; border: 1px solid #999; vertical-align: middle; }
nav a { margin-right: 1em; }
ul.legend { font-size: 0.85em; color: #333; max-width: 110ch; padding-left: 1.2em; }
ul.legend li { margin: 0.15em 0; }
pre { overflow-x: auto; }
#dbperf-status { color: #b00; }
"""

BOOT = """
(async () => {
  const status = document.getElementById('dbperf-status');
  try {
    const b64 = document.getElementById('dbperf-plotly').textContent.trim();
    const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    const code = await new Response(stream).text();
    const s = document.createElement('script');
    s.textContent = code;
    document.head.appendChild(s);
    const figures = JSON.parse(document.getElementById('dbperf-figures').textContent);
    for (const [id, fig] of Object.entries(figures)) {
      await Plotly.newPlot(id, fig.data, fig.layout, {responsive: true, displaylogo: false});
    }
    document.body.dataset.charts = 'rendered';
  } catch (e) {
    document.body.dataset.charts = 'error: ' + e;
    status.textContent = 'The charts could not be drawn (' + e + '); the tables hold every figure.';
  }
})();
"""


def text(value: object) -> str:
    """Any user or engine string as HTML text."""
    return html.escape(str(value), quote=True)


def label(value: object) -> str:
    """A string shown inside a Plotly figure (names, ticks, hover text): Plotly reads a subset of HTML there."""
    return html.escape(str(value), quote=False)


@functools.cache
def plotly_payload() -> tuple[str, str]:
    """(what the page says of its plotly.js, the JavaScript gzip-compressed and base64-encoded)."""
    chosen = bundle()
    return chosen.said, base64.b64encode(gzip.compress(chosen.js, compresslevel=9, mtime=0)).decode("ascii")


def _script_json(obj: Any) -> str:
    raw = json.dumps(obj, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return (raw.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


class Page:
    """Sections of HTML (already escaped) and the figures they hold, rendered into one document."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.parts: list[str] = []
        self.figures: dict[str, Figure] = {}
        self.nav: list[tuple[str, str]] = []

    def section(self, anchor: str, heading: str) -> None:
        self.nav.append((anchor, heading))
        self.parts.append(f'<h2 id="{text(anchor)}">{text(heading)}</h2>')

    def subsection(self, anchor: str, heading: str) -> None:
        """A heading under the last section, not listed in the page's navigation."""
        self.parts.append(f'<h3 id="{text(anchor)}">{text(heading)}</h3>')

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)

    def figure(self, fig: Figure, css_class: str = "chart") -> str:
        """Registers a figure; returns its placeholder <div>."""
        fid = f"fig{len(self.figures) + 1}"
        self.figures[fid] = fig
        return f'<div class="{css_class}" id="{fid}" data-figure="1"></div>'

    def render(self) -> str:
        said, payload = plotly_payload()
        nav = " ".join(f'<a href="#{text(a)}">{text(h)}</a>' for a, h in self.nav)
        return "\n".join([
            "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{text(self.title)}</title><style>{STYLE}</style></head>",
            '<body data-charts="pending">', f"<h1>{text(self.title)}</h1>",
            f'<p id="dbperf-status"></p><nav>{nav}</nav>', *self.parts,
            f'<p class="note">Charts drawn by {text(said)}, embedded in this file (no network).</p>',
            f'<script id="dbperf-figures" type="application/json">{_script_json(self.figures)}</script>',
            f'<script id="dbperf-plotly" type="application/octet-stream">{payload}</script>',
            f"<script>{BOOT}</script>", "</body></html>", ""])


def table(header: Iterable[object], rows: Iterable[Iterable[object]], text_columns: int = 1) -> str:
    """A plain table; every value escaped."""
    head = "".join(f'<th class="{"text" if i < text_columns else ""}">{text(h)}</th>' for i, h in enumerate(header))
    body = []
    for row in rows:
        body.append("<tr>" + "".join(f'<td class="{"text" if i < text_columns else ""}">{text(v)}</td>'
                                     for i, v in enumerate(row)) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def plain(value: object) -> str:
    """A metadata value as one cell's text: `-` for none, JSON for a table or a list."""
    if value is None:
        return "-"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def legend_swatches(colours: dict[str, str], meanings: dict[str, str]) -> str:
    items = [f'<span class="swatch" style="background:{c}"></span> {text(k)}: {text(meanings.get(k, ""))}'
             for k, c in colours.items()]
    return '<p class="note">' + "<br>".join(items) + "</p>"
