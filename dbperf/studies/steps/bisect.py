"""A bisect step: the first slower release of an engine between two versions (dbperf bisect), into
DIR/<step>/bisect.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from dbperf.buildlab.server_releases import SOURCES, available_versions
from dbperf.errors import UserError
from dbperf.experiment.durations import parse_duration
from dbperf.storage.bisect_path import PATH_FILE, StepSettings, read_path
from dbperf.studies.definition import Step, Study
from dbperf.studies.steps.base import INCOMPLETE, Checking, Over, StepEnd, StepKind, StepRun
from dbperf.usecases.bisect import earlier_steps
from dbperf.usecases.bisect_metrics import metric, run_bisect
from dbperf.usecases.bisect_settings import check_settings, parse_threshold, release_range
from dbperf.usecases.bisect_work import record_line


def _resumable(written: Path) -> bool:
    """Whether the bisect that wrote `written` was cut short: its search goes on from its decided steps."""
    try:
        path = read_path(written.parent)
    except UserError:
        return False  # not a bisect's path: the step runs again, from its start
    return path is not None and path.result.resumable


class BisectKind(StepKind):
    name = "bisect"
    keys = ("engine", "first", "last", "benchmark", "threshold", "time", "warmup", "budget", "tries", "threads",
            "table_size", "config", "metric", "order")
    smoke_limits: ClassVar[dict[str, float]] = {"table_size": 10_000, "time_s": 1.0, "warmup_s": 1.0,
                                                 "budget_s": 30.0, "bisect_tries": 1}

    def check(self, s: dict[str, Any], at: Checking) -> None:
        if s.get("engine") not in SOURCES:
            raise UserError(f"{at.where}: engine must be one of {', '.join(sorted(SOURCES))}")
        if s.get("benchmark") not in at.catalog:
            raise UserError(f"{at.where}: benchmark {s.get('benchmark')!r} is not in the catalog")
        try:
            metric(str(s["metric"]) if "metric" in s else None)
        except UserError as e:
            raise UserError(f"{at.where}: {e}") from None
        for key in ("time", "warmup", "budget"):
            if key in s:
                parse_duration(s[key], f"{at.where} {key}")

    def smoke(self, s: dict[str, Any], over: Over, where: str) -> None:
        over(int(s.get("table_size", 100_000)), "table_size", "rows")
        over(parse_duration(s.get("time", "5s"), f"{where} time"), "time_s", "seconds a cell")
        over(parse_duration(s.get("warmup", "1s"), f"{where} warmup"), "warmup_s", "seconds of warm-up")
        over(parse_duration(s.get("budget", "2m"), f"{where} budget"), "budget_s", "seconds of budget")
        over(int(s.get("tries", 3)), "bisect_tries", "tries")

    def own_file(self, directory: Path, step: str) -> Path:
        return directory / step / PATH_FILE

    def kept_before(self, study: Study, step: Step, directory: Path, extend: bool) -> str | None:
        if _resumable(self.own_file(directory, step.name)):
            return None  # cut short: its search goes on
        return super().kept_before(study, step, directory, extend)

    def goes_on(self, run: StepRun) -> bool:
        return _resumable(self.own_file(run.directory, run.name))

    def run(self, run: StepRun) -> StepEnd:
        s = run.settings
        chosen = metric(str(s["metric"]) if "metric" in s else None)
        settings = StepSettings(s["engine"], s["benchmark"], parse_threshold(str(s.get("threshold", chosen.threshold))),
                                parse_duration(s.get("time", "5s"), "time", positive=True),
                                parse_duration(s.get("warmup", "1s"), "warmup"),
                                parse_duration(s.get("budget", "2m"), "budget", positive=True),
                                int(s.get("threads", 1)), int(s.get("table_size", 100_000)),
                                {str(k): str(v) for k, v in s.get("config", {}).items()}, chosen,
                                str(s["order"]) if "order" in s else None)
        check_settings(settings)
        versions = release_range(settings.engine, str(s["first"]), str(s["last"]),
                                 available_versions(settings.engine))
        out = run.directory / run.name
        earlier = earlier_steps(out, settings, versions) if run.resume and (out / PATH_FILE).is_file() else []
        result = run_bisect(settings, versions, out, int(s.get("tries", 3)), run.yes, run.err, earlier)
        if result.outcome == "interrupted":
            return StepEnd(f"interrupted: bisect stopped after {len(result.steps)} step(s)", result.exit_code)
        if settings.metric.work:  # decided on counts of work: its record's line says the step and its lead
            return StepEnd(record_line(result, settings), INCOMPLETE if result.outcome == "failed" else 0)
        found = (f"first slower {result.first_slower}, last not slower {result.last_not_slower}"
                 if result.outcome == "found" else result.outcome)
        # A bisect that finds nothing slower or stays undecided has measured what it says: not a failed step.
        return StepEnd(f"bisect {versions[0]}..{versions[-1]} ({len(versions)} releases), {len(result.steps)} "
                       f"step(s): {found}", INCOMPLETE if result.outcome == "failed" else 0)


KIND = BisectKind()
