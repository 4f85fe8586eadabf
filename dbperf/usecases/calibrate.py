"""`dbperf calibrate`: the host's cost model (stats/cost_fit.py, stored by storage/cost_models.py).

It measures CPU time per query (user, and user + system) of a spread of SQLite builds (optimisation levels, PGO
and the lab's other flag variants) × the in-process catalog, with the simulated tier's counters of each cell, fits
ns per simulated event, validates by leaving one build out at a time, and stores the model as this host's current
one. The measuring is an experiment composed here and run as `dbperf run` runs one (usecases/run.py, kept out of
the history): its own budget and progress bar, a results directory whose every record is written as it is
measured, and `--resume` to go on with a calibration cut short. CPU time, not wall clock: the simulated tier counts
the driver's user space only (cachegrind), and for in-process SQLite that is where the queries run; user + system
is fitted as differences between builds, in which the kernel's work cancels (stats/cost_fit.py)."""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import msgspec
from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment import toml_text
from dbperf.experiment.durations import parse_duration
from dbperf.experiment.keys import MIN_ROUNDS
from dbperf.experiment.spec import parse_experiment
from dbperf.host.compiler import find_compiler
from dbperf.host.facts import host_metadata
from dbperf.records import CostModelRecord, SimulatedRecord
from dbperf.report.calibration_view import host_line
from dbperf.runner.estimate import estimate, human_seconds
from dbperf.runner.preflight import simulated_checks
from dbperf.stats.cost_fit import Calibration, CalibrationCell, TooFewCells, calibrate
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage import cost_models
from dbperf.storage.calibration_run import CALIBRATION, MARKER, CalibrationRun, write_calibration
from dbperf.storage.out_folder import claim
from dbperf.storage.results import EXPERIMENT, meta_status, read_results, write_whole
from dbperf.usecases.progress import PROGRESS, say
from dbperf.usecases.run import run_experiment

SQLITE = "3.54.1"
BASE = "O2"
CONFIG = {"journal_mode": "WAL", "synchronous": "NORMAL"}  # the demo's (examples/demo.toml)
TOO_FEW = 3  # exit status: nothing (or too little) measured to fit, as `dbperf run`'s "no cell succeeded"
TEST_PLAN = "DBPERF_TEST_CALIBRATION"  # tests only: a JSON plan of a few cells (see `plan`)


@dataclass(frozen=True)
class Build:
    """A SQLite build of the calibration: `build` variants and `cflags` as a target takes them (cflags come last,
    so ["-O0"] overrides the variant's -O2)."""
    name: str
    build: tuple[str, ...]
    cflags: tuple[str, ...] = ()


# A spread of code generation over the same source: what differs between the cells is the compiled code, so that
# the fit sees instructions, branches and misses move apart (-O0 many instructions, few mispredicts each; PGO fewer
# taken branches; THREADSAFE=0 no mutex calls, whose locked instructions cost more than their count says).
BUILDS = (
    Build("O2", ("O2",)),
    Build("O0", ("O2",), ("-O0",)),
    Build("O1", ("O2",), ("-O1",)),
    Build("Os", ("O2",), ("-Os",)),
    Build("O3", ("O3",)),
    Build("O2-pgo", ("O2", "pgo")),
    Build("O2-frame-pointers", ("O2", "frame-pointers")),
    Build("O2-threadsafe0", ("O2",), ("-DSQLITE_THREADSAFE=0",)),
    Build("O2-native", ("O2", "native")),
)
QUICK_BUILDS = ("O2", "O0", "Os", "O3", "O2-pgo")
DEMO_BENCHMARKS = ("point-query", "random-points-100", "range-covered-si", "read-only-100", "update-index",
                   "update-nonindex", "write-only", "insert")
# The demo's 8 and 8 more of the in-process catalog: point lookups one and a hundred at a time, covered and not,
# ranges, transactions of reads and of writes. Not scan, read-only-10000 or random-points-1000: one query of those
# takes milliseconds, so their cells hold a few queries and their medians are the noisiest.
BENCHMARKS = (*DEMO_BENCHMARKS, "random-points-10", "hot-points", "points-covered-pk", "points-notcovered-si",
              "range-covered-pk", "range-notcovered-pk", "read-only-10", "read-write-10")
BUDGET_S = 1800.0
QUICK_BUDGET_S = 600.0


@dataclass(frozen=True)
class Plan:
    """What a calibration measures; `experiment()` is the experiment file that measures it."""
    builds: tuple[Build, ...]
    benchmarks: tuple[str, ...]
    budget_s: float
    quick: bool
    time: str = "0.5s"  # the demo's: on a shared host, more short cells beat few long ones
    warmup: str = "0.2s"
    table_size: int = 100_000

    def experiment(self) -> str:
        """The experiment as TOML (experiment/toml_text.py)."""
        kind = "--quick" if self.quick else "full"
        head = (f"{MARKER} ({kind}): SQLite {SQLITE} builds x in-process benchmarks, user CPU per query measured and\n"
                "# the simulated counters per query (cachegrind) of each cell, for this host's cost model. Written by\n"
                "# dbperf (usecases/calibrate.py); `dbperf calibrate --resume --out DIR` goes on with it.\n")
        run = {"benchmarks": list(self.benchmarks), "table_size": self.table_size, "time": self.time,
               "warmup": self.warmup, "repeats": "auto", "budget": f"{self.budget_s:g}s", "simulated": True,
               "base": BASE}
        targets = [{"name": b.name, "source": f"sqlite@{SQLITE}", "build": list(b.build),
                    **({"cflags": list(b.cflags)} if b.cflags else {}), "config": dict(CONFIG)}
                   for b in self.builds]
        return head + toml_text.document({"run": run, "target": targets})


def plan(quick: bool, budget_s: float | None) -> Plan:
    """The full calibration (9 builds x 16 benchmarks), or `--quick`'s (5 x 8, a shorter budget: fewer cells, a
    weaker validation). $DBPERF_TEST_CALIBRATION (tests only) is a JSON object that shrinks it: builds (names of
    BUILDS, the base first), benchmarks, time, warmup, table_size, budget."""
    builds = tuple(b for b in BUILDS if not quick or b.name in QUICK_BUILDS)
    benchmarks = DEMO_BENCHMARKS if quick else BENCHMARKS
    budget = budget_s if budget_s is not None else QUICK_BUDGET_S if quick else BUDGET_S
    p = Plan(builds, benchmarks, budget, quick)
    raw = os.environ.get(TEST_PLAN)
    if not raw:
        return p
    try:
        test = json.loads(raw)
        by_name = {b.name: b for b in BUILDS}
        return Plan(tuple(by_name[n] for n in test.get("builds", [b.name for b in builds])),
                    tuple(test.get("benchmarks", benchmarks)),
                    budget_s if budget_s is not None else parse_duration(test.get("budget", budget), TEST_PLAN),
                    quick, str(test.get("time", p.time)), str(test.get("warmup", p.warmup)),
                    int(test.get("table_size", p.table_size)))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise UserError(f"{TEST_PLAN}: not a test plan ({e})") from None


def experiment_path(quick: bool) -> Path:
    """Where the experiment file is written (beside the models: a calibration's results directory must start
    empty, and a user's folder is not the lab's to write into)."""
    return cost_models.models_dir() / ("calibration-quick.toml" if quick else "calibration.toml")


# --- the results directory ------------------------------------------------------------------------------------

def latest_run(host: Mapping[str, object]) -> Path:
    """`--resume` without --out: the host's newest calibration run."""
    root = cost_models.runs_dir(host)
    with contextlib.suppress(OSError):
        runs = sorted((p for p in root.iterdir() if p.is_dir() and CALIBRATION.record(p)), key=lambda p: p.name)
        if runs:
            return runs[-1]
    raise UserError(f"--resume: no calibration run of this host in {root} to go on with; `dbperf calibrate` starts "
                    "one (--out DIR: resume the one in DIR)")


# --- the cells and the fit --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cells:
    cells: list[CalibrationCell]
    excluded: list[str]  # (build, benchmark) not fitted, with why
    base: str
    meta_host: dict[str, object]


def cells_of(directory: Path) -> Cells:
    """A calibration run's cells: the median user CPU µs per query of each (build, benchmark) and the simulated
    per-query counters of the same pair (the last record of each, as the report reads them)."""
    meta, records, _ = read_results(directory)
    matrix = build_matrix(meta, records)
    counters: dict[tuple[str, str], SimulatedRecord] = {}
    for r in records:
        if isinstance(r, SimulatedRecord):
            counters[(r.target, r.benchmark)] = r
    cells: list[CalibrationCell] = []
    excluded: list[str] = []
    for target in matrix.targets:
        for benchmark in matrix.benchmarks:
            cell = matrix.cell(target, benchmark, 1)
            user = cell.median_of("cpu_user_us_per_query") if cell else None
            sim = counters.get((target, benchmark))
            if user is None or not math.isfinite(user) or user <= 0:
                excluded.append(f"{target} {benchmark}: no user CPU measured")
            elif sim is None or sim.error or not sim.per_query.get("instructions"):
                why = sim.error if sim is not None and sim.error else "not measured"
                excluded.append(f"{target} {benchmark}: no simulated counters ({why})")
            else:
                total = cell.median_of("cpu_us_per_query") if cell else None
                cells.append(CalibrationCell(target, benchmark, user, dict(sim.per_query), total))
    host = msgspec.to_builtins(meta.host) if meta.host else {}
    return Cells(cells, excluded, matrix.base, host)


@dataclass(frozen=True)
class Calibrated:
    calibration: Calibration
    model: CostModelRecord
    stored: Path  # the model's file (the host's current one)
    version: int  # how many models this host has had, this one included
    directory: Path  # the calibration run


def fit_run(directory: Path, quick: bool) -> Calibrated:
    """Fits, validates and stores the model of the calibration run in `directory`."""
    found = cells_of(directory)
    try:
        calibration = calibrate(found.cells, found.base, excluded=found.excluded)
    except TooFewCells as e:
        raise Unfitted(f"calibrate: too little measured to fit a model: {e} ({len(found.cells)} usable cells; "
                       f"the results are in {directory})") from None
    host = cost_models.host_identity(found.meta_host)
    model = calibration.record(host, datetime.now(UTC).isoformat(timespec="seconds"), quick, str(directory))
    stored = cost_models.save(model)
    return Calibrated(calibration, model, stored, len(cost_models.versions(host)), directory)


class Unfitted(Exception):
    """The run ended but measured too little to fit: the CLI says it in one line, exit 3, the results kept."""


# --- the whole command ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CalibrateEnd:
    directory: Path
    exit_code: int  # 0, 128 + signal when interrupted, 3 when nothing was measured
    calibrated: Calibrated | None = None


def run_calibration(out: Path | None, quick: bool = False, budget_s: float | None = None, resume: bool = False,
                    yes: bool = False, err: Console = PROGRESS) -> CalibrateEnd:
    """Checks everything a calibration needs before it builds or measures anything (a C compiler, the simulated
    tier's tools, the directory), runs (or resumes) its experiment, then fits and stores the model."""
    if resume and (quick or budget_s is not None):
        raise UserError("--resume goes on with the calibration as it was started (its builds, benchmarks and "
                        "budget): drop --quick and --budget")
    host = host_metadata()
    cost_models.models_dir()  # a bad DBPERF_DATA is said now, not after the run
    find_compiler()  # every build needs it, cached or not (its version is part of a build's key)
    if out is not None:
        directory = out.absolute()
    elif resume:
        directory = latest_run(host)
    else:
        directory = (cost_models.runs_dir(host) / f"{datetime.now():%Y%m%d-%H%M%S}{'-quick' if quick else ''}")
    earlier = claim(directory, CALIBRATION, resume)
    if isinstance(earlier, CalibrationRun):
        quick = earlier.quick
        try:
            text = (directory / EXPERIMENT).read_text(encoding="utf-8")
        except OSError as e:
            raise UserError(f"{directory / EXPERIMENT}: cannot read: {e.strerror or e}") from None
    else:
        text = plan(quick, budget_s).experiment()
    experiment = experiment_path(quick)
    write_whole(experiment, text.encode("utf-8"))
    spec = parse_experiment(experiment)
    for check in simulated_checks(spec):  # the run would refuse too, but in the words of `dbperf run`
        if check.problem:
            raise UserError(f"calibrate: the simulated tier counts every cell's events: {check.problem}")
    if resume and meta_status(directory) == "complete":
        say(f"dbperf: calibrate: the run in {directory} is complete: fitting it again, nothing measured", err)
    else:
        size = estimate(spec, directory)
        say(f"dbperf: calibrate{' --quick' if quick else ''}: {len(spec.targets)} SQLite {SQLITE} builds "
            f"({', '.join(t.name for t in spec.targets)}) × {len(spec.benchmarks)} benchmarks, user CPU per query "
            f"(at least {MIN_ROUNDS} rounds, budget {human_seconds(spec.budget_s or 0)}) and each cell once under "
            f"cachegrind: about {human_seconds(size.seconds)} once the builds are made (an estimate); an "
            f"interrupted calibration goes on with `dbperf calibrate --resume --out {directory}`", err)
        end = run_experiment(experiment, directory, keep_data=False, yes=yes, err=err, record=False, resume=resume,
                             on_claimed=lambda: write_calibration(directory, quick))
        if end.exit_code >= 128:
            say(f"dbperf: calibrate: interrupted; `dbperf calibrate --resume --out {directory}` goes on with it",
                err)
            return CalibrateEnd(directory, end.exit_code)
        if end.exit_code:
            return CalibrateEnd(directory, end.exit_code)
    try:
        return CalibrateEnd(directory, 0, fit_run(directory, quick))
    except Unfitted as e:
        say(f"dbperf: error: {e}", err)
        return CalibrateEnd(directory, TOO_FEW)


# --- the host's current model ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Current:
    """`calibrate --show`: the host's current model, where it is stored and how many it has had."""
    model: CostModelRecord
    stored: Path
    versions: int


def show_current() -> Current | None:
    """The host's current model, None when it has none."""
    host = host_metadata()
    model = cost_models.load_current(host)
    if model is None:
        return None
    return Current(model, cost_models.current_path(host), len(cost_models.versions(host)))


def none_line() -> str:
    host = host_metadata()
    return (f"no cost model calibrated on this host ({host_line(cost_models.host_identity(host))}): `dbperf calibrate` "
            f"makes one (about an hour on 2 cores; --quick: fewer cells, about 20 minutes)")
