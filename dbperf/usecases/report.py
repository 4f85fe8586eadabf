"""Reporting a results directory: which view (the run's matrix, a fleet's per-host matrices, a replication lab's
figures, the resources, the interval lines, the tuning ladder) and which renderer for which format, decided here in
one place. The views themselves are dbperf/report/'s; the CLI only draws `ReportView.draw` on the terminal or writes
`ReportView.document(format)`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.keys import AGGREGATES
from dbperf.report.escape import md, term
from dbperf.report.hosts import csv_with_host, host_view, hosts_in, json_by_host
from dbperf.report.hosts import heading as host_heading
from dbperf.report.html import to_html, to_html_hosts
from dbperf.report.intervals_view import cell_lines, intervals_view, measured
from dbperf.report.ladder import ladder_view, render_ladder
from dbperf.report.load_view import cell_heading
from dbperf.report.render import render_table, to_csv, to_json, to_markdown
from dbperf.report.replication_html import replication_html
from dbperf.report.replication_view import (
    render_replication,
    replication_csv,
    replication_json,
    replication_markdown,
)
from dbperf.report.resources_view import render_resources, resources_view
from dbperf.report.resources_view import to_json as resources_json
from dbperf.report.view import render_view
from dbperf.run_meta import RunMeta, meta_dict
from dbperf.stats.ladder import ladder as ladder_steps
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import SkippedLine, read_results

FORMATS = ("table", "markdown", "csv", "json", "html")
VIEWS = ("run", "resources", "intervals", "ladder")


@dataclass
class ReportView:
    """A report ready to go out: `draw` puts it on a terminal; `document(fmt)` is it as Markdown, CSV, JSON or HTML;
    `stem` names its file when written into a directory."""
    stem: str
    draw: Callable[[Console], None]
    document: Callable[[str], str]
    notes: list[str] = field(default_factory=list)  # said on stderr before the report (a lab that died)
    directory: Path | None = None
    skipped: list[SkippedLine] = field(default_factory=list)  # lines of results.jsonl not used: said after it


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise UserError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")


def check_aggregate(aggregate: str | None) -> None:
    if aggregate is not None and aggregate not in AGGREGATES:
        raise UserError(f"--aggregate: expected one of {', '.join(AGGREGATES)}, got {aggregate!r}")


def skipped_note(view: ReportView) -> str | None:
    """Lines of results.jsonl that were not used are said, never dropped without a word (on stderr, so that
    markdown, CSV and JSON on stdout stay parseable; JSON also carries them as `skipped_lines`)."""
    skipped = view.skipped
    if not skipped or view.directory is None:
        return None
    where = ", ".join(f"line {s.line}: {s.reason}" for s in skipped[:5]) + (", ..." if len(skipped) > 5 else "")
    return f"dbperf: note: {view.directory / 'results.jsonl'}: {len(skipped)} line(s) skipped ({where})"


def report_view(directory: Path, view: str = "run", aggregate: str | None = None) -> ReportView:
    """The one dispatch from a results directory and a view name to the view's renderers."""
    meta, records, skipped = read_results(directory)
    if view == "resources":  # resources_view.py reads meta.json as a dict (meta_dict) until it reads RunMeta
        raw = meta_dict(meta)
        made = ReportView("resources", lambda c: render_resources(raw, records, c),
                          lambda f: resources_json(raw, records) if f == "json"
                          else render_view(resources_view(raw, records), f))
    elif view == "intervals":  # every measured cell's interval lines (sysbench --report-interval) in run order
        made = ReportView("intervals", lambda c: _draw_intervals(records, c),
                          lambda f: render_view(intervals_view(records), f))
    elif view == "ladder":
        made = _ladder(meta, records, aggregate)
    elif view == "run":
        # Built when first drawn or written, so that the status note below is said before a matrix that fails.
        built = cache(lambda: _run(meta, records, [asdict(s) for s in skipped], aggregate))
        made = ReportView("report", lambda c: built().draw(c), lambda f: built().document(f))
        if meta.status_note:  # the status read back (a lab that died): said on stderr too, as skipped lines are
            made.notes.append(f"dbperf: note: {directory}: {meta.status_note}")
    else:
        raise ValueError(f"no report view {view!r} (views: {', '.join(VIEWS)})")
    made.directory, made.skipped = directory, skipped
    return made


def _run(meta: RunMeta, records: list[Any], skipped: list[dict], aggregate: str | None) -> ReportView:
    if meta.replication:  # a replication lab's results (replication_view.py; HTML: replication_html.py)
        raw = meta_dict(meta)  # the replication views read meta.json as a dict until they read RunMeta
        replication = {"markdown": replication_markdown, "csv": replication_csv, "html": replication_html,
                       "json": lambda meta, records: replication_json(meta, records, skipped)}
        return ReportView("report", lambda c: render_replication(raw, records, c),
                          lambda f: replication[f](raw, records))
    if hosts_in(records):
        return _hosts(meta, records, skipped, aggregate)
    matrix = build_matrix(meta, records, aggregate)
    run = {"markdown": to_markdown, "csv": to_csv, "html": to_html,
           "json": lambda m, meta: to_json(m, meta, skipped=skipped)}
    return ReportView("report", lambda c: render_table(matrix, meta, c), lambda f: run[f](matrix, meta))


def _host_banner(meta: RunMeta, host: str, console: Console) -> None:
    console.print(f"\n[bold reverse] {term(host_heading(meta, host))} [/bold reverse]")


def _hosts(meta: RunMeta, records: list[Any], skipped: list[dict], aggregate: str | None) -> ReportView:
    """A fleet run: one report per host (dbperf/report/hosts.py)."""
    views = [(host, view, build_matrix(view, mine, aggregate))
             for host in hosts_in(records, meta) for view, mine in [host_view(meta, records, host)]]

    def draw(console: Console) -> None:
        for host, view, matrix in views:
            _host_banner(meta, host, console)
            render_table(matrix, view, console)

    def document(f: str) -> str:
        if f == "html":
            return to_html_hosts([(host_heading(meta, host), matrix, view) for host, view, matrix in views], meta)
        if f == "json":
            return json_by_host([(host, to_json(matrix, view)) for host, view, matrix in views], skipped)
        if f == "csv":
            return csv_with_host([(host, to_csv(matrix, view)) for host, view, matrix in views])
        return "".join(f"## {md(host_heading(meta, host))}\n\n" + to_markdown(matrix, view) + "\n"
                       for host, view, matrix in views)

    return ReportView("report", draw, document)


def _draw_intervals(records: list[Any], console: Console) -> None:
    for record in measured(records):
        console.print(cell_heading(record), markup=False, highlight=False)
        for line in cell_lines(record):
            console.print(line, markup=False, highlight=False, soft_wrap=True)


def _ladder(meta: RunMeta, records: list[Any], aggregate: str | None) -> ReportView:
    ladders: list[tuple[str | None, list[Any]]] = [  # a fleet run: a ladder per host
        (host, ladder_steps(build_matrix(view, mine, aggregate)))
        for host in hosts_in(records, meta) for view, mine in [host_view(meta, records, host)]]
    if not hosts_in(records):
        ladders.append((None, ladder_steps(build_matrix(meta, records, aggregate))))

    def draw(console: Console) -> None:
        for host, steps in ladders:
            if host is not None:
                _host_banner(meta, host, console)
            render_ladder(steps, console)

    return ReportView("ladder", draw, lambda f: render_view(ladder_view(ladders), f))


def draw_report(view: ReportView, out: Console, err: Console) -> None:
    """A report on the terminal with its notes on stderr, as after a run."""
    for note in view.notes:
        err.print(note, markup=False, highlight=False)
    view.draw(out)
    skipped = skipped_note(view)
    if skipped:
        err.print(skipped, markup=False, highlight=False)
