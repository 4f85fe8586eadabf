"""The same target(s) from two runs side by side (dbperf/stats/compare.py pairs them; compare_view.py shows them)."""

from __future__ import annotations

from pathlib import Path

from dbperf.report.compare_view import compare_csv, compare_html, compare_json, compare_markdown, compare_table
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
