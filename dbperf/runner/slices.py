"""Slices runs (`order = "slices"` in `[run]`): a round of one (benchmark, threads) is one driver process in which
every target of the run, the base included, takes turns every `slice` (0.02 s by default; driver/src/slices.rs), each
measured for `time` of its own slices after `warmup` of them, so the process runs targets × (warmup + time).

Why: on a host whose speed changes within a second (docs/verdicts.md, 2026-11-27: one process's 0.1 s samples
correlate at +0.66 0.1 s apart and not at all 2 s apart), two processes half a second apart differ by as much as the
host drifts meanwhile, while two targets alternating every 0.1 s inside one process meet nearly the same host (A on
even, B on odd 0.1 s intervals of one process: ×0.27 of the A/A spread between processes; in slices of 20 ms,
×0.15–0.22).

The round's order (runner/rounds.py, alternating) says which target has slice 0, so that going first alternates
from round to round. Each target's data is prepared as for a cell of its own (a write cell restores each target's
data first, its remedies act on its data) before the process starts. Each side needs a library file of its own
(dlopen maps one file once): where targets share one (the A/A copy), each loads a copy made in the run's own data
folder, and its records say which. What acts on the process as a whole (the process variant, the remedies on the
process) is the same for every target (experiment/slices_rules.py refuses the run otherwise); the driver job of each
target must then differ only in its library, database and settings, or the round is refused in one line.

Each side becomes an ordinary cell record (one per target per round), so rounds, verdicts and reports read them as
any: its result is its own slices (counts, latencies, its threads' CPU time, one interval per slice), its `slices`
says how it was measured, and its noise sensors and resources are the shared process's window, the same in every
side's record."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.host.driver import DriverOutcome, collect_job, start_job
from dbperf.host.noise import NoiseWindow
from dbperf.records import CellRecord, DriverJob, RunResult, SliceSide, SlicesResult, SlicesSide
from dbperf.runner.cell_run import HANG_GRACE_S, CellRun, cell_record, prepare_cell
from dbperf.runner.plan import CellPlan
from dbperf.targets.lifecycle import TargetLifecycle
from dbperf.targets.resources import SLICES_METHOD

# The driver job's fields a side has of its own; every other is the process's, the same for every side.
PER_SIDE = ("library", "database", "settings")
LIBRARIES = ".libraries"  # in the lab's data folder: the copies of a library two targets share


def _file(path: str) -> tuple[int, int] | str:
    """What dlopen tells libraries apart by: the file (device, inode), whatever its path; the path if unreadable."""
    try:
        st = os.stat(path)
    except OSError:
        return path
    return (st.st_dev, st.st_ino)


def own_libraries(targets: Iterable[Target], root: Path) -> dict[str, str]:
    """Per target, the library file its side loads: its own, or, where several targets name one file (the A/A copy),
    a copy of that file for each of them in `root` (the run's data folder, removed with it)."""
    targets = list(targets)
    sharing: dict[tuple[int, int] | str, list[Target]] = {}
    for t in targets:
        sharing.setdefault(_file(t.library), []).append(t)
    out = {t.name: t.library for t in targets}
    for shared in sharing.values():
        for t in shared if len(shared) > 1 else ():
            copy = root / LIBRARIES / t.name / Path(t.library).name
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(t.library, copy)
            out[t.name] = str(copy)
    return out


def describe(e: Experiment, libraries: Mapping[str, str]) -> dict[str, Any]:
    """meta.json's `slices`: the slice, and the library copies the sides load (target -> copy)."""
    return {"slice_s": e.slice_s,
            "library_copies": {t.name: libraries[t.name] for t in e.targets if libraries[t.name] != t.library}}


def _differs(run: CellRun, first: CellRun) -> str | None:
    """What of a side's driver process differs from the first side's, or None."""
    field = next((f for f in DriverJob.__struct_fields__
                  if f not in PER_SIDE and getattr(run.job, f) != getattr(first.job, f)), None)
    if field is not None:
        return f"its driver job's {field}"
    if run.env != first.env:
        return "its environment"
    if run.cpus != first.cpus:
        return "its CPUs"
    if run.remedies.prefix != first.remedies.prefix:
        return "the command its driver starts through"
    return None


def slices_job(e: Experiment, runs: list[CellRun], libraries: Mapping[str, str]) -> DriverJob:
    """The one driver job of a round's sides (in slice order), or a UserError naming the side whose process would
    differ from the first's."""
    first = runs[0]
    for run in runs[1:]:
        why = _differs(run, first)
        if why is not None:
            raise UserError(f"order = \"slices\": target {run.cell.target.name!r} shares one driver process with "
                            f"{first.cell.target.name!r}, but {why} differs from it")
    sides = [SliceSide(library=libraries[run.cell.target.name], database=run.job.database,
                       settings=list(run.job.settings)) for run in runs]
    return first.job.replace(library="", database="", settings=[], slices=sides, slice_s=e.slice_s)


def run_slices(e: Experiment, cells: list[CellPlan], data: Mapping[str, TargetLifecycle],
               libraries: Mapping[str, str]) -> list[CellRecord]:
    """A round's cells (every target, in the round's order) as one driver process; a record per side."""
    runs = [prepare_cell(e, cell, data[cell.target.name]) for cell in cells]
    job = slices_job(e, runs, libraries)
    first, k = runs[0], len(runs)
    started = time.time()
    window = NoiseWindow(k * e.warmup_s, first.watched)
    if first.sampler:
        first.sampler.start(warmup_s=k * e.warmup_s, time_s=k * e.time_s)
        first.sampler.method = SLICES_METHOD
    proc = start_job(job, first.env, first.cpus, prefix=first.remedies.prefix)
    if first.sampler:
        first.sampler.client_pid = proc.pid
    outcome = collect_job(proc, job, SlicesResult, k * (e.time_s + e.warmup_s) + HANG_GRACE_S)
    noise = window.finish(outcome.result)
    resources = first.sampler.finish(outcome.result) if first.sampler else None
    process = f"{cells[0].benchmark.name}/t{cells[0].threads}/r{cells[0].repeat}"
    sides = outcome.result.sides if outcome.result else []
    error = outcome.error or (f"the driver reported {len(sides)} sides, not {k}" if len(sides) != k else None)
    records = []
    for i, run in enumerate(runs):
        side = sides[i] if len(sides) == k else None
        mine = DriverOutcome[RunResult](side is not None, side, error, outcome.stderr_tail)
        record = cell_record(run, data[run.cell.target.name], mine, noise, resources, started)
        library = libraries[run.cell.target.name]
        record.slices = SlicesSide(slice_s=e.slice_s, sides=k, position=i + 1, process=process,
                                   targets=[c.target.name for c in cells], pid=proc.pid,
                                   library=library if library != run.cell.target.library else None)
        records.append(record)
    return records
