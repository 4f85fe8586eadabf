"""The child process that runs one host's part of a fleet matrix on that host (started by task.py in the worker):
build, start, load, drive and stop through runner/matrix.py (its plan built once here, carried out in a LabRun), as
`dbperf run` does, into a local results directory, and every record written there also goes, as one JSON line, down
the pipe the worker reads.

It dies with its worker: standard input stays open for as long as the worker lives, and its end of file (the worker
killed, however) is turned into SIGTERM, which ends the run as Ctrl-C does (driver killed, servers stopped).

Test hook: `fake_cell_s` replaces every cell by a sleep of that length (no build, no data, no driver), so that the
fleet's own cost per cell can be measured (benchmarks/fleet_overhead)."""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.records import CellRecord, encode
from dbperf.runner import interrupts
from dbperf.runner.matrix import run_plan
from dbperf.runner.plan import RunPlan
from dbperf.runner.targets import build_targets


def _exit_with_parent() -> None:
    try:
        while os.read(0, 65536):  # the raw descriptor: a daemon thread must not hold stdin's buffer lock at exit
            pass
    finally:
        os.kill(os.getpid(), signal.SIGTERM)


def _fake_matrix(e: Experiment, seconds: float, skip: set[Any], send: Any) -> None:
    for cell in RunPlan.of(e).cells():
        if cell.key in skip:
            continue
        started = time.time()
        time.sleep(seconds)
        send(CellRecord(target=cell.target.name, benchmark=cell.benchmark.name, threads=cell.threads,
                        repeat=cell.repeat, partner=cell.partner, status="fake", started_at=started,
                        wall_s=round(time.time() - started, 6), error="fake cell (test hook): no driver ran"))


def run(job: dict[str, Any], records: BinaryIO, work: Path) -> int:
    def send(record: CellRecord) -> None:
        record.host = job["host"]
        records.write(encode(record) + b"\n")

    console = Console(stderr=True)
    try:
        if job.get("fake_cell_s"):
            _fake_matrix(job["experiment"], job["fake_cell_s"], job["skip"], send)
            return 0
        exp, builds = build_targets(job["experiment"], console)
        plan = RunPlan.inspected(exp, builds, skip=job["skip"])  # the cells measured before a resume are skipped
        run_plan(plan, work, console, keep_data=job["keep_data"], on_record=send)
    except KeyboardInterrupt as interrupt:
        console.print(f"dbperf: interrupted ({interrupts.reason(interrupt)})", markup=False, highlight=False)
        return interrupts.exit_code(interrupt)
    except UserError as e:
        console.print(f"dbperf: error: {e}", markup=False, highlight=False, soft_wrap=True)
        return 2
    return 0


def main() -> None:
    fd, work = int(sys.argv[1]), Path(sys.argv[2])
    job = pickle.load(sys.stdin.buffer)  # from the worker: the lab's own objects, never user-supplied bytes
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    interrupts.install()
    with os.fdopen(fd, "wb", buffering=0) as records:
        code = run(job, records, work)
    sys.exit(code)


if __name__ == "__main__":
    main()
