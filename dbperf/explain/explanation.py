"""What `dbperf explain DIR` found for a run (usecases/explain_run.py measures it, report/explain_view.py says it):
per explained cell, every simulated counter of the base and the target, the per-function diff, the leads, and the
hardware tier's figures where this host has a PMU."""

from __future__ import annotations

from dataclasses import dataclass, field

from dbperf.explain.diff import FunctionCounters
from dbperf.explain.leads import Lead, StallCosts
from dbperf.explain.mode import CounterMode
from dbperf.records import Profile


@dataclass(frozen=True)
class CellExplanation:
    target: str
    benchmark: str
    threads: tuple[int, ...]  # the run's cells of this (target, benchmark) it explains (the profile is one thread's)
    tiers: str | None  # agree, disagree, open (stats/tiers.py); None: the run had no agreement for it
    why: str  # the agreement's reason, naming both figures
    measured: str | None  # the deciding measured verdict: faster, slower, same, undecided
    asked: bool  # named with --cell (explained whatever its agreement)
    base: Profile  # simulated, every counter per query and per function
    profile: Profile
    functions: list[FunctionCounters]  # the per-function diff, largest change of instructions first
    counters: tuple[str, ...]  # the counters both profiles kept per function
    leads: list[Lead]
    notes: tuple[str, ...] = ()  # a build that is not the run's, figures that differ from the run's simulated tier
    hardware: tuple[Profile, Profile] | None = None  # base, target in hardware mode, where this host has a PMU
    hardware_error: str | None = None  # why the hardware diff failed on a host with a PMU


@dataclass(frozen=True)
class Explanation:
    directory: str
    experiment: str  # the experiment file the targets were built from (the run's, or its copy in the directory)
    base: str
    host_mode: CounterMode  # explain/mode.py: hardware where perf counts cycles here, else why not
    costs: StallCosts
    cells: list[CellExplanation] = field(default_factory=list)
    nothing: str | None = None  # why no cell was explained (a run whose tiers do not disagree)
