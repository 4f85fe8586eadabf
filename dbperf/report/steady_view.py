"""What reports say about steady-state warm-ups (`[run] steady`, experiment/steady.py): per cell, how long the
warm-ups took and how many never settled (the `w` mark beside the rQPS); per run, one legend line with the rule,
the range of warm-up times and the cells that never settled."""

from __future__ import annotations

import statistics
from typing import Any

from dbperf.records import RunResult
from dbperf.run_meta import RunMeta
from dbperf.stats.rqps_matrix import Cell, Matrix

MARK = "w"
MARK_MEANING = (f"{MARK} : in at least one repeat the steady-state warm-up reached max_warmup without the throughput "
                "settling")


def steady_cell(cell: Cell) -> bool:
    """Some repeat of the cell ran with a steady-state warm-up."""
    return any(r.result and r.result.steady for r in cell.runs)


def unsettled_runs(cell: Cell) -> int:
    """Repeats whose steady-state warm-up never settled."""
    return sum(1 for r in cell.runs if r.result and r.result.unsettled)


def warmups(cell: Cell) -> list[float]:
    """The warm-up each repeat had, seconds (repeats from a driver that did not report it are left out)."""
    return [r.result.warmup_s for r in cell.runs if r.result and r.result.warmup_s is not None]


def steady_runs(cell: Cell) -> list[dict[str, Any] | None] | None:
    """Per repeat: the warm-up, whether it settled and the spread when it ended; None without steady state."""
    if not steady_cell(cell):
        return None
    return [{"warmup_s": r.result.warmup_s, "settled": r.result.steady.settled, "spread": r.result.steady.spread,
             "samples_eps": r.result.steady.samples_eps} if r.result and r.result.steady else None
            for r in cell.runs]


def warmup_lines(result: RunResult) -> list[str]:
    """`report --intervals`: a steady-state cell's warm-up, before its interval lines."""
    s = result.steady
    if s is None:
        return []
    spread = "no spread (too few samples, or none completed)" if s.spread is None else f"spread {s.spread:.1%}"
    how = (f"settled ({spread} <= {s.tolerance:.1%})" if s.settled
           else f"never settled ({spread} at max_warmup {s.max_warmup_s:g} s)")
    samples = " ".join(f"{x:,.0f}" for x in s.samples_eps)
    return [f"warm-up {result.warmup_s or 0:.2f} s, {how}; samples of {s.interval_s:g} s, events/s: {samples}"]


def steady_lines(m: Matrix, meta: RunMeta) -> list[str]:
    """One legend line: the rule, the warm-ups' range, and the cells that never settled, by name."""
    rule = meta.steady
    if not rule:
        return []
    cells = [c for c in m.cells.values() if steady_cell(c)]
    times = [t for c in cells for t in warmups(c)]
    line = (f"steady state: warm-up until {rule['window']} samples of {rule['interval_s']:g} s agree within "
            f"{rule['tolerance'] * 100:g}% ((max - min) / mean), at most {rule['max_warmup_s']:g} s")
    if times:
        line += (f"; warm-ups took {min(times):.1f}–{max(times):.1f} s (median {statistics.median(times):.1f} s)")
    unsettled = [c for c in cells if unsettled_runs(c)]
    runs = sum(len(c.runs) for c in cells)
    line += f"; {sum(unsettled_runs(c) for c in unsettled)} of {runs} repeats never settled ({MARK})"
    if unsettled:
        line += ": " + ", ".join(f"{c.target} {c.benchmark} t={c.threads} ({unsettled_runs(c)} of {len(c.runs)})"
                                 for c in sorted(unsettled, key=lambda c: (c.benchmark, c.threads, c.target)))
    return [line]
