"""Resources per query beyond CPU (the harness reports I/O per operation and database size next to CPU and
context switches; BenchBase users want engine counters aligned with throughput).

The lab samples at two instants per cell, both inside the driver's measured window as scheduled from the driver's
launch: S0 = launch + warmup, S1 = launch + warmup + time (the driver opens its window after connecting, so its
window starts a few milliseconds after S0 and ends after S1). At each instant, in this order: /proc/PID/io of the
driver process and of every process of a lab-started server (the server's pid and its descendants: PostgreSQL's
backends, MariaDB's one process), /proc/diskstats of the block device holding the data, then the engine's
counters (PostgreSQL pg_stat_database, pg_stat_bgwriter and from 14 pg_stat_wal; MariaDB SHOW GLOBAL STATUS) and,
at S1 only for the record, nothing else. Per query = delta / (QPS × (S1 − S0)), QPS being the driver's.
With a steady-state warm-up (experiment/steady.py) only the driver knows when its window opens: S0 is taken when
it says so (host/window_opens.py) and S1 `time` after the instant it gave.

Limits, said in each record's `method` and `unavailable`: the device figures are host-wide (every process writing
to that disk); PostgreSQL backends publish their statistics at most once a second, so its counters lag by up to a
second at both ends (a steady cell's delta is right, a 1-second cell's is rough); counters that the server does not
have are absent, never zero."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from dbperf import engines
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.host import procfs
from dbperf.host.procfs import children_named, process_tree
from dbperf.host.window_opens import WindowOpens
from dbperf.records import DeviceIo, IoBytes, Resources, RunResult, SlicesResult
from dbperf.servers.sql_query import client_available, query
from dbperf.targets.lifecycle import TargetLifecycle

IO_FIELDS = ("read_bytes", "write_bytes", "rchar", "wchar")
SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own size
METHOD = "lab samples at launch+warmup and +time; per query = delta / (QPS × window)"
STEADY_METHOD = ("lab samples when the driver's steady-state warm-up ended and time after; per query = delta / "
                 "(QPS × window)")
SLICES_METHOD = ("the slices process's window, shared by its sides: lab samples at launch + every side's warmup and "
                 "+ every side's time; per query = delta / (all sides' QPS × window)")
SLICES_SERVER_METHOD = ("a server side of a slices process: its own server's I/O and counters over the process's "
                        "window (lab samples at launch + every side's warmup and + every side's time), its background "
                        "work during the other sides' slices included; per query = delta / this side's queries")
# A server side of a slices process: what is not its own server's is not its own.
NOT_THIS_SIDES = {"client_io": "the slices process's driver serves every side: its I/O is not one side's",
                  "device": "host-wide, written by every side's server in the slices process"}


def proc_io(pid: int) -> dict[str, int] | None:
    return procfs.proc_io(pid, IO_FIELDS)


def tree_io(root: int) -> dict[int, dict[str, int]]:
    return {pid: io for pid in process_tree(root) if (io := proc_io(pid)) is not None}


def device_of(path: Path) -> str | None:
    """The /proc/diskstats name of the block device holding `path`, or None (tmpfs, overlay, ...)."""
    try:
        dev = path.stat().st_dev
    except OSError:
        return None
    want = (os.major(dev), os.minor(dev))
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if len(f) > 3 and (int(f[0]), int(f[1])) == want:
            return f[2]
    return None


def diskstats(device: str) -> dict[str, int] | None:
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if len(f) > 9 and f[2] == device:
            return {"reads": int(f[3]), "read_bytes": int(f[5]) * SECTOR_BYTES, "writes": int(f[7]),
                    "write_bytes": int(f[9]) * SECTOR_BYTES}
    return None


def engine_counters(server: Any) -> dict[str, float]:
    """The engine's cumulative counters, by name (`server` is a servers.lifecycle.ServerTarget)."""

    counters = engines.engine(server.engine).counters_query
    if counters is None:
        return {}
    sql, names = counters(getattr(server, "major", 15))
    rows = query(server, sql, server.work_db)
    if names is None:  # (name, value) rows
        return {name: float(value) for name, value in rows}
    return {n: float(v) for n, v in zip(names, rows[0], strict=True) if v != ""} if rows else {}


def database_bytes(target: Target, data: TargetLifecycle) -> int | None:
    """The working database's size as the engine keeps it: SQLite's file (and WAL), PostgreSQL's
    pg_database_size, MariaDB's files of the sbtest schema (a lab server), or the data + index length of its tables
    (an external server: InnoDB's estimate, refreshed when its statistics are). None where unreadable."""
    try:
        if not target.is_server:
            database = Path(data.working_job().database)
            return sum(p.stat().st_size for p in (database, Path(f"{database}-wal")) if p.exists())
        if not client_available(target.engine):
            return None
        server: Any = data
        data_dir = data.describe().get("data_dir")
        kind = target.descriptor
        if kind.schema_dir and data_dir:
            schema_dir = Path(data_dir) / kind.schema_dir
            return sum(p.stat().st_size for p in schema_dir.iterdir() if p.is_file())
        rows = query(server, kind.size_sql, server.work_db)
        return int(rows[0][0]) if rows else None
    except (UserError, OSError, ValueError):
        return None


class CellSampler:
    """Samples one cell (see the module's docstring): `start()` right before the driver is launched, `finish()`
    right after it exited."""

    def __init__(self, e: Experiment, target: Target, data: TargetLifecycle, client: str = "dbperf-driver") -> None:

        self.e = e
        self.client = client  # the command name of the process that runs the cell, found among the lab's children
        self.client_pid: int | None = None  # or its pid, when the caller knows it (tooldrivers/run.py)
        self.unavailable: dict[str, str] = {}
        facts = data.describe()
        self.server_pid: int | None = facts.get("server_pid") if target.is_server else None
        if target.is_server and self.server_pid is None:
            self.unavailable["server_io"] = "an external server's processes are not on this host's /proc"
        where = Path(facts["data_dir"]) if facts.get("data_dir") else (
            None if target.is_server else Path(data.working_job().database).parent)
        self.device = device_of(where) if where else None
        if self.device is None:
            self.unavailable["device"] = (f"{where} is not on a block device listed in /proc/diskstats" if where
                                          else "an external server's data directory is not known")
        self.server = data if target.is_server else None
        if self.server is not None and not client_available(target.engine):
            self.unavailable["engine_counters"] = f"the {target.engine} command-line client is not installed"
            self.server = None
        self.samples: list[dict[str, Any]] = []
        self.method = METHOD
        self.own_server_only = False  # a server side of a slices process (slices_side)
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self, warmup_s: float | None = None, time_s: float | None = None,
              opens: WindowOpens | None = None) -> None:
        """Right before the launch; a tool's measured run has no warmup of its own and lasts whole seconds. With a
        steady-state warm-up (`opens`), S0 is when the driver says its window opened and S1 `time` after."""
        launched = time.monotonic()
        warmup = self.e.warmup_s if warmup_s is None else warmup_s
        measured = self.e.time_s if time_s is None else time_s
        at = (launched + warmup, launched + warmup + measured)
        self.method = METHOD if opens is None else STEADY_METHOD
        self.thread = threading.Thread(target=self._run, args=(at, opens, measured), daemon=True, name="resources")
        self.thread.start()

    def slices_side(self) -> None:
        """Before start(): a server side of a slices process samples its own server only (its I/O and counters),
        not the shared driver nor the host's device, whose figures are every side's."""
        self.own_server_only = True
        self.device = None
        self.unavailable.update(NOT_THIS_SIDES)

    def _run(self, at: tuple[float, float], opens: WindowOpens | None = None, measured: float = 0.0) -> None:
        if opens is not None:
            opened = opens.wait()
            if opened is None:
                return  # the driver ended without opening its window
            at = (opened, opened + measured)
        for instant in at:
            if self.stop.wait(max(0.0, instant - time.monotonic())):
                return  # the driver ended before this instant: no window
            try:
                self.samples.append(self._sample())
            except (UserError, OSError) as err:
                self.unavailable.setdefault("engine_counters", str(err))
                self.samples.append({"t": time.monotonic()})

    def _sample(self) -> dict[str, Any]:
        sample: dict[str, Any] = {"t": time.monotonic()}
        drivers = [] if self.own_server_only else [self.client_pid] if self.client_pid else children_named(self.client)
        if len(drivers) == 1:
            sample["client"] = {drivers[0]: proc_io(drivers[0])}
        if self.server_pid:
            sample["server"] = tree_io(self.server_pid)
        if self.device:
            sample["device"] = diskstats(self.device)
        if self.server is not None and "engine_counters" not in self.unavailable:
            sample["counters"] = engine_counters(self.server)
        return sample

    def finish(self, result: RunResult | SlicesResult | None, queries: int | None = None) -> Resources | None:
        self.stop.set()
        if self.thread:
            self.thread.join(timeout=300)
        return self.resources(result, queries)

    def resources(self, result: RunResult | SlicesResult | None, queries: int | None = None) -> Resources | None:
        """The cell's resources from the samples taken (None without both, or without a result); a slices run's are
        its whole process's, every side's queries together, unless `queries` says the side's own (a server side:
        slices_side)."""
        if result is None or len(self.samples) < 2 or result.qps <= 0 or queries == 0:
            return None
        s0, s1 = self.samples
        window = s1["t"] - s0["t"]
        unavailable = dict(self.unavailable)
        return Resources(
            window_s=round(window, 4), queries=round(result.qps * window if queries is None else queries, 1),
            method=self.method,
            client_io=None if self.own_server_only else _io_delta(s0.get("client"), s1.get("client"), unavailable,
                                                                  "client_io"),
            server_io=_io_delta(s0.get("server"), s1.get("server"), unavailable, "server_io")
            if self.server_pid else None,
            device=_device_delta(self.device, s0.get("device"), s1.get("device")),
            engine_counters={k: v - s0["counters"][k] for k, v in s1.get("counters", {}).items()
                             if k in s0.get("counters", {})},
            unavailable=unavailable)


def _io_delta(before: dict[int, dict[str, int] | None] | None, after: dict[int, dict[str, int] | None] | None,
              unavailable: dict[str, str], what: str) -> IoBytes | None:
    """Summed over the processes alive at both instants (a process born in between counts from zero)."""
    if not after:
        unavailable.setdefault(what, "no process to sample")
        return None
    before = before or {}
    total = dict.fromkeys(IO_FIELDS, 0)
    for pid, io in after.items():
        if io is None:
            continue
        base = before.get(pid) or dict.fromkeys(IO_FIELDS, 0)
        for k in IO_FIELDS:
            total[k] += max(0, io.get(k, 0) - base.get(k, 0))
    return IoBytes(**total, processes=len(after))


def _device_delta(device: str | None, before: dict[str, int] | None, after: dict[str, int] | None) -> DeviceIo | None:
    if device is None or before is None or after is None:
        return None
    return DeviceIo(device=device, **{k: after[k] - before[k] for k in after})
