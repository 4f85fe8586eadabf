"""`dbperf bisect --metric simulated` (the simulated tier): each step decided on the server's simulated work per
query, the probed release against the oldest, counted once per release since the count does not vary between runs.

Work per query is the server's user-space instructions per query (simulated, explain/profile.py's Profiler: the
PostgreSQL backend under cachegrind, mariadbd under callgrind, N events minus 0 events on one connection): work,
not speed. A step is `slower` when the probe executes more than the threshold over the oldest, `faster` when fewer
by as much, else `same`. A release is counted once and kept as DIR/simulated/VERSION.json (its experiment beside
it), so that a search cut short, or run again in the same folder, counts nothing twice.

Once the step is found (the last release at the old level and the first at the new), it is run once by the wall
clock with the lab's sequential verdicts (the first at the new level against the last at the old), reported
beside the answer, never deciding it; and the per-function diff of the two releases' counts is the regression's
first lead.

A commit of a tree (`--tree`) that cannot be built or counted is skipped, as `git bisect skip` skips it: its
error kept as DIR/simulated/HASH.skipped (a search resumed does not build it again), its step `skipped`, and the
search tries a neighbour (usecases/bisect_search.py). A release that cannot be fetched or counted ends the bisect."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import msgspec
from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment import toml_text
from dbperf.experiment.spec import parse_experiment
from dbperf.explain.diff import FunctionCounters, counters_diff
from dbperf.explain.mode import CounterMode
from dbperf.explain.profile import Profiler
from dbperf.metrics import SIMULATED
from dbperf.records import Profile
from dbperf.runner.simulated_tier import queries_for
from dbperf.storage.bisect_path import SKIPPED, BisectResult, Judgement, LeadRow, StepSettings
from dbperf.storage.results import write_whole, writing
from dbperf.usecases.bisect_candidates import candidates, target_table
from dbperf.usecases.bisect_search import Judge
from dbperf.usecases.bisect_step import judgements_of, release_judge
from dbperf.usecases.explain import profiling
from dbperf.usecases.progress import PROGRESS, say

WORK = "instructions"  # the deciding figure of work per query
MODE = CounterMode("simulated", "bisect --metric simulated (the server's work per query, deterministic)")
FOLDER = "simulated"
LEAD_ROWS = 10
WHY = 300  # characters of a skipped commit's error kept in its step
MISSES = ("i1_misses", "d1_misses")  # "misses" of the lead: L1 misses, instruction and data (LL is a subset level)


class Counted(NamedTuple):
    """One release's count: its profile and where it is kept (None: not kept, as in tests)."""
    profile: Profile
    where: str | None


WorkSource = Callable[[str], Counted]  # version -> its server's simulated counts per query on the benchmark


class Uncountable(UserError):
    """A candidate that could not be built or counted, to be skipped (a commit of a tree): the error's line."""


def work_verdict(change: float, threshold: float) -> str:
    """More work per query than the threshold over the oldest is `slower`; less by as much `faster`."""
    if change > threshold:
        return "slower"
    if change < -threshold:
        return "faster"
    return "same"


class WorkCounts:
    """A source's counts, each release counted once (the oldest once for every step)."""

    def __init__(self, source: WorkSource) -> None:
        self.source = source
        self.counted: dict[str, Counted] = {}

    def __call__(self, version: str) -> Counted:
        if version not in self.counted:
            self.counted[version] = self.source(version)
        return self.counted[version]

    def judge(self, threshold: float) -> Judge:
        def judge(good: str, probe: str, attempt: int) -> Judgement:
            try:
                base = self(good).profile.per_query.get(WORK)
            except Uncountable as e:  # the oldest is what every step is compared with: no bisect without it
                raise UserError(f"bisect: the oldest, {good}, could not be counted: {e}") from None
            try:
                here = self(probe)
            except Uncountable as e:  # the path says why in a line; the whole error is in the .skipped file
                why = " ".join(str(e).split())
                return Judgement(SKIPPED, metric=SIMULATED, why=why if len(why) <= WHY else why[:WHY - 1] + "…")
            if not base:
                raise UserError(f"bisect: {good}: no simulated {WORK} per query were counted: nothing to compare "
                                "against")
            ratio = here.profile.per_query.get(WORK, 0.0) / base
            return Judgement(work_verdict(ratio - 1, threshold), rounds=1, metric=SIMULATED, work=ratio,
                             directory=here.where)
        return judge

    def lead(self, old: str, new: str, rows: int = LEAD_ROWS) -> list[LeadRow]:
        """The per-function changes from `old` to `new` per query: the largest by instructions, then by L1
        misses (those not already listed), each with both figures."""
        diff, counters = counters_diff(self(old).profile, self(new).profile)
        misses = [k for k in MISSES if k in counters]

        def missed(f: FunctionCounters) -> float:
            return sum(f.delta(k) for k in misses)

        by_work = [f for f in diff if f.delta(WORK)][:rows]
        by_misses = sorted((f for f in diff if f not in by_work and misses and missed(f)),
                           key=lambda f: -abs(missed(f)))[:rows]
        return [LeadRow(f.function, f.a.get(WORK, 0.0), f.b.get(WORK, 0.0), missed(f) if misses else None, why)
                for fs, why in ((by_work, "instructions"), (by_misses, "misses")) for f in fs]


def count_experiment(s: StepSettings, version: str) -> str:
    """The one-target experiment a release (or commit) is counted in, as TOML (experiment/toml_text.py)."""
    run = {"benchmarks": [s.benchmark], "threads": [1], "table_size": s.table_size,
           "base": candidates(s).name(version)}
    return toml_text.document({"run": run, "target": [target_table(s, version)]},
                              f"dbperf bisect --metric simulated: {s.engine} {version}'s work per query")


def _kept(path: Path) -> Profile | None:
    try:
        return msgspec.json.decode(path.read_bytes(), type=Profile)
    except (OSError, msgspec.DecodeError):
        return None  # not there, or cut short while written: counted again


def release_work(s: StepSettings, out: Path, err: Console = PROGRESS) -> WorkSource:
    """The real source: each release's server started under valgrind by the lab (released binaries, fetched or
    cached), its tables loaded natively, the benchmark counted on one connection; kept in out/simulated/. A commit
    of a tree is built by the build lab first (cached by its tree); one that fails is Uncountable, kept as such."""
    folder, skips = out / FOLDER, candidates(s).skips

    def count(version: str) -> Counted:
        path, skipped = folder / f"{version}.json", folder / f"{version}.skipped"
        kept = _kept(path)
        if kept is not None:
            say(f"dbperf: bisect: {s.engine} {version}: counted before, kept ({path})", err)
            return Counted(kept, str(path))
        if skips and skipped.is_file():
            raise Uncountable(skipped.read_text().strip() or "skipped before")
        experiment = folder / f"{version}.toml"
        with writing(experiment):
            folder.mkdir(parents=True, exist_ok=True)
            experiment.write_text(count_experiment(s, version))
        say(f"dbperf: bisect: counting {s.engine} {version}'s work per query on {s.benchmark} under valgrind", err)
        started = time.monotonic()
        try:
            profile = _profile(experiment, err)
        except UserError as e:
            if not skips:
                raise
            write_whole(skipped, f"{e}\n".encode())
            say(f"dbperf: bisect: {version}: skipped ({e})", err)
            raise Uncountable(str(e)) from None
        write_whole(path, msgspec.json.encode(profile))
        say(f"dbperf: bisect: {s.engine} {version}: {profile.per_query.get(WORK, 0):,.0f} {WORK} per query "
            f"({time.monotonic() - started:.0f} s)", err)
        return Counted(profile, str(path))

    return count


def _profile(experiment: Path, err: Console) -> Profile:
    """The one target of `experiment` built (or cached) and counted under cachegrind."""
    with profiling(parse_experiment(experiment), err) as (exp, _, work):
        profiler = Profiler(exp, work, queries=queries_for(exp.table_size), mode=MODE, native_timing=False)
        try:
            return profiler.profile(exp.targets[0], exp.benchmarks[0])
        finally:
            profiler.close()


@dataclass
class SimulatedBisect:
    """The simulated metric of `dbperf bisect`: its judge over the releases' counts, then the found step's
    wall-clock confirmation and lead."""
    settings: StepSettings
    out: Path
    yes: bool = False
    err: Console = PROGRESS
    source: WorkSource | None = None  # None: release_work
    confirm: bool = True  # False: the found step is not run by the wall clock (tests of the search and the lead)

    def __post_init__(self) -> None:
        self.counts = WorkCounts(self.source or release_work(self.settings, self.out, self.err))

    def judge(self) -> Judge:
        return self.counts.judge(self.settings.threshold)

    def finish(self, result: BisectResult, written: Callable[[BisectResult], object], confirm: bool = True) -> None:
        """On a found step: its lead, then (unless `confirm` is False: --no-confirm) its wall-clock confirmation,
        each put on `result` and `written` as soon as known."""
        if result.outcome != "found" or not result.first_slower or not result.last_not_slower:
            return
        old, new = result.last_not_slower, result.first_slower
        result.work_before = self.counts(old).profile.per_query.get(WORK)
        result.work_after = self.counts(new).profile.per_query.get(WORK)
        result.lead = self.counts.lead(old, new)
        written(result)
        if not (self.confirm and confirm):
            return
        say(f"dbperf: bisect: confirming the step by the wall clock: {new} against {old} (once, "
            f"budget {self.settings.budget_s:g} s; it does not decide the answer)", self.err)
        deciding = release_judge(self.settings, self.out, self.yes, self.err, prefix="confirm-")(old, new, 0)
        result.confirmation = judgements_of(deciding, self.settings, new)
        written(result)


def record_line(result: BisectResult, s: StepSettings) -> str:
    """The bisect's line for a study's record: `bisect ENGINE BENCHMARK simulated: first VERSION +X% work per
    query, M minutes; wall clock at that step VERDICT` (or how the search ended)."""
    head = f"bisect {s.engine} {s.benchmark} simulated: "
    minutes = f"{(result.search_s or 0) / 60:.0f} minutes"
    if result.outcome != "found":
        return head + f"{result.outcome} ({len(result.steps)} steps), {minutes}"
    ratio = result.work_at(result.first_slower)
    work = "?" if ratio is None else f"{ratio - 1:+.1%}"
    wall = next((j for j in result.confirmation if j.metric.headline), None)
    return (head + f"first {result.first_slower} {work} work per query, {minutes}; wall clock at that step "
            + (wall.verdict if wall else "not run"))
