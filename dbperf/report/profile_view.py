"""A profile, a profile diff and the instruction-count gate as Views (any format draws them)."""

from __future__ import annotations

from dbperf.explain.diff import FunctionDelta
from dbperf.records import Profile, to_builtins
from dbperf.report.model import Block, Row, Section, View

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


def _mode_lines(p: Profile) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the counters mode adds under the table: lines, and dim notes."""
    if p.mode == "simulated":
        pct = p.per_query["i1_miss_pct_of_instructions"]
        verdict = "above" if pct > 1.0 else "below"
        lines = (f"I1 misses are {pct:.2f}% of instructions, {verdict} the 1% that Intel's optimization manual calls "
                 "significant ([Nielsen 2014-01-20]; simulated 32K 8-way I1)",)
        if p.slowdown and p.slowdown.factor is not None:
            return lines, (f"cachegrind slowdown: {p.slowdown.factor}× ({p.slowdown.simulated_s} s against "
                           f"{p.slowdown.native_s} s natively, whole driver process)",)
        return lines, ((f"{p.slowdown.what}: {p.slowdown.simulated_s} s",) if p.slowdown else ())
    unsupported = ((f"not supported by this PMU (not shown): {', '.join(p.unsupported_events)}",)
                   if p.unsupported_events else ())
    return (*unsupported, f"TopdownL1: {p.topdown_l1}"), ()


def profile_view(p: Profile) -> View:
    labels = SIMULATED_LABELS if p.mode == "simulated" else {}
    mark = " [simulated]" if p.mode == "simulated" else ""
    per_query = Block("", "", ("counter", "value"), tuple(Row((labels.get(k, k.replace("_", " ")) + mark, f"{v:,.2f}"))
                                                          for k, v in p.per_query.items()))
    lines, notes = _mode_lines(p)
    sections = [Section(notes=(f"{p.tool}; {p.method}",)), Section(title="per query", block=per_query),
                Section(text=lines, notes=notes)]
    for rows, title in ((p.top_by_instructions, "top functions by instructions per query"),
                        (p.top_by_cycles, "top functions by cycles per query (sampled)"),
                        (p.top_by_i1_misses, "top functions by I1 misses")):
        if rows:
            sections.append(Section(title=title, block=Block("", "", ("function", "per query", "share"), tuple(
                Row((r.function, "-" if r.per_query is None else f"{r.per_query:,.1f}", f"{r.share:.1%}"))
                for r in rows))))
    return View("profile", f"{p.target} / {p.benchmark}: counters mode {p.mode} ({p.mode_reason})",
                tuple(sections), rows=tuple({"counter": k, "per_query": v} for k, v in p.per_query.items()),
                document=to_builtins(p))


def diff_view(a: str, b: str, metric: str, rows: list[FunctionDelta], total_a: float, total_b: float, mode: str,
              top: int) -> View:
    change = (total_b / total_a - 1) * 100 if total_a else 0.0
    shown = rows[:top]
    block = Block("", "", ("function", a, b, "delta", "delta %"), tuple(
        Row((r.function, f"{r.a:,.1f}", f"{r.b:,.1f}", f"{r.delta:+,.1f}", f"{r.delta / r.a * 100:+.1f}%" if r.a
             else "new")) for r in shown))
    return View("diff", f"{metric} per query ({mode}): {a} {total_a:,.1f} → {b} {total_b:,.1f} ({change:+.2f}%)",
                (Section(block=block),),
                rows=tuple({"function": r.function, "a": r.a, "b": r.b, "delta": r.delta} for r in shown),
                document={"metric": metric, "mode": mode, "a": a, "b": b, "total_a": total_a, "total_b": total_b,
                          "functions": [{"function": r.function, "a": r.a, "b": r.b, "delta": r.delta}
                                        for r in shown]})


def gate_view(threshold: float, base: str, rows: list[tuple[str, str, float, float | None, bool]]) -> View:
    """`dbperf check --instructions`: rows (benchmark, target, instructions per query, change over the base or None
    on the base's row, regression)."""
    block = Block("", "", ("benchmark", "target", "instructions/query", f"vs {base}", "verdict"), tuple(
        Row((bench, target, f"{ir:,.1f}", "base" if change is None else f"{change:+.3%}",
             "" if change is None else "REGRESSION" if bad else "ok"))
        for bench, target, ir, change, bad in rows), text_columns=2, left=(4,))
    return View("check", "", (Section(title=f"simulated instructions per query (cachegrind), threshold "
                                            f"+{threshold:.2%}", block=block),),
                rows=tuple({"benchmark": b, "target": t, "instructions_per_query": ir, "change": c, "regression": r}
                           for b, t, ir, c, r in rows))
