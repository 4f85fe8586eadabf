"""A version or date series from the history store, laid out as BRIEF §1: one row per benchmark, one column per
version (or per run), rQPS against the first column, and a verdict per cell (Mann-Whitney U of the stored repeats
against the first column's). A series holds one comparable thing: one engine, build, config and host; results that
mix several are refused with the values found, so the user can choose one."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from dbperf.errors import UserError
from dbperf.history.changepoints import PVALUE, Step, steps
from dbperf.history.store import Result
from dbperf.report.verdict import Verdict, verdict_of
from dbperf.stats.summary import significance

BY = ("version", "run")


@dataclass(frozen=True)
class Column:
    label: str
    version: str
    run_id: int
    started_at: str | None
    target: str


@dataclass
class Point:
    result: Result
    rqps: float | None
    verdict: Verdict


@dataclass
class Row:
    benchmark: str
    threads: int
    points: list[Point | None]  # per column
    steps: list[Step] = field(default_factory=list)  # change points, their index a column index


@dataclass
class Series:
    by: str
    identity: dict[str, str]  # engine, build, config, host
    columns: list[Column]
    rows: list[Row]


def version_key(version: str) -> tuple:
    """3.9.2 < 3.10.0; text parts compare as text after numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.\-_+ ]", version) if p)


def _identity(results: Sequence[Result]) -> dict[str, str]:
    found: dict[str, set[str]] = {k: set() for k in ("engine", "build", "config", "host")}
    for r in results:
        found["engine"].add(r.engine)
        found["build"].add(r.build)
        found["config"].add(r.config)
        found["host"].add(r.host)
    mixed = {k: v for k, v in found.items() if len(v) > 1}
    if mixed:
        what = "; ".join(f"{len(v)} {k}s ({', '.join(repr(x) for x in sorted(v)[:4])})" for k, v in mixed.items())
        options = ", ".join(f"--{k}" for k in mixed)
        raise UserError(f"the selected results mix {what}: a series compares one of each; choose with {options}"
                        " (or --target)")
    return {k: next(iter(v)) for k, v in found.items()}


def build_series(results: Sequence[Result], by: str = "version", detect: bool = True,
                 pvalue: float = PVALUE) -> Series:
    if by not in BY:
        raise UserError(f"--by: expected one of {', '.join(BY)}, got {by!r}")
    if not results:
        raise UserError("no results in the history match (dbperf history list shows what is stored)")
    identity = _identity(results)
    chosen: dict[tuple[str, str, int], Result] = {}  # (column key, benchmark, threads); a later run wins
    columns: dict[str, Column] = {}
    for r in results:  # ordered by start time
        if by == "version":
            key, col = r.version, Column(r.version, r.version, r.run_id, r.started_at, r.target)
        else:
            key = f"{r.run_id}/{r.target}"
            col = Column(f"run {r.run_id} {r.target} ({r.version})", r.version, r.run_id, r.started_at, r.target)
        columns[key] = col
        chosen[(key, r.benchmark, r.threads)] = r
    keys = sorted(columns, key=lambda k: version_key(k)) if by == "version" else list(columns)
    rows: list[Row] = []
    for benchmark, threads in dict.fromkeys((b, t) for _, b, t in chosen):
        row = Row(benchmark, threads, [])
        first: Result | None = None
        for key in keys:
            here = chosen.get((key, benchmark, threads))
            if here is None or here.qps_center is None:
                row.points.append(None)
                continue
            if first is None:
                first = here
                row.points.append(Point(here, 1.0, verdict_of(1.0, None, True, False)))
                continue
            rqps = here.qps_center / first.qps_center if first.qps_center else None
            significant, _ = significance(here.qps_runs, first.qps_runs)
            row.points.append(Point(here, rqps, verdict_of(rqps, significant, False, False)))
        if detect:
            present = [(i, p.result.qps_center) for i, p in enumerate(row.points) if p and p.result.qps_center]
            row.steps = [Step(present[s.index][0], s.before, s.after, s.p_value)
                         for s in steps([v for _, v in present], pvalue)]
        rows.append(row)
    return Series(by, identity, [columns[k] for k in keys], rows)
