"""Rendering the tuning ladder: one line per step as in BRIEF §5, then the per-benchmark detail."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dbperf.report.escape import term
from dbperf.stats.ladder import Step


def _pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


def render_ladder(steps: list[Step], console: Console) -> None:
    console.print("[bold]Tuning ladder[/bold]: each target is a cumulative step; gains are geometric means over "
                  "the benchmarks of QPS ratios")
    table = Table(show_edge=False, pad_edge=False)
    for title in ("step", "target", "vs previous", "vs base", "verdict"):
        table.add_column(title, justify="left" if title in ("target", "verdict") else "right")
    for s in steps:
        if s.index == 0:
            verdict = "base"
        elif s.loses:
            verdict = "[red]LOSES: keep it out[/red]"
        else:
            verdict = "gains"
        losing = s.losing_benchmarks()
        if losing and s.index:
            verdict += "; slower: " + ", ".join(f"{term(b.benchmark)} {_pct(b.vs_previous)}" for b in losing)
        table.add_row(str(s.index), term(s.target), _pct(s.geomean_vs_previous) if s.index else "",
                      _pct(s.geomean_vs_base) if s.index else "", verdict)
    console.print(table)
    line = " → ".join(
        f"{s.target}" if s.index == 0 else f"{s.target} ({_pct(s.geomean_vs_previous)})" for s in steps)
    console.print(line, highlight=False, markup=False)
    if steps:
        console.print()
        detail = Table(show_edge=False, pad_edge=False, title="QPS per step (change over the previous step)")
        detail.add_column("benchmark")
        for s in steps:
            detail.add_column(term(s.target), justify="right")
        for i, row in enumerate(steps[0].benchmarks):
            cells = []
            for s in steps:
                b = s.benchmarks[i]
                if b.qps is None:
                    cells.append("failed")
                elif s.index == 0:
                    cells.append(f"{b.qps:,.0f}")
                else:
                    mark = "" if b.significant else " ~"
                    cells.append(f"{b.qps:,.0f} ({_pct(b.vs_previous)}{mark})")
            detail.add_row(term(row.benchmark), *cells)
        console.print(detail)
        console.print("[dim]~ : the change over the previous step is not significant (Mann-Whitney U, p >= 0.05, "
                      "or fewer than 4 repeats a side)[/dim]")
