"""`dbperf explain DIR` and a run's `explain = "disagreements"`: each cell of a run whose measured and simulated tiers
disagree (stats/tiers.py), or the one named with --cell, gets the per-function diff of every simulated counter of
the base and that target on that benchmark (explain/diff.py counters_diff), and its leads (explain/leads.py); where
this host has a PMU, the hardware tier's figures of the same two targets too. The targets are the run's: built from
its experiment file, cached builds reused; the counts are checked against the run's own simulated figures. The
explanation is written into DIR as explain.json and returned as a View (report/explain_view.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from dbperf.catalog.workload import Workload
from dbperf.errors import UserError
from dbperf.experiment.aa import with_aa
from dbperf.experiment.model import Experiment, Target
from dbperf.experiment.spec import parse_experiment
from dbperf.explain.diff import counters_diff
from dbperf.explain.explanation import CellExplanation, Explanation
from dbperf.explain.leads import ASSUMED, StallCosts, calibrated_costs, find_leads
from dbperf.explain.mode import CounterMode, detect_mode
from dbperf.explain.profile import Profiler
from dbperf.records import Profile, SimulatedRecord
from dbperf.report import formats
from dbperf.report.explain_view import TOP, explain_view
from dbperf.report.model import View
from dbperf.run_meta import RunMeta
from dbperf.runner import interrupts
from dbperf.runner.simulated_tier import queries_for
from dbperf.stats.rqps_matrix import Cell, Matrix, build_matrix
from dbperf.storage.results import EXPERIMENT, ResultsWriteError, read_results, write_whole
from dbperf.usecases.explain import benchmark, profiling, target
from dbperf.usecases.progress import PROGRESS, say

EXPLANATION = "explain.json"  # written into the run's directory
# The run's simulated figures and the ones measured now agree to far more than this when the builds and data are the
# run's (the counts are deterministic: tests/test_simulated_tier.py).
SAME_COUNTS = 1e-3


@dataclass(frozen=True)
class Chosen:
    """A (target, benchmark) of the run to explain, and its cells' agreement."""
    target: str
    benchmark: str
    threads: tuple[int, ...]
    tiers: str | None
    why: str
    measured: str | None
    asked: bool


def chosen_cells(matrix: Matrix, cell: str | None, directory: Path) -> list[Chosen]:
    """The disagreeing cells, one per (target, benchmark) (the simulated profile is one thread's), in the report's
    order; or the cell `cell` (TARGET:BENCHMARK) names, whatever its agreement."""
    if cell is not None:
        return [_named(matrix, cell, directory)]
    chosen: list[Chosen] = []
    for b in matrix.benchmarks:
        for t in matrix.targets:
            cells = [c for th in matrix.threads if (c := matrix.cells.get((t, b, th))) is not None
                     and c.tiers is not None and c.tiers.tiers == "disagree"]
            if cells:
                first = cells[0]
                assert first.tiers is not None
                measured = first.deciding_verdict
                chosen.append(Chosen(t, b, tuple(c.threads for c in cells), "disagree", first.tiers.why,
                                     measured.verdict if measured else None, False))
    return chosen


def _named_cells(matrix: Matrix, cell: str, directory: Path) -> tuple[str, str, list[Cell]]:
    """The target, the benchmark and the cells (one per thread count) that `--cell TARGET:BENCHMARK` names."""
    name, sep, bench = cell.partition(":")
    if not sep or not name or not bench:
        raise UserError(f"--cell: expected TARGET:BENCHMARK, got {cell!r}")
    cells = [c for th in matrix.threads if (c := matrix.cells.get((name, bench, th))) is not None]
    if not cells:
        known = ", ".join(f"{t}:{b}" for b in matrix.benchmarks for t in matrix.targets if t != matrix.base)
        raise UserError(f"--cell {cell}: no such cell in {directory} (its cells: {known})")
    if name == matrix.base:
        raise UserError(f"--cell {cell}: {name} is the base every cell is compared with; name another target")
    return name, bench, cells


def _named(matrix: Matrix, cell: str, directory: Path) -> Chosen:
    name, bench, cells = _named_cells(matrix, cell, directory)
    first = next((c for c in cells if c.tiers is not None), cells[0])
    if first.sim is None or first.sim.verdict == "missing":
        raise UserError(f"--cell {cell}: the run has no simulated figure for it"
                        + (f" ({first.sim.error})" if first.sim is not None and first.sim.error else ""))
    measured = first.deciding_verdict
    return Chosen(name, bench, tuple(c.threads for c in cells), first.tiers.tiers if first.tiers else None,
                  first.tiers.why if first.tiers else "no agreement was recorded for it",
                  measured.verdict if measured else None, True)


def run_experiment_file(directory: Path, meta: RunMeta) -> Path:
    """The experiment file to build the run's targets from: the one the run was started with, where it is still
    there unchanged (its relative paths resolve as they did), else the run's copy in the directory."""
    kept = directory / EXPERIMENT
    try:
        text = kept.read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"{kept}: cannot read: {e.strerror} (explain builds the run's targets from it)") from None
    original = Path(meta.experiment) if meta.experiment else None
    try:
        if original is not None and original.is_file() and original.read_text(encoding="utf-8") == text:
            return original
    except (OSError, UnicodeDecodeError):
        pass
    return kept


def run_spec(directory: Path, meta: RunMeta, names: set[str]) -> Experiment:
    """The run's experiment (with its A/A copy when it had one), only the targets named."""
    spec = parse_experiment(run_experiment_file(directory, meta))
    if meta.aa_target and spec.aa_target is None:
        spec = with_aa(spec)
    if [t.name for t in spec.targets] != meta.target_names:
        raise UserError(f"{directory}: its experiment file declares targets {', '.join(t.name for t in spec.targets)}"
                        f", the run measured {', '.join(meta.target_names)}")
    return replace(spec, targets=tuple(t for t in spec.targets if t.name in names))


def explain_run(directory: Path, cell: str | None = None, err: Console = PROGRESS) -> Explanation:
    """The explanation of the run in `directory` (see the module's docstring). A directory that is not a run, a run
    without the simulated tier and an unknown cell are a UserError before anything is built."""
    meta, records, _ = read_results(directory)
    if meta.replication is not None or meta.fleet is not None:
        raise UserError(f"{directory}: a {'replication lab' if meta.replication else 'fleet'} run; explain reads a "
                        "matrix run of one host")
    if not any(isinstance(r, SimulatedRecord) for r in records):
        raise UserError(f"{directory}: the run has no simulated tier (`simulated = true` under [run], or `dbperf run "
                        "--simulated`): explain compares its counters")
    matrix = build_matrix(meta, records)
    chosen = chosen_cells(matrix, cell, directory)
    costs: StallCosts = (calibrated_costs(matrix.cost_model.weights_ns) if matrix.cost_model else None) or ASSUMED
    host = detect_mode()
    experiment = run_experiment_file(directory, meta)
    if not chosen:
        return Explanation(str(directory), str(experiment), matrix.base, host, costs,
                           nothing=f"{directory}: no cell where the measured and simulated tiers disagree: nothing to "
                                   "explain (--cell TARGET:BENCHMARK explains one anyway)")
    spec = run_spec(directory, meta, {matrix.base, *(c.target for c in chosen)})
    simulated = {(r.target, r.benchmark): r for r in records if isinstance(r, SimulatedRecord)}
    say(f"dbperf: explain: {len(chosen)} cell(s) of {directory}: the per-function diff of every simulated counter "
        "under cachegrind" + (", and the hardware tier's" if host.mode == "hardware" else ""), err)
    cells = []
    with profiling(spec, err) as (exp, infos, work):
        # The run's query count per benchmark (runner/simulated_tier.py), so that the counts can be checked against
        # its figures; every function kept, so that their changes add up to the cell's.
        profiles = Profiles(Profiler(exp, work, queries=queries_for(exp.table_size), mode=host,
                                     native_timing=False, keep_functions=None))
        try:
            base = target(exp, matrix.base)
            for c in chosen:
                bench = benchmark_of(exp, c.benchmark)
                notes = [*_build_notes(meta, infos, (base.name, c.target)),
                         *_count_notes(simulated, base.name, c.target, c.benchmark)]
                cells.append(_explain_cell(profiles, host, base, target(exp, c.target), bench, c, costs, notes,
                                           simulated))
        finally:
            profiles.profiler.close()
    return Explanation(str(directory), str(experiment), matrix.base, host, costs, cells)


def benchmark_of(exp: Experiment, name: str) -> Workload:
    """The run's benchmark by the name its results carry (a workload file's too), else as the catalog resolves it."""
    return next((b for b in exp.benchmarks if b.name == name), None) or benchmark(exp, name)


@dataclass
class Profiles:
    """Each (target, benchmark, mode) profiled once: the base's serves every cell of its benchmark."""
    profiler: Profiler
    done: dict[tuple[str, str, str], Profile] = field(default_factory=dict)

    def of(self, t: Target, bench: Workload, mode: str) -> Profile:
        key = (t.name, bench.name, mode)
        if key not in self.done:
            self.done[key] = self.profiler.profile(t, bench, mode=mode)
        return self.done[key]


def _explain_cell(profiles: Profiles, host: CounterMode, base: Target, other: Target, bench: Workload, c: Chosen,
                  costs: StallCosts, notes: list[str],
                  simulated: dict[tuple[str, str], SimulatedRecord]) -> CellExplanation:
    a, b = profiles.of(base, bench, "simulated"), profiles.of(other, bench, "simulated")
    notes += [note for p in (a, b) if (note := _differs(p, simulated.get((p.target, p.benchmark)))) is not None]
    functions, counters = counters_diff(a, b)
    leads = find_leads(functions, a.per_query, b.per_query, costs, c.measured)
    hardware: tuple[Profile, Profile] | None = None
    error = None
    if host.mode == "hardware":
        try:
            hardware = (profiles.of(base, bench, "hardware"), profiles.of(other, bench, "hardware"))
        except (UserError, OSError, ValueError) as e:  # the simulated explanation stands without it
            error = str(e)
    return CellExplanation(c.target, c.benchmark, c.threads, c.tiers, c.why, c.measured, c.asked, a, b, functions,
                           counters, leads, tuple(notes), hardware, error)


def _build_notes(meta: RunMeta, infos: dict[str, dict[str, object]], names: tuple[str, str]) -> list[str]:
    notes = []
    for name in names:
        ran = meta.target(name)
        now = infos.get(name, {}).get("library_sha256")
        if ran is not None and ran.library_sha256 and now and now != ran.library_sha256:
            notes.append(f"{name}: its library is not the one the run measured (sha256 {str(now)[:12]} now, "
                         f"{ran.library_sha256[:12]} in the run): the explanation is of the library there now")
    return notes


def _count_notes(simulated: dict[tuple[str, str], SimulatedRecord], base: str, other: str,
                 bench: str) -> list[str]:
    return [f"{name}: the run has no simulated figure for {bench}; nothing to check these counts against"
            for name in (base, other) if (name, bench) not in simulated or simulated[(name, bench)].error]


def _differs(profile: Profile, record: SimulatedRecord | None) -> str | None:
    """A note when the instructions per query measured now are not the run's (a build or data that changed)."""
    if record is None or record.error or not record.instructions:
        return None
    now = profile.per_query.get("instructions", 0.0)
    if abs(now / record.instructions - 1) <= SAME_COUNTS:
        return None
    return (f"{profile.target}: {now:,.1f} simulated instructions per query now, {record.instructions:,.1f} in the "
            f"run ({now / record.instructions - 1:+.2%}): the leads are of the counts measured now")


def write_explanation(directory: Path, view: View, err: Console = PROGRESS) -> Path:
    """DIR/explain.json, written whole then moved into place (a reader never sees half of it), keeping the cells an
    earlier `dbperf explain` explained that this one did not (a `--cell` explanation is minutes of simulation; a later
    "nothing to explain" must not lose it). A damaged file is set aside, said, never silently replaced."""
    path = directory / EXPLANATION
    write_whole(path, formats.render(_with_earlier_cells(path, view, err), "json").encode("utf-8"))
    return path


def _cell_key(doc: dict) -> tuple[object, object, object]:
    return doc.get("target"), doc.get("benchmark"), str(doc.get("threads"))


def _with_earlier_cells(path: Path, view: View, err: Console) -> View:
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return view
    except (OSError, ValueError) as e:
        earlier = f"unreadable ({e})"
    if not (isinstance(earlier, dict) and isinstance(earlier.get("cells"), list)
            and earlier.get("explain") == view.document.get("explain")):
        aside = path.with_name(f"{EXPLANATION}.damaged-{datetime.now(UTC):%Y%m%dT%H%M%S}")
        try:
            path.rename(aside)
        except OSError as e:
            raise UserError(f"{path}: damaged, and it cannot be set aside: {e.strerror or e}") from None
        say(f"dbperf: warning: {path} was not an explanation this dbperf reads "
            f"({earlier if isinstance(earlier, str) else 'another format'}); set aside as {aside.name}", err)
        return view
    now = {_cell_key(c) for c in view.document["cells"]}
    kept = [c for c in earlier["cells"] if isinstance(c, dict) and _cell_key(c) not in now]
    if not kept:
        return view
    return replace(view, document={**view.document, "cells": [*view.document["cells"], *kept],
                                   "kept_from_earlier": len(kept)})


def explain_directory(directory: Path, cell: str | None = None, top: int = TOP, err: Console = PROGRESS) -> View:
    """`dbperf explain DIR`: the explanation as a View, also written into DIR as explain.json."""
    return _explained(directory, cell, top, err)[0]


def _explained(directory: Path, cell: str | None, top: int, err: Console) -> tuple[View, Path | None]:
    """The view and where it was kept (None: DIR could not be written; said as a warning, the view still shown)."""
    if top < 1:
        raise UserError("--top: must be at least 1")
    view = explain_view(explain_run(directory, cell, err), top)
    try:
        return view, write_explanation(directory, view, err)
    except ResultsWriteError as e:
        say(f"dbperf: warning: {e}: the explanation is not kept in {directory}", err)
        return view, None


def explain_after_run(directory: Path, err: Console = PROGRESS) -> int | None:
    """`explain = "disagreements"`: the run in `directory` ended complete; its disagreements explained, the leads on
    stderr. Whatever happens here, the run stays as it is: a failure is one warning; an interrupt is said and its exit
    code returned (None otherwise)."""
    try:
        view, written = _explained(directory, None, TOP, err)
    except (UserError, OSError, ValueError) as e:  # a profile that failed: the run is complete all the same
        say(f"dbperf: warning: explain = \"disagreements\": {e}", err)
        return None
    except KeyboardInterrupt as interrupt:
        say(f"dbperf: explain interrupted ({interrupts.reason(interrupt)}); the run is complete in {directory}", err)
        return interrupts.exit_code(interrupt)
    if not view.sections:  # nothing to explain: one line
        say(f"dbperf: explain: {view.title}", err)
        return None
    formats.draw(view, err)
    if written is not None:
        say(f"dbperf: explain: written to {written}", err)
    return None
