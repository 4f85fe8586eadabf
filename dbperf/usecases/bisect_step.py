"""One step of a `dbperf bisect` by the wall clock (the default metric): its A/B experiment, the oldest release
("good") as the base against the probed one, decided by the lab's sequential verdict (`repeats = "auto"`,
`min_effect` = the threshold), run through the run use case (usecases/run.py) into a folder of its own under the
bisect's, so that nothing measured is lost; its judgement read back from that folder as the report decides it. A
step retried runs with twice the budget; a search resumed replays the steps decided before (their judgements from
bisect.json) and resumes the run of the step that was cut short (runner/resume.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment import toml_text
from dbperf.metrics import CPU, WALL
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.bisect_path import FAILED, BisectResult, Judgement, Step, StepSettings
from dbperf.storage.results import EXPERIMENT, meta_status, read_results, writing
from dbperf.usecases.bisect_candidates import candidates, target_table
from dbperf.usecases.bisect_search import Judge
from dbperf.usecases.progress import PROGRESS, say
from dbperf.usecases.run import run_experiment


def step_experiment(s: StepSettings, good: str, probe: str, budget_s: float) -> str:
    """The A/B experiment of one step, as TOML (experiment/toml_text.py)."""
    run: dict[str, Any] = {"benchmarks": [s.benchmark], "threads": [s.threads], "table_size": s.table_size,
                           "time": f"{s.time_s:g}s", "warmup": f"{s.warmup_s:g}s", "repeats": "auto",
                           **({"order": s.order} if s.order else {}), "budget": f"{budget_s:g}s",
                           "min_effect": s.threshold, "base": candidates(s).name(good)}
    return toml_text.document({"run": run, "target": [target_table(s, good), target_table(s, probe)]},
                              f"dbperf bisect: one step, {good} (base) against {probe}")


def judgement_of(directory: Path, target: str, benchmark: str, threads: int, exit_code: int) -> Judgement:
    """The probed target's cell of a step's results directory, as the report decides it."""
    where = str(directory)
    try:
        meta, records, _ = read_results(directory)
    except UserError:
        return Judgement(FAILED, directory=where, exit_code=exit_code)  # nothing written (interrupted early)
    cell = build_matrix(meta, records).cell(target, benchmark, threads)
    if cell is None or not cell.runs:
        return Judgement(FAILED, directory=where, exit_code=exit_code)
    v = cell.deciding_verdict
    if v is None:
        return Judgement("undecided", cell.rqps, rounds=len(cell.runs), directory=where, exit_code=exit_code)
    return Judgement(v.verdict, cell.rqps, v.lower, v.upper, len(cell.runs), v.metric, where, exit_code)


def judgements_of(deciding: Judgement, settings: StepSettings, probe: str) -> list[Judgement]:
    """The wall clock's and the CPU time's verdicts of the probe's cell in the run `deciding` came from (its
    directory), each as a Judgement (metric "wall", "cpu"); `deciding` alone when the run has no cell to read."""
    if deciding.directory is None:
        return [deciding]
    try:
        meta, records, _ = read_results(Path(deciding.directory))
    except UserError:
        return [deciding]
    cell = build_matrix(meta, records).cell(candidates(settings).name(probe), settings.benchmark, settings.threads)
    if cell is None or not cell.runs:
        return [deciding]
    out = []
    for metric, v in ((WALL, cell.verdict_detail), (CPU, cell.cpu_verdict_detail)):
        if v is not None:  # the cell's rQPS is the headline's (the wall clock's)
            out.append(Judgement(v.verdict, cell.rqps if metric.headline else None, v.lower, v.upper,
                                 len(cell.runs), metric, deciding.directory, deciding.exit_code))
    return out or [deciding]


def release_judge(settings: StepSettings, out: Path, yes: bool = False, err: Console = PROGRESS,
                  earlier: Sequence[Step] = (), prefix: str = "") -> Judge:
    """Each step: its experiment written as out/NN-VERSION.toml, run into out/NN-VERSION/ (a retry: -tryK), with
    the budget doubled at every try (`prefix` before NN: the confirmation's run is confirm-NN-VERSION). `earlier`:
    the steps of a search cut short (`earlier_steps`), replayed in order; the one interrupted, or one whose
    directory exists without a step in the path (killed), goes on with its run."""
    counter = [0]

    def judge(good: str, probe: str, attempt: int) -> Judgement:
        counter[0] += 1
        stem = f"{prefix}{counter[0]:02d}-{probe}" + (f"-try{attempt + 1}" if attempt else "")
        before = earlier[counter[0] - 1] if counter[0] <= len(earlier) else None
        if before is not None and (before.version, before.attempt) != (probe, attempt + 1):
            raise UserError(f"bisect --resume: step {counter[0]} was {before.version} (try {before.attempt}) "
                            f"before and is {probe} (try {attempt + 1}) now: the earlier path does not replay")
        if before is not None and not before.judgement.interrupted:
            say(f"dbperf: bisect step {counter[0]}: {good} against {probe} (try {attempt + 1}): kept from before the "
                f"resume", err)
            return before.judgement
        budget = settings.budget_s * 2 ** attempt
        experiment = out / f"{stem}.toml"
        with writing(experiment):
            out.mkdir(parents=True, exist_ok=True)
            experiment.write_text(step_experiment(settings, good, probe, budget))
        status = meta_status(out / stem)
        kept = out / stem / EXPERIMENT
        if status == "complete" and kept.is_file() and kept.read_text() == experiment.read_text():
            # measured, but killed before the path was written (another experiment there: the run refuses it)
            return judgement_of(out / stem, candidates(settings).name(probe), settings.benchmark, settings.threads, 0)
        say(f"dbperf: bisect step {counter[0]}: {good} against {probe} (try {attempt + 1}, budget {budget:g} s)"
            + (": resuming its run" if status is not None else ""), err)
        end = run_experiment(experiment, out / stem, keep_data=False, yes=yes, err=err, resume=status is not None)
        return judgement_of(end.directory, candidates(settings).name(probe), settings.benchmark, settings.threads,
                            end.exit_code)

    return judge


@dataclass
class WallBisect:
    """The default metric of `dbperf bisect`: every step an A/B run decided by the sequential verdicts."""
    settings: StepSettings
    out: Path
    yes: bool = False
    err: Console = PROGRESS
    earlier: Sequence[Step] = ()

    def judge(self) -> Judge:
        return release_judge(self.settings, self.out, self.yes, self.err, self.earlier)

    def finish(self, result: BisectResult, written: Callable[[BisectResult], object], confirm: bool = True) -> None:
        """Nothing to add: the wall clock decided every step."""
