"""Running an experiment to its end: build what the targets need, run the matrix (or the replication lab), record
the run in the history, and turn how it ended into an exit status. What the lab measured is never lost: an
interrupted run ends with its directory and the signal's status, not a traceback."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.aa import with_aa
from dbperf.experiment.model import Experiment
from dbperf.experiment.spec import parse_experiment
from dbperf.explain.mode import detect_mode
from dbperf.history.store import history_path
from dbperf.replication.lab import run_replication
from dbperf.runner import interrupts
from dbperf.runner.estimate import estimate, human_seconds
from dbperf.runner.matrix import run_plan
from dbperf.runner.plan import RunPlan
from dbperf.runner.preflight import require_simulated_tools, require_targets
from dbperf.runner.resume import Earlier, earlier_run
from dbperf.runner.targets import build_targets
from dbperf.storage.out_folder import path_problem
from dbperf.storage.writable import check_writable
from dbperf.usecases import after_run
from dbperf.usecases.history import record_run
from dbperf.usecases.progress import PROGRESS, say

NO_CELL_SUCCEEDED = 3


@dataclass
class RunEnd:
    directory: Path
    exit_code: int  # 0, 3 when no cell succeeded, 128 + signal when interrupted


@dataclass
class Prepared:
    """What a run (or its dry run) starts from: the experiment as it runs, where its results go, the run it goes on
    with, whether it enters the history."""
    spec: Experiment
    directory: Path
    earlier: Earlier | None
    record: bool


def prepare_run(experiment: Path, out: Path | None, aa: bool = False, simulated: bool = False,
                record: bool = True, resume: bool = False, extend_s: float = 0.0) -> Prepared:
    """The experiment parsed and its options checked, before anything is built or written."""
    if resume and out is None:
        raise UserError("--resume goes on with a run cut short: give its directory with --out DIR")
    if extend_s and out is None:
        raise UserError("--extend gives a run's undecided cells more rounds: give its directory with --out DIR")
    # Absolute once, here: servers and set-up tools run with another working directory.
    directory = (out or Path("results") / f"{experiment.stem}-{datetime.now():%Y%m%d-%H%M%S}").absolute()
    path_problem(directory)  # a dangling link or a path not in UTF-8: one line before anything is read or planned
    spec = parse_experiment(experiment)
    if spec.replication is not None:
        if resume or extend_s:
            raise UserError(f"{experiment}: --resume and --extend go on with a matrix run; a replication lab's runs "
                            "again")
        return Prepared(spec, directory, None, record)
    if aa:
        spec = with_aa(spec)
    if simulated:
        spec = replace(spec, simulated=True)
    after_run.require_phases(spec)  # with --simulated applied: the option is the fix it names
    earlier = earlier_run(directory, spec, extend_s) if resume or extend_s else None
    if earlier is not None and earlier.meta.in_history is False:
        record = False  # the lab kept it out of the history when it ran it first
    if record:
        history_path()  # a bad DBPERF_HISTORY is said now, not after the run
    return Prepared(spec, directory, earlier, record)


def run_experiment(experiment: Path, out: Path | None, keep_data: bool, profile: bool = False,
                   yes: bool = False, aa: bool = False, simulated: bool = False, err: Console = PROGRESS,
                   record: bool = True, resume: bool = False, extend_s: float = 0.0,
                   on_claimed: Callable[[], object] | None = None) -> RunEnd:
    """Builds what the targets need, runs the matrix. `record=False`: the run stays out of the history (a run the
    lab composes for its own question, whose targets are not the user's series). `resume`: go on with the run cut
    short in `out`; `extend_s`: go on with the run in `out`, complete or not, its groups stopped on their budget
    share sharing this much more (runner/resume.py). `on_claimed`: called once `out` is the run's (a calibration
    writes its own record there)."""
    p = prepare_run(experiment, out, aa, simulated, record, resume, extend_s)
    spec, directory, earlier = p.spec, p.directory, p.earlier
    require_targets(spec)  # the dry run's target checks, before anything is built, fetched or claimed
    check_writable(directory)  # before the estimate: a read-only mount would be "more data than the free disk"
    if spec.replication is not None:
        return run_replication_experiment(spec, directory, keep_data, err)
    size = estimate(spec, directory, earlier)
    if size.needs_confirmation() and not yes:  # said once, as the error; with --yes, as a warning
        raise UserError(f"{experiment}: {size.summary()}; add --yes to run it anyway")
    for line in size.warnings():
        say(f"dbperf: warning: {line}", err)
    if spec.simulated:  # its tools before the builds and the rounds, not after the whole budget is spent
        require_simulated_tools(spec)
    exp, builds = build_targets(spec, err)
    plan = RunPlan.inspected(exp, builds, earlier)  # a library that is not one of its engine's: said now
    if profile:
        mode = detect_mode()
        err.print(f"dbperf: counters mode {mode.mode}: {mode.reason}", highlight=False)
    end = run_to_end(directory, keep_data, "cell",
                     lambda: run_plan(plan, directory, err, keep_data=keep_data, profile=profile, in_history=p.record,
                                      on_claimed=lambda: _claimed(exp, directory, earlier, extend_s, err, on_claimed)),
                     record=p.record, err=err)
    if end.exit_code == 0:
        interrupted = after_run.run_after(spec, directory, err)
        if interrupted is not None:
            return RunEnd(directory, interrupted)
    return end


def _claimed(exp: Experiment, directory: Path, earlier: Earlier | None, extend_s: float, err: Console,
             then: Callable[[], object] | None) -> None:
    announce(exp, directory, earlier, extend_s, err)
    if then is not None:
        then()


def announce(exp: Experiment, directory: Path, earlier: Earlier | None, extend_s: float, err: Console) -> None:
    """The run's banner, once its results folder is claimed: a run refused before (a folder not empty, a password
    not set) says only why, not where results would have gone."""
    repeats = (f"auto repeats (at least {exp.repeats} rounds, budget {exp.budget_s:.0f} s)"
               if exp.budget_s is not None else f"{exp.repeats} repeats")
    say(f"dbperf: {len(exp.benchmarks)} benchmarks × {len(exp.threads)} thread counts × {repeats} × "
        f"{len(exp.targets)} targets, results in {directory}", err)
    if earlier is not None:
        say(f"dbperf: resuming the run started {earlier.meta.started_at}: {len(earlier.records)} cell(s) measured "
            "before are kept, not measured again", err)
    if earlier is not None and extend_s:
        reopened = earlier.reopened()
        say(f"dbperf: extending it by {human_seconds(extend_s)}: {len(reopened)} (benchmark, threads) stopped on "
            f"their budget share go on{': ' if reopened else ''}"
            + ", ".join(f"{r.benchmark} t={r.threads} ({r.rounds} rounds)" for r in reopened), err)


def run_replication_experiment(spec: Experiment, directory: Path, keep_data: bool,
                               err: Console = PROGRESS) -> RunEnd:
    """An experiment with a [replication] section: the replication lab (dbperf/replication/) instead of the matrix."""
    exp, builds = build_targets(spec, err)
    r = exp.replication
    assert r is not None
    say(f"dbperf: replication lab: primary + {r.replicas} replica(s), studies {', '.join(r.studies)}, results in "
        f"{directory}", err)
    return run_to_end(directory, keep_data, "measurement",
                      lambda: run_replication(exp, directory, err, keep_data=keep_data, builds=builds), err=err)


def run_to_end(directory: Path, keep_data: bool, unit: str, run: Callable[[], Any], record: bool = False,
               err: Console = PROGRESS) -> RunEnd:
    """Runs the matrix or the replication lab and turns how it ended into the exit code, saying why on stderr;
    `record` adds the run to the history store (a warning if it cannot be)."""
    try:
        outcome = run()
    except KeyboardInterrupt as interrupt:
        say(f"dbperf: interrupted ({interrupts.reason(interrupt)}); what was measured is in {directory}", err)
        return RunEnd(directory, interrupts.exit_code(interrupt))
    if keep_data and outcome.runtime_dir:
        say(f"dbperf: the servers' data directories are kept in {outcome.runtime_dir}", err)
    if record and outcome.cells_ok == 0:  # a run that measured nothing is no point of a series
        say(f"dbperf: note: not recorded in the history: no {unit} succeeded", err)
    elif record:
        record_run(directory, err)
    if outcome.cells_ok == 0 and outcome.cells_failed > 0:
        say(f"dbperf: error: no {unit} succeeded ({outcome.cells_failed} failed); the errors are in "
            f"{directory / 'results.jsonl'}", err)
        return RunEnd(directory, NO_CELL_SUCCEEDED)
    return RunEnd(directory, 0)
