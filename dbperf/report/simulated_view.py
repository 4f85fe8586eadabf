"""The simulated tier in a run's report (stats/simulated.py): a `simulated Δcyc` column beside each target's rQPS,
its legend, and the fields JSON and CSV carry. Labelled simulated wherever it is shown, and said in words of work
(fewer, more, same estimated cycles), never of speed: it counts what ran, not how fast it ran. Whether it agrees with
the measured tiers is tiers_view.py's."""

from __future__ import annotations

from typing import Any

from dbperf.explain.profile import LL_HIT_CYCLES, RAM_CYCLES
from dbperf.report.tiers_view import cost_model_json, tiers_json
from dbperf.stats.rqps_matrix import Cell, Matrix
from dbperf.stats.simulated import SAME_WITHIN, TIER, WORK_WORDS, SimulatedDelta

REUSED_MARK = "r"
ESTIMATED_CYCLES = f"L1 hit 1, LL hit {LL_HIT_CYCLES}, RAM {RAM_CYCLES}"


def has_simulated(m: Matrix) -> bool:
    return any(c.sim is not None for c in m.cells.values())


def sim_of(cell: Cell | None) -> SimulatedDelta | None:
    return cell.sim if cell is not None and isinstance(cell.sim, SimulatedDelta) else None


def sim_text(cell: Cell | None) -> str:
    """The base: its estimated cycles per query; a target: Δ est. cycles and the simulated verdict."""
    s = sim_of(cell)
    if s is None:
        return "-"
    mark = f" {REUSED_MARK}" if s.reused_from else ""
    if s.verdict == "missing":
        return "missing"
    if s.verdict == "base":
        return f"{s.estimated_cycles:,.0f} cyc/q{mark}"
    assert s.estimated_cycles_delta is not None
    return f"{s.estimated_cycles_delta:+.2%} {s.verdict}{mark}"


def sim_legend(m: Matrix) -> list[str]:
    if not has_simulated(m):
        return []
    lines = [
        f"col-N simulated Δcyc : Δ est. cycles, {TIER}, 1 thread: estimated cycles per query ({ESTIMATED_CYCLES}; "
        "user-space instructions only: system calls and I/O waits are not in it) against the base's; "
        f"{'/'.join(WORK_WORDS[:2])} when they differ by {SAME_WITHIN:.1%} or more, else same: a count of work, not "
        "of speed (an instruction is charged one cycle and a mispredicted branch none); the base's column shows its "
        "estimated cycles per query; never mixed with the measured verdicts; "
        f"{REUSED_MARK} : an identical target's figures (same library, settings, process variant), not measured again"]
    return lines + missing_lines(m)


def missing_lines(m: Matrix) -> list[str]:
    """Why a cell's simulated figure is missing, once per reason."""
    missing = sorted({f"{s.error}" for c in m.cells.values() if (s := sim_of(c)) and s.verdict == "missing"})
    return ["simulated figures missing: " + "; ".join(missing)] if missing else []


def sim_fields(cell: Cell) -> dict[str, Any]:
    """JSON and CSV: the simulated figures of a cell (None everywhere when the run had no simulated tier)."""
    s = sim_of(cell)
    return {
        "sim_tier": s.tier if s else None,
        "sim_verdict": s.verdict if s else None,
        "sim_estimated_cycles_delta": s.estimated_cycles_delta if s else None,
        "sim_instructions_delta": s.instructions_delta if s else None,
        "sim_estimated_cycles_per_query": s.estimated_cycles if s else None,
        "sim_instructions_per_query": s.instructions if s else None,
        "sim_base_estimated_cycles_per_query": s.base_estimated_cycles if s else None,
        "sim_base_instructions_per_query": s.base_instructions if s else None,
        "sim_reused_from": s.reused_from if s else None,
        "sim_error": s.error if s else None,
    }


SIM_FIELD_NAMES = tuple(sim_fields(Cell("", "", "", 1)))


def simulated_json(m: Matrix) -> dict[str, Any] | None:
    """The tier's description for the JSON report's top level."""
    if not has_simulated(m):
        return None
    return {"tier": TIER, "threads": 1, "same_within": SAME_WITHIN,
            "estimated_cycles": f"L1 hits + {LL_HIT_CYCLES} × LL hits + {RAM_CYCLES} × RAM accesses, per query",
            "what": "instructions the driver process executed (user space, engine included; a server target: its "
                    "processes), one thread, N events minus 0 events under cachegrind; deterministic, measured once "
                    "per (target, benchmark)",
            "verdicts": list(WORK_WORDS),  # work, never speed: speed is the measured tiers' and the cost model's
            "tiers": tiers_json(),
            "cost_model": cost_model_json(m)}
