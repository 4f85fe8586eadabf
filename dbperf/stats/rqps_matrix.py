"""The rQPS matrix: per (target, benchmark, threads) the summary of its repeats, and its QPS relative to the base
target's, with significance. rQPS = center QPS(target) / center QPS(base); center is the median, or the trimmed
mean with `--aggregate trimmed`."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from dbperf import engines
from dbperf.catalog.registry import AFTER_WRITES
from dbperf.metrics import CPU, WALL, Metric
from dbperf.records import CellRecord, CostModelRecord, CountersRecord, ResultsRecord, SimulatedRecord, Usage
from dbperf.run_meta import RunMeta
from dbperf.stats.cost_model import PredictedChange, predicted_change, usable
from dbperf.stats.rule_history import run_plans
from dbperf.stats.simulated import simulated_delta
from dbperf.stats.summary import Summary, significance, summarize
from dbperf.stats.tiers import Interval, TierAgreement, paired_change, tiers_of
from dbperf.stats.verdict import (
    DEFAULT_MIN_EFFECT,
    CellVerdict,
    ProcessPlan,
    deciding,
    pair_rounds,
    verdict_on_rounds,
)

GROUP_ORDER = ("point", "range", "write")


@dataclass
class Cell:
    target: str
    benchmark: str
    group: str
    threads: int
    runs: list[CellRecord] = field(default_factory=list)
    failures: list[CellRecord] = field(default_factory=list)
    qps: Summary | None = None
    rqps: float | None = None
    significant: bool | None = None
    p_value: float | None = None
    # against the base (stats/verdict.py); Mann-Whitney above is a second opinion
    verdict_detail: CellVerdict | None = None
    # the same decision on queries per CPU second (client + lab-started server), labelled "cpu"
    cpu_verdict_detail: CellVerdict | None = None
    level_shift: str | None = None  # the per-round ratios are not one level (a change point): see CellVerdict's
    sim: Any = None  # stats/simulated.py's SimulatedDelta (est. cycles against the base), when measured
    predicted: PredictedChange | None = None  # the host's calibrated cost model on `sim` (stats/cost_model.py)
    user_cpu_change: Interval | None = None  # measured user CPU per query against the base, per round pair
    cpu_change: Interval | None = None  # the same of user + system CPU per query
    tiers: TierAgreement | None = None  # do the measured and simulated tiers agree (stats/tiers.py)

    figures: list[dict[str, float | None]] = field(default_factory=list)  # derived(run), in repeat order

    @property
    def verdict(self) -> str | None:
        """faster, slower, same, undecided or unstable; None for the base or a cell without two repeats."""
        return self.verdict_detail.verdict if self.verdict_detail else None

    @property
    def decided_by(self) -> str | None:
        """Which view decided: paired or unpaired."""
        return self.verdict_detail.decided_by if self.verdict_detail else None

    @property
    def noise_threshold(self) -> float | None:
        return self.verdict_detail.noise_threshold if self.verdict_detail else None

    @property
    def deciding_verdict(self) -> CellVerdict | None:
        """The verdict that decides the cell: wall clock's when decided, else CPU time's when decided (its `metric`
        says which), else wall clock's undecided one."""
        return deciding(self.verdict_detail, self.cpu_verdict_detail)

    def per_run(self, key: str) -> list[float]:
        return [v for f in self.figures if (v := f.get(key)) is not None]

    def median_of(self, key: str) -> float | None:
        values = self.per_run(key)
        return statistics.median(values) if values else None


def derived(record: CellRecord) -> dict[str, float | None]:
    """Per-query costs of one repeat: CPU from the driver's getrusage, context switches, latency."""
    r = record.result
    assert r is not None, "derived figures of a cell without a result"
    queries = r.queries

    def per_query(x: float) -> float | None:
        return x / queries if queries else None

    usage = r.client_usage
    figures = {
        "qps": r.qps,
        "eps": r.eps,
        "rows_per_s": r.eps * record.rows_per_event if record.rows_per_event else None,
        "cpu_us_per_query": per_query(usage.cpu_us),
        "cpu_user_us_per_query": per_query(usage.user_us),
        "cpu_system_us_per_query": per_query(usage.system_us),
        "cs_per_query": per_query(usage.cs),
        "cs_voluntary_per_query": per_query(usage.voluntary_cs),
        "cs_involuntary_per_query": per_query(usage.involuntary_cs),
        **_server(r.server_usage, per_query, usage),
        "p50_us": r.latency.p50_us,
        "p99_us": r.latency.p99_us,
        "max_us": r.latency.max_us,
        "errors": r.errors,
    }
    if record.imported:  # imported sysbench/pgbench output: nobody measured its CPU or context switches
        figures.update((k, None) for k in list(figures) if k.startswith(("cpu_", "cs_", "total_")))
    return figures


def _server(server: Usage | None, per_query: Callable[[float], float | None],
            client: Usage) -> dict[str, float | None]:
    """Server-side costs (servers the lab started), and client + server totals; None for in-process engines."""
    if not server:
        return {"server_cpu_us_per_query": None, "server_cs_per_query": None, "total_cpu_us_per_query": None,
                "total_cs_per_query": None}
    return {
        "server_cpu_us_per_query": per_query(server.cpu_us),
        "server_cpu_user_us_per_query": per_query(server.user_us),
        "server_cpu_system_us_per_query": per_query(server.system_us),
        "server_cs_per_query": per_query(server.cs),
        "total_cpu_us_per_query": per_query(server.cpu_us + client.cpu_us),
        "total_cs_per_query": per_query(server.cs + client.cs),
    }


@dataclass
class Matrix:
    base: str
    targets: list[str]
    benchmarks: list[str]
    threads: list[int]
    cells: dict[tuple[str, str, int], Cell]
    aggregate: str
    trained_on: dict[str, list[str]] = field(default_factory=dict)
    min_effect: float = DEFAULT_MIN_EFFECT
    counters: dict[tuple[str, str], CountersRecord] = field(default_factory=dict)
    cost_model: CostModelRecord | None = None  # the host's calibrated model the run recorded, when usable
    cost_model_note: str | None = None  # why the run has no usable cost model (None: it has one, or no simulated tier)

    def was_trained_on(self, target: str, benchmark: str) -> bool:
        """The target is a PGO build whose training set includes this benchmark: its gain is not a fair one."""
        return benchmark.removesuffix(AFTER_WRITES) in self.trained_on.get(target, [])

    def cell(self, target: str, benchmark: str, threads: int) -> Cell | None:
        return self.cells.get((target, benchmark, threads))

    def rows(self) -> list[tuple[str, str, int]]:
        """(group, benchmark, threads) in report order: point, range, write; run order within a group."""
        groups = {b: g for (_, b, _), c in self.cells.items() for g in [c.group]}
        return [(g, b, t) for g in GROUP_ORDER for b in self.benchmarks if groups.get(b) == g for t in self.threads
                if any(self.cell(x, b, t) for x in self.targets)]


def _cells(meta: RunMeta, records: list[ResultsRecord], aggregate: str) -> dict[tuple[str, str, int], Cell]:
    """The run's cells by (target, benchmark, threads), their repeats in order and their QPS summarized."""
    group_of = {b.name: b.group for b in meta.benchmarks}
    cells: dict[tuple[str, str, int], Cell] = {}
    for rec in records:
        if not isinstance(rec, CellRecord):
            continue
        key = (rec.target, rec.benchmark, rec.threads)
        cell = cells.setdefault(key, Cell(rec.target, rec.benchmark, group_of.get(rec.benchmark, "point"),
                                          rec.threads))
        (cell.runs if rec.ok else cell.failures).append(rec)
    for cell in cells.values():
        cell.runs.sort(key=lambda r: r.repeat)
        cell.figures = [derived(r) for r in cell.runs]
        if cell.runs:
            cell.qps = summarize(cell.per_run("qps"), aggregate)
    return cells


def _compare_with_base(cells: dict[tuple[str, str, int], Cell], base: str, min_effect: float,
                       plans: Mapping[tuple[str, int], int] | None = None, processes: int | None = None,
                       ended: frozenset[tuple[str, int]] = frozenset()) -> None:
    """Each cell's rQPS against the base's cell of the same benchmark and threads, and its verdicts (`plans`: the
    rounds each (benchmark, threads) planned, rule_history.run_plans)."""
    plans = plans or {}
    for (target, benchmark, threads), cell in cells.items():
        base_cell = cells.get((base, benchmark, threads))
        if cell.qps is None or base_cell is None or base_cell.qps is None or base_cell.qps.center == 0:
            continue
        cell.rqps = cell.qps.center / base_cell.qps.center
        if target != base:
            cell.significant, cell.p_value = significance(cell.per_run("qps"), base_cell.per_run("qps"))
            planned = plans.get((benchmark, threads))
            over = (benchmark, threads) in ended  # its rounds stopped: every process block counts as it is
            cell.verdict_detail = cell_verdict(cell, base_cell, min_effect, planned=planned, processes=processes,
                                               ended=over)
            cell.cpu_verdict_detail = cell_verdict(cell, base_cell, min_effect, CPU, planned, processes, over)
            cell.level_shift = level_shift_text(cell.verdict_detail, cell.cpu_verdict_detail)


def build_matrix(meta: RunMeta, records: list[ResultsRecord], aggregate: str | None = None) -> Matrix:
    aggregate = aggregate or meta.aggregate
    targets = meta.target_names
    benchmarks = [b.name for b in meta.benchmarks]
    min_effect = DEFAULT_MIN_EFFECT if meta.min_effect is None else meta.min_effect
    counters = {(r.target, r.benchmark): r for r in records if isinstance(r, CountersRecord)}
    cells = _cells(meta, records, aggregate)
    base = meta.base
    _compare_with_base(cells, base, min_effect, run_plans(meta), meta.processes,
                       frozenset((r.benchmark, r.threads) for r in meta.rounds or []))
    thread_counts = sorted({t for (_, _, t) in cells} | set(meta.threads))
    trained_on = {t.name: t.trained_on for t in meta.targets}
    _attach_simulated(cells, base, records)  # the simulated tier: Cell.sim (stats/simulated.py)
    model, note = _cost_model(meta, records)
    _attach_tiers(cells, base, meta.aa_target, model, min_effect)
    return Matrix(base=base, targets=targets, benchmarks=benchmarks, threads=thread_counts, cells=cells,
                  aggregate=aggregate, trained_on=trained_on, counters=counters,
                  min_effect=min_effect, cost_model=model, cost_model_note=note)


def level_shift_text(wall: CellVerdict | None, cpu: CellVerdict | None) -> str | None:
    """Its ratios changed level (per metric, labelled when CPU time's did): why it was not decided on, or that its
    call holds at both levels."""
    shifts = [f"{label}{v.level_shift}" for label, v in (("", wall), ("CPU time: ", cpu)) if v and v.level_shift]
    return "; ".join(shifts) or None


def cpu_qps(record: CellRecord) -> float | None:
    """Queries per CPU second of one repeat: the driver's user + system time over the measured window (getrusage
    sampled when the window opens and when thread 0's loop ends), plus a lab-started server's. None where CPU was
    not measured (imported tool output, deterministic runs), nothing ran, or the window's CPU is not known: a
    sysbench/pgbench cell's CPU is its whole process (setup and warm-up included), not a per-query figure."""
    r = record.result
    if r is None or record.imported or record.tool or not r.queries:
        return None
    cpu_us = r.client_usage.cpu_us + (r.server_usage.cpu_us if r.server_usage else 0.0)
    return r.queries / (cpu_us / 1e6) if cpu_us > 0 else None


@dataclass(frozen=True)
class RepeatRates:
    """One repeat's rates, as a metric asks for them (dbperf/metrics/metric.py's Rates)."""
    record: CellRecord

    @property
    def qps(self) -> float | None:
        return self.record.result.qps if self.record.result is not None else None

    @property
    def cpu_qps(self) -> float | None:
        return cpu_qps(self.record)


def metric_value(record: CellRecord, metric: Metric) -> float | None:
    if record.result is None:
        return None
    return metric.rate(RepeatRates(record))


def cell_verdict(cell: Cell, base: Cell, min_effect: float, metric: Metric = WALL,
                 planned: int | None = None, processes: int | None = None, ended: bool = False) -> CellVerdict | None:
    """The verdict on a cell's metric against the base's, by stats/verdict.py's one rule (the stopping rule's
    too; `planned`: the rounds its group planned, see verdict_on_rounds). Repeats with the same number were measured
    in the same round; in a duet the base's record whose partner is this target was measured at the same moment
    (pair_rounds). The base's every repeat enters the unpaired view."""
    runs = [(r.repeat, metric_value(r, metric)) for r in cell.runs]
    base_runs = [(r.repeat, r.partner, metric_value(r, metric)) for r in base.runs]
    pairs = pair_rounds(cell.target, runs, base_runs)
    blocks = ProcessPlan.of({r.repeat: r.process for r in cell.runs if r.process is not None}, processes, ended)
    return verdict_on_rounds(pairs, [v for _, v in runs if v], [v for _, _, v in base_runs if v], min_effect, metric,
                             planned=planned, blocks=blocks)


def _attach_simulated(cells: Mapping[tuple[str, str, int], Cell], base: str,
                     records: Iterable[object]) -> None:
    """Sets `sim` on every matrix cell whose (target, benchmark) has a simulated record (one thread: the same
    figures for every thread count's row). Called by build_matrix once the cells exist."""
    simulated = {(r.target, r.benchmark): r for r in records if isinstance(r, SimulatedRecord)}
    if not simulated:
        return
    for (target, benchmark, _), cell in cells.items():
        record = simulated.get((target, benchmark))
        if record is not None:
            cell.sim = simulated_delta(record, simulated.get((base, benchmark)), target == base)


def _cost_model(meta: RunMeta, records: Iterable[object]) -> tuple[CostModelRecord | None, str | None]:
    """The cost model the run recorded (the last one) when it is usable for the run's host, else why there is none.
    No note where the run has no simulated tier."""
    records = list(records)
    if not any(isinstance(r, SimulatedRecord) for r in records):
        return None, None
    models = [r for r in records if isinstance(r, CostModelRecord)]
    if not models and meta.targets and all(engines.of(t.engine).server for t in meta.targets):
        # runner/simulated_tier.py records none for servers: the model's cells are in-process SQLite's
        return None, ("no cost model for servers: the host's model (`dbperf calibrate`) is fitted on in-process "
                      "SQLite, whose CPU is the client's own; a server's simulated work is said as work only")
    if not models:
        return None, "no cost model calibrated on this host: `dbperf calibrate` makes one (`--quick`: fewer cells)"
    host = msgspec.to_builtins(meta.host) if meta.host else {}
    why = usable(models[-1], host)
    return (None, why) if why else (models[-1], None)


def cpu_pairs(cell: Cell, base: Cell, part: str = "user_us") -> list[tuple[float, float]]:
    """(target, base) CPU µs per query of the rounds both measured (a duet's base: the record of that pair); `part`:
    the client Usage's user_us, or cpu_us (user + system)."""
    def per_query(r: CellRecord) -> float | None:
        usage = r.result.client_usage if r.result else None
        return float(getattr(usage, part)) / r.result.queries if usage and r.result and r.result.queries else None

    base_by_round: dict[int, list[float]] = {}
    for r in base.runs:
        v = per_query(r)
        if v is not None and r.partner in (None, cell.target):
            base_by_round.setdefault(r.repeat, []).append(v)
    return [(v, statistics.median(base_by_round[r.repeat])) for r in cell.runs
            if (v := per_query(r)) is not None and r.repeat in base_by_round]


def _attach_tiers(cells: Mapping[tuple[str, str, int], Cell], base: str, aa_target: str | None,
                  model: CostModelRecord | None, min_effect: float) -> None:
    """Cell.predicted, Cell.user_cpu_change and Cell.tiers of every compared cell of a run with the simulated tier."""
    for (target, benchmark, threads), cell in cells.items():
        base_cell = cells.get((base, benchmark, threads))
        if target == base or base_cell is None or cell.sim is None:
            continue
        sim = cell.sim
        in_process = not any(r.result and r.result.server_usage for r in cell.runs)  # what the model was fitted on
        base_cpu = base_cell.median_of("cpu_us_per_query")
        if model is not None and in_process and sim.verdict not in ("missing", "base"):
            cell.predicted = predicted_change(model, sim.per_query, sim.base_per_query, min_effect,
                                              base_cpu * 1000.0 if base_cpu else None)
        cell.user_cpu_change = paired_change(cpu_pairs(cell, base_cell))
        cell.cpu_change = paired_change(cpu_pairs(cell, base_cell, "cpu_us"))
        # the prediction is checked on the measured change of what the model predicts
        checked = cell.cpu_change if model is not None and model.measure == "total" else cell.user_cpu_change
        cell.tiers = tiers_of(cell.deciding_verdict, sim, cell.predicted, checked, aa_copy=target == aa_target)
