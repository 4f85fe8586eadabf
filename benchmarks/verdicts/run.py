"""benchmarks/verdicts: can the verdicts be trusted on this host? A benchmark, not a test: it asserts nothing.

One run per mode (`--modes duet,interleaved`: `order = "duet"`, then `order = "alternate"`; `slices`:
`order = "slices"`), each with
`repeats = "auto"`, its own budget, `aa = true` and `simulated = true`, three SQLite targets:
- `O2`, SQLite built -O2 (the base);
- `O2-aa`, the same build again: (1) every A/A cell called faster or slower (by either metric: wall clock or CPU
  time) is a false alarm; per mode `mode <m>: A/A changed <count> of <cells>`, then the contract line
  `A/A changed <count> of <cells>` over every mode (target: 0);
- `O2-ts0`, the same with `-DSQLITE_THREADSAFE=0` (no mutex calls): (2) a known small difference whose ground
  truth is the deterministic simulated instruction count per query of the run's simulated tier (cachegrind,
  runner/simulated_tier.py). A cell with at least 3% fewer (more) instructions should be called faster (slower); a
  call against the instruction difference's direction, or a call of changed where the counts differ by under 1%,
  is wrong. Per mode and metric the cells called correctly, wrongly and undecided; the last line `ratio <called
  correctly by the deciding verdict (wall clock when decided, else CPU time) / cells with a true difference>` of
  the first mode (target: none wrong, at least 0.8).
Per mode and metric `mode <m> metric wall|cpu: median noise threshold <x>% after <n> rounds` (the half-width of
the sequential rule's confidence interval when its rounds stopped, median over the compared cells; target <= 3%),
the simulated tier's own calls (work: fewer, more or same estimated cycles, changed at 0.5%; never a speed) and
whether the tiers agree per cell (stats/tiers.py: agree, disagree, open).

Both builds run with locking_mode EXCLUSIVE and synchronous OFF, so that per-query fcntl and fsync system calls
(which no instruction count sees) do not dilute the user-space difference the build makes.

Usage: .venv/bin/python benchmarks/verdicts/run.py [--budget 12m] [--modes duet,interleaved] [--time 1]
       [--benchmarks point-query,...] [--results DIR ...]   (--results: report runs this script made before)
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console

from dbperf.experiment.spec import parse_experiment
from dbperf.runner.matrix import run_plan
from dbperf.runner.plan import RunPlan
from dbperf.runner.targets import build_targets
from dbperf.stats.rqps_matrix import Matrix, build_matrix
from dbperf.stats.verdict import CellVerdict
from dbperf.storage.results import read_results

EXPERIMENT = """
[run]
benchmarks = [{benchmarks}]
table_size = {table_size}
time = "{time}s"
warmup = "{warmup}s"
repeats = "auto"
budget = "{budget}"
order = "{order}"
aa = true
simulated = true

[[target]]
name = "O2"
source = "sqlite@{version}"
build = ["O2"]
config = {{ locking_mode = "EXCLUSIVE", journal_mode = "WAL", synchronous = "OFF" }}

[[target]]
name = "O2-ts0"
source = "sqlite@{version}"
build = ["O2"]
cflags = ["-DSQLITE_THREADSAFE=0"]
config = {{ locking_mode = "EXCLUSIVE", journal_mode = "WAL", synchronous = "OFF" }}
"""
ORDERS = {"duet": "duet", "interleaved": "alternate", "slices": "slices"}  # slices: the demo's order
DEMO_BENCHMARKS = ("point-query", "random-points-100", "range-covered-si", "read-only-100", "update-index",
                   "update-nonindex", "write-only", "insert")
TRUE_DIFFERENCE = 0.03
NO_DIFFERENCE = 0.01  # instruction counts closer than this: calling the cell changed is wrong
CHANGED = ("faster", "slower")


def _measure(args: argparse.Namespace, mode: str, tmp: Path, console: Console) -> Path:
    path = tmp / f"verdicts-{mode}.toml"
    path.write_text(EXPERIMENT.format(
        benchmarks=", ".join(f'"{b.strip()}"' for b in args.benchmarks.split(",")), table_size=args.table_size,
        time=args.time, warmup=args.warmup, budget=args.budget, version=args.version, order=ORDERS[mode]))
    exp, builds = build_targets(parse_experiment(path), console)
    out = tmp / f"results-{mode}"
    started = time.monotonic()
    run_plan(RunPlan.inspected(exp, builds), out, console)
    console.print(f"{mode}: measured in {(time.monotonic() - started) / 60:.1f} min, load average now "
                  f"{os.getloadavg()[0]:.2f}", highlight=False)
    return out


def _metric(cell_verdict: CellVerdict | None) -> str:
    if cell_verdict is None:
        return "-"
    return f"{cell_verdict.verdict} ±{cell_verdict.noise_threshold:.1%}"


def _report(mode: str, directory: Path) -> tuple[int, int, float, int]:
    """Prints one mode's lines; returns (A/A cells changed, A/A cells, A/B ratio, wrong calls)."""
    meta, records, _ = read_results(directory)
    m: Matrix = build_matrix(meta, records)
    duet = meta.duet or {}
    fallback = "" if mode != "duet" or duet.get("used") else f", duet NOT used: {duet.get('why')}"
    print(f"\n== mode {mode} (order {meta.order}{fallback}) from {directory}")
    rounds = [r.rounds for r in meta.rounds or []]
    for r in meta.rounds or []:
        print(f"  {r.benchmark:24s} {r.stopped}")
    compared = [c for (t, _, _), c in m.cells.items() if t != m.base and c.verdict_detail is not None]
    for metric in ("wall", "cpu"):
        thresholds = [v.noise_threshold for c in compared
                      if (v := c.verdict_detail if metric == "wall" else c.cpu_verdict_detail) is not None
                      and v.noise_threshold == v.noise_threshold and v.noise_threshold != float("inf")]
        median = f"{statistics.median(thresholds):.1%}" if thresholds else "n/a"
        print(f"mode {mode} metric {metric}: median noise threshold {median} after "
              f"{statistics.median(rounds) if rounds else 0:g} rounds")

    aa_cells = [c for (t, _, _), c in m.cells.items() if t == meta.aa_target and c.verdict_detail is not None]
    aa_changed = 0
    print("A/A (O2-aa against O2): rQPS, wall clock, CPU time, simulated")
    for c in aa_cells:
        called = any(v is not None and v.verdict in CHANGED for v in (c.verdict_detail, c.cpu_verdict_detail))
        aa_changed += called
        sim = c.sim.verdict if c.sim is not None else "-"
        print(f"  {c.benchmark:24s} rQPS {c.rqps:.3f}  wall {_metric(c.verdict_detail):18s} "
              f"cpu {_metric(c.cpu_verdict_detail):18s} sim {sim}{'  FALSE ALARM' if called else ''}")
    print(f"mode {mode}: A/A changed {aa_changed} of {len(aa_cells)}")

    print("A/B (O2-ts0 against O2), truth = simulated instructions per query:")
    tally = {k: {"correct": 0, "wrong": 0, "undecided": 0, "missed": 0} for k in ("wall", "cpu", "either")}
    sim_calls: dict[str, int] = {}
    agreement: dict[str, int] = {}
    with_difference = 0
    for _, benchmark, threads in m.rows():
        cell = m.cell("O2-ts0", benchmark, threads)
        sim = cell.sim if cell is not None else None
        if cell is None or sim is None or not sim.instructions or not sim.base_instructions:
            print(f"  {benchmark:24s} no cell or no simulated figure")
            continue
        sim_calls[sim.verdict] = sim_calls.get(sim.verdict, 0) + 1
        change = sim.base_instructions / sim.instructions - 1  # the speed change the counts predict: fewer, faster
        direction = (change > 0) - (change < 0) if abs(change) >= NO_DIFFERENCE else 0
        true_difference = abs(change) >= TRUE_DIFFERENCE
        with_difference += true_difference
        # The simulated tier's call is printed, not judged: it is the deterministic measure itself (est. cycles at
        # 0.5%), and judging it against instruction counts at 1% would call a cache-miss difference "wrong".
        outcomes = [f"sim {sim.verdict} (est. cycles)"]
        tiers = cell.tiers.tiers if cell.tiers is not None else "-"
        agreement[tiers] = agreement.get(tiers, 0) + 1
        for key, verdict in (("wall", cell.verdict_detail and cell.verdict_detail.verdict),
                             ("cpu", cell.cpu_verdict_detail and cell.cpu_verdict_detail.verdict),
                             ("either", cell.deciding_verdict and cell.deciding_verdict.verdict)):
            if verdict in CHANGED:
                right = (1 if verdict == "faster" else -1) == direction
                tally[key]["wrong"] += not right
                tally[key]["correct"] += right and true_difference
                outcomes.append(f"{key} {verdict}{'' if right else ' WRONG'}")
            elif verdict == "same":
                tally[key]["missed"] += true_difference
                outcomes.append(f"{key} same{' MISSED' if true_difference else ''}")
            else:
                tally[key]["undecided"] += 1
                outcomes.append(f"{key} {verdict or '-'}")
        print(f"  {benchmark:24s} instructions/q {sim.base_instructions:9,.0f} -> {sim.instructions:9,.0f} "
              f"({-change / (1 + change):+.1%}), est. cycles {sim.estimated_cycles_delta or 0:+.2%}; "
              f"rQPS {cell.rqps or 0:.3f}; " + ", ".join(outcomes) + f"; tiers {tiers}")
    for key, t in tally.items():
        label = {"wall": "wall clock", "cpu": "CPU time", "either": "deciding (wall, else CPU)"}[key]
        print(f"mode {mode} {label}: {t['correct']} called correctly of {with_difference} cells with a >= "
              f"{TRUE_DIFFERENCE:.0%} instruction difference; {t['wrong']} wrong; {t['undecided']} undecided; "
              f"{t['missed']} with a true difference called same")
    print(f"mode {mode} simulated tier (work: est. cycles, changed at 0.5%): "
          + ", ".join(f"{n} {v}" for v, n in sorted(sim_calls.items())) + f" of {sum(sim_calls.values())} cells")
    print(f"mode {mode} tiers: " + ", ".join(f"{n} {v}" for v, n in sorted(agreement.items()))
          + f" of {sum(agreement.values())} cells")
    ratio = tally["either"]["correct"] / with_difference if with_difference else 0.0
    return aa_changed, len(aa_cells), ratio, tally["either"]["wrong"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="3.54.1")
    ap.add_argument("--budget", default="12m", help="of each mode's run")
    ap.add_argument("--modes", default="duet,interleaved", help="comma-separated: duet, interleaved, slices")
    ap.add_argument("--time", type=float, default=1.0)
    ap.add_argument("--warmup", type=float, default=0.3)
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--benchmarks", default=",".join(DEMO_BENCHMARKS), help="comma-separated names or groups "
                    "(default: the demo's 8)")
    ap.add_argument("--results", type=Path, nargs="*", help="results directories this script measured before, "
                    "one per mode in --modes order: reported again, nothing measured")
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if any(m not in ORDERS for m in modes):
        ap.error(f"--modes: each of {', '.join(ORDERS)}")
    console = Console(stderr=True)
    print(f"SQLite {args.version} -O2 (base), the same build again (A/A) and -DSQLITE_THREADSAFE=0 (A/B); "
          f"repeats = auto, budget {args.budget} per mode, {args.time:g} s cells; verdicts: the anytime-valid "
          f"sequential rule, wall clock (QPS) and CPU time (queries per CPU second); ground truth: the run's "
          f"simulated tier; load average at start {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="dbperf-verdicts-") as tmp:
        directories = args.results or [_measure(args, mode, Path(tmp), console) for mode in modes]
        outcomes = [_report(mode, d) for mode, d in zip(modes, directories, strict=False)]
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")
    print(f"A/A changed {sum(o[0] for o in outcomes)} of {sum(o[1] for o in outcomes)}")
    print(f"ratio {outcomes[0][2]:.3f}" if outcomes else "ratio 0.000")


if __name__ == "__main__":
    main()
