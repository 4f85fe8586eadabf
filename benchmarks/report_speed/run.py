"""Speed and size of the reports and the history (issue 13's targets), measured through the real CLI:

1. `dbperf report DIR --format html -o FILE` on a 30-benchmark x 8-target x 10-repeat run (written by the lab's own
   results writer from made-up figures): wall time < 2 s, file < 5 MB;
2. `dbperf regressions` over a history of 100 runs x 30 benchmarks (a 100-point series per benchmark, a 10% step
   in a third of them): wall time < 5 s.

Each command is run --runs times (default 3); the median wall time is reported, with min and max, and beside it the
same work done in-process (no interpreter start, no imports) so that a loaded machine's start-up cost is visible.
Last line: `ratio <worst of measured/target>` (below 1.0: every target met)."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from dbperf.history.series import build_series  # noqa: E402
from dbperf.history.store import Store  # noqa: E402
from dbperf.report.html import to_html  # noqa: E402
from dbperf.stats.rqps_matrix import build_matrix  # noqa: E402
from dbperf.storage.results import read_results  # noqa: E402
from tests.synthetic import write_run  # noqa: E402

HTML_SECONDS, HTML_BYTES, REGRESSIONS_SECONDS = 2.0, 5_000_000, 5.0


def timed(cmd: list[str], env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    """Wall times and CPU times (user + system of the child, from its rusage) of `runs` runs of a command."""
    wall, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
    return wall, cpu


def in_process(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def spread(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.2f} s (min {min(xs):.2f}, max {max(xs):.2f}, n={len(xs)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dbperf-report-speed-"))
    env = {**os.environ, "DBPERF_HISTORY": str(work / "history.sqlite")}
    dbperf = [sys.executable, "-m", "dbperf.cli"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (the machine is shared)")

    targets = [f"target-{i}" for i in range(8)]
    benchmarks = [f"bench-{i:02d}" for i in range(30)]
    run = write_run(work / "run", targets, benchmarks, 10, speed={t: 1 - 0.02 * i for i, t in enumerate(targets)})
    html = work / "report.html"
    # --force: every timed run writes the same file
    cli, cli_cpu = timed([*dbperf, "report", str(run), "--format", "html", "-o", str(html), "--force"], env,
                         args.runs)
    size = html.stat().st_size

    def render() -> None:
        meta, records, _ = read_results(run)
        to_html(build_matrix(meta, records), meta)
    inner = in_process(render, args.runs)
    print(f"html report 30 x 8 x 10: dbperf report wall {spread(cli)}, CPU {spread(cli_cpu)}; in-process wall "
          f"{spread(inner)}; file {size / 1e6:.2f} MB")

    store = Store(work / "history.sqlite")
    for i in range(100):
        step = {"t": 0.9} if i >= 60 else {}
        d = write_run(work / f"h{i:03d}", ["t"], benchmarks, 5, seed=i, engine_version=f"1.{i}",
                      speed=step, started_at=f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}")
        store.add_run(d)
    store.close()
    reg, reg_cpu = timed([*dbperf, "regressions", "--format", "json"], env, args.runs)
    found = subprocess.run([*dbperf, "regressions", "--format", "json"], capture_output=True, text=True, env=env,
                           cwd=REPO).stdout
    steps = found.count('"kind": "regression"')

    def detect() -> None:
        s = Store(work / "history.sqlite")
        build_series(s.results())
        s.close()
    inner_reg = in_process(detect, args.runs)
    print(f"regressions over 100 versions x 30 benchmarks: dbperf regressions wall {spread(reg)}, CPU "
          f"{spread(reg_cpu)}; in-process wall {spread(inner_reg)}; {steps} steps down found (a 10% step at "
          "version 1.60 in all 30)")

    # On a shared, loaded machine the wall time mostly waits for a core: the ratio is taken on the commands' CPU
    # time (user + system; both are single-threaded, so on an idle machine wall ≈ CPU). Wall ratios are printed too.
    ratios = {"html CPU time": statistics.median(cli_cpu) / HTML_SECONDS, "html size": size / HTML_BYTES,
              "regressions CPU time": statistics.median(reg_cpu) / REGRESSIONS_SECONDS}
    print(f"(wall: html {statistics.median(cli) / HTML_SECONDS:.3f}, regressions "
          f"{statistics.median(reg) / REGRESSIONS_SECONDS:.3f} of target)")
    for k, v in ratios.items():
        print(f"{k}: {v:.3f} of target")
    print(f"ratio {max(ratios.values()):.3f}")


if __name__ == "__main__":
    main()
