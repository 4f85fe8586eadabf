"""Decided verdicts of one cell that independent runs disagree on.

A run's verdict on a cell speaks, at its error rate, of what that run measured: for a server target, of the processes
it started. Another run of the same comparison (new processes, another hour) may decide the other way; each verdict
is then valid of its own run and neither is the builds'. Two decided calls **contradict** when one says faster and
the other slower, or one says same (the change lies within the minimum effect) and the other a change beyond it.
Undecided, unstable and failed cells contradict nothing: they claimed nothing.

Pure: the callers hand over each run's calls (`dbperf compare` its two runs' own matrices, `series` the stored
verdicts of the runs it draws on)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CHANGED = ("faster", "slower")


@dataclass(frozen=True)
class RunCall:
    """One run's verdict on a cell against that run's base."""
    run: str  # how the user names the run (a label, a directory, "run 12")
    verdict: str
    rqps: float | None = None
    decided_by: str = ""  # the metric that decided it, where known (wall, cpu)

    @property
    def decided(self) -> bool:
        return self.verdict in (*CHANGED, "same")

    def text(self) -> str:
        ratio = f" {self.rqps:.3f}" if self.rqps is not None else ""
        by = f" ({self.decided_by})" if self.decided_by else ""
        return f"{self.verdict}{by}{ratio} in {self.run}"


def clash(a: RunCall, b: RunCall) -> str | None:
    """Why the two calls contradict, or None when they do not."""
    if not (a.decided and b.decided) or a.verdict == b.verdict:
        return None
    if {a.verdict, b.verdict} == set(CHANGED):
        return "decided faster in one run and slower in another"
    changed = a.verdict if a.verdict in CHANGED else b.verdict
    return f"decided same (within the minimum effect) in one run and {changed} beyond it in another"


@dataclass(frozen=True)
class Contradiction:
    target: str
    benchmark: str
    threads: int
    why: str
    calls: tuple[RunCall, ...]  # every decided call on the cell, in the runs' order

    def line(self) -> str:
        cell = f"{self.target} {self.benchmark}" + (f" t={self.threads}" if self.threads != 1 else "")
        return f"{cell}: {self.why}: " + "; ".join(c.text() for c in self.calls)


Key = tuple[str, str, int]  # target, benchmark, threads


def contradictions(runs: Sequence[Iterable[tuple[Key, RunCall]]]) -> list[Contradiction]:
    """The cells whose decided calls contradict across `runs` (each run's calls on its cells), in the order the cells
    first appear."""
    calls: dict[Key, list[RunCall]] = {}
    for run in runs:
        for key, call in run:
            if call.decided:
                calls.setdefault(key, []).append(call)
    out = []
    for key, found in calls.items():
        why = next((w for a, b in itertools.combinations(found, 2) if (w := clash(a, b))), None)
        if why is not None:
            out.append(Contradiction(*key, why, tuple(found)))
    return out
