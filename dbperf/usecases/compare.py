"""The same target(s) from two runs side by side (dbperf/stats/compare.py pairs them; compare_view.py shows them)."""

from __future__ import annotations

from pathlib import Path

from dbperf.report.compare_view import compare_view
from dbperf.report.model import View
from dbperf.stats.compare import load_side, pair_matrices, side_labels
from dbperf.usecases.report import check_aggregate, check_format


def compare(dir_a: Path, dir_b: Path, targets: list[str] | None, fmt: str, aggregate: str | None) -> View:
    """Two results directories paired target by target, with the same verdict rules as one run."""
    check_format(fmt)
    check_aggregate(aggregate)
    label_a, label_b = side_labels(dir_a, dir_b)
    a, b = load_side(dir_a, label_a), load_side(dir_b, label_b)
    pairs = pair_matrices(a, b, targets, aggregate)
    return compare_view(a, b, pairs)
