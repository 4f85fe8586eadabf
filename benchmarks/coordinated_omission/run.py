"""benchmarks/coordinated_omission: why open-loop latency matters. A lab-started PostgreSQL (or MariaDB) is paused
with SIGSTOP for 200 ms once every 2 s (every process of the server), while dbperf-driver runs point-query for 1
thread: first closed loop (the next event starts when the previous one ends), then open loop at half the
closed-loop rate (latency from each event's scheduled start). A closed-loop client simply waits out each stall, so
only one event per stall is slow and the p99.9 barely moves; the open-loop client keeps its schedule, every event
due during the stall queues, and the p99.9 shows the stall.
Target: open-loop p99.9 >= 150 ms, closed-loop p99.9 < 150 ms. Prints both; the last line is
`ratio <open-loop p99.9 / closed-loop p99.9>`. A benchmark, not a test: it asserts nothing.

Usage: .venv/bin/python benchmarks/coordinated_omission/run.py [--engine postgres|mariadb] [--time 10]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path

from dbperf.catalog.registry import builtin
from dbperf.catalog.workload import compile_statements
from dbperf.experiment.spec import parse_experiment
from dbperf.host.driver import run_job
from dbperf.records import RunResult
from dbperf.servers.registry import server_target

TABLE_SIZE = 10_000
STALL_S = 0.2
EVERY_S = 2.0
TARGET_MS = 150.0


def tree(root: int) -> list[int]:
    """The server's processes: root and its descendants, from /proc."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                parent[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    out, frontier = [root], [root]
    while frontier:
        frontier = [p for p, pp in parent.items() if pp in frontier]
        out += frontier
    return out


def pauser(root: int, stop: threading.Event, stalls: list[float]) -> None:
    """SIGSTOP the server for STALL_S once every EVERY_S until `stop`; always SIGCONT what it stopped."""
    while not stop.wait(EVERY_S - STALL_S):
        pids = tree(root)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        try:
            stop.wait(STALL_S)
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        stalls.append(STALL_S)


def measure(server, job, root: int) -> tuple[RunResult, int]:
    stop, stalls = threading.Event(), []
    t = threading.Thread(target=pauser, args=(root, stop, stalls), daemon=True)
    t.start()
    try:
        outcome = run_job(job, RunResult, job.time_s + job.warmup_s + 120, env=server.env())
    finally:
        stop.set()
        t.join()
    if not outcome.ok or outcome.result is None:
        raise SystemExit(f"driver failed: {outcome.error}\n{outcome.stderr_tail}")
    return outcome.result, len(stalls)


def line(name: str, r: RunResult) -> str:
    p999 = r.latency.at(99.9) or 0.0
    return (f"{name}: {r.eps:9,.0f} events/s  p50 {r.latency.p50_us / 1000:8.3f} ms  p99 {r.latency.p99_us / 1000:8.3f}"
            f" ms  p99.9 {p999 / 1000:8.3f} ms  max {r.latency.max_us / 1000:8.3f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=("postgres", "mariadb"), default="postgres")
    ap.add_argument("--time", type=float, default=10.0)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="dbperf-co-", dir="/tmp"))
    base.chmod(0o755)
    try:
        exp_file = base / "exp.toml"
        exp_file.write_text(f'[run]\nbenchmarks = ["point-query"]\ntable_size = {TABLE_SIZE}\n'
                            f'[[target]]\nname = "{args.engine}"\nengine = "{args.engine}"\n')
        exp = parse_experiment(exp_file)
        server = server_target(base / "data", base / "logs", exp.targets[0], exp)
        server.start()
        try:
            server.load()
            root = server.describe()["server_pid"]
            job = server.working_job().replace(
                mode="run", threads=1, time_s=args.time, warmup_s=1.0, percentiles=(50.0, 99.0, 99.9),
                workload=compile_statements(builtin()["point-query"], TABLE_SIZE, args.engine))
            closed, n_closed = measure(server, job, root)
            rate = closed.eps / 2
            opened, n_open = measure(server, job.replace(rate=rate, arrivals="uniform"), root)
        finally:
            server.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    o = opened.open_loop
    assert o is not None
    print(f"{args.engine}, point-query, 1 thread, {args.time:g} s measured (+1 s warmup) per loop; the server "
          f"SIGSTOPped {STALL_S * 1000:.0f} ms every {EVERY_S:g} s ({n_closed} and {n_open} stalls); latency from "
          "HdrHistogram, wall clock")
    print(line("closed loop             ", closed))
    print(line(f"open loop at {rate:7,.0f}/s", opened))
    print(f"  open loop: asked {o.rate_asked:,.0f}/s, achieved {o.rate_achieved:,.0f}/s, max queueing lag "
          f"{o.lag_max_us / 1000:.1f} ms, backlog at end {o.backlog_events}, kept up: {'yes' if o.sustained else 'NO'}")
    c999, o999 = (closed.latency.at(99.9) or 0.0) / 1000, (opened.latency.at(99.9) or 0.0) / 1000
    print(f"open-loop p99.9 {o999:.1f} ms {'>=' if o999 >= TARGET_MS else '<'} {TARGET_MS:.0f} ms "
          f"({'met' if o999 >= TARGET_MS else 'NOT met'}); closed-loop p99.9 {c999:.3f} ms "
          f"{'<' if c999 < TARGET_MS else '>='} {TARGET_MS:.0f} ms ({'met' if c999 < TARGET_MS else 'NOT met'})")
    print(f"ratio {o999 / c999 if c999 else float('inf'):.1f}")


if __name__ == "__main__":
    main()
