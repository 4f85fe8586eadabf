"""`dbperf explain DIR` as a View (explain/explanation.py): per explained cell, why the tiers disagree, every simulated
counter of the base and the target, the leads (explain/leads.py) and what the hardware tier adds; the same
document is the run's explain.json. Leads are said to be leads wherever they are shown."""

from __future__ import annotations

from typing import Any

from dbperf.explain.diff import profile_diff
from dbperf.explain.explanation import CellExplanation, Explanation
from dbperf.explain.leads import COUNTER_WORDS, Lead, leads_stall, stall_change
from dbperf.records import Profile
from dbperf.report.model import Block, Row, Section, View

TOP = 10  # leads per cell on the terminal; the document keeps every one
DOCUMENT_FUNCTIONS = 50  # per-function rows of the diff kept in the document, largest change of instructions first
HARDWARE_FUNCTIONS = 10
FORMAT_VERSION = 1
LEADS_NOTE = ("leads, not proof: a lead is a function whose simulated stall-type counters (branch mispredicts of "
              "cachegrind's predictor, I1/D1/LL misses of its pinned caches) moved against its instruction count; "
              "the simulator's caches and predictor are models, not this CPU's, and the cost per event ranks them, "
              "it was not measured")
# What the hardware tier measures that the simulated one cannot (explain/perfstat.py STAT_EVENTS, TopdownL1).
SHORT_WORDS = {"branch_mispredicts_simulated_predictor": "mispredicts", "i1_misses": "I1 misses",
               "d1_misses": "D1 misses", "ll_misses": "LL misses"}
UNNAMED = "???"  # cachegrind's name for code it has no symbol for
UNNAMED_NOTE = "??? : code cachegrind has no symbol for (the dynamic loader, a stripped object)"
HARDWARE_WORDS = "cycles, branch-misses and front-end counters (L1-icache-load-misses, TopdownL1's frontend bound)"


def _num(v: float, signed: bool = False) -> str:
    sign = "+" if signed else ""
    if abs(v) >= 1000:
        return f"{v:{sign},.0f}"
    if abs(v) >= 10:
        return f"{v:{sign},.1f}"
    return f"{v:{sign},.3f}"


def _change(a: float, b: float) -> float | None:
    return b / a - 1 if a else None


def _pct(change: float | None) -> str:
    return "new" if change is None else f"{change:+.1%}"


def counters_of(base: Profile, target: Profile) -> list[tuple[str, float, float]]:
    """(counter, base, target) per query, every simulated counter both profiles measured, in COUNTER_WORDS order."""
    return [(k, base.per_query[k], target.per_query[k]) for k in COUNTER_WORDS
            if k in base.per_query and k in target.per_query]


def _counters_block(e: Explanation, c: CellExplanation) -> Block:
    return Block("", "", ("simulated per query", e.base, c.target, "Δ", "Δ %"), tuple(
        Row((COUNTER_WORDS[k], _num(a), _num(b), _num(b - a, True), "-" if a == b == 0 else _pct(_change(a, b))))
        for k, a, b in counters_of(c.base, c.profile)))


def _leads_section(e: Explanation, c: CellExplanation, top: int) -> Section:
    unit = e.costs.unit
    if not c.leads:
        return Section(title="leads", text=("none: no function's stall-type counters moved against its instruction "
                                            "count by one event in a hundred queries or more",))
    shown = c.leads[:top]
    whole, net = stall_change(c.base.per_query, c.profile.per_query, e.costs), leads_stall(c.leads)
    text = (f"estimated stall Δ, {unit}/q: whole cell {_stalls(whole)}; the {len(c.leads)} lead(s) together "
            f"{_stalls(net)}", *_reading(c.measured, sum(whole.values())))
    rows = tuple(Row((
        lead.function, SHORT_WORDS[lead.counter], _instructions(lead), f"{_num(lead.a)} → {_num(lead.b)}",
        _num(lead.delta, True), "-" if lead.share is None else f"{lead.share:+.0%}", _num(lead.stall_cost, True),
        lead.toward + (" (as measured)" if lead.toward == c.measured else ""),
    )) for lead in shown)
    block = Block("", "", ("function", "counter", "Δ instructions/q", "counter/q", "Δ/q", "share of cell Δ",
                           f"est. stall Δ {unit}", "pushes toward"), rows, text_columns=2, left=(7,))
    more = len(c.leads) - top
    notes = ["share of cell Δ: of the cell's total change of that counter (negative: against the total's way)",
             *([f"{more} more lead(s) in explain.json"] if more > 0 else []),
             *([UNNAMED_NOTE] if any(lead.function == UNNAMED for lead in shown) else [])]
    first = f"those pushing toward the measured {c.measured} first, " if c.measured in ("faster", "slower") else ""
    return Section(title="leads", subtitle=f"stall-type counters that moved against the instruction count, {first}"
                                           "largest estimated stall cost first", text=text, block=block,
                   notes=tuple(notes))


def _reading(measured: str | None, whole: float) -> tuple[str, ...]:
    """What the whole cell's stall-type counters say of a measured faster or slower."""
    if measured not in ("faster", "slower") or whole == 0:
        return ()
    way = "slower" if whole > 0 else "faster"
    if way == measured:
        return (f"the whole cell's simulated stalls push toward {way}, as measured: the leads that push that way are "
                "where to look",)
    return (f"the whole cell's simulated stalls push toward {way} too, against the measured {measured}: nothing the "
            "simulated tier counts accounts for it; what it does not count may (system calls and I/O, locked "
            "instructions, divisions, page walks: the hardware tier's cycles)",)


def _stalls(by_counter: dict[str, float]) -> str:
    total = sum(by_counter.values())
    parts = ", ".join(f"{SHORT_WORDS[c]} {_num(v, True)}" for c, v in by_counter.items())
    return f"{_num(total, True)}" + (f" ({parts})" if parts else "")


def _instructions(lead: Lead) -> str:
    if lead.instructions_delta == 0:
        return "same"
    return f"{_num(lead.instructions_delta, True)} ({_pct(_change(lead.instructions_a, lead.instructions_b))})"


def _hardware_section(e: Explanation, c: CellExplanation) -> Section:
    title = "hardware tier"
    if c.hardware_error is not None:
        return Section(title=title, text=(f"not measured: the hardware diff failed: {c.hardware_error}",))
    if c.hardware is None:
        return Section(title=title, text=(
            f"not measured: this host has no PMU ({e.host_mode.reason}). On a host with one, the hardware tier "
            f"measures the same two targets' {HARDWARE_WORDS}: `dbperf diff {e.experiment} {e.base} {c.target} "
            f"--benchmark {c.benchmark} --mode hardware`",))
    base, target = c.hardware
    keys = [k for k in base.per_query if k in target.per_query]
    block = Block("", "", ("measured per query (perf)", e.base, c.target, "Δ %"), tuple(
        Row((k.replace("_", " "), _num(base.per_query[k]), _num(target.per_query[k]),
             _pct(_change(base.per_query[k], target.per_query[k])))) for k in keys))
    metric, rows, _, _ = profile_diff(base, target)
    text = tuple(f"TopdownL1 {name}: {base.topdown_l1.get(key) if base.topdown_l1 else '-'} → "
                 f"{target.topdown_l1.get(key) if target.topdown_l1 else '-'}"
                 for name, key in _topdown_keys(base, target))
    functions = ", ".join(f"{r.function} {_num(r.delta, True)}" for r in rows[:HARDWARE_FUNCTIONS])
    return Section(title=title, subtitle=f"{base.tool}, this host", text=text, block=block,
                   notes=(f"largest {metric} changes per query (sampled): {functions}",) if functions else ())


def _topdown_keys(base: Profile, target: Profile) -> list[tuple[str, str]]:
    keys = [k for k in (base.topdown_l1 or {}) if k in (target.topdown_l1 or {}) and k != "unavailable"]
    return [(k.removeprefix("tma_").replace("_", " "), k) for k in keys]


def _cell_sections(e: Explanation, c: CellExplanation, top: int) -> list[Section]:
    threads = ", ".join(str(t) for t in c.threads)
    state = c.tiers or "no agreement recorded"
    heading = Section(title=f"{c.benchmark}: {c.target} vs {e.base}",
                      subtitle=f"threads {threads}" + ("; named with --cell" if c.asked else ""),
                      text=(f"tiers {state}: {c.why}",), block=_counters_block(e, c),
                      notes=(f"simulated: {c.profile.tool}; {c.profile.method}", *c.notes))
    return [heading, _leads_section(e, c, top), _hardware_section(e, c)]


def _lead_doc(lead: Lead, measured: str | None) -> dict[str, Any]:
    return {"function": lead.function, "counter": lead.counter, "instructions_base": lead.instructions_a,
            "instructions_target": lead.instructions_b, "instructions_delta": lead.instructions_delta,
            "base": lead.a, "target": lead.b, "delta": lead.delta, "share_of_cell_delta": lead.share,
            "stall_cost": lead.stall_cost, "toward": lead.toward, "as_measured": lead.toward == measured}


def _hardware_doc(c: CellExplanation) -> dict[str, Any] | None:
    if c.hardware is None:
        return None
    base, target = c.hardware
    metric, rows, _, _ = profile_diff(base, target)
    return {"tool": base.tool, "method": base.method, "base": base.per_query, "target": target.per_query,
            "unsupported_events": sorted(set(base.unsupported_events) | set(target.unsupported_events)),
            "topdown_l1": {"base": base.topdown_l1, "target": target.topdown_l1},
            "functions": [{"function": r.function, "metric": metric, "base": r.a, "target": r.b, "delta": r.delta}
                          for r in rows[:DOCUMENT_FUNCTIONS]]}


def _cell_doc(e: Explanation, c: CellExplanation) -> dict[str, Any]:
    return {
        "target": c.target, "benchmark": c.benchmark, "threads": list(c.threads), "tiers": c.tiers, "why": c.why,
        "measured": c.measured, "asked": c.asked,
        "simulated": {"tool": c.profile.tool, "method": c.profile.method, "queries": c.profile.queries},
        "counters": {k: {"base": a, "target": b, "delta": b - a, "change": _change(a, b)}
                     for k, a, b in counters_of(c.base, c.profile)},
        "leads": [_lead_doc(lead, c.measured) for lead in c.leads],
        "stall_cost": {"whole_cell": stall_change(c.base.per_query, c.profile.per_query, e.costs),
                       "leads": leads_stall(c.leads)},
        "functions": [{"function": f.function, "base": f.a, "target": f.b} for f in c.functions[:DOCUMENT_FUNCTIONS]],
        "notes": list(c.notes),
        "hardware": _hardware_doc(c),
        "hardware_not_measured": (c.hardware_error if c.hardware_error is not None else
                                  None if c.hardware is not None else f"no PMU on this host: {e.host_mode.reason}"),
    }


def explain_document(e: Explanation) -> dict[str, Any]:
    """explain.json: what the terminal says, with every lead and the per-function counters."""
    return {
        "explain": FORMAT_VERSION, "directory": e.directory, "experiment": e.experiment, "base": e.base,
        "note": LEADS_NOTE, "nothing": e.nothing,
        "stall_costs": {"unit": e.costs.unit, "weights": dict(e.costs.weights), "source": e.costs.source},
        "host_counters": {"mode": e.host_mode.mode, "reason": e.host_mode.reason},
        "cells": [_cell_doc(e, c) for c in e.cells],
    }


def explain_view(e: Explanation, top: int = TOP) -> View:
    """The explanation; a run with nothing to explain is one line."""
    rows = tuple({"target": c.target, "benchmark": c.benchmark, "tiers": c.tiers, **_lead_doc(lead, c.measured)}
                 for c in e.cells for lead in c.leads)
    columns = ("target", "benchmark", "tiers", "function", "counter")
    if e.nothing is not None:
        return View("explain", e.nothing, columns=columns, document=explain_document(e))
    sections = [s for c in e.cells for s in _cell_sections(e, c, top)]
    return View("explain", f"explain {e.directory}: {len(e.cells)} cell(s) against the base {e.base}",
                tuple(sections), rows=rows, columns=columns, document=explain_document(e),
                notes=(LEADS_NOTE, f"estimated stall cost: {e.costs.source}"))
