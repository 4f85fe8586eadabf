"""The simulated verdict: a target's estimated cycles per query (cachegrind, runner/simulated_tier.py) against the
base's, per (target, benchmark). The counts are deterministic, so there is no noise threshold: a difference of at
least SAME_WITHIN is a change. It is a verdict on work, not on speed: `fewer`, `more` or `same` estimated cycles, never
faster/slower (an instruction is charged one cycle and a mispredicted branch none, on CPUs that retire several
instructions a cycle and pay 15-20 cycles a mispredict). Speed words belong to the measured tiers and to a cost model
calibrated on the host (stats/cost_model.py); stats/tiers.py says whether the tiers agree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from dbperf.records import SimulatedRecord

TIER = "simulated (cachegrind, I1/D1 32K, LL 8M, ASLR off)"  # how every view labels the tier's figures
SAME_WITHIN = 0.005  # |Δ est. cycles| below 0.5% is "same": the tier's resolution, not a noise estimate

SimulatedVerdict = Literal["fewer", "more", "same", "base", "missing"]
WORK_WORDS = ("fewer", "more", "same")  # what the tier may say about a target: work, never speed


@dataclass(frozen=True)
class SimulatedDelta:
    """One cell's simulated figures (per query, one thread) and their change against the base. `missing`: this
    target's or the base's figure was not measured (`error` says why); its numbers are then None."""
    verdict: SimulatedVerdict
    tier: str
    instructions: float | None  # per query, this target
    estimated_cycles: float | None
    base_instructions: float | None
    base_estimated_cycles: float | None
    instructions_delta: float | None  # instructions / base's - 1
    estimated_cycles_delta: float | None  # estimated cycles / base's - 1: what the verdict is on
    reused_from: str | None = None  # the figures are an identical target's (the A/A copy's are the base's)
    error: str | None = None
    per_query: Mapping[str, float] = field(default_factory=dict)  # every simulated counter, this target
    base_per_query: Mapping[str, float] = field(default_factory=dict)  # and the base's (the cost model's inputs)


def simulated_verdict(estimated_cycles_delta: float) -> SimulatedVerdict:
    """fewer (estimated cycles) at -0.5% or less, more at +0.5% or more, else same."""
    if estimated_cycles_delta <= -SAME_WITHIN:
        return "fewer"
    if estimated_cycles_delta >= SAME_WITHIN:
        return "more"
    return "same"


def _missing(record: SimulatedRecord | None, what: str) -> str | None:
    if record is None:
        return f"{what}: not measured"
    if record.error:
        return f"{what}: {record.error}"
    if not record.estimated_cycles or not record.instructions:
        return f"{what}: no instructions or estimated cycles in its record"
    return None


def simulated_delta(target: SimulatedRecord, base: SimulatedRecord | None, is_base: bool) -> SimulatedDelta:
    error = _missing(target, target.target) or (None if is_base else _missing(base, f"base {target.benchmark}"))
    if error:
        return SimulatedDelta("missing", target.tier, target.instructions, target.estimated_cycles,
                              base.instructions if base else None, base.estimated_cycles if base else None,
                              None, None, target.reused_from, error)
    if is_base or base is None:
        return SimulatedDelta("base", target.tier, target.instructions, target.estimated_cycles,
                              target.instructions, target.estimated_cycles, 0.0, 0.0, target.reused_from,
                              per_query=target.per_query, base_per_query=target.per_query)
    assert target.instructions and target.estimated_cycles and base.instructions and base.estimated_cycles
    cycles = target.estimated_cycles / base.estimated_cycles - 1
    return SimulatedDelta(simulated_verdict(cycles), target.tier, target.instructions, target.estimated_cycles,
                          base.instructions, base.estimated_cycles, target.instructions / base.instructions - 1,
                          cycles, target.reused_from, per_query=target.per_query, base_per_query=base.per_query)
