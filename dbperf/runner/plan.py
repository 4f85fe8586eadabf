"""A run's plan, built once before anything starts: the experiment as it runs, what inspecting its targets found,
the way its rounds run (runner/orders/), its cells and (benchmark, threads) groups in the order they run, and what
a resume or an extension keeps of the run it goes on with (the replay). The matrix (matrix.py) carries it out and
the estimate (estimate.py) times it; nothing below them derives the plan again from the raw experiment.

Pure where it can be: `RunPlan.of` reads no file and runs no driver (the dry run, the fleet's split, the tests);
`RunPlan.inspected` adds the targets' facts (engine version, sha256 and thread safety of every library: one driver
subprocess and one sha256 per library, once per run) and the builds' manifests."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dbperf.catalog.workload import Workload
from dbperf.experiment.model import Experiment
from dbperf.runner.cell_plan import CellPlan
from dbperf.runner.orders import order_of
from dbperf.runner.orders.base import Order
from dbperf.runner.resume import CellKey, Earlier
from dbperf.runner.rounds import Measured, RoundPolicy
from dbperf.runner.targets import inspect_targets


@dataclass(frozen=True)
class Group:
    """One (benchmark, threads) of the run, and what the replay keeps of it: `stopped`, its rounds had stopped
    before and are not run again; `shares`, it takes a share of the budget (a group an extension reopens that its
    earlier rounds decide stops on its replay and needs none); `spent_s`, what it spent of its share in earlier
    sittings; `before`, its earlier repeats, walked again so that the stopping rule sees what it would have seen;
    `planned`, the rounds an earlier sitting planned for it (an extension keeps its first plan, with the rule's
    reserve after it)."""
    benchmark: Workload
    threads: int
    stopped: bool = False
    shares: bool = True
    spent_s: float = 0.0
    before: tuple[Measured, ...] = ()
    planned: int | None = None

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
        ended = earlier.ended(benchmark.name, threads)
        decided = bool(ended) and earlier.decided(e, benchmark.name, threads)
        return Group(benchmark, threads, stopped=stopped, shares=not stopped and not decided,
                     spent_s=earlier.spent_s(benchmark.name, threads),
                     before=tuple(earlier.measured(benchmark.name, threads)),
                     planned=ended.planned if ended is not None else None)


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
    order: Order  # the way its rounds run, asked for their cells (runner/orders/)
    groups: tuple[Group, ...]
    policy: RoundPolicy
    replay: Replay = Replay()
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, e: Experiment, earlier: Earlier | None = None, skip: Iterable[CellKey] = (),
           facts: dict[str, dict[str, Any]] | None = None) -> RunPlan:
        """The plan, reading nothing and running nothing."""
        policy = RoundPolicy(e.repeats, e.budget_s, plans=True)
        replay = Replay.of(earlier, skip)
        groups = tuple(replay.group(e, policy, b, t) for b in e.benchmarks for t in e.threads)
        return cls(e, order_of(e), groups, policy, replay, facts if facts is not None else {})

    @classmethod
    def inspected(cls, e: Experiment, builds: dict[str, dict[str, Any]] | None = None,
                  earlier: Earlier | None = None, skip: Iterable[CellKey] = ()) -> RunPlan:
        """The plan of a run about to start: its targets inspected (a UserError before anything runs if a library
        is not one of its engine), its builds' manifests kept."""
        return cls.of(e, earlier, skip, target_facts(e, builds or {}))

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
                for cells in self.order.round_cells(g.benchmark, g.threads, r):
                    yield from cells

    def cell_count(self) -> int:
        """The cells of the minimum rounds."""
        e = self.experiment
        return len(e.benchmarks) * e.repeats * sum(self.order.cells_per_round(t) for t in e.threads)

    def rounds_s(self, cell_s: float) -> float:
        """Roughly how long the minimum rounds take, a cell's warm-up and time being `cell_s` (the estimate's)."""
        e = self.experiment
        return len(e.benchmarks) * e.repeats * sum(self.order.round_s(t, cell_s) for t in e.threads)

    def progress_total(self) -> int:
        """The progress bar's steps: one per group with automatic repeats (their rounds are not known), else one
        per cell."""
        return len(self.groups) if self.policy.auto else self.cell_count()

    def group_order(self) -> dict[tuple[str, int], int]:
        """Each group's place: meta.json lists the groups' rounds as they run."""
        return {g.key: i for i, g in enumerate(self.groups)}


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
