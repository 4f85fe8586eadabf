"""benchmarks/verdicts: can the verdicts be trusted on this host? A benchmark, not a test: it asserts nothing.

One run, `repeats = "auto"`, three SQLite targets interleaved in alternating order:
- `O2`, SQLite built -O2 (the base);
- `O2-aa`, the same build again (`aa = true`): (1) every A/A cell called faster or slower is a false alarm;
  the line `A/A changed <count> of <cells>` (target: 0);
- `O2-ts0`, the same with `-DSQLITE_THREADSAFE=0` (no mutex calls): (2) a known small difference whose ground
  truth is the deterministic simulated instruction count per query (cachegrind, `dbperf profile --mode
  simulated`), measured for O2 and O2-ts0 on every benchmark after the timed run. A cell with at least 3% fewer
  (more) instructions should be called faster (slower); a call against the instruction difference's direction, or
  a call of changed where the counts differ by under 1%, is wrong. The script prints the cells called correctly,
  wrongly and undecided (target: none wrong, at least 80% of the cells with a >= 3% difference called correctly). Last
  line `ratio <called correctly / cells with a true difference>`.

Both builds run with locking_mode EXCLUSIVE and synchronous OFF, so that per-query fcntl and fsync system calls
(which no instruction count sees) do not dilute the user-space difference the build makes.

Usage: .venv/bin/python benchmarks/verdicts/run.py [--budget 15m] [--time 1] [--benchmarks reads,writes]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rich.console import Console

from dbperf.experiment.spec import parse_experiment
from dbperf.explain.mode import detect_mode
from dbperf.explain.profile import Profiler
from dbperf.runner.matrix import run_matrix
from dbperf.runner.targets import build_targets
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import read_results

EXPERIMENT = """
[run]
benchmarks = [{benchmarks}]
table_size = {table_size}
time = "{time}s"
warmup = "{warmup}s"
repeats = "auto"
budget = "{budget}"
aa = true

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
TRUE_DIFFERENCE = 0.03
NO_DIFFERENCE = 0.01  # instruction counts closer than this: calling the cell changed is wrong


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="3.54.1")
    ap.add_argument("--budget", default="15m")
    ap.add_argument("--time", type=float, default=1.0)
    ap.add_argument("--warmup", type=float, default=0.3)
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--benchmarks", default="reads,writes", help="comma-separated names or groups")
    ap.add_argument("--queries", type=int, default=20_000, help="queries per simulated profile")
    ap.add_argument("--results", type=Path, help="a results directory this script measured before: only the "
                    "ground truth (simulated instructions) is measured again")
    args = ap.parse_args()
    console = Console(stderr=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dbperf-verdicts-") as tmp:
        path = Path(tmp) / "verdicts.toml"
        path.write_text(EXPERIMENT.format(
            benchmarks=", ".join(f'"{b.strip()}"' for b in args.benchmarks.split(",")), table_size=args.table_size,
            time=args.time, warmup=args.warmup, budget=args.budget, version=args.version))
        exp, builds = build_targets(parse_experiment(path), console)
        out = args.results or Path(tmp) / "results"
        if args.results is None:
            run_matrix(exp, out, console, builds=builds)
        measured_s = time.monotonic() - started
        meta, records, _ = read_results(out)
        # Ground truth: simulated instructions per query, O2 against O2-ts0, one thread.
        mode = detect_mode()
        profiler = Profiler(exp, Path(tmp) / "profile", queries=args.queries, mode=mode)
        targets = {t.name: t for t in exp.targets}
        instructions: dict[tuple[str, str], float] = {}
        try:
            for b in exp.benchmarks:
                for name in ("O2", "O2-ts0"):
                    p = profiler.profile(targets[name], b, mode="simulated")
                    instructions[(name, b.name)] = p.per_query["instructions"]
        finally:
            profiler.close()
    m = build_matrix(meta, records)
    print(f"SQLite {args.version} -O2 (base), the same build again (A/A) and -DSQLITE_THREADSAFE=0 (A/B); "
          f"repeats = auto, budget {args.budget}, {args.time:g} s cells, rounds in alternating order; wall-clock "
          f"QPS; " + (f"measured in {measured_s / 60:.1f} min" if args.results is None else f"from {args.results}")
          + f"; ground truth from {args.queries} simulated queries per profile")
    for r in meta.get("rounds", []):
        print(f"  {r['benchmark']:24s} {r['stopped']}")

    aa_cells = [c for (t, _, _), c in m.cells.items() if t == "O2-aa" and c.verdict is not None]
    aa_changed = [c for c in aa_cells if c.verdict in ("faster", "slower")]
    print("\nA/A (O2-aa against O2):")
    for c in aa_cells:
        v = c.verdict_detail
        assert v is not None
        print(f"  {c.benchmark:24s} rQPS {c.rqps:.3f}  {v.verdict:9s} by {v.decided_by:8s} "
              f"threshold {v.noise_threshold:.1%}  rounds {v.unpaired.n}")
    print(f"A/A changed {len(aa_changed)} of {len(aa_cells)}")

    print("\nA/B (O2-ts0 against O2), truth = simulated instructions per query:")
    correct = wrong = undecided = missed = with_difference = 0
    for _, benchmark, threads in m.rows():
        cell = m.cell("O2-ts0", benchmark, threads)
        base_i, ts0_i = instructions.get(("O2", benchmark)), instructions.get(("O2-ts0", benchmark))
        if cell is None or cell.verdict_detail is None or not base_i or not ts0_i:
            print(f"  {benchmark:24s} no verdict or no profile")
            continue
        v = cell.verdict_detail
        change = base_i / ts0_i - 1  # the speed change the instruction counts predict: fewer, faster
        direction = (change > 0) - (change < 0) if abs(change) >= NO_DIFFERENCE else 0
        true_difference = abs(change) >= TRUE_DIFFERENCE
        with_difference += true_difference
        if v.verdict in ("faster", "slower"):
            right = (1 if v.verdict == "faster" else -1) == direction
            wrong += not right
            correct += right and true_difference
            outcome = "correct" if right else "WRONG"
        elif v.verdict == "same":
            missed += true_difference
            outcome = "missed (called same)" if true_difference else "correct (same)"
        else:
            undecided += 1
            outcome = "undecided"
        print(f"  {benchmark:24s} instructions/q {base_i:9,.0f} -> {ts0_i:9,.0f} ({-change / (1 + change):+.1%}); "
              f"rQPS {cell.rqps:.3f}  {v.verdict:9s} by {v.decided_by:8s} threshold {v.noise_threshold:.1%}  "
              f"{outcome}")
    print(f"A/B: {correct} called correctly of {with_difference} cells with a >= {TRUE_DIFFERENCE:.0%} instruction "
          f"difference; {wrong} called wrongly (the wrong direction, or changed under {NO_DIFFERENCE:.0%}); "
          f"{undecided} undecided; {missed} with a true difference called same")
    print(f"ratio {correct / with_difference if with_difference else 0:.3f}")


if __name__ == "__main__":
    main()
