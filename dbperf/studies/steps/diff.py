"""A diff step: the simulated per-function diff (dbperf diff) of the worst cell of one or more earlier experiment
steps, its base against that target, into DIR/<step>.json."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.output_file import write_file
from dbperf.run_meta import HostMeta
from dbperf.runner.simulated_tier import queries_for
from dbperf.storage.results import META, read_meta
from dbperf.studies.figures import NotMeasured, Provenance, Reader
from dbperf.studies.steps.base import Checking, Over, StepEnd, StepKind, StepRun, check_of, of_steps
from dbperf.studies.study_record import recorded, recorded_results, shown_path
from dbperf.usecases.explain import diff_targets


class DiffKind(StepKind):
    name = "diff"
    keys = ("of", "queries", "top", "mode")
    smoke_limits: ClassVar[dict[str, float]] = {"diff_queries": 1_000}

    def check(self, s: dict[str, Any], at: Checking) -> None:
        check_of(s, at, many=True)
        if not isinstance(s.get("queries", 1), int) or s.get("queries", 1) < 1:
            raise UserError(f"{at.where}: queries must be a whole number of at least 1")

    def smoke(self, s: dict[str, Any], over: Over, where: str) -> None:
        over(int(s.get("queries", 20_000)), "diff_queries", "queries")

    def run(self, run: StepRun) -> StepEnd:
        """The worst cell of the experiment steps in `of` (lowest rQPS against its base, decided slower first; of
        those that ran, a --quick run leaving some out): per-function cost per query of that target minus the base's
        on that benchmark (dbperf diff), the largest changes first, as DIR/<step>.json."""
        name, s, directory = run.name, run.settings, run.directory
        kept = _kept_on_record(run, of_steps(s))
        looked, of, (base, target, benchmark, rqps, verdict) = _worst(Reader(run.study, directory, kept), run,
                                                                       of_steps(s))
        top = int(s.get("top", 25))
        experiment = kept[of] / "experiment.toml" if of in kept else directory / f"{of}.toml"
        # `queries` of a point query, fewer of a benchmark reading more rows (the same rows): the worst cell may be a
        # full scan, whose 20,000 queries would read 2 billion rows under valgrind
        per_point = int(s.get("queries", 20_000))
        queries = queries_for(parse_experiment(experiment).table_size, row_budget=per_point, most=per_point)
        d = diff_targets(experiment, base, target, benchmark, queries, str(s.get("mode", "simulated")))
        source = _source(kept.get(of))
        # the cell's rQPS and verdict are the run's that measured it: a figure of them names that run (measured_by)
        cell_run = (asdict(Provenance.of_results(read_meta(kept[of]), shown_path(kept[of]))) if of in kept
                    else None)
        doc = {"of": of, "looked_at": looked, "cell_from": source, "cell_run": cell_run, "base": base,
               "target": target,
               "benchmark": benchmark, "rqps": rqps, "verdict": verdict, "metric": d.metric, "mode": d.mode,
               "total_base": d.total_a, "total_target": d.total_b,
               "functions": [{"function": r.function, "base": r.a, "target": r.b, "delta": r.delta}
                             for r in d.rows[:top]]}
        write_file(directory / f"{name}.json", json.dumps(doc, indent=2) + "\n", force=False, option="--out")
        return StepEnd(f"{d.mode} per-function diff of the worst cell, {target} against {base} on {benchmark} (rQPS "
                       f"{rqps:.2f}, {verdict or 'no verdict'}; the worst of {', '.join(looked)}"
                       f"{'' if source is None else '; that cell from ' + source}), in {name}.json")


def _kept_on_record(run: StepRun, steps: list[str]) -> dict[str, Path]:
    """The steps of `of` this run did not measure (left out with --step) whose results are kept beside the study's
    record: the diff reads their cells there, so that a diff can be measured again in a sitting of its own."""
    record = recorded(run.study.name)
    if record is None:
        return {}
    on_record = recorded_results(record)
    return {step: on_record[step] for step in steps
            if step in on_record and not (run.directory / step / META).is_file()}


def _source(kept: Path | None) -> str | None:
    """Where the worst cell was measured when it was read from the record's kept results: that run's folder, start
    and CPU (its rQPS and verdict are that run's, not this one's)."""
    if kept is None:
        return None
    meta = read_meta(kept)
    host = meta.host or HostMeta()
    return (f"{shown_path(kept)} (the results kept on record: run of {meta.started_at or '?'}, "
            f"{host.cpu_model or '?'}, {host.cpu_id or '?'})")


def _worst(reader: Reader, run: StepRun, steps: list[str]) -> tuple[list[str], str,
                                                                   tuple[str, str, str, float, str | None]]:
    """The steps with results, and of them the one whose worst cell is worst, with that cell: decided slower before
    undecided, then the lowest rQPS."""
    found, why = [], []
    for step in steps:
        if run.study.step(step).skipped(run.mode):
            continue
        try:
            targets = run.study.step(step).effective(run.mode).get("targets")
            found.append((step, reader.worst_cell(step, list(targets) if isinstance(targets, list) else None)))
        except NotMeasured as e:
            why.append(str(e))
    if not found:
        raise UserError(f"nothing to diff: {'; '.join(why) or 'no step of ' + ', '.join(steps) + ' ran'}")
    step, cell = min(found, key=lambda f: (f[1][4] != "slower", f[1][3]))
    return [f[0] for f in found], step, cell


KIND = DiffKind()
