"""The report's side of a kind of replication (dbperf/replication/kind.py), by the same name: what its apply rows
carry of their own, what its stale-read wait is called, its host note, its tables, notes and charts. One module per
kind (binlog_view.py, streaming_view.py), listed in replication_view.VIEWS; replication_view.py builds the summary
and the tables every kind shares, and asks the kind for the rest. Also the pieces those modules share."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dbperf.records import ApplyRecord
from dbperf.report.html_page import Figure, label


def spread(name: str, values: list[float]) -> dict[str, Any]:
    """`name`: the median of the runs' values; `name_min` and `name_max`: their range, the interval the study's
    figures read (INTERVALS says how it covers the median); `name_runs`: the values in the order they ran."""
    return {name: statistics.median(values), f"{name}_min": min(values), f"{name}_max": max(values),
            f"{name}_runs": list(values)}


MB = 1 << 20
OVER_CORES = "‡"


@dataclass(frozen=True)
class StudyTable:
    title: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]]
    text_columns: int


def num(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def chart_layout(title: str, x: str, y: str) -> dict[str, Any]:
    return {"title": {"text": label(title)}, "xaxis": {"title": {"text": label(x)}},
            "yaxis": {"title": {"text": label(y)}, "rangemode": "tozero"}, "margin": {"t": 50, "b": 60},
            "height": 380}


def no_tables(s: dict[str, Any]) -> tuple[list[StudyTable], list[str]]:
    return [], []


@dataclass(frozen=True)
class KindView:
    name: str  # the kind's name (Engine.replication)
    # An apply row's own fields, after those every kind has: (the group's ok records, its worker count, the CPUs).
    row_fields: Callable[[list[ApplyRecord], int, int], dict[str, Any]]
    # Each apply row's `vs_serial` set: its rate over the single applier's, None where that does not apply.
    speedups: Callable[[list[dict[str, Any]]], None]
    # The stale-read summary's own fields, given the run's engine: its wait's name.
    stale_fields: Callable[[dict[str, Any], str], dict[str, Any]]
    cores_note: Callable[[int], str | None]  # what the host's CPUs (0: not recorded) mean for the apply study
    apply_tables: Callable[[dict[str, Any]], list[StudyTable]]  # the summary's apply rows as tables
    stale_table: Callable[[dict[str, Any]], tuple[StudyTable, str]]  # the stale-read summary: table and note
    figures: Callable[[dict[str, Any]], list[Figure]]  # the HTML page's charts of the apply rows
    other_tables: Callable[[dict[str, Any]], tuple[list[StudyTable], list[str]]] = no_tables  # its own studies'
