"""Reporting a results directory: which view (the run's matrix, a fleet's per-host matrices, a replication lab's
figures, the resources, the interval lines, the tuning ladder), decided here in one place. The views are
dbperf/report/'s and return a View; the format registry (dbperf/report/formats/) draws it, called once by the CLI
(cli/common.show)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.keys import AGGREGATES
from dbperf.report import formats
from dbperf.report.hosts import heading as host_heading
from dbperf.report.hosts import host_view, hosts_in
from dbperf.report.intervals_view import intervals_view
from dbperf.report.ladder import ladder_view
from dbperf.report.model import View
from dbperf.report.replication_report import replication_view
from dbperf.report.resources_view import resources_view
from dbperf.report.run_view import hosts_view, run_view
from dbperf.run_meta import RunMeta
from dbperf.stats.ladder import ladder as ladder_steps
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import SkippedLine, read_results, results_path

VIEWS = ("run", "resources", "intervals", "ladder")


@dataclass
class ReportView:
    """A view on its way out: `view()` builds it (when first drawn or written, so that notes are said before a view
    that fails), `notes` are said on stderr before it (a lab that died), `skipped` after it."""
    view: Callable[[], View]
    notes: list[str] = field(default_factory=list)
    directory: Path | None = None
    skipped: list[SkippedLine] = field(default_factory=list)  # lines of results.jsonl not used: said after it


def ready(view: View) -> ReportView:
    return ReportView(lambda: view)


def check_format(fmt: str) -> None:
    """The format registry's one line for a name it does not know (report/formats/)."""
    formats.format_named(fmt)


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
    return f"dbperf: note: {results_path(view.directory)}: {len(skipped)} line(s) skipped ({where})"


def report_view(directory: Path, view: str = "run", aggregate: str | None = None) -> ReportView:
    """The one dispatch from a results directory and a view name to the view (a View, drawn by the formats)."""
    meta, records, skipped = read_results(directory)
    skipped_json = [asdict(s) for s in skipped]
    build: Callable[[], View]
    if view == "resources":
        build = partial(resources_view, meta, records)
    elif view == "intervals":  # every measured cell's interval lines (sysbench --report-interval) in run order
        build = partial(intervals_view, records)
    elif view == "ladder":
        build = partial(_ladder, meta, records, aggregate)
    elif view == "run":
        build = partial(_run, meta, records, skipped_json, aggregate)
    else:
        raise ValueError(f"no report view {view!r} (views: {', '.join(VIEWS)})")
    made = ReportView(cache(build), directory=directory, skipped=skipped)
    if view == "run" and meta.status_note:  # the status read back (a lab that died): said on stderr too
        made.notes.append(f"dbperf: note: {directory}: {meta.status_note}")
    return made


def _run(meta: RunMeta, records: list[Any], skipped: list[dict], aggregate: str | None) -> View:
    if meta.replication:  # a replication lab's results (replication_report.py)
        return replication_view(meta, records, skipped)
    if hosts_in(records):  # a fleet run: one report per host (report/hosts.py)
        return hosts_view(meta, [(host, host_heading(meta, host), build_matrix(view, mine, aggregate), view)
                                 for host in hosts_in(records, meta)
                                 for view, mine in [host_view(meta, records, host)]], skipped)
    return run_view(build_matrix(meta, records, aggregate), meta, skipped)


def _ladder(meta: RunMeta, records: list[Any], aggregate: str | None) -> View:
    ladders: list[tuple[str | None, list[Any]]] = [  # a fleet run: a ladder per host
        (host, ladder_steps(build_matrix(view, mine, aggregate)))
        for host in hosts_in(records, meta) for view, mine in [host_view(meta, records, host)]]
    if not hosts_in(records):
        ladders.append((None, ladder_steps(build_matrix(meta, records, aggregate))))
    return ladder_view(ladders)


def draw_report(view: ReportView, out: Console, err: Console) -> None:
    """A report on the terminal with its notes on stderr, as after a run."""
    for note in view.notes:
        err.print(note, markup=False, highlight=False)
    formats.draw(view.view(), out)
    skipped = skipped_note(view)
    if skipped:
        err.print(skipped, markup=False, highlight=False)
