"""Slices runs (`order = "slices"` in `[run]`): a round of one (benchmark, threads) is one driver process in which
every target of the run, the base included, takes turns every `slice` (0.02 s by default; driver/src/slices.rs), each
measured for `time` of its own slices after `warmup` of them, so the process runs targets × (warmup + time). The
targets are all SQLite (their libraries loaded side by side) or all servers (one connection per server per client
thread, each server started and kept as in any order).

Why: on a host whose speed changes within a second (docs/verdicts.md, 2026-11-27: one process's 0.1 s samples
correlate at +0.66 0.1 s apart and not at all 2 s apart), two processes half a second apart differ by as much as the
host drifts meanwhile, while two targets alternating every 0.1 s inside one process meet nearly the same host (A on
even, B on odd 0.1 s intervals of one process: ×0.27 of the A/A spread between processes; in slices of 20 ms,
×0.15–0.22).

The round's order (runner/rounds.py, alternating) says which target has slice 0, so that going first alternates
from round to round. Each target's data is prepared as for a cell of its own (a write cell restores each target's
data first, its remedies act on its data; the matrix has started a server that died again and run the post-write
step, runner/matrix.py `_ready`) before the process starts. Each SQLite side needs a library file of its own (dlopen
maps one file once): where targets share one (the A/A copy), each loads a copy made in the run's own data folder,
and its records say which. What acts on the process as a whole (the process variant, the remedies on the process) is
the same for every target (experiment/slices_rules.py refuses the run otherwise); the driver job of each target
must then differ only in what PER_SIDE names, or the round is refused in one line. A server's password reaches the
driver in its environment only, as for any cell, but in a variable of the side's own (each lab server has its own
password), which the side names.

Each side becomes an ordinary cell record (one per target per round), so rounds, verdicts and reports read them as
any: its result is its own slices (counts, latencies, its threads' CPU time, one interval per slice), its `slices`
says how it was measured, and its noise sensors are the shared process's window, the same in every side's record.
SQLite sides' resources are the shared process's too; a server side's server usage (measured by the driver) and
resources (its own sampler: its server's I/O and counters) are its own server's over the process's whole window,
which includes what the server did in the background during the other sides' slices."""

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
from dbperf.records import CellRecord, DriverJob, Resources, RunResult, SliceSide, SlicesResult, SlicesSide
from dbperf.runner.cell_plan import CellPlan
from dbperf.runner.cell_run import HANG_GRACE_S, CellRun, cell_record, prepare_cell
from dbperf.servers.lifecycle import PASSWORD_ENV
from dbperf.targets.lifecycle import TargetLifecycle
from dbperf.targets.resources import SLICES_METHOD, SLICES_SERVER_METHOD, CellSampler

# The driver job's fields a side has of its own; every other is the process's, the same for every side. A SQLite
# side's are its library, database and settings; a server side's its engine, DSN and the lab's pid of its server
# (and its password, in the environment: side_env).
PER_SIDE = ("library", "database", "settings", "engine", "dsn", "server_pid")
LIBRARIES = ".libraries"  # in the lab's data folder: the copies of a library two targets share
SIDE_PASSWORD_ENV = "DBPERF_PASSWORD_{}"  # side i's password (1-based), where an ordinary cell has DBPERF_PASSWORD


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
        if not t.is_server:  # a server side loads no library
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
    """meta.json's `slices`: the slice, the library copies the sides load (target -> copy), and `turn_checkpoint`
    where the write cells' sides checkpointed in their own turns."""
    return {"slice_s": e.slice_s,
            "library_copies": {t.name: libraries[t.name] for t in e.targets if libraries[t.name] != t.library},
            **({"turn_checkpoint": True} if e.turn_checkpoint else {})}


def side_env(run: CellRun, i: int) -> tuple[dict[str, str], dict[str, str]]:
    """Side `i`'s environment as the process's part and its own: a server's password moves from DBPERF_PASSWORD to
    a variable of the side's own (SIDE_PASSWORD_ENV), which its SliceSide names; all else is the process's."""
    process = {k: v for k, v in run.env.items() if k != PASSWORD_ENV}
    password = run.env.get(PASSWORD_ENV)
    return process, {} if password is None else {SIDE_PASSWORD_ENV.format(i + 1): password}


def _differs(run: CellRun, first: CellRun) -> str | None:
    """What of a side's driver process differs from the first side's, or None."""
    field = next((f for f in DriverJob.__struct_fields__
                  if f not in PER_SIDE and getattr(run.job, f) != getattr(first.job, f)), None)
    if field is not None:
        return f"its driver job's {field}"
    if side_env(run, 0)[0] != side_env(first, 0)[0]:
        return "its environment"
    if run.cpus != first.cpus:
        return "its CPUs"
    if run.remedies.prefix != first.remedies.prefix:
        return "the command its driver starts through"
    return None


def _side(run: CellRun, i: int, libraries: Mapping[str, str]) -> SliceSide:
    job = run.job
    if not run.cell.target.is_server:
        return SliceSide(library=libraries[run.cell.target.name], database=job.database, settings=list(job.settings))
    password_env = next(iter(side_env(run, i)[1]), None)
    return SliceSide(engine=job.engine, dsn=job.dsn, server_pid=job.server_pid, password_env=password_env)


def slices_job(e: Experiment, runs: list[CellRun], libraries: Mapping[str, str]) -> tuple[DriverJob, dict[str, str]]:
    """The one driver job of a round's sides (in slice order) and the driver's environment (the process's, and each
    server side's password in its own variable), or a UserError naming the side whose process would differ from the
    first's."""
    first = runs[0]
    for run in runs[1:]:
        why = _differs(run, first)
        if why is not None:
            raise UserError(f"order = \"slices\": target {run.cell.target.name!r} shares one driver process with "
                            f"{first.cell.target.name!r}, but {why} differs from it")
    sides = [_side(run, i, libraries) for i, run in enumerate(runs)]
    env = side_env(first, 0)[0]
    for i, run in enumerate(runs):
        env.update(side_env(run, i)[1])
    # A read cell's WAL stays empty: its turn checkpoints would be a PRAGMA per turn that checkpoints nothing.
    job = first.job.replace(library="", database="", settings=[], dsn=None, server_pid=None, slices=sides,
                            slice_s=e.slice_s, turn_checkpoint=e.turn_checkpoint and first.cell.benchmark.writes)
    return job, env


def _start_samplers(e: Experiment, runs: list[CellRun]) -> list[CellSampler]:
    """The round's resource samplers, started: SQLite sides share the process's samples (the first side's sampler);
    each server side samples its own server."""
    servers = runs[0].cell.target.is_server
    samplers = [s for s in ([run.sampler for run in runs] if servers else [runs[0].sampler]) if s is not None]
    for sampler in samplers:
        if servers:
            sampler.slices_side()
        sampler.start(warmup_s=len(runs) * e.warmup_s, time_s=len(runs) * e.time_s)
        sampler.method = SLICES_SERVER_METHOD if servers else SLICES_METHOD
    return samplers


def run_slices(e: Experiment, cells: list[CellPlan], data: Mapping[str, TargetLifecycle],
               libraries: Mapping[str, str]) -> list[CellRecord]:
    """A round's cells (every target, in the round's order) as one driver process; a record per side."""
    runs = [prepare_cell(e, cell, data[cell.target.name]) for cell in cells]
    job, env = slices_job(e, runs, libraries)
    first, k = runs[0], len(runs)
    servers = first.cell.target.is_server
    samplers = _start_samplers(e, runs)
    started = time.time()
    window = NoiseWindow(k * e.warmup_s, first.watched)
    proc = start_job(job, env, first.cpus, prefix=first.remedies.prefix)
    for sampler in samplers:
        sampler.client_pid = proc.pid
    outcome = collect_job(proc, job, SlicesResult, k * (e.time_s + e.warmup_s) + HANG_GRACE_S)
    noise = window.finish(outcome.result)
    process = f"{cells[0].benchmark.name}/t{cells[0].threads}/r{cells[0].repeat}"
    sides = outcome.result.sides if outcome.result else []
    error = outcome.error or (f"the driver reported {len(sides)} sides, not {k}" if len(sides) != k else None)
    shared = first.sampler.finish(outcome.result) if first.sampler and not servers else None
    records = []
    for i, run in enumerate(runs):
        side = sides[i] if len(sides) == k else None
        resources: Resources | None = shared
        if servers and run.sampler:
            resources = run.sampler.finish(outcome.result, queries=side.queries if side else 0)  # 0: none
        mine = DriverOutcome[RunResult](side is not None, side, error, outcome.stderr_tail)
        record = cell_record(run, data[run.cell.target.name], mine, noise, resources, started)
        library = libraries[run.cell.target.name]
        record.slices = SlicesSide(slice_s=e.slice_s, sides=k, position=i + 1, process=process,
                                   targets=[c.target.name for c in cells], pid=proc.pid,
                                   library=library if library != run.cell.target.library else None)
        records.append(record)
    return records
