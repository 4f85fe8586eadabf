"""One word per cell against the base, for the views that colour by it (the HTML heat map, series, compare).

A compared cell carries the verdict of stats/verdict.py (ClickHouse's rule: faster, slower, same, unstable,
undecided), used as it is. Where it has none (series and compare across runs without rounds), the word comes from
the Mann-Whitney significance: significant and above or below 1.0 is faster or slower, not
significant is same, untestable (under 4 repeats a side) is undecided. `decided_by` always says which rule spoke."""

from __future__ import annotations

from dataclasses import dataclass

from dbperf.stats.rqps_matrix import Cell, Matrix
from dbperf.stats.summary import ALPHA, MIN_REPEATS_FOR_TEST

# In the order a legend lists them; colours are light enough for dark text on top.
VERDICT_COLOURS: dict[str, str] = {
    "base": "#cfd8e3",
    "faster": "#7fcf8e",
    "slower": "#f08c8c",
    "same": "#ececec",
    "unstable": "#ffcc66",
    "undecided": "#ffffff",
    "failed": "#9e9e9e",
}
VERDICTS = tuple(VERDICT_COLOURS)
MANN_WHITNEY = f"Mann-Whitney U, p < {ALPHA} with at least {MIN_REPEATS_FOR_TEST} repeats a side"


@dataclass(frozen=True)
class Verdict:
    word: str  # one of VERDICTS
    decided_by: str
    noise_threshold: float | None = None  # relative, where the verdict rule measured one


def verdict_of(rqps: float | None, significant: bool | None, is_base: bool, failed: bool,
               decided_by: str = MANN_WHITNEY) -> Verdict:
    """The significance-based verdict of one comparison (also used by `compare` and `series`)."""
    if is_base:
        return Verdict("base", "the base target")
    if rqps is None:
        return Verdict("failed" if failed else "undecided", "no measurement to compare")
    if significant is None:
        return Verdict("undecided", f"too few repeats to test ({decided_by})")
    if not significant:
        return Verdict("same", decided_by)
    return Verdict("faster" if rqps > 1 else "slower", decided_by)


def cell_verdict(m: Matrix, cell: Cell | None) -> Verdict:
    if cell is None:
        return Verdict("undecided", "not measured")
    v = cell.verdict_detail  # the verdict rule of stats/verdict.py, on every compared cell with runs
    if v is not None:
        if v.rule == "sequential" and v.planned:
            rule = f"group-sequential test of the per-round ratios at planned looks ({v.planned} rounds planned)"
        elif v.rule == "sequential":
            rule = "anytime-valid sequential test of the per-round ratios"
        else:
            rule = f"{v.decided_by} randomization test"
        if v.processes:
            rule += f", its unit the server process ({v.processes} a side)"
        return Verdict(v.verdict, f"{v.metric.name} {rule}, min effect {v.min_effect:.0%}", v.noise_threshold)
    return verdict_of(cell.rqps, cell.significant, cell.target == m.base, bool(cell.failures) and not cell.runs)
