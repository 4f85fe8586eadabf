"""The run report as a View: the layout's Report (layout.py: the rQPS matrix, each target's figures, the notes) in
sections, so that any format draws it; the formats the run report has always had keep their renderers (render.py:
terminal, Markdown, CSV, JSON; html.py: the page with charts) as the view's own. A fleet run: one run report per
host, under the host's heading."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from dbperf.report.escape import md, term
from dbperf.report.hosts import csv_with_host, json_by_host
from dbperf.report.html import to_html, to_html_hosts
from dbperf.report.layout import build_report
from dbperf.report.model import Section, View
from dbperf.report.render import render_table, to_csv, to_json, to_markdown
from dbperf.run_meta import RunMeta
from dbperf.stats.rqps_matrix import Matrix


def _sections(m: Matrix, meta: RunMeta) -> tuple[tuple[Section, ...], tuple[str, ...], str | None, str]:
    report = build_report(m, meta)  # the full layout: a document carries every tier
    rqps, *rest = report.blocks
    sections = (Section(lines=report.legend, block=rqps, notes=(*report.findings, *report.matrix_notes)),
                *[Section(title=b.title, subtitle=b.subtitle, block=b, collapsed=True) for b in rest])
    return sections, report.notes, report.warning, report.heading


def run_view(m: Matrix, meta: RunMeta, skipped: list[dict[str, Any]] | None = None, verbose: bool = False) -> View:
    """`verbose`: the terminal draws every tier's column and the full legend (documents always do)."""
    sections, notes, warning, heading = _sections(m, meta)
    return View("report", heading, sections, notes=notes, warning=warning,
                own={"markdown": lambda: to_markdown(m, meta), "csv": lambda: to_csv(m, meta),
                     "json": lambda: to_json(m, meta, skipped=skipped), "html": lambda: to_html(m, meta)},
                draw=lambda console: render_table(m, meta, console, verbose))


def hosts_view(meta: RunMeta, hosts: list[tuple[str, str, Matrix, RunMeta]],
               skipped: list[dict[str, Any]], verbose: bool = False) -> View:
    """`hosts`: per host its name, heading, matrix and meta as if it had run alone (hosts.host_view)."""
    sections: list[Section] = []
    for _, heading, m, view in hosts:
        mine, notes, warning, title = _sections(m, view)
        sections += [Section(title=heading, subtitle=title), *mine,
                     *([Section(notes=(*notes, *([warning] if warning else [])))] if notes or warning else [])]

    def draw(console: Console) -> None:
        for _, heading, m, view in hosts:
            console.print(f"\n[bold reverse] {term(heading)} [/bold reverse]")
            render_table(m, view, console, verbose)

    return View("report", f"{meta.experiment or 'fleet run'} on {len(hosts)} hosts", tuple(sections),
                draw=draw, own={
                    "html": lambda: to_html_hosts([(heading, m, view) for _, heading, m, view in hosts], meta),
                    "json": lambda: json_by_host([(host, to_json(m, view)) for host, _, m, view in hosts], skipped),
                    "csv": lambda: csv_with_host([(host, to_csv(m, view)) for host, _, m, view in hosts]),
                    "markdown": lambda: "".join(f"## {md(heading)}\n\n" + to_markdown(m, view) + "\n"
                                                for _, heading, m, view in hosts)})
