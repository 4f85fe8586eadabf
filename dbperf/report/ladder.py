"""The tuning ladder as a View: one line per step as in [Ronström 2008-03-25], then the per-benchmark detail."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from dbperf.report.model import Block, Row, Section, View
from dbperf.stats.ladder import Step


def _pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


def _verdict_plain(s: Step) -> str:
    verdict = "base" if s.index == 0 else ("LOSES: keep it out" if s.loses else "gains")
    losing = s.losing_benchmarks()
    if losing and s.index:
        verdict += "; slower: " + ", ".join(f"{b.benchmark} {_pct(b.vs_previous)}" for b in losing)
    return verdict


def ladder_view(ladders: list[tuple[str | None, list[Step]]]) -> View:
    """`report --ladder` as a document: per ladder (one per host of a fleet run, else one), the steps and the QPS
    per step; CSV rows are (step, benchmark) with the step's geometric means repeated."""
    sections: list[Section] = []
    rows: list[dict[str, Any]] = []
    for host, steps in ladders:
        where = f"{host}: " if host else ""
        sections.append(Section(
            title=f"{where}steps", lines=(" → ".join(s.target if s.index == 0 else
                                                     f"{s.target} ({_pct(s.geomean_vs_previous)})" for s in steps),),
            block=Block("", "", ("step", "target", "vs previous", "vs base", "verdict"),
                        tuple(Row((str(s.index), s.target, _pct(s.geomean_vs_previous) if s.index else "",
                                   _pct(s.geomean_vs_base) if s.index else "", _verdict_plain(s))) for s in steps),
                        text_columns=2, left=(4,))))
        if steps:
            detail = []
            for i, first in enumerate(steps[0].benchmarks):
                cells = [first.benchmark]
                for s in steps:
                    b = s.benchmarks[i]
                    cells.append("failed" if b.qps is None else f"{b.qps:,.0f}" if s.index == 0
                                 else f"{b.qps:,.0f} ({_pct(b.vs_previous)}{'' if b.significant else ' ~'})")
                detail.append(Row(tuple(cells)))
            sections.append(Section(title=f"{where}QPS per step", subtitle="change over the previous step",
                                    block=Block("", "", ("benchmark", *[s.target for s in steps]), tuple(detail))))
        for s in steps:
            for b in s.benchmarks:
                rows.append({**({"host": host} if host else {}), "step": s.index, "target": s.target,
                             "benchmark": b.benchmark, "threads": b.threads, "qps": b.qps,
                             "vs_previous": b.vs_previous, "vs_base": b.vs_base, "significant": b.significant,
                             "step_vs_previous": s.geomean_vs_previous, "step_vs_base": s.geomean_vs_base,
                             "step_loses": s.loses})
    data = {"ladders": [{"host": host, "steps": [{**asdict(s), "loses": s.loses} for s in steps]}
                        for host, steps in ladders]}
    return View("ladder", "Tuning ladder", tuple(sections), rows=tuple(rows), data=data, notes=(
        "Each target is a cumulative step; gains are geometric means over the benchmarks of QPS ratios. ~ : the "
        "change over the previous step is not significant (Mann-Whitney U, p >= 0.05, or fewer than 4 repeats a "
        "side).",))
