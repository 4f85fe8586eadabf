"""Rendering a Matrix as a terminal table, Markdown, CSV or JSON.

The rQPS layout follows BRIEF §1: a legend `col-N : target`, then one row per benchmark (grouped point, range,
write), one column per target, two decimals. `~` marks a difference that is not significant (or that too few
repeats could not test), `!` a cell whose repeats spread more than 10% around the median.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from dbperf.report.escape import md, term
from dbperf.stats.rqps_matrix import Cell, Matrix
from dbperf.stats.summary import MIN_REPEATS_FOR_TEST, NOISY_SPREAD

HOW_MEASURED = (
    "QPS: queries / measured wall-clock time of dbperf-driver (sysbench counting: BEGIN and COMMIT are queries). "
    "CPU µs/query and cs/query: getrusage of the driver process over the measured phase; with an in-process engine "
    "that is client and engine together. Server targets: the server's processes (MariaDB's threads; PostgreSQL's "
    "postmaster and backends, exited ones through the postmaster's reaped-children times) from /proc over the same "
    "window; context switches of exited backends are not in /proc. Latency: per event, HdrHistogram."
)
SIGNIFICANCE = (
    f"~ : not significant (Mann-Whitney U p >= 0.05) or fewer than {MIN_REPEATS_FOR_TEST} repeats a side to test; "
    f"! : a cell's repeats spread more than {NOISY_SPREAD:.0%} of its median; "
    "T : this PGO build was trained on this benchmark (not a train/test split)"
)


def _row_label(m: Matrix, benchmark: str, threads: int) -> str:
    return benchmark if len(m.threads) == 1 else f"{benchmark} t={threads}"


def _noisy(m: Matrix, cell: Cell) -> bool:
    base = m.cell(m.base, cell.benchmark, cell.threads)
    return bool((cell.qps and cell.qps.noisy) or (base and base.qps and base.qps.noisy))


def rqps_text(m: Matrix, cell: Cell | None) -> str:
    if cell is None:
        return "-"
    if cell.rqps is None:
        return "failed" if cell.failures and not cell.runs else "-"
    marks = ""
    if cell.target != m.base and not cell.significant:
        marks += "~"
    if _noisy(m, cell):
        marks += "!"
    if m.was_trained_on(cell.target, cell.benchmark):
        marks += "T"
    return f"{cell.rqps:.2f}{(' ' + marks) if marks else ''}"


def legend(m: Matrix) -> list[str]:
    lines = []
    for i, t in enumerate(m.targets, 1):
        notes = ["base"] if t == m.base else []
        if m.trained_on.get(t):
            notes.append("PGO trained on: " + ", ".join(m.trained_on[t]))
        lines.append(f"col-{i} : {t}" + (f"  ({'; '.join(notes)})" if notes else ""))
    return lines


def _center_name(m: Matrix) -> str:
    return "trimmed mean (best and worst repeat dropped)" if m.aggregate == "trimmed" else "median"


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def absolute_rows(m: Matrix, target: str) -> list[dict[str, str]]:
    rows = []
    for _, benchmark, threads in m.rows():
        cell = m.cell(target, benchmark, threads)
        if cell is None:
            continue
        if cell.qps is None:
            error = cell.failures[-1].get("error", "failed") if cell.failures else "no runs"
            rows.append({"benchmark": _row_label(m, benchmark, threads), "qps": "failed", "error": error})
            continue
        q = cell.qps
        rows_per_s = cell.median_of("rows_per_s")
        rows.append({
            "benchmark": _row_label(m, benchmark, threads),
            "qps": f"{q.center:,.0f}",
            "range": f"{q.minimum:,.0f}–{q.maximum:,.0f}",
            "ci": "-" if q.ci_low is None else f"{q.ci_low:,.0f}–{q.ci_high:,.0f}",
            "spread": f"{q.spread:.1%}" + (" !" if q.noisy else ""),
            "eps": f"{cell.median_of('eps'):,.0f}" + (f" ({rows_per_s:,.0f} rows/s)" if rows_per_s else ""),
            "cpu": f"{_fmt(cell.median_of('cpu_us_per_query'), 2)} ({_fmt(cell.median_of('cpu_user_us_per_query'), 2)}"
                   f"+{_fmt(cell.median_of('cpu_system_us_per_query'), 2)})",
            "cs": _fmt(cell.median_of("cs_per_query"), 3),
            "server_cpu": _fmt(cell.median_of("server_cpu_us_per_query"), 2),
            "total_cpu": _fmt(cell.median_of("total_cpu_us_per_query"), 2),
            "server_cs": _fmt(cell.median_of("server_cs_per_query"), 3),
            "p99": _fmt(cell.median_of("p99_us")),
            "errors": f"{sum(int(e) for e in cell.per_run('errors'))}"
                      + (f", {len(cell.failures)} failed" if cell.failures else ""),
            "n": str(q.n),
        })
    return rows


ABS_COLUMNS = [("benchmark", "benchmark"), ("qps", "QPS"), ("range", "min–max"), ("ci", "95% CI"),
               ("spread", "spread"), ("eps", "events/s"), ("cpu", "CPU µs/q (usr+sys)"), ("cs", "cs/q"),
               ("p99", "p99 µs"), ("errors", "errors"), ("n", "n")]
# Server targets: the driver's figures are the client's; the server's processes are measured apart.
SERVER_COLUMNS = [("benchmark", "benchmark"), ("qps", "QPS"), ("range", "min–max"), ("spread", "spread"),
                  ("eps", "events/s"), ("cpu", "client CPU µs/q (usr+sys)"), ("server_cpu", "server CPU µs/q"),
                  ("total_cpu", "total CPU µs/q"), ("cs", "client cs/q"), ("server_cs", "server cs/q"),
                  ("p99", "p99 µs"), ("errors", "errors"), ("n", "n")]


def _columns(m: Matrix, target: str) -> list[tuple[str, str]]:
    has_server = any(c.median_of("server_cpu_us_per_query") is not None
                     for (t, _, _), c in m.cells.items() if t == target)
    return SERVER_COLUMNS if has_server else ABS_COLUMNS


def render_table(m: Matrix, meta: dict[str, Any], console: Console) -> None:
    console.print(f"[bold]rQPS[/bold] relative to [bold]{term(m.base)}[/bold], {_center_name(m)} of repeats")
    for line in legend(m):
        console.print(line, markup=False, highlight=False)
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("benchmark")
    for i in range(1, len(m.targets) + 1):
        table.add_column(f"col-{i}", justify="right")
    current = None
    for group, benchmark, threads in m.rows():
        if group != current:
            table.add_row(f"[dim]{group}[/dim]", *[""] * len(m.targets))
            current = group
        table.add_row(term(_row_label(m, benchmark, threads)),
                      *[rqps_text(m, m.cell(t, benchmark, threads)) for t in m.targets])
    console.print(table)
    console.print(f"[dim]{SIGNIFICANCE}[/dim]")
    by_name = {t["name"]: t for t in meta.get("targets", [])}
    for target in m.targets:
        info = by_name.get(target, {})
        console.print(f"\n[bold]{term(target)}[/bold]  {term(info.get('engine', ''))} "
                      f"{term(info.get('engine_version', ''))}  {term(info.get('library', ''))}  "
                      f"{term(_config_text(info))}")
        t = Table(show_edge=False, pad_edge=False)
        columns = _columns(m, target)
        for _, title in columns:
            t.add_column(title, justify="left" if title == "benchmark" else "right")
        for row in absolute_rows(m, target):
            if row["qps"] == "failed":
                t.add_row(term(row["benchmark"]), "[red]failed[/red]", term(row["error"][:80]),
                          *[""] * (len(columns) - 3))
            else:
                t.add_row(*[term(row[k]) for k, _ in columns])
        console.print(t)
    if m.counters:
        render_counters(m, console)
    console.print(f"\n[dim]{HOW_MEASURED}[/dim]")
    if meta.get("status") not in (None, "complete"):
        console.print(f"[yellow]run status: {meta.get('status')}: the matrix is partial[/yellow]")


def render_counters(m: Matrix, console: Console) -> None:
    modes = {str(p["mode"]) for p in m.counters.values() if p.get("mode")}
    console.print(f"\n[bold]Counters per query[/bold] (mode: {', '.join(sorted(modes)) or 'none'}; 1 thread)")
    t = Table(show_edge=False, pad_edge=False)
    simulated = modes == {"simulated"}
    columns = (["instructions", "I1 miss %", "D1 misses", "LL misses", "mispredicts (sim.)", "est. cycles"]
               if simulated else ["cycles", "instructions", "IPC", "L1i miss/1k instr", "branch miss/1k instr"])
    for title in ["benchmark", "target", *columns, "top function"]:
        t.add_column(title, justify="left" if title in ("benchmark", "target", "top function") else "right")
    for benchmark in m.benchmarks:
        for target in m.targets:
            p = m.counters.get((target, benchmark))
            if p is None:
                continue
            if "per_query" not in p:
                t.add_row(term(benchmark), term(target), term(f"failed: {p.get('error')}"), *[""] * len(columns))
                continue
            q = p["per_query"]
            top = (p.get("top_by_instructions") or p.get("top_by_cycles") or [{}])[0].get("function", "-")
            if p["mode"] == "simulated":
                values = [q["instructions"], q["i1_miss_pct_of_instructions"], q["d1_misses"], q["ll_misses"],
                          q["branch_mispredicts_simulated_predictor"], q["estimated_cycles"]]
            else:
                values = [q.get("cycles"), q.get("instructions"), q.get("ipc"),
                          q.get("l1i_misses_per_1000_instructions"), q.get("branch_misses_per_1000_instructions")]
            t.add_row(term(benchmark), term(target), *[_fmt(v, 2) for v in values], term(top))
    console.print(t)


def _config_text(info: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in info.get("settings") or []]
    build = info.get("build")
    if build:
        pgo = " + PGO" if build.get("pgo") else ""
        parts.append(f"built {' '.join(build['flags'])}{pgo} ({build['compiler']['version']})")
    variant = info.get("process_variant") or {}
    if variant.get("allocator"):
        parts.append(f"allocator={variant['allocator']}")
    if variant.get("hugepages"):
        parts.append(f"hugepages={variant['hugepages']} (kernel THP: {variant.get('kernel_thp')})")
    return " ".join(parts)


def to_markdown(m: Matrix, meta: dict[str, Any]) -> str:
    out = [f"rQPS relative to **{md(m.base)}**, {_center_name(m)} of repeats", ""]
    out += [f"    {line}" for line in legend(m)]
    out += ["", "| benchmark | " + " | ".join(f"col-{i}" for i in range(1, len(m.targets) + 1)) + " |",
            "|---|" + "---:|" * len(m.targets)]
    current = None
    for group, benchmark, threads in m.rows():
        if group != current:
            out.append(f"| **{group}** |" + " |" * len(m.targets))
            current = group
        cells = [rqps_text(m, m.cell(t, benchmark, threads)) for t in m.targets]
        out.append(f"| {md(_row_label(m, benchmark, threads))} | " + " | ".join(cells) + " |")
    out += ["", SIGNIFICANCE]
    for target in m.targets:
        columns = _columns(m, target)
        out += ["", f"**{md(target)}**", "", "| " + " | ".join(t for _, t in columns) + " |",
                "|---|" + "---:|" * (len(columns) - 1)]
        for row in absolute_rows(m, target):
            if row["qps"] == "failed":
                out.append(f"| {md(row['benchmark'])} | failed: {md(row['error'])} |" + " |" * (len(columns) - 2))
            else:
                out.append("| " + " | ".join(md(row[k]) for k, _ in columns) + " |")
    out += ["", HOW_MEASURED]
    return "\n".join(out) + "\n"


def cell_json(m: Matrix, cell: Cell) -> dict[str, Any]:
    q = cell.qps
    return {
        "target": cell.target,
        "benchmark": cell.benchmark,
        "group": cell.group,
        "threads": cell.threads,
        "status": "ok" if q else "failed",
        "n": q.n if q else 0,
        "failed_runs": len(cell.failures),
        "errors": [f.get("error") for f in cell.failures],
        "qps_median": q.median if q else None,
        "qps_center": q.center if q else None,
        "qps_min": q.minimum if q else None,
        "qps_max": q.maximum if q else None,
        "qps_ci95": [q.ci_low, q.ci_high] if q and q.ci_low is not None else None,
        "qps_spread": q.spread if q else None,
        "noisy": _noisy(m, cell),
        "qps_runs": cell.per_run("qps"),
        "eps_median": cell.median_of("eps"),
        "rows_per_s_median": cell.median_of("rows_per_s"),
        "rqps": cell.rqps,
        "trained_on_this": m.was_trained_on(cell.target, cell.benchmark),
        "significant": cell.significant if cell.target != m.base else None,
        "p_value": cell.p_value,
        "cpu_us_per_query": cell.median_of("cpu_us_per_query"),
        "cpu_user_us_per_query": cell.median_of("cpu_user_us_per_query"),
        "cpu_system_us_per_query": cell.median_of("cpu_system_us_per_query"),
        "cs_per_query": cell.median_of("cs_per_query"),
        "cs_voluntary_per_query": cell.median_of("cs_voluntary_per_query"),
        "cs_involuntary_per_query": cell.median_of("cs_involuntary_per_query"),
        "server_cpu_us_per_query": cell.median_of("server_cpu_us_per_query"),
        "server_cpu_user_us_per_query": cell.median_of("server_cpu_user_us_per_query"),
        "server_cpu_system_us_per_query": cell.median_of("server_cpu_system_us_per_query"),
        "server_cs_per_query": cell.median_of("server_cs_per_query"),
        "total_cpu_us_per_query": cell.median_of("total_cpu_us_per_query"),
        "total_cs_per_query": cell.median_of("total_cs_per_query"),
        "p50_us": cell.median_of("p50_us"),
        "p99_us": cell.median_of("p99_us"),
        "max_us": cell.median_of("max_us"),
        "query_errors": sum(int(e) for e in cell.per_run("errors")),
        "counters": _counters_summary(m.counters.get((cell.target, cell.benchmark))),
    }


def _counters_summary(p: dict[str, Any] | None) -> dict[str, Any] | None:
    """A cell's counters without the full per-function table (that stays in results.jsonl)."""
    if p is None:
        return None
    return {k: v for k, v in p.items() if k != "functions"}


def to_json(m: Matrix, meta: dict[str, Any], skipped: list[dict[str, Any]] | None = None) -> str:
    cells = [cell_json(m, c) for _, b, t in m.rows() for target in m.targets
             if (c := m.cell(target, b, t)) is not None]
    doc = {
        "base": m.base,
        "targets": m.targets,
        "aggregate": m.aggregate,
        "status": meta.get("status"),
        "measured_by": HOW_MEASURED,
        "significance": SIGNIFICANCE,
        "cells": cells,
        "skipped_lines": skipped or [],
        "meta": meta,
    }
    return json.dumps(doc, indent=2) + "\n"


def to_csv(m: Matrix, meta: dict[str, Any]) -> str:
    buf = io.StringIO()
    fields = ["target", "benchmark", "group", "threads", "status", "n", "qps_median", "qps_center", "qps_min",
              "qps_max", "rqps", "significant", "p_value", "noisy", "eps_median", "rows_per_s_median",
              "cpu_us_per_query", "cpu_user_us_per_query", "cpu_system_us_per_query", "cs_per_query", "p50_us",
              "p99_us", "max_us", "query_errors", "failed_runs"]
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for _, b, t in m.rows():
        for target in m.targets:
            cell = m.cell(target, b, t)
            if cell is not None:
                writer.writerow(cell_json(m, cell))
    return buf.getvalue()
