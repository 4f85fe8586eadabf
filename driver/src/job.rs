//! The job a caller hands to the driver, and the result it prints. Both are JSON; Python builds the job from the
//! declarative workload files, resolving names and placeholders, so the driver only executes.

use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// "run" measures a workload, "load" creates and fills the tables.
    pub mode: Mode,
    pub engine: String,
    /// Path of the engine's shared library (embedded engines).
    #[serde(default)]
    pub library: String,
    /// Database file (embedded engines).
    #[serde(default)]
    pub database: String,
    /// Server engines: postgresql://user@host:port/db or mysql://user@host:port/db; the password comes from the
    /// DBPERF_PASSWORD environment variable.
    #[serde(default)]
    pub dsn: Option<String>,
    /// Server engines started by the lab: the server's main pid, whose process tree is measured.
    #[serde(default)]
    pub server_pid: Option<u32>,
    /// Server engines: the environment variable that holds the password; None: DBPERF_PASSWORD. A slices run of
    /// servers names one per side (each lab server has a password of its own).
    #[serde(default)]
    pub password_env: Option<String>,
    /// Per-connection settings in order, e.g. [["journal_mode", "WAL"]] for SQLite PRAGMAs.
    #[serde(default)]
    pub settings: Vec<(String, String)>,
    #[serde(default = "default_busy_timeout")]
    pub busy_timeout_ms: u32,
    pub tables: u32,
    pub table_size: u64,
    #[serde(default = "one")]
    pub threads: u32,
    #[serde(default)]
    pub time_s: f64,
    #[serde(default)]
    pub warmup_s: f64,
    #[serde(default)]
    pub seed: u64,
    #[serde(default = "yes")]
    pub prepared: bool,
    /// Run exactly this many events per thread instead of a timed window (no warmup): profilers run N and 0
    /// events and subtract, so that only the measured phase is counted.
    #[serde(default)]
    pub events: Option<u64>,
    /// For instruction counting: record no latencies and print no timing or resource figures, whose varying
    /// values would make two identical runs execute different instruction counts.
    #[serde(default)]
    pub deterministic: bool,
    /// Servers, counted runs: sleep this long before each request, so that the server is already waiting in its
    /// read when the request comes, as it nearly always is natively. Without it, whether the server's first read
    /// finds the request depends on valgrind's pace and the host's load, and so does the work counted (its read
    /// retries and the wait between them: up to 0.5% of a point query).
    #[serde(default)]
    pub request_pause_us: u64,
    /// Ask the kernel not to use transparent huge pages for this process (hugepages = "off").
    #[serde(default)]
    pub thp_disable: bool,
    /// SQLite: its page cache from one preallocated buffer of this many slots (engine/page_cache.rs); 0: malloc.
    #[serde(default)]
    pub page_cache_slots: u32,
    /// With page_cache_slots: the buffer on transparent huge pages.
    #[serde(default)]
    pub page_cache_huge: bool,
    /// Length of one interval of the time series; 0 for none.
    #[serde(default = "one_second")]
    pub interval_s: f64,
    /// Latency percentiles to report, each in (0, 100].
    #[serde(default = "default_percentiles")]
    pub percentiles: Vec<f64>,
    /// Open loop: events per second across all threads (each thread takes an equal share); None: closed loop.
    #[serde(default)]
    pub rate: Option<f64>,
    #[serde(default)]
    pub arrivals: crate::schedule::Arrivals,
    /// Open loop: an event already this late when due is skipped and counted (pgbench -R -L); a completed event
    /// slower than this is counted as late.
    #[serde(default)]
    pub latency_limit_s: Option<f64>,
    /// Warm up until the throughput settles (steady.rs); `warmup_s` is then the least warm-up.
    #[serde(default)]
    pub steady: Option<crate::steady::SteadyJob>,
    /// Steady state: a pipe's write end the lab handed over; thread 0 writes a line there when the measured window
    /// opens (the lab's noise and resource samples start then), and closes it.
    #[serde(default)]
    pub window_fd: Option<i32>,
    /// Duet runs: one end of a socket pair the lab handed over. Once every thread has connected and prepared,
    /// thread 0 writes one byte there (ready) and blocks until it reads one byte (start): the lab releases both
    /// sides of a duet together (start.rs).
    #[serde(default)]
    pub start_fd: Option<i32>,
    /// Slices runs (slices.rs): every side measured in this one process, taking turns every `slice_s` seconds. All
    /// the sides are listed here, side 0 first; the job's own library, database and settings then stay empty.
    /// None: an ordinary run.
    #[serde(default)]
    pub slices: Option<Vec<SliceSide>>,
    /// Slices runs: the length of one slice.
    #[serde(default = "default_slice_s")]
    pub slice_s: f64,
    /// Slices runs of SQLite: each side's WAL checkpointed at the start of each of its turns, inside its own slice,
    /// and SQLite's auto-checkpoint off on its connections (turn_checkpoint.rs).
    #[serde(default)]
    pub turn_checkpoint: bool,
    /// Present for mode "run".
    pub workload: Option<Workload>,
    /// Present for mode "load".
    pub schema: Option<Schema>,
    /// Present for mode "exec".
    #[serde(default)]
    pub statements: Vec<String>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Run,
    Load,
    /// Run `statements` one after another (server setup: databases, data restore).
    Exec,
}

fn default_busy_timeout() -> u32 {
    10_000
}
fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn one_second() -> f64 {
    1.0
}
/// 20 ms: on the host of docs/verdicts.md the A/A spread fell with the slice (0.1 s ×0.57, 0.05 s ×0.39, 0.02 s
/// ×0.15–0.22, 0.01 s ×0.16 of two processes'), so 0.02 s takes nearly all of the gain at 50 switches a second.
fn default_slice_s() -> f64 {
    0.02
}
fn default_percentiles() -> Vec<f64> {
    vec![50.0, 95.0, 99.0, 99.9]
}
fn weight_one() -> f64 {
    1.0
}

/// One side of a slices run: either a SQLite build of its own (a library file no other side loads), its database
/// and its per-connection settings; or a server of its own (its engine, DSN, the lab's pid of it and the variable
/// that holds its password). A side names one or the other, never both (slices.rs checks).
#[derive(Debug, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct SliceSide {
    #[serde(default)]
    pub library: String,
    #[serde(default)]
    pub database: String,
    #[serde(default)]
    pub settings: Vec<(String, String)>,
    /// Server sides: postgres, mariadb or mysql; None: the job's engine.
    #[serde(default)]
    pub engine: Option<String>,
    #[serde(default)]
    pub dsn: Option<String>,
    #[serde(default)]
    pub server_pid: Option<u32>,
    #[serde(default)]
    pub password_env: Option<String>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    pub name: String,
    /// Wrap each event in BEGIN/COMMIT; both count as queries, as sysbench counts them.
    pub transaction: bool,
    /// The event writes: embedded engines take the write lock at BEGIN to avoid lock-upgrade deadlocks.
    pub writes: bool,
    pub statements: Vec<Statement>,
    /// Number of event-level parameter slots that `ref` parameters read from.
    pub slots: usize,
    /// In a mix: this event kind's share (pgbench -f file@weight); must be positive.
    #[serde(default = "weight_one")]
    pub weight: f64,
    /// A weighted mix: each event draws one of these kinds (its own statements and transaction); the workload's
    /// own statements are then empty.
    #[serde(default)]
    pub mix: Vec<Workload>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    /// SQL with `?` placeholders and `{table}` for the table number.
    pub sql: String,
    /// Executions per event, each drawing fresh parameters.
    #[serde(default = "one")]
    pub repeat: u32,
    /// One entry per `?` placeholder, in order.
    pub binds: Vec<Bind>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Bind {
    pub gen: Gen,
    /// Event-level slot that keeps this value for later `ref` binds.
    pub slot: Option<usize>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Gen {
    /// Integer uniform in [lo, hi].
    Uniform { lo: i64, hi: i64 },
    /// Integer in [1, n] from a Zipf distribution of this exponent.
    Zipf { n: u64, exponent: f64 },
    /// Always this integer.
    Fixed { value: i64 },
    /// The value another bind stored in `slot` in this event, plus `add`.
    Ref { slot: usize, add: i64 },
    /// sysbench's string of `groups` runs of 11 random digits joined by '-'.
    Digits { groups: u32 },
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    /// Statements run before loading each table, `{table}` replaced.
    pub create: Vec<String>,
    /// Prepared insert of one row: (id, k, c, pad).
    pub insert: String,
    /// Statements run after loading each table (secondary indexes).
    pub after_load: Vec<String>,
    /// Digit groups of the c and pad columns.
    pub c_groups: u32,
    pub pad_groups: u32,
}

#[derive(Debug, Serialize, Default, Clone, Copy)]
pub struct Usage {
    pub user_us: f64,
    pub system_us: f64,
    pub voluntary_cs: i64,
    pub involuntary_cs: i64,
}

#[derive(Debug, Serialize)]
pub struct RunResult {
    pub engine_version: String,
    pub threads: u32,
    pub duration_s: f64,
    pub events: u64,
    pub queries: u64,
    pub rows: u64,
    pub errors: u64,
    pub error_samples: Vec<String>,
    pub qps: f64,
    pub eps: f64,
    /// Event latency, measured from the event's start to its end (closed loop).
    pub latency: crate::series::Latency,
    /// Resource usage of the whole driver process over the measured phase.
    pub client_usage: Usage,
    pub process: crate::process::ProcessFacts,
    /// SQLite with a page cache buffer: what was configured and how much of it was used.
    pub page_cache: Option<crate::engine::page_cache::PageCacheFacts>,
    /// CPU and context switches of the server's processes over the measured phase (servers started by the lab).
    pub server_usage: Option<Usage>,
    pub server_processes: Option<usize>,
    /// Per interval of the measured window (interval_s), in order.
    pub intervals: Vec<crate::series::Interval>,
    pub interval_s: f64,
    /// From the start (all threads connected) to the measured window: the job's warmup, or as long as the steady
    /// state took.
    pub warmup_s: f64,
    /// The wall clock (Unix seconds) when the measured window opened: the start plus `warmup_s`. Lets the lab check
    /// that two processes measured over the same window (duet runs).
    pub window_start_unix_s: f64,
    /// Steady-state cells: whether the throughput settled, and the warm-up's samples.
    pub steady: Option<crate::steady::SteadyReport>,
    /// Every counted event's latency (empty in deterministic mode).
    pub histogram: Option<crate::series::EncodedHistogram>,
    /// Per statement of multi-statement events (pgbench -r): mean and max time of each, BEGIN/COMMIT included.
    pub statements: Vec<StatementLatency>,
    /// Events per kind of a weighted mix.
    pub mix: Vec<MixCount>,
    pub open_loop: Option<OpenLoop>,
    /// A slices run's side: its time spent outside its own slices, and its turn checkpoints (stalls.rs).
    pub turns: Option<TurnStalls>,
}

/// A slices run's result (slices.rs): the process as a whole, and each side's result as an ordinary run would
/// report it (its events, latencies, thread CPU, and one interval per slice of its own).
#[derive(Debug, Serialize)]
pub struct SlicesResult {
    pub slice_s: f64,
    pub threads: u32,
    /// The process's measured window: every side's `time_s` of slices (sides × time_s).
    pub duration_s: f64,
    /// From the start (all threads connected) to the measured window: every side's warm-up (sides × warmup_s).
    pub warmup_s: f64,
    /// The wall clock (Unix seconds) when the measured window opened.
    pub window_start_unix_s: f64,
    /// Resource usage of the whole process over its measured window (getrusage: all sides together).
    pub client_usage: Usage,
    pub process: crate::process::ProcessFacts,
    /// In the job's order: side i owns slices i, i + sides, i + 2 × sides, ... of each phase.
    pub sides: Vec<RunResult>,
}

#[derive(Debug, Serialize)]
pub struct StatementLatency {
    pub event: String,
    pub sql: String,
    pub executions: u64,
    pub mean_us: f64,
    pub max_us: f64,
}

#[derive(Debug, Serialize)]
pub struct MixCount {
    pub event: String,
    pub weight: f64,
    pub events: u64,
}

/// A slices run's side: what of its events' time fell into the next side's slices, and the checkpoints it ran at the
/// start of its own turns (turn_checkpoint), over its measured slices, all threads together.
#[derive(Debug, Serialize, Default, Clone, Copy, PartialEq)]
pub struct TurnStalls {
    /// Its events' time past the end of the slice they started in (time taken from the next side), and the longest.
    pub spill_s: f64,
    pub spill_max_s: f64,
    /// Slice ends one of its events ran over by more than a millisecond: a stall, not an event in flight.
    pub spills: u64,
    /// Whether its WAL was checkpointed at the start of each of its turns; how many, their time and the longest.
    pub turn_checkpoint: bool,
    pub checkpoints: u64,
    pub checkpoint_s: f64,
    pub checkpoint_max_s: f64,
}

/// What an open-loop cell asked for and got.
#[derive(Debug, Serialize)]
pub struct OpenLoop {
    pub rate_asked: f64,
    pub arrivals: crate::schedule::Arrivals,
    /// Events (completed or failed) per second whose scheduled start fell in the measured window.
    pub rate_achieved: f64,
    /// Events due in the measured window that had not started when it closed: the queue left over.
    pub backlog_events: u64,
    /// Events skipped because they were already past latency_limit when due (pgbench -L).
    pub skipped: u64,
    /// Completed events slower than latency_limit, measured from their scheduled start.
    pub late: u64,
    pub latency_limit_us: Option<f64>,
    /// Delay from scheduled to actual start (time queued behind earlier events), mean and max.
    pub lag_mean_us: f64,
    pub lag_max_us: f64,
    /// The target kept up: no backlog beyond one event per thread and 1% of the asked events, and at most 1%
    /// skipped.
    pub sustained: bool,
}

#[derive(Debug, Serialize)]
pub struct LoadResult {
    pub engine_version: String,
    pub tables: u32,
    pub rows: u64,
    pub seconds: f64,
}
