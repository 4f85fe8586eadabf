"""Verdict quality in the open: per measured metric (wall clock, CPU time), the noise thresholds the
compared cells reached, the effect each undecided cell could still hide, the level shifts the verdicts did not decide
on, the A/A result when the run had an A/A copy, and how often the tiers agree (stats/tiers.py): what a reader
needs to judge how far the verdicts carry."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from dbperf.metrics import CPU, WALL, Metric
from dbperf.run_meta import RunMeta
from dbperf.stats.process_level import process_spread
from dbperf.stats.rqps_matrix import Cell, Matrix
from dbperf.stats.verdict import CellVerdict, pair_rounds

Judged = tuple[Metric, Callable[[Cell], CellVerdict | None]]  # a metric a cell is decided by, and its verdict
METRICS: tuple[Judged, ...] = (
    (WALL, lambda c: c.verdict_detail),
    (CPU, lambda c: c.cpu_verdict_detail),
)


def cell_label(m: Matrix, cell: Cell) -> str:
    return f"{cell.benchmark}{'' if len(m.threads) == 1 else f' t={cell.threads}'} {cell.target}"


def _ordered(m: Matrix) -> list[Cell]:
    return [c for _, b, t in m.rows() for target in m.targets if (c := m.cell(target, b, t)) is not None]


def decided_metric(cell: Cell) -> Metric | None:
    """Which metric decides the cell: the wall clock's verdict when it decided (the headline), else the CPU time's
    when that decided; None when neither did."""
    for metric, get in METRICS:
        v = get(cell)
        if v is not None and v.decided:
            return metric
    return None


def metric_quality(m: Matrix, get: Callable[[Cell], CellVerdict | None]) -> dict[str, Any] | None:
    """One metric's thresholds and what its undecided cells could hide; None when no cell has its verdict."""
    compared = [(c, v) for c in _ordered(m) if c.target != m.base and (v := get(c)) is not None]
    if not compared:
        return None
    # A view that cannot decide at its n has the statistic's maximum as its threshold: not a noise level reached.
    testable = [v.noise_threshold for _, v in compared if v.decided or v.min_detectable_effect is not None]
    return {
        "cells": len(compared),
        "decided": sum(1 for _, v in compared if v.decided),
        "noise_threshold_min": min(testable, default=None),
        "noise_threshold_median": statistics.median(testable) if testable else None,
        "noise_threshold_max": max(testable, default=None),
        "undecided": [{"cell": cell_label(m, c), "verdict": v.verdict, "min_detectable_effect": v.min_detectable_effect}
                      for c, v in compared if not v.decided],
    }


def aa_counts(m: Matrix, target: str, get: Callable[[Cell], CellVerdict | None]) -> dict[str, Any] | None:
    """The A/A copy's cells under one metric: how many were called faster or slower (false alarms)."""
    verdicts = [(c, v) for (t, _, _), c in m.cells.items() if t == target and (v := get(c)) is not None]
    if not verdicts:
        return None
    changed = [(c, v) for c, v in verdicts if v.verdict in ("faster", "slower")]
    return {"cells": len(verdicts), "changed": len(changed), "decided": sum(1 for _, v in verdicts if v.decided),
            "changed_cells": [f"{c.benchmark} t={c.threads}: {v.verdict}" for c, v in changed]}


def level_shifts(m: Matrix) -> list[dict[str, str]]:
    return [{"cell": cell_label(m, c), "level_shift": c.level_shift} for c in _ordered(m) if c.level_shift]


def tiers_counts(m: Matrix, meta: RunMeta) -> dict[str, Any] | None:
    """How many compared cells the tiers agree on, disagree on, leave open; the A/A copy's cells apart (they agree
    by construction, so they would only pad the agreements). None where the run has no simulated tier."""
    compared = [c for c in _ordered(m) if c.tiers is not None]
    if not compared:
        return None
    own = [c for c in compared if c.target != meta.aa_target]
    counts = {word: sum(1 for c in own if c.tiers and c.tiers.tiers == word) for word in ("agree", "disagree", "open")}
    return {"cells": len(own), **counts, "aa_agree_by_construction": len(compared) - len(own),
            "disagreements": [{"cell": cell_label(m, c), "why": c.tiers.why} for c in own
                              if c.tiers and c.tiers.tiers == "disagree"]}


def verdict_quality(m: Matrix, meta: RunMeta) -> dict[str, Any]:
    """For JSON: per metric its quality, the level shifts, the A/A counts per metric and the tiers' agreement."""
    target = meta.aa_target
    return {
        **{metric.name: metric_quality(m, get) for metric, get in METRICS},
        "level_shifts": level_shifts(m),
        "aa": {metric.name: aa_counts(m, target, get) for metric, get in METRICS} if target else None,
        "tiers": tiers_counts(m, meta),
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def quality_lines(m: Matrix) -> list[str]:
    """The legend's lines: one per metric that has verdicts, and the level shifts."""
    lines = []
    for metric, get in METRICS:
        label = metric.label
        q = metric_quality(m, get)
        if q is None:
            continue
        parts = [f"{q['decided']} of {q['cells']} compared cells decided"]
        if q["noise_threshold_min"] is not None:
            parts.append(f"noise thresholds {_pct(q['noise_threshold_min'])}–{_pct(q['noise_threshold_max'])} "
                         f"(median {_pct(q['noise_threshold_median'])})")
        hide = [f"{u['cell']} ±{_pct(u['min_detectable_effect'])}" for u in q["undecided"]
                if u["min_detectable_effect"] is not None]
        if hide:
            parts.append("undecided cells could hide a change up to: " + ", ".join(hide))
        untestable = sum(1 for u in q["undecided"] if u["min_detectable_effect"] is None)
        if untestable:
            parts.append(f"{untestable} cell(s) with too few repeats for any test")
        lines.append(f"verdict quality, {label}: " + "; ".join(parts))
    lines.extend(unit_line(m))
    shifts = level_shifts(m)
    if shifts:
        lines.append("level shifts within repeats (not decided or stopped on, unless called at both levels): "
                     + "; ".join(f"{s['cell']}: {s['level_shift']}" for s in shifts))
    return lines


def unit_line(m: Matrix) -> list[str]:
    """What the verdicts of server targets speak of: the processes each rests on (`processes` above 1), or that
    every round of the run was served by one process a target (stats/process_level.py)."""
    compared = [c for c in _ordered(m) if c.target != m.base and c.verdict_detail is not None]
    counts = sorted({v.processes for c in compared if (v := c.deciding_verdict) is not None and v.processes})
    if counts:
        span = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
        return [f"verdicts' unit: the server process, each cell's verdict on {span} complete processes a side "
                "(started again between blocks of rounds): they speak of the builds" + _levels(m, compared)]
    if any(r.result is not None and r.result.server_usage is not None for c in compared for r in c.runs):
        return ["verdicts' unit: the round; every round of a server target was served by one process for the run, "
                "so a decided verdict speaks of these processes, and a rerun may decide otherwise "
                "(`processes = 5` or more makes the process the unit: docs/verdicts.md)"]
    return []


def chosen_line(meta: RunMeta) -> list[str]:
    """`processes = "auto"`: the count the run chose and why (runner/process_blocks.py)."""
    return [f"processes = \"auto\": {meta.processes_chosen}"] if meta.processes_chosen else []


def _levels(m: Matrix, compared: list[Cell]) -> str:
    """Where the compared cells' wall-clock ratios varied, median over the cells: a round within its process, and a
    process's own level beyond its rounds' noise (stats/process_level.py); "" where no cell has two blocks."""
    spreads = []
    for c in compared:
        base = m.cell(m.base, c.benchmark, c.threads)
        if base is None:
            continue
        runs = [(r.repeat, r.result.qps if r.result else None) for r in c.runs]
        pairs = pair_rounds(c.target, runs, [(r.repeat, r.partner, r.result.qps if r.result else None)
                                             for r in base.runs])
        found = process_spread(pairs, {r.repeat: r.process for r in c.runs if r.process is not None})
        if found is not None:
            spreads.append(found)
    if not spreads:
        return ""
    rounds, processes = (statistics.median(x) for x in zip(*spreads, strict=True))
    return (f"; the ratio's spread (median over {len(spreads)} cells, wall clock): {rounds:.2%} a round within its "
            f"process, {processes:.2%} a process's own level")


def aa_line(m: Matrix, meta: RunMeta) -> list[str]:
    """The A/A result per metric, when the run had an A/A copy."""
    target = meta.aa_target
    if not target:
        return []
    parts = []
    for metric, get in METRICS:
        label = metric.label
        aa = aa_counts(m, target, get)
        if aa is None:
            if metric.headline:
                parts.append(f"{label} 0 of 0 cells called changed")
            continue
        named = f" ({', '.join(aa['changed_cells'])})" if aa["changed_cells"] else ""
        parts.append(f"{label} {aa['changed']} of {aa['cells']} cells called changed{named}, {aa['decided']} of "
                     f"{aa['cells']} decided")
    return [f"A/A: {target} is {m.base} run against itself: " + "; ".join(parts) + " (false alarms on this host)"]


def tiers_line(m: Matrix, meta: RunMeta) -> list[str]:
    """The tiers' agreement in the legend, when the run has the simulated tier."""
    t = tiers_counts(m, meta)
    if t is None:
        return []
    aa = t["aa_agree_by_construction"]
    return [f"tiers (measured call against simulated work and the calibrated prediction): {t['agree']} agree, "
            f"{t['disagree']} disagree, {t['open']} open (nothing measured decided) of {t['cells']} compared cells"
            + (f"; the A/A copy's {aa} agree by construction" if aa else "")]
