"""Per-function differences between two profiles of the same benchmark: what got more expensive stands at the top."""

from __future__ import annotations

from dataclasses import dataclass

from dbperf.errors import UserError
from dbperf.records import Profile


@dataclass(frozen=True)
class FunctionDelta:
    function: str
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a


def profile_diff(a: Profile, b: Profile) -> tuple[str, list[FunctionDelta], float, float]:
    """(metric, per-function deltas sorted by |delta| descending, total of A, total of B), per query."""
    if a.mode != b.mode:
        raise UserError(f"cannot diff a {a.mode} profile against a {b.mode} one")
    key = a.cost_key
    names = set(a.functions) | set(b.functions)
    rows = [FunctionDelta(n, a.functions.get(n, {}).get(key, 0.0), b.functions.get(n, {}).get(key, 0.0))
            for n in names]
    rows = [r for r in rows if r.a or r.b]
    rows.sort(key=lambda r: (-abs(r.delta), r.function))
    return key, rows, a.per_query.get(key, 0.0), b.per_query.get(key, 0.0)


@dataclass(frozen=True)
class FunctionCounters:
    """Every simulated counter of one function per query (explain/profile.py simulated_counters' names) in A and in
    B; a counter a profile did not keep is absent, never 0."""
    function: str
    a: dict[str, float]
    b: dict[str, float]

    def delta(self, counter: str) -> float:
        return self.b.get(counter, 0.0) - self.a.get(counter, 0.0)


def counters_diff(a: Profile, b: Profile) -> tuple[list[FunctionCounters], tuple[str, ...]]:
    """Every function of two simulated profiles with all its counters, the largest change of instructions first,
    and the counters both profiles kept for every function (what may be compared). A function one build never ran
    has zeros there: it ran no instruction and missed nothing."""
    if a.mode != "simulated" or b.mode != "simulated":
        raise UserError(f"a per-function diff of every counter needs two simulated profiles, not {a.mode} and "
                        f"{b.mode}")
    kept = [f for p in (a, b) for f in p.functions.values()]
    counters = tuple(k for k in (kept[0] if kept else {}) if all(k in f for f in kept))
    zero = dict.fromkeys(counters, 0.0)
    rows = [FunctionCounters(n, {k: a.functions.get(n, zero)[k] for k in counters},
                             {k: b.functions.get(n, zero)[k] for k in counters})
            for n in set(a.functions) | set(b.functions)]
    rows.sort(key=lambda r: (-abs(r.delta("instructions")), r.function))
    return rows, counters
