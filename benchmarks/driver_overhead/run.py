"""benchmarks/driver_overhead: dbperf-driver against a minimal C client on the same prepared point query, the same
libsqlite3.so and the same table, run alternately for 5 pairs. Last line: `ratio <median driver QPS / C QPS>`.
Target: >= 0.95. A benchmark, not a test: it prints what it measured and asserts nothing.

Usage: .venv/bin/python benchmarks/driver_overhead/run.py [--time 5] [--pairs 5] [--library PATH]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from dbperf.catalog.registry import builtin
from dbperf.catalog.schema import sbtest
from dbperf.catalog.workload import compile_statements
from dbperf.experiment.spec import default_sqlite_library
from dbperf.records import DriverJob, LoadResult, RunResult
from dbperf.runner.driver import run_job

HERE = Path(__file__).parent
TABLE_SIZE = 100_000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time", type=float, default=5.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--library", default=default_sqlite_library())
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dbperf-overhead-"))
    try:
        exe = work / "point_query"
        subprocess.run([shutil.which("cc") or "cc", "-O2", "-o", str(exe), str(HERE / "point_query.c"), "-ldl"],
                       check=True)
        db = work / "bench.db"
        base = DriverJob(mode="load", engine="sqlite", library=args.library, database=str(db), tables=1,
                         table_size=TABLE_SIZE, seed=1)
        loaded = run_job(base.replace(schema=sbtest("sqlite")), LoadResult, 600)
        if not loaded.ok:
            raise SystemExit(f"load failed: {loaded.error}")
        job = base.replace(mode="run", threads=1, time_s=args.time, warmup_s=args.warmup,
                           workload=compile_statements(builtin()["point-query"], TABLE_SIZE))
        print(f"library {args.library}, table 1 x {TABLE_SIZE:,} rows, {args.pairs} pairs of {args.time:g} s cells, "
              f"wall-clock QPS")
        ratios = []
        for i in range(1, args.pairs + 1):
            c_out = subprocess.run([str(exe), args.library, str(db), str(TABLE_SIZE), str(args.warmup),
                                    str(args.time)], capture_output=True, text=True, check=True).stdout
            c_qps = float(c_out.split()[1])
            outcome = run_job(job, RunResult, args.time + args.warmup + 60)
            if not outcome.ok or outcome.result is None:
                raise SystemExit(f"driver failed: {outcome.error}")
            d_qps = outcome.result.qps
            ratios.append(d_qps / c_qps)
            print(f"pair {i}: C {c_qps:12,.0f} qps   dbperf-driver {d_qps:12,.0f} qps   ratio {ratios[-1]:.3f}")
        print(f"median of {len(ratios)} pair ratios, min {min(ratios):.3f}, max {max(ratios):.3f}")
        print(f"ratio {statistics.median(ratios):.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
