"""The verdict rule's history: each change that lets the rule call a cell it would not have called before, with when
it came in, so that a figure measured before the change is read under the rule its run had (a study record must
not count a call that a rule added after the run made). Changes that withhold calls need no entry: reading an old
run under the newer, stricter rule calls less, never more."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from dbperf.stats.verdict import CellVerdict


@dataclass(frozen=True)
class RuleChange:
    since: str  # ISO time of the change (its commit)
    what: str
    added: Callable[[CellVerdict], bool]  # whether this change is what made the call

    @property
    def date(self) -> str:
        return self.since[:10]


RULE_CHANGES: tuple[RuleChange, ...] = (
    RuleChange("2026-11-26T09:14:18+00:00",
               "a level shift keeps the call when both levels lie beyond the effect the same way (before, a level "
               "shift left the cell undecided)",
               lambda v: bool(v.decided and v.level_shift and v.level_shift.endswith(": called"))),
)


def _when(iso: str) -> datetime | None:
    try:
        return datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return None


def under_run_rule(verdict: CellVerdict | None, run_started: str | None) -> tuple[CellVerdict | None,
                                                                                    RuleChange | None]:
    """The verdict as the rule of a run started at `run_started` gives it, and the change that made the call if a
    later one did (then the call is withdrawn: undecided, as the run's rule left it). A run whose start is unknown
    is read under today's rule."""
    started = _when(run_started or "")
    if verdict is None or started is None:
        return verdict, None
    for change in RULE_CHANGES:
        since = _when(change.since)
        if since is not None and started < since and change.added(verdict):
            return replace(verdict, verdict="undecided"), change
    return verdict, None
