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
