"""Counters per query: one target's profile, every target's on one benchmark, the per-function difference of two
targets, and the instruction gate (every target's simulated instructions per query against the base's)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from dbperf.catalog.registry import resolve
from dbperf.catalog.workload import Workload
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.experiment.spec import parse_experiment
from dbperf.explain.diff import FunctionDelta, profile_diff
from dbperf.explain.mode import CounterMode, detect_mode
from dbperf.explain.profile import Profiler
from dbperf.records import Profile
from dbperf.runner.targets import build_targets, inspect_targets
from dbperf.usecases.progress import PROGRESS

MODES = ("auto", "simulated", "hardware")


@contextmanager
def profiler(experiment: Path, mode: str, queries: int | Callable[[Workload], int],
             err: Console = PROGRESS) -> Iterator[tuple[Experiment, Profiler]]:
    """The experiment's targets built and a profiler on them in the counters mode asked for (said on stderr); the
    profiler and its work directory go on the way out."""
    if mode not in MODES:
        raise UserError(f"--mode: expected one of {', '.join(MODES)}, got {mode!r}")
    if isinstance(queries, int) and queries < 1:
        raise UserError("--queries: must be at least 1")
    with profiling(parse_experiment(experiment), err) as (exp, _, work):
        detected = detect_mode()
        if mode == "hardware" and detected.mode != "hardware":
            raise UserError(f"hardware counters asked for, but {detected.reason}")
        chosen = detected if mode == "auto" else CounterMode(mode, detected.reason if mode == detected.mode
                                                              else f"asked for {mode} counters")
        err.print(f"dbperf: counters mode {chosen.mode}: {chosen.reason}", highlight=False)
        p = Profiler(exp, work, queries=queries, mode=chosen)
        try:
            yield exp, p
        finally:
            p.close()


@contextmanager
def profiling(spec: Experiment, err: Console = PROGRESS) -> Iterator[tuple[Experiment, dict[str, dict[str, Any]],
                                                                          Path]]:
    """The experiment's targets built (cached builds reused) and inspected (their engine version and library
    sha256, runner/targets.py inspect_targets), and a work directory for profiles, removed on the way out."""
    exp, _ = build_targets(spec, err)
    infos = inspect_targets(exp)
    work = Path(tempfile.mkdtemp(prefix="dbperf-profile-"))
    try:
        yield exp, infos, work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def target(exp: Experiment, name: str) -> Target:
    for t in exp.targets:
        if t.name == name:
            return t
    raise UserError(f"{exp.path}: no target {name!r} (targets: {', '.join(t.name for t in exp.targets)})")


def benchmark(exp: Experiment, name: str) -> Workload:
    (w,) = resolve([name], exp.path.parent, "--benchmark")
    return w


def profile_one(experiment: Path, target_name: str, benchmark_name: str, queries: int, mode: str) -> Profile:
    with profiler(experiment, mode, queries) as (exp, p):
        return p.profile(target(exp, target_name), benchmark(exp, benchmark_name))


def profile_targets(experiment: Path, benchmark_name: str, queries: int, mode: str,
                    err: Console = PROGRESS) -> tuple[str, list[Profile]]:
    """Every target of the experiment on one benchmark, the base first: (the base's name, their profiles)."""
    with profiler(experiment, mode, queries, err) as (exp, p):
        bench = benchmark(exp, benchmark_name)
        ordered = [target(exp, exp.base), *(t for t in exp.targets if t.name != exp.base)]
        return exp.base, [p.profile(t, bench) for t in ordered]


def i1_counts(profile: Profile) -> tuple[float | None, float | None, float | None]:
    """(instructions, I1 misses, I1 misses as % of instructions) per query, whichever counters measured them:
    cachegrind's I1 misses simulated, or perf's L1-icache-load-misses (None where this PMU does not count it)."""
    q = profile.per_query
    if profile.mode == "simulated":
        return q.get("instructions"), q.get("i1_misses"), q.get("i1_miss_pct_of_instructions")
    return q.get("instructions"), q.get("L1_icache_load_misses"), q.get("l1i_miss_pct_of_instructions")


@dataclass
class Diff:
    metric: str
    rows: list[FunctionDelta]
    total_a: float
    total_b: float
    mode: str


def diff_targets(experiment: Path, a: str, b: str, benchmark_name: str, queries: int | Callable[[Workload], int],
                 mode: str) -> Diff:
    """B minus A per function and per query, largest changes first; `queries`: per profile, or a function of the
    benchmark."""
    with profiler(experiment, mode, queries) as (exp, p):
        bench = benchmark(exp, benchmark_name)
        pa, pb = p.profile(target(exp, a), bench), p.profile(target(exp, b), bench)
    return Diff(*profile_diff(pa, pb), pa.mode)


@dataclass
class GateRow:
    benchmark: str  # "" on the rows after a benchmark's base row
    target: str
    instructions: float  # simulated instructions per query
    change: float | None  # over the base; None on the base's row
    regression: bool


@dataclass
class Gate:
    threshold: float
    base: str
    rows: list[GateRow]
    failures: list[str]  # "TARGET/BENCHMARK +N%", empty when the gate passes


def parse_threshold(max_regression: str) -> float:
    text = max_regression.strip().removesuffix("%")
    try:
        return float(text) / 100
    except ValueError:
        raise UserError(f"--max-regression: expected a percentage such as 1%, got {max_regression!r}") from None


def instruction_gate(experiment: Path, max_regression: str, queries: int) -> Gate:
    """Every target against the base on every benchmark: a regression is growth over the threshold."""
    threshold = parse_threshold(max_regression)
    with profiler(experiment, "simulated", queries) as (exp, p):
        base = target(exp, exp.base)
        gate = Gate(threshold, base.name, [], [])
        for bench in exp.benchmarks:
            base_ir = p.profile(base, bench).per_query["instructions"]
            gate.rows.append(GateRow(bench.name, base.name, base_ir, None, False))
            for t in exp.targets:
                if t.name == base.name:
                    continue
                ir = p.profile(t, bench).per_query["instructions"]
                change = ir / base_ir - 1
                bad = change > threshold
                if bad:
                    gate.failures.append(f"{t.name}/{bench.name} {change:+.2%}")
                gate.rows.append(GateRow("", t.name, ir, change, bad))
    return gate
