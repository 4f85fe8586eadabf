"""The run report as a View: the layout's Report (matrix_layout.py: the rQPS matrix, each target's figures, the
notes) in sections, drawn by the formats like any view (report/formats/: the terminal at a glance unless `--verbose`,
Markdown), plus its document (JSON) and rows (CSV) from one field list (run_document.py), and for HTML its page
with charts (html.py's ChartPage, drawn by the HTML format). A fleet run: one run report per host, each a part
under the host's heading."""

from __future__ import annotations

from typing import Any

from dbperf.report.html import hosts_page, run_page
from dbperf.report.matrix_layout import build_report
from dbperf.report.model import Report, Section, View
from dbperf.report.run_document import CSV_COLUMNS, run_document, run_rows
from dbperf.run_meta import RunMeta
from dbperf.stats.rqps_matrix import Matrix


def report_sections(report: Report) -> tuple[Section, ...]:
    """The heading as the matrix's caption, the legend (wrapped on the terminal, a code block in Markdown), the
    matrix, what it found and how to read it; each target's figures (folded in Markdown); the notes; the warning of
    a partial run."""
    rqps, *rest = report.blocks
    return (Section(title=report.heading, rank="caption", lines=report.legend, wrap=True, block=rqps),
            Section(text=report.findings, notes=report.matrix_notes, wrap=True),
            *[Section(title=b.title, subtitle=b.subtitle, block=b, collapsed=True) for b in rest],
            *([Section(notes=report.notes, apart=True)] if report.notes else []),
            *([Section(warning=report.warning)] if report.warning else []))


def glance_sections(report: Report) -> tuple[Section, ...]:
    """At a glance: the same sections in another order, each target's figures and the notes first, then the warning
    of a partial run, and last the verdict table with its legend and what it found, so that the verdicts are what a
    terminal shows when a run ends; nothing the full order shows is left out."""
    rqps, *rest = report.blocks
    return (*[Section(title=b.title, subtitle=b.subtitle, block=b, collapsed=True) for b in rest],
            *([Section(notes=report.notes, apart=True)] if report.notes else []),
            *([Section(warning=report.warning)] if report.warning else []),
            Section(title=report.heading, rank="caption", lines=report.legend, wrap=True, block=rqps),
            Section(text=report.findings, notes=report.matrix_notes, wrap=True))


def _glance(m: Matrix, meta: RunMeta, verbose: bool) -> tuple[Section, ...]:
    """The terminal's sections unless `verbose` (then it draws the full ones, as the documents do)."""
    return () if verbose else glance_sections(build_report(m, meta, verbose=False))


def run_view(m: Matrix, meta: RunMeta, skipped: list[dict[str, Any]] | None = None, verbose: bool = False) -> View:
    """`verbose`: the terminal draws every tier's column and the full legend (documents always do)."""
    return View("report", "", report_sections(build_report(m, meta)), glance=_glance(m, meta, verbose),
                document=run_document(m, meta, skipped), rows=run_rows(m), columns=CSV_COLUMNS,
                page=lambda: run_page(m, meta))


def hosts_view(meta: RunMeta, hosts: list[tuple[str, str, Matrix, RunMeta]],
               skipped: list[dict[str, Any]], verbose: bool = False) -> View:
    """`hosts`: per host its name, heading, matrix and meta as if it had run alone (hosts.host_view)."""
    def part(heading: str, sections: tuple[Section, ...]) -> list[Section]:
        return [Section(title=heading, rank="part"), *sections]

    sections = [s for _, heading, m, view in hosts for s in part(heading, report_sections(build_report(m, view)))]
    glance = [] if verbose else [s for _, heading, m, view in hosts for s in part(heading, _glance(m, view, False))]
    document = {"hosts": [{"host": host, **run_document(m, view)} for host, _, m, view in hosts],
                "skipped_lines": skipped}
    return View("report", "", tuple(sections), glance=tuple(glance), document=document,
                rows=tuple({"host": host, **row} for host, _, m, _ in hosts for row in run_rows(m)),
                columns=("host", *CSV_COLUMNS),
                page=lambda: hosts_page([(heading, m, view) for _, heading, m, view in hosts], meta))
