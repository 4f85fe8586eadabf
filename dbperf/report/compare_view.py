"""`dbperf compare DIR_A DIR_B`: a summary (rows benchmarks, one column per target: B's rQPS against A's with its
verdict), then per target the figures of both runs; Markdown collapses the per-target tables in <details>, as a
GitHub comment or pull request shows them. Every format renders the same rows (`compare_rows`)."""

from __future__ import annotations

from typing import Any

from dbperf.host.cpu_identity import CpuIdentity, cpu_caveat
from dbperf.records import to_builtins
from dbperf.report import charts
from dbperf.report.cell_text import noisy
from dbperf.report.html import VERDICT_MEANINGS
from dbperf.report.model import Block, ChartPage, Row, Section, Swatch, View
from dbperf.run_meta import HostMeta
from dbperf.stats.cell_verdict import VERDICT_COLOURS, cell_verdict
from dbperf.stats.compare import Pair, Side
from dbperf.stats.contradiction import Contradiction
from dbperf.stats.rqps_matrix import Cell, Matrix

DETAIL_HEADER = ("benchmark", "QPS A", "QPS B", "B / A", "verdict", "p", "spread A", "spread B", "CPU µs/q A",
                 "CPU µs/q B", "p99 µs A", "p99 µs B", "n A", "n B")


def _f(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _side(cell: Cell | None, tag: str) -> dict[str, Any]:
    """One run's figures of a cell (A's or B's), the columns ending in `_tag`."""
    qps = cell.qps if cell else None
    return {f"qps_{tag}": qps.center if qps else None, f"spread_{tag}": qps.spread if qps else None,
            f"cpu_{tag}": cell.median_of("cpu_us_per_query") if cell else None,
            f"p99_{tag}": cell.median_of("p99_us") if cell else None, f"n_{tag}": qps.n if qps else 0}


def _compare_row(m: Matrix, a: Cell | None, b: Cell | None, benchmark: str, threads: int) -> dict[str, Any]:
    v = cell_verdict(m, b)
    word = v.word if b is not None else "not in B" if a is not None else "-"
    sa, sb = _side(a, "a"), _side(b, "b")
    return {
        "benchmark": benchmark if len(m.threads) == 1 else f"{benchmark} t={threads}",
        "threads": threads, "qps_a": sa["qps_a"], "qps_b": sb["qps_b"],
        "ratio": b.rqps if b else None, "verdict": word, "decided_by": v.decided_by,
        "p_value": b.p_value if b else None, "spread_a": sa["spread_a"], "spread_b": sb["spread_b"],
        "noisy": bool(b and noisy(m, b)), "cpu_a": sa["cpu_a"], "cpu_b": sb["cpu_b"],
        "p99_a": sa["p99_a"], "p99_b": sb["p99_b"], "n_a": sa["n_a"], "n_b": sb["n_b"],
    }


def compare_rows(pair: Pair) -> list[dict[str, Any]]:
    m = pair.matrix
    return [_compare_row(m, m.cell(pair.a, benchmark, threads), m.cell(pair.b, benchmark, threads), benchmark,
                         threads) for _, benchmark, threads in m.rows()]


MARK = {"faster": "+", "slower": "-", "same": "~", "undecided": "?", "unstable": "!", "failed": "failed"}


def _short(row: dict[str, Any]) -> str:
    if row["ratio"] is None:
        return "failed" if row["verdict"] == "failed" else "-"
    return f"{row['ratio']:.2f} {MARK.get(row['verdict'], '')}".strip() + (" !" if row["noisy"] else "")


def _detail(row: dict[str, Any]) -> tuple[str, ...]:
    return (row["benchmark"], _f(row["qps_a"], ",.0f"), _f(row["qps_b"], ",.0f"), _f(row["ratio"], ".3f"),
            row["verdict"], _f(row["p_value"], ".2g"), _f(row["spread_a"], ".1%"), _f(row["spread_b"], ".1%"),
            _f(row["cpu_a"], ".2f"), _f(row["cpu_b"], ".2f"), _f(row["p99_a"], ",.1f"), _f(row["p99_b"], ",.1f"),
            str(row["n_a"]), str(row["n_b"]))


def _side_text(side: Side) -> str:
    meta, host = side.run_meta, side.run_meta.host or HostMeta()
    return (f"{side.label}: {side.directory} (host {host.hostname or '?'}, {_identity(side).named}; "
            f"started {meta.started_at or '?'}; status {meta.status or '?'})")


def _identity(side: Side) -> CpuIdentity:
    host = side.run_meta.host or HostMeta()
    return CpuIdentity(host.cpu_model, host.cpu_id, host.cores)


def _cpu_text(a: Side, b: Side) -> str | None:
    """Whether A and B ran on the same CPU, when it may not be so (host/cpu_identity.py)."""
    return cpu_caveat(_identity(a), _identity(b), f"in {a.label}", f"in {b.label}")


def _summary(pairs: list[Pair]) -> tuple[list[str], list[tuple[str, ...]]]:
    per = [{r["benchmark"]: r for r in compare_rows(p)} for p in pairs]
    order = list(dict.fromkeys(b for rows in per for b in rows))
    return ([p.target for p in pairs],
            [(b, *[_short(rows[b]) if b in rows else "-" for rows in per]) for b in order])


NOTE = ("B / A: B's center QPS over A's; + faster, - slower, ~ same by the verdict rule of a single run's report "
        "(randomization test, unpaired: two runs share no rounds; 8 repeats a side needed), ? undecided, "
        "! a side spread over 10%. "
        "The two runs may differ in host, day and load: compare their metadata before reading a verdict as the "
        "engine's.")


CONTRADICTED = ("Contradicted: each run decided these cells against its own base, and the two decisions disagree. "
                "Each verdict holds of its own run (for a server, of the processes that run started); together they "
                "say the difference is not the builds' alone: rerun, and read docs/verdicts.md on reruns.")


def _contradiction_text(clashes: list[Contradiction]) -> tuple[str, ...]:
    if not clashes:
        return ()
    return (f"{CONTRADICTED}", *(f"  {c.line()}" for c in clashes))


def compare_view(a: Side, b: Side, pairs: list[Pair], skipped: dict[str, list[dict[str, Any]]] | None = None,
                 clashes: list[Contradiction] | None = None) -> View:
    """The summary (B / A per benchmark and target), then each target's figures of both runs, folded in Markdown;
    CSV one line per (target, benchmark); HTML adds the heat map and the repeats (compare_page). `skipped`: the
    lines of each side's results.jsonl that were not used ({"a": [{"line", "reason"}], "b": ...}), in JSON.
    `clashes`: the cells whose own verdicts in the two runs contradict (stats/contradiction.py), said under the
    summary and in JSON."""
    clashes = clashes or []
    why = {(c.target, c.benchmark if len(pairs[0].matrix.threads) == 1 else f"{c.benchmark} t={c.threads}",
            c.threads): c.why for c in clashes} if pairs else {}
    targets, rows = _summary(pairs)
    caveat = _cpu_text(a, b)
    summary = Section(title=f"{b.label} / {a.label}",
                      text=(_side_text(a), _side_text(b), *((caveat,) if caveat else ()),
                            *_contradiction_text(clashes)),
                      block=Block("", "", ("benchmark", *targets), tuple(Row(r) for r in rows)))
    details = [Section(title=p.target, subtitle="both runs' figures", collapsed=True,
                       block=Block("", "", DETAIL_HEADER, tuple(Row(_detail(r)) for r in compare_rows(p)),
                                   left=(DETAIL_HEADER.index("verdict"),)))
               for p in pairs]
    document = {"a": {"label": a.label, "directory": str(a.directory), "host": to_builtins(a.run_meta.host),
                      "started_at": a.run_meta.started_at},
                "b": {"label": b.label, "directory": str(b.directory), "host": to_builtins(b.run_meta.host),
                      "started_at": b.run_meta.started_at},
                "cpu_caveat": caveat, "targets": {p.target: compare_rows(p) for p in pairs}, "note": NOTE,
                "skipped_lines": skipped or {"a": [], "b": []},
                "contradictions": [to_builtins(c) for c in clashes]}
    return View("compare", "", (summary, *details), notes=(NOTE,), document=document,
                rows=tuple({"target": p.target, **row, "contradicted": why.get((p.target, row["benchmark"],
                                                                                 row["threads"]), "")}
                           for p in pairs for row in compare_rows(p)),
                page=lambda: compare_page(a, b, pairs, clashes))


def compare_page(a: Side, b: Side, pairs: list[Pair], clashes: list[Contradiction] | None = None) -> ChartPage:
    """The summary with the verdicts' legend, then per target its heat map, its repeats and both runs' figures."""
    caveat = _cpu_text(a, b)
    targets, rows = _summary(pairs)
    swatches = tuple(Swatch(k, c, VERDICT_MEANINGS.get(k, "")) for k, c in VERDICT_COLOURS.items())
    out = [Section(notes=(_side_text(a) + "\n" + _side_text(b) + (f"\n{caveat}" if caveat else ""),
                          *_contradiction_text(clashes or []))),
           Section(title="B / A", anchor="summary", swatches=swatches, notes=(NOTE,),
                   block=Block("", "", ("benchmark", *targets), tuple(Row(r) for r in rows)))]
    for i, p in enumerate(pairs):
        out += [Section(title=p.target, anchor=f"target-{i}", figures=(charts.rqps_heatmap(p.matrix),)),
                Section(grid=True, figures=tuple(charts.repeats_figure(p.matrix, bench, th)
                                                 for _, bench, th in p.matrix.rows()),
                        block=Block("", "", DETAIL_HEADER, tuple(Row(_detail(r)) for r in compare_rows(p))))]
    return ChartPage(f"dbperf compare: {b.label} / {a.label}", tuple(out))
