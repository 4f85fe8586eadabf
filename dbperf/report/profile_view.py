"""Terminal views of a profile, of a profile diff and of the instruction-count gate."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dbperf.explain.diff import FunctionDelta
from dbperf.records import Profile
from dbperf.report.escape import term

SIMULATED_LABELS = {
    "instructions": "instructions",
    "i1_misses": "I1 misses",
    "i1_miss_pct_of_instructions": "I1 miss % of instructions",
    "d1_misses": "D1 misses",
    "ll_misses": "LL misses",
    "branches": "branches",
    "branch_mispredicts_simulated_predictor": "branch mispredicts (simulated predictor)",
    "estimated_cycles": "estimated cycles (L1 hits + 5×LL hits + 35×RAM)",
}


def render_profile(p: Profile, console: Console) -> None:
    console.print(f"[bold]{term(p.target)}[/bold] / [bold]{term(p.benchmark)}[/bold]: counters mode "
                  f"[bold]{p.mode}[/bold] ({term(p.mode_reason)})", highlight=False)
    console.print(f"[dim]{term(p.tool)}; {term(p.method)}[/dim]", highlight=False)
    table = Table(show_edge=False, pad_edge=False, title="per query")
    table.add_column("counter")
    table.add_column("value", justify="right")
    labels = SIMULATED_LABELS if p.mode == "simulated" else {}
    for key, value in p.per_query.items():
        label = labels.get(key, key.replace("_", " "))
        table.add_row(label + (r" \[simulated]" if p.mode == "simulated" else ""), f"{value:,.2f}")
    console.print(table)
    if p.mode == "simulated":
        pct = p.per_query["i1_miss_pct_of_instructions"]
        verdict = "above" if pct > 1.0 else "below"
        console.print(f"I1 misses are {pct:.2f}% of instructions, {verdict} the 1% that BRIEF §2 calls significant "
                      "(simulated 32K 8-way I1)", highlight=False)
        if p.slowdown and p.slowdown.factor is not None:
            console.print(f"[dim]cachegrind slowdown: {p.slowdown.factor}× ({p.slowdown.simulated_s} s against "
                          f"{p.slowdown.native_s} s natively, whole driver process)[/dim]", highlight=False)
        elif p.slowdown:
            console.print(f"[dim]{term(p.slowdown.what)}: {p.slowdown.simulated_s} s[/dim]", highlight=False)
    else:
        if p.unsupported_events:
            console.print(f"not supported by this PMU (not shown): {', '.join(p.unsupported_events)}",
                          highlight=False, markup=False)
        console.print(f"TopdownL1: {p.topdown_l1}", highlight=False, markup=False)
    for rows, title in ((p.top_by_instructions, "top functions by instructions per query"),
                        (p.top_by_cycles, "top functions by cycles per query (sampled)"),
                        (p.top_by_i1_misses, "top functions by I1 misses")):
        if not rows:
            continue
        t = Table(show_edge=False, pad_edge=False, title=title)
        t.add_column("function")
        t.add_column("per query", justify="right")
        t.add_column("share", justify="right")
        for r in rows:
            per_query = "-" if r.per_query is None else f"{r.per_query:,.1f}"
            t.add_row(term(r.function), per_query, f"{r.share:.1%}")
        console.print(t)


def render_diff(a: str, b: str, metric: str, rows: list[FunctionDelta], total_a: float, total_b: float,
                mode: str, console: Console, top: int) -> None:
    change = (total_b / total_a - 1) * 100 if total_a else 0.0
    console.print(f"[bold]{metric} per query[/bold] ({mode}): {term(a)} {total_a:,.1f} → {term(b)} {total_b:,.1f} "
                  f"({change:+.2f}%)", highlight=False)
    t = Table(show_edge=False, pad_edge=False)
    for title in ("function", a, b, "delta", "delta %"):
        t.add_column(term(title), justify="left" if title == "function" else "right")
    for r in rows[:top]:
        pct = f"{r.delta / r.a * 100:+.1f}%" if r.a else "new"
        t.add_row(term(r.function), f"{r.a:,.1f}", f"{r.b:,.1f}", f"{r.delta:+,.1f}", pct)
    console.print(t)
