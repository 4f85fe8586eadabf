"""Hardware counters through perf, for machines with a PMU: `perf stat -x,` around the driver, and `perf record`
for the per-function split. Nothing here runs on a machine whose mode is `simulated`."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from dbperf.errors import UserError
from dbperf.records import DriverJob, RunResult, driver_result, encode
from dbperf.tools import run_tool, tail

T = TypeVar("T")
STAT_EVENTS = ("cycles", "instructions", "L1-icache-load-misses", "branch-misses", "branches")


@dataclass
class PerfStat:
    counts: dict[str, float] = field(default_factory=dict)
    unsupported: list[str] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)


def parse_perf_stat_csv(text: str) -> PerfStat:
    """Parses `perf stat -x,` output: `value,unit,event,run-time,pct,metric-value,metric-unit` per line.
    `<not supported>` and `<not counted>` values are listed as unsupported, never as zero. Metric lines (TopdownL1)
    carry their value in field 6 and their name in field 7."""
    stat = PerfStat()
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3:
            continue
        value, event = fields[0].strip(), fields[2].strip()
        metric_value = fields[5].strip() if len(fields) > 5 else ""
        metric_name = fields[6].strip() if len(fields) > 6 else ""
        if value.startswith("<"):
            if event:
                stat.unsupported.append(event)
            continue
        if event and value:
            try:
                stat.counts[event] = stat.counts.get(event, 0.0) + float(value)
            except ValueError:
                continue
        if metric_value and metric_name:
            try:
                stat.metrics[metric_name.lstrip("% ").strip()] = float(metric_value)
            except ValueError:
                continue
    return stat


def _perf() -> str:
    perf = shutil.which("perf")
    if perf is None:
        raise UserError("perf not found (apt install linux-perf)")
    return perf


def perf_stat(driver: str, job: DriverJob, extra: list[str], env: dict[str, str] | None = None,
              timeout_s: float = 900) -> tuple[PerfStat, RunResult]:
    with tempfile.TemporaryDirectory(prefix="dbperf-perf-") as tmp:
        job_file = Path(tmp) / "job.json"
        job_file.write_bytes(encode(job))
        out = Path(tmp) / "stat.csv"
        cmd = [_perf(), "stat", "-x,", "-o", str(out), *extra, "--", driver, "run", str(job_file)]
        proc = run_tool(cmd, "perf stat", timeout=timeout_s,
                        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", **(env or {})})
        return parse_perf_stat_csv(out.read_text()), driver_result(RunResult, proc.stdout, "perf stat")


def perf_record_top(driver: str, job: DriverJob, event: str, env: dict[str, str] | None = None,
                    timeout_s: float = 900) -> list[tuple[str, float]]:
    """(symbol, share of samples) from `perf record -e EVENT` of one driver run, largest first."""
    with tempfile.TemporaryDirectory(prefix="dbperf-perf-") as tmp:
        job_file = Path(tmp) / "job.json"
        job_file.write_bytes(encode(job))
        data = Path(tmp) / "perf.data"
        run_tool([_perf(), "record", "-q", "-e", event, "-o", data, "--", driver, "run", job_file], "perf record",
                 timeout=timeout_s, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", **(env or {})})
        report = run_tool([_perf(), "report", "-i", data, "--stdio", "--no-children", "--sort", "symbol",
                           "-F", "overhead,sym"], "perf report", timeout=timeout_s).stdout
    return parse_perf_report(report)


def parse_perf_report(text: str) -> list[tuple[str, float]]:
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "%" not in line:
            continue
        share, _, rest = line.partition("%")
        try:
            pct = float(share)
        except ValueError:
            continue
        symbol = rest.strip()
        if symbol.startswith("[") and "]" in symbol:
            symbol = symbol.split("]", 1)[1].strip()
        rows.append((symbol, pct / 100))
    return sorted(rows, key=lambda r: -r[1])


def perf_stat_pids(pids: list[int], events: list[str], during: Callable[[], T],
                   timeout_s: float = 900) -> tuple[PerfStat, T]:
    """`perf stat -x, -e EVENTS -p PIDS` attached to running server processes (children they fork while counted,
    such as PostgreSQL's backends, are inherited) for as long as `during()` runs; stopped with SIGINT, which makes
    perf write its counts."""
    with tempfile.TemporaryDirectory(prefix="dbperf-perf-") as tmp:
        out = Path(tmp) / "stat.csv"
        cmd = [_perf(), "stat", "-x,", "-o", str(out), "-e", ",".join(events), "-p", ",".join(map(str, pids))]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
        try:
            time.sleep(0.5)  # attached before the window opens
            if proc.poll() is not None:
                raise UserError(f"perf stat -p {pids[0]} failed: {tail(proc.stderr.read() if proc.stderr else '', 3)}")
            result = during()
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
        if not out.is_file():
            raise UserError(f"perf stat -p {pids[0]} wrote no counts: {tail(err or '', 3)}")
        return parse_perf_stat_csv(out.read_text()), result
