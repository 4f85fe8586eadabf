"""benchmarks/pgo_gain: SQLite built -O2 against -O2 + PGO trained on the default training mix (which is none of the
measured benchmarks), over the read and write microbenchmarks, repeats interleaved. Prints per-benchmark rQPS, the
geometric mean and the worst benchmark; the last line is `ratio <geomean>`. Target: geomean >= 1.08, no benchmark
below 0.97. A benchmark, not a test: it asserts nothing.

Both builds run with locking_mode EXCLUSIVE (set before WAL, so SQLite skips its shared-memory and fcntl locking)
and synchronous OFF: PGO changes the library's user-space code, and per-query fcntl and fsync system calls, which
dominate a default-configured point query, would only dilute what the build changed.

Usage: .venv/bin/python benchmarks/pgo_gain/run.py [--version 3.54.1] [--time 2] [--repeats 3] [--train train-mix]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from rich.console import Console

from dbperf.experiment.spec import parse_experiment
from dbperf.runner.matrix import run_plan
from dbperf.runner.plan import RunPlan
from dbperf.runner.targets import build_targets
from dbperf.stats.ladder import geomean
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import read_results

EXPERIMENT = """
[run]
benchmarks = ["reads", "writes"]
table_size = {table_size}
time = "{time}s"
warmup = "0.5s"
repeats = {repeats}

[[target]]
name = "O2"
source = "sqlite@{version}"
build = ["O2"]
config = {{ locking_mode = "EXCLUSIVE", journal_mode = "WAL", synchronous = "OFF" }}

[[target]]
name = "O2-pgo"
source = "sqlite@{version}"
build = ["O2", "pgo"]
pgo_train = [{train}]
pgo_partial_training = {partial}
config = {{ locking_mode = "EXCLUSIVE", journal_mode = "WAL", synchronous = "OFF" }}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="3.54.1")
    ap.add_argument("--time", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--train", default="train-mix", help="comma-separated training workloads")
    ap.add_argument("--partial", action="store_true", help="-fprofile-partial-training")
    args = ap.parse_args()
    console = Console(stderr=True)
    with tempfile.TemporaryDirectory(prefix="dbperf-pgo-gain-") as tmp:
        path = Path(tmp) / "pgo_gain.toml"
        train = ", ".join(f'"{t.strip()}"' for t in args.train.split(","))
        path.write_text(EXPERIMENT.format(version=args.version, time=args.time, repeats=args.repeats,
                                          table_size=args.table_size, train=train,
                                          partial="true" if args.partial else "false"))
        exp, builds = build_targets(parse_experiment(path), console)
        out = Path(tmp) / "results"
        run_plan(RunPlan.inspected(exp, builds), out, console)
        meta, records, _ = read_results(out)
    m = build_matrix(meta, records)
    partial = " with -fprofile-partial-training" if args.partial else ""
    print(f"SQLite {args.version}: O2 vs O2+PGO{partial} trained on {args.train}; {args.repeats} interleaved "
          f"repeats of {args.time:g} s cells, wall-clock QPS, median per cell")
    ratios = []
    for _, benchmark, threads in m.rows():
        cell = m.cell("O2-pgo", benchmark, threads)
        if cell is None or cell.rqps is None:
            print(f"{benchmark:32s} failed")
            continue
        ratios.append((cell.rqps, benchmark))
        sig = "" if cell.significant else " ~"
        print(f"{benchmark:32s} rQPS {cell.rqps:.3f}{sig}   spread {cell.qps.spread:.1%}")
    worst = min(ratios)
    print(f"geomean rQPS {geomean([r for r, _ in ratios]):.3f} over {len(ratios)} benchmarks; "
          f"worst {worst[1]} {worst[0]:.3f}")
    print(f"ratio {geomean([r for r, _ in ratios]):.3f}")


if __name__ == "__main__":
    main()
