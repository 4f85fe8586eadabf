"""A version or date series from the history store, laid out as [Callaghan 2024-10-23]'s rQPS tables: one row per
benchmark, one column per version (or per run), rQPS against the first column, and a verdict per cell (Mann-Whitney U of
the stored repeats against the first column's). A series holds one comparable thing: one engine, build, config and host;
results that mix several are refused with the values found, so the user can choose one."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from dbperf.errors import UserError
from dbperf.history.changepoints import PVALUE, Step, steps
from dbperf.history.store import Result
from dbperf.metrics import SIMULATED, WALL, Metric
from dbperf.stats.cell_verdict import Verdict, verdict_of
from dbperf.stats.contradiction import Contradiction, RunCall, contradictions
from dbperf.stats.simulated import SAME_WITHIN, simulated_verdict
from dbperf.stats.summary import ALPHA, MIN_REPEATS_FOR_TEST, significance

BY = ("version", "run")
# What a series is of (dbperf/metrics/, those with `series`): the wall clock's QPS (rQPS against the first column,
# Mann-Whitney of the repeats), or the simulated tier's work per query (instructions per query against the first
# column: deterministic, no test).
SIMULATED_RULE = f"simulated: deterministic counts, a change of {SAME_WITHIN:.1%} or more is more or fewer"


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
    work: float | None = None  # metric simulated: instructions per query / the first column's


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
    metric: Metric = WALL
    # cells of one version that two stored runs each decided against their own base (of one name), one way in
    # one run and the other way in another (stats/contradiction.py)
    contradictions: list[Contradiction] = field(default_factory=list)


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


def significance_many(base: list[float], samples: list[list[float]]) -> list[tuple[bool | None, float | None]]:
    """summary.significance(sample, base) for many samples at once: the same rules and p-values (Mann-Whitney U,
    two-sided; scipy's choice of exact or asymptotic), but one vectorized call per sample size for the samples
    without ties, since a long series makes thousands of these tests."""
    import numpy as np
    from scipy import stats as scipy_stats

    out: list[tuple[bool | None, float | None]] = [(None, None)] * len(samples)
    groups: dict[int, list[int]] = {}
    for i, sample in enumerate(samples):
        distinct = len(set(sample) | set(base))
        untestable = len(sample) < MIN_REPEATS_FOR_TEST or len(base) < MIN_REPEATS_FOR_TEST
        if untestable or distinct < len(sample) + len(base):  # too few, or ties: scipy's own path, one at a time
            out[i] = significance(sample, base)
        else:
            groups.setdefault(len(sample), []).append(i)
    for n, members in groups.items():
        method = "asymptotic" if n > 8 and len(base) > 8 else "exact"
        p = scipy_stats.mannwhitneyu(np.array([samples[i] for i in members]), np.array(base)[None, :], axis=1,
                                     alternative="two-sided", method=method).pvalue
        for i, value in zip(members, np.atleast_1d(p), strict=True):
            out[i] = (bool(value < ALPHA), float(value))
    return out


def _columns(results: Sequence[Result], by: str) -> tuple[dict[tuple[str, str, int], Result], dict[str, Column]]:
    """The result kept per (column key, benchmark, threads), a later run winning, and the columns by key."""
    chosen: dict[tuple[str, str, int], Result] = {}
    columns: dict[str, Column] = {}
    for r in results:  # ordered by start time
        if by == "version":
            key, col = r.version, Column(r.version, r.version, r.run_id, r.started_at, r.target)
        else:
            key = f"{r.run_id}/{r.target}"
            col = Column(f"run {r.run_id} {r.target} ({r.version})", r.version, r.run_id, r.started_at, r.target)
        columns[key] = col
        chosen[(key, r.benchmark, r.threads)] = r
    return chosen, columns


def _row(benchmark: str, threads: int, found: list[Result | None], detect: bool, pvalue: float) -> Row:
    """One benchmark's row: each column's rQPS and verdict against the first column with a figure."""
    row = Row(benchmark, threads, [])
    present = [r for r in found if r is not None and r.qps_center is not None]
    first = present[0] if present else None
    tests = iter(significance_many(first.qps_runs, [r.qps_runs for r in present[1:]]) if first else [])
    for here in found:
        if here is None or here.qps_center is None or first is None:
            row.points.append(None)
        elif here is first:
            row.points.append(Point(here, 1.0, verdict_of(1.0, None, True, False)))
        else:
            rqps = here.qps_center / first.qps_center if first.qps_center else None
            significant, _ = next(tests)
            row.points.append(Point(here, rqps, verdict_of(rqps, significant, False, False)))
    _detect(row, WALL, detect, pvalue)
    return row


def _work_row(benchmark: str, threads: int, found: list[Result | None], detect: bool, pvalue: float,
              metric: Metric = SIMULATED) -> Row:
    """One benchmark's row of work: each column's count per query against the first column's that has it, with
    the simulated tier's words (more, fewer, same); a column whose run did not count it is empty."""
    row = Row(benchmark, threads, [])
    reference = next((r for r in found if r is not None and metric.stored(r)), None)
    first = metric.stored(reference) if reference is not None else None
    for here in found:
        value = metric.stored(here) if here is not None else None
        if here is None or value is None or first is None:
            row.points.append(None)
            continue
        work = value / first
        verdict = (Verdict("base", "the first column with simulated counts") if here is reference
                   else Verdict(simulated_verdict(work - 1), SIMULATED_RULE))
        row.points.append(Point(here, None, verdict, work))
    _detect(row, metric, detect, pvalue)
    return row


def _detect(row: Row, metric: Metric, detect: bool, pvalue: float) -> None:
    """The row's change points over its figures (the columns without one left out)."""
    if not detect:
        return
    values = [(i, v) for i, p in enumerate(row.points) if p and (v := metric.stored(p.result))]
    row.steps = [Step(values[s.index][0], s.before, s.after, s.p_value)
                 for s in steps([v for _, v in values], pvalue)]


def build_series(results: Sequence[Result], by: str = "version", detect: bool = True,
                 pvalue: float = PVALUE, metric: Metric = WALL) -> Series:
    if by not in BY:
        raise UserError(f"--by: expected one of {', '.join(BY)}, got {by!r}")
    if not results:
        raise UserError("no results in the history match (dbperf history list shows what is stored)")
    if metric.work and not any(metric.stored(r) for r in results):
        raise UserError(f"--metric {metric.name}: none of the matching stored runs counted {metric.label} (run the "
                        "versions with `simulated = true` in [run], then `dbperf history add` if not recorded)")
    identity = _identity(results)
    chosen, columns = _columns(results, by)
    keys = sorted(columns, key=lambda k: version_key(k)) if by == "version" else list(columns)
    rows = []
    for benchmark, threads in dict.fromkeys((b, t) for _, b, t in chosen):
        found = [chosen.get((key, benchmark, threads)) for key in keys]
        rows.append(_work_row(benchmark, threads, found, detect, pvalue, metric) if metric.work
                    else _row(benchmark, threads, found, detect, pvalue))
    return Series(by, identity, [columns[k] for k in keys], rows, metric, run_contradictions(results))


def run_contradictions(results: Sequence[Result]) -> list[Contradiction]:
    """The stored runs' own verdicts (each against its run's base) of one version, benchmark and threads that
    contradict: the series' identity (engine, build, config, host) is one, the base's name the same."""
    runs: dict[int, list[tuple[tuple[str, str, int], RunCall]]] = {}
    for r in results:
        if r.verdict is None or r.base is None or r.target == r.base:
            continue
        key = (f"{r.version} against {r.base}", r.benchmark, r.threads)
        runs.setdefault(r.run_id, []).append((key, RunCall(f"run {r.run_id} ({r.target})", r.verdict, r.rqps)))
    return contradictions(list(runs.values()))
