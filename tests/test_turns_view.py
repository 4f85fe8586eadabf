"""What reports say of a slices run's turns (report/turns_view.py): per cell, the time its events ran into the next
target's slices, its stalls and its turn checkpoints, in one line beside the verdicts; nothing for other orders."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from dbperf.records import results_record
from dbperf.report.turns_view import turns_lines
from dbperf.stats.rqps_matrix import build_matrix
from tests.report_formats import render_table
from tests.synthetic import meta_of

pytestmark = pytest.mark.unit

RESULT = {"qps": 1000.0, "eps": 1000.0, "queries": 500, "errors": 0, "events": 500, "duration_s": 0.5,
          "latency": {"p50_us": 1.0, "p99_us": 2.0, "max_us": 3.0},
          "client_usage": {"user_us": 1.0, "system_us": 0.0, "voluntary_cs": 0, "involuntary_cs": 0}}
META = {"base": "a", "aggregate": "median", "threads": [1], "status": "complete", "order": "slices",
        "targets": [{"name": "a", "engine": "sqlite"}, {"name": "b", "engine": "sqlite"}],
        "benchmarks": [{"name": "point-query", "group": "point"}, {"name": "update-index", "group": "write"}]}


def turns(spill_ms: float, stalls: int, checkpoint_ms: float | None = None) -> dict[str, Any]:
    return {"spill_s": spill_ms / 1000, "spill_max_s": spill_ms / 2000, "spills": stalls,
            "turn_checkpoint": checkpoint_ms is not None, "checkpoints": 25 if checkpoint_ms else 0,
            "checkpoint_s": (checkpoint_ms or 0) / 1000, "checkpoint_max_s": (checkpoint_ms or 0) / 10_000}


def records(write_turns: dict[str, list[dict[str, Any] | None]], read_turns: dict[str, Any] | None = None) -> list[Any]:
    """Three repeats of point-query and update-index on a and b; `write_turns[target][repeat - 1]` is that
    update-index side's turns, `read_turns` every point-query side's (None: a result without turns)."""
    lines = []
    for r in range(1, 4):
        for target in ("a", "b"):
            for benchmark, t in (("point-query", read_turns), ("update-index", write_turns[target][r - 1])):
                result = {**RESULT, **({"turns": t} if t is not None else {})}
                lines.append(results_record({"target": target, "benchmark": benchmark, "threads": 1, "repeat": r,
                                             "status": "ok", "result": result}))
    return lines


def test_each_write_cells_stalls_and_checkpoints_are_said_beside_the_verdicts():
    write = {"a": [turns(4.0, 2, 3.0), turns(6.0, 1, 5.0), turns(2.0, 0, 4.0)],
             "b": [turns(0.1, 0, 1.0), turns(0.1, 0, 1.0), turns(0.4, 0, 2.0)]}
    m = build_matrix(meta_of(META), records(write, turns(0.01, 0)))
    (line,) = turns_lines(m)
    assert line.startswith("slices: time each target's events ran past its slices' ends into the next target's")
    assert ("a update-index t=1 4.0 ms (3 stalls over 1 ms, longest 3.0 ms), checkpoints in its own turns 4.0 ms; "
            "b update-index t=1 0.1 ms (0 stalls over 1 ms, longest 0.2 ms), checkpoints in its own turns 1.0 ms") \
        in line
    assert "point-query" not in line, "a cell without a stall or a checkpoint is not listed"
    for verbose in (False, True):  # the glance (beside the verdicts) and the full legend both say it
        console = Console(record=True, width=400)
        render_table(m, meta_of(META), console, verbose=verbose)
        assert "a update-index t=1 4.0 ms (3 stalls over 1 ms" in " ".join(console.export_text().split())


def test_without_stalls_one_short_line_and_without_slices_nothing():
    calm: dict[str, list[dict[str, Any] | None]] = {t: [turns(0.2, 0)] * 3 for t in ("a", "b")}
    assert turns_lines(build_matrix(meta_of(META), records(calm, turns(0.01, 0)))) == [
        "slices: time each target's events ran past its slices' ends into the next target's, median per repeat "
        "(the target's own cost, measured in another's turn; docs/verdicts.md): no overrun longer than 1 ms in any "
        "cell"]
    other = {k: v for k, v in META.items() if k != "order"}
    m = build_matrix(meta_of(other), records({"a": [None] * 3, "b": [None] * 3}))
    assert turns_lines(m) == []
    console = Console(record=True, width=400)
    render_table(m, meta_of(other), console, verbose=True)
    assert "slices:" not in console.export_text()
