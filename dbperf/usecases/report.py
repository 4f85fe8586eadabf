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
from dbperf.run_meta import DIED, RunMeta
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
    after: list[str] = field(default_factory=list)  # more notes said after it (a comparison's runs' skipped lines)


def ready(view: View) -> ReportView:
    """A view built already; the notes it carries for stderr (View.stderr_after) are said after it."""
    return ReportView(lambda: view, after=list(view.stderr_after))


def check_format(fmt: str) -> None:
    """The format registry's one line for a name it does not know (report/formats/)."""
    formats.format_named(fmt)


def check_aggregate(aggregate: str | None) -> None:
    if aggregate is not None and aggregate not in AGGREGATES:
        raise UserError(f"--aggregate: expected one of {', '.join(AGGREGATES)}, got {aggregate!r}")


def skipped_note(view: ReportView) -> str | None:
    """Lines of results.jsonl that were not used are said, never dropped without a word (on stderr, so that
    markdown, CSV and JSON on stdout stay parseable; JSON also carries them as `skipped_lines`): one line per
    results file, the report's and each compared run's in the same words."""
    lines = [*([skipped_lines_note(view.directory, view.skipped)] if view.directory is not None else []),
             *view.after]
    said = "\n".join(line for line in lines if line)
    return said or None


def skipped_lines_note(directory: Path, skipped: list[SkippedLine]) -> str | None:
    """The note for the lines of one results directory's results.jsonl that were skipped, or None."""
    if not skipped:
        return None
    return f"dbperf: note: {results_path(directory)}: {len(skipped)} line(s) skipped ({_which(skipped)})"


def _which(skipped: list[SkippedLine]) -> str:
    return ", ".join(f"line {s.line}: {s.reason}" for s in skipped[:5]) + (", ..." if len(skipped) > 5 else "")


def no_results(directory: Path, meta: RunMeta, skipped: list[SkippedLine], to: str = "report") -> str:
    """Why a run has nothing to report (or `to` compare), in one line: its results file missing, empty, or every
    line skipped, and what the run's status says of that (still running, killed or interrupted before its first
    cell)."""
    path = results_path(directory)
    if skipped:
        what = f"none of its {len(skipped)} line(s) can be used ({_which(skipped)})"
    else:
        what = "the file is empty" if path.is_file() else "the file is missing"
    if meta.status == DIED:
        status = "the lab died before it wrote a result"
    elif meta.status == "running":
        status = "the run goes on and has measured nothing yet"
    elif meta.status == "complete":
        status = "yet meta.json says the run is complete (its results were lost, moved or emptied)"
    else:
        status = f"the run's status: {meta.status or 'not said'}"
    return f"{path}: no results to {to}: {what}; {status}"


def report_view(directory: Path, view: str = "run", aggregate: str | None = None,
                verbose: bool = False) -> ReportView:
    """The one dispatch from a results directory and a view name to the view (a View, drawn by the formats).
    A run with nothing to report says so in one line: a note before its report when its status explains it (still
    running, interrupted, failed, died: the report says which, in JSON too), a UserError when the run says it is
    complete (its results are damaged, and an empty report would pass for a complete one). `verbose`: the run
    report on the terminal shows every tier's column and the full legend, not the glance."""
    meta, records, skipped = read_results(directory)
    empty = no_results(directory, meta, skipped) if not records else None
    if empty and meta.status == "complete":
        raise UserError(empty)
    skipped_json = [asdict(s) for s in skipped]
    build: Callable[[], View]
    if view == "resources":
        build = partial(resources_view, meta, records)
    elif view == "intervals":  # every measured cell's interval lines (sysbench --report-interval) in run order
        build = partial(intervals_view, records)
    elif view == "ladder":
        build = partial(_ladder, meta, records, aggregate)
    elif view == "run":
        build = partial(_run, meta, records, skipped_json, aggregate, verbose)
    else:
        raise ValueError(f"no report view {view!r} (views: {', '.join(VIEWS)})")
    made = ReportView(cache(build), directory=directory, skipped=skipped)
    if view == "run" and meta.status_note:  # the status read back (a lab that died): said on stderr too
        made.notes.append(f"dbperf: note: {directory}: {meta.status_note}")
    if empty:  # its skipped lines are in it: not said again after the view
        made.notes.append(f"dbperf: note: {empty}")
        made.skipped = []
    return made


def _run(meta: RunMeta, records: list[Any], skipped: list[dict], aggregate: str | None, verbose: bool) -> View:
    if meta.replication:  # a replication lab's results (replication_report.py)
        return replication_view(meta, records, skipped)
    if hosts_in(records):  # a fleet run: one report per host (report/hosts.py)
        return hosts_view(meta, [(host, host_heading(meta, host), build_matrix(view, mine, aggregate), view)
                                 for host in hosts_in(records, meta)
                                 for view, mine in [host_view(meta, records, host)]], skipped, verbose)
    return run_view(build_matrix(meta, records, aggregate), meta, skipped, verbose)


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
