"""The verdict rule's history: each change that lets the rule call a cell it would not have called before, with when
it came in, so that a figure measured before the change is read under the rule its run had (a study record must
not count a call that a rule added after the run made). Changes that withhold calls need no entry: reading an old
run under the newer, stricter rule calls less, never more.

A change of the rule itself is read by the run's start: `run_plans` gives the planned looks (stats/planned.py) only
to runs started since PLANNED_LOOKS came in; a run started before it is read under the anytime-valid rule it had,
whatever its meta.json holds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from dbperf.run_meta import RunMeta
from dbperf.stats.verdict import CellVerdict


@dataclass(frozen=True)
class RuleChange:
    since: str  # ISO time of the change (its commit)
    what: str
    added: Callable[[CellVerdict], bool]  # whether this change is what made the call

    @property
    def date(self) -> str:
        return self.since[:10]


PLANNED_LOOKS = RuleChange(
    "2026-11-28T16:15:00+00:00",
    "planned looks: a run whose rounds are planned (what its budget affords, or a fixed repeats) is decided at a "
    "half, three quarters and all of them by a group-sequential test, narrower there than the anytime-valid rule "
    "(before, every run was read under the anytime-valid rule, and a budget's rounds were not planned)",
    lambda v: bool(v.decided and v.planned is not None))

RULE_CHANGES: tuple[RuleChange, ...] = (
    RuleChange("2026-11-26T09:14:18+00:00",
               "a level shift keeps the call when both levels lie beyond the effect the same way (before, a level "
               "shift left the cell undecided)",
               lambda v: bool(v.decided and v.level_shift and v.level_shift.endswith(": called"))),
    PLANNED_LOOKS,
)


def _when(iso: str) -> datetime | None:
    """An ISO time; one without an offset (a date alone) taken as UTC, so that it compares with the changes'."""
    try:
        when = datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


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


def run_plans(meta: RunMeta) -> dict[tuple[str, int], int]:
    """Per (benchmark, threads), the rounds the run planned, when its rule is the planned-look one: a fixed
    `repeats` for every group; with automatic repeats, what meta.json's `rounds` recorded per group (a group
    without a recorded plan, resumed or from an older writer, keeps the anytime-valid rule). Empty for a run started
    before PLANNED_LOOKS came in."""
    started, since = _when(meta.started_at or ""), _when(PLANNED_LOOKS.since)
    if started is not None and since is not None and started < since:
        return {}
    if isinstance(meta.repeats, int):
        return {(b.name, t): meta.repeats for b in meta.benchmarks for t in meta.threads}
    return {(r.benchmark, r.threads): r.planned for r in meta.rounds or [] if r.planned}
