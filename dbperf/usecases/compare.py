"""The same target(s) from two runs side by side (dbperf/stats/compare.py pairs them; compare_view.py shows them)."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

from dbperf.errors import UserError
from dbperf.report.compare_view import compare_view
from dbperf.report.model import View
from dbperf.report.outgoing import skipped_lines_note
from dbperf.stats.compare import Side, own_contradictions, pair_matrices, side_labels
from dbperf.storage.results import SkippedLine, read_results
from dbperf.usecases.report import check_aggregate, check_format, no_results


def compare(dir_a: Path, dir_b: Path, targets: list[str] | None, fmt: str, aggregate: str | None) -> View:
    """Two results directories paired target by target, with the same verdict rules as one run. The lines of
    either results.jsonl that were skipped are said after the view as `dbperf report` says them (and in JSON as
    `skipped_lines`, per side): a comparison drops nothing without a word."""
    check_format(fmt)
    check_aggregate(aggregate)
    label_a, label_b = side_labels(dir_a, dir_b)
    (a, skipped_a), (b, skipped_b) = _side(dir_a, label_a), _side(dir_b, label_b)
    pairs = pair_matrices(a, b, targets, aggregate)
    clashes = own_contradictions(a, b, [p.target for p in pairs])
    view = compare_view(a, b, pairs, {"a": [asdict(s) for s in skipped_a], "b": [asdict(s) for s in skipped_b]},
                        clashes)
    notes = (skipped_lines_note(dir_a, skipped_a), skipped_lines_note(dir_b, skipped_b))
    return replace(view, stderr_after=tuple(note for note in notes if note))


def _side(directory: Path, label: str) -> tuple[Side, list[SkippedLine]]:
    """One run of the comparison and the lines of its results.jsonl that were skipped (stats.compare.load_side
    drops them). A run with no results is refused as `dbperf report` refuses one, whatever its status: every cell
    would be "not in" it, a comparison that says nothing."""
    meta, records, skipped = read_results(directory)
    if not records:
        raise UserError(no_results(directory, meta, skipped, "compare"))
    return Side(label, directory, meta, records), skipped
