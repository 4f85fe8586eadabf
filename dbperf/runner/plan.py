"""A run's plan, built once before anything starts: the experiment as it runs, what inspecting its targets found,
whether duets are formed, its cells and (benchmark, threads) groups in the order they run, and what a resume or an
extension keeps of the run it goes on with (the replay). The matrix (matrix.py) carries it out; nothing below it
derives the plan again from the raw experiment.

Pure where it can be: `RunPlan.of` reads no file and runs no driver (the dry run, the fleet's split, the tests);
`RunPlan.inspected` adds the targets' facts (engine version, sha256 and thread safety of every library: one driver
subprocess and one sha256 per library, once per run) and the builds' manifests."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dbperf.catalog.workload import Workload
from dbperf.experiment.model import Experiment, Target
from dbperf.runner.duet import DuetPlan, plan_duets, round_duets
from dbperf.runner.resume import CellKey, Earlier
from dbperf.runner.rounds import Measured, RoundPolicy, round_order
from dbperf.runner.targets import inspect_targets


@dataclass(frozen=True)
class CellPlan:
    benchmark: Workload
    threads: int
    repeat: int
    target: Target
    position: int = 1  # place of the target within its round (rounds.py: alternating or seeded random order)
    partner: str | None = None  # duet: the target measured at the same moment (runner/duet.py)
    cpus: frozenset[int] | None = None  # duet: this side's CPUs (else the experiment's `cpus` decide)

    @property
    def key(self) -> CellKey:
        return (self.target.name, self.benchmark.name, self.threads, self.repeat, self.partner)


@dataclass(frozen=True)
class Group:
    """One (benchmark, threads) of the run, and what the replay keeps of it: `stopped`, its rounds had stopped
    before and are not run again; `shares`, it takes a share of the budget (a group an extension reopens that its
    earlier rounds decide stops on its replay and needs none); `spent_s`, what it spent of its share in earlier
    sittings; `before`, its earlier repeats, walked again so that the stopping rule sees what it would have seen."""
    benchmark: Workload
    threads: int
    stopped: bool = False
    shares: bool = True
    spent_s: float = 0.0
    before: tuple[Measured, ...] = ()

    @property
    def key(self) -> tuple[str, int]:
        return (self.benchmark.name, self.threads)

    @property
    def replay(self) -> int:
        """The rounds measured before: walked again whatever the stopping rule says."""
        return max((m.round for m in self.before), default=0)


@dataclass(frozen=True)
class Replay:
    """What a resumed or extended run keeps (runner/resume.py), or what the fleet's host skips: the cells measured
    before (not measured again), their counts, the budget left, and the run it goes on with (None: a new run)."""
    earlier: Earlier | None = None
    skip: frozenset[CellKey] = frozenset()

    @classmethod
    def of(cls, earlier: Earlier | None, skip: Iterable[CellKey] = ()) -> Replay:
        return cls(earlier, frozenset(earlier.keys() if earlier is not None else skip))

    @property
    def goes_on(self) -> bool:
        """The run goes on with one in the same directory (its writer reopens it)."""
        return self.earlier is not None

    def counts(self) -> tuple[int, int]:
        """The cells measured before, ok and failed."""
        return (self.earlier.cells_ok(), self.earlier.cells_failed()) if self.earlier else (0, 0)

    def budget_s(self, e: Experiment) -> float:
        """This sitting's budget (0 for fixed repeats)."""
        return self.earlier.budget_s(e) if self.earlier else e.budget_s or 0.0

    def group(self, e: Experiment, policy: RoundPolicy, benchmark: Workload, threads: int) -> Group:
        earlier = self.earlier
        if earlier is None:
            return Group(benchmark, threads)
        stopped = bool(policy.auto and earlier.stopped(benchmark.name, threads))
        decided = bool(earlier.ended(benchmark.name, threads)) and earlier.decided(e, benchmark.name, threads)
        return Group(benchmark, threads, stopped=stopped, shares=not stopped and not decided,
                     spent_s=earlier.spent_s(benchmark.name, threads),
                     before=tuple(earlier.measured(benchmark.name, threads)))


def share_deadline(now: float, budget_end: float, spent_s: float, sharing: int) -> float:
    """When a group's rounds must stop (automatic repeats): an equal share of what is left of the budget among the
    `sharing` groups still to run (this one included), so that time one group did not need goes to the next ones;
    a group cut short before has spent `spent_s` of its share already (the budget left was made short of it too:
    Earlier.budget_s)."""
    return now + max((budget_end - now + spent_s) / max(sharing, 1) - spent_s, 0.0)


@dataclass(frozen=True)
class RunPlan:
    """Everything a run decides before it starts (see the module's docstring). `facts`: per target, what meta.json
    says of it beyond its declaration (inspected library, build manifest, process variant); empty in a plan made
    by `of`."""
    experiment: Experiment
    duets: DuetPlan | None
    groups: tuple[Group, ...]
    policy: RoundPolicy
    replay: Replay = Replay()
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, e: Experiment, earlier: Earlier | None = None, skip: Iterable[CellKey] = (),
           facts: dict[str, dict[str, Any]] | None = None) -> RunPlan:
        """The plan, reading nothing and running nothing."""
        policy = RoundPolicy(e.repeats, e.budget_s)
        replay = Replay.of(earlier, skip)
        groups = tuple(replay.group(e, policy, b, t) for b in e.benchmarks for t in e.threads)
        return cls(e, plan_duets(e), groups, policy, replay, facts if facts is not None else {})

    @classmethod
    def inspected(cls, e: Experiment, builds: dict[str, dict[str, Any]] | None = None,
                  earlier: Earlier | None = None, skip: Iterable[CellKey] = ()) -> RunPlan:
        """The plan of a run about to start: its targets inspected (a UserError before anything runs if a library
        is not one of its engine), its builds' manifests kept."""
        return cls.of(e, earlier, skip, target_facts(e, builds or {}))

    @property
    def base(self) -> Target:
        return next(t for t in self.experiment.targets if t.name == self.experiment.base)

    @property
    def starts_servers(self) -> bool:
        """Whether the lab starts a server (it then needs a runtime folder)."""
        return any(t.is_server and t.dsn is None for t in self.experiment.targets)

    def cells(self) -> Iterator[CellPlan]:
        """Benchmark-major, then threads, then repeat (a round), with targets innermost in the round's order:
        interleaved repeats. Lazy, so that a huge matrix costs no memory before it runs (its size is
        `cell_count`). With `repeats = "auto"` this is the minimum; the run adds rounds (rounds.py)."""
        for g in self.groups:
            for r in range(1, self.experiment.repeats + 1):
                for cells in self.round_cells(g.benchmark, g.threads, r):
                    yield from cells

    def round_cells(self, benchmark: Workload, threads: int, round_: int) -> list[list[CellPlan]]:
        """One round's cells, in the order they run: a duet's two cells (base first) run together, a slices round's
        every cell together (in slice order: runner/slices.py), any other cell alone. A group where no duet can be
        formed runs in alternating order (duet.py says why)."""
        e = self.experiment
        if e.order == "slices":
            turns = round_order(e.targets, "alternate", e.seed, benchmark.name, threads, round_)
            return [[CellPlan(benchmark, threads, round_, target, position)
                     for position, target in enumerate(turns, 1)]]
        if self.duets is not None and self.duets.formed(threads):
            base = self.base
            return [[CellPlan(benchmark, threads, round_, base, d.position, d.target.name, d.base_cpus),
                     CellPlan(benchmark, threads, round_, d.target, d.position, e.base, d.target_cpus)]
                    for d in round_duets(e, self.duets, benchmark.name, threads, round_)]
        order = "alternate" if e.order == "duet" else e.order
        return [[CellPlan(benchmark, threads, round_, target, position)]
                for position, target in enumerate(round_order(e.targets, order, e.seed, benchmark.name, threads,
                                                              round_), 1)]

    def cells_per_round(self, threads: int) -> int:
        n = len(self.experiment.targets)
        return 2 * (n - 1) if self.duets is not None and self.duets.formed(threads) else n

    def cell_count(self) -> int:
        e = self.experiment
        return len(e.benchmarks) * e.repeats * sum(self.cells_per_round(t) for t in e.threads)

    def progress_total(self) -> int:
        """The progress bar's steps: one per group with automatic repeats (their rounds are not known), else one
        per cell."""
        return len(self.groups) if self.policy.auto else self.cell_count()

    def group_order(self) -> dict[tuple[str, int], int]:
        """Each group's place: meta.json lists the groups' rounds as they run."""
        return {g.key: i for i, g in enumerate(self.groups)}

    def duet_note(self) -> str | None:
        """The one line the run prints where duets fall back."""
        return self.duets.note(self.experiment.threads) if self.duets else None


def target_facts(e: Experiment, builds: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per target: its library inspected (runner/targets.py), its build or release manifest and its PGO training
    set, its process variant."""
    facts = inspect_targets(e)
    for name, manifest in builds.items():
        facts[name]["build"] = manifest
        facts[name]["trained_on"] = (manifest.get("pgo") or {}).get("training_set", [])
    for t in e.targets:
        facts[t.name]["process_variant"] = t.process.describe()
    return facts
