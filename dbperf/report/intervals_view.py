"""`dbperf report DIR --intervals`: every measured cell's time series as sysbench's interval lines (after a
steady-state cell's warm-up) and per-statement latencies, in run order; as a document, one CSV row per interval."""

from __future__ import annotations

from typing import Any

from dbperf.records import CellRecord, Interval, ResultsRecord, to_builtins
from dbperf.report.load_view import cell_heading, interval_lines, statement_lines
from dbperf.report.model import Section, View
from dbperf.report.steady_view import warmup_lines

NO_SERIES = "  (no time series: interval = 0, or a result written before time series were recorded)"


def measured(records: list[ResultsRecord]) -> list[CellRecord]:
    return [r for r in records if isinstance(r, CellRecord) and r.result is not None]


def cell_lines(record: CellRecord) -> list[str]:
    """The terminal's lines for one cell (its heading is printed before them)."""
    assert record.result is not None
    return (warmup_lines(record.result) + (interval_lines(record.result) or [NO_SERIES])
            + statement_lines(record.result))


def intervals_view(records: list[ResultsRecord]) -> View:
    sections, rows, cells = [], [], []
    for record in measured(records):
        assert record.result is not None
        sections.append(Section(title=cell_heading(record), lines=tuple(cell_lines(record))))
        key: dict[str, Any] = {**({"host": record.host} if record.host else {}), "target": record.target,
                               "benchmark": record.benchmark, "threads": record.threads, "repeat": record.repeat}
        rows += [{**key, **to_builtins(iv)} for iv in record.result.intervals]
        cells.append({**key, "warmup_s": record.result.warmup_s,
                      "statements": [to_builtins(s) for s in record.result.statements]})
    return View("intervals", "Time series per cell", tuple(sections), rows=tuple(rows), data={"cells": cells},
                columns=("target", "benchmark", "threads", "repeat", *Interval.__struct_fields__))
