"""How long a run will take and how much disk its data needs, worked out before anything is built or loaded, so
that a typo (`repeats = 100000000000`, `tables = 100000`) is caught before it costs hours or fills the disk.

Rough on purpose: the run's plan (plan.py) times its minimum rounds, each round as its way says (runner/orders/:
a cell's warm-up and measured time plus the lab's own overhead per process); per target, the rows to load at a rate
measured on a 2-core VM; data size as bytes per sbtest row measured per engine (pristine copy + working copy), plus
what an empty server's data directory holds.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from dbperf.experiment.model import Experiment
from dbperf.runner.plan import RunPlan
from dbperf.runner.post_write import steps_before
from dbperf.runner.resume import Earlier
from dbperf.runner.simulated_tier import estimated_seconds
from dbperf.servers.runtime import runtime_base

LONG_RUN_S = 3600.0
SERVER_START_S = 10.0


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _free_bytes(path: Path) -> int | None:
    try:
        return shutil.disk_usage(_existing_parent(path)).free
    except OSError:
        return None


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    raise AssertionError


def human_seconds(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 3 * 86400:
        return f"{s / 3600:.1f} h"
    if s < 3 * 365 * 86400:
        return f"{s / 86400:,.0f} days"
    return f"{s / (365 * 86400):,.0f} years"


@dataclass(frozen=True)
class Estimate:
    seconds: float
    # bytes needed and free, per file system that receives data: --out (SQLite files) and the runtime directory
    needs: tuple[tuple[str, int, int | None], ...]
    # repeats = "auto" whose budget is shorter than its minimum rounds: (rounds, budget, the minimum's seconds)
    short_budget: tuple[int, float, float] | None = None

    def too_long(self) -> bool:
        return self.seconds > LONG_RUN_S

    def too_big(self) -> list[tuple[str, int, int]]:
        return [(where, need, free) for where, need, free in self.needs if free is not None and need > free]

    def needs_confirmation(self) -> bool:
        return self.too_long() or bool(self.too_big())

    def summary(self) -> str:
        size = ", ".join(f"about {human_bytes(need)} of data in {where} (free: "
                         f"{'unknown' if free is None else human_bytes(free)})" for where, need, free in self.needs)
        parts = [f"this run will take about {human_seconds(self.seconds)}"]
        if size:
            parts.append(f"write {size}")
        why = []
        if self.too_long():
            why.append(f"over {human_seconds(LONG_RUN_S)}")
        if self.too_big():
            why.append("more data than the free disk")
        return " and ".join(parts) + (f" ({'; '.join(why)})" if why else "")

    def warnings(self) -> list[str]:
        out = [self.summary()] if self.needs_confirmation() else []
        if self.short_budget is not None:
            rounds, budget, minimum = self.short_budget
            out.append(f"the budget ({human_seconds(budget)}) is shorter than the {rounds} rounds the verdict needs "
                       f"before it can call a cell (about {human_seconds(minimum)}): they run whatever the budget, "
                       "and none is left for the cells still undecided after them")
        return out


def _share_left(plan: RunPlan) -> float:
    """The share of the minimum rounds a resumed run still measures: with automatic repeats, the share of the
    (benchmark, threads) groups not reached before (a group --extend reopens is past its minimum); otherwise, of the
    cells."""
    e, earlier = plan.experiment, plan.replay.earlier
    if earlier is None:
        return 1.0
    if e.budget_s is not None:
        return earlier.owed(e)
    return max(0.0, 1.0 - len(earlier.records) / max(plan.cell_count(), 1))


def estimate(e: Experiment, out: Path, earlier: Earlier | None = None) -> Estimate:
    """`earlier`: the run that this one resumes or extends; only what is left is counted, but the data is loaded
    again (a new sitting starts its servers afresh)."""
    plan = RunPlan.of(e, earlier)
    left = _share_left(plan)
    rows = e.tables * e.table_size
    seconds = 0.0
    per_place: dict[str, int] = {}
    for t in e.targets:
        seconds += rows / t.descriptor.load_rows_per_s
        if t.is_server and t.dsn is not None:
            continue  # an external server's disk is not this machine's business
        if t.is_server:
            seconds += SERVER_START_S
            place = str(runtime_base())
        else:
            place = str(out)
        kind = t.descriptor
        per_place[place] = per_place.get(place, 0) + 2 * rows * kind.row_bytes + kind.empty_server_bytes
    restores = sum(1 for b in e.benchmarks if b.phase != "read") * len(e.threads) * e.repeats * left
    if e.writes == "cumulative":
        restores = 0
    if e.post_write:  # the post-write step's wait, once per target before each read that follows writes
        seconds += len(steps_before(e.benchmarks)) * len(e.targets) * e.post_write_wait_s
    for t in e.targets:
        seconds += restores * rows / (3 * t.descriptor.load_rows_per_s)
    # Steady state: the least warm-up (a cell that does not settle takes up to max_warmup).
    warmup_s = e.steady.least_warmup_s(e.warmup_s) if e.steady else e.warmup_s
    minimum_s = plan.rounds_s(e.time_s + warmup_s) * left
    seconds += minimum_s
    if e.auto_time is not None:  # each group's pilot rounds first (its rounds are counted at the pilot's length)
        seconds += minimum_s * e.auto_time.pilot_rounds / e.repeats
    short_budget = None
    if e.budget_s is not None:  # repeats = "auto": the minimum rounds above, or the budget if it is longer
        budget_s = plan.replay.budget_s(e)
        seconds += max(0.0, budget_s - minimum_s)
        if budget_s < minimum_s:
            short_budget = (e.repeats, budget_s, minimum_s)
    if e.simulated:
        seconds += estimated_seconds(e)
    needs = tuple((place, need, _free_bytes(Path(place))) for place, need in per_place.items())
    return Estimate(seconds, needs, short_budget)
