"""Leads: where to look when the tiers disagree. Between two builds on one benchmark, the functions whose stall-type
simulated counters (branch mispredicts, I1/D1/LL misses) moved against their instruction count (fewer instructions
but more mispredicts, or more instructions but fewer misses): work counts do not see such a change, cycles do.
Ranked by an estimated stall cost, each with its share of the cell's total change of that counter.

A lead is a lead, not proof: cachegrind's caches and branch predictor are models (pinned geometry, a simple
predictor), not this CPU's, and the cost per event is an assumption or a fit. Only the hardware tier measures what the
CPU did (explain/profile.py's hardware mode)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from dbperf.explain.diff import FunctionCounters
from dbperf.explain.profile import LL_HIT_CYCLES, RAM_CYCLES

MISPREDICTS = "branch_mispredicts_simulated_predictor"
STALL_COUNTERS = (MISPREDICTS, "i1_misses", "d1_misses", "ll_misses")
# Every simulated counter as the explanation names it, in the order it lists them.
COUNTER_WORDS = {
    "instructions": "instructions",
    "branches": "branches",
    MISPREDICTS: "branch mispredicts (simulated predictor)",
    "i1_misses": "I1 misses",
    "d1_misses": "D1 misses",
    "ll_misses": "LL misses",
    "estimated_cycles": "est. cycles",
}
# A change below one event in a hundred queries is no lead: too small to cost anything measurable.
MIN_EVENTS_PER_QUERY = 0.01
# A mispredict costs 15-20 cycles on the CPUs the lab runs on; the low end, so as not to overstate.
MISPREDICT_CYCLES = 15


@dataclass(frozen=True)
class StallCosts:
    """What one event of each stall-type counter is taken to cost, to rank leads (never a measurement)."""
    unit: str  # "cycles" or "ns"
    weights: Mapping[str, float]
    source: str


ASSUMED = StallCosts(
    "cycles",
    {MISPREDICTS: MISPREDICT_CYCLES, "i1_misses": LL_HIT_CYCLES, "d1_misses": LL_HIT_CYCLES,
     "ll_misses": RAM_CYCLES - LL_HIT_CYCLES},
    f"assumed cycles per event: {MISPREDICT_CYCLES} a mispredict (the low end of 15-20), {LL_HIT_CYCLES} an L1 miss "
    f"that hits LL, {RAM_CYCLES - LL_HIT_CYCLES} more one that misses LL too (the est. cycles formula's "
    f"{LL_HIT_CYCLES} and {RAM_CYCLES})")


def calibrated_costs(weights_ns: Mapping[str, float]) -> StallCosts | None:
    """The host's calibrated cost model (records.CostModelRecord) as stall costs, when it weighs every stall-type
    counter; else None (the assumed cycles rank instead)."""
    if not all(c in weights_ns for c in STALL_COUNTERS):
        return None
    return StallCosts("ns", {c: weights_ns[c] for c in STALL_COUNTERS},
                      "ns per event of the host's calibrated cost model (`dbperf calibrate --show`)")


@dataclass(frozen=True)
class Lead:
    """One function's stall-type counter that moved against its instruction count (per query, A then B)."""
    function: str
    counter: str
    instructions_a: float
    instructions_b: float
    a: float
    b: float
    share: float | None  # of the cell's total change of this counter; None where the total did not move
    stall_cost: float  # delta x the counter's weight, in StallCosts.unit: > 0 costs B more

    @property
    def delta(self) -> float:
        return self.b - self.a

    @property
    def instructions_delta(self) -> float:
        return self.instructions_b - self.instructions_a

    @property
    def toward(self) -> str:
        """Which way the lead pushes the target's speed: more stalls, slower."""
        return "slower" if self.stall_cost > 0 else "faster"


def moved_against(instructions_delta: float, counter_delta: float) -> bool:
    """The counter went up while the instructions did not, or down while they did not."""
    if abs(counter_delta) < MIN_EVENTS_PER_QUERY:
        return False
    return instructions_delta <= 0 if counter_delta > 0 else instructions_delta >= 0


def find_leads(functions: Iterable[FunctionCounters], totals_a: Mapping[str, float], totals_b: Mapping[str, float],
               costs: StallCosts = ASSUMED, measured: str | None = None) -> list[Lead]:
    """Every (function, stall-type counter) that moved against the function's instructions, the largest estimated
    stall cost (either sign) first; where the measured tier decided a way (`measured` faster or slower), the leads
    that push that way first: they are what could explain it. `totals_*`: the per-query counters of the whole cell
    (each share's whole); a counter not in both functions' figures and the totals was not measured and is not
    looked at."""
    leads = []
    for f in functions:
        if "instructions" not in f.a or "instructions" not in f.b:
            continue
        moved = f.delta("instructions")
        for counter in STALL_COUNTERS:
            if counter not in f.a or counter not in f.b or counter not in totals_a or counter not in totals_b:
                continue
            delta = f.delta(counter)
            if not moved_against(moved, delta):
                continue
            total = totals_b[counter] - totals_a[counter]
            leads.append(Lead(f.function, counter, f.a["instructions"], f.b["instructions"], f.a[counter],
                              f.b[counter], delta / total if abs(total) >= MIN_EVENTS_PER_QUERY else None,
                              delta * costs.weights.get(counter, 0.0)))
    leads.sort(key=lambda lead: (measured in ("faster", "slower") and lead.toward != measured,
                                 -abs(lead.stall_cost), lead.function, lead.counter))
    return leads


def stall_change(a: Mapping[str, float], b: Mapping[str, float], costs: StallCosts = ASSUMED) -> dict[str, float]:
    """The estimated stall cost of the change of each stall-type counter both `a` and `b` measured (per query)."""
    return {c: (b[c] - a[c]) * costs.weights.get(c, 0.0) for c in STALL_COUNTERS if c in a and c in b}


def leads_stall(leads: Iterable[Lead]) -> dict[str, float]:
    """The estimated stall cost of the leads together, per stall-type counter."""
    net: dict[str, float] = {}
    for lead in leads:
        net[lead.counter] = net.get(lead.counter, 0.0) + lead.stall_cost
    return net
