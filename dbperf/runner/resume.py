"""Resuming a run that was cut short (`dbperf run --resume`, a study's `--resume`): what an earlier run of the same
experiment measured into the same directory, so that the matrix measures only what is left. A run of five hours on a
shared host is interrupted more often than not (a session ends, a machine is needed); starting it again would throw
its hours away.

The cells measured before are not measured again. With automatic repeats, a (benchmark, threads) whose rounds had
stopped keeps its rounds and why they stopped; the one that was running goes on from its measured repeats, decided
by the same rule over the earlier repeats and the new ones; the ones not reached run as they would have. The earlier
repeats and the new ones come from two sittings (servers started and data loaded again): meta.json's `resumed_at`
says when, and the report says it beside the verdicts.

`--extend BUDGET` gives an automatic run more time, complete or not: the groups whose rounds had stopped on their
budget share go on, sharing BUDGET (with the groups not reached, which keep their shares of the file's budget). This
is Pinpoint's "undecided: run more", and it is sound because the verdicts are anytime-valid (stats/sequential.py): a
confidence sequence holds its error bound over every round, whenever the rounds stop or go on, so rounds added after
a look at the verdicts do not raise the false-alarm rate. The groups decided stay as they were. meta.json's
`extended` says when and by how much."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dbperf.errors import UserError
from dbperf.experiment.keys import MIN_ROUNDS
from dbperf.experiment.model import Experiment
from dbperf.records import CellRecord
from dbperf.run_meta import Extension, RoundsMeta, RunMeta
from dbperf.runner.rounds import GroupState, Measured
from dbperf.stats.rqps_matrix import cpu_qps
from dbperf.storage.results import EXPERIMENT, META, read_meta, read_results

# (target, benchmark, threads, repeat, partner): in a duet round the base runs once per partner.
CellKey = tuple[str, str, int, int, str | None]


def record_key(record: CellRecord) -> CellKey:
    """The key of the cell a record measured (a resumed run's and the fleet's)."""
    return (record.target, record.benchmark, record.threads, record.repeat, record.partner)


def interfered(record: CellRecord) -> bool:
    """Its noise sensors saw heavy interference, or its warm-up never settled: an automatic run replaces its round."""
    return bool(record.noise and record.noise.interfered) or bool(record.result and record.result.unsettled)


BUDGET_SPENT = "budget spent"  # runner/rounds.py's stop reason when a group's share ran out (what --extend reopens)


def stopped_on_budget(directory: Path) -> bool:
    """Whether the run in `directory` has a (benchmark, threads) whose rounds stopped on its budget share: what
    --extend would reopen. False when there is no run there or its meta.json cannot be read."""
    try:  # meta.json alone: the records may be large
        rounds = read_meta(directory).rounds or []
    except UserError:
        return False
    return any((r.stopped or "").startswith(BUDGET_SPENT) for r in rounds)


@dataclass(frozen=True)
class Earlier:
    """What the earlier run into a directory measured: its meta.json and its cell records; `extend_s`: the budget
    that --extend adds, which reopens the groups stopped on their budget share."""
    meta: RunMeta
    records: list[CellRecord]
    extend_s: float = 0.0

    def keys(self) -> set[CellKey]:
        return {record_key(r) for r in self.records}

    def cells_ok(self) -> int:
        return sum(1 for r in self.records if r.ok)

    def cells_failed(self) -> int:
        return sum(1 for r in self.records if not r.ok)

    def ended(self, benchmark: str, threads: int) -> RoundsMeta | None:
        """The rounds of a (benchmark, threads) whose automatic repeats had stopped, for whatever reason."""
        return next((r for r in self.meta.rounds or [] if r.benchmark == benchmark and r.threads == threads), None)

    def stopped(self, benchmark: str, threads: int) -> RoundsMeta | None:
        """The rounds of a (benchmark, threads) that is not run again: its repeats had stopped, and not on a budget
        share that --extend adds to."""
        ended = self.ended(benchmark, threads)
        return None if ended is not None and ended in self.reopened() else ended

    def reopened(self) -> list[RoundsMeta]:
        """The groups --extend gives more rounds: those stopped on their budget share."""
        return [r for r in self.meta.rounds or [] if self.extend_s and (r.stopped or "").startswith(BUDGET_SPENT)]

    def owed(self, e: Experiment) -> float:
        """The share of the (benchmark, threads) groups not reached before: they are owed their shares of the file's
        budget and their minimum rounds (the groups that had stopped took theirs already)."""
        groups = [(b.name, t) for b in e.benchmarks for t in e.threads]
        return sum(1 for b, t in groups if not self.ended(b, t)) / max(len(groups), 1)

    def spent_s(self, benchmark: str, threads: int) -> float:
        """The time a (benchmark, threads) cut short before spent on its rounds (0 for one not reached or ended):
        the span of its cells in each sitting (a sitting's gap to the next is not its time). Its share of the budget
        is owed less this, or a group cut short at every sitting would get a whole share each time."""
        if self.ended(benchmark, threads):
            return 0.0
        starts = sorted(datetime.fromisoformat(at).timestamp() for at in self.meta.resumed_at or [])
        spans: dict[int, tuple[float, float]] = {}
        for r in self.records:
            if r.benchmark == benchmark and r.threads == threads and r.started_at:
                sitting = bisect_right(starts, r.started_at)
                first, last = spans.get(sitting, (r.started_at, r.started_at))
                spans[sitting] = (min(first, r.started_at), max(last, r.started_at + r.wall_s))
        return sum(last - first for first, last in spans.values())

    def budget_s(self, e: Experiment) -> float:
        """This sitting's budget: the shares of the file's budget owed, less what the groups cut short spent of
        theirs, plus what --extend adds."""
        spent = sum(self.spent_s(b.name, t) for b in e.benchmarks for t in e.threads)
        return max((e.budget_s or 0.0) * self.owed(e) - spent, 0.0) + self.extend_s

    def measured(self, benchmark: str, threads: int) -> list[Measured]:
        """The earlier repeats of a (benchmark, threads), as the stopping rule sees them. In a duet the pair is the
        unit: interference on either side spoils both, as when it was measured."""
        mine = [r for r in self.records if r.benchmark == benchmark and r.threads == threads]
        by_side = {(r.target, r.partner, r.repeat): r for r in mine}
        out = []
        for r in mine:
            other = by_side.get((r.partner, r.target, r.repeat)) if r.partner else None
            out.append(Measured(r.target, r.repeat, r.result.qps if r.ok and r.result else None,
                                interfered=interfered(r) or (other is not None and interfered(other)),
                                cpu_qps=cpu_qps(r), partner=r.partner, process=r.process))
        return out

    def decided(self, e: Experiment, benchmark: str, threads: int) -> bool:
        """Whether a (benchmark, threads) group's earlier rounds decide it by today's rule: a group --extend reopens
        that is (a rule may have changed since: the A/A copy no longer holds the loop) stops as soon as its rounds
        are walked again, so it needs no share of the budget."""
        measured = self.measured(benchmark, threads)
        state = GroupState(e.base, [t.name for t in e.targets], e.min_effect, aa=e.aa_target, measured=measured,
                           rounds=max((m.round for m in measured), default=0),
                           processes=self.meta.processes or 1)
        return state.clean_rounds() >= MIN_ROUNDS and state.all_decided()

    def resumed_meta(self, meta: RunMeta) -> RunMeta:
        """The new sitting's meta.json: the earlier start, when each resume began, each extension, and the rounds of
        the groups that had stopped and the round lengths chosen (`time = "auto"`: a group goes on at its own), written
        from the start, so that a sitting killed before its first group ends loses none of them."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        meta.started_at = self.meta.started_at
        meta.rounds = list(self.meta.rounds) if self.meta.rounds is not None else None
        if meta.auto_time is not None and self.meta.auto_time is not None:
            meta.auto_time.lengths = list(self.meta.auto_time.lengths)
        if meta.processes is None and self.meta.processes:  # "auto": the count the earlier sitting chose goes on
            meta.processes, meta.processes_chosen = self.meta.processes, self.meta.processes_chosen
        meta.resumed_at = [*(self.meta.resumed_at or []), now]
        meta.extended = [*(self.meta.extended or []), *([Extension(at=now, budget_s=self.extend_s)]
                                                         if self.extend_s else [])] or None
        return meta


def earlier_run(directory: Path, e: Experiment, extend_s: float = 0.0) -> Earlier:
    """The earlier run into `directory`, checked to be this experiment's and not complete (unless `extend_s` adds
    budget to its groups stopped on theirs); a UserError otherwise."""
    if not (directory / META).is_file():
        raise UserError(f"{directory}: no earlier run to {'extend' if extend_s else 'resume'} (no {META})")
    meta, records, _ = read_results(directory)
    if meta.fleet is not None:
        raise UserError(f"{directory}: a fleet run's results; dbperf fleet ... --resume continues it")
    if extend_s and e.budget_s is None:
        raise UserError(f"{directory}: --extend adds budget to automatic repeats; {e.path} has a fixed number")
    if meta.status == "complete" and not extend_s:
        raise UserError(f"{directory}: its run is complete; nothing to resume (--extend BUDGET gives the cells its "
                        "budget left undecided more rounds)")
    try:
        text = (directory / EXPERIMENT).read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(f"{directory / EXPERIMENT}: cannot read: {err.strerror}") from None
    if text != e.text:
        raise UserError(f"{directory}: was run with another experiment file than {e.path}; --resume needs the same")
    if meta.target_names != [t.name for t in e.targets]:
        raise UserError(f"{directory}: was run with targets {', '.join(meta.target_names)}, this run has "
                        f"{', '.join(t.name for t in e.targets)} (--aa as before?); --resume needs the same")
    earlier = Earlier(meta, [r for r in records if isinstance(r, CellRecord)], extend_s)
    if extend_s and meta.status == "complete" and not earlier.reopened():
        raise UserError(f"{directory}: nothing to extend: no (benchmark, threads) stopped on its budget share")
    return earlier
