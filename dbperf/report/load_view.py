"""What the load model adds to a report: for open-loop runs the rate asked for against the rate achieved (and a
rate the target could not sustain said as such), the percentiles `[run] percentiles` chose, the time series as
sysbench's interval lines (`report --intervals`), and per-statement latencies of multi-statement events."""

from __future__ import annotations

import statistics
from typing import Any

from dbperf.experiment.load_model import DEFAULT_PERCENTILES
from dbperf.records import CellRecord, RunResult
from dbperf.report.model import Block, Row
from dbperf.run_meta import RunMeta
from dbperf.stats.rqps_matrix import Cell, Matrix


def _label(m: Matrix, cell: Cell) -> str:
    return cell.benchmark if len(m.threads) == 1 else f"{cell.benchmark} t={cell.threads}"


def _cells(m: Matrix) -> list[Cell]:
    return [c for _, b, t in m.rows() for target in m.targets if (c := m.cell(target, b, t)) is not None]


def _ptitle(p: float) -> str:
    return f"p{p:g}"


def chosen_percentiles(meta: RunMeta) -> list[float]:
    return list((meta.load_model or {}).get("percentiles", DEFAULT_PERCENTILES))


def percentiles_of(cell: Cell, percentiles: list[float] | None = None) -> dict[str, float | None]:
    """Median over the repeats of each chosen percentile (by default those the results hold), in µs."""
    if percentiles is None:
        percentiles = [x.p for r in cell.runs[:1] if r.result for x in r.result.latency.percentiles]
    out: dict[str, float | None] = {}
    for p in percentiles:
        values = [v for r in cell.runs if r.result and (v := r.result.latency.at(p)) is not None]
        out[_ptitle(p)] = statistics.median(values) if values else None
    return out


def open_loop_of(cell: Cell) -> dict[str, Any] | None:
    """Asked and achieved rate (median of repeats), and whether every repeat kept up."""
    runs = [r.result.open_loop for r in cell.runs if r.result and r.result.open_loop]
    if not runs:
        return None
    return {
        "rate_asked": runs[0].rate_asked,
        "arrivals": runs[0].arrivals,
        "rate_achieved": statistics.median(o.rate_achieved for o in runs),
        "sustained": all(o.sustained for o in runs),
        "backlog_events_max": max(o.backlog_events for o in runs),
        "skipped": sum(o.skipped for o in runs),
        "late": sum(o.late for o in runs),
        "lag_max_us": max(o.lag_max_us for o in runs),
    }


def load_blocks(m: Matrix, meta: RunMeta) -> list[Block]:
    """Blocks for the report: open loop (asked vs achieved) and chosen percentiles, when the run has them."""
    model = meta.load_model or {}
    percentiles = chosen_percentiles(meta)
    open_loop = model.get("loop") == "open"
    if not open_loop and tuple(percentiles) == DEFAULT_PERCENTILES:
        return []
    header: tuple[str, ...] = ("benchmark", "target")
    if open_loop:
        header += ("asked/s", "achieved/s", "kept up", "backlog", "skipped", "late", "max lag ms")
    header += tuple(f"{_ptitle(p)} µs" for p in percentiles)
    rows = []
    for cell in _cells(m):
        if not cell.runs:
            continue
        cells: tuple[str, ...] = (_label(m, cell), cell.target)
        if open_loop:
            o = open_loop_of(cell)
            if o is None:
                cells += ("-",) * 7
            else:
                cells += (f"{o['rate_asked']:,.0f}", f"{o['rate_achieved']:,.0f}",
                          "yes" if o["sustained"] else "NO", f"{o['backlog_events_max']:,}", f"{o['skipped']:,}",
                          f"{o['late']:,}", f"{o['lag_max_us'] / 1000:,.1f}")
        cells += tuple("-" if v is None else f"{v:,.1f}" for v in percentiles_of(cell, percentiles).values())
        rows.append(Row(cells))
    subtitle = "median of repeats"
    if open_loop:
        subtitle = (f"open loop, {model.get('arrivals', 'uniform')} arrivals: latency from each event's scheduled "
                    "start; 'kept up' NO = the target could not sustain the rate (backlog left at the end or over "
                    "1% skipped); " + subtitle)
    return [Block(title="load", subtitle=subtitle, header=header, rows=tuple(rows), text_columns=2)]


def _ms(us: float) -> str:
    return f"{us / 1000:.3f}"


def interval_lines(result: RunResult) -> list[str]:
    """sysbench's --report-interval lines: `[ 1s ] thds: 1 tps: ... qps: ... lat (ms,95%): ... err/s: ...`, with
    the median, 99th percentile and maximum after, and the schedule lag of open-loop cells."""
    lines = []
    for iv in result.intervals:
        t = f"{iv.t_s:g}s"
        line = (f"[ {t} ] thds: {result.threads} tps: {iv.eps:.2f} qps: {iv.qps:.2f} lat (ms,95%): {_ms(iv.p95_us)} "
                f"err/s: {iv.errors / iv.duration_s:.2f}  (lat ms p50 {_ms(iv.p50_us)} p99 {_ms(iv.p99_us)} "
                f"max {_ms(iv.max_us)})")
        if iv.lag_max_us is not None:
            line += f" lag max ms {_ms(iv.lag_max_us)} skipped {iv.skipped}"
        lines.append(line)
    return lines


def statement_lines(result: RunResult) -> list[str]:
    """pgbench -r: mean latency of each statement of a multi-statement event."""
    return [f"  {s.mean_us / 1000:10.3f} ms  (max {s.max_us / 1000:.3f})  {s.event}: {s.sql}"
            for s in result.statements]


def cell_heading(record: CellRecord) -> str:
    return f"{record.benchmark} t={record.threads} #{record.repeat} {record.target}"
