"""Reading sysbench's and pgbench's printed results into the lab's RunResult (the same cell record the driver
fills). Only what the tool printed is filled in; what it did not measure is left to the caller to say."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from dbperf.errors import UserError
from dbperf.records import Latency, RunResult, Usage

TOOLS = ("sysbench", "pgbench")
NO_USAGE = Usage(0.0, 0.0, 0, 0)


@dataclass
class ToolOutput:
    """What a tool reported for one run."""
    events: int
    queries: int
    errors: int
    duration_s: float
    latency: Latency
    engine_version: str = ""
    notes: list[str] = field(default_factory=list)

    def result(self, usage: Usage, threads: int, server_usage: Usage | None = None,
               server_processes: int | None = None) -> RunResult:
        d = self.duration_s or 1.0
        return RunResult(qps=self.queries / d, eps=self.events / d, queries=self.queries, errors=self.errors,
                         latency=self.latency, client_usage=usage, events=self.events, threads=threads,
                         duration_s=self.duration_s, engine_version=self.engine_version,
                         server_usage=server_usage, server_processes=server_processes)


def _number(pattern: str, text: str, what: str, tool: str, cast: type = float) -> float:
    m = re.search(pattern, text, re.M)
    if not m:
        raise UserError(f"{tool} output: no {what} found (not a complete {tool} run report?)")
    return cast(m.group(1))


def percentile(values: list[tuple[float, int]], p: float) -> float:
    """The p-th percentile of (value, count) pairs sorted by value (nearest rank)."""
    total = sum(c for _, c in values)
    if not total:
        return 0.0
    rank = max(1, math.ceil(p / 100 * total))
    seen = 0
    for value, count in values:
        seen += count
        if seen >= rank:
            return value
    return values[-1][0]


def parse_sysbench(text: str) -> ToolOutput:
    """sysbench 1.0's final report; latency percentiles from `--histogram` when present (milliseconds)."""
    tool = "sysbench"
    events = int(_number(r"^\s*total number of events:\s+(\d+)", text, "'total number of events'", tool))
    queries = int(_number(r"^\s*queries:\s+(\d+)", text, "'queries'", tool))
    errors = int(_number(r"^\s*ignored errors:\s+(\d+)", text, "'ignored errors'", tool))
    duration = _number(r"^\s*total time:\s+([\d.]+)s", text, "'total time'", tool)
    lat = {k: _number(rf"^\s*{k}:\s+([\d.]+)", text, f"latency {k}", tool) * 1000 for k in ("min", "avg", "max")}
    p95 = re.search(r"^\s*95th percentile:\s+([\d.]+)", text, re.M)
    histogram = [(float(v) * 1000, int(c)) for v, c in
                 re.findall(r"^\s*([\d.]+)\s+\|\**\s+(\d+)\s*$", text, re.M)]
    notes = []
    if histogram:
        p50, p95_us, p99 = (percentile(histogram, p) for p in (50, 95, 99))
        notes.append("percentiles from sysbench's --histogram (its log buckets)")
    else:
        p50 = p99 = 0.0
        p95_us = float(p95.group(1)) * 1000 if p95 else 0.0
        notes.append("no --histogram in the output: p50 and p99 not measured")
    version = re.search(r"^sysbench (\S+)", text, re.M)
    return ToolOutput(events=events, queries=queries, errors=errors, duration_s=duration,
                      latency=Latency(p50_us=p50, p99_us=p99, max_us=lat["max"], min_us=lat["min"],
                                      mean_us=lat["avg"], p95_us=p95_us),
                      engine_version=f"sysbench {version.group(1)}" if version else "", notes=notes)


def parse_pgbench(text: str, queries_per_transaction: int = 1, logs: list[Path] | None = None) -> ToolOutput:
    """pgbench's summary; latency percentiles from its per-transaction logs (`-l`) when given (microseconds)."""
    tool = "pgbench"
    events = int(_number(r"^number of transactions actually processed:\s+(\d+)", text,
                         "'number of transactions actually processed'", tool))
    failed = re.search(r"^number of failed transactions:\s+(\d+)", text, re.M)
    tps = _number(r"^tps = ([\d.]+)", text, "'tps ='", tool)
    mean_ms = re.search(r"^latency average = ([\d.]+) ms", text, re.M)
    duration = events / tps if tps else 0.0
    notes = []
    latencies: list[int] = []
    for log in logs or []:
        for line in log.read_text().splitlines():
            fields = line.split()
            if len(fields) >= 3 and fields[2].isdigit():
                latencies.append(int(fields[2]))
    if latencies:
        latencies.sort()
        counted = [(float(v), 1) for v in latencies]
        p50, p95, p99 = (percentile(counted, p) for p in (50, 95, 99))
        lo, hi = float(latencies[0]), float(latencies[-1])
        notes.append("percentiles from pgbench's per-transaction log (-l)")
    else:
        p50 = p95 = p99 = lo = hi = 0.0
        notes.append("no per-transaction log: only the mean latency was measured")
    version = re.search(r"^pgbench \(PostgreSQL\) (\S+)|^pgbench \(([\d.]+)", text, re.M)
    return ToolOutput(events=events, queries=events * queries_per_transaction,
                      errors=int(failed.group(1)) if failed else 0, duration_s=duration,
                      latency=Latency(p50_us=p50, p99_us=p99, max_us=hi, min_us=lo,
                                      mean_us=float(mean_ms.group(1)) * 1000 if mean_ms else 0.0, p95_us=p95),
                      engine_version=f"pgbench {version.group(1) or version.group(2)}" if version else "",
                      notes=notes)


def script_queries(script: str) -> int:
    """SQL commands of a pgbench script (meta-commands starting with a backslash excluded): BEGIN and COMMIT count,
    as sysbench counts them."""
    text = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith(("\\", "--")))
    return max(1, sum(1 for part in text.split(";") if part.strip()))
