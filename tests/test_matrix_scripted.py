"""MatrixRun (runner/matrix.py) carried out in-process with a scripted Order, as hyperfine tests its scheduler with a
MockExecutor: each cell's throughput comes from a script and a fake clock moves by the cell's warm-up, time and an
overhead, so that no process runs and `repeats = "auto"`'s stopping and the pilot rounds of `time = "auto"` are
tested on figures known in advance. Nothing here is a measurement."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from dbperf.catalog.workload import Workload
from dbperf.experiment.model import Experiment
from dbperf.experiment.spec import parse_experiment
from dbperf.records import CellRecord, Interval, Latency, RunResult, Usage
from dbperf.runner.cell_plan import CellPlan
from dbperf.runner.lab_run import LabRun
from dbperf.runner.matrix import MatrixRun
from dbperf.runner.orders.base import Order
from dbperf.runner.plan import RunPlan
from dbperf.targets.lifecycle import TargetLifecycle

pytestmark = pytest.mark.unit

OVERHEAD_S = 0.5  # what a scripted cell costs on the clock besides its warm-up and time
# (target, round, seconds measured) -> the cell's throughput in each of its intervals; [] fails the cell
Script = Callable[[str, int, float], list[float]]

RUN = """
[run]
benchmarks = ["point-query"]
threads = [1]
table_size = 1000
time = {time}
warmup = "0.5s"
{repeats}
{extra}

[[target]]
name = "a"

[[target]]
name = "b"
config = {{ cache_size = -4000 }}
"""


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class ScriptedOrder(Order):
    """Every target one after the other, each cell's figures from `script`, no process: the clock moves instead."""
    experiment: Experiment
    script: Script
    clock: FakeClock
    ran: list[tuple[str, int, float]] = field(default_factory=list)  # (target, round, time_s) of every cell run

    def round_cells(self, benchmark: Workload, threads: int, round_: int) -> list[list[CellPlan]]:
        return [[CellPlan(benchmark, threads, round_, t, i)] for i, t in enumerate(self.experiment.targets, 1)]

    def cells_per_round(self, threads: int) -> int:
        return len(self.experiment.targets)

    def round_s(self, threads: int, cell_s: float) -> float:
        return len(self.experiment.targets) * (cell_s + OVERHEAD_S)

    def run(self, cells: list[CellPlan], data: dict[str, TargetLifecycle],
            load_failed: Mapping[str, str]) -> list[CellRecord]:
        e = self.experiment
        out = []
        for cell in cells:
            self.ran.append((cell.target.name, cell.repeat, e.time_s))
            self.clock.now += e.warmup_s + e.time_s + OVERHEAD_S
            out.append(_record(cell, self.script(cell.target.name, cell.repeat, e.time_s), e.time_s))
        return out


def _record(cell: CellPlan, samples: list[float], time_s: float) -> CellRecord:
    key: dict[str, Any] = {"target": cell.target.name, "benchmark": cell.benchmark.name, "threads": cell.threads,
                           "repeat": cell.repeat, "position": cell.position}
    if not samples:
        return CellRecord(**key, status="failed", error="scripted failure")
    step = time_s / len(samples)
    intervals = [Interval(t_s=(i + 1) * step, duration_s=step, events=int(q * step), queries=int(q * step),
                          errors=0, eps=q, qps=q, p50_us=1.0, p95_us=1.0, p99_us=1.0, max_us=1.0)
                 for i, q in enumerate(samples)]
    qps = sum(samples) / len(samples)
    queries = int(qps * time_s)
    result = RunResult(qps=qps, eps=qps, queries=queries, errors=0, latency=Latency(p50_us=1, p99_us=1, max_us=1),
                       client_usage=Usage(user_us=1e6 * time_s, system_us=0, voluntary_cs=0, involuntary_cs=0),
                       duration_s=time_s, intervals=intervals, interval_s=step)
    return CellRecord(**key, status="ok", result=result)


class FakeTarget:
    """A target that is always running and never loaded: the scripted Order never asks it for anything."""
    def __init__(self) -> None:
        self.settings: list[list[str]] = []

    def ensure_running(self) -> bool:
        return False

    def describe(self) -> dict[str, Any]:
        return {}

    def stop(self) -> None:
        pass


def run_scripted(write_experiment: Any, out: Path, script: Script, *, time: str = '"1s"',
                 repeats: str = 'repeats = "auto"\nbudget = "60s"', extra: str = ""
                 ) -> tuple[ScriptedOrder, dict[str, Any], list[dict[str, Any]]]:
    """The run's groups carried out by a ScriptedOrder: the Order as it ran, meta.json and the records kept."""
    e = parse_experiment(write_experiment(RUN.format(time=time, repeats=repeats, extra=extra)))
    clock = FakeClock()
    order = ScriptedOrder(e, script, clock)
    plan = replace(RunPlan.of(e), order=order)
    with LabRun(out, Console(file=StringIO())) as lab:
        lab.claim()
        run = MatrixRun(plan, lab, {t.name: FakeTarget() for t in e.targets}, clock=clock)  # type: ignore[misc]
        run.open(in_history=False)
        run.run_groups()
    lines = (out / "results.jsonl").read_text().splitlines()
    return order, json.loads((out / "meta.json").read_text()), [json.loads(x) for x in lines]


def rounds_meta(meta: dict[str, Any]) -> dict[str, Any]:
    (group,) = meta["rounds"]
    return group


def steady(speed: dict[str, float], noise: float, seed: int = 3) -> Script:
    """Each target at its speed, with a seeded per-round noise of `noise` (relative, Gaussian) and one interval."""
    rng = random.Random(seed)
    return lambda target, round_, time_s: [10_000.0 * speed[target] * (1 + rng.gauss(0, noise))]


def test_a_cell_decided_early_stops_its_group_before_the_budget(write_experiment, tmp_path):
    order, meta, cells = run_scripted(write_experiment, tmp_path / "out", steady({"a": 1.0, "b": 0.8}, 0.002))
    group = rounds_meta(meta)
    assert group["stopped"].startswith("every cell decided after") and group["rounds"] < group["planned"]
    # the minimum runs whatever is decided before it; the share afforded more rounds than it took
    # warm-up, time and overhead a cell, two cells a round
    assert group["rounds"] >= 9 and group["planned"] == int(60 // (2 * (0.5 + 1.0 + OVERHEAD_S)))
    assert len(cells) == len(order.ran) == 2 * group["rounds"]  # every cell kept the moment it was measured
    assert [(c["target"], c["repeat"]) for c in cells] == [(t, r) for t, r, _ in order.ran]


def test_an_undecided_cell_runs_its_group_to_its_share_of_the_budget(write_experiment, tmp_path):
    _, meta, cells = run_scripted(write_experiment, tmp_path / "out", steady({"a": 1.0, "b": 1.0}, 0.3))
    group = rounds_meta(meta)
    assert group["stopped"].startswith("budget spent after") and group["rounds"] == group["planned"]
    assert len(cells) == 2 * group["rounds"] and all(c["status"] == "ok" for c in cells)


def test_a_failed_base_stops_the_group_at_the_minimum(write_experiment, tmp_path):
    def script(target: str, round_: int, time_s: float) -> list[float]:
        return [] if target == "a" else [10_000.0]
    _, meta, cells = run_scripted(write_experiment, tmp_path / "out", script)
    group = rounds_meta(meta)
    assert group["rounds"] == 9 and group["stopped"].startswith("every cell decided")  # nothing more could decide it
    assert sum(c["status"] == "failed" for c in cells) == 9


def pilot_script(a: float, b: float, seed: int = 11) -> Script:
    """A ratio whose log has variance a + b/t between rounds: each cell a level of its own per round (half of a on
    each side) and per-interval noise whose mean over t has variance b/2 / t (the pilot's ten intervals)."""
    rng = random.Random(seed)

    def script(target: str, round_: int, time_s: float) -> list[float]:
        level = rng.gauss(0, math.sqrt(a / 2))
        interval = time_s / 10
        sd = math.sqrt(b / 2 / interval)
        return [10_000.0 * (1 + level + rng.gauss(0, sd)) for _ in range(10)]
    return script


AUTO = '"auto"'


def auto_run(write_experiment: Any, out: Path, a: float, b: float
             ) -> tuple[ScriptedOrder, dict[str, Any], list[dict[str, Any]]]:
    pilot = 'auto_time = { pilot = "2s", pilot_rounds = 100, shortest = "0.3s", longest = "20s" }'
    order, meta, cells = run_scripted(write_experiment, out, pilot_script(a, b), time=AUTO, repeats="repeats = 3",
                                      extra=pilot)
    (chosen,) = meta["auto_time"]["lengths"]
    return order, chosen, cells


def test_pilot_rounds_are_run_at_their_length_and_not_kept_and_the_rounds_at_the_length_chosen(write_experiment,
                                                                                               tmp_path):
    order, chosen, cells = auto_run(write_experiment, tmp_path / "out", 4e-4, 4e-4)
    c = 0.5 + OVERHEAD_S  # a cell's warm-up and overhead on the clock: the round's cost besides what it measures
    assert chosen["overhead_s"] == pytest.approx(c, rel=1e-6) and chosen["pilot_s"] == 2.0
    assert chosen["per_second"] == pytest.approx(4e-4, rel=0.1)
    assert chosen["time_s"] == pytest.approx(math.sqrt(4e-4 * c / 4e-4), rel=0.3)  # the least cost of a + b/t at c
    pilots = [x for x in order.ran if x[2] == 2.0]
    assert len(pilots) == 2 * 100 and order.ran[:len(pilots)] == pilots
    kept = order.ran[len(pilots):]
    assert [(t, r) for t, r, _ in kept] == [(t, r) for r in (1, 2, 3) for t in ("a", "b")]
    assert all(t == pytest.approx(chosen["time_s"], abs=1e-3) for _, _, t in kept)
    assert [(x["target"], x["repeat"]) for x in cells] == [(t, r) for t, r, _ in kept]  # the pilot's not kept
    assert all(x["result"]["duration_s"] == pytest.approx(chosen["time_s"], abs=1e-3) for x in cells)


def test_more_noise_between_rounds_chooses_shorter_rounds(write_experiment, tmp_path):
    lengths = [auto_run(write_experiment, tmp_path / f"out{i}", a, 4e-4)[1]["time_s"]
               for i, a in enumerate((1e-4, 4e-4, 1.6e-3))]
    assert lengths == sorted(lengths, reverse=True) and lengths[0] > 2 * lengths[-1]
