"""`dbperf run EXPERIMENT --dry-run`: the run's plan (cells, rounds, budget, time and disk estimate, where its
results would go) and every check a real run makes before its first round (runner/preflight.py), with nothing
built, fetched, started, measured or written: no results folder is created. What a real run would build or fetch
is said, not done."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.explain.mode import detect_mode
from dbperf.runner.estimate import Estimate, estimate, human_bytes, human_seconds
from dbperf.runner.plan import RunPlan
from dbperf.runner.preflight import Check, driver_check, simulated_checks, target_checks, valgrind_check
from dbperf.runner.resume import Earlier
from dbperf.runner.simulated_tier import estimated_seconds
from dbperf.storage.out_folder import CHOOSE, claim
from dbperf.storage.results import RUN
from dbperf.usecases.run import Prepared, prepare_run


@dataclass
class DryRun:
    lines: list[str]  # the plan, for stdout
    checks: list[Check] = field(default_factory=list)

    @property
    def problems(self) -> list[Check]:
        return [c for c in self.checks if c.problem]


def folder_check(directory: Path, earlier: Earlier | None) -> Check:
    """Whether a run could claim `directory` (storage/out_folder.py's rule: new or empty), looked at, not created."""
    if earlier is not None:
        return Check("results", f"{directory} (its run goes on: {len(earlier.records)} cell(s) measured before are "
                                "kept)")
    try:
        claim(directory, RUN)
    except UserError as err:
        return Check("results", "", str(err) if CHOOSE in str(err) else f"{err}; {CHOOSE}")
    return Check("results", f"{directory} (an empty folder)" if directory.is_dir() else
                 f"{directory} (a new folder; not created by a dry run)")


def _left(plan: RunPlan) -> str:
    """With --resume or --extend, what this sitting has left of the plan's cells (its minimum, with automatic
    repeats): the cells measured before are kept, and a group whose rounds had stopped is not run again; "" for a
    new run."""
    if plan.replay.earlier is None:
        return ""
    stopped = {g.key for g in plan.groups if g.stopped}
    left = sum(1 for c in plan.cells()
               if (c.benchmark.name, c.threads) not in stopped and c.key not in plan.replay.skip)
    kept = f"{len(plan.replay.earlier.records)} measured before are kept"
    groups = f"; the rounds of {len(stopped)} (benchmark, threads) had stopped: not run again" if stopped else ""
    return f"; {left} left to measure ({kept}{groups})"


def _rounds_lines(e: Experiment, earlier: Earlier | None) -> list[str]:
    per = (f"{len(e.benchmarks)} benchmark(s) × {len(e.threads)} thread count(s) × {e.repeats} round(s) × "
           f"{len(e.targets)} target(s)")
    plan = RunPlan.of(e, earlier)
    if e.budget_s is None:
        return [f"cells: {per} = {plan.cell_count()} cells{_left(plan)}",
                f"rounds: {e.repeats} per (benchmark, threads) (repeats = {e.repeats})",
                "budget: none (a fixed number of rounds)"]
    sitting = plan.replay.budget_s(e)
    return [f"cells: at least {per} = {plan.cell_count()} cells{_left(plan)}",
            f"rounds: auto: at least {e.repeats} per (benchmark, threads), then more until each cell is decided or "
            "its share of the budget is spent",
            f"budget: {human_seconds(e.budget_s)} of measured rounds (repeats = \"auto\")"
            + (f"; left: {human_seconds(sitting)}" if earlier is not None else "")]


def _estimate_lines(size: Estimate, yes: bool, goes_on: bool) -> list[str]:
    lines = [f"estimate: about {human_seconds(size.seconds)}" + (" (what is left, the data loaded again)"
                                                                  if goes_on else "")]
    for where, need, free in size.needs:
        lines.append(f"disk: about {human_bytes(need)} of data in {where} (free: "
                     f"{'unknown' if free is None else human_bytes(free)})")
    if not size.needs:
        lines.append("disk: none on this machine (external servers only)")
    if size.needs_confirmation():
        lines.append(f"note: {size.summary()}: " + ("--yes is given" if yes else "a real run needs --yes"))
    lines += [f"note: {w}" for w in size.warnings() if w != size.summary()]
    return lines


def _plan(p: Prepared, yes: bool, profile: bool) -> list[str]:
    e = p.spec
    if e.replication is not None:
        r = e.replication
        return [f"replication lab: primary + {r.replicas} replica(s), studies {', '.join(r.studies)}"]
    lines = [*_rounds_lines(e, p.earlier), *_estimate_lines(estimate(e, p.directory, p.earlier), yes,
                                                             p.earlier is not None)]
    if e.simulated:
        lines.append(f"simulated tier: after the rounds, every (target, benchmark) once under cachegrind (about "
                     f"{human_seconds(estimated_seconds(e))}, in the estimate)")
    if profile:
        mode = detect_mode()
        lines.append(f"counters (--profile): {mode.mode} ({mode.reason})")
    return lines


def dry_run(experiment: Path, out: Path | None, profile: bool = False, yes: bool = False, aa: bool = False,
            simulated: bool = False, resume: bool = False, extend_s: float = 0.0) -> DryRun:
    """The plan and the checks; an experiment that does not parse, or options a run refuses, are a UserError as
    they are for a real run."""
    p = prepare_run(experiment, out, aa, simulated, True, resume, extend_s)
    e = p.spec
    checks = [folder_check(p.directory, p.earlier), driver_check(), *target_checks(e)]
    if e.simulated and e.replication is None:
        checks += simulated_checks(e)
    if profile and e.replication is None and detect_mode().mode == "simulated":
        checks.append(valgrind_check("valgrind (--profile)", "counters are simulated on this machine"))
    return DryRun([f"dry run of {experiment}: nothing is built, fetched, started, measured or written",
                   *_plan(p, yes, profile)], checks)
