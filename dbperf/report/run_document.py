"""The run report's document (JSON) and rows (CSV): the cells through one field list, so the two never disagree on
what a cell holds. The formats write them (report/formats/json.py, csv.py); the terminal and Markdown draw the
layout's sections (matrix_layout.py, run_view.py)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from dbperf.records import CountersRecord, to_builtins
from dbperf.report.cell_text import interfered_runs, noisy
from dbperf.report.load_view import open_loop_of, percentiles_of
from dbperf.report.matrix_layout import HOW_MEASURED, SIGNIFICANCE, aa_check, verdict_legend
from dbperf.report.simulated_view import SIM_FIELD_NAMES, sim_fields, simulated_json
from dbperf.report.steady_view import steady_cell, steady_runs, unsettled_runs, warmups
from dbperf.report.tiers_view import TIERS_FIELD_NAMES, tiers_fields
from dbperf.report.verdict_quality import decided_metric, verdict_quality
from dbperf.run_meta import RunMeta, meta_dict
from dbperf.stats.rqps_matrix import Cell, Matrix


@dataclass(frozen=True)
class Field:
    """One figure of a cell, as JSON and CSV write it."""
    name: str
    value: Callable[[Matrix, Cell], Any]
    csv: bool = True  # lists and tables stay in JSON


def _median(key: str) -> Callable[[Matrix, Cell], Any]:
    return lambda m, c: c.median_of(key)


def _sim(key: str) -> Callable[[Matrix, Cell], Any]:
    return lambda m, c: sim_fields(c)[key]


def _tiers(key: str) -> Callable[[Matrix, Cell], Any]:
    return lambda m, c: tiers_fields(m, c)[key]


CELL_FIELDS: tuple[Field, ...] = (
    Field("target", lambda m, c: c.target),
    Field("benchmark", lambda m, c: c.benchmark),
    Field("group", lambda m, c: c.group),
    Field("threads", lambda m, c: c.threads),
    Field("status", lambda m, c: "ok" if c.qps else "failed"),
    Field("n", lambda m, c: c.qps.n if c.qps else 0),
    Field("failed_runs", lambda m, c: len(c.failures)),
    Field("errors", lambda m, c: [f.error for f in c.failures], csv=False),
    Field("qps_median", lambda m, c: c.qps.median if c.qps else None),
    Field("qps_center", lambda m, c: c.qps.center if c.qps else None),
    Field("qps_min", lambda m, c: c.qps.minimum if c.qps else None),
    Field("qps_max", lambda m, c: c.qps.maximum if c.qps else None),
    Field("qps_ci95", lambda m, c: [c.qps.ci_low, c.qps.ci_high] if c.qps and c.qps.ci_low is not None else None,
          csv=False),
    Field("qps_spread", lambda m, c: c.qps.spread if c.qps else None),
    Field("noisy", noisy),
    Field("qps_runs", lambda m, c: c.per_run("qps"), csv=False),
    Field("eps_median", _median("eps")),
    Field("rows_per_s_median", _median("rows_per_s")),
    Field("rqps", lambda m, c: c.rqps),
    Field("trained_on_this", lambda m, c: m.was_trained_on(c.target, c.benchmark)),
    Field("significant", lambda m, c: c.significant if c.target != m.base else None),
    Field("p_value", lambda m, c: c.p_value),
    Field("verdict", lambda m, c: c.verdict),
    Field("decided_by", lambda m, c: c.decided_by),
    Field("noise_threshold", lambda m, c: c.noise_threshold),
    Field("diff", lambda m, c: c.verdict_detail.diff if c.verdict_detail else None),
    Field("min_effect", lambda m, c: c.verdict_detail.min_effect if c.verdict_detail else None),
    Field("min_detectable_effect", lambda m, c: c.verdict_detail.min_detectable_effect if c.verdict_detail else None),
    Field("verdict_views", lambda m, c: _views(c), csv=False),
    Field("interfered_runs", lambda m, c: interfered_runs(c)),
    Field("foreign_cpu_max", lambda m, c: max((r.noise.foreign_cpu for r in c.runs if r.noise), default=None)),
    Field("steal_max", lambda m, c: max((r.noise.steal for r in c.runs if r.noise), default=None)),
    Field("noise", lambda m, c: [to_builtins(r.noise) if r.noise else None for r in c.runs], csv=False),
    # Steady-state warm-ups (report/steady_view.py): None where the cell had a fixed warm-up.
    Field("unsettled_runs", lambda m, c: unsettled_runs(c) if steady_cell(c) else None),
    Field("warmup_s_median", lambda m, c: statistics.median(w) if (w := warmups(c)) else None),
    Field("warmup_s_max", lambda m, c: max(warmups(c), default=None)),
    Field("steady", lambda m, c: steady_runs(c), csv=False),
    *[Field(key, _median(key)) for key in (
        "cpu_us_per_query", "cpu_user_us_per_query", "cpu_system_us_per_query", "cs_per_query",
        "cs_voluntary_per_query", "cs_involuntary_per_query", "server_cpu_us_per_query",
        "server_cpu_user_us_per_query", "server_cpu_system_us_per_query", "server_cs_per_query",
        "total_cpu_us_per_query", "total_cs_per_query", "p50_us", "p99_us", "max_us")],
    Field("query_errors", lambda m, c: sum(int(e) for e in c.per_run("errors"))),
    Field("counters", lambda m, c: _counters_summary(m.counters.get((c.target, c.benchmark))), csv=False),
    # The load model (report/load_view.py): chosen percentiles (median of repeats), open loop asked vs achieved.
    Field("latency_percentiles_us", lambda m, c: percentiles_of(c), csv=False),
    Field("open_loop", lambda m, c: open_loop_of(c), csv=False),
    # Last so that the earlier CSV columns keep their places: the CPU-time verdict beside the wall-clock
    # one (None where the cell has none), which metric decided the cell, a level shift within its repeats, and the
    # simulated tier's figures (report/simulated_view.py).
    Field("cpu_verdict", lambda m, c: c.cpu_verdict_detail.verdict if c.cpu_verdict_detail else None),
    Field("cpu_decided_by", lambda m, c: c.cpu_verdict_detail.decided_by if c.cpu_verdict_detail else None),
    Field("cpu_noise_threshold", lambda m, c: c.cpu_verdict_detail.noise_threshold if c.cpu_verdict_detail else None),
    Field("cpu_diff", lambda m, c: c.cpu_verdict_detail.diff if c.cpu_verdict_detail else None),
    Field("cpu_min_detectable_effect",
          lambda m, c: c.cpu_verdict_detail.min_detectable_effect if c.cpu_verdict_detail else None),
    Field("decided_metric", lambda m, c: d.name if (d := decided_metric(c)) else None),
    Field("level_shift", lambda m, c: c.level_shift),
    *[Field(name, _sim(name)) for name in SIM_FIELD_NAMES],
    # Last again: do the tiers agree, the calibrated prediction of user CPU per query and the measured
    # change it is checked on (report/tiers_view.py).
    *[Field(name, _tiers(name)) for name in TIERS_FIELD_NAMES],
)


def _views(cell: Cell) -> dict[str, Any] | None:
    """Both views of the verdict, the one that did not decide included."""
    v = cell.verdict_detail
    if v is None:
        return None
    return {view.name: asdict(view) for view in (v.unpaired, v.paired) if view is not None}


def cell_json(m: Matrix, cell: Cell) -> dict[str, Any]:
    return {f.name: f.value(m, cell) for f in CELL_FIELDS}


def _counters_summary(record: CountersRecord | None) -> dict[str, Any] | None:
    """A cell's counters without the full per-function table (that stays in results.jsonl)."""
    if record is None:
        return None
    if record.counters is None:
        return {"error": record.error}
    return {k: v for k, v in to_builtins(record.counters).items() if k != "functions"}


def _cells(m: Matrix) -> list[Cell]:
    return [c for _, b, t in m.rows() for target in m.targets if (c := m.cell(target, b, t)) is not None]


def run_document(m: Matrix, meta: RunMeta, skipped: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON report (its field names are an interface scripts read)."""
    return {
        "base": m.base,
        "targets": m.targets,
        "aggregate": m.aggregate,
        "status": meta.status,
        "measured_by": HOW_MEASURED,
        "significance": SIGNIFICANCE,
        "verdicts": verdict_legend(m.min_effect),
        "aa": aa_check(m, meta),
        "verdict_quality": verdict_quality(m, meta),
        "simulated": simulated_json(m),
        "cells": [cell_json(m, c) for c in _cells(m)],
        "skipped_lines": skipped or [],
        "meta": meta_dict(meta),
    }


CSV_COLUMNS: tuple[str, ...] = tuple(f.name for f in CELL_FIELDS if f.csv)


def run_rows(m: Matrix) -> tuple[dict[str, Any], ...]:
    """The CSV report: a row per cell, the fields a flat line holds (CSV_COLUMNS)."""
    fields = [f for f in CELL_FIELDS if f.csv]
    return tuple({f.name: f.value(m, cell) for f in fields} for cell in _cells(m))
