"""Per-function differences between two profiles of the same benchmark: what got more expensive stands at the top.

Functions are matched by their full name, the demangled C++ name with its parameter list included; a function whose
parameters changed between the two builds (MariaDB's rec_get_offsets_func between two releases) would then be one
gone and one new. So a function gone from B and one new in B that share their name without parameters, each the
only function of that name in its profile (no overloads to choose between), are one row, named by B and said so
(`SIGNATURE_CHANGED`). A C function has no parameter list in its name: a rename there stays two rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from dbperf.errors import UserError
from dbperf.records import Profile

SIGNATURE_CHANGED = " (signature changed)"
# What may follow a C++ parameter list in a demangled name: the function's qualifiers.
QUALIFIERS = (" const", " volatile", " &&", " &", " noexcept")
CLONE = " [clone "  # gcc's clones: "f(int) [clone .isra.0]"


def without_parameters(name: str) -> str | None:
    """A demangled name without its parameter list and qualifiers, its clone suffixes kept ("ns::f(int) const
    [clone .cold]" -> "ns::f [clone .cold]"); None for a name without one (a C function, `???`)."""
    head, clone, rest = name.partition(CLONE)
    head = head.rstrip()
    trimmed = True
    while trimmed:
        trimmed = False
        for qualifier in QUALIFIERS:
            if head.endswith(qualifier):
                head, trimmed = head[:-len(qualifier)].rstrip(), True
    if not head.endswith(")"):
        return None
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(head[i], 0)
        if depth == 0:
            return head[:i] + (clone + rest if clone else "") if i > 0 else None
    return None


def signature_changes(a: Iterable[str], b: Iterable[str]) -> dict[str, str]:
    """B's name -> A's name of each function matched across a change of its parameters: gone from B, new in B, the
    same name without parameters, and the only function of that name on each side."""
    names_a, names_b = set(a), set(b)
    bases_a = {n: without_parameters(n) for n in names_a}
    bases_b = {n: without_parameters(n) for n in names_b}
    count_a, count_b = Counter(bases_a.values()), Counter(bases_b.values())
    gone = {bases_a[n]: n for n in names_a - names_b if bases_a[n] is not None and count_a[bases_a[n]] == 1}
    return {n: gone[base] for n in names_b - names_a
            if (base := bases_b[n]) is not None and count_b[base] == 1 and base in gone}


def _pairs(a: Profile, b: Profile) -> list[tuple[str, str, str]]:
    """(the row's name, A's name, B's name) of every function of either profile, once each."""
    renamed = signature_changes(a.functions, b.functions)
    matched_a = set(renamed.values())
    pairs = [(n + SIGNATURE_CHANGED, renamed[n], n) if n in renamed else (n, n, n) for n in set(b.functions)]
    return pairs + [(n, n, n) for n in set(a.functions) - set(b.functions) - matched_a]


@dataclass(frozen=True)
class FunctionDelta:
    function: str  # B's name (A's where B has none), with SIGNATURE_CHANGED where matched across its parameters
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
    rows = [FunctionDelta(shown, a.functions.get(in_a, {}).get(key, 0.0), b.functions.get(in_b, {}).get(key, 0.0))
            for shown, in_a, in_b in _pairs(a, b)]
    rows = [r for r in rows if r.a or r.b]
    rows.sort(key=lambda r: (-abs(r.delta), r.function))
    return key, rows, a.per_query.get(key, 0.0), b.per_query.get(key, 0.0)


@dataclass(frozen=True)
class FunctionCounters:
    """Every simulated counter of one function per query (explain/profile.py simulated_counters' names) in A and in
    B; a counter a profile did not keep is absent, never 0. Named as FunctionDelta is."""
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
    rows = [FunctionCounters(shown, {k: a.functions.get(in_a, zero)[k] for k in counters},
                             {k: b.functions.get(in_b, zero)[k] for k in counters})
            for shown, in_a, in_b in _pairs(a, b)]
    rows.sort(key=lambda r: (-abs(r.delta("instructions")), r.function))
    return rows, counters
