"""benchmarks/verdicts/states.py: do this host's fast and slow states follow time (the host) or the process? A
benchmark script, not a test: it asserts nothing. Run it on a quiet machine.

Two identical SQLite targets, A and B (the same build and settings, data of their own), one benchmark, the driver's
per-interval throughput samples (`interval`, default 0.25 s):
- N **duets** (`order = "duet"`, runner/duet.py): A and B run at the same moment on two CPUs, released together;
- N **interleaved rounds** (`order = "alternate"`): A and B one after the other, as the lab runs them by default.

It prints
- (a) the correlation between the two simultaneous sides' interval throughputs within each duet (median over the
  duets, each side's own mean removed) and between the duets' two cell medians across duets. High: both processes
  speed up and slow down together, so the state follows time (the host), and a duet cancels it;
- (b) the spread of the A/A ratio B/A: between the sides of a duet against between the two cells of an interleaved
  round (the unit the paired verdict uses), as the standard deviation of log(B/A) in %. A duet spread well below the
  interleaved one means simultaneity removes most of the noise;
- (c) whether a process keeps its level across its whole cell: the variance of the cell means against what the
  variance within cells alone would give them (F = between-cell variance / (within-cell variance / intervals per
  cell); ~1: cells differ no more than their samples; >> 1: each cell has a level of its own), per mode, and the
  same F for the two sides of each duet (do two simultaneous processes sit at different levels?). High F between
  the simultaneous sides with a high within-duet correlation is a per-process state riding on a per-time one.
Last line `ratio <duet A/A spread / interleaved A/A spread>`.

Usage: .venv/bin/python benchmarks/verdicts/states.py [--rounds 30] [--time 3] [--interval 0.25]
       [--benchmark point-query] [--source sqlite@3.54.1 --build O2]   (default: the system libsqlite3)
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console

from dbperf.experiment.spec import parse_experiment
from dbperf.records import CellRecord
from dbperf.runner.matrix import run_plan
from dbperf.runner.plan import RunPlan
from dbperf.runner.targets import build_targets
from dbperf.storage.results import read_results

EXPERIMENT = """
[run]
benchmarks = ["{benchmark}"]
table_size = {table_size}
time = "{time}s"
warmup = "{warmup}s"
interval = "{interval}s"
repeats = {rounds}
order = "{order}"
resources = false

[[target]]
name = "A"
{source}
config = {{ journal_mode = "WAL", synchronous = "NORMAL" }}

[[target]]
name = "B"
{source}
config = {{ journal_mode = "WAL", synchronous = "NORMAL" }}
"""


def intervals(record: CellRecord, interval_s: float) -> list[float]:
    """The cell's per-interval QPS, whole intervals only."""
    r = record.result
    if r is None:
        return []
    return [i.qps for i in r.intervals if i.duration_s >= 0.9 * interval_s and i.qps > 0]


def pearson(x: list[float], y: list[float]) -> float | None:
    if len(x) < 3 or len(x) != len(y):
        return None
    try:
        return statistics.correlation(x, y)
    except statistics.StatisticsError:  # a constant series
        return None


def log_spread(ratios: list[float]) -> float | None:
    """Standard deviation of log ratios, in % (about the relative spread)."""
    logs = [math.log(r) for r in ratios if r > 0]
    return 100 * statistics.stdev(logs) if len(logs) >= 2 else None


def level_f(cells: list[list[float]]) -> float | None:
    """Between-cell variance of the cells' mean log QPS over the within-cell variance / intervals per cell."""
    cells = [[math.log(q) for q in c] for c in cells if len(c) >= 2]
    if len(cells) < 2:
        return None
    k = statistics.mean(len(c) for c in cells)
    within = statistics.mean(statistics.variance(c) for c in cells)
    between = statistics.variance([statistics.mean(c) for c in cells])
    return between / (within / k) if within > 0 else None


def fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def measure(order: str, args: argparse.Namespace, tmp: Path, console: Console) -> list[CellRecord]:
    path = tmp / f"states-{order}.toml"
    source = f'source = "{args.source}"\nbuild = ["{args.build}"]' if args.source else ""
    path.write_text(EXPERIMENT.format(benchmark=args.benchmark, table_size=args.table_size, time=args.time,
                                      warmup=args.warmup, interval=args.interval, rounds=args.rounds, order=order,
                                      source=source))
    exp, builds = build_targets(parse_experiment(path), console)
    out = tmp / f"results-{order}"
    run_plan(RunPlan.inspected(exp, builds), out, console)
    meta, records, _ = read_results(out)
    if order == "duet" and not (meta.duet or {}).get("used"):
        raise SystemExit(f"no duet could be formed here: {(meta.duet or {}).get('why')}")
    return [r for r in records if isinstance(r, CellRecord) and r.ok]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30, help="duets, and interleaved rounds")
    ap.add_argument("--time", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.3)
    ap.add_argument("--interval", type=float, default=0.25)
    ap.add_argument("--benchmark", default="point-query")
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--source", help="e.g. sqlite@3.54.1 (built by the lab); default: the system libsqlite3")
    ap.add_argument("--build", default="O2")
    args = ap.parse_args()
    console = Console(stderr=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dbperf-states-") as tmp:
        duet = measure("duet", args, Path(tmp), console)
        interleaved = measure("alternate", args, Path(tmp), console)
    print(f"{args.benchmark}, {args.source or 'system libsqlite3'}: A and B identical; {args.rounds} duets and "
          f"{args.rounds} interleaved rounds of {args.time:g} s cells, {args.interval:g} s intervals; measured in "
          f"{(time.monotonic() - started) / 60:.1f} min")

    # Duets: A's record and B's record of one round are the two sides.
    sides: dict[int, dict[str, CellRecord]] = {}
    for r in duet:
        sides.setdefault(r.repeat, {})[r.target] = r
    pairs = [(s["A"], s["B"]) for s in sides.values() if "A" in s and "B" in s]
    within_r, a_medians, b_medians, duet_ratios, duet_f = [], [], [], [], []
    for a, b in pairs:
        qa, qb = intervals(a, args.interval), intervals(b, args.interval)
        n = min(len(qa), len(qb))
        r = pearson(qa[:n], qb[:n])
        if r is not None:
            within_r.append(r)
        if qa and qb:
            a_medians.append(statistics.median(qa))
            b_medians.append(statistics.median(qb))
            duet_ratios.append(b_medians[-1] / a_medians[-1])
            f = level_f([qa, qb])
            if f is not None:
                duet_f.append(f)
    across_r = pearson(a_medians, b_medians)
    print(f"(a) correlation of the two simultaneous sides' interval QPS within a duet: median r = "
          f"{fmt(statistics.median(within_r) if within_r else None, '+.2f')} over {len(within_r)} duets "
          f"(range {fmt(min(within_r) if within_r else None, '+.2f')} to "
          f"{fmt(max(within_r) if within_r else None, '+.2f')}); "
          f"of the duets' cell medians across duets: r = {fmt(across_r, '+.2f')}")

    rounds: dict[int, dict[str, CellRecord]] = {}
    for r in interleaved:
        rounds.setdefault(r.repeat, {})[r.target] = r
    inter_ratios = []
    for s in rounds.values():
        if "A" in s and "B" in s:
            qa, qb = intervals(s["A"], args.interval), intervals(s["B"], args.interval)
            if qa and qb:
                inter_ratios.append(statistics.median(qb) / statistics.median(qa))
    duet_spread, inter_spread = log_spread(duet_ratios), log_spread(inter_ratios)
    print(f"(b) spread of the A/A ratio B/A (sd of log, %): between the sides of a duet {fmt(duet_spread, '.2f')}% "
          f"({len(duet_ratios)} duets), between the cells of an interleaved round {fmt(inter_spread, '.2f')}% "
          f"({len(inter_ratios)} rounds)")

    inter_cells = [intervals(r, args.interval) for r in interleaved]
    duet_cells = [intervals(r, args.interval) for r in duet]
    print(f"(c) level kept across a cell, F = between-cell variance / (within-cell variance / intervals): "
          f"interleaved cells F = {fmt(level_f(inter_cells), '.1f')}, duet cells F = "
          f"{fmt(level_f(duet_cells), '.1f')}, the two sides of one duet median F = "
          f"{fmt(statistics.median(duet_f) if duet_f else None, '.1f')} (~1: no level of its own; >> 1: each "
          f"process keeps a level)")
    ratio = duet_spread / inter_spread if duet_spread is not None and inter_spread else None
    print(f"ratio {fmt(ratio, '.3f')}")


if __name__ == "__main__":
    main()
