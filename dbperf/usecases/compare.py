"""The same target(s) from two runs side by side (dbperf/stats/compare.py pairs them; compare_view.py shows them),
and the history's series and regressions as report views."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from dbperf.history.series import Series
from dbperf.report.compare_view import compare_csv, compare_html, compare_json, compare_markdown, compare_table
from dbperf.report.series_view import (
    regressions_render,
    series_csv,
    series_html,
    series_json,
    series_markdown,
    series_table,
)
from dbperf.stats.compare import load_side, pair_matrices, side_labels
from dbperf.usecases.report import ReportView, check_aggregate, check_format


def compare(dir_a: Path, dir_b: Path, targets: list[str] | None, fmt: str, aggregate: str | None) -> ReportView:
    """Two results directories paired target by target, with the same verdict rules as one run."""
    check_format(fmt)
    check_aggregate(aggregate)
    label_a, label_b = side_labels(dir_a, dir_b)
    a, b = load_side(dir_a, label_a), load_side(dir_b, label_b)
    pairs = pair_matrices(a, b, targets, aggregate)
    render = {"markdown": compare_markdown, "csv": compare_csv, "json": compare_json, "html": compare_html}
    return ReportView("compare", lambda c: compare_table(a, b, pairs, c), lambda f: render[f](a, b, pairs))


def series_report(s: Series) -> ReportView:
    render = {"markdown": series_markdown, "csv": series_csv, "json": series_json, "html": series_html}
    return ReportView("series", lambda c: series_table(s, c), lambda f: render[f](s))


def regressions_report(s: Series, show_all: bool) -> ReportView:
    # The documents are returned, never printed: their console is a sink.
    def draw(console: Console) -> None:
        regressions_render(s, "table", console, show_all)

    return ReportView("regressions", draw,
                      lambda f: regressions_render(s, f, Console(file=io.StringIO()), show_all) or "")
