"""A matrix cell in words, shared by the full layout (matrix_layout.py) and the one-cell-per-target glance
(glance_view.py): its row label, the marks beside its rQPS and a metric's verdict as the matrix shows it."""

from __future__ import annotations

from collections.abc import Callable

from dbperf.report.model import Row
from dbperf.report.steady_view import MARK as UNSETTLED_MARK
from dbperf.report.steady_view import unsettled_runs
from dbperf.stats.rqps_matrix import Cell, Matrix
from dbperf.stats.verdict import CellVerdict

NOISY_MARK, TRAINED_MARK, INTERFERED_MARK = "!", "T", "h"


def row_label(m: Matrix, benchmark: str, threads: int) -> str:
    return benchmark if len(m.threads) == 1 else f"{benchmark} t={threads}"


def matrix_rows(m: Matrix, columns: Callable[[str, Cell | None], list[str]]) -> tuple[Row, ...]:
    """The rQPS matrix's rows in report order: a heading row before each group (point, range, write), then a row per
    benchmark and thread count holding `columns(target, cell)` of each target in turn."""
    rows: list[Row] = []
    current = None
    for group, benchmark, threads in m.rows():
        if group != current:
            rows.append(Row((group,), group=True))
            current = group
        rows.append(Row((row_label(m, benchmark, threads),
                         *[text for t in m.targets for text in columns(t, m.cell(t, benchmark, threads))])))
    return tuple(rows)


def interfered_runs(cell: Cell) -> int:
    """Repeats whose noise sensors saw heavy interference (host/noise.py)."""
    return sum(1 for r in cell.runs if r.noise and r.noise.interfered)


def noisy(m: Matrix, cell: Cell) -> bool:
    base = m.cell(m.base, cell.benchmark, cell.threads)
    return bool((cell.qps and cell.qps.noisy) or (base and base.qps and base.qps.noisy))


def rqps_marks(m: Matrix, cell: Cell) -> str:
    """The measurement's marks: noisy, trained on this benchmark, interfered, warm-up never settled."""
    return "".join(mark for mark, present in (
        (NOISY_MARK, noisy(m, cell)), (TRAINED_MARK, m.was_trained_on(cell.target, cell.benchmark)),
        (INTERFERED_MARK, bool(interfered_runs(cell))), (UNSETTLED_MARK, bool(unsettled_runs(cell)))) if present)


def verdict_word(v: CellVerdict | None) -> str:
    """One metric's verdict (stats/verdict.py) as the matrix shows it: faster, slower, same, unstable; `?±x%` with
    what an undecided cell could hide (`?` alone: no bound yet); `·p` when ClickHouse's rule's paired view decided."""
    if v is None:
        return "?"
    if v.verdict == "undecided":
        mde = v.min_detectable_effect
        word = f"?±{mde:.1%}" if mde is not None else "?"
    else:
        word = v.verdict
    paired_randomization = v.rule == "randomization" and v.decided_by == "paired"
    return word + ("·p" if paired_randomization and v.verdict != "undecided" else "")
