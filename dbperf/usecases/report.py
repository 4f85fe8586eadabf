"""Reporting a results directory: which view (the run's matrix, a fleet's per-host matrices, a replication lab's
figures, the resources, the interval lines, the tuning ladder), decided here in one place: VIEWS, one table of view
builders by name. The views are dbperf/report/'s and return a View; this use case returns it as a ReportView
(report/outgoing.py) and prints nothing: the CLI sends it out through the format registry (cli/common.show)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

from dbperf.errors import UserError
from dbperf.experiment.keys import AGGREGATES
from dbperf.report import formats
from dbperf.report.hosts import heading as host_heading
from dbperf.report.hosts import host_view, hosts_in
from dbperf.report.intervals_view import intervals_view
from dbperf.report.ladder import ladder_view
from dbperf.report.model import View
from dbperf.report.outgoing import ReportView, which_lines
from dbperf.report.replication_report import replication_view
from dbperf.report.resources_view import resources_view
from dbperf.report.run_view import hosts_view, run_view
from dbperf.run_meta import DIED, RunMeta
from dbperf.stats.ladder import ladder as ladder_steps
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import SkippedLine, read_results, results_path


def check_format(fmt: str) -> None:
    """The format registry's one line for a name it does not know (report/formats/)."""
    formats.format_named(fmt)


def check_aggregate(aggregate: str | None) -> None:
    if aggregate is not None and aggregate not in AGGREGATES:
        raise UserError(f"--aggregate: expected one of {', '.join(AGGREGATES)}, got {aggregate!r}")


def no_results(directory: Path, meta: RunMeta, skipped: list[SkippedLine], to: str = "report") -> str:
    """Why a run has nothing to report (or `to` compare), in one line: its results file missing, empty, or every
    line skipped, and what the run's status says of that (still running, killed or interrupted before its first
    cell)."""
    path = results_path(directory)
    if skipped:
        what = f"none of its {len(skipped)} line(s) can be used ({which_lines(skipped)})"
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


@dataclass(frozen=True)
class RunRead:
    """A results directory as read for its report, and the report's options: what every view builder is given."""
    meta: RunMeta
    records: list[Any]
    skipped: list[dict[str, Any]]  # the lines of results.jsonl not used, as the JSON report carries them
    aggregate: str | None
    verbose: bool


@dataclass(frozen=True)
class ViewBuilder:
    build: Callable[[RunRead], View]
    says_status: bool = False  # a status read back (a lab that died) is said on stderr before the view too


def report_view(directory: Path, view: str = "run", aggregate: str | None = None,
                verbose: bool = False) -> ReportView:
    """The one dispatch from a results directory and a view name to the view (VIEWS; a View, drawn by the formats).
    A run with nothing to report says so in one line: a note before its report when its status explains it (still
    running, interrupted, failed, died: the report says which, in JSON too), a UserError when the run says it is
    complete (its results are damaged, and an empty report would pass for a complete one). `verbose`: the run
    report on the terminal shows every tier's column and the full legend, not the glance."""
    meta, records, skipped = read_results(directory)
    empty = no_results(directory, meta, skipped) if not records else None
    if empty and meta.status == "complete":
        raise UserError(empty)
    builder = VIEWS.get(view)
    if builder is None:
        raise ValueError(f"no report view {view!r} (views: {', '.join(VIEWS)})")
    read = RunRead(meta, records, [asdict(s) for s in skipped], aggregate, verbose)
    made = ReportView(cache(partial(builder.build, read)), directory=directory, skipped=skipped)
    if builder.says_status and meta.status_note:  # the status read back (a lab that died): said on stderr too
        made.notes.append(f"dbperf: note: {directory}: {meta.status_note}")
    if empty:  # its skipped lines are in it: not said again after the view
        made.notes.append(f"dbperf: note: {empty}")
        made.skipped = []
    return made


def _run(read: RunRead) -> View:
    meta, records, aggregate = read.meta, read.records, read.aggregate
    if meta.replication:  # a replication lab's results (replication_report.py)
        return replication_view(meta, records, read.skipped)
    if hosts_in(records):  # a fleet run: one report per host (report/hosts.py)
        return hosts_view(meta, [(host, host_heading(meta, host), build_matrix(view, mine, aggregate), view)
                                 for host in hosts_in(records, meta)
                                 for view, mine in [host_view(meta, records, host)]], read.skipped, read.verbose)
    return run_view(build_matrix(meta, records, aggregate), meta, read.skipped, read.verbose)


def _ladder(read: RunRead) -> View:
    meta, records, aggregate = read.meta, read.records, read.aggregate
    ladders: list[tuple[str | None, list[Any]]] = [  # a fleet run: a ladder per host
        (host, ladder_steps(build_matrix(view, mine, aggregate)))
        for host in hosts_in(records, meta) for view, mine in [host_view(meta, records, host)]]
    if not hosts_in(records):
        ladders.append((None, ladder_steps(build_matrix(meta, records, aggregate))))
    return ladder_view(ladders)


# Every view `dbperf report` draws, by the name the CLI gives it (`--resources`, `--intervals`, `--ladder`, else
# the run's), in the order messages list them.
VIEWS: dict[str, ViewBuilder] = {
    "run": ViewBuilder(_run, says_status=True),
    "resources": ViewBuilder(lambda read: resources_view(read.meta, read.records)),
    # every measured cell's interval lines (sysbench --report-interval) in run order
    "intervals": ViewBuilder(lambda read: intervals_view(read.records)),
    "ladder": ViewBuilder(_ladder),
}
