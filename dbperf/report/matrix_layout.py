"""What a report shows, built once from a Matrix: the rQPS matrix laid out as [Callaghan 2024-10-23] does (a legend
`col-N : target`, one row per benchmark grouped point, range, write, one column per target, two decimals; `~` not
significant, `!` noisy, `T` trained on), then a block of absolute figures per target, then counters where profiled, then
notes. The formats draw this as the run view's sections (run_view.py; hyperfine's export/markup.rs is the model);
JSON and CSV write the cells through one field list (run_document.py)."""

from __future__ import annotations

from typing import Any

from dbperf.host.noise import HEAVY_FOREIGN_CPU, HEAVY_STEAL
from dbperf.report.cell_text import matrix_rows, row_label, rqps_marks, verdict_word
from dbperf.report.glance_view import MORE, findings, glance_block, short_legend
from dbperf.report.load_view import load_blocks
from dbperf.report.model import Block, Report, Row
from dbperf.report.restarts_view import restart_lines
from dbperf.report.simulated_view import has_simulated, sim_legend, sim_text
from dbperf.report.steady_view import MARK_MEANING as UNSETTLED_MEANING
from dbperf.report.steady_view import steady_lines
from dbperf.report.tiers_view import (
    PREDICTED_LEGEND,
    TIERS_LEGEND,
    cost_model_line,
    disagreement_lines,
    has_model,
    mark,
    predicted_text,
)
from dbperf.report.turns_view import turns_lines
from dbperf.report.verdict_quality import (
    aa_counts,
    aa_line,
    chosen_line,
    decided_metric,
    quality_lines,
    tiers_line,
    unit_line,
)
from dbperf.run_meta import RunMeta, TargetMeta
from dbperf.stats.rqps_matrix import Cell, Matrix
from dbperf.stats.summary import MIN_REPEATS_FOR_TEST, NOISY_SPREAD
from dbperf.stats.verdict import QUANTILE, UNSTABLE_MARGIN

HOW_MEASURED = (
    "QPS: queries / measured wall-clock time of dbperf-driver (sysbench counting: BEGIN and COMMIT are queries). "
    "CPU µs/query and cs/query: getrusage of the driver process over the measured phase; with an in-process engine "
    "that is client and engine together. Server targets: the server's processes (MariaDB's threads; PostgreSQL's "
    "postmaster and backends, exited ones through the postmaster's reaped-children times) from /proc over the same "
    "window; context switches of exited backends are not in /proc. Latency: per event, HdrHistogram."
)
SIGNIFICANCE = (
    f"Mann-Whitney U (p < 0.05, at least {MIN_REPEATS_FOR_TEST} repeats a side) is kept in JSON as a second opinion; "
    f"! : a cell's repeats spread more than {NOISY_SPREAD:.0%} of its median; "
    "T : this PGO build was trained on this benchmark (not a train/test split); "
    f"h : in at least one repeat the noise sensors saw heavy interference (steal over {HEAVY_STEAL:.0%} or processes "
    f"not the lab's using over {HEAVY_FOREIGN_CPU} CPU on the cell's CPUs); "
    + UNSETTLED_MEANING
)


def verdict_legend(min_effect: float) -> str:
    """How the verdict beside each rQPS was decided (stats/verdict.py, stats/sequential.py, stats/planned.py)."""
    return (
        "Verdicts (anytime-valid sequential rule on the per-round log ratios target/base; in duet runs the pair ran "
        "at the same moment): a confidence sequence that covers the true change at every round at once with "
        "probability 99.5% per metric (wall clock, CPU time; a cell called changed by either stays under a 1% false "
        f"alarm however many rounds were looked at); faster/slower when it excludes 0 and the estimate exceeds "
        f"min_effect {min_effect:.1%}; same : it lies within ±min_effect; "
        "? ±x% : undecided, a change up to x% (its far end) could hide; ? alone : no bound yet (too few rounds); "
        f"unstable : its half-width exceeds min_effect + {UNSTABLE_MARGIN:.0%}; a level shift within a target's "
        "ratios (a change point) leaves the cell undecided, unless both levels lie beyond min_effect on the side of "
        "its call (\"both faster: called\"). A run whose rounds were planned (a fixed repeats, or what its budget "
        "afforded) is decided at a half, three quarters and all of them by a group-sequential test instead, whose "
        "interval covers the true change at those looks at once (99.5% per metric; past the plan, the confidence "
        "sequence keeps the bound). Runs without round pairs fall back to ClickHouse's "
        f"randomization rule ({round(QUANTILE * 100)}th percentile of |diff| over relabelings; ·p : its paired "
        "view decided). "
) + SIGNIFICANCE



def rqps_text(m: Matrix, cell: Cell | None) -> str:
    if cell is None:
        return "-"
    if cell.rqps is None:
        return "failed" if cell.failures and not cell.runs else "-"
    marks = rqps_marks(m, cell)
    verdict = "" if cell.target == m.base else " " + verdict_text(cell)
    if has_cpu_verdicts(m) and (d := decided_metric(cell)) is not None and d.headline:
        verdict += DECIDED_MARK
    return f"{cell.rqps:.2f}{verdict}{(' ' + marks) if marks else ''}"


def verdict_text(cell: Cell) -> str:
    """The wall-clock verdict: faster, slower, same, unstable; `?` with what an undecided cell could hide; `·p`
    when the paired view decided."""
    return verdict_word(cell.verdict_detail)


DECIDED_MARK = "*"
CPU_LEGEND = (
    "col-N cpu : the CPU-time verdict (queries per CPU second of the driver, plus a lab-started server's; the same "
    f"rule as the wall clock's, labelled apart); {DECIDED_MARK} : the metric that decided the cell: the wall clock "
    "when it decided, else the CPU time")


def has_cpu_verdicts(m: Matrix) -> bool:
    return any(c.cpu_verdict_detail is not None for c in m.cells.values())


def cpu_text(m: Matrix, cell: Cell | None) -> str:
    """The CPU-time verdict beside the wall-clock one; nothing where the cell has none."""
    if cell is None or cell.target == m.base or cell.cpu_verdict_detail is None:
        return ""
    v = cell.cpu_verdict_detail
    diff = f"{v.diff:+.1%} " if v.decided else ""
    return diff + verdict_word(v) + (DECIDED_MARK if (d := decided_metric(cell)) is not None and not d.headline else "")


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
            error = (cell.failures[-1].error or "failed") if cell.failures else "no runs"
            rows.append({"benchmark": row_label(m, benchmark, threads), "qps": "failed", "error": error})
            continue
        q = cell.qps
        rows_per_s = cell.median_of("rows_per_s")
        rows.append({
            "benchmark": row_label(m, benchmark, threads),
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


def _config_text(info: TargetMeta) -> str:
    parts = [f"{k}={v}" for k, v in info.settings or []]
    build = info.build
    release = (build or {}).get("release")
    if release:
        parts.append(f"released binaries {release.get('engine')}@{release.get('version')}")
    elif build:
        pgo = " + PGO" if build.get("pgo") else ""
        parts.append(f"built {' '.join(build['flags'])}{pgo} ({build['compiler']['version']})")
    variant = info.process_variant or {}
    if variant.get("allocator"):
        parts.append(f"allocator={variant['allocator']}")
    if variant.get("hugepages"):
        parts.append(f"hugepages={variant['hugepages']} (kernel THP: {variant.get('kernel_thp')})")
    if info.remedies:  # noise remedies applied before each cell (host/remedies/)
        parts.append(f"remedies={','.join(info.remedies)}")
    if info.remedies_not_applied:
        parts.append(f"remedies not applied: {', '.join(info.remedies_not_applied)}")
    if info.tool:  # sysbench or pgbench ran its cells (tooldrivers/): QPS and CPU are that tool's
        parts.append(f"driven by {info.tool}")
    return " ".join(parts)



def _rqps_block(m: Matrix) -> Block:
    cpu, sim, predicted = has_cpu_verdicts(m), has_simulated(m), has_model(m)
    rows = matrix_rows(m, lambda t, cell: _target_columns(m, t, cell, cpu, sim, predicted))
    header = [title for i, t in enumerate(m.targets, 1)
              for title in (f"col-{i}", *([f"col-{i} cpu"] if cpu and t != m.base else []),
                            *([f"col-{i} simulated Δcyc"] if sim else []),
                            *([f"col-{i} predicted CPU Δ"] if predicted and t != m.base else []))]
    return Block("rQPS", "", ("benchmark", *header), rows)


def _target_columns(m: Matrix, target: str, cell: Cell | None, cpu: bool, sim: bool, predicted: bool) -> list[str]:
    """A target's columns of the matrix: rQPS with the wall-clock verdict; the CPU-time verdict (not for the base);
    the simulated Δ est. cycles with ≠ where the tiers disagree; the calibrated prediction where the host has a
    cost model: each tier in a column of its own."""
    compared = target != m.base
    return [rqps_text(m, cell), *([cpu_text(m, cell)] if cpu and compared else []),
            *([sim_text(cell) + mark(cell)] if sim else []),
            *([predicted_text(cell)] if predicted and compared else [])]


def _target_block(m: Matrix, target: str, info: TargetMeta) -> Block:
    columns = _columns(m, target)
    rows = tuple(Row((r["benchmark"],), failed=r["error"]) if r["qps"] == "failed"
                 else Row(tuple(r[k] for k, _ in columns)) for r in absolute_rows(m, target))
    subtitle = "  ".join(x for x in (f"{info.engine or ''} {info.engine_version or ''}".strip(),
                                     info.library or "", _config_text(info)) if x)
    return Block(target, subtitle, tuple(title for _, title in columns), rows)


def _counters_block(m: Matrix) -> Block:
    modes = {r.counters.mode for r in m.counters.values() if r.counters}
    simulated = modes == {"simulated"}
    columns = (("instructions", "I1 miss %", "D1 misses", "LL misses", "mispredicts (sim.)", "est. cycles")
               if simulated else ("cycles", "instructions", "IPC", "L1i miss/1k instr", "branch miss/1k instr"))
    rows: list[Row] = []
    for benchmark in m.benchmarks:
        for target in m.targets:
            record = m.counters.get((target, benchmark))
            if record is None:
                continue
            p = record.counters
            if p is None:
                rows.append(Row((benchmark, target), failed=str(record.error)))
                continue
            q = p.per_query
            ranked = p.top_by_instructions or p.top_by_cycles
            top = ranked[0].function if ranked else "-"
            values: list[float | None]
            if p.mode == "simulated":
                values = [q["instructions"], q["i1_miss_pct_of_instructions"], q["d1_misses"], q["ll_misses"],
                          q["branch_mispredicts_simulated_predictor"], q["estimated_cycles"]]
            else:
                values = [q.get("cycles"), q.get("instructions"), q.get("ipc"),
                          q.get("l1i_misses_per_1000_instructions"), q.get("branch_misses_per_1000_instructions")]
            rows.append(Row((benchmark, target, *[_fmt(v, 2) for v in values], str(top))))
    return Block("Counters per query", f"mode: {', '.join(sorted(modes)) or 'none'}; 1 thread",
                 ("benchmark", "target", *columns, "top function"), tuple(rows), text_columns=2)


def aa_check(m: Matrix, meta: RunMeta) -> dict[str, Any] | None:
    """The A/A copy's cells (experiment/aa.py): how many were called faster or slower (false alarms), of how many
    have a verdict, and how many were decided at all."""
    target = meta.aa_target
    if not target:
        return None
    cells = [c for (t, _, _), c in m.cells.items() if t == target and c.verdict is not None]
    changed = [c for c in cells if c.verdict in ("faster", "slower")]
    return {"target": target, "cells": len(cells), "changed": len(changed),
            "decided": sum(1 for c in cells if c.verdict_detail and c.verdict_detail.decided),
            "changed_cells": [f"{c.benchmark} t={c.threads}: {c.verdict}"
                              for c in changed],
            # the same counts for the CPU-time verdict (None when the run has none)
            "cpu": aa_counts(m, target, lambda c: c.cpu_verdict_detail)}


def _run_lines(meta: RunMeta) -> list[str]:
    """How the rounds ran: CPUs, order of targets, repeats (auto: why each stopped)."""
    lines = []
    cpus = meta.cpus
    if cpus:
        where = ("not pinned" if cpus.get("client") is None else
                 f"driver on CPU {','.join(map(str, cpus['client']))}, lab servers on CPU "
                 f"{','.join(map(str, cpus['server'] or [])) or 'any'}")
        lines.append(f"cpus: {where} ({cpus.get('how')})")
    if meta.order:
        lines.append(f"order of targets within a round: {meta.order}")
    if meta.repeats == "auto":
        stopped = "; ".join(f"{r.benchmark} t={r.threads}: {r.stopped}" for r in meta.rounds or [])
        lines.append(f"repeats: auto, budget {meta.budget_s or 0:.0f} s" + (f" ({stopped})" if stopped else ""))
    if meta.resumed_at:  # two sittings or more: servers started and data loaded again between them
        lines.append(f"resumed (--resume) at {', '.join(meta.resumed_at)}: the repeats before and after come from "
                     "separate sittings (servers started and data loaded again)")
    for x in meta.extended or []:  # rounds added after a look at the verdicts: sound, as they are anytime-valid
        lines.append(f"extended (--extend) at {x.at} by {x.budget_s:.0f} s: the groups that had spent their budget "
                     "share with cells undecided went on")
    return lines


def _metric_lines(m: Matrix) -> list[str]:
    """What the matrix's extra columns are, when it has them: the CPU-time verdict, the simulated tier, whether the
    tiers agree and the calibrated prediction (or that the host has no cost model, and how to make one)."""
    lines = ([CPU_LEGEND] if has_cpu_verdicts(m) else []) + sim_legend(m)
    if has_simulated(m):
        model = cost_model_line(m)
        lines += [TIERS_LEGEND, *([PREDICTED_LEGEND] if has_model(m) else []), *([model] if model else [])]
    return lines


def _caveats(m: Matrix, meta: RunMeta) -> list[str]:
    """What the glance keeps of how the run went: the sittings it took, the servers restarted in it, and in slices
    the targets' stalls that fell in other targets' turns."""
    return ([line for line in _run_lines(meta) if line.startswith(("resumed", "extended"))] + restart_lines(m, meta)
            + turns_lines(m) + unit_line(m) + chosen_line(meta))


def build_report(m: Matrix, meta: RunMeta, verbose: bool = True) -> Report:
    """The full layout (`verbose`: every tier in its own column, the legend and the notes in full: `--verbose`,
    Markdown, HTML), or the glance the terminal shows by default (glance_view.py)."""
    blocks = [_rqps_block(m) if verbose else glance_block(m),
              *[_target_block(m, t, meta.target(t) or TargetMeta(name=t)) for t in m.targets]]
    blocks += load_blocks(m, meta)  # open loop: asked vs achieved rate; chosen percentiles
    if m.counters:
        blocks.append(_counters_block(m))
    status = meta.status
    heading = f"rQPS relative to {m.base}, {_center_name(m)} of repeats"
    warning = None if status in (None, "complete") else f"run status: {status}: the matrix is partial"
    if not verbose:
        return Report(heading=heading, legend=short_legend(m, meta), blocks=tuple(blocks),
                      findings=(*findings(m), *_caveats(m, meta)), matrix_notes=(MORE,), notes=(), warning=warning)
    return Report(heading=heading,
                  legend=(*legend(m), *_run_lines(meta), *restart_lines(m, meta), *steady_lines(m, meta),
                          *turns_lines(m),
                          *_metric_lines(m), *quality_lines(m), *tiers_line(m, meta), *aa_line(m, meta),
                          *chosen_line(meta), *disagreement_lines(m)),
                  blocks=tuple(blocks), findings=(), matrix_notes=(verdict_legend(m.min_effect),),
                  notes=(HOW_MEASURED,), warning=warning)
