"""MySQL's GTID sets as text (`@@GLOBAL.gtid_executed`, SHOW REPLICA STATUS's Retrieved_Gtid_Set): a comma-separated
list of `server_uuid:interval[:interval...]`, an interval `N` or `N-M`, and since MySQL 8.3 a tag before the
intervals it names (`uuid:1-5:tag:1-3`); the server breaks long sets with newlines after the commas. Pure functions:
what the apply study counts (the transactions one server wrote between two sets) and checks (that a replica has
fetched a set)."""

from __future__ import annotations

import re
from collections.abc import Iterable

TAG = re.compile(r"[a-z_][a-z0-9_]{0,31}")  # MySQL's tags: a letter or _, then letters, digits and _

# (server_uuid, tag) -> its intervals, each (first, last) inclusive, merged and in order. "" is no tag.
GtidSet = dict[tuple[str, str], list[tuple[int, int]]]


def _merged(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for first, last in sorted(intervals):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def _interval(text: str, whole: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    try:
        lo, hi = int(first), int(last or first)
    except ValueError:
        raise ValueError(f"not a GTID interval: {text!r} in {whole!r}") from None
    if lo < 1 or hi < lo:
        raise ValueError(f"not a GTID interval: {text!r} in {whole!r}")
    return lo, hi


def parse_gtid_set(text: str) -> GtidSet:
    """The set `text` names; ValueError for text that is not a GTID set. Upper and lower case are one uuid."""
    whole = "".join(text.split())
    found: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for part in filter(None, whole.split(",")):
        uuid, *fields = part.split(":")
        if not uuid or not fields:
            raise ValueError(f"not a GTID set: {part!r} in {whole!r}")
        tag, intervals = "", 0
        for field in fields:
            if field[:1].isdigit():
                found.setdefault((uuid.lower(), tag), []).append(_interval(field, whole))
                intervals += 1
            elif TAG.fullmatch(field.lower()):
                tag = field.lower()
            else:
                raise ValueError(f"not a GTID set: {part!r} in {whole!r}")
        if not intervals:
            raise ValueError(f"not a GTID set: {part!r} (no interval) in {whole!r}")
    return {key: _merged(intervals) for key, intervals in found.items()}


def _count(intervals: Iterable[tuple[int, int]]) -> int:
    return sum(last - first + 1 for first, last in intervals)


def _minus(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The numbers of merged intervals `a` that are in none of merged intervals `b`."""
    out: list[tuple[int, int]] = []
    for first, last in a:
        lo = first
        for b_first, b_last in b:
            if b_last < lo or b_first > last:
                continue
            if b_first > lo:
                out.append((lo, b_first - 1))
            lo = max(lo, b_last + 1)
        if lo <= last:
            out.append((lo, last))
    return out


def transactions_between(before: str, after: str, server_uuid: str) -> int:
    """The transactions server `server_uuid` wrote that are in `after` and not in `before` (its GTIDs, any tag)."""
    old, new = parse_gtid_set(before), parse_gtid_set(after)
    uuid = server_uuid.lower()
    return sum(_count(_minus(intervals, old.get(key, []))) for key, intervals in new.items() if key[0] == uuid)


def is_subset(part: str, *sets: str) -> bool:
    """Whether every GTID of `part` is in one of `sets` (GTID_SUBSET(part, their union) in SQL)."""
    union: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for s in sets:
        for key, intervals in parse_gtid_set(s).items():
            union[key] = _merged([*union.get(key, []), *intervals])
    return all(not _minus(intervals, union.get(key, [])) for key, intervals in parse_gtid_set(part).items())
