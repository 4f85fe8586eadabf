"""benchmarks/fleet_overhead: what the fleet itself costs, on a real local fleet (a scheduler and workers as
separate processes on 127.0.0.1).

1. Scheduling overhead per cell: every cell of the matrix is a fake cell of known length T (the test hook of
   dbperf/fleet/hostrun.py: a sleep, no build, no data, no driver), run on 2 hosts. Measured at the controller:
   - steady per-cell overhead = (last record written − first record written) / (cells − 1) − T, per host: what
     each further cell costs beyond its own length (the host's loop, the record's trip worker → scheduler →
     controller, the write and fsync);
   - delivery latency = when the controller wrote a record − when the cell ended on the host (same clock here);
   - start-up = first cell's start − submission (a host's child process starts and imports the lab once per run).
2. An idle worker's CPU: a worker with no task, and a worker whose host runs long fake cells (between cells the
   worker only relays), as CPU time of the worker process (/proc/PID/stat utime+stime) over wall time.

Last line: `ratio <steady per-cell overhead (worst host, or the median delivery latency if larger) / 50 ms>`.
Targets: < 50 ms per cell (ratio < 1) and idle worker CPU < 1% of a core. A benchmark, not a test: it asserts
nothing.

Usage: .venv/bin/python benchmarks/fleet_overhead/run.py [--cells 40] [--cell-s 0.2] [--idle-s 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from dbperf.experiment.spec import parse_experiment
from dbperf.fleet.cluster import connect
from dbperf.fleet.controller import Controller
from dbperf.fleet.local import local_fleet, local_names
from dbperf.records import CellRecord
from dbperf.storage.results import ResultsWriter

TARGET_MS = 50.0
PLAIN_WORKER = """
import asyncio, sys
from distributed import Worker
async def main():
    async with Worker(sys.argv[1], name="plain", nthreads=1, dashboard=False) as w:
        await w.finished()
asyncio.run(main())
"""
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def experiment(work: Path, repeats: int) -> Path:
    path = work / "fake.toml"
    path.write_text(f"""[run]
benchmarks = ["point-query"]
repeats = {repeats}
time = "1s"

[[target]]
name = "A"

[[target]]
name = "B"
""")
    return path


class TimedController(Controller):
    """The controller, noting when it submitted the hosts' tasks (its workers have joined by then) and when each
    record was written (the only changes)."""
    written: list[tuple[float, CellRecord]]
    submitted: float

    def _submit(self) -> None:
        self.submitted = time.time()
        super()._submit()

    def _write(self, writer: ResultsWriter, record: CellRecord) -> None:
        super()._write(writer, record)
        self.written.append((time.time(), record))


def overhead(work: Path, cells: int, cell_s: float, console: Console) -> float:
    e = parse_experiment(experiment(work, max(1, cells // 2)))
    with local_fleet(2) as fleet:
        client = connect(fleet.scheduler, None)
        try:
            c = TimedController(e, client, work / "out", console, fleet.scheduler, local_names(2),
                                fake_cell_s=cell_s)
            c.written = []
            c.run()
            submitted = c.submitted
        finally:
            client.close()
    worst = 0.0
    latencies = []
    for host in local_names(2):
        mine = [(t, r) for t, r in c.written if r.host == host]
        n = len(mine)
        span = mine[-1][0] - mine[0][0]
        steady_ms = (span / (n - 1) - cell_s) * 1000
        start_ms = (min(r.started_at for _, r in mine) - submitted) * 1000
        lat = [(t - (r.started_at + r.wall_s)) * 1000 for t, r in mine]
        latencies += lat
        amortised_ms = ((mine[-1][0] - submitted) - n * cell_s) / n * 1000
        print(f"{host}: {n} fake cells of {cell_s * 1000:.0f} ms; steady overhead {steady_ms:.1f} ms/cell; delivery "
              f"latency median {statistics.median(lat):.1f} ms, max {max(lat):.1f} ms; start-up {start_ms:.0f} ms "
              f"once; amortised over these {n} cells, start-up included: {amortised_ms:.1f} ms/cell")
        worst = max(worst, steady_ms)
    return max(worst, statistics.median(latencies))


def idle_cpu(work: Path, idle_s: float, console: Console) -> None:
    with local_fleet(1) as fleet:
        pid = fleet.worker_pid("local-1")
        client = connect(fleet.scheduler, None)  # waits until the worker has joined
        try:
            deadline = time.monotonic() + 60
            while "local-1" not in {str(w.get("name")) for w in client.scheduler_info()["workers"].values()}:
                if time.monotonic() > deadline:
                    raise SystemExit("the worker did not join")
                time.sleep(0.2)
            # side by side: a plain Dask worker with Dask's default settings, joined to the same scheduler
            plain = subprocess.Popen([sys.executable, "-c", PLAIN_WORKER, fleet.scheduler],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                while "plain" not in {str(w.get("name")) for w in client.scheduler_info()["workers"].values()}:
                    if time.monotonic() > deadline or plain.poll() is not None:
                        raise SystemExit("the plain Dask worker did not join")
                    time.sleep(0.2)
                time.sleep(3)  # past their start-up
                c0, p0, t0 = cpu_s(pid), cpu_s(plain.pid), time.monotonic()
                time.sleep(idle_s)
                wall = time.monotonic() - t0
                idle, default = (cpu_s(pid) - c0) / wall * 100, (cpu_s(plain.pid) - p0) / wall * 100
            finally:
                plain.terminate()
                plain.wait()
            print(f"idle worker, no task: {idle:.2f}% of a core over {idle_s:.0f} s (a Dask worker with Dask's "
                  f"default settings beside it: {default:.2f}%)")
            # between cells: the host runs 4 fake cells of idle_s/4 each; the worker only relays their records
            e = parse_experiment(experiment(work, 2))
            c = Controller(e, client, work / "out-idle", console, fleet.scheduler, ["local-1"],
                           fake_cell_s=idle_s / 4)
            c0, t0 = cpu_s(pid), time.monotonic()
            c.run()
            busy = (cpu_s(pid) - c0) / (time.monotonic() - t0) * 100
            print(f"worker while its host runs 4 fake cells of {idle_s / 4:.1f} s (one task, its start-up "
                  f"included): {busy:.2f}% of a core")
        finally:
            client.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=40, help="fake cells per host")
    ap.add_argument("--cell-s", type=float, default=0.2)
    ap.add_argument("--idle-s", type=float, default=20.0)
    args = ap.parse_args()
    console = Console(stderr=True)
    with tempfile.TemporaryDirectory(prefix="dbperf-fleet-bench-") as tmp:
        work = Path(tmp)
        worst_ms = overhead(work, args.cells, args.cell_s, console)
        idle_cpu(work, args.idle_s, console)
    print(f"scheduling overhead per cell (worst host's steady overhead or the median delivery latency): "
          f"{worst_ms:.1f} ms, target < {TARGET_MS:.0f} ms")
    print(f"ratio {worst_ms / TARGET_MS:.3f}")


if __name__ == "__main__":
    main()
