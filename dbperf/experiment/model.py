"""The experiment as the lab runs it: its targets, benchmarks and settings, typed and checked (the parser,
experiment/spec.py, builds them from an experiment file; everything else reads them). Plain data, no parsing."""

from __future__ import annotations

import os
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from dbperf import engines
from dbperf.catalog.workload import Workload
from dbperf.errors import UserError
from dbperf.experiment.auto_time import AutoTime
from dbperf.experiment.build_variants import BuildSpec, ServerBuildSpec
from dbperf.experiment.keys import DEFAULT_MIN_EFFECT
from dbperf.experiment.load_model import LoadModel
from dbperf.experiment.replication_section import ReplicationSpec
from dbperf.experiment.steady import SteadyState
from dbperf.host.cpus import NOT_PINNED, CpuPlan
from dbperf.host.process_variants import ProcessVariant


def default_sqlite_library() -> str:
    """The system's libsqlite3.so.0 (Debian package libsqlite3-0) for this architecture."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    return f"/usr/lib/{multiarch}/libsqlite3.so.0"


@dataclass(frozen=True)
class Target:
    name: str
    engine: str
    library: str  # for a `source` target: empty until the build lab has built it
    config: dict[str, str] = field(default_factory=dict)
    build: BuildSpec | None = None
    process: ProcessVariant = field(default_factory=ProcessVariant)
    binaries: str | None = None
    release: str | None = None  # servers: the released version (`source = "postgres@16.4"`), fetched before the run
    server_build: ServerBuildSpec | None = None  # servers built from source (`source = "postgres@debian-src"`)
    dsn: str | None = None
    password_env: str | None = None
    password_file: str | None = None
    port: int | None = None
    host: str | None = None  # `dbperf fleet`: the one host this target runs on
    tool: str | None = None  # "sysbench" or "pgbench" runs the cells instead of dbperf-driver (tooldrivers/)
    tool_options: tuple[str, ...] = ()
    socket: bool = False  # lab servers: connect over the Unix socket
    remedies: tuple[str, ...] = ()  # noise remedies applied before each cell (host/remedies/)
    remedies_not_applied: dict[str, str] = field(default_factory=dict)  # [run]'s it cannot take, and why

    @property
    def descriptor(self) -> engines.Engine:
        """The engine's descriptor (its name was checked when the experiment was parsed): what callers ask of the
        engine, rather than comparing its name."""
        return engines.engine(self.engine)

    @property
    def is_server(self) -> bool:
        return self.descriptor.server

    def password(self) -> str | None:
        """An external target's password, from the environment or a file (never from the experiment file)."""
        if self.password_env:
            value = os.environ.get(self.password_env)
            if value is None:
                raise UserError(f"target {self.name!r}: environment variable {self.password_env} is not set")
            return value
        if self.password_file:
            try:
                return Path(self.password_file).read_text().strip()
            except OSError as e:
                raise UserError(f"target {self.name!r}: cannot read password_file: {e.strerror}") from None
        return None

    def settings(self, threads: int) -> list[tuple[str, str]]:
        """Per-connection settings; multi-threaded SQLite defaults to WAL (readers then do not block the writer)."""
        config = dict(self.config)
        if threads > 1 and "journal_mode" not in config:
            config["journal_mode"] = "WAL"
        return list(config.items())


@dataclass(frozen=True)
class FleetSection:
    """`[fleet]`: where `dbperf fleet run` finds its hosts (dbperf/fleet); a local `dbperf run` ignores it."""
    scheduler: str | None = None
    hosts: tuple[str, ...] = ()
    certs: Path | None = None


# order = "slices": each target's turn in the shared driver process. On the host of docs/verdicts.md the A/A spread
# fell with the slice (0.1 s: x0.57, 0.05 s: x0.39, 0.02 s: x0.15-0.22, 0.01 s: x0.16 of two processes').
DEFAULT_SLICE_S = 0.02


@dataclass(frozen=True)
class ProcessCount:
    """`processes`: how many times each lab-started server target is started over a group's rounds, a fixed count
    or "auto" (None): chosen once the run's first group has measured a round (stats/process_level.py
    choose_processes), the same for every group after it, said and kept in meta.json."""
    fixed: int | None = 1

    @property
    def auto(self) -> bool:
        return self.fixed is None

    def restarts(self) -> bool:
        """Whether the servers are started again between blocks of rounds (the verdict's unit the block)."""
        return self.fixed is None or self.fixed > 1

    def __str__(self) -> str:
        return "auto" if self.fixed is None else str(self.fixed)


@dataclass(frozen=True)
class Experiment:
    path: Path
    text: str
    benchmarks: tuple[Workload, ...]
    targets: tuple[Target, ...]
    base: str
    tables: int = 1
    table_size: int = 100_000
    threads: tuple[int, ...] = (1,)
    time_s: float = 10.0  # time = "auto": the pilot rounds' (each group then chooses its own: runner/pilot.py)
    auto_time: AutoTime | None = None  # time = "auto" (experiment/auto_time.py)
    warmup_s: float = 2.0
    repeats: int = 3  # repeats = "auto": the minimum of clean rounds (budget_s is then set)
    seed: int = 1
    aggregate: str = "median"
    prepared: bool = True
    min_effect: float = DEFAULT_MIN_EFFECT
    order: str = "alternate"  # of the targets within a round (runner/rounds.py)
    slice_s: float = DEFAULT_SLICE_S  # order = "slices" (orders/slice_rounds.py)
    turn_checkpoint: bool = False  # order = "slices", write cells: each SQLite target checkpointed in its own turns
    budget_s: float | None = None  # repeats = "auto": the time budget of the measured rounds; None: fixed repeats
    writes: str = "restore"  # or "cumulative": write cells do not restore the loaded data
    post_write: bool = False
    post_write_wait_s: float = 0.0
    fleet: FleetSection | None = None
    cpus: CpuPlan = NOT_PINNED  # where the driver and lab-started servers run (host/cpus.py)
    cpus_setting: object = None  # [run].cpus as written (None: auto): a fleet plans it again with each host's CPUs
    aa_target: str | None = None  # the base's A/A copy (experiment/aa.py), when the run has one
    processes: ProcessCount = ProcessCount()  # a lab-started server's over a group's rounds (stats/process_level.py)
    resources: bool = True  # I/O and engine counters per cell (targets/resources.py)
    load: LoadModel = field(default_factory=LoadModel)  # closed/open loop, time series, percentiles
    steady: SteadyState | None = None  # warm up until the throughput settles (experiment/steady.py)
    replication: ReplicationSpec | None = None  # a [replication] section: the replication lab runs instead
    simulated: bool = False  # the simulated tier after the timed rounds (runner/simulated_tier.py)
    explain: str = "none"  # "disagreements": explained after the run (usecases/explain_run.py)
