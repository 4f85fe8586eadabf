"""The typed records that cross a boundary as JSON: the job handed to dbperf-driver and the results it prints
(mirroring driver/src/job.rs), a line of results.jsonl, and a counters profile. Each is decoded and checked once,
where the JSON enters Python (host/driver.py, storage/results.py); everything after reads attributes.

msgspec does the decoding and the checks: a wrong type or a missing field is a ValidationError naming the path
(`$.result.qps`). Fields a newer driver or lab adds are ignored by an older reader; fields added over time carry
defaults, so that results directories written before them still read.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from dbperf.errors import UserError

Mode = Literal["run", "load", "exec"]

# A rate, a time or a count a report divides and ranks by: a negative one is a hand-edited or damaged line, never a
# measurement (msgspec checks it where the JSON is decoded: `Expected `float` >= 0.0 - at `$.result.qps``). Not
# the server's CPU: its process-tree deltas can dip when a process exits between two samples.
Rate = Annotated[float, msgspec.Meta(ge=0)]
Count = Annotated[int, msgspec.Meta(ge=0)]


class SteadyJob(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A steady-state warm-up (driver/src/steady.rs `SteadyJob`; experiment/steady.py builds it): the warm-up lasts
    until the last `window` samples of `interval_s` agree within `tolerance` ((max - min) / mean), at least the
    job's warmup_s and at most max_warmup_s."""
    tolerance: float
    window: int
    interval_s: float
    max_warmup_s: float


class SliceSide(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """One side of a slices run (driver/src/job.rs `SliceSide`): a SQLite library file no other side loads, its
    database and its per-connection settings; or a server of its own: its engine, DSN, the lab's pid of it (whose
    processes' CPU is measured) and the environment variable holding its password (each server has its own)."""
    library: str = ""
    database: str = ""
    settings: list[tuple[str, str]] = []
    engine: str | None = None  # server sides; None: the job's engine
    dsn: str | None = None
    server_pid: int | None = None
    password_env: str | None = None  # the variable's name: the password itself travels in the environment only


class DriverJob(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """What one driver process does (driver/src/job.rs `Job`). Defaults are the driver's, and are not sent; the
    mode has none, so that it is always sent (the driver requires it)."""
    mode: Mode
    engine: str
    tables: int
    table_size: int
    library: str = ""  # embedded engines: the shared library
    database: str = ""  # embedded engines: the database file
    dsn: str | None = None  # servers; the password travels in the environment only
    server_pid: int | None = None  # servers the lab started: whose processes' CPU is measured
    password_env: str | None = None  # servers: the variable holding the password; None: DBPERF_PASSWORD
    settings: list[tuple[str, str]] = []
    busy_timeout_ms: int = 10_000
    threads: int = 1
    time_s: float = 0.0
    warmup_s: float = 0.0
    seed: int = 0
    prepared: bool = True
    events: int | None = None  # exactly this many events per thread, no warmup (profilers)
    deterministic: bool = False  # no timing figures, so that instruction counts repeat
    request_pause_us: int = 0  # servers, counted runs: sleep before each request so the server waits for it
    thp_disable: bool = False
    page_cache_slots: int = 0  # SQLite: its page cache from one preallocated buffer of this many slots (0: malloc)
    page_cache_huge: bool = False  # that buffer on transparent huge pages
    # The load model (dbperf/runner/load_model.py); defaults equal the driver's.
    interval_s: float = 1.0  # time series interval; 0: none
    percentiles: tuple[float, ...] = (50.0, 95.0, 99.0, 99.9)
    rate: float | None = None  # open loop: events/s of the cell; None: closed loop
    arrivals: Literal["uniform", "poisson"] = "uniform"
    latency_limit_s: float | None = None
    steady: SteadyJob | None = None  # warm up until the throughput settles; warmup_s is then the least warm-up
    window_fd: int | None = None  # steady: the pipe on which the driver says that its measured window opens
    start_fd: int | None = None  # duet: the socket on which the driver says ready and waits for the start (duet.py)
    # Slices (orders/slice_rounds.py): every side of one driver process, taking turns every slice_s; the job's own
    # library, database and settings then stay empty
    slices: list[SliceSide] | None = None
    slice_s: float = 0.02
    turn_checkpoint: bool = False  # slices of SQLite: each side's WAL checkpointed at the start of its own turns
    workload: dict[str, Any] | None = None  # mode run: catalog.workload.compile_statements
    schema: dict[str, Any] | None = None  # mode load: catalog.schema.sbtest
    statements: list[str] = []  # mode exec

    def replace(self, **changes: Any) -> DriverJob:
        """This job with some fields changed (a job is built once per target, then varied per mode and cell)."""
        return msgspec.structs.replace(self, **changes)


class Usage(msgspec.Struct, frozen=True):
    """getrusage-style CPU (microseconds) and context switches of a process (tree) over the measured phase."""
    user_us: float
    system_us: float
    voluntary_cs: int
    involuntary_cs: int

    @property
    def cpu_us(self) -> float:
        return self.user_us + self.system_us

    @property
    def cs(self) -> int:
        return self.voluntary_cs + self.involuntary_cs


class Percentile(msgspec.Struct, frozen=True):
    p: float  # e.g. 99.9
    us: float


class Latency(msgspec.Struct, frozen=True):
    """Event latency in microseconds: start to end (closed loop), or scheduled start to end (open loop)."""
    p50_us: Rate
    p99_us: Rate
    max_us: Rate
    min_us: Rate = 0.0
    mean_us: Rate = 0.0
    p95_us: Rate = 0.0
    percentiles: list[Percentile] = []  # those `[run] percentiles` asked for

    def at(self, p: float) -> float | None:
        return next((x.us for x in self.percentiles if x.p == p), None)


class Interval(msgspec.Struct, frozen=True):
    """One interval of a cell's time series (sysbench --report-interval, pgbench -P); events are counted in the
    interval they ended in."""
    t_s: float  # end of the interval, seconds from the start of the measured window
    duration_s: Rate
    events: Count
    queries: Count
    errors: Count
    eps: Rate
    qps: Rate
    p50_us: Rate
    p95_us: Rate
    p99_us: Rate
    max_us: Rate
    skipped: int | None = None  # open loop
    lag_max_us: float | None = None  # open loop: longest wait from scheduled to actual start


class Histogram(msgspec.Struct, frozen=True):
    """Every counted event's latency: HdrHistogram's V2 compressed encoding, base64 (decoded by
    dbperf/report/histogram.py, and by HdrHistogram's own tools)."""
    format: str
    unit: str
    data: str


class StatementLatency(msgspec.Struct, frozen=True):
    """One statement of a multi-statement event (pgbench -r); BEGIN and COMMIT included."""
    event: str
    sql: str
    executions: int
    mean_us: float
    max_us: float


class MixCount(msgspec.Struct, frozen=True):
    event: str
    weight: float
    events: int


class OpenLoop(msgspec.Struct, frozen=True):
    """An open-loop cell: the rate asked for and what the target did with it."""
    rate_asked: Rate
    arrivals: str
    rate_achieved: Rate
    backlog_events: int  # due in the window, never started: the queue left over
    skipped: int  # past latency_limit when due (pgbench -L)
    late: int  # completed slower than latency_limit
    latency_limit_us: float | None
    lag_mean_us: float
    lag_max_us: float
    sustained: bool


class SteadyOutcome(msgspec.Struct, frozen=True):
    """How a steady-state warm-up ended (driver/src/steady.rs `SteadyReport`)."""
    settled: bool  # False: max_warmup was reached first
    spread: float | None  # (max - min) / mean of the last `window` samples then; None: too few, or nothing completed
    tolerance: float
    window: int
    interval_s: float
    max_warmup_s: float
    samples_eps: list[float] = []  # the warm-up's throughput, events/s of all threads, one per interval


class ProcessFacts(msgspec.Struct, frozen=True):
    """What the driver found in its own process: allocators mapped, huge pages."""
    allocators_mapped: list[str] = []
    anon_huge_kb: int | None = None
    thp_disabled: bool = False
    cpus: list[int] = []  # the driver's CPU affinity at the end of the run (empty: an older driver)


class PageCacheFacts(msgspec.Struct, frozen=True):
    """SQLite's page cache buffer as the driver configured it (driver/src/engine/page_cache.rs) and used it."""
    slots: int
    slot_bytes: int
    huge: bool
    huge_kb: int | None = None  # AnonHugePages of the buffer's mapping at the end of the run
    used_slots_high: int | None = None  # SQLITE_STATUS_PAGECACHE_USED's high-water mark
    overflow_bytes_high: int | None = None  # SQLITE_STATUS_PAGECACHE_OVERFLOW's: bytes that went to malloc


class TurnStalls(msgspec.Struct, frozen=True):
    """A slices side's time outside its own slices (driver/src/stalls.rs), over its measured slices, all threads:
    how far its events ran past the end of the slice they started in (time taken from the next target's turn), and
    the checkpoints it ran at the start of its own turns (`turn_checkpoint`)."""
    spill_s: Rate = 0.0
    spill_max_s: Rate = 0.0
    spills: Count = 0  # slice ends one of its events ran over by more than 1 ms: a stall, not an event in flight
    turn_checkpoint: bool = False
    checkpoints: Count = 0
    checkpoint_s: Rate = 0.0
    checkpoint_max_s: Rate = 0.0


class RunResult(msgspec.Struct, frozen=True):
    """The driver's result of mode run."""
    qps: Rate
    eps: Rate
    queries: Count
    errors: Count
    latency: Latency
    client_usage: Usage
    events: Count = 0
    rows: Count = 0
    engine_version: str = ""
    threads: int = 1
    duration_s: Rate = 0.0
    error_samples: list[str] = []
    process: ProcessFacts = ProcessFacts()
    page_cache: PageCacheFacts | None = None  # SQLite with a page cache buffer (remedy pagecache-buffer)
    server_usage: Usage | None = None  # servers the lab started: their process tree
    server_processes: int | None = None
    intervals: list[Interval] = []  # the time series, per interval_s of the measured window
    interval_s: Rate = 0.0
    histogram: Histogram | None = None
    statements: list[StatementLatency] = []  # multi-statement events only
    mix: list[MixCount] = []  # weighted mixes only
    open_loop: OpenLoop | None = None
    warmup_s: Rate | None = None  # start to measured window, as the driver timed it (None: an older driver)
    steady: SteadyOutcome | None = None  # steady-state warm-ups only
    window_start_unix_s: float | None = None  # wall clock when the measured window opened (None: an older driver)
    turns: TurnStalls | None = None  # a slices side (None: another order, or an older driver)

    @property
    def unsettled(self) -> bool:
        """A steady-state warm-up that reached max_warmup without settling."""
        return self.steady is not None and not self.steady.settled


class SlicesResult(msgspec.Struct, frozen=True):
    """The driver's result of a slices run (driver/src/slices.rs): the process as a whole, and per side (in the
    job's order) an ordinary run's result over that side's own slices."""
    slice_s: Rate
    threads: int
    duration_s: Rate  # the process's measured window: every side's time
    warmup_s: Rate  # start to the measured window: every side's warm-up
    window_start_unix_s: float
    client_usage: Usage  # the whole process over its measured window (every side)
    process: ProcessFacts
    sides: list[RunResult]

    @property
    def qps(self) -> float:
        """Queries per second of the process's window, every side's together (what its I/O is divided by)."""
        return sum(s.queries for s in self.sides) / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def server_usage(self) -> Usage | None:
        """Every side's server over the process's window, together (what the lab's noise sensors count as its own);
        None where no side has a server the lab measures (SQLite sides run inside the driver)."""
        usages = [s.server_usage for s in self.sides if s.server_usage is not None]
        if not usages:
            return None
        return Usage(user_us=sum(u.user_us for u in usages), system_us=sum(u.system_us for u in usages),
                     voluntary_cs=sum(u.voluntary_cs for u in usages),
                     involuntary_cs=sum(u.involuntary_cs for u in usages))


class LoadResult(msgspec.Struct, frozen=True):
    engine_version: str
    tables: int
    rows: int
    seconds: float


class ExecResult(msgspec.Struct, frozen=True):
    engine_version: str


class LibraryInfo(msgspec.Struct, frozen=True):
    """`dbperf-driver info ENGINE LIBRARY`."""
    engine_version: str
    threadsafe: bool  # sqlite3_threadsafe() != 0


RESULT_OF_MODE: dict[str, type[RunResult] | type[LoadResult] | type[ExecResult]] = {
    "run": RunResult, "load": LoadResult, "exec": ExecResult}


class TopFunction(msgspec.Struct, frozen=True):
    function: str
    per_query: float | None  # None where only a share was sampled
    share: float


class Slowdown(msgspec.Struct, frozen=True):
    native_s: float | None  # None where the native run was not timed (server profiles)
    simulated_s: float
    factor: float | None
    what: str


class Profile(msgspec.Struct, omit_defaults=True):
    """Counters per query of the measured phase of one (target, benchmark), and its per-function split."""
    mode: Literal["simulated", "hardware"]
    mode_reason: str
    tool: str
    target: str
    benchmark: str
    events: int
    queries: int
    method: str
    per_query: dict[str, float]
    functions: dict[str, dict[str, float]] = {}  # per query, kept for diffs
    threads: int = 1
    top_by_instructions: list[TopFunction] = []
    top_by_cycles: list[TopFunction] = []
    top_by_i1_misses: list[TopFunction] = []
    slowdown: Slowdown | None = None  # simulated
    unsupported_events: list[str] = []  # hardware: events this PMU does not count
    topdown_l1: dict[str, Any] | None = None  # hardware

    @property
    def cost_key(self) -> str:
        """The per-function cost a diff ranks by."""
        return "instructions" if self.mode == "simulated" else "cycles"


class NoiseSensors(msgspec.Struct, frozen=True):
    """What else the host did over a cell's measured window (host/noise.py)."""
    window_s: float
    cpus: list[int]  # the CPUs the cell's processes ran on (all the lab may use when not pinned)
    steal: float  # share of those CPUs' time stolen by the hypervisor
    foreign_cpu: float  # CPUs' worth used on those CPUs by processes that are not the lab's
    host_foreign_cpu: float = 0.0  # the same over every CPU of the host
    lab_cpu: float = 0.0  # CPUs' worth the lab's processes used
    freq_mhz: float | None = None
    freq_source: str = ""
    interfered: bool = False  # heavy interference: flagged in reports, its round repeated under repeats = "auto"


# --- Resources per query (targets/resources.py): sampled by the lab, not the driver. ---

class IoBytes(msgspec.Struct, frozen=True):
    """/proc/PID/io deltas: read_bytes/write_bytes reached the storage layer; rchar/wchar are every read()- and
    write()-family call, sockets and the page cache included."""
    read_bytes: int = 0
    write_bytes: int = 0
    rchar: int = 0
    wchar: int = 0
    processes: int = 1


class DeviceIo(msgspec.Struct, frozen=True):
    """/proc/diskstats deltas of the block device holding the data (host-wide: every process on that device)."""
    device: str
    read_bytes: int = 0
    write_bytes: int = 0
    reads: int = 0
    writes: int = 0


class Resources(msgspec.Struct, frozen=True, omit_defaults=True):
    """What one cell cost beyond CPU, over the lab's sampling window; per query = delta / queries."""
    window_s: float
    queries: float  # QPS × window_s
    method: str
    client_io: IoBytes | None = None
    server_io: IoBytes | None = None
    device: DeviceIo | None = None
    engine_counters: dict[str, float] = {}  # deltas over the window (PostgreSQL pg_stat_*, MariaDB SHOW STATUS)
    unavailable: dict[str, str] = {}  # figure -> why it was not measured


class SlicesSide(msgspec.Struct, frozen=True, omit_defaults=True):
    """A cell measured as one side of a slices run (`order = "slices"`, orders/slice_rounds.py): every target of its
    round took turns in one driver process, every `slice_s`. Its result is its own slices only; its noise sensors are
    the shared process's window (every side's record carries the same), and so are its resources for SQLite sides; a
    server side's server usage and resources are its own server's over that whole window."""
    slice_s: float
    sides: int  # the targets that took turns in the process
    position: int  # this target's side: 1 = the one that had slice 0
    process: str  # the same for every side of one driver process: "BENCHMARK/tTHREADS/rROUND"
    targets: list[str] = []  # the sides' targets, in slice order
    pid: int | None = None  # the driver process (None: it never started)
    library: str | None = None  # the copy of the target's library this side loaded (A/A: two targets, one file)


class CellRecord(msgspec.Struct, omit_defaults=True):
    """One measured repeat of one (target, benchmark, threads) cell: a line of results.jsonl."""
    target: str
    benchmark: str
    threads: int
    repeat: int
    status: str  # "ok" or "failed"
    started_at: float = 0.0
    wall_s: Rate = 0.0
    queries_per_event: int = 1
    rows_per_event: int | None = None  # rows an event scans, for rows/s (range scans over the whole table)
    result: RunResult | None = None
    error: str | None = None
    stderr_tail: str | None = None
    server_log_tail: str | None = None
    server_restarted_before: bool = False
    position: int | None = None  # the target's place within its round (repeat): 1 = first; None before it was kept
    host: str | None = None  # `dbperf fleet`: the host that measured it (None: a local run)
    noise: NoiseSensors | None = None  # None: measured before the sensors existed, or nothing measured
    resources: Resources | None = None  # I/O and engine counters (targets/resources.py)
    tool: str | None = None  # "sysbench" or "pgbench" ran this cell instead of dbperf-driver
    imported: bool = False  # read from saved tool output (dbperf import): its CPU was never measured
    # Duet runs (`order = "duet"`): the target measured at the same moment on the other CPU. The base runs
    # once per other target in a round, so a base record is told apart by its partner. None: not a duet.
    partner: str | None = None
    cpus: list[int] | None = None  # the CPUs the cell's driver was pinned to (None: not pinned)
    # The noise remedies applied before the cell (host/remedies/), each with what the lab saw of it.
    remedies: dict[str, dict[str, Any]] | None = None
    slices: SlicesSide | None = None  # measured as one side of a slices process (`order = "slices"`); None: not
    # `processes = P`: the block of the group's rounds whose server processes measured it (1..; the lab restarted
    # its server targets between blocks, stats/process_level.py); None: one process a target for the whole run
    process: int | None = None
    type: Literal["cell"] = "cell"  # omitted when written: cell lines predate the type field

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.result is not None


class CountersRecord(msgspec.Struct, omit_defaults=True):
    """The counters of one (target, benchmark), measured after the timed cells (`run --profile`)."""
    type: Literal["counters"]
    target: str
    benchmark: str
    counters: Profile | None = None
    error: str | None = None


class SimulatedRecord(msgspec.Struct, omit_defaults=True):
    """The simulated tier (`simulated = true`, runner/simulated_tier.py) of one (target, benchmark): instructions and
    estimated cycles per query under cachegrind, one thread, measured once after the timed cells. Its own type, not
    `counters`: `run --profile` may count with hardware counters, and the two must not replace one another."""
    type: Literal["simulated"]
    target: str
    benchmark: str
    tier: str  # what measured it, as every view labels it (runner/simulated_tier.py TIER)
    per_query: dict[str, float] = {}  # explain/profile.py simulated_per_query(): instructions, estimated_cycles, ...
    queries: int | None = None  # queries in the profiled phase
    method: str | None = None
    seconds: float | None = None  # wall time of the measurement (both cachegrind runs)
    reused_from: str | None = None  # an identical target's profile (same library, settings, process variant)
    error: str | None = None  # the figure is missing: why

    @property
    def instructions(self) -> float | None:
        return self.per_query.get("instructions")

    @property
    def estimated_cycles(self) -> float | None:
        return self.per_query.get("estimated_cycles")


class CostModelRecord(msgspec.Struct, frozen=True, omit_defaults=True):
    """A cost model calibrated on one host (`dbperf calibrate`, stats/cost_fit.py): non-negative nanoseconds of
    user CPU per simulated event, fitted on (SQLite build x benchmark) cells whose user CPU per query was measured on
    that host, and validated by leaving one build out at a time. A run with the simulated tier copies the host's model
    into its results.jsonl (so its report reads the same prediction on any machine); stats/cost_model.py predicts
    with it. `version` is the format's; a model of another version is not used."""
    type: Literal["cost_model"]
    version: int
    host: dict[str, str]  # cpu_model, microcode, kernel: the model is this host's only
    created: str  # ISO time of the fit
    weights_ns: dict[str, float]  # simulated per-query counter name (explain/profile.py) -> ns per event, >= 0
    intercept_ns: float = 0.0  # per-query cost no counter explains (>= 0)
    r2: float | None = None  # of the level (user CPU µs per query), on all cells
    change_error_median: float | None = None  # |predicted - measured| change vs the base, left-out builds only
    change_error_p90: float | None = None  # the band a prediction is quoted with
    level_error_median: float | None = None  # relative, left-out builds only
    level_error_p90: float | None = None
    cells: int = 0
    builds: list[str] = []
    benchmarks: list[str] = []
    base: str | None = None  # the build every change was measured against
    quick: bool = False  # `calibrate --quick`: fewer cells
    source: str | None = None  # the calibration run's results directory
    # What the model predicts: "user", user CPU per query (levels, from the counts alone); "total", user + system CPU
    # per query as a difference over the base's measured level (the kernel's work, which no simulated count sees and
    # a build does not change, cancels in the difference; stats/cost_model.py)
    measure: str = "user"


# --- Replication lab (dbperf/replication/): its records in results.jsonl -------------------------------------------

class LagSample(msgspec.Struct, frozen=True):
    """The PostgreSQL apply study's replay lag at one moment (pg_apply.py): seconds since the load started, the
    phase ("load": replay paused while the primary writes; "apply": replay resumed), WAL bytes the standby has not
    replayed / not received (primary's pg_current_wal_lsn minus its pg_last_wal_replay_lsn / receive_lsn), and the
    primary's pg_stat_replication.replay_lag (seconds; None while the standby has reported none)."""
    t_s: float
    phase: str
    replay_behind_bytes: int
    receive_behind_bytes: int
    replay_lag_s: float | None = None


class ApplyRecord(msgspec.Struct, omit_defaults=True):
    """One timed catch-up of a replica (the apply-rate study): the primary wrote `transactions` while the replica's
    SQL thread was stopped (its I/O thread fetched them), then the SQL thread was started and timed until it had
    applied the primary's last GTID."""
    type: Literal["replication_apply"]
    replica: str
    benchmark: str  # the write load on the primary (a catalog workload)
    client_threads: int
    workers: int  # slave_parallel_threads (0: the single SQL thread)
    mode: str  # slave_parallel_mode ("serial" when workers = 0)
    durability: str
    commit_wait_count: int  # binlog_commit_wait_count on the primary
    commit_wait_usec: int
    repeat: int
    status: str  # "ok" or "failed"
    transactions: Count = 0  # GTIDs the primary wrote (its gtid_binlog_pos before and after)
    primary_s: Rate = 0.0
    primary_trx_per_s: Rate = 0.0
    apply_s: Rate = 0.0
    trx_per_s: Rate = 0.0
    error: str | None = None
    server_log_tail: str | None = None
    started_at: float = 0.0
    # The cross-engine study (replicated tables in `table_engine`): where the replica's GTID state is kept
    # ("innodb": mysql.gtid_slave_pos in InnoDB, a cross-engine commit; "auto": gtid_pos_auto_engines; "rocksdb").
    state_engine: str = ""
    table_engine: str = ""
    # PostgreSQL: WAL the load generated (bytes) and the replay lag over the measurement (sampled every 0.1 s).
    wal_bytes: int = 0
    lag_series: list[LagSample] | None = None
    resume_delay_s: float | None = None  # pg_wal_replay_resume() until replay was seen moving (not in apply_s)
    # The settings the measurement ran with, as SHOW VARIABLES read them back after they were set (MariaDB, MySQL):
    # {"primary": the group-commit wait, "replica": its durability and parallel apply}.
    variables: dict[str, dict[str, str]] | None = None
    # The primary's binlog group-commit counters over the load (SHOW GLOBAL STATUS after less before; MariaDB:
    # Binlog_commits, Binlog_group_commits, and the groups closed by the wait's count, its timeout or a lock wait).
    primary_group_commit: dict[str, int] | None = None

    @property
    def commits_per_group(self) -> float | None:
        """The primary's mean binlog group over the load: what the replica's conservative workers can apply in
        parallel, and whether a group-commit wait's count was reached."""
        c = self.primary_group_commit or {}
        groups = c.get("Binlog_group_commits", 0)
        return round(c.get("Binlog_commits", 0) / groups, 2) if groups else None


class WaitLatency(msgspec.Struct, frozen=True):
    p50_us: Rate
    p95_us: Rate
    p99_us: Rate
    max_us: Rate
    mean_us: Rate


class StaleReadsResult(msgspec.Struct, frozen=True):
    """What `dbperf-driver stale-reads` prints (driver/src/stale/)."""
    reads: int
    stale: int
    wait_timeouts: int
    write_latency: WaitLatency
    read_latency: WaitLatency
    background_transactions: Count
    background_trx_per_s: Rate
    elapsed_s: Rate
    wait_latency: WaitLatency | None = None
    gtid_fetch_latency: WaitLatency | None = None


class StaleReadsRecord(msgspec.Struct, omit_defaults=True):
    """One run of the stale-read probe: without or with MASTER_GTID_WAIT before each replica read."""
    type: Literal["replication_stale_reads"]
    wait: bool
    reads: int
    background_threads: int
    status: str
    background_rate: float = 0.0  # their total rate, trx/s (0: unthrottled)
    durability: str = ""  # the replicas' settings during the probe
    workers: int = 0
    mode: str = ""
    result: StaleReadsResult | None = None
    error: str | None = None
    server_log_tail: str | None = None
    started_at: float = 0.0
    repeat: int = 1  # of the section's `repeats`


REPLICATION_RECORDS: dict[str, type[ApplyRecord] | type[StaleReadsRecord]] = {
    "replication_apply": ApplyRecord, "replication_stale_reads": StaleReadsRecord}


ResultsRecord = CellRecord | CountersRecord | SimulatedRecord | CostModelRecord | ApplyRecord | StaleReadsRecord

T = TypeVar("T")


class RecordError(ValueError):
    """JSON that is not the record it should be: the message says what and where."""


def decode(kind: type[T], text: str | bytes) -> T:
    """JSON text as `kind`, or RecordError."""
    try:
        return msgspec.json.decode(text, type=kind)
    except msgspec.ValidationError as e:
        raise RecordError(str(e)) from None
    except msgspec.DecodeError as e:
        raise RecordError(f"not JSON: {e}") from None


def driver_result(kind: type[T], text: str, what: str) -> T:
    """A driver's result printed under a tool (cachegrind, perf), or a UserError naming the tool."""
    try:
        return decode(kind, text)
    except RecordError as e:
        raise UserError(f"{what}: dbperf-driver printed an unexpected result: {e}") from None


def convert(kind: type[T], obj: Any) -> T:
    """Already-decoded JSON as `kind`, or RecordError."""
    try:
        return msgspec.convert(obj, kind)
    except msgspec.ValidationError as e:
        raise RecordError(str(e)) from None


def non_finite(obj: Any) -> str | None:
    """Where decoded JSON holds a NaN or an infinity, said as msgspec says a wrong value (`Expected a finite number,
    got nan - at `$.result.qps``), or None. Python's json reads the tokens NaN and Infinity and a literal beyond
    float range (1e999), none of which a writer of the lab writes (msgspec writes null): a line holding one was
    edited or damaged. A loop, not recursion: how deep a line nests is no concern of this check."""
    stack: list[tuple[str, Any]] = [("$", obj)]
    while stack:
        path, value = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            if isinstance(item, float):
                if not math.isfinite(item):
                    return f"Expected a finite number, got {item} - at `{_at(path, key)}`"
            elif isinstance(item, dict | list):
                stack.append((_at(path, key), item))
    return None


def _at(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"


class NotJson(RecordError):
    """A line that is not JSON at all: torn (the last line of a run killed mid-write) or edited by hand."""


NESTED = "nested too deeply to be a record"


def results_line(line: str) -> ResultsRecord:
    """One line of results.jsonl as its record, or RecordError with the reason it cannot be used. Decoded by
    msgspec (fast, and it reads no NaN or infinity); what it refuses (NaN, Infinity, a literal beyond float range
    such as 1e999, a lone surrogate's escape) is read again by Python's json, so that a line reads as it always has
    and a NaN or an infinity in it makes it bad, said with where it is. A line nested deeper than Python recurses
    ([[[[...) is a RecursionError to either decoder: a bad line too."""
    try:
        obj = msgspec.json.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):  # not JSON, or a number out of range: said by the walk
        return _python_json(line)
    except RecursionError:
        raise RecordError(NESTED) from None
    return _as_record(obj)  # msgspec decodes no NaN or infinity: no need to look for one


def _python_json(line: str) -> ResultsRecord:
    try:
        obj = json.loads(line)
    except ValueError:
        raise NotJson("not JSON") from None
    except RecursionError:
        raise RecordError(NESTED) from None
    return results_record(obj)


def results_record(obj: Any) -> ResultsRecord:
    """A decoded results.jsonl line as its record type (a line with no `type` is a cell), or RecordError. A NaN or
    an infinity anywhere in it (Python's json reads them) makes it bad."""
    if not isinstance(obj, dict):
        raise RecordError("not a JSON object")
    problem = non_finite(obj)
    if problem is not None:
        raise RecordError(problem)
    return _as_record(obj)


def _as_record(obj: Any) -> ResultsRecord:
    if not isinstance(obj, dict):
        raise RecordError("not a JSON object")
    kind = obj.get("type", "cell")
    if kind == "counters":
        return convert(CountersRecord, obj)
    if kind == "simulated":
        return convert(SimulatedRecord, obj)
    if kind == "cost_model":
        return convert(CostModelRecord, obj)
    if kind in REPLICATION_RECORDS:
        return convert(REPLICATION_RECORDS[kind], obj)
    if kind != "cell":
        raise RecordError(f"unknown record type {kind!r}")
    cell = convert(CellRecord, obj)
    if cell.status == "ok" and cell.result is None:
        raise RecordError("an ok cell without a 'result'")
    return cell


def encode(record: msgspec.Struct) -> bytes:
    return msgspec.json.encode(record)


def to_builtins(record: Any) -> Any:
    """A record as plain JSON-able values (for reports that embed it)."""
    return msgspec.to_builtins(record)
